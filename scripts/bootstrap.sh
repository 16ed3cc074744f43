#!/usr/bin/env bash
# Installs what `make test` and `make run` need on a fresh Debian machine:
# uv (through pip when missing), the system packages the tests use, and the workspace.
# As root it installs system packages with apt-get; otherwise it stops and prints the
# exact command to run.
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
# "command package" pairs: the command the tests run and the Debian package that has it.
needed=(
    "kcat kcat"
    # Spark (the labs, through PySpark 4) runs on Java 17 or newer.
    "java openjdk-17-jre-headless"
)
missing=()
for pair in "${needed[@]}"; do
    cmd=${pair%% *}; pkg=${pair##* }
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
# ZooKeeper mode (issue 20) runs Debian's ZooKeeper server, which puts no command on PATH.
[[ -f /usr/share/java/zookeeper.jar ]] || missing+=("zookeeper")
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
