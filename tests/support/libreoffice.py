"""LibreOffice headless: a forced full recalculation of a workbook, for the tests and benchmarks.

Moved here from ``ledger_report/render/workbook.py``: the product never runs LibreOffice; the
formula-parity tests (tests/test_workbook.py) and bench/bench_workbook.py do.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["recalculate_with_libreoffice"]

_RECALC_PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode" oor:op="fuse"><value>0</value></prop></item>
</oor:items>
"""


def recalculate_with_libreoffice(
    data: bytes,
    *,
    soffice: str = "soffice",
    timeout: float = 600,
    convert_to: str = "xlsx",
    report: dict | None = None,
) -> bytes:
    """The workbook after LibreOffice headless loaded it with a forced full recalculation (a fresh
    profile whose ``OOXMLRecalcMode`` is 0, "always recalculate") and saved it: as XLSX, with
    ``convert_to="csv"`` the first sheet's raw values as UTF-8 CSV, or with ``convert_to="pdf"``
    printed as the workbook's default print (every sheet's print area) to PDF.

    LibreOffice otherwise trusts cached values (research/ecosystem.md section 2.3).  ``soffice``
    exits 0 even when it fails, so the output file is checked.
    ``report``, if given, receives ``seconds`` (wall clock) and ``max_rss_bytes`` (the largest
    resident set of the LibreOffice processes).
    """
    filters = {
        "xlsx": "xlsx:Calc MS Excel 2007 XML",
        "csv": "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false",
        "pdf": "pdf:calc_pdf_Export",
    }
    with tempfile.TemporaryDirectory(prefix="ledger-lo-") as tmp:
        root = Path(tmp)
        user = root / "profile" / "user"
        user.mkdir(parents=True)
        (user / "registrymodifications.xcu").write_text(_RECALC_PROFILE, encoding="utf-8")
        src = root / "in" / "book.xlsx"
        src.parent.mkdir()
        src.write_bytes(data)
        out = root / "out"
        out.mkdir()
        cmd = [
            soffice,
            f"-env:UserInstallation={(root / 'profile').as_uri()}",
            "--headless",
            "--norestore",
            "--convert-to",
            filters[convert_to],
            "--outdir",
            str(out),
            str(src),
        ]
        start = time.perf_counter()
        with open(root / "log", "wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=_lo_env(root))
            try:
                _pid, status, usage = _wait(proc, timeout)
            except BaseException:
                proc.kill()
                proc.wait()
                raise
        if report is not None:
            report["seconds"] = time.perf_counter() - start
            report["max_rss_bytes"] = usage.ru_maxrss * 1024  # kilobytes on Linux
        result = out / f"book.{convert_to}"
        if not result.exists():
            raise RuntimeError(
                f"LibreOffice produced no output (exit status {os.waitstatus_to_exitcode(status)}): "
                f"{(root / 'log').read_text(errors='replace').strip()}"
            )
        return result.read_bytes()


def _wait(proc, timeout: float):
    """``os.wait4`` on the process (its resource usage includes the processes it waited for),
    with a deadline."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return pid, status, usage
        if time.monotonic() > deadline:
            raise TimeoutError(f"LibreOffice took more than {timeout:g} s")
        time.sleep(0.02)


def _lo_env(root) -> dict[str, str]:
    env = dict(os.environ)
    env["HOME"] = str(root)  # LibreOffice writes .config/.cache under HOME even with -env
    env.pop("DISPLAY", None)
    return env
