#!/usr/bin/env bash
# Build the example with the OLDEST versions pyproject.toml allows: every dependency of
# [project].dependencies written `name>=X` (with or without a further `,<Y`) is installed as
# `name==X`; a name without a floor is installed unpinned.  The project itself goes in with
# --no-deps, and inputs/examples.csv is built into a temporary folder in every format (xlsx, pdf
# and json, in English and in Chinese); the script fails if a build fails or the PDF has not one
# page per configuration plus the summary, or if tests/test_sweep_csv.py (calc --csv's cells, its
# numbers written through orjson) fails with those versions.
#
#   bash scripts/ci_oldest.sh                      # venv in /tmp/oldest-venv (made again each run)
#   OLDEST_VENV=/tmp/x PYTHON=python3.12 bash scripts/ci_oldest.sh
#
# Needs what scripts/setup.sh installs from Debian (Pango, libharfbuzz-subset0, the CJK fonts,
# poppler-utils for pdfinfo).  The interpreter is Debian's /usr/bin/python3 unless PYTHON names
# another (it needs tomllib, so Python 3.11 or later).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$(pwd)"

if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
venv="${OLDEST_VENV:-/tmp/oldest-venv}"
start=$SECONDS

# The floors, one requirement a line.
requirements="$("$PYTHON" - <<'EOF'
import re
import tomllib

with open("pyproject.toml", "rb") as f:
    dependencies = tomllib.load(f)["project"]["dependencies"]
for dependency in dependencies:
    requirement = dependency.split(";")[0].strip()  # no environment markers here
    match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(.*)$", requirement)
    if not match:
        raise SystemExit(f"ci_oldest.sh: cannot read the requirement {dependency!r}")
    name, extras, specifiers = match.group(1), match.group(2) or "", match.group(3)
    floors = [s.strip()[2:].strip() for s in specifiers.split(",") if s.strip().startswith(">=")]
    print(f"{name}{extras}=={floors[0]}" if floors else f"{name}{extras}")
EOF
)"
echo "ci_oldest.sh: installing the floors:" $requirements

out="$(mktemp -d /tmp/ci-oldest.XXXXXX)"
trap 'rm -rf "$out"' EXIT
# The project is built from a copy, so that no build/ or *.egg-info lands in the working tree.
mkdir "$out/src"
tar -C "$repo" --exclude=./.git --exclude=./.venv --exclude=./build --exclude=./dist --exclude='*.egg-info' \
    --exclude=__pycache__ --exclude=./out -cf - . | tar -C "$out/src" -xf -

"$PYTHON" -m venv --clear "$venv"
mapfile -t pins <<<"$requirements"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "$out/src"
"$venv/bin/python" -m pip list --disable-pip-version-check 2>/dev/null \
  | grep -iE '^(click|openpyxl|defusedxml|jinja2|weasyprint|pypdf|numpy|orjson|pandas|pydyf|tinycss2|cssselect2|tinyhtml5) ' || true

# the pages the handout should have: one per configuration plus the summary's, as the installed
# package counts them
want="$("$venv/bin/python" - "$repo/inputs/examples.csv" <<'EOF2'
import sys

from ledger_report.inputs import read_configs
from ledger_report.render.handout import summary_page_count

n = len(read_configs(sys.argv[1]))
print(n + summary_page_count(n))
EOF2
)"
status=0
for lang in en zh; do
  # from inside the temporary folder, so that the installed package (not the checkout) is used
  if ! (cd "$out" && "$venv/bin/ledger-report" build "$repo/inputs/examples.csv" -o "$out/$lang" \
          --format xlsx,pdf,json --lang "$lang" --quiet); then
    echo "ci_oldest.sh: the $lang build failed with the oldest dependencies" >&2
    status=1
    continue
  fi
  for ext in xlsx pdf json; do
    if [[ ! -s "$out/$lang/examples.$ext" ]]; then
      echo "ci_oldest.sh: the $lang build wrote no examples.$ext" >&2
      status=1
    fi
  done
  if [[ -s "$out/$lang/examples.pdf" ]]; then
    pages="$(pdfinfo "$out/$lang/examples.pdf" | awk '/^Pages:/ {print $2}')"
    if [[ "$pages" != "$want" ]]; then
      echo "ci_oldest.sh: the $lang handout has $pages pages, expected $want" >&2
      status=1
    else
      echo "ci_oldest.sh: $lang: examples.xlsx, examples.json and examples.pdf ($pages pages)"
    fi
  fi
done

# calc --csv writes its numbers through orjson: its tests (each cell the text Python writes for
# it) run again with the oldest orjson, numpy and pandas allowed
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check pytest hypothesis
if (cd "$out/src" && "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/test_sweep_csv.py)
then
  echo "ci_oldest.sh: tests/test_sweep_csv.py passed with the oldest dependencies"
else
  echo "ci_oldest.sh: calc --csv writes numbers otherwise than Python does (the oldest orjson?)" >&2
  status=1
fi

echo "ci_oldest.sh: $([[ $status -eq 0 ]] && echo passed || echo FAILED) in $(( SECONDS - start )) s"
exit "$status"
