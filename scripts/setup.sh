#!/usr/bin/env bash
# Set up ledger-report on Debian 12 (bookworm): system packages, a virtual environment in .venv,
# and the package in editable mode with its test extras.  Run as root (or with sudo available).
#
#   scripts/setup.sh              # apt-get + venv + pip
#   SKIP_APT=1 scripts/setup.sh   # venv + pip only (system packages already present)
#   PYTHON=python3.12 scripts/setup.sh   # another interpreter (default: Debian's /usr/bin/python3)
#
# System packages, and why each is here:
#   python3 python3-venv                  the interpreter and ensurepip for `python3 -m venv`
#   libpango-1.0-0 libpangoft2-1.0-0      WeasyPrint's text layout (pip does not bring them)
#   libharfbuzz-subset0                   WeasyPrint font subsetting; without it a CJK PDF takes ~8 s
#   fonts-noto-cjk                        Noto Sans CJK SC for the --lang zh handout (and Latin text)
#   libreoffice-calc-nogui                recalculates built workbooks in the formula-parity tests
#   poppler-utils                         pdftotext/pdffonts for the handout tests
# .ci/run calls this script, so CI and the README's setup cannot drift apart.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

APT_PACKAGES=(
  python3
  python3-venv
  libpango-1.0-0
  libpangoft2-1.0-0
  libharfbuzz-subset0
  fonts-noto-cjk
  libreoffice-calc-nogui
  poppler-utils
)

if [[ "${SKIP_APT:-0}" != "1" ]]; then
  as_root=()
  if [[ "$(id -u)" -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
      as_root=(sudo)
    else
      echo "setup.sh: installing system packages needs root; run as root, or install them and rerun with SKIP_APT=1: ${APT_PACKAGES[*]}" >&2
      exit 1
    fi
  fi
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${APT_PACKAGES[@]}"
fi

# The interpreter: Debian's /usr/bin/python3 (installed above) unless PYTHON names another.  On
# these machines `python3` on PATH may be pyenv's 3.11.7, a shared-library build without profile
# guided optimisation; Debian's is a static, optimised build, and the handout (pure-Python
# WeasyPrint) takes ~20 % less CPU under it (bench/bench_handout.py prints which build it ran on).
if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
# A .venv made from another interpreter is made again (its packages were built for that one).
want="$("$PYTHON" -c 'import os, sys; print(os.path.realpath(sys.executable))')"
have=""
if [[ -x .venv/bin/python ]]; then
  have="$(.venv/bin/python -c 'import os, sys; print(os.path.realpath(sys._base_executable))' 2>/dev/null || true)"
fi
if [[ "$have" != "$want" ]]; then
  "$PYTHON" -m venv --clear .venv
fi
# torch first, pinned, its CPU build: the test extra asks only for torch>=2.1 (a floor, no
# ceiling), which the pinned build already meets, so pip keeps it. PyPI's Linux wheel is a CUDA
# build of several GB, where the CPU build is all the tests need, so the CPU build is taken from a
# wheel pip finds on this machine (its find-links), else from PyTorch's CPU index, and only where
# neither answers from PyPI. Its dependencies come with the package below.
torch_wheel() { .venv/bin/python -m pip install --no-deps 'torch==2.13.0' "$@"; }
torch_wheel --no-index 2>/dev/null \
  || torch_wheel --retries 1 --timeout 30 --index-url https://download.pytorch.org/whl/cpu \
  || torch_wheel
.venv/bin/python -m pip install -e '.[test]'

echo "setup.sh: ready; run the tests with .venv/bin/python -m pytest -q"
