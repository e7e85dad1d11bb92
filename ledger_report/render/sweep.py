"""The sweep table as CSV (``calc --csv``): a row per configuration, a column per quantity
(``engine.table``), the values as the JSON document writes them: whole numbers as integers,
other numbers as Python writes a float, truth values as true/false, a blank as an empty cell.
Each cell is what the package's one CSV writer (``output.csv_lines``, the csv module) writes for
it: text that a spreadsheet would read as a formula made safe, as OWASP advises; numbers never
changed.

The lines are made a chunk of rows at a time, a column at a time, without a Python object per
cell (~90 M cells on 100,000 rows): each column's distinct values are written once, as Python
writes them (``str`` of an int, ``repr`` of a float, the csv module for text); each row's cell
is then copied as bytes into a matrix of a line per row, every column at a fixed place, padded
to its widest cell with a byte UTF-8 never holds (0xFF); deleting those bytes leaves the lines."""

from __future__ import annotations

import re
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping, Sequence

import orjson
import pandas as pd  # (with this module: before calc --csv forks, so its second half has them)

from ..model.evaluate import first_seen_codes, text_codes
from .output import csv_lines, csv_text

PAD = 0xFF  # a byte no UTF-8 text holds: the padding deleted from the lines


def write_table(
    header: Sequence[str],
    chunks: Iterable[Mapping[str, tuple[Any, Any]]],
    out: BinaryIO,
    with_header: bool = True,
    done: Callable[[int], None] = lambda n: None,
) -> None:
    """Write the header (unless not ``with_header``), then each chunk's rows (its columns in the
    header's order), to the binary stream ``out`` (UTF-8); the header alone when there is no row.
    The header goes out with the first chunk, so a file refused while its first rows are read or
    computed leaves nothing on ``out`` but the error.  ``done(rows)`` as each chunk is written."""
    head = csv_lines([header]) if with_header else b""
    for chunk in chunks:
        out.write(head)
        head = b""
        for block in table_lines([chunk[name] for name in header]):
            out.write(block)
        done(len(chunk[header[0]][0]))
    out.write(head)


BLOCK_BYTES = 1 << 24  # lines made at once: one buffer, filled again for each block of rows


