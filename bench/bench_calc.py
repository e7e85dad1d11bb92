"""Load benchmark: N rows through `ledger-report calc --json`, time and peak memory.

    .venv/bin/python bench/bench_calc.py [N]        # default 100,000

Prints rows, seconds, rows per second and the child's peak RSS.  Targets live here, not in tests.
"""

from __future__ import annotations

import csv
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rows = list(csv.DictReader((ROOT / "inputs" / "examples.csv").open(encoding="utf-8")))
    # written beside the example, so a row naming a config.json by relative path finds it
    with tempfile.TemporaryDirectory(dir=ROOT / "inputs") as tmp:
        src = Path(tmp) / "load.csv"
        (Path(tmp) / "configs").symlink_to(ROOT / "inputs" / "configs")
        with src.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            for i in range(n):
                r = dict(rows[i % len(rows)])
                r["name"] = f"{r['name']}-{i}"
                w.writerow(r)
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            subprocess.run([sys.executable, "-m", "ledger_report", "calc", str(src), "--json"], stdout=sink, check=True)
        dt = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"calc --json: {n:,} rows in {dt:.1f} s ({n / dt:,.0f} rows/s), peak RSS {rss_mb:,.0f} MB")


if __name__ == "__main__":
    main()
