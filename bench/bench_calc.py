"""Speed of the sweep paths: the JSON document, the sweep table, and lr.compute on a few rows.

    .venv/bin/python bench/bench_calc.py [--json-rows 10000] [--table-rows 100000] [--small 20]

The rows are the shipped examples varied row by row (bench/example_rows.py: layout, batch, GPU,
MFU, tokens, days, price...), so no two are alike.  Each command runs in a fresh process, as a
user runs it; the figures are wall-clock seconds, the process's CPU seconds (the wall time
includes waiting for a core on a busy machine; the CPU time does not) and its peak RSS.

Targets (issue "A codebase in proportion", on a 2-core machine): the JSON of 10,000 rows in ≤ 5 s,
100,000 rows to a DataFrame or CSV in ≤ 5 s, ``lr.compute`` on 20 rows no slower than evaluating
them one by one with the scalar interpreter.

Measured 2026-12-03 16:28-16:34 UTC at load 0.4-1.0 (the quietest moments of the afternoon), the
commands the bench runs (``python -c TO_FRAME rows.csv``, ``python -m ledger_report calc rows.csv
--json``) on the bench's rows, the tree before this round (commit 7881bfd) and after it (branch
s2, main merged in) interleaved, four runs each, wall seconds (CPU within 0.1 s of them):

    lr.to_frame, 100,000 rows   before 9.1, 8.4, 8.1, 6.9 s (mean 8.1)
                                after  7.4, 7.9, 7.2, 8.4 s (mean 7.7)
    calc --json, 10,000 rows    before 6.9, 7.9, 8.4, 7.3 s (mean 7.6)
                                after  6.9, 7.5, 6.2, 6.3 s (mean 6.7)
    lr.compute + documents, 20 rows: 1.5-2.7x faster than compute() row by row, before and after

Even at load < 1 a run scatters by ±15 %, so the gains (~5 % and ~12 %) are within the noise.
At load 4-8 the same pairs scatter by ±30 % (a full bench run gave lr.to_frame 13.1 and 9.1 s CPU
for the old tree twice, 9.2 and 7.9 s for the new), and the cost of a fresh page moves with it:
filling 720 MB of new arrays took 0.4 s of system time at one moment and 2.7 s at another
(load 5-8).  Neither 5 s target is met: lr.to_frame is ~7.5 s of CPU (import 0.3 s, reading
100,000 rows 3.7 s, the table 3.3-3.7 s), calc --json ~7 s.

This round, on the one path: the arrays interpreter compiles each expression once into closures
over the evaluation (``evaluate.array_compiled``: a chunk is calls, not a walk of the tree; the
work on arrays stays in ``_ArrayEval``'s methods, which ``masked._Guarded`` overrides), looks at a
column's blank mask once per evaluation, and compares against a zero exactly (no near-equality
passes); the sweep table evaluates 16,384 rows a chunk (7 passes over 100,000 rows, not 13:
measured at load ~1, the table's CPU 4.4-5.0 -> 3.7-4.1 s; 32,768 was no better); lr.to_frame
reads its rows once (the table read a list of 100,000 Configs again and checked their names) and
writes a float column's blanks as NaN into its own array (not a second one: ~100 MB of new pages);
the JSON document reads each table line's basis once per model and looks up each text quantity's
closures once per key.  Measured and not taken: 4,096 rows a JSON chunk (1,024 now) saves 0.4-1 s
of the 10,000 rows' CPU for +290 MB of peak RSS; 16,384 rows a batch of the reader's rule checks
(4,096 now) shows no gain beyond noise; glibc's trim threshold raised (no heap given back between
chunks) gives more page faults, not fewer.

Where the time goes now (py-spy, 100,000 rows): reading is the cell loop (~45 %), the rule checks
over arrays (~25 %), the frozen Config (~15 %: 118 columns a row in a dict of 3.3 kB, ~330 MB of
new pages), the csv module (~10 %); the table is the arrays interpreter (~50 %: numpy calls, ~1,600
comparisons and ~2,300 conditionals a pass), the input columns made from the Configs a chunk at a
time (~15 %) and the copy into the DataFrame's ~0.6 GB of columns (~25 %, most of it page
faults).  calc --json: the document's sentences by the scalar interpreter ~27 %, json's C
encoder ~16 %, the rest of the document walk ~25 %, the arrays and the rows' values ~20 %.

2026-12-03 19:42 UTC, load 2-4, calc --json on the bench's 10,000 rows, commit 495f51a against
cf440da interleaved, three runs each: 6.4-7.5 s wall (CPU 6.4-7.4 s) against 6.4 s (CPU 6.3-6.4 s),
the same within the noise.  In-process on 3,000 rows (CPU, load ~6): compute 0.6-0.8 s, the
documents 1.3 s (most of it the scalar interpreter's sentences: ~35 text quantities a row, none
over ~15 %), json 0.4 s.  The sentences' byte formatting (three nested IFs and a FMT per figure)
is the next cost; it lives in the definitions, not here.

The previous round (2026-12-03 13:40-13:44 UTC, commit 9a3fe1f against the tree after it, load
4.5-6.4): lr.to_frame 14.0 -> 8.8 s CPU (peak RSS 1,830 -> 1,250 MB), calc --csv 36.9 -> 26.1 s,
calc --json 8.6 -> 7.9 s, by pausing the cyclic collector for the bulk calls
(workers.no_cyclic_gc), a memo of each column's converted texts in the reader, text arrays'
distinct values found by array comparisons (evaluate.text_codes), text columns kept as codes in
to_frame, csv_text a column at a time, and plain() looked up once per registry in the document.
calc --csv: the csv module writing 88 M cells is ~45 % (~150 ns a cell: a float's repr).  orjson
was not taken: it writes 1e+20 as 1e20, so the JSON would not be the same bytes.
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


def run_timed(label: str, args: list[str], rows: int) -> None:
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
        run_timed("calc --json", ["-m", "ledger_report", "calc", str(src), "--json"], a.json_rows)
        src = folder / "table.csv"
        write_csv(src, varied_rows(a.table_rows))
        run_timed("lr.to_frame", ["-c", TO_FRAME, str(src)], a.table_rows)
        run_timed("calc --csv", ["-m", "ledger_report", "calc", str(src), "--csv"], a.table_rows)


if __name__ == "__main__":
    main()
