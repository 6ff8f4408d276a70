#!/usr/bin/env bash
# Install everything proofmatch needs on a fresh Debian/Ubuntu machine with Python 3.11:
# the system libraries polyglot's language detector builds against, then the package with its
# workflow and test extras. Idempotent; run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    if ! dpkg -s libicu-dev pkg-config >/dev/null 2>&1; then
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq libicu-dev pkg-config g++ >/dev/null
    fi
else
    echo "install.sh: no apt-get; install ICU headers (libicu-dev) and pkg-config yourself" >&2
fi

PY="${PYTHON:-python3}"
# torch first and pinned: a bare requirement could pull a multi-GB CUDA build.
"$PY" -m pip install -q "torch==2.13.0"
"$PY" -m pip install -q -e ".[workflow,test]"
"$PY" -c "import proofmatch, polyglot.detect, lap, lime, faiss, nh3, fastapi; print('proofmatch installed')"
