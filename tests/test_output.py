"""The one output writer: all-or-nothing, no temp files left, never over an input, plain-write modes;
and reproducible workbook bytes written through it."""

from __future__ import annotations

import datetime
import errno
import hashlib
import io
import os
import stat
import sys
import time
import zipfile
from pathlib import Path

import pytest

from ledger_report.errors import LedgerError, OutputError
from ledger_report.render import output
from ledger_report.render.output import write_outputs

OLD_XLSX = b"PK old workbook bytes \x00\x01"
OLD_PDF = b"%PDF-1.7 old handout"
OLD_JSON = b'{"schema": "ledger-report/1", "configs": []}\n'


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _tmp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith(".tmp"))


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def earlier_run(tmp_path):
    """A folder holding a good earlier report (xlsx, pdf, json) and the input it was built from."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "plan.xlsx").write_bytes(OLD_XLSX)
    (out / "plan.pdf").write_bytes(OLD_PDF)
    (out / "plan.json").write_bytes(OLD_JSON)
    source = tmp_path / "plan.csv"
    source.write_bytes(b"name,gpu\nrun-a,H100-SXM\n")
    return out, source


def _new_files(out: Path) -> dict[Path, bytes]:
    return {
        out / "plan.xlsx": b"PK new workbook",
        out / "plan.pdf": b"%PDF-1.7 new handout",
        out / "plan.json": b'{"schema": "ledger-report/1", "configs": [{}]}\n',
    }


def test_writes_every_file_and_creates_folders(tmp_path):
    """A good run writes each file's exact bytes, creating missing parent folders, and returns the paths in order."""
    files = {tmp_path / "a" / "b" / "r.xlsx": b"x" * 10_000, tmp_path / "r.json": b"{}\n"}
    written = write_outputs(files, inputs=())
    assert written == list(files)
    for path, data in files.items():
        assert path.read_bytes() == data
    assert _tmp_files(tmp_path) == []


