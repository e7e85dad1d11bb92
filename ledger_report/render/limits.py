"""How many configurations one build lays out: each is a handout page and a workbook column.

A handout page costs about 0.36 s of CPU and 3.7 MB of memory, a workbook column about 0.07 s
(``/usr/bin/time -v ledger-report build rows.csv --format pdf -j 1 -q`` on rows of
bench/example_rows.py; ``python bench/hostile_cases.py -k largest --largest``), so a build of
thousands of rows takes minutes and gigabytes.  A build that writes a workbook or a handout is
refused before any work when its rows are more than :data:`MAX_BUILD_CONFIGS`, naming the first
row past the bound; a JSON-only build, ``calc`` and ``plan`` lay nothing out and are not bounded
by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InputError, Problem

# The largest build that lays its rows out: about a minute of CPU at the measured costs above
# (the handout's pages are rendered by -j workers side by side: less wall time on more cores).
MAX_BUILD_CONFIGS = 120
LAID_OUT = ("xlsx", "pdf")  # the formats with a page or a column per configuration


def check_build_size(
    rows: Sequence[Any], formats: Sequence[str], *, where: str | None = None, instead: str = ""
) -> None:
    """Refuse (``InputError``) a build of more than :data:`MAX_BUILD_CONFIGS` rows (``Config``s or
    ``Ledger``s) that writes a workbook or a handout, naming the first row past the bound (or
    ``where``); ``instead``: what to do instead (by default, the commands that lay nothing out)."""
    if len(rows) <= MAX_BUILD_CONFIGS or not any(f in LAID_OUT for f in formats):
        return
    first = rows[MAX_BUILD_CONFIGS]
    config = getattr(first, "config", first)
    file = where or getattr(config, "source", "") or f"row {MAX_BUILD_CONFIGS + 1}"
    expected = (
        f"at most {MAX_BUILD_CONFIGS:,} configurations in a build with a workbook or a "
        f"handout (each is a page and a column; {MAX_BUILD_CONFIGS:,} take about a minute)"
    )
    instead = instead or (
        "for a sweep use `ledger-report calc --csv` (lr.to_frame) or `build --format "
        f"json`, or split the file into files of at most {MAX_BUILD_CONFIGS:,} rows"
    )
    raise InputError(Problem(file, None, None, expected, f"{len(rows):,}; {instead}"))
