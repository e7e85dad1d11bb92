"""The sweep table's CSV lines as the csv module writes them from Python values, a cell at a time:
the independent figure for ``render/sweep.table_lines`` (tests/test_sweep_csv.py) and
``bench/bench_csv.py --reference``.  Each cell is the Python value numpy gives back (``tolist``:
an int, a float, a bool, a str), through ``output.csv_text``, or an empty cell where the row is
blank; the csv module then writes it: ``str`` of a number (a float's ``repr``), text quoted where
it holds a comma, a quote or a line break, lines ending in CRLF."""

from __future__ import annotations

import csv
import io
from typing import Any, Sequence

from ledger_report.render.output import csv_text


def reference_lines(columns: Sequence[tuple[Any, Any]]) -> bytes:
    """The CSV lines (UTF-8) of a chunk's columns (values, blank mask or ``None``)."""
    cells = []
    for values, blank in columns:
        column = [csv_text(v) for v in values.tolist()]
        if blank is not None:
            column = ["" if b else c for c, b in zip(column, blank.tolist())]
        cells.append(column)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(zip(*cells))
    return buf.getvalue().encode("utf-8")