def test_failure_writing_second_file_leaves_earlier_files_identical(earlier_run, monkeypatch):
    """Disk full (ENOSPC) while syncing the 2nd temp file: all three earlier files byte-identical, no .tmp left (reliability.md OUT-01, OUT-09)."""
    out, source = earlier_run
    before = _snapshot(out)
    real_fsync = os.fsync
    calls = []

    def failing_fsync(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    monkeypatch.setattr(output.os, "fsync", failing_fsync)
    with pytest.raises(OutputError) as info:
        write_outputs(_new_files(out), inputs=[source])
    message = str(info.value)
    assert message == f"Cannot write {out / 'plan.pdf'}: no space left on device."
    assert "\n" not in message
    assert _snapshot(out) == before
    assert _tmp_files(out) == []


def test_failure_replacing_second_file_rolls_back_the_first(earlier_run, monkeypatch):
    """os.replace fails on the 2nd file after the 1st was already swapped in: the 1st is put back, so no mixed old/new set (reliability.md OUT-02)."""
    out, source = earlier_run
    before = _snapshot(out)
    real_replace = os.replace
    calls = []

    def failing_replace(src, dst):
        calls.append(Path(dst).name)
        if len(calls) == 2:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real_replace(src, dst)

    monkeypatch.setattr(output.os, "replace", failing_replace)
    with pytest.raises(OutputError, match=r"^Cannot replace .*plan\.pdf: permission denied\.$"):
        write_outputs(_new_files(out), inputs=[source])
    assert calls[:2] == [
        "plan.xlsx",
        "plan.pdf",
    ]  # the first really was replaced before the failure
    assert _snapshot(out) == before
    assert _tmp_files(out) == []
    assert sorted(p.name for p in out.iterdir()) == ["plan.json", "plan.pdf", "plan.xlsx"]


def test_failure_removes_files_that_did_not_exist_before(tmp_path, monkeypatch):
    """When a run that would create new files fails at the 2nd replace, the 1st new file and the new folder are gone again."""
    real_replace = os.replace
    calls = []

    def failing_replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_replace(src, dst)

    monkeypatch.setattr(output.os, "replace", failing_replace)
    with pytest.raises(OutputError, match="input/output error"):
        write_outputs(
            {tmp_path / "new" / "a.xlsx": b"a", tmp_path / "new" / "a.pdf": b"b"}, inputs=()
        )
    assert list(tmp_path.iterdir()) == []


def test_non_os_error_propagates_and_cleans_up(earlier_run, monkeypatch):
    """A bug (not an OSError) mid-write is re-raised as itself, and still leaves no temp and the old files intact."""
    out, _ = earlier_run
    before = _snapshot(out)
    real_chmod = os.chmod
    calls = []

    def buggy_chmod(path, mode):
        calls.append(path)
        if len(calls) == 3:
            raise RuntimeError("renderer bug")
        return real_chmod(path, mode)

    monkeypatch.setattr(output.os, "chmod", buggy_chmod)
    with pytest.raises(RuntimeError, match="renderer bug"):
        write_outputs(_new_files(out), inputs=())
    assert _snapshot(out) == before
    assert _tmp_files(out) == []


def _same_path(source: Path) -> Path:
    return source


def _dot_slash(source: Path) -> Path:
    return Path(".") / source.name


def _dotdot(source: Path) -> Path:
    return source.parent / "out" / ".." / source.name


def _symlink(source: Path) -> Path:
    link = source.parent / "out" / "link.csv"
    link.symlink_to(source)
    return link


def _hard_link(source: Path) -> Path:
    link = source.parent / "out" / "hard.csv"
    os.link(source, link)
    return link


@pytest.mark.parametrize(
    "spell",
    [_same_path, _dot_slash, _dotdot, _symlink, _hard_link],
    ids=["same-path", "dot-slash", "dotdot", "symlink", "hard-link"],
)
def test_refuses_to_overwrite_the_input(earlier_run, spell, monkeypatch):
    """The input reached as the same path, ./name, a/../name, a symlink or a hard link is refused before anything is written (reliability.md OUT-03)."""
    out, source = earlier_run
    monkeypatch.chdir(source.parent)
    target = spell(source)
    before = _snapshot(out)
    input_bytes = source.read_bytes()
    files = {out / "plan.json": b"new", target: b"would destroy the input"}
    with pytest.raises(
        OutputError,
        match=r"^Refusing to write .*: it is the input file .*plan\.csv; choose another output folder\.$",
    ):
        write_outputs(files, inputs=[source])
    assert source.read_bytes() == input_bytes
    assert _snapshot(out) == before  # not even the harmless first file was written
    assert _tmp_files(source.parent) == []


def test_refuses_a_folder_and_duplicate_targets(tmp_path):
    """An existing folder as target, or one file named twice, is refused with one sentence, nothing written."""
    (tmp_path / "report.xlsx").mkdir()
    with pytest.raises(OutputError, match=r"a folder of that name exists\.$"):
        write_outputs({tmp_path / "report.xlsx": b"x"}, inputs=())
    with pytest.raises(OutputError, match=r"they are the same file\.$"):
        write_outputs(
            {tmp_path / "r.pdf": b"1", tmp_path / "sub" / ".." / "r.pdf": b"2"}, inputs=()
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.xlsx"]


def test_unwritable_folder_is_one_sentence(tmp_path):
    """A parent that is a file gives an OutputError (a LedgerError, exit 1 at the CLI) naming the path and reason."""
    (tmp_path / "blocker").write_bytes(b"")
    with pytest.raises(OutputError) as info:
        write_outputs({tmp_path / "blocker" / "r.xlsx": b"x"}, inputs=())
    assert isinstance(info.value, LedgerError)
    text = str(info.value)
    assert text.startswith(f"Cannot create the folder for {tmp_path / 'blocker' / 'r.xlsx'}: ")
    assert text.endswith(".") and "\n" not in text
    assert "not a directory" in text or "file exists" in text


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_new_file_mode_is_0644_under_umask_022(tmp_path, umask_022):
    """A new file gets 0o666 & ~umask = 0644 as a plain open() would, not mkstemp's 0600 (reliability.md OUT-07)."""
    plain = tmp_path / "plain.bin"
    plain.write_bytes(b"x")
    [path] = write_outputs({tmp_path / "r.xlsx": b"x"}, inputs=())
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 == stat.S_IMODE(plain.stat().st_mode)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_existing_file_keeps_its_mode(tmp_path, umask_022):
    """Replacing a file the user made 0600 (or 0664) keeps that mode, as writing into it would."""
    private = tmp_path / "private.json"
    private.write_bytes(b"old")
    private.chmod(0o600)
    shared = tmp_path / "shared.pdf"
    shared.write_bytes(b"old")
    shared.chmod(0o664)
    write_outputs({private: b"new", shared: b"new"}, inputs=())
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert stat.S_IMODE(shared.stat().st_mode) == 0o664
    assert private.read_bytes() == shared.read_bytes() == b"new"


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_symlinked_output_is_written_through(tmp_path):
    """An output path that is a symlink (not to an input) updates the file it points at, as a plain write would."""
    real = tmp_path / "archive" / "r.pdf"
    real.parent.mkdir()
    real.write_bytes(b"old")
    link = tmp_path / "r.pdf"
    link.symlink_to(real)
    write_outputs({link: b"new"}, inputs=())
    assert link.is_symlink() and real.read_bytes() == b"new"


# --------------------------------------------------------------------------------------------
# Reproducible workbook bytes through the writer


@pytest.mark.slow
def test_workbook_bytes_reproducible_then_write_outputs(tmp_path):
    """Two template builds 1.1 s apart are the same bytes (no wall clock in docProps/core.xml or in
    the zip entries; reliability.md DET-01), and the atomic writer puts them down byte-for-byte."""
    openpyxl = pytest.importorskip("openpyxl")
    from ledger_report.render.workbook import template_xlsx

    first = template_xlsx()
    time.sleep(1.1)
    second = template_xlsx()
    assert hashlib.sha256(first).digest() == hashlib.sha256(second).digest()
    with zipfile.ZipFile(io.BytesIO(first)) as z:
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in z.infolist())
    [path] = write_outputs({tmp_path / "template.xlsx": first}, inputs=())
    assert path.read_bytes() == first and zipfile.is_zipfile(path)
    wb = openpyxl.load_workbook(path)
    assert wb.properties.created == wb.properties.modified == datetime.datetime(2000, 1, 1)
