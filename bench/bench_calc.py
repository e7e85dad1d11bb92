"""Load benchmark: N distinct rows through `ledger-report calc --json`, time and peak memory.

    .venv/bin/python bench/bench_calc.py [N]        # default 100,000

The rows are the shipped examples varied row by row (bench/example_rows.py: layout, batch, GPU,
MFU, tokens, days, price...), so no two are alike.  Prints rows, seconds, rows per second and the
child's CPU time and peak RSS.  Targets live here, not in tests: issue 13 asks for 100,000 rows in ≤ 5 s on a
2-core machine, with bounded memory.

Measured 2026-12-02 on the 2-core machine, back to back with the code before (5adc55d); another
job shared the machine at times, so the CPU time is the figure to compare: 20,000 rows 2.4-2.5 s,
CPU 3.9-4.2 s, 213 MB (before: 2.8-2.9 s, CPU 4.5-4.8 s, 247 MB); 100,000 rows 9.5 s, CPU 18.2 s,
282 MB (before: 11.2 s, CPU 21.3 s, 300 MB); the bytes are the same (cmp on 20,000 rows).  The 5 s
goal is not met: a row takes about 180 µs of CPU in a worker (a batch's parts timed alone, a row:
reading and checking 42, evaluating 34 (the input columns and masks included), the messages' texts
27, the writer's other columns 49, joining and encoding the documents 29 µs; before: 46, 47 (with
building each row's Config again), 27, 48, 36).  What changed: a column of one kind is masked
without a Python step a row; a worker's batches are evaluated from its packed rows' columns (no
Config built per row); a chunk's documents are joined at once and a worker's batch bytes are held in
one buffer used again (no BytesIO copy); the reader transposes a batch of CSV rows at once.  Where
the time still goes: the workers' page faults (fresh memory for each batch's texts and arrays,
~150,000 minor faults for 20,000 rows, ~20 µs a row of system time); float repr (~5 µs) and
np.unique (~6 µs) in the number columns; the distinct combinations of runs (~11 µs); the model
checks while reading (~10 µs).  Measured and left: each worker parsing the whole CSV costs 4.4 µs
per row of the file, about 2 % of the total (finding the rows' byte ranges past quoted newlines
would cost most of that again); evaluating only the quantities the document reads (697 of 815)
saved nothing measurable; smaller chunks (256 rows) and a shared FMT memo: within the noise.

Measured again 2026-12-02 (after 1e85d75), back to back with it on the same machine while other
jobs held both cores (load 2.5-3.4), so the wall times say little (20,000 rows 4.2-5.4 s, 100,000
rows 13.4-23.1 s, old and new alike): CPU 20,000 rows 3.4-3.5 s (before 3.4-3.5 s); 100,000 rows
CPU 14.8-14.9 s (before 14.4-15.2 s), 290 MB peak RSS (before 290 MB); the bytes are the same
(cmp on 100,000 and 20,000 rows and on inputs/examples.csv).  The 5 s goal is still not met:
about 150 µs of CPU a row in a worker, where 5 s asks for about 90.  Counted in instructions
(valgrind cachegrind, one batch of 4,096 rows, not disturbed by the other jobs), a row takes
1.35 M instructions (before 1.38 M): reading and checking 349 K (386 K), evaluating 233 K (233 K),
the writer 766 K (757 K).  What changed: a Config's columns are copied from one empty
schema-ordered dict (4.1 -> 1.8 µs a Config); a batch's texts are taken into one object array by
their codes and joined 64 rows at a time, in the processor's cache (joining, encoding and holding
15.4 -> 10.7 µs a row, timed alternately in one process, although it takes a few more
instructions); plain ASCII texts are quoted without the JSON encoder; the distinct combinations of
what a text reads are found once for the texts that read the same on the same rows (a message and
its Chinese), a text quantity's distinct values reach the writer with each row's place (not
factorized again), and combinations are numbered without a stable sort.  Where the writer's
instructions go (cachegrind): the interpreter loop 18 %, float to text (_Py_dg_dtoa: repr of
~58,000 distinct floats a batch, FMT) 8 %, copying bytes 8 %, joining 3 %, sorting 4 %.
Measured and left: glibc's trim and mmap thresholds raised (mallopt) -- 15 % fewer page faults,
no CPU gained; a list of chunks written with os.writev instead of the held buffer (slower, 9,000
faults a batch); a float-repr memo shared by the columns (only 8 % of a batch's float texts
repeat across columns); sort and searchsorted in place of np.unique (slower above a few distinct
values); 8,192 rows a batch (evaluating 28.5 -> 25.1 µs a row, the writer no faster, a larger
held buffer and arrays).  What remains, each a few µs a row: a worker parsing the other workers'
rows (~3 µs a row of its own); the reader's rows built as dicts, then Configs, then tuples, then
columns again (~5 µs); the input columns converted to arrays twice (the checks, then the batch);
the per-(row, column) joins of ~195 texts a row.

2026-12-02, on a quiet machine after the merges: 100,000 rows 7.5 s (CPU 14.5 s, 299 MB), 20,000
rows 2.0 s (CPU 3.2 s, 232 MB); the 5 s goal is still missed.
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
            subprocess.run([sys.executable, "-m", "ledger_report", "calc", str(src), "--json"], stdout=sink, check=True)
        dt = time.perf_counter() - t0
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = child.ru_utime + child.ru_stime  # the wall time includes waiting on a busy machine; this does not
    rss_mb = child.ru_maxrss / 1024
    print(f"calc --json: {n:,} distinct rows in {dt:.1f} s ({n / dt:,.0f} rows/s; CPU {cpu_s:.1f} s), peak RSS {rss_mb:,.0f} MB")


if __name__ == "__main__":
    main()
