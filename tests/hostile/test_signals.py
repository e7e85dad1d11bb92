"""The red-team pass's signal cases, with real processes and real signals: `build -j 2` killed (SIGKILL)
or stopped (SIGTERM, as `timeout N ledger-report build` does) while its forked workers render the
handout left both workers alive for good (each blocked writing into a pipe whose read end it held
itself); SIGTERM while the outputs were written left `.tmp` files.  Now no process of the run is
left, no temporary file, and the earlier outputs are as they were."""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.procs import alive, children, running_on, wait_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]


def _rows_csv(tmp_path: Path, n: int) -> Path:
    """``n`` rows of inputs/examples.csv (cycled, renamed apart): 8 ≤ n and n + the summary's
    pages ≤ 32 renders the handout in two parts, one worker each (handout.PARALLEL_MIN_CONFIGS,
    _parts); at 24 a part's PDF is larger than a pipe's 64 KiB buffer (pipe(7)), so a worker
    whose result nobody reads blocks."""
    text = (ROOT / "inputs" / "examples.csv").read_text(encoding="utf-8")
    header, *rows = list(csv.reader(io.StringIO(text)))
    at = header.index("name")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for k in range(n):
        row = list(rows[k % len(rows)])
        row[at] = f"{row[at]}-{k}"
        writer.writerow(row)
    path = tmp_path / "many.csv"
    path.write_text(buf.getvalue(), encoding="utf-8")
    if (ROOT / "inputs" / "configs").is_dir():  # config.json files rows may name
        os.symlink(ROOT / "inputs" / "configs", tmp_path / "configs")
    return path


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "ledger_report", *args]


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_workers_end_with_the_build(tmp_path, signum):
    """The build's two handout workers, seen alive, then the build killed or stopped: within
    10 s neither worker is left; SIGTERM exits 128 + 15 with one line and writes nothing."""
    src = _rows_csv(tmp_path, 60)  # two handout parts of ~30 pages: seconds of render each
    out = tmp_path / "out"
    err_file = tmp_path / "stderr.txt"
    with open(err_file, "wb") as err_fh:  # a file, not a pipe: a worker left behind holds a pipe
        proc = subprocess.Popen(
            _cli("build", str(src), "-o", str(out), "-j", "2", "-q"),
            stdout=subprocess.DEVNULL,
            stderr=err_fh,
        )
    workers: set[int] = set()

    def two_workers() -> bool:
        workers.update(children(proc.pid))
        return len(workers) >= 2 or proc.poll() is not None

    try:
        assert wait_for(two_workers, 240) and proc.poll() is None, "the build never forked"
        time.sleep(0.5)  # well inside their render
        assert proc.poll() is None, "the build ended before the signal was sent"
        proc.send_signal(signum)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = [pid for pid in workers if wait_for(lambda p=pid: not alive(p), 10) is False]
    stray = running_on(src)
    for pid in stray:  # leave nothing behind, whatever the outcome
        os.kill(pid, signal.SIGKILL)
    assert left == [] and stray == []
    assert proc.returncode == (-9 if signum == signal.SIGKILL else 128 + 15)
    if signum == signal.SIGTERM:
        assert err_file.read_text().strip() == (
            "Error: stopped by SIGTERM; no output file was written (they are written all"
            " together or not at all), and any output printed is incomplete."
        )
    assert not out.exists() or not [p for p in out.iterdir()]


# A build whose writer pauses once its temp files are written (the point where SIGTERM left them):
# fsync of the temp file made slow, the run otherwise the CLI's own.
_SLOW_WRITER = """
import os, sys, time
import ledger_report.render.output as output
real_fsync, marker = os.fsync, sys.argv[1]
def slow_fsync(fd):
    real_fsync(fd)
    open(marker, "w").close()
    time.sleep(30)
output.os.fsync = slow_fsync
from ledger_report.cli import main
sys.argv = ["ledger-report", *sys.argv[2:]]
main()
"""


def test_sigterm_while_writing_leaves_no_temp_file(tmp_path):
    """SIGTERM once the first output's temp file is written and synced: exit 143, no `.tmp` left,
    the earlier outputs byte-identical (before: the temp files stayed)."""
    src = _rows_csv(tmp_path, 2)
    out = tmp_path / "out"
    out.mkdir()
    earlier = {"many.json": b'{"earlier": true}\n', "many.xlsx": b"PK earlier"}
    for name, data in earlier.items():
        (out / name).write_bytes(data)
    marker = tmp_path / "temp-written"
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_WRITER, str(marker)]
        + ["build", str(src), "-o", str(out), "--format", "xlsx,json", "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_for(marker.exists, 120), proc.communicate(timeout=5)
        assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")]  # the case is real
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + 15, err.decode()
    assert "Traceback" not in err.decode()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == earlier
