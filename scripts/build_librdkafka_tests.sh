#!/usr/bin/env bash
# Builds librdkafka's own regression-test runner (tests/test-runner of the librdkafka
# release Debian packages, the one confluent-kafka and kcat are built on here) into
# reference/.cache/librdkafka/, for tests/compat/test_librdkafka_suite.py.
#
# The source is Debian's: the upstream tarball from Debian's pool, checked against the
# SHA-256 its .dsc lists. Built once per machine, as Maven keeps Kafka's jars in ~/.m2:
# the build lives in the user's cache ($XDG_CACHE_HOME or ~/.cache, minikafka/librdkafka)
# and reference/.cache/librdkafka links to it; the stamp file holds that checksum, so a
# second run (or `make test` on a second clone) does nothing. Needs a C/C++ compiler and the -dev packages
# scripts/bootstrap.sh installs for `librdkafka-tests`.
set -euo pipefail
cd "$(dirname "$0")/.."

version=2.0.2
sha256=f321bcb1e015a34114c83cf1aa7b99ee260236aab096b85c003170c90a47ca9d
url=http://deb.debian.org/debian/pool/main/libr/librdkafka/librdkafka_${version}.orig.tar.gz
cache=${XDG_CACHE_HOME:-$HOME/.cache}/minikafka/librdkafka
tree=$cache/librdkafka-$version
stamp=$tree/.built
mkdir -p reference/.cache
if [[ ! -L reference/.cache/librdkafka ]]; then
    rm -rf reference/.cache/librdkafka
fi
ln -sfn "$cache" reference/.cache/librdkafka

if [[ -f $stamp && $(cat "$stamp") == "$sha256" && -x $tree/tests/test-runner ]]; then
    exit 0
fi
mkdir -p "$cache"
tarball=$cache/librdkafka_${version}.orig.tar.gz
if [[ ! -f $tarball ]] || ! echo "$sha256  $tarball" | sha256sum --check --status; then
    echo "bootstrap: downloading librdkafka $version's source from Debian's pool" >&2
    python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' \
        "$url" "$tarball.tmp"
    echo "$sha256  $tarball.tmp" | sha256sum --check --status \
        || { echo "bootstrap: $url does not match its .dsc's SHA-256" >&2; exit 1; }
    mv "$tarball.tmp" "$tarball"
fi
echo "bootstrap: building librdkafka $version's test runner in $tree (once)" >&2
start=$SECONDS
rm -rf "$tree"
tar -xzf "$tarball" -C "$cache"
(
    cd "$tree"
    # --no-download: mklove fetches nothing; GSSAPI (Kerberos) and the OIDC client (curl)
    # are what no test here uses. -O0: the runner only drives the broker, and it compiles
    # about twice as fast.
    # (Its output goes to build.log: mklove would load a ./configure.log as a module.)
    ./configure --no-download --disable-gssapi --disable-curl --disable-optimization \
        >build.log 2>&1 || { tail -20 build.log >&2; exit 1; }
    jobs=$(nproc)
    make -j"$jobs" libs >>build.log 2>&1 || { tail -20 build.log >&2; exit 1; }
    make -j"$jobs" -C tests test-runner >>build.log 2>&1 || { tail -20 build.log >&2; exit 1; }
    find . -name '*.o' -delete  # the objects are half the tree, and never used again
)
echo "$sha256" > "$stamp"
echo "bootstrap: built librdkafka's test runner in $((SECONDS - start)) s" >&2
