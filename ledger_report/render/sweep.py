"""The sweep table as CSV (``calc --csv``): a row per configuration, a column per quantity
(``engine.table``), the values as the JSON document writes them: whole numbers as integers,
other numbers as Python writes a float, truth values as true/false, a blank as an empty cell.

Text cells go through the one CSV rule (``output.csv_text``: a text a spreadsheet would read as a
formula gets a leading ``'``, as OWASP advises); numbers are never changed.  Lines end in CRLF, as
``output.csv_bytes`` writes them (RFC 4180)."""

from __future__ import annotations

import csv
import io
from typing import Any, BinaryIO, Iterable, Mapping, Sequence

from .output import csv_bytes, csv_text


def write_table(
    header: Sequence[str], chunks: Iterable[Mapping[str, tuple[Any, Any]]], out: BinaryIO
) -> None:
    """Write the header, then each chunk's rows (its columns in the header's order), to the
    binary stream ``out`` (UTF-8)."""
    out.write(csv_bytes(header, []))
    for chunk in chunks:
        buf = io.StringIO()
        cells = (_cells(*chunk[name]) for name in header)
        csv.writer(buf, lineterminator="\r\n").writerows(zip(*cells))
        out.write(buf.getvalue().encode("utf-8"))


def _cells(values: Any, blank: Any) -> list:
    """One column's cells: numbers as they are (the writer writes them as ``str`` does), truth
    values as true/false, text through ``csv_text``, a blank as an empty cell."""
    kind = values.dtype.kind
    if kind == "b":
        cells = ["true" if v else "false" for v in values.tolist()]
    elif kind in "U":
        cells = [csv_text(v) for v in values.tolist()]
    else:
        cells = values.tolist()
    if blank is not None:
        cells = ["" if b else c for c, b in zip(cells, blank.tolist())]
    return cells
