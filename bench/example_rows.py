"""Distinct, valid rows made from the shipped examples, for bench_calc.py and the tests that compare
outputs on many rows (bench/rows.py makes rows from four model shapes instead).

Each row is one of inputs/examples.csv with its layout and job varied at random (data-parallel
size, micro- and global batch, sequence length, ZeRO stage, recompute, GPU, MFU empty or given,
tokens, days, reserve, measured peak) and, in half the rows, a few optional columns left empty.
Each row has its own price, so no two are alike; every value stays one the reader accepts
(tests/test_speed.py reads them all).
"""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "inputs" / "examples.csv"
GPUS = ("H100-SXM", "H800", "H200", "H20", "A100-80GB", "B200", "MI300X", "H100-PCIe", "L40S")
RECOMPUTE = ("none", "selective", "full")


def examples() -> list[dict[str, str]]:
    with EXAMPLES.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def varied_rows(n: int, seed: int = 0) -> Iterator[dict[str, str]]:
    """``n`` rows (at most 100,000), the i-th a variation of example i mod 21 named ``<example>-<i>``
    and priced 1 + i/100,000 per GPU-hour."""
    base = examples()
    rng = random.Random(seed)
    for i in range(n):
        r = dict(base[i % len(base)])
        _vary_layout(r, rng)
        _vary_job(r, rng)
        _blank_some(r, rng)
        r["price_per_gpu_hour"] = f"{1 + i / 100_000:.5f}"  # the row's own price: no two rows alike
        r["name"] = f"{r['name']}-{i}"
        yield r


def _vary_layout(r: dict[str, str], rng: random.Random) -> None:
    dp = int(r["dp"] or 1) * rng.choice((1, 1, 2, 3, 4))  # a multiple keeps ep dividing the world
    r["dp"] = str(dp)
    if r["global_batch"]:
        mb = rng.choice((1, 1, 2)) if r["micro_batch"] else 1
        if r["micro_batch"]:
            r["micro_batch"] = str(mb)
        r["global_batch"] = str(mb * dp * rng.choice((1, 2, 4, 8, 16)))
    if r["seq_len"]:
        r["seq_len"] = str(rng.choice((1024, 2048, 4096, 8192, 16384, 32768)))
    if r["framework"] == "generic" and r["heads"] and r["pp"] in ("", "1"):
        r["tp"] = str(rng.choice((1, 1, 2, 4, 8)))  # divides the heads, kv_heads and the MLP width
        r["pp"] = str(rng.choice((1, 1, 2, 3, 4, 5)))  # 5 does not divide the layers: a warning
    if r["zero"] and r["framework"] == "generic":
        r["zero"] = str(rng.choice((0, 1, 2, 3)))
    if r["recompute"]:
        r["recompute"] = rng.choice(RECOMPUTE)
    r["gpu"] = rng.choice(GPUS)


def _vary_job(r: dict[str, str], rng: random.Random) -> None:
    r["mfu"] = "" if rng.random() < 0.3 else f"{rng.uniform(0.15, 0.6):.3f}"
    if r["tokens"]:
        r["tokens"] = rng.choice(
            (
                f"{rng.randint(1, 900)}B",
                f"{rng.uniform(0.5, 20):.2f}T",
                str(rng.randint(10**9, 10**12)),
            )
        )
    if r["days"]:
        days = rng.randint(1, 200)
        r["days"] = str(days)
        if r["reserve_days"]:
            r["reserve_days"] = f"{rng.uniform(0, days - 0.5):.1f}"
    if r["measured_peak_gb"]:
        r["measured_peak_gb"] = f"{rng.uniform(20, 180):.1f}"


OPTIONAL = (
    "mfu",
    "tokens",
    "days",
    "reserve_days",
    "measured_peak_gb",
    "micro_batch",
    "global_batch",
    "seq_len",
    "recompute",
    "zero",
    "tp",
    "pp",
    "logits_dtype",
    "notes",
)


def _blank_some(r: dict[str, str], rng: random.Random) -> None:
    """Leave a few optional columns empty (the model's defaults, or "cannot tell"), so rows differ
    in which columns they give as well as in their values."""
    if rng.random() < 0.5:
        for col in rng.sample(OPTIONAL, rng.randint(1, 4)):
            r[col] = ""


def write_csv(path: Path, rows: Iterator[dict[str, str]]) -> int:
    """Write rows under the examples' header; returns how many."""
    fields = list(examples()[0])
    n = 0
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow(r)
            n += 1
    return n
