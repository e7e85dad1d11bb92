"""The empty input file as CSV: the column names and one example row (the same row the XLSX
template carries), for teams that keep their configurations in text."""

from __future__ import annotations

import csv
import io

from ..config import COLUMN_NAMES


def template_csv() -> bytes:
    from .workbook import EXAMPLE_ROW

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(COLUMN_NAMES), lineterminator="\n")
    w.writeheader()
    w.writerow(
        {k: ("true" if v is True else "false" if v is False else v) for k, v in EXAMPLE_ROW.items()}
    )
    return buf.getvalue().encode("utf-8")
