"""A sweep on two cores (ledger_report/halves.py): a CSV file's rows after its middle line read and
worked through by a forked process.  The reference for every figure here is the file read and
computed in one process (``LEDGER_REPORT_JOBS=1``), which the rest of the suite ties to the
scalar engine: the table, the CSV lines and every refusal must be the same, byte for byte."""

from __future__ import annotations

import csv
import errno
import io
import multiprocessing
import os
import tempfile

import pytest
from test_api import EXAMPLE

from ledger_report import api, halves
from ledger_report.engine import NotFiniteError
from ledger_report.errors import InputError, OutputError, Problem

SPLIT_ROWS = 2  # api.CHUNK_ROWS in these tests: a file of more than 4 lines is split


def _rows(n: int) -> list[dict[str, str]]:
    """``n`` rows: the shipped examples in turn, each renamed, with its notes a sentence holding
    commas and a line break (so records and physical lines differ), and a layout value varied."""
    with open(EXAMPLE, newline="", encoding="utf-8") as fh:
        examples = list(csv.DictReader(fh))
    out = []
    for i in range(n):
        row = dict(examples[i % len(examples)])
        row["name"] = f"{row['name']}-{i}"
        row["notes"] = f"row {i}, two lines:\nthe second, quoted"
        out.append(row)
    return out


def _write(path, rows: list[dict[str, str]]) -> None:
    """The rows as a CSV file beside the examples' config.json files (a row names one)."""
    if not (path.parent / "configs").exists():
        (path.parent / "configs").symlink_to(EXAMPLE.parent / "configs")
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


@pytest.fixture
def split_small(monkeypatch):
    """Split files of a few rows (the threshold is two chunks' lines) on two workers."""
    monkeypatch.setattr(api, "CHUNK_ROWS", SPLIT_ROWS)
    monkeypatch.setenv("LEDGER_REPORT_JOBS", "2")


def _one_reading(monkeypatch, fn):
    monkeypatch.setenv("LEDGER_REPORT_JOBS", "1")
    try:
        return fn()
    finally:
        monkeypatch.setenv("LEDGER_REPORT_JOBS", "2")


def _error(fn) -> str:
    with pytest.raises(InputError) as info:
        fn()
    return str(info.value)


def test_the_halves_are_read_in_two_processes_and_cover_every_row(tmp_path, split_small):
    """The second half is worked in another process, and the two halves hold every row once, in
    the file's order (a record whose quoted notes run over the middle line is the first half's)."""
    path = tmp_path / "rows.csv"
    _write(path, _rows(10))  # 1 + 10 × 2 lines: line 10, 52 % of them, begins a two-line record
    assert halves.split(path, SPLIT_ROWS) == 10

    def work(configs, _tick, spill):
        names = " ".join(c.name for c in configs)
        if spill is None:
            return os.getpid(), names
        spill.write(f"{os.getpid()} {names}".encode())

    with api._sweep(path, work) as ((pid, first), rest):
        second_pid, second = rest.read().decode().split(" ", 1)
    assert pid == os.getpid() != int(second_pid)
    names = [r["name"] for r in _rows(10)]
    assert first.split() + second.split() == names
    assert first.split() == names[:5]  # lines 2-10 begin rows 0-4; row 4 runs on to line 11


def test_to_frame_in_halves_is_the_one_reading_table(tmp_path, split_small, monkeypatch):
    path = tmp_path / "rows.csv"
    _write(path, _rows(23))
    halved = api.to_frame(path)
    whole = _one_reading(monkeypatch, lambda: api.to_frame(path))
    assert halved.shape == (23, whole.shape[1]) and halved.equals(whole)
    assert (halved.dtypes == whole.dtypes).all()


def test_calc_csv_in_halves_is_the_one_reading_bytes(tmp_path, split_small, monkeypatch):
    path = tmp_path / "rows.csv"
    _write(path, _rows(23))
    told = []
    halved = io.BytesIO()
    api.write_csv(path, halved, lambda done, total: told.append((done, total)))
    whole = io.BytesIO()
    _one_reading(monkeypatch, lambda: api.write_csv(path, whole))
    assert halved.getvalue() == whole.getvalue()
    assert halved.getvalue().count(b"\r\n") == 1 + 23  # the header and a line a row
    assert told[-1] == (23, 23)


