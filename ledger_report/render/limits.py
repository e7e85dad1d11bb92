"""How many configurations one build lays out: each is a handout page and a workbook column.

Measured with the commands below on rows of bench/example_rows.py (CPU seconds, since the
machines are shared; 2026-12-03): a handout page costs ~0.36 s of CPU and ~3.7 MB of memory (50
rows 21.3 s, 100 rows 39.4 s), a workbook column ~0.074 s (50 rows 6.1 s, 200 rows 17.2 s), so a
2,000-row build took minutes and about a gigabyte (found in a red-team pass).  At the bound, 120
rows with all three outputs and -j 2 took 45 s of CPU (82 s of wall time on two cores shared
with other work) and 0.43 GB at most in one process.  A build that writes a workbook or a
handout is refused before any work when its rows are more than :data:`MAX_BUILD_CONFIGS`,
naming the first row past the bound; a JSON-only build, ``calc`` and ``plan`` lay nothing out
and are not bounded by it.

    /usr/bin/time -v ledger-report build rows.csv --format pdf -j 1 -q    # 50 and 100 rows
    /usr/bin/time -v ledger-report build rows.csv --format xlsx -j 1 -q   # 50 and 200 rows
    /usr/bin/time -v ledger-report build rows.csv -o out                  # 120 rows
    python bench/hostile_cases.py -k largest --largest
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
