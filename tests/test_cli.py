"""The command line: exit codes, messages without tracebacks, help with examples, the JSON document (docs/json.md)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger_report.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "inputs" / "examples.csv"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_calc_json_follows_the_documented_shape():
    """docs/json.md: schema, one entry per row, the required keys and types; the Qwen3-8B state of docs/scenarios.md, 131.1 GB, as an int of bytes."""
    r = run("calc", EXAMPLE, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["schema"] == "ledger-report/1"
    assert len(doc["configs"]) == 21
    c = doc["configs"][0]
    for key in (
        "name",
        "inputs",
        "params",
        "states",
        "state_bytes_per_rank",
        "state_bytes_logical_total",
        "uncounted",
        "activation_bytes_per_rank",
        "logits_bytes_per_rank",
        "peak_bytes_per_rank",
        "hbm_bytes",
        "fits",
        "compute",
        "assumptions",
    ):
        assert key in c
    for key in (
        "flops_per_token",
        "total_flops",
        "tokens_per_step",
        "steps",
        "step_budget_s",
        "required_tokens_per_s",
        "tokens_per_s_per_gpu",
        "days",
        "min_gpus_compute",
        "min_gpus_memory",
        "binding_gate",
        "gpu_hours",
        "cost",
    ):
        assert key in c["compute"]
    assert c["state_bytes_per_rank"] == 16 * 8_190_735_360 and isinstance(
        c["state_bytes_per_rank"], int
    )
    assert set(c["states"][0]) >= {
        "state",
        "part",
        "dtype",
        "bytes_per_param",
        "sharded",
        "shard_group",
        "params_on_rank",
        "bytes_per_rank",
        "location",
    }
    assert all(
        isinstance(s["params_on_rank"], int) and isinstance(s["shard_group"], int)
        for s in c["states"]
    )


def test_calc_json_null_when_not_computable():
    """docs/json.md: a value that cannot be computed (no tokens) is null, never a made-up number (the 5T rows have no job)."""
    doc = json.loads(run("calc", EXAMPLE, "--json").stdout)
    five_t = next(c for c in doc["configs"] if c["name"] == "moe5t-18B")
    assert (
        five_t["compute"]["total_flops"] is None and five_t["compute"]["min_gpus_compute"] is None
    )
    assert five_t["state_bytes_logical_total"] == 90 * 10**12


def test_calc_table_shows_gb_and_gib():
    """The readable table labels both units: the Qwen3-8B state, 131.1 GB = 122.1 GiB."""
    r = run("calc", EXAMPLE)
    assert r.exit_code == 0
    assert "131.1 GB" in r.stdout and "122.1 GiB" in r.stdout
    assert "binding gate: compute" in r.stdout


def test_bad_input_exits_1_naming_row_and_column(tmp_path):
    """Bad input exits 1, names file, row, column, expectation and finding; no traceback."""
    p = tmp_path / "bad.csv"
    p.write_text("name,params_total,dp\nok,7B,2\nbroken,7B,0\n")
    r = CliRunner().invoke(main, ["calc", str(p)])
    assert r.exit_code == 1
    assert "bad.csv" in r.output and "3" in r.output and "dp" in r.output and "0" in r.output
    assert "Traceback" not in r.output


def test_missing_file_exits_1(tmp_path):
    r = CliRunner().invoke(main, ["calc", str(tmp_path / "nope.csv")])
    assert r.exit_code == 1 and "nope.csv" in r.output and "Traceback" not in r.output


def test_wrong_usage_exits_2():
    """Wrong usage is click's own exit status 2."""
    assert CliRunner().invoke(main, ["calc"]).exit_code == 2
    assert CliRunner().invoke(main, ["build", str(EXAMPLE), "--format", "docx"]).exit_code == 2
    zero_jobs = CliRunner().invoke(main, ["build", str(EXAMPLE), "--jobs", "0"])
    assert zero_jobs.exit_code == 2 and "--jobs" in zero_jobs.output
    upper = CliRunner().invoke(main, ["build", str(EXAMPLE), "--format", "JSON,docx"])
    assert upper.exit_code == 2 and "xlsx, pdf, json" in upper.output and "docx" in upper.output


