"""Load benchmark: N distinct rows through `ledger-report calc --json`, time and peak memory.

    .venv/bin/python bench/bench_calc.py [N]        # default 100,000

The rows are the shipped examples varied row by row (bench/example_rows.py: layout, batch, GPU,
MFU, tokens, days, price...), so no two are alike.  Prints rows, seconds, rows per second and the
child's CPU time and peak RSS.  Targets live here, not in tests: the goal is 100,000 rows in ≤ 5 s on a
2-core machine, with bounded memory.

Where the time goes (2026-12-02, after the changes below; a worker's CPU per row, batches of
8,192 rows): reading and checking ~20 µs (csv parsing ~2, converting each column's distinct cells
~5, the model's checks over arrays ~7, names ~1.5), evaluating ~15-18 (of which ~4 converting the
input columns to arrays), the JSON writer ~60-65 (number columns ~15-19: np.unique and float repr
of ~31 distinct values a row; text quantities ~10-15; the lists of notes, lines and origins ~20;
the object grid, joining and copying ~15).  A batch also has a fixed cost of ~75 ms (the passes
over the registry and the writer's columns), hence 8,192 rows a batch rather than 4,096.

What changed this round, each with the bytes unchanged (cmp on 20,000 and 100,000 varied rows and
on the examples): clean CSV blocks go from the reader to the batches as columns (no dict, Config
and tuple per row: reading 33 -> 20 µs a row); text quantities over arrays where every row holds a
float or a truth value (FMT formatting each distinct value once, conditionals partitioned by bool
arrays), a section's texts only on the rows that show it, and "the row breaks a rule" from the
rules' truth values rather than from the Chinese check text; texts escaped as JSON a list at a time;
a conditional's pick without numpy.where's branch on each row; floating-point errors ignored once
per evaluation; a text column compared with one text through its distinct values; the cyclic
garbage collector paused while a worker reads and while a batch is evaluated and written.

Measured and left: evaluating only the quantities the document reads (849 of 887 are needed);
sharing the checks' input arrays with the batch (~3 µs a row, but each worker would hold every
block's arrays until it writes); numpy's own float-to-text (slower than repr); 16,384 rows a batch
(5.5 s, but 650 MB a worker).

Measured 2026-12-02 on the 2-core machine, quiet (load < 1), the same bytes before and after:
100,000 rows 4.8-4.9 s (CPU 9.4-9.6 s, 360 MB peak RSS in a worker), 20,000 rows 1.3 s (CPU
2.4 s); at the start of the day 8.1 s (CPU 15.6 s, 304 MB) and 2.1 s.  The last two steps: the
batches sized so that each worker has as many (100,000 rows: 14 of 7,143 rather than 13 of 8,192,
one worker waiting at the end for the other's 7th), 5.5 -> 5.3 s; 32 rows joined at a time rather
than 64 (a chunk's text and bytes, ~400 KB each, within a core's 2 MB L2 cache; alternated runs
64/32: 5.11/4.86, 5.12/4.88, 4.88/4.78 s), 5.3 -> 4.9 s.  Then, reviewing the change, the collector
paused by one helper around both a batch's evaluation and its writing (not off for a worker's
life and collected by hand each batch, with the writer pausing it again): 4.5-4.9 s over five runs
(4.6, 4.5, 4.7, 4.9, 4.8; CPU 8.8-9.4 s), 20,000 rows 1.2 s.  The goal is met on a quiet machine, with little room: another job on the
machine puts it over.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from example_rows import varied_rows, write_csv  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    # written beside the example, so a row naming a config.json by relative path finds it
    with tempfile.TemporaryDirectory(dir=ROOT / "inputs") as tmp:
        src = Path(tmp) / "load.csv"
        (Path(tmp) / "configs").symlink_to(ROOT / "inputs" / "configs")
        write_csv(src, varied_rows(n))
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            subprocess.run(
                [sys.executable, "-m", "ledger_report", "calc", str(src), "--json"],
                stdout=sink,
                check=True,
            )
        dt = time.perf_counter() - t0
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (
        child.ru_utime + child.ru_stime
    )  # the wall time includes waiting on a busy machine; this does not
    rss_mb = child.ru_maxrss / 1024
    print(
        f"calc --json: {n:,} distinct rows in {dt:.1f} s ({n / dt:,.0f} rows/s; CPU {cpu_s:.1f} s), peak RSS {rss_mb:,.0f} MB"
    )


if __name__ == "__main__":
    main()
