#!/usr/bin/env bash
# Installs what a make target needs on a fresh Debian machine: uv (through pip when
# missing) always, and the system packages named as arguments, each only if missing:
#   kcat       the compatibility tests run kcat (`make test`)
#   java       Spark (the labs and their book pages, through PySpark 4) runs on Java 17+
#   zookeeper  ZooKeeper mode runs Debian's ZooKeeper server (its chapter, its tests,
#              `make cluster MODE=zk`)
#   chromium   `make book FULL=1` checks each page in headless Chromium (nothing wider)
#   mypyc      `make mypyc` (the optional compiled build) needs gcc and Python's headers
#   reference  Apache Kafka's jars (reference/pom.xml) in reference/.cache/, for the tests
#              and benchmarks that run the real broker, Java clients and tools beside
#              minikafka: a JDK (javac compiles the tests' Java driver) and Maven, then
#              `mvn dependency:copy-dependencies` once; offline afterwards
#   librdkafka-tests  librdkafka's own regression-test runner, built once from Debian's
#              source into reference/.cache/librdkafka/ (scripts/build_librdkafka_tests.sh)
#              with a C++ compiler and the -dev packages of its TLS and compression
# `make run` and `make book` need none of them (the full build, `make book FULL=1`, java,
# zookeeper and chromium), `make lab N` java, `make test` all six and `make bench`
# reference (the Makefile says which). As root it installs system packages with apt-get; otherwise it stops and prints
# the exact command to run.
set -euo pipefail
cd "$(dirname "$0")/.."

# --- uv ------------------------------------------------------------------------
if ! command -v uv >/dev/null 2>&1 && ! python3 -m uv --version >/dev/null 2>&1; then
    echo "bootstrap: installing uv with pip" >&2
    if ! python3 -m pip --version >/dev/null 2>&1; then
        if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip >/dev/null
        else
            echo "bootstrap: run: sudo apt-get install -y python3-pip" >&2
            exit 1
        fi
    fi
    # A virtualenv or pyenv Python takes a plain install; Debian's own Python refuses
    # one (PEP 668) and takes a user install instead.
    python3 -m pip install --quiet uv 2>/dev/null \
        || python3 -m pip install --quiet --user uv 2>/dev/null \
        || python3 -m pip install --quiet --user --break-system-packages uv
fi

# --- system packages -------------------------------------------------------------
missing=()
for need in "$@"; do
    case $need in
        kcat) command -v kcat >/dev/null 2>&1 || missing+=(kcat) ;;
        java) command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless) ;;
        # Debian's ZooKeeper server puts no command on PATH: its jar says it is there.
        zookeeper) [[ -f /usr/share/java/zookeeper.jar ]] || missing+=(zookeeper) ;;
        chromium) command -v chromium >/dev/null 2>&1 || missing+=(chromium) ;;
        # The optional mypyc build compiles C against the interpreter's headers: Debian's
        # python3 has them in python3-dev (a pyenv or uv-installed Python has its own).
        mypyc)
            command -v gcc >/dev/null 2>&1 || missing+=(gcc)
            python=python3
            [[ -x .venv/bin/python ]] && python=.venv/bin/python  # the workspace's, once synced
            "$python" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
                || missing+=(python3-dev) ;;
        librdkafka-tests)
            command -v g++ >/dev/null 2>&1 || missing+=(g++)
            command -v make >/dev/null 2>&1 || missing+=(make)
            command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
            for dev in libssl-dev zlib1g-dev libzstd-dev liblz4-dev; do
                dpkg-query -W -f='${Status}' "$dev" 2>/dev/null | grep -q 'ok installed' \
                    || missing+=("$dev")
            done ;;
        reference)
            command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
            command -v mvn >/dev/null 2>&1 || missing+=(maven) ;;
        *) echo "bootstrap: unknown need '$need' (kcat, java, zookeeper, chromium, reference, librdkafka-tests, mypyc)" >&2; exit 2 ;;
    esac
done
if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        echo "bootstrap: apt-get install ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "bootstrap: missing system packages: ${missing[*]}" >&2
        echo "bootstrap: run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
fi

# --- Apache Kafka's jars (the reference) ------------------------------------------
# Copied once per pom.xml: the stamp holds the pom's checksum, so a changed pin copies
# again and an unchanged one never asks Maven Central.
for need in "$@"; do
    [[ $need == reference ]] || continue
    cache=reference/.cache
    stamp=$cache/libs/.pom.sha256
    want=$(sha256sum reference/pom.xml | cut -d' ' -f1)
    if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
        echo "bootstrap: copying Apache Kafka's jars (reference/pom.xml) into $cache/libs" >&2
        rm -rf "$cache/libs.tmp"
        mvn --batch-mode --quiet -Dstyle.color=never --file reference/pom.xml \
            dependency:copy-dependencies -DoutputDirectory="$PWD/$cache/libs.tmp" >&2
        echo "$want" > "$cache/libs.tmp/.pom.sha256"
        rm -rf "$cache/libs"
        mv "$cache/libs.tmp" "$cache/libs"
    fi
done

# --- librdkafka's regression-test runner -----------------------------------------
for need in "$@"; do
    [[ $need == librdkafka-tests ]] && scripts/build_librdkafka_tests.sh
done
