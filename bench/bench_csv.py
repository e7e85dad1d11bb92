"""Speed of ``calc --csv``: the sweep table's making and the writing of its lines, apart.

    .venv/bin/python bench/bench_csv.py [--rows 100000] [--reference]

Target (issue "A codebase in proportion", on a 2-core machine): 100,000 rows to CSV in <= 5 s, on
bench/example_rows.py's rows (the examples varied row by row, as bench_calc.py's).  Prints, with
the load average (the machines are shared: compare CPU seconds, not wall):

* ``table`` and ``writer`` in one process, a chunk at a time as ``calc --csv`` does it: the table
  (reading the file, then ``engine.table``) and the writer (``sweep.table_lines``
  to /dev/null), each its CPU (``time.process_time``) and wall seconds;
* ``calc --csv`` in a fresh process, stdout to /dev/null: wall, CPU seconds and peak RSS;
* with ``--reference``: the csv module, cell by cell (tests/support/csv_reference.py): CPU, bytes.

Measured 2026-12-03 22:42 UTC at load 6-7, one 16,384-row chunk, best CPU of five: the arrays
interpreter 0.32 s, plain values 0.03 s, the writer 0.70 s (np.unique ~35 %, repr of the distinct
floats ~20 %, laying out and un-padding the bytes ~40 %); on 100,000 rows, reading (~4.5 s)
included, calc --csv is ~10-12 s of CPU: the target is not met.  The writer beside the table gave
no wall time: in a thread it holds the GIL (repr, bytes.translate); in a process forked per chunk
it costs ~20 % more CPU (copy-on-write page faults: 408,000 against 177,000 on 40,000 rows).

Measured 2026-12-04 04:31 UTC at load 3.2: the table (reading 2.1-2.2 s included) 4.72 s of CPU,
the writer 4.32 s, calc --csv 9.0 s of CPU (8.8-10.2 s in runs of bench_calc.py at load 3-4, for
this round's tree and the one before alike): reading and the table came out unchanged this round
(reading: CSV parsing ~0.55 s, the cells ~0.75 s, each row's full dict of 118 columns ~0.8 s, with
its page faults, the Configs ~0.4 s, the constraint checks ~0.6 s).  The target is not met.

Measured 2026-12-04 19:45-20:00 UTC, the AMD EPYC machine (reference 0.50-0.72 s within a minute,
idle): table 4.9 s and writer 4.2 s of CPU; calc --csv 10.5-13.9 s wall.  Tried and not taken: a
pipeline, each chunk's lines written straight to stdout's file descriptor by a process forked for
it while this one makes the next chunk (one writer at a time, the same bytes): 11.2-12.1 against
12.0-13.9 s wall, system time 0.9 -> 3.2-4.5 s (copy-on-write faults in both processes eat the
overlap).  One table chunk for the whole file (to_frame without the join): 7.2-7.6 against
7.0-7.4 s, peak RSS 1.44 -> 1.74 GB.

Measured 2026-12-04 22:45 UTC, the same machine (reference 0.45 s): calc --csv 8.3-9.0 s wall for
the tree as it stands (table 5.1 s and writer 4.4 s of CPU in the bench).  Tried and not taken:
every second chunk's table and lines made in a process forked before reading (workers.in_turn, as
calc --json does it; the worker reads the file itself, so no page of the rows is shared) and sent
back as bytes: 8.8-8.9 s wall, CPU 14 s (user 11.5-12, system 2.5-3.4): the worker's own reading
(~3 s), pickling ~375 MB of lines through the pipe and the page faults of both eat the overlap;
with the reading done once before the fork, 8.8 s.  The same for lr.to_frame (every second chunk's
columns pickled back, 8,192 rows a chunk): 6.7-9.1 s against 7.0-8.3 s, the parent waiting ~2.7 s
in the pipe for the worker, which reads the file too.  Neither target is met.

Measured 2026-12-05 01:26 UTC, the same machine (load ~1.3): calc --csv 8.7 s wall (8.0 s user);
lr.to_frame 5.8-5.9 s wall (4.85 s user, 0.87 s system, 1.48 GB peak), of which the imports
0.33 s, reading 2.36 s, the table 2.39 s (2.17 s of CPU alike at 16,384, 32,768 and 100,000 rows a
chunk: the arrays' arithmetic, not the interpreter's walk), joining the chunks 0.59 s.  Tried and
not taken: the table's chunks in turn in a forked process after the reading (workers.in_turn over
the Configs already read, so nothing is read twice), the arrays pickled back: 6.9-8.0 s wall,
system time 2.5-4.0 s (the pipe and the copy-on-write faults).  Neither target is met.

Measured 2026-12-05 02:20-03:00 UTC, the same machine (reference 0.44 s, load ~1): taken, a CSV
file split at a physical line (halves.py), the rows after it read, computed and written in a
process forked before any reading (the reader's own ``lines``: no page of rows shared, nothing
read twice but the CSV parse the second process skips through), its lines to a temporary file the
first copies after its own.  calc --csv 8.8-9.1 -> 5.5-7.3 s wall (user 8.6-9.2 s, system 1.0-2.8
s), at a split of 55 % of the lines 5.5-5.9 s against 5.5-7.5 s at 50 % (the second process also
writes ~330 MB to the file).  The two processes end within 0.15 s of each other: the first reads
55,000 rows in 1.4 s and makes their table and lines in 3.5 s, the second its 45,000 in 1.3 s and
3.4 s (system time 1.0 s, the file's pages).  The system time is this virtual machine's: a page
it has not touched lately costs ~1 ms a MB (touching 4 GB took 4.5 s of system time, twice in a
row), and the command touches ~2 GB.  The target is not met; what is left is the writer's CPU
(repr of the distinct floats 0.4 s, ints 0.2 s, the padded lines' fill and un-padding 0.8 s per
50,000 rows) and the reading.

Measured 2026-12-05 04:20-04:40 UTC, the same machine (reference 0.43 s, load ~1): calc --csv
5.3-5.9 s wall, 8.6-9.3 s user and 1.0-1.9 s system. Timeline: imports 0.27 s before the fork; the
halves read 55,000 and 45,000 rows in 1.36 and 1.26 s (the second also parses the lines it skips);
then table and lines 3.5 and 3.0-3.4 s; the copy of the spill 0.02 s (0.09 s to a file); the first
process frees its rows and exits in ~0.35 s more. Per 50,000 rows in one process: the reading 1.25 s
(of it the constraint checks ~0.17 s), the table 1.0-1.3 s, the lines 1.8-1.95 s (per 10,000: the
distinct cells 0.19 s, of it the floats 0.11 s, nearly all repr; laying out 0.05 s; filling 0.06 s;
un-padding 0.08 s). Tried, none beyond the scatter of five or six runs each: TABLE_ROWS 4,096 and
8,192 (6.0-6.5 s: more user time), 32,768 and 65,536 (5.3-6.2 s: less user time, more system time,
+160 and +490 MB peak RSS); a split at 52 or 53 % (5.4-5.6 s); pandas imported before the fork (what
the second process saves, the first pays before forking); glibc's malloc thresholds raised through
the environment (~35,000 fewer page faults a process, 0.1 s at most); the padded cells' widths
unrounded or rounded to 8 bytes instead of a power of two (the same time). Float cells: numpy's
``astype("S")`` writes the same digits as ``repr`` (2.1 M values and 100,000 random ones, no
difference) but takes 410 against 260 ns a value; the distinct floats of all the columns together
are 219,000 against 275,000 column by column on 10,000 rows. Integer cells by ``astype("S")``: 0.012
s less per 10,000 rows. Reaching 5 s needs ~1 s less CPU over the two processes (10 %); no single
part left holds that much.

Measured 2026-12-05 06:10-06:50 UTC, the same machine (reference 0.44-0.45 s, load ~1). Taken: the
distinct integers, and floats from 1e-4 up to 1e16, written by orjson from the array (the rest by
repr; the same bytes: 6 M floats and 1 M int64 against repr/str in orjson 3.9-3.13, and the
golden outputs): the writer 4.2-4.4 -> 3.2 s of CPU per 100,000 rows in this script, ~0.55 s of
user time less in each process (8.6-9.2 -> 8.0-8.6 s user for the command); then the split at 52 %
(the second half had been ending 0.36-0.5 s first: five runs each, in process, 4.80-4.97 s at 52 %
against 4.87-5.61 s at 55 %). calc --csv, ten runs in a row: 4.90-5.78 s wall (median 5.5), user
8.1-8.6 s, system 1.0-2.1 s. The system time decides the wall: 1.0 s in the runs under 5.3 s,
1.7-2.1 s in the others. It is the virtual machine's first touch of memory (~418,000 page faults,
the two processes' peaks and the spill): writing the second half's 337 MB to its temporary file took
0.08 s in some runs and 0.7-1.4 s in others, the same write in a loop of its own alike. Tried and
not taken: a chunk's codes as uint16 (the same page faults, more user time); TABLE_ROWS 8,192
(5.2-5.3 s: 0.5 s more user time, 0.4 s less system, -140 MB peak). The target is met in the runs
whose memory comes fast, not in the others.  At 08:00, orjson and pandas imported with the
writer's module, before the fork (the second half had imported them again, ~0.15 s): the second
half's spill measured in six runs in a row, 0.08 s in four (the command 4.52-4.59 s in process)
and 0.65-0.95 s in two (5.0-5.2 s); four pairs with 10 s of idle before each run, against 4f55220:
4.88-5.36 s (user 8.0-8.3 s) against 5.48-6.17 s (user 8.8-9.1 s).

Measured 2026-12-05 08:10-08:40 UTC, the same machine (reference 0.44 s, load ~0.7). Taken: the
second half's output held in a file in memory (memfd_create; halves._spill), not a temporary file
on the disk. The same 360 MB, timed in the second process, four pairs alternated: 0.13-0.15 s to
the memory file, 0.08-0.09 s or 1.1-1.2 s to /tmp (ext4; 1.4-1.7 s in a loop of its own, and
0.13 s to /dev/shm, the same day). calc --csv, six pairs alternated with 10 s of idle before each
run: 4.89-5.10 s wall, five of six under 5 s (user 7.9-8.3 s, system 1.10-1.18 s), against
4.83-6.08 s (system 1.02-2.11 s) before. The peak, counted by a memory cgroup of its own (page
cache and memory files included), 1,577 against 1,585 MB: the temporary file's pages were counted
too. Tried and not taken: a split at 50 % (the second half then ends 0.12-0.23 s after the first,
at 52 % 0.13-0.19 s before: 4.86-5.09 against 4.76-5.20 s in process, three runs each).
At 09:00-09:25, after a CI run: first a spell when the whole machine was slow to give memory
(calc --csv 5.42-6.12 s, system time 1.7-3.0 s; the memory file took 0.77-0.83 s, where a
360 MB memory file in a fresh process took 0.13 s), then four pairs alternated as above:
4.79-5.10 s (system 1.06-1.52 s) against 4.70-5.75 s (0.93-2.11 s) for 9f2ecf3.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))  # example_rows.py: varied valid rows
sys.path.insert(0, str(ROOT / "tests"))  # support.csv_reference: the csv module, cell by cell

from bench_calc import machine_line, run_timed  # noqa: E402
from example_rows import varied_rows, write_csv  # noqa: E402


class _Clock:
    """CPU and wall seconds summed over the spans timed with it."""

    def __init__(self) -> None:
        self.cpu_s = self.wall_s = 0.0

    def __enter__(self) -> None:
        self._cpu, self._wall = time.process_time(), time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.cpu_s += time.process_time() - self._cpu
        self.wall_s += time.perf_counter() - self._wall

    def __str__(self) -> str:
        return f"CPU {self.cpu_s:.2f} s, wall {self.wall_s:.2f} s"


def _apart(path: Path, rows: int, reference: bool) -> None:
    """The table and the writer timed apart over the chunks of ``path``."""
    from ledger_report.api import read
    from ledger_report.engine import table, table_keys
    from ledger_report.render.sweep import table_lines
    from ledger_report.render.workers import no_cyclic_gc

    header = ["name", *table_keys()]
    made, written, old = _Clock(), _Clock(), _Clock()
    same = True
    with open(os.devnull, "wb") as sink, no_cyclic_gc():
        chunks = table(read(path))
        while True:
            with made:
                chunk = next(chunks, None)
            if chunk is None:
                break
            columns = [chunk[name] for name in header]
            blocks = []
            with written:
                for block in table_lines(columns):
                    sink.write(block)
                    blocks.append(block)  # let go of when the chunk is done
            if reference:
                from support.csv_reference import reference_lines

                with old:
                    expected = reference_lines(columns)
                same = same and b"".join(blocks) == expected
    print(f"table, {rows:,} rows x {len(header)} columns: {made}")
    print(f"writer: {written} ({rows * len(header) / written.cpu_s / 1e6:.0f} M cells per CPU s)")
    if reference:
        print(f"reference (csv module, a cell at a time): {old}; same bytes: {same}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--reference", action="store_true", help="time the csv module too (slow)")
    a = ap.parse_args()
    print(machine_line())
    # written beside the examples, so a row naming a config.json by relative path finds it
    with tempfile.TemporaryDirectory(dir=ROOT / "inputs") as tmp:
        folder = Path(tmp)
        (folder / "configs").symlink_to(ROOT / "inputs" / "configs")
        path = folder / "rows.csv"
        write_csv(path, varied_rows(a.rows))
        _apart(path, a.rows, a.reference)
        run_timed("calc --csv", ["-m", "ledger_report", "calc", str(path), "--csv"], a.rows)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