def table_lines(columns: Sequence[tuple[Any, Any]]) -> Iterator[bytes | bytearray]:
    """The CSV lines (CRLF, UTF-8) of a chunk's ``columns``, each an array of values and its mask
    of blank rows (``None``: none blank), as ``engine.table`` gives them, a block of rows at a
    time (each block its own bytes: the buffer is filled again for the next)."""
    import numpy as np

    n = len(columns[0][0])
    if not n:
        return
    cells = [_column(np, v, b, n) for v, b in columns]
    if len(cells) == 1:  # the csv module quotes a line's only cell when it is empty
        cells = [(['""' if t == "" else t for t in cells[0][0]], cells[0][1])]
    layout, fills = _layout(np, cells)
    width = len(layout)
    rows = max(1, min(n, BLOCK_BYTES // width))
    buf = bytearray(rows * width)
    lines = np.frombuffer(buf, dtype=np.uint8).reshape(rows, width)
    lines[:] = np.frombuffer(layout, dtype=np.uint8)  # the places no fill writes stay as set
    places = [(lines[:, at : at + c.itemsize].view(c.dtype)[:, 0], c, i) for at, c, i in fills]
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        for place, cells, codes in places:
            place[: stop - start] = cells[codes[start:stop]]
        whole = buf if stop - start == rows else bytes(memoryview(buf)[: (stop - start) * width])
        yield whole.translate(None, _PAD)


def _layout(np, columns: list[tuple[list[str], Any]]) -> tuple[bytes, list[tuple[int, Any, Any]]]:
    """A line's bytes with every cell that is the same on each row in place (the commas, the line
    end, columns of one value) and the others' places padded; and for each of those its place,
    its distinct cells as bytes of one width, and each row's code among them."""
    layout = bytearray()
    fills = []
    for i, (texts, codes) in enumerate(columns):
        if i:
            layout += b","
        if codes is None:
            layout += texts[0].encode("utf-8")
            continue
        cells = _padded(np, texts)
        fills.append((len(layout), cells, codes))
        layout += bytes([PAD]) * cells.dtype.itemsize
    layout += b"\r\n"
    return bytes(layout), fills


def _padded(np, texts: list[str]) -> Any:
    """``texts`` as UTF-8 in an array of bytes of one width, each padded with ``PAD``."""
    joined = "".join(texts)
    if joined.isascii() and "\0" not in joined:
        cells = np.array(texts, dtype="S")  # padded with NUL: no text here holds one
        size = cells.itemsize
        if size & (size - 1) and size < 64:  # a power of two: numpy copies those as words
            cells = cells.astype(f"S{1 << size.bit_length()}")
        raw = cells.view(np.uint8)
        raw[raw == 0] = PAD
        return cells
    encoded = [t.encode("utf-8") for t in texts]
    width = max(map(len, encoded))
    return np.array([e.ljust(width, bytes([PAD])) for e in encoded], dtype=f"S{width}")


def _column(np, values: Any, blank: Any, n: int) -> tuple[list[str], Any]:
    """A column's distinct cells as the csv module writes them, and each row's code among them
    (``None``: the one cell on every row)."""
    if blank is not None and blank.all():
        return [""], None
    if values.strides[0] == 0:  # one value for every row: its cell, once
        values = np.array(values[:1])
    texts, codes = _distinct(np, values)
    if len(texts) == 1 or len(codes) < n:
        texts, codes = [texts[codes[0]]], None
    if blank is not None and blank.any():
        codes = np.zeros(n, np.intp) if codes is None else codes.astype(np.intp)
        codes[blank] = len(texts)
        texts = [*texts, ""]
    return texts, codes


def _distinct(np, values: Any) -> tuple[list[str], Any]:
    """``values``' distinct cells (numbers as the csv module writes them: ``str``, which for a
    float is ``repr``; text through ``csv_text`` and quoted as the csv module quotes) and each
    row's code among them."""
    kind = values.dtype.kind
    if kind == "b":
        return [csv_text(False), csv_text(True)], values.view(np.uint8)
    if kind == "U":
        codes, texts = text_codes(np, values.reshape(-1))
        return [_quoted(csv_text(t)) for t in texts], codes
    if kind in "iuf":  # by bit pattern (-0.0 apart from 0.0), hashed, not sorted (~5x less CPU)
        codes, distinct = pd.factorize(values.view(np.uint64))
        distinct = distinct.view(values.dtype)  # orjson writes them as str does, ~5x faster,
        texts = orjson.dumps(distinct, option=orjson.OPT_SERIALIZE_NUMPY)[1:-1].decode().split(",")
        if kind == "f":  # but for the floats repr writes with an exponent (1e-05, 1e+16), nan, inf
            size = np.abs(distinct)
            for i in np.flatnonzero(((size < 1e-4) & (size != 0)) | ~(size < 1e16)).tolist():
                texts[i] = repr(distinct[i].item())
        return texts, codes
    codes, cells = first_seen_codes(np, [_quoted(csv_text(v)) for v in values.tolist()])
    return cells, codes


_NEEDS_QUOTES = re.compile(r'[,"\r\n\0]')  # and NUL: the csv module's call


def _quoted(value: Any) -> str:
    """What the package's one CSV writer (``output.csv_lines``) writes for ``value`` as a cell
    among others: text with a comma, quote or line break quoted, ``None`` empty, numbers by
    ``str``."""
    if isinstance(value, str) and not _NEEDS_QUOTES.search(value):
        return value
    return csv_lines([[value, ""]], safe=True).decode("utf-8")[: -len(",\r\n")]


_PAD = bytes([PAD])