def test_LEDGER_REPORT_JOBS_is_read_only_where_workers_are_forked(tmp_path):
    """LEDGER_REPORT_JOBS=abc once stopped every command, gpus and calc too (they fork nothing),
    and build -j 2 (which says the number): the variable is read where the number of workers is
    needed and not given (a workbook beside another output; calc --json of a CSV file of more
    than two chunks of 1,024 lines, its second half made beside), and a bad one there is still the
    usage error a bad -j is (exit 2, the variable and its value named, nothing written)."""
    many = tmp_path / "many.csv"
    many.write_text("name,params_total\n" + "".join(f"r{i},7B\n" for i in range(2100)))
    for bad in ("abc", "0"):
        env = {"LEDGER_REPORT_JOBS": bad}
        for args in (
            ["gpus"],
            ["models"],
            ["calc", EXAMPLE],
            ["calc", EXAMPLE, "--json"],
            ["template", tmp_path / f"t{bad}.csv"],
            ["build", EXAMPLE, "-o", tmp_path / f"j{bad}", "-j", "2", "--format", "xlsx,json"],
            ["build", EXAMPLE, "-o", tmp_path / f"o{bad}", "--format", "json"],
        ):
            r = CliRunner().invoke(main, [str(a) for a in args], env=env)
            assert r.exit_code == 0, (args, r.output)
        said = "LEDGER_REPORT_JOBS must be a whole number of worker processes, at least 1"
        out = tmp_path / f"x{bad}"
        for args in (
            ["build", EXAMPLE, "-o", out, "--format", "xlsx,json"],
            ["calc", many, "--json"],
        ):
            r = CliRunner().invoke(main, [str(a) for a in args], env=env)
            assert r.exit_code == 2 and "Traceback" not in r.output, (args, r.output)
            assert f"{said}; found {bad!r}" in r.output and r.stdout == ""
        assert not out.exists()


@pytest.mark.parametrize("cmd", ["build", "calc", "template", "gpus", "plan"])
def test_every_command_has_help_with_an_example(cmd):
    """STYLE.md habit 10: -h works and every command's help shows an Example."""
    r = run(cmd, "-h")
    assert r.exit_code == 0 and "Example:" in r.output


def test_gpus_lists_the_catalogue():
    """The catalogue command lists at least the 13 accelerators of the engine issue, with the H100's 989 TFLOP/s."""
    r = run("gpus")
    for name in (
        "H100-SXM",
        "H100-PCIe",
        "H800",
        "H200",
        "H20",
        "A100-80GB",
        "A100-40GB",
        "B200",
        "GB200",
        "MI300X",
        "MI325X",
        "Gaudi3",
        "L40S",
    ):
        assert name in r.stdout
    assert "989" in r.stdout


def test_build_json_only_writes_the_document(tmp_path):
    """build --format json writes DIR/<stem>.json equal to calc --json."""
    r = run("build", EXAMPLE, "-o", tmp_path, "--format", "json")
    assert r.exit_code == 0, r.output
    written = json.loads((tmp_path / "examples.json").read_text())
    assert written == json.loads(run("calc", EXAMPLE, "--json").stdout)


def test_build_refuses_to_overwrite_its_input(tmp_path):
    """Reliability OUT-03: an output that is the input is refused with exit 1 and the input left as it was."""
    p = tmp_path / "x.json"
    src = tmp_path / "x.csv"
    src.write_text(EXAMPLE.read_text())
    shutil.copytree(
        EXAMPLE.parent / "configs", tmp_path / "configs"
    )  # the config.json a row names, beside the copy
    before = src.read_bytes()
    # the JSON output of x.csv is x.json, which is not the input; point the input at the output name instead
    p.write_text(EXAMPLE.read_text())
    r = CliRunner().invoke(main, ["build", str(src), "-o", str(tmp_path), "--format", "json"])
    assert r.exit_code == 0
    link = tmp_path / "examples.json"
    link.symlink_to(src)
    r = CliRunner().invoke(main, ["build", str(link), "-o", str(tmp_path), "--format", "json"])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert src.read_bytes() == before


