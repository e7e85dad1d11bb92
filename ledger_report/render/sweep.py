"""The sweep table as CSV (``calc --csv``): a row per configuration, a column per quantity
(``engine.table``), the values as the JSON document writes them: whole numbers as integers,
other numbers as Python writes a float, truth values as true/false, a blank as an empty cell.

A text cell that a spreadsheet would read as a formula (it starts with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return) is written with a leading ``'``, as OWASP's "CSV Injection" page
advises, so opening the file runs nothing; numbers are never changed: the one rule and writer of
every CSV the tool writes (``output.csv_text``, ``output.csv_writer``)."""

from __future__ import annotations

import io
from typing import Any, BinaryIO, Iterable, Mapping

from .output import csv_text, csv_writer


def write_table(chunks: Iterable[Mapping[str, tuple[Any, Any]]], out: BinaryIO) -> None:
    """Write the header, then each chunk's rows, to the binary stream ``out`` (UTF-8)."""
    first = True
    for chunk in chunks:
        buf = io.StringIO()
        w = csv_writer(buf)
        if first:
            w.writerow(chunk)
            first = False
        w.writerows(zip(*(_cells(values, blank) for values, blank in chunk.values())))
        out.write(buf.getvalue().encode("utf-8"))
    if first:
        raise ValueError("no rows")  # pragma: no cover - a source always has a row


def _cells(values: Any, blank: Any) -> list:
    """One column's cells: numbers as they are (the writer writes them as ``str`` does), truth
    values as true/false, text made safe, a blank as an empty cell."""
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
