"""The build's orchestration (render/workers.py): the workbook written in a forked process beside
the JSON and the handout, its errors raised in the caller, and no process of it left behind when
the caller stops on an error of its own."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import zipfile
from io import BytesIO
from pathlib import Path

import pytest

import ledger_report as lr
from ledger_report import api
from ledger_report.errors import InputError, LedgerError, Problem
from ledger_report.render.workers import JOBS_ENV, Beside, can_fork, in_turn

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "inputs" / "examples.csv"

needs_fork = pytest.mark.skipif(not can_fork(), reason="forking is not safe here")


def _ledgers(n: int) -> list:
    """The example's first ``n`` rows, computed."""
    return lr.compute(lr.read(EXAMPLE)[:n])


def _pid_and(x: int) -> tuple[int, int]:
    return os.getpid(), x * 2


def _fails() -> None:
    raise ValueError("the figure is wrong (on purpose)")


def _refuses_odd(x: int) -> int:
    if x % 2:
        raise InputError(Problem("jobs.csv", x + 1, "mfu", "a fraction of 1", str(x)))
    return x


def _dies_on_odd(x: int) -> int:
    if x % 2:
        os._exit(3)  # as a process killed outright: nothing sent
    return x


def _fails_on_five(x: int) -> tuple[int, int]:
    if x == 5:
        raise ValueError("five (on purpose)")
    return _pid_and(x)


@needs_fork
def test_beside_runs_in_another_process_and_gives_its_value():
    """side_by_side: the function runs in a forked process (its pid is not ours) and its value
    comes back (2 x 21 = 42, by hand); without side_by_side, here, when the value is asked for."""
    pid, value = Beside("test", _pid_and, 21, side_by_side=True).result()
    assert pid != os.getpid() and value == 42
    assert Beside("test", _pid_and, 21, side_by_side=False).result() == (os.getpid(), 42)


@needs_fork
def test_beside_raises_the_childs_error_in_the_caller():
    """An exception in the forked process is raised by result(), with its own type and message."""
    work = Beside("test", _fails, side_by_side=True)
    with pytest.raises(ValueError, match="on purpose"):
        work.result()
    assert multiprocessing.active_children() == []


@needs_fork
def test_failed_json_leaves_no_workbook_process(monkeypatch, tmp_path):
    """The JSON (or the handout) fails while the workbook is written beside it: outputs() raises
    that error, and the workbook's process is gone (before, a failed handout left it running: it
    held its bytes in a pipe nobody read)."""
    import ledger_report.render.document as document

    def broken(*a, **k):
        raise LedgerError("the JSON could not be written (simulated)")

    monkeypatch.setattr(document, "json_bytes", broken)
    with pytest.raises(LedgerError, match="simulated"):
        api.outputs(_ledgers(1), "x", tmp_path, ("xlsx", "json"), jobs=2)
    assert multiprocessing.active_children() == []


@pytest.mark.slow
@needs_fork
def test_workbook_beside_the_json_is_the_workbook_written_here(tmp_path):
    """xlsx and json with two jobs: the workbook comes from a forked process, byte for byte the one
    written in this process (jobs=1), and the JSON is written too."""
    ledgers = _ledgers(2)
    two = api.outputs(ledgers, "x", tmp_path, ("xlsx", "json"), jobs=2)
    one = api.outputs(ledgers, "x", tmp_path, ("xlsx", "json"), jobs=1)
    assert list(two) == [tmp_path / "x.json", tmp_path / "x.xlsx"]
    assert two == one
    assert "xl/workbook.xml" in zipfile.ZipFile(BytesIO(two[tmp_path / "x.xlsx"])).namelist()


@needs_fork
def test_in_turn_runs_every_second_item_in_a_worker_in_order(monkeypatch):
    """in_turn gives map's results in map's order (2 x each item, by hand), the odd positions
    made in one other process; with LEDGER_REPORT_JOBS=1 all made here."""
    monkeypatch.setenv(JOBS_ENV, "2")
    got = list(in_turn(_pid_and, range(7)))
    assert [v for _, v in got] == [0, 2, 4, 6, 8, 10, 12]
    assert [p == os.getpid() for p, _ in got] == [True, False] * 3 + [True]
    assert len({p for p, _ in got[1::2]}) == 1
    monkeypatch.setenv(JOBS_ENV, "1")
    assert list(in_turn(_pid_and, range(3))) == [
        (os.getpid(), 0),
        (os.getpid(), 2),
        (os.getpid(), 4),
    ]


@needs_fork
def test_in_turn_raises_the_workers_error_and_leaves_the_rest_unread(monkeypatch):
    """Item 5 (the worker's) raises: the caller gets its error after the results of 0-4, the
    items left to read are 6 and 7, and no worker process is left."""
    monkeypatch.setenv(JOBS_ENV, "2")
    items = iter(range(8))
    got = []
    with pytest.raises(ValueError, match="five"):
        for _, v in in_turn(_fails_on_five, items):
            got.append(v)
    assert got == [0, 2, 4, 6, 8] and list(items) == [6, 7]
    assert multiprocessing.active_children() == []


@needs_fork
def test_an_input_error_from_the_worker_keeps_its_problems(monkeypatch):
    """Item 1, the worker's, is refused: the caller gets an InputError whose problems are the
    worker's Problem (file, row 2, column, expected, found: as made above), not its message's
    characters (an exception pickles its message alone unless it says otherwise)."""
    monkeypatch.setenv(JOBS_ENV, "2")
    with pytest.raises(InputError) as err:
        list(in_turn(_refuses_odd, range(4)))
    assert err.value.problems == [Problem("jobs.csv", 2, "mfu", "a fraction of 1", "1")]
    assert str(err.value) == 'jobs.csv, row 2, column "mfu": expected a fraction of 1; found 1'


@needs_fork
def test_a_worker_that_dies_is_named_with_its_exit_code(monkeypatch):
    """The worker exits with status 3 before sending item 1: one error naming the process and
    that status, and no process left."""
    monkeypatch.setenv(JOBS_ENV, "2")
    with pytest.raises(RuntimeError, match=r"every second item stopped \(exit code 3\)"):
        list(in_turn(_dies_on_odd, range(4)))
    assert multiprocessing.active_children() == []


@needs_fork
def test_calc_json_over_two_processes_is_the_bytes_of_one(tmp_path):
    """calc --json of 1,113 rows (the example's 21, 53 times over, renamed: two chunks of 1,024)
    prints the same bytes with LEDGER_REPORT_JOBS=2 (the second chunk made in a forked process)
    as with 1 (all in this one), and as many configurations as rows."""
    import csv
    import json

    from click.testing import CliRunner

    from ledger_report.cli import main

    with EXAMPLE.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    shutil.copytree(ROOT / "inputs" / "configs", tmp_path / "configs")  # a row's config.json
    path = tmp_path / "many.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows({**r, "name": f"{r['name']} #{k}"} for k in range(53) for r in rows)
    out = {
        jobs: CliRunner().invoke(main, ["calc", str(path), "--json"], env={JOBS_ENV: jobs})
        for jobs in ("1", "2")
    }
    assert out["1"].exit_code == 0 and out["2"].exit_code == 0
    assert out["2"].stdout_bytes == out["1"].stdout_bytes
    assert len(json.loads(out["2"].stdout)["configs"]) == 21 * 53
