"""The empty input file as CSV: the column names and one example row (the same row the XLSX
template carries), for teams that keep their configurations in text."""

from __future__ import annotations

from ..config import COLUMN_NAMES
from .output import csv_bytes


def template_csv() -> bytes:
    from .workbook import EXAMPLE_ROW

    return csv_bytes(COLUMN_NAMES, [EXAMPLE_ROW])
