#!/usr/bin/env bash
# Install everything proofmatch needs on a fresh Debian/Ubuntu machine with Python 3.11: the package
# with its workflow and test extras, and, on a machine where polyglot's ICU has no wheel (Linux
# other than x86_64/aarch64: pyproject.toml), the system ICU that PyICU builds against.
# Idempotent; run from anywhere.
#   --latex       also install LaTeXML (Debian package `latexml`, about 130 packages with TeX
#                 Live's base and ImageMagick), needed only for corpus.source: latex (LaTeX sources)
#   --no-compile  pip writes no .pyc files; Python writes those of the modules a process imports,
#                 when it first imports them (CI: pip compiled every module of torch, transformers,
#                 scipy, ... for about 40 s). Not with PYTHONDONTWRITEBYTECODE set: every process
#                 would then compile its imports from source again.
set -euo pipefail
cd "$(dirname "$0")/.."

LATEX=0
PIP_OPTIONS=()
for arg in "$@"; do
    case "$arg" in
        --latex) LATEX=1 ;;
        --no-compile) PIP_OPTIONS+=(--no-compile) ;;
        *) echo "install.sh: unknown option $arg (known: --latex, --no-compile)" >&2; exit 2 ;;
    esac
done

if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    case "$(uname -m)" in
        x86_64 | aarch64) ICU_BUILD=0 ;;  # pyicu-wheels: ICU comes inside the wheel
        *) ICU_BUILD=1 ;;
    esac
    if [ "$ICU_BUILD" -eq 1 ] && ! dpkg -s libicu-dev pkg-config >/dev/null 2>&1; then
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq libicu-dev pkg-config g++ >/dev/null
    fi
    if [ "$LATEX" -eq 1 ] && ! command -v latexmlc >/dev/null 2>&1; then
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq latexml >/dev/null
    fi
else
    echo "install.sh: no apt-get; where PyICU builds from source (pyproject.toml), install ICU headers (libicu-dev) and pkg-config yourself" >&2
    if [ "$LATEX" -eq 1 ] && ! command -v latexmlc >/dev/null 2>&1; then
        echo "install.sh: --latex: install LaTeXML yourself (https://math.nist.gov/~BMiller/LaTeXML/get.html)" >&2
        exit 1
    fi
fi

PY="${PYTHON:-python3}"
# torch first and pinned: a bare requirement could pull a multi-GB CUDA build.
"$PY" -m pip install -q "${PIP_OPTIONS[@]}" "torch==2.13.0"
"$PY" -m pip install -q "${PIP_OPTIONS[@]}" -e ".[workflow,test]"
"$PY" -c "import proofmatch, polyglot.detect, lap, lime, faiss, nh3, fastapi; print('proofmatch installed')"
if [ "$LATEX" -eq 1 ]; then latexmlc --VERSION; fi
