"""The sweep table as CSV (``calc --csv``): a row per configuration, a column per quantity
(``engine.table``), the values as the JSON document writes them: whole numbers as integers,
other numbers as Python writes a float, truth values as true/false, a blank as an empty cell.
Cells go through the package's one CSV writer (``output.csv_lines``), which makes text that a
spreadsheet would read as a formula safe, as OWASP advises; numbers are never changed."""

from __future__ import annotations

from typing import Any, BinaryIO, Iterable, Mapping, Sequence

from ..model.evaluate import text_codes
from .output import csv_lines, csv_text


def write_table(
    header: Sequence[str], chunks: Iterable[Mapping[str, tuple[Any, Any]]], out: BinaryIO
) -> None:
    """Write the header, then each chunk's rows (its columns in the header's order), to the
    binary stream ``out`` (UTF-8); the header alone when there is no row.  The header goes out
    with the first chunk, so a file refused while its first rows are read or computed leaves
    nothing on ``out`` but the error."""
    head = csv_lines([header])
    for chunk in chunks:
        out.write(head + csv_lines(zip(*(_cells(*chunk[name]) for name in header)), safe=True))
        head = b""
    out.write(head)


def _cells(values: Any, blank: Any) -> list:
    """One column's cells through ``csv_text``, a column at a time: numbers as they are, truth
    values and each distinct text made safe once, a blank as an empty cell."""
    import numpy as np

    kind = values.dtype.kind
    if kind == "b":
        cells = np.array(_TRUTH, dtype=object)[values.astype(np.intp)]
    elif kind == "U":
        codes, texts = text_codes(np, values.reshape(-1))
        cells = np.array([csv_text(t) for t in texts] or [""], dtype=object)[codes]
    elif kind in "iuf":
        cells = values.astype(object)  # numbers: csv_text leaves them
    else:
        cells = np.array([csv_text(c) for c in values.tolist()], dtype=object)
    if blank is not None:
        cells[blank] = ""
    return cells.tolist()


_TRUTH = (csv_text(False), csv_text(True))
