"""A prices file for ``plan --prices``: CSV with the columns ``gpu,price`` (price per GPU-hour,
any currency), one GPU type a line; read as an input file is (bounded, a regular file, UTF-8
with or without a byte-order mark, GBK, UTF-16 by its mark)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from ..catalogue import find_gpu
from ..errors import InputError, Problem
from .csv import decode
from .files import read_bounded

MAX_PRICES_BYTES = 1 * 2**20  # a line per GPU type: a few KB


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
    problems, out = [], {}
    for i, rec in enumerate(reader, start=2):
        name, price = (rec.get("gpu") or "").strip(), (rec.get("price") or "").strip()
        gpu = find_gpu(name)
        try:
            value = float(price)
        except ValueError:
            value = -1.0
        if gpu is None:
            problems.append(
                Problem(label, i, "gpu", "a GPU of the catalogue (ledger-report gpus)", repr(name))
            )
        elif not (value >= 0 and math.isfinite(value) and value <= 1e12):
            problems.append(
                Problem(label, i, "price", "a price per GPU-hour from 0 to 10^12", repr(price))
            )
        else:
            out[gpu.name] = value
    if problems:
        raise InputError(problems)
    return out
