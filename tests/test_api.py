"""The library face (ledger_report.api, as README shows it): read, compute, to_frame, build, plan."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import ledger_report as lr
from ledger_report.engine import plain
from ledger_report.model.definitions import REGISTRY
from ledger_report.model.registry import BYTES

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "inputs" / "examples.csv"
PLAN_EXAMPLE = ROOT / "inputs" / "plan-examples.csv"


def test_a_mapping_is_checked_as_a_row_of_a_file_is():
    """README: lr.read([...'dp': 'eight']) raises InputError naming row 1 and column dp; the error
    class is the package's own (lr.InputError), a LedgerError like every error the tool reports."""
    with pytest.raises(lr.InputError) as err:
        lr.read([{"name": "x", "params_total": "7B", "dp": "eight"}])
    [p] = err.value.problems
    assert (p.row, p.column) == (1, "dp") and "eight" in str(err.value)
    assert issubclass(lr.InputError, lr.LedgerError)


def test_to_frame_is_one_row_per_configuration_and_per_state_line():
    """lr.to_frame: a column per registry quantity, the engine's values (bytes as ints); the state
    frame's lines sum to the state in HBM of each configuration (docs/scenarios.md: 38.1 GB for
    the 35B MoE with a bf16 gradient buffer)."""
    ledgers = lr.compute(EXAMPLE)
    configs, states = lr.to_frame(ledgers)
    assert list(configs["name"]) == [lg.name for lg in ledgers]
    assert set(REGISTRY.keys()) <= set(configs.columns)
    got = [
        None if pd.isna(x) else x for x in configs["peak_bytes_per_rank"]
    ]  # blank where the peak is unknown
    assert got == [plain(lg["peak_bytes_per_rank"], BYTES) for lg in ledgers] and None in got
    moe = states[(states["name"] == "moe35b-ep8-bf16-buffer") & (states["location"] == "hbm")]
    assert round(moe["bytes_per_rank"].sum() / 1e9, 1) == 38.1


def test_build_writes_what_the_command_writes(tmp_path):
    """lr.build writes the stem's three files; the JSON is the document calc --json prints."""
    from click.testing import CliRunner

    from ledger_report.cli import main

    paths = lr.build(EXAMPLE, out_dir=tmp_path, formats=("json",))
    assert [p.name for p in paths] == ["examples.json"]
    printed = (
        CliRunner().invoke(main, ["calc", str(EXAMPLE), "--json"], catch_exceptions=False).output
    )
    assert json.loads(paths[0].read_text()) == json.loads(printed)


def test_plan_keeps_the_commands_defaults_and_takes_prices():
    """lr.plan keeps at most 5 plans a row, as `ledger-report plan` does by default; prices as a
    mapping limit the search to the GPU types priced (a row that names no GPU)."""
    configs = lr.read(PLAN_EXAMPLE)[:1]
    doc = lr.plan(configs)
    assert callable(lr.plan)  # still the function after the planner's module was imported
    assert 0 < doc["inputs"][0]["plans"] == len(doc["plans"]) <= 5
    priced = lr.plan(configs, top=3, prices={"H100-SXM": 2.0})
    assert priced["plans"] and {p["gpu"] for p in priced["plans"]} == {"H100-SXM"}
