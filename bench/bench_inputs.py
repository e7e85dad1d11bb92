"""Reading speed of ``inputs.read_configs`` for an XLSX (and the same rows as CSV).

    .venv/bin/python bench/bench_inputs.py [N] [--repeat R] [--formulas]
    .venv/bin/python bench/bench_inputs.py 100000 --varied

Writes N rows (default 20,000) from ``bench/rows.py`` to a workbook the way openpyxl saves one
(with a <dimension> tag), reads it R times (default 3) and prints the best time and rows per
second; ``--formulas`` makes every row's ``global_batch`` a formula with a saved result, as Excel
leaves it.  Prints wall and CPU time (the CPU figure is steadier on a shared machine).  Targets
live here, not in tests.

``--varied`` on 100,000 rows, 2026-12-04 04:31 UTC at load 3.2: 2.46 s (CPU 2.19 s, 45,760 rows
per CPU second), best of 2.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import openpyxl  # noqa: E402
from rows import configs  # noqa: E402

from ledger_report.config import COLUMN_NAMES  # noqa: E402
from ledger_report.inputs import read_configs  # noqa: E402


def write_workbook(path: Path, rows: list[dict], formulas: bool) -> None:
    header = [c for c in COLUMN_NAMES if any(c in r for r in rows)]
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inputs"
    ws.append(header)
    gb = header.index("global_batch")
    for r in rows:
        values = [r.get(c) for c in header]
        if formulas:
            values[gb] = f"={r['global_batch']}*1"
        ws.append(values)
    wb.save(path)
    if formulas:  # openpyxl saves no results; add them as Excel would
        with zipfile.ZipFile(path) as zin:
            parts = [(i.filename, zin.read(i.filename)) for i in zin.infolist()]
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
            for name, data in parts:
                if name == "xl/worksheets/sheet1.xml":
                    data = re.sub(rb"<f>(\d+)\*1</f><v\s*/>", rb"<f>\1*1</f><v>\1</v>", data)
                zout.writestr(name, data)


def write_csv(path: Path, rows: list[dict]) -> None:
    header = [c for c in COLUMN_NAMES if any(c in r for r in rows)]
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=header)
        w.writeheader()
        w.writerows(rows)


def best(path: Path, repeat: int, reader=read_configs) -> tuple[int, float, float]:
    """Rows read, best wall seconds, best CPU seconds (the CPU figure is steadier on a shared machine)."""
    n, walls, cpus = 0, [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        n = len(reader(path))
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return n, min(walls), min(cpus)


def varied(n: int, repeat: int) -> None:
    from example_rows import ROOT, varied_rows
    from example_rows import write_csv as write_examples

    from ledger_report.api import read

    with tempfile.TemporaryDirectory(dir=ROOT / "inputs") as tmp:
        (Path(tmp) / "configs").symlink_to(ROOT / "inputs" / "configs")
        path = Path(tmp) / "rows.csv"
        write_examples(path, varied_rows(n))
        n, wall, cpu = best(path, repeat, read)
    print(
        f"api.read varied csv: {n:,} rows in {wall:.2f} s (CPU {cpu:.2f} s, {n / cpu:,.0f} rows/s),"
        f" best of {repeat}; load average {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--formulas", action="store_true")
    ap.add_argument("--varied", action="store_true", help="example_rows.py's rows, api.read")
    args = ap.parse_args()
    if args.varied:
        return varied(args.n, args.repeat)
    rows = configs(args.n)
    with tempfile.TemporaryDirectory() as tmp:
        xlsx, text = Path(tmp) / "inputs.xlsx", Path(tmp) / "inputs.csv"
        write_workbook(xlsx, rows, args.formulas)
        write_csv(text, rows)
        for label, path in (
            ("xlsx" + (" (formulas)" if args.formulas else ""), xlsx),
            ("csv", text),
        ):
            n, wall, cpu = best(path, args.repeat)
            print(
                f"read_configs {label}: {n:,} rows in {wall:.2f} s ({n / wall:,.0f} rows/s; "
                f"CPU {cpu:.2f} s, {n / cpu:,.0f} rows/s), best of {args.repeat}"
            )


if __name__ == "__main__":
    main()
