"""A prices file for ``plan --prices``: CSV with the columns ``gpu,price`` (price per GPU-hour,
any currency), one GPU type a line; read as an input file is (bounded, a regular file, UTF-8
with or without a byte-order mark, GBK, UTF-16 by its mark)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, Iterable

from ..catalogue import find_gpu
from ..errors import InputError, Problem
from .cells import letter
from .csv import decode
from .files import fail, read_bounded
from .xlsx import OTHER_WORKBOOK_SUFFIXES, XLSX_SUFFIXES

MAX_PRICES_BYTES = 1 * 2**20  # a line per GPU type: a few KB
MAX_PRICE = 1e12  # per GPU-hour


def read_prices(path: str | Path) -> dict[str, float]:
    """GPU name (as the catalogue spells it) -> price per GPU-hour.  The header is gpu,price and
    nothing else (an unknown column is refused, as an input file's is), each line two fields, at
    least one line below the header."""
    label = str(path)
    if Path(path).suffix.lower() in (*XLSX_SUFFIXES, *OTHER_WORKBOOK_SUFFIXES):
        kind = f"a {Path(path).suffix.lower()} workbook; save its sheet as CSV"
        fail(label, "a CSV file of gpu,price lines", kind)
    text = decode(read_bounded(Path(path), label, MAX_PRICES_BYTES, "prices file"), label)
    reader = csv.reader(io.StringIO(text, newline=""))
    fields = next(reader, [])
    header = [h.strip().lower() for h in fields]
    if header[:2] != ["gpu", "price"]:
        raise InputError(Problem(label, None, "gpu", "a header gpu,price", ",".join(fields)))
    if extra := [(i, h) for i, h in enumerate(fields[2:], 3) if h.strip()]:
        unknown = ", ".join(f"{h!r} in field {i} ({letter(i)})" for i, h in extra)
        fail(label, "only the columns gpu,price", f"the unknown column {unknown}", 1, "line")
    entries, problems = [], []
    for rec in reader:
        line = reader.line_num
        if any(f.strip() for f in rec[2:]):  # data in no column (2,5: a decimal comma?)
            expected = "two fields, gpu and price (a decimal point, not a comma)"
            found = f"{len(rec)} fields: {','.join(rec)[:60]!r}"
            problems.append(Problem(label, line, None, expected, found, None, "line"))
        elif rec:  # (a blank line: none)
            entries.append(((label, line, "price"), rec[0].strip(), "".join(rec[1:2]).strip()))
    if not entries and not problems:
        fail(label, "at least one gpu,price line below the header", "only the header", 1, "line")
    try:
        prices = checked_prices(entries)
    except InputError as err:
        problems += err.problems
    if problems:  # every problem of the file together, in the order of its lines
        raise InputError(sorted(problems, key=lambda p: p.row or 0))
    return prices


def checked_prices(entries: Iterable[tuple[tuple, Any, Any]]) -> dict[str, float]:
    """GPU (by the catalogue's spelling) -> price, from (place, GPU name, price) entries, the
    place being (file, line, the price's column); every entry checked, a GPU of the catalogue
    and a number 0 to MAX_PRICE, and every problem raised together."""
    out, problems = {}, []
    first: dict[str, tuple[Any, Any]] = {}  # GPU -> (its name as first written, its line)
    for (label, line, column), name, price in entries:
        gpu = find_gpu(str(name))
        try:
            value = math.nan if isinstance(price, bool) else float(price)
        except (TypeError, ValueError):
            value = math.nan
        if gpu is None:
            expected = "a GPU of the catalogue (ledger-report gpus)"
            problems.append(Problem(label, line, "gpu", expected, repr(name), None, "line"))
        elif gpu.name in first:  # the same GPU by the catalogue's reading of its name
            before, at = first[gpu.name]
            where = f" at line {at}" if at is not None else ""
            found = f"{name!r} again (as {gpu.name}; first as {before!r}{where})"
            problems.append(Problem(label, line, "gpu", "each GPU once", found, None, "line"))
        elif not (math.isfinite(value) and 0 <= value <= MAX_PRICE):
            expected = f"a price per GPU-hour from 0 to 10^{math.log10(MAX_PRICE):.0f}"
            problems.append(Problem(label, line, column, expected, repr(price), None, "line"))
        else:
            out[gpu.name] = value
        if gpu is not None:
            first.setdefault(gpu.name, (name, line))
    if problems:
        raise InputError(problems)
    return out