def test_progress_counts_the_first_halfs_rows_for_both_halves(tmp_path, split_small):
    """The halves go side by side at about one pace, so after k of the first half's m rows the
    progress is told k·n/m of all n rows, and n at its last; the second half tells nothing."""
    path = tmp_path / "rows.csv"
    _write(path, _rows(23))
    told = []

    def work(configs, tick, spill):
        for _ in configs:
            tick(1)
        return len(configs)

    with api._sweep(path, work, lambda done, total: told.append((done, total))) as (m, _rest):
        assert 1 < m < 23
    assert told == [(k * 23 // m, 23) for k in range(1, m + 1)]
    assert told[-1] == (23, 23)


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda rows: rows[15].update(name=rows[2]["name"]), id="a name in both"),
        pytest.param(lambda rows: rows[15].update(tp="two"), id="a bad cell in the second half"),
        pytest.param(lambda rows: rows[3].update(dp="0"), id="a bad cell in the first half"),
    ],
)
def test_a_problem_in_either_half_is_the_one_reading_refusal(
    tmp_path, split_small, monkeypatch, spoil
):
    rows = _rows(23)
    spoil(rows)
    path = tmp_path / "rows.csv"
    _write(path, rows)
    halved = _error(lambda: api.to_frame(path))
    assert halved == _one_reading(monkeypatch, lambda: _error(lambda: api.to_frame(path)))
    assert halved.startswith("rows.csv, line ")


def test_the_rows_both_halves_refuse_are_named_in_one_refusal(tmp_path, split_small):
    """Each half's refusal (here a work that refuses its first row) is kept: one refusal naming
    the first half's row, then the second half's, as one reading names them in order."""
    path = tmp_path / "rows.csv"
    _write(path, _rows(10))

    def work(configs, _tick, _spill):
        raise NotFiniteError([Problem("rows.csv", 0, "mfu", "a finite figure", configs[0].name)])

    with pytest.raises(NotFiniteError) as info:
        with api._sweep(path, work):
            pass
    names = [r["name"] for r in _rows(10)]
    assert [p.found for p in info.value.problems] == [names[0], names[5]]


@pytest.mark.parametrize("in_memory", [True, False])
def test_no_temporary_folder_means_one_process_where_no_file_is_held_in_memory(
    tmp_path, split_small, monkeypatch, in_memory
):
    """With the temporary folder missing, the second half's output is still held in a file in
    memory where the system has them (Linux's memfd_create): two processes, the same rows.  Where
    it has none, no file can be made, and the sweep is one reading in this process."""
    if in_memory and not hasattr(os, "memfd_create"):
        pytest.skip("no memfd_create on this system")
    if not in_memory:
        monkeypatch.delattr(os, "memfd_create", raising=False)
    path = tmp_path / "rows.csv"
    _write(path, _rows(9))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))

    def work(configs, _tick, spill):
        if spill is None:
            return os.getpid(), len(configs), spill
        spill.write(f"{len(configs)}".encode())

    with api._sweep(path, work) as ((pid, rows, spill), rest):
        split = (rows, int(rest.read())) if in_memory else (rows, rest)
    assert (pid, spill, split) == (os.getpid(), None, (4, 5) if in_memory else (9, None))


def test_a_second_half_that_dies_is_named_with_its_exit_code(tmp_path, split_small):
    """The forked half exits with status 3 before it is done: one error naming that process and
    the status, and no process left."""
    path = tmp_path / "rows.csv"
    _write(path, _rows(9))

    def work(configs, _tick, spill):
        if spill is not None:
            os._exit(3)  # as a process killed outright: nothing sent

    with pytest.raises(RuntimeError, match=r"second half of the rows stopped \(exit code 3\)"):
        with api._sweep(path, work):
            pass
    assert multiprocessing.active_children() == []


def test_a_full_temporary_folder_names_tmpdir_and_the_room_a_row_takes(tmp_path, split_small):
    """The second half's spill meets a full memory or disk (ENOSPC, as write(2) reports it): an
    OutputError that names the temporary folder (where no file in memory can be had), the room a
    row takes and the way to one process, not an internal error."""
    path = tmp_path / "rows.csv"
    _write(path, _rows(9))

    def work(configs, _tick, spill):
        if spill is not None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OutputError) as err:
        with api._sweep(path, work):
            pass
    message = str(err.value)
    assert tempfile.gettempdir() in message and os.strerror(errno.ENOSPC) in message
    assert f"up to {halves.SPILL_KB_PER_ROW} kB a row" in message
    assert "LEDGER_REPORT_JOBS=1" in message
    assert multiprocessing.active_children() == []


def test_the_docs_state_the_split_the_code_makes():
    """docs/tables.md and the README give the size that splits a file, the share this process
    reads and the room the spill takes: the figures halves.split, api.CHUNK_ROWS and the
    spill's refusal use, not copies that could drift."""
    tables = (EXAMPLE.parents[1] / "docs" / "tables.md").read_text(encoding="utf-8")
    readme = (EXAMPLE.parents[1] / "README.md").read_text(encoding="utf-8")
    assert f"more than {2 * api.CHUNK_ROWS:,} lines" in tables
    for text in (tables, readme):
        assert f"after {halves.SHARE_PERCENT} % of its" in " ".join(text.split())
        assert f"up to {halves.SPILL_KB_PER_ROW} kB a row" in " ".join(text.split())
