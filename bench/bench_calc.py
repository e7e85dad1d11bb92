"""Speed of the sweep paths: the JSON document, the sweep table, and lr.compute on a few rows.

    .venv/bin/python bench/bench_calc.py [--json-rows 10000] [--table-rows 100000] [--small 20]

The rows are the shipped examples varied row by row (bench/example_rows.py: layout, batch, GPU,
MFU, tokens, days, price...), so no two are alike.  Each command runs in a fresh process, as a
user runs it; the figures are wall-clock seconds, the process's CPU seconds (the wall time
includes waiting for a core on a busy machine; the CPU time does not) and its peak RSS.

Targets (issue "A codebase in proportion", on a 2-core machine): the JSON of 10,000 rows in ≤ 5 s,
100,000 rows to a DataFrame or CSV in ≤ 5 s, ``lr.compute`` on 20 rows no slower than evaluating
them one by one with the scalar interpreter.

Measured 2026-12-03 13:40-13:44 UTC, the tree before this round's work (commit 9a3fe1f) and after
it back to back, on the 2-core machine shared by seven sessions (load 4.5-6.4, so the CPU times
are inflated too: an earlier run of the old tree at load ~2 gave 11.1 s for lr.to_frame where it
gives 14.0 s here; compare the pairs, not the absolute figures):

    lr.to_frame, 100,000 rows   14.0 -> 8.8 s CPU, peak RSS 1,830 -> 1,250 MB
    calc --csv, 100,000 rows    36.9 -> 26.1 s CPU
    calc --json, 10,000 rows     8.6 -> 7.9 s CPU
    lr.compute + documents, 20 rows: 1.0-2.6x faster than compute() row by row (noise)

What changed, all on the one path: the bulk library calls (read, to_frame, calc --json/--csv)
run with the cyclic collector paused (workers.no_cyclic_gc: 100,000 rows' objects hold no cycle,
and each full collection walked every Config: ~2 s); the reader remembers each column's converted
texts in a dict of its own and walks the header's columns in position order, and gives the rule
checks the rows' columns from the cells each row has (~25 % of reading); the arrays interpreter
finds a text array's distinct values by one array comparison each while there are at most 8
(evaluate.text_codes; it was a Python object per row: ~20 % of the table's evaluation); a quantity
with one value for every row is made plain once and broadcast; to_frame keeps text columns as codes
into their distinct texts (no 6 M string objects to factorize) and fills numbers into arrays made
once; calc --csv puts each column through csv_text a column at a time (truth values and each
distinct text once) and hands the one writer rows it need not touch cell by cell; the JSON
document looks up each quantity's plain() once per registry and reads the spec's layout once.

Where lr.to_frame's CPU goes now (process_time, load ~4-6): imports 0.5 s, reading 3.6 s (~36
us a row: the cell loop, the Config, the rule checks over arrays ~25 %), the arrays interpreter
4.9 s (13 passes over ~900 quantities on 8,192 rows: numpy work, not Python per row; 4,096 or
32,768 rows a chunk are no faster), the columns 0.6 s (page faults of ~0.6 GB of new arrays;
blocks large enough for huge pages cost more, their compaction once memory is fragmented).
calc --json's 10,000 rows: the document's messages and sentences by the scalar interpreter ~30 %,
json's C encoder ~16 %, the rest of the document walk ~25 %, the arrays and the rows' values
~20 %.  calc --csv: the csv module writing 88 M cells is ~45 % (~150 ns a cell: a float's repr).
orjson was not taken: it writes 1e+20 as 1e20, so the JSON would not be the same bytes.  None of
the three 5 s targets is met in CPU time on this loaded machine (scaled by the old tree's 11.1
against 14.0 s, lr.to_frame would take ~7 s on a quieter one: an estimate, not a measurement).
"""

from __future__ import annotations

import argparse
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

TO_FRAME = "import ledger_report as lr, sys; f = lr.to_frame(sys.argv[1]); print(f.shape)"


def _run(label: str, args: list[str], rows: int) -> None:
    """Run ``python args`` with its stdout to /dev/null and print its figures."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run([sys.executable, *args], stdout=sink, check=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(
        f"{label}: {rows:,} rows in {wall:.1f} s ({rows / wall:,.0f} rows/s; CPU {cpu:.1f} s), "
        f"peak RSS {after.ru_maxrss / 1024:,.0f} MB"
    )


def _small(n: int, folder: Path) -> None:
    """lr.compute on ``n`` rows (arrays, a chunk) against compute() row by row (scalar), each the
    best of five after a first run that warms the caches."""
    import ledger_report as lr
    from ledger_report.engine import compute

    path = folder / "small.csv"
    write_csv(path, varied_rows(n, seed=1))
    configs = lr.read(path)

    def best(fn) -> float:
        fn()
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    from ledger_report.render.document import config_document

    many = best(lambda: [config_document(lg) for lg in lr.compute(configs)])
    one = best(lambda: [config_document(compute(c)) for c in configs])
    print(
        f"lr.compute + documents, {n} rows: {many * 1e3:.0f} ms; compute() row by row: "
        f"{one * 1e3:.0f} ms ({one / many:.1f}x)"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json-rows", type=int, default=10_000)
    ap.add_argument("--table-rows", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=20)
    a = ap.parse_args()
    # written beside the examples, so a row naming a config.json by relative path finds it
    with tempfile.TemporaryDirectory(dir=ROOT / "inputs") as tmp:
        folder = Path(tmp)
        (folder / "configs").symlink_to(ROOT / "inputs" / "configs")
        _small(a.small, folder)
        src = folder / "json.csv"
        write_csv(src, varied_rows(a.json_rows))
        _run("calc --json", ["-m", "ledger_report", "calc", str(src), "--json"], a.json_rows)
        src = folder / "table.csv"
        write_csv(src, varied_rows(a.table_rows))
        _run("lr.to_frame", ["-c", TO_FRAME, str(src)], a.table_rows)
        _run("calc --csv", ["-m", "ledger_report", "calc", str(src), "--csv"], a.table_rows)


if __name__ == "__main__":
    main()
