"""The sweep table as CSV (``calc --csv``): a row per configuration, a column per quantity
(``engine.table``), the values as the JSON document writes them: whole numbers as integers,
other numbers as Python writes a float, truth values as true/false, a blank as an empty cell.
Text cells go through the package's one CSV rule (``output.csv_text``: text a spreadsheet would
read as a formula made safe, as OWASP advises), a column at a time (numbers are never changed, so
the table's ~770 number columns skip it); lines end in CRLF, as ``output.csv_lines`` writes them."""

from __future__ import annotations

import csv
import io
from typing import Any, BinaryIO, Iterable, Mapping, Sequence

from .output import csv_lines, csv_text


def write_table(
    header: Sequence[str], chunks: Iterable[Mapping[str, tuple[Any, Any]]], out: BinaryIO
) -> None:
    """Write the header, then each chunk's rows (its columns in the header's order), to the
    binary stream ``out`` (UTF-8); the header alone when there is no row."""
    out.write(csv_lines([header]))
    for chunk in chunks:
        buf = io.StringIO()
        cells = (_cells(*chunk[name]) for name in header)
        csv.writer(buf, lineterminator="\r\n").writerows(zip(*cells))
        out.write(buf.getvalue().encode("utf-8"))


def _cells(values: Any, blank: Any) -> list:
    """One column's cells: numbers as they are, truth values and text through ``csv_text``
    (true/false; a formula made safe), a blank as an empty cell."""
    cells = values.tolist()
    if values.dtype.kind not in "iuf":
        cells = list(map(csv_text, cells))
    if blank is not None:
        cells = ["" if b else c for c, b in zip(cells, blank.tolist())]
    return cells
