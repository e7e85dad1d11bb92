"""What the reader says about a row (#26 item 5, the input side): problems in line order, each
blamed on a column the user wrote, no knock-on problems, no internal names; warnings where a
row contradicts its own model or writes a GPU's nominal memory for its usable memory."""

from __future__ import annotations

import re

import pytest
from files import write_csv

from ledger_report.engine import compute
from ledger_report.errors import InputError
from ledger_report.inputs import configs_from_records, read_configs
from ledger_report.model.definitions import REGISTRY
from ledger_report.render.document import warnings


def _problems(rows):
    with pytest.raises(InputError) as err:
        configs_from_records(rows)
    return err.value.problems


def test_problems_are_listed_in_line_order(tmp_path):
    """A rule broken on line 2 (tp = 3 does not divide heads = 32), a bad cell on line 3, a rule
    on line 4: listed 2, 3, 4, though cells are read before the rules are checked."""
    path = write_csv(
        tmp_path,
        "name,layers,hidden,heads,ffn_hidden,vocab,tp,dp\n"
        "a,32,4096,32,14336,128256,3,1\n"
        "b,32,4096,32,14336,128256,1,x\n"
        "c,32,4096,32,14336,128256,3,1\n",
    )
    with pytest.raises(InputError) as err:
        read_configs(path)
    rows = [p.row for p in err.value.problems]
    assert rows == sorted(rows) and rows[0] == 2 and 3 in rows and rows[-1] == 4


def test_an_ep_that_does_not_divide_the_models_experts_is_blamed_on_ep():
    """Qwen3-30B-A3B has 128 routed experts (its config.json: num_experts = 128); ep = 6 does not
    divide them.  The user wrote ep, not experts: the problem names ep, and says where the 128
    came from."""
    (problem,) = _problems([{"name": "a", "model": "Qwen3-30B-A3B", "ep": 6, "dp": 6}])
    assert problem.column == "ep"
    assert "experts = 128" in problem.found and "model Qwen3-30B-A3B" in problem.found


def test_an_experts_the_user_wrote_is_still_blamed_on_experts():
    (problem,) = _problems(
        [{"name": "a", "params_total": "30B", "experts": 128, "topk": 8, "ep": 6, "dp": 6}]
    )
    assert problem.column == "experts"


def test_a_bad_model_is_one_problem_not_a_knock_on_params_total_one():
    """A model name the catalogue does not hold: the architecture it would fill is unknown, so
    'params_total or the architecture' is not asked again."""
    problems = _problems([{"name": "a", "model": "Llama-9-1B", "dp": 2}])
    assert [p.column for p in problems] == ["model"]


def test_messages_carry_no_internal_names():
    """Rows breaking many rules: no rule key (ep_divides, ...), no ok_/message_ quantity in any
    line a user reads."""
    keys = {c.key for c in REGISTRY.constraints} | {c.ok for c in REGISTRY.constraints}
    columns = {c.column for c in REGISTRY.constraints}
    internal = {k for k in keys if k not in columns and "_" in k}
    rows = [
        {"name": "a", "model": "Qwen3-30B-A3B", "ep": 6, "dp": 6},
        {"name": "b", "params_total": "7B", "experts": 8},
        {
            "name": "c",
            "layers": 32,
            "hidden": 4096,
            "heads": 32,
            "ffn_hidden": 1,
            "vocab": 9,
            "tp": 3,
        },
        {"name": "d", "params_total": "7B", "kv_lora_rank": 512},
        {"name": "e", "params_total": "7B", "gpu": "MyGPU"},
    ]
    with pytest.raises(InputError) as err:
        configs_from_records(rows)
    text = str(err.value)
    assert len(err.value.problems) >= 5
    found = [k for k in internal if re.search(rf"\b{re.escape(k)}\b", text)]
    assert found == [] and "ok_" not in text and "message_" not in text