@pytest.mark.slow
def test_python_dash_m_runs():
    """`python -m ledger_report` is the same program."""
    out = subprocess.run(
        [sys.executable, "-m", "ledger_report", "gpus"], capture_output=True, text=True, check=True
    )
    assert "H20" in out.stdout


def test_an_unexpected_error_is_one_line_not_a_traceback(monkeypatch, tmp_path):
    """No traceback: a bug inside a command prints one 'internal error' line and exits 1."""
    import ledger_report.api as api

    def boom(configs):
        raise ZeroDivisionError("simulated")

    monkeypatch.setattr(api, "compute_many", boom)
    r = CliRunner().invoke(main, ["build", str(EXAMPLE), "-o", str(tmp_path), "--format", "json"])
    assert r.exit_code == 1
    assert (
        "internal error (ZeroDivisionError: simulated)" in r.output and "Traceback" not in r.output
    )
    assert not list(tmp_path.iterdir())


def test_template_keeps_an_existing_file(tmp_path):
    """`template` does not overwrite a filled workbook unless --force (a user's work is never destroyed)."""
    victim = tmp_path / "victim.xlsx"
    victim.write_bytes(b"my filled workbook")
    r = run("template", victim)
    assert r.exit_code == 1 and "exists" in r.output and "--force" in r.output
    assert victim.read_bytes() == b"my filled workbook"
    assert run("template", victim, "--force").exit_code == 0
    assert victim.read_bytes()[:2] == b"PK"


def test_template_csv_is_csv_that_calc_reads(tmp_path):
    """`template x.csv` writes CSV (the header and the example row), which calc accepts; other extensions are refused."""
    out = tmp_path / "x.csv"
    assert run("template", out).exit_code == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("name,notes,")
    assert run("calc", out).exit_code == 0
    bad = run("template", tmp_path / "x.txt")
    assert bad.exit_code == 2 and ".xlsx or .csv" in bad.output


@pytest.mark.slow
def test_plan_pages_keep_the_planners_order(tmp_path):
    """plan -o: the handout's summary lists the plans in the planner's order (cost, the simpler of
    two plans within 1 %), the order of plans.csv and of the printed table, not re-ranked by cost."""
    import csv

    src = ROOT / "inputs" / "plan-examples.csv"
    r = CliRunner().invoke(
        main,
        ["plan", str(src), "--top", "4", "-o", str(tmp_path), "--json", "-q", "-j", "1"],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    names = [row["name"] for row in csv.DictReader(open(tmp_path / "plans.csv", encoding="utf-8"))]
    assert names == [p["row"]["name"] for p in json.loads(r.output)["plans"]] and len(names) >= 2
    doc = json.loads((tmp_path / "plans.json").read_text())
    assert [c["name"] for c in doc["configs"]] == names
    summary = subprocess.run(
        ["pdftotext", "-f", "1", "-l", "1", "-layout", str(tmp_path / "plans.pdf"), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (
        re.findall(r"-(p\d+)\b", summary) == [n.rsplit("-", 1)[1] for n in names]
        and "in the order given" in summary
    )


def test_control_characters_in_a_message_are_shown_as_escapes(tmp_path):
    """A NUL and an escape (ESC [2J clears a terminal) typed into a gpu cell come back in the
    refusal as \\u0000 and \\u001b, never as the raw bytes (before, the NUL reached stderr as is);
    the message keeps its one line per problem."""
    path = tmp_path / "ctl.csv"
    path.write_text("name,params_total,gpu\nx,7B,H1\x0000\x1b[2J\n", encoding="utf-8")
    r = run("calc", path)
    assert r.exit_code == 1
    assert "H1\\u000000\\u001b[2J" in r.output
    assert not any(ord(ch) < 32 and ch != "\n" for ch in r.output)
