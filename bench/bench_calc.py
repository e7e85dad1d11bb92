"""Speed of the sweep paths: the JSON document, the sweep table, and lr.compute on a few rows.

    .venv/bin/python bench/bench_calc.py [--json-rows 10000] [--table-rows 100000] [--small 20]

The rows are the shipped examples varied row by row (bench/example_rows.py: layout, batch, GPU,
MFU, tokens, days, price...), so no two are alike.  Each command runs in a fresh process, as a
user runs it; the figures are wall-clock seconds, the process's CPU seconds (the wall time
includes waiting for a core on a busy machine; the CPU time does not) and its peak RSS.  The
``calc --json`` rows are also timed in this process by phase (CPU seconds, the least of three),
and lr.compute's few rows too (CPU seconds, the least of five).
The load average is printed first: at a load above the 2 cores a run's CPU time scatters by
±20 %, so compare trees interleaved, several runs each.

Targets (issue "A codebase in proportion", on a 2-core machine): the JSON of 10,000 rows in ≤ 5 s,
100,000 rows to a DataFrame or CSV in ≤ 5 s, ``lr.compute`` on 20 rows no slower than evaluating
them one by one with the scalar interpreter.

calc --json, 10,000 rows, 2026-12-03 21:45-22:50 UTC at load 3.6-12 (8 sessions on 2 cores): the
tree at 7156758 against this round's, interleaved, 18 whole commands each: CPU 6.5-10.4 s (median
8.6) against 6.9-10.7 s (median 8.5), wall 7-37 s; the same within the scatter.  The documents of
the 10,000 rows in one process, this round's sentence memo on and off in turn (8 pairs): 0 to
0.9 s less with it (mean 0.4 s of ~3 s).  The command was 6.1 s at idle before this round; the
target is not shown met (no idle machine to measure it on).

Taken: the sentences a chunk's rows read (verdict reasons, notes, ~20 a row, through the scalar
interpreter) are computed once for each set of values (with their types) they read and shared by
the rows that read the same (engine._RowValues): 62 % of the reads on these rows, but mostly the
cheap ones (a note per convention); the long verdict reasons read figures of their own row.  Not
taken: orjson (it writes 1e+20 as 1e20, so the JSON would not be the same bytes, and it is not a
dependency); one memo for the whole run (no gain over one a chunk, memory unbounded).

Where calc --json's CPU goes now (cProfile, 3,000 rows): import 0.5 s and reading 0.4 s of 10,000
rows; the arrays interpreter and the rows' Python values ~25 %; the sentences still computed
(~6.6 a row) ~20 %; the rest of the document walk ~25 % (resolved_inputs a third of it); json's C
encoder ~17 %.  Next: the sentences over arrays (the arrays interpreter has no CONCAT, FMT or MID)
or a larger chunk (4,096 rows: 0.4-1 s less in an earlier round, +290 MB peak RSS; more rows would
share a sentence).

2026-12-04 03:40-04:35 UTC, load 2-6 on the 2 cores, this round's tree against 22c0288 run in
turn (CPU seconds).  calc --json, 10,000 rows, in process (least of 3, 3 pairs): the arrays and the
rows' values 1.23-1.40 -> 1.05-1.12 s (python_values makes blanks and whole numbers over arrays,
each row's dict a copy of its chunk's key table), the documents 2.06-2.45 -> 2.00-2.08 s
(resolved_inputs one comprehension); the whole command 5.3-6.0 s of CPU in both, within the
scatter.  lr.compute + documents on 20 rows: 57-58 -> 51-57 ms (the arrays interpreter's fixed
cost on those rows, least of 30: 40-43 -> 37-38 ms); compute() row by row is 53-115 ms, two modes
(whether a full collection of the cyclic GC falls in the timed runs), so the ratio is 0.9-2x: the
target holds only against the slow mode.  lr.to_frame of 100,000 rows: 7.9 against 8.2 s of CPU
in this script, 5.7-6.7 against 5.7 s under /usr/bin/time (user + sys, load 4.3): reading (2.1 s)
and the table (1.9 s) unchanged, the join ~1 s (its page faults: 1.35 GB touched, the frame's
0.74 GB and the rows' 0.5 GB).  Not taken: CHUNK_ROWS 2,048 or 4,096 (the JSON phases 5.8 ->
5.0 or 4.6 s in process at load 4, but peak RSS 249 -> 373 or 643 MB and the whole command the
same within the scatter); to_frame's columns filled in place as chunks come (the same CPU, faults
and peak RSS); the reader's constraint batch at 16,384 rows, or its empty text cells remembered
(no difference measurable).

2026-12-04 09:59-10:15 UTC, idle (load 0.6-0.9), main at 4e0fadb, whole commands in fresh
processes: calc --json of 10,000 rows 4.5, 4.8, 5.2, 4.5 s in this script and 4.4-4.8 s alone
(CPU within 0.1 s of the wall); lr.to_frame of 100,000 rows 7.1, 7.4, 7.6, 4.6, 5.9 s in this
script and 4.6-5.5 s alone (peak RSS 1.32 GB; the runs over 6 s show 11-15 % system time in
vmstat, page faults, not a phase of ours); calc --csv 6.8-8.0 s; lr.compute + documents on 20
rows 41-46 ms against 37-55 ms row by row (0.9-1.2x).  The fresh processes now run before the
in-process phases, which changed none of these figures beyond the scatter.

2026-12-04 16:45-17:05 UTC, a second machine (AMD EPYC at 2.6 GHz, reference 0.44 s), idle (load
0.8-1.0), main at f8a954c: calc --json of 10,000 rows 6.5-6.8 s (in process: arrays 1.14, documents
2.15-2.19, json 1.09-1.11 s); lr.to_frame of 100,000 rows 6.8-7.6 s (reading 2.4 s, the table
2.4 s, the join 1.5-2.0 s, of it 0.8-1.6 s system time); calc --csv 9.2-10.6 s after the writer's
distinct values were hashed (pandas.factorize) instead of sorted (np.unique: 4.3 s of argsort on
this machine; the command was 13.5 s); lr.compute + documents on 20 rows 41-42 ms against 60-99 ms
row by row.  The same tree runs ~1.4x slower here than on the machine above (calc --json 4.7 ->
6.5 s), so compare figures of one machine only.  On a fresh virtual machine the first touch of
memory is slow (touching 17 GB took 35 s, ~2 ms a MB): the join's system time halved once the
machine had touched its memory, so run a bench twice and take the second.

2026-12-04 18:30 UTC, the same AMD machine, idle (load 0.8): calc --json makes every second chunk
of rows in a forked process beside the first (workers.in_turn; the same bytes): 10,000 rows in 3.9
s wall, 6.8 s of CPU in the two processes (6.1-6.3 s wall in one). 100,000 rows: 44 s against 64 s
in one process (78 against 64 s of CPU: each process runs slower beside the other, and the worker
copies the pages of the shared heap it writes). The same split does not pay for the sweep table:
calc --csv 10.1 against 10.4 s, lr.to_frame 7.7-8.1 against 6.6 s (system time 0.9 -> 3.7-4.3 s:
both processes copy the pages of the shared heap they write, and the table's chunks are ~100 MB
each way). The chunk's sentence memo (above) was removed: with it calc --json took 3.85-4.01 s,
without it 3.93-4.04 s.

2026-12-05 02:20-03:00 UTC, the same AMD machine (reference 0.44 s, load ~1): lr.to_frame and
calc --csv read and compute a CSV file's rows after 55 % of its lines in a process forked before
reading (halves.py; the same frame and bytes, tests/test_halves.py).  lr.to_frame of 100,000 rows
5.8-6.0 -> 4.0-4.5 s wall alone (user 5.4-5.8 s, system 1.2-1.5 s), 4.6-5.6 s in this script and
alone when the machine's page faults were slow (system 1.7-3.2 s); calc --csv 5.5-7.3 s (its
figures in bench_csv.py); lr.compute + documents on 20 rows 37 against 54-56 ms row by row.  The
second half's table comes back pickled through a temporary file (through multiprocessing's pipe,
~300 MB took 7 s: its reader allocates per read; mapped as pickle's out-of-band buffers instead of
loaded: 4.0-4.4 against 4.1-4.5 s, not kept).  Then calc --json went through the same halves
(workers.in_turn, every second chunk of 1,024 rows in a forked process, removed): 10,000 rows
3.6-3.7 s against 3.8 s, the same bytes; an XLSX file or mappings now run in one process.  At
03:30 UTC, main at 60aafed, this script twice: calc --json 3.6, 3.7 s; lr.to_frame 5.1, 5.1 s
(CPU 8.0 s; alone 3.9-5.3 s, user 5.4-5.7 s, system 1.2-2.5 s: the machine's page faults);
calc --csv 5.8, 5.5 s.  At 03:45-03:55 the mapped spill again (a shorter form), run in turn with
pickle.load, 4 pairs twice: 4.74-5.04 against 4.82-5.53 s while the machine's faults were slow
(system 2.0-2.5 s), 3.93-4.27 against 3.89-4.44 s while they were not (system 1.2-1.4 s); not
kept (14 lines for ~0.3 s on a slow-fault machine only).

2026-12-05 04:18 and 05:20 UTC, the same machine (reference 0.43-0.44 s, load ~1): calc --json 3.6,
3.8 s; lr.to_frame 3.9, 6.0 s in this script (CPU 6.7, 9.0 s: the machine's page faults) and
4.3-4.6 s alone; calc --csv 5.6 s, then 5.5 s once ``cli.py`` froze the process's objects at exit
(the interpreter's shutdown 0.15-0.26 -> 0.06 s); lr.compute + documents on 20 rows 39 against
53-56 ms row by row.  calc --csv's target is not met (bench_csv.py says where its time goes).

2026-12-05 06:25-06:35 UTC, main with calc --csv's numbers through orjson and the split at 52 %
(reference 0.44 s, load ~1), this script three times: calc --json 3.6, 3.4, 3.6 s; lr.to_frame 4.7,
4.0, 4.0 s; calc --csv 5.9, 4.9, 6.0 s (CPU 10.5, 9.3, 10.4 s: the user time is steady, the system
time is not; bench_csv.py); lr.compute + documents on 20 rows 43, 37, 38 ms against 89, 53, 54 ms
row by row.

lr.to_frame of 100,000 rows was ~7.5 s of CPU (reading 3.7 s, the table 3.3-3.7 s) and calc
--csv's figures are bench/bench_csv.py's; the earlier rounds' figures are in this file's history
(git log -p bench/bench_calc.py).
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


def machine_line() -> str:
    """The machine, for comparing figures taken on different ones: its CPU model, the load, and
    the CPU seconds of a fixed pure-Python workload (dicts, str and repr of floats; best of 3;
    0.44 s on the machine of 2026-12-04 16:40 UTC, an AMD EPYC at 2.6 GHz)."""

    def work() -> float:
        t0 = time.process_time()
        d = {i: repr(i / 7) for i in range(1_000_000)}
        sorted(d.values(), key=len)
        return time.process_time() - t0

    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    model = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), "?")
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    reference = min(work() for _ in range(3))
    return f"machine: {model}, {os.cpu_count()} CPUs, load {load}; reference {reference:.2f} s"


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
            t0 = time.process_time()
            fn()
            times.append(time.process_time() - t0)
        return min(times)

    from ledger_report.render.document import config_document

    many = best(lambda: [config_document(lg) for lg in lr.compute(configs)])
    one = best(lambda: [config_document(compute(c)) for c in configs])
    print(
        f"lr.compute + documents, {n} rows: {many * 1e3:.0f} ms; compute() row by row: "
        f"{one * 1e3:.0f} ms ({one / many:.1f}x)"
    )


def _json_phases(path: Path) -> None:
    """``calc --json``'s work on the rows in this process, each phase's CPU seconds the least of
    three: the arrays interpreter and the rows' values, the documents (the sentences with them), the
    JSON text."""
    from ledger_report import api
    from ledger_report.engine import compute_many
    from ledger_report.render.document import _COMPACT, config_document
    from ledger_report.render.workers import no_cyclic_gc

    spent: dict[str, list[float]] = {"arrays": [], "documents": [], "json": []}
    with no_cyclic_gc():
        configs = api.read(path)
        for _ in range(3):
            t0 = time.process_time()
            ledgers = list(compute_many(configs))
            t1 = time.process_time()
            docs = [config_document(lg) for lg in ledgers]
            t2 = time.process_time()
            [_COMPACT(d) for d in docs]
            for phase, t in zip(spent, (t1 - t0, t2 - t1, time.process_time() - t2)):
                spent[phase].append(t)
            del ledgers, docs
    print(f"calc --json in process, {len(configs):,} rows (CPU s, least of 3): ", end="")
    print(", ".join(f"{phase} {min(t):.2f}" for phase, t in spent.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json-rows", type=int, default=10_000)
    ap.add_argument("--table-rows", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=20)
    a = ap.parse_args()
    print(machine_line())
    # written beside the examples, so a row naming a config.json by relative path finds it
    with tempfile.TemporaryDirectory(dir=ROOT / "inputs") as tmp:
        folder = Path(tmp)
        (folder / "configs").symlink_to(ROOT / "inputs" / "configs")
        json_src, table_src = folder / "json.csv", folder / "table.csv"
        write_csv(json_src, varied_rows(a.json_rows))
        write_csv(table_src, varied_rows(a.table_rows))
        # the fresh processes first, before this process has touched ~1 GB of its own
        calc = ["-m", "ledger_report", "calc"]
        run_timed("calc --json", [*calc, str(json_src), "--json"], a.json_rows)
        run_timed("lr.to_frame", ["-c", TO_FRAME, str(table_src)], a.table_rows)
        run_timed("calc --csv", [*calc, str(table_src), "--csv"], a.table_rows)
        _small(a.small, folder)
        _json_phases(json_src)


if __name__ == "__main__":
    main()
