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
from .csv import decode
from .files import read_bounded

MAX_PRICES_BYTES = 1 * 2**20  # a line per GPU type: a few KB
MAX_PRICE = 1e12  # per GPU-hour


def read_prices(path: str | Path) -> dict[str, float]:
    """GPU name (as the catalogue spells it) -> price per GPU-hour."""
    label = str(path)
    text = decode(read_bounded(Path(path), label, MAX_PRICES_BYTES, "prices file"), label)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [h.strip().lower() for h in reader.fieldnames or []]
    if header[:2] != ["gpu", "price"]:
        found = ",".join(reader.fieldnames or [])
        raise InputError(Problem(label, None, "gpu", "a header gpu,price", found))
    reader.fieldnames = header
    return checked_prices(
        ((label, i, "price"), (rec.get("gpu") or "").strip(), (rec.get("price") or "").strip())
        for i, rec in enumerate(reader, start=2)
    )


def checked_prices(entries: Iterable[tuple[tuple, Any, Any]]) -> dict[str, float]:
    """GPU (by the catalogue's spelling) -> price, from (place, GPU name, price) entries, the
    place being (file, line, the price's column); every entry checked, a GPU of the catalogue
    and a number 0 to MAX_PRICE, and every problem raised together."""
    out, problems = {}, []
    for (label, line, column), name, price in entries:
        gpu = find_gpu(str(name))
        try:
            value = math.nan if isinstance(price, bool) else float(price)
        except (TypeError, ValueError):
            value = math.nan
        if gpu is None:
            expected = "a GPU of the catalogue (ledger-report gpus)"
            problems.append(Problem(label, line, "gpu", expected, repr(name)))
        elif not (math.isfinite(value) and 0 <= value <= MAX_PRICE):
            expected = f"a price per GPU-hour from 0 to 10^{math.log10(MAX_PRICE):.0f}"
            problems.append(Problem(label, line, column, expected, repr(price)))
        else:
            out[gpu.name] = value
    if problems:
        raise InputError(problems)
    return out