def test_a_column_that_contradicts_the_rows_model_is_a_warning():
    """Llama-3.1-8B has 32 layers (meta-llama/Llama-3.1-8B config.json: num_hidden_layers = 32).
    A row naming it with 80 layers (a model changed, the architecture left from a 70B row) is
    read with the row's 80, and warned of, with the rule, in the document's warnings."""
    (config,) = configs_from_records(
        [{"name": "a", "model": "Llama-3.1-8B", "num_layers": 80, "dp": 8}]
    )
    assert config.values["layers"] == 80
    (warning,) = [w for w in warnings(compute(config)) if "Llama-3.1-8B" in w]
    assert warning.startswith("num_layers (layers): expected 32, as model Llama-3.1-8B has it")
    assert "found 80" in warning
    (same,) = configs_from_records([{"name": "a", "model": "Llama-3.1-8B", "layers": 32}])
    assert same.warnings == ()


def test_the_terminal_report_says_the_contradiction_too(tmp_path):
    """The same row through `calc`: the warning, with its rule, is printed in the row's report
    (not only in the JSON), so a reader of the terminal sees the 80 layers against the model's 32."""
    from click.testing import CliRunner

    from ledger_report.cli import main

    path = tmp_path / "rows.csv"
    path.write_text("name,model,num_layers,dp\na,Llama-3.1-8B,80,8\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["calc", str(path)])
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.output.splitlines() if "Llama-3.1-8B" in ln and "expected" in ln)
    assert line.startswith("warning: num_layers (layers): expected 32") and "found 80" in line


def test_hbm_gb_80_on_an_h100_warns_of_the_usable_84_94_gb():
    """An "80 GB" H100 has 80 GiB of HBM, of which CUDA reports 79.11 GiB = 84.94 GB usable (the
    catalogue's figure and its source).  hbm_gb = 80 is the nominal figure in GiB written as GB:
    a warning naming the usable figure; 84.94 or an unknown GPU's own figure are not."""

    def said(**row):
        config = configs_from_records([{"name": "a", "params_total": "7B", **row}])[0]
        return [w for w in warnings(compute(config)) if w.startswith("hbm_gb")]

    (warning,) = said(gpu="H100-SXM", hbm_gb=80)
    assert "84.94 GB" in warning and "hbm_gb = 80 GB" in warning
    assert said(gpu="H100-SXM", hbm_gb=84.94) == []
    assert said(gpu="H100-SXM", hbm_gb=60) == []  # a deliberate cap, far from the GiB figure
    assert said(gpu="MyGPU", hbm_gb=80, peak_tflops=500) == []


def test_a_problem_found_after_reading_names_its_place_as_the_reader_does():
    """The engine and the planner find some problems after the reader (a figure that overflows, a
    search too large) and know the row only by its source ("x.csv line 4", "my runs.xlsx Inputs
    row 4"): their messages put the file, the row and the column apart with commas, as the
    reader's own problems do; a source with no row number (rows from Python) stays whole."""
    from ledger_report.errors import row_problem

    csv_row = row_problem("jobs.csv line 4", "days", "a finite figure", "inf")
    assert str(csv_row) == 'jobs.csv, line 4, column "days": expected a finite figure; found inf'
    xlsx_row = row_problem("my runs.xlsx Inputs row 7", None, "a smaller search", "9 candidates")
    assert (
        str(xlsx_row) == "my runs.xlsx Inputs, row 7: expected a smaller search; found 9 candidates"
    )
    assert (
        str(row_problem("mapping", "dp", "x", "y")) == 'mapping, column "dp": expected x; found y'
    )


def test_a_very_long_cell_is_not_read_back_in_full(tmp_path):
    """A 5,000-character gpu cell (no GPU of the catalogue) is refused on its line and column; the
    message prints the first part of what was found and its length, not 5,000 characters (the
    Problem keeps it whole for a caller that wants it)."""
    long = "X" * 5000
    with pytest.raises(InputError) as exc:
        read_configs(write_csv(tmp_path, f"name,params_total,gpu\nm,7B,{long}\n"))
    [p] = exc.value.problems
    assert long in p.found
    text = str(exc.value)
    assert 'line 2, column "gpu"' in text
    assert len(text) < 1000 and f"({len(p.found):,} characters)" in text
