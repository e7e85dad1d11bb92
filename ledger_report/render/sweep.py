"""The sweep table as CSV (``calc --csv``): a row per configuration, a column per quantity
(``engine.table``), the values as the JSON document writes them: whole numbers as integers,
other numbers as Python writes a float, truth values as true/false, a blank as an empty cell.
Cells go through the package's one CSV writer (``output.csv_lines``), which makes text that a
spreadsheet would read as a formula safe, as OWASP advises; numbers are never changed."""

from __future__ import annotations

from typing import Any, BinaryIO, Iterable, Mapping

from .output import csv_lines


def write_table(chunks: Iterable[Mapping[str, tuple[Any, Any]]], out: BinaryIO) -> None:
    """Write the header, then each chunk's rows, to the binary stream ``out`` (UTF-8)."""
    first = True
    for chunk in chunks:
        rows = zip(*(_cells(values, blank) for values, blank in chunk.values()))
        out.write(csv_lines([list(chunk), *rows] if first else rows))
        first = False
    if first:
        raise ValueError("no rows")  # pragma: no cover - a source always has a row


def _cells(values: Any, blank: Any) -> list:
    """One column's cells: numbers and truth values as they are (the writer says true/false),
    text as it is, a blank as an empty cell."""
    cells = values.tolist()
    if blank is not None:
        cells = ["" if b else c for c, b in zip(cells, blank.tolist())]
    return cells
