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
from ledger_report.errors import LedgerError
from ledger_report.render.workers import JOBS_ENV, Beside, can_fork

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
def test_calc_json_over_two_processes_is_the_bytes_of_one(tmp_path):
    """calc --json of 2,100 rows (the example's 21, 100 times over, renamed: more than two chunks
    of 1,024) prints the same bytes with LEDGER_REPORT_JOBS=2 (the rows after 52 % of the lines
    made in a forked process, halves.py) as with 1 (all in this one), and as many configurations
    as rows."""
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
        w.writerows({**r, "name": f"{r['name']} #{k}"} for k in range(100) for r in rows)
    out = {
        jobs: CliRunner().invoke(main, ["calc", str(path), "--json"], env={JOBS_ENV: jobs})
        for jobs in ("1", "2")
    }
    assert out["1"].exit_code == 0 and out["2"].exit_code == 0
    assert out["2"].stdout_bytes == out["1"].stdout_bytes
    assert len(json.loads(out["2"].stdout)["configs"]) == 21 * 100
