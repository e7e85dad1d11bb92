"""The library face (ledger_report.api, as README shows it): read, compute, to_frame, build, plan."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ledger_report as lr
from ledger_report.model.definitions import REGISTRY

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


QWEN3_8B_PARAMS = 8_190_735_360  # docs/scenarios.md, counted from Qwen3-8B's config.json (8.2 B)


def test_to_frame_of_a_path_is_the_sweep_table():
    """lr.to_frame(path): a row per configuration, ``name`` then a column per registry quantity the
    table carries (every one but the sentences), integers as integers. qwen3-8b-zero0 holds all 16
    bytes per parameter on each rank (its note): 16 x 8,190,735,360 = 131,051,765,760 bytes."""
    frame = lr.to_frame(EXAMPLE)
    sentences = {"verdict_memory_reason", "note_mfu", "check_columns", "message_ep_divides"}
    assert len(frame) == 21 and frame.columns[0] == "name"
    assert set(REGISTRY.keys()) - set(frame.columns) >= sentences
    assert {"params_total", "state_bytes_per_rank", "fits", "binding_gate", "cost"} <= set(
        frame.columns
    )
    row = frame.set_index("name").loc["qwen3-8b-zero0"]
    assert row["params_total"] == QWEN3_8B_PARAMS
    assert row["state_bytes_per_rank"] == 16 * QWEN3_8B_PARAMS == 131_051_765_760
    assert (
        frame["params_total"].dtype.kind == "i" and frame["state_bytes_per_rank"].dtype.kind == "i"
    )
    assert frame["fits"].dtype.kind == "b" and frame["days"].dtype.kind == "f"
    assert str(frame["peak_bytes_per_rank"].dtype) in ("int64", "Int64")


@pytest.mark.slow
def test_to_frame_of_ledgers_or_mappings_is_the_same_table():
    """The table is the same whichever way the rows come: a path, its ledgers, a DataFrame of the
    file (pandas reads empty cells as NaN), its records; the state lines sum to the state in HBM
    (docs/scenarios.md: 13.8 + 13.8 + 10.5 = 38.1 GB for the 35B MoE with a bf16 buffer)."""
    from_path = lr.to_frame(EXAMPLE)
    pd.testing.assert_frame_equal(lr.to_frame(lr.compute(EXAMPLE)), from_path)
    rows = pd.read_csv(EXAMPLE)
    assert rows.isna().any().any()  # empty cells are NaN here
    cwd = Path.cwd()
    try:  # a row names configs/qwen3-30b-a3b.json, relative to the folder it is read from
        import os

        os.chdir(EXAMPLE.parent)
        pd.testing.assert_frame_equal(lr.to_frame(rows), from_path)
        pd.testing.assert_frame_equal(lr.to_frame(rows.to_dict("records")), from_path)
    finally:
        os.chdir(cwd)
    states = lr.to_frame(EXAMPLE, states=True)
    moe = states[(states["name"] == "moe35b-ep8-bf16-buffer") & (states["location"] == "hbm")]
    assert round(moe["bytes_per_rank"].sum() / 1e9, 1) == 38.1


@pytest.mark.slow
def test_calc_csv_is_the_table_with_formula_cells_made_safe(tmp_path):
    """calc --csv writes to_frame's table; a text cell starting with = + - @ (a name here) gets a
    leading ' (OWASP, CSV Injection), numbers keep their sign."""
    import io

    from click.testing import CliRunner

    from ledger_report.cli import main

    printed = CliRunner().invoke(main, ["calc", str(EXAMPLE), "--csv"], catch_exceptions=False)
    table = pd.read_csv(io.StringIO(printed.output))
    frame = lr.to_frame(EXAMPLE)
    assert list(table.columns) == list(frame.columns) and len(table) == 21
    assert list(table["state_bytes_per_rank"]) == list(frame["state_bytes_per_rank"])
    assert table["headroom_bytes"].min() < 0  # a configuration that does not fit: a minus sign
    rows = [{"name": n, "params_total": "7B", "dp": 8} for n in ("=1+1", "@sum", "-x", "+y", "ok")]
    out = io.BytesIO()
    lr.api.write_csv(rows, out)
    names = [line.split(",")[0] for line in out.getvalue().decode().splitlines()[1:]]
    assert names == ["'=1+1", "'@sum", "'-x", "'+y", "ok"]


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


@pytest.mark.slow
def test_plan_keeps_the_commands_defaults_and_takes_prices():
    """lr.plan keeps at most 5 plans a row, as `ledger-report plan` does by default; prices as a
    mapping limit the search to the GPU types priced (a row that names no GPU)."""
    configs = lr.read(PLAN_EXAMPLE)[:1]
    doc = lr.plan(configs)
    assert callable(lr.plan)  # still the function after the planner's module was imported
    assert 0 < doc["inputs"][0]["plans"] == len(doc["plans"]) <= 5
    priced = lr.plan(configs, top=3, prices={"H100-SXM": 2.0})
    assert priced["plans"] and {p["gpu"] for p in priced["plans"]} == {"H100-SXM"}


def _documents(ledgers) -> list[dict]:
    from ledger_report.render.document import config_document

    return [config_document(lg) for lg in ledgers]


def test_the_library_takes_what_notebooks_hold():
    """A tuple, a generator, one dict, a DataFrame with empty cells and a [Config, dict] mix give
    the ledgers the same rows give from a file; a Ledger counts as its configuration."""
    records = [
        {"name": "a", "params_total": "7B", "dp": 8, "mfu": None},
        {"name": "b", "params_total": 70e9, "dp": 16, "tp": float("nan"), "zero": 1},
    ]
    want = _documents(lr.compute(records))
    assert _documents(lr.compute(tuple(records))) == want
    assert _documents(lr.compute(r for r in records)) == want
    assert _documents(lr.compute(records[0])) == want[:1]
    frame = pd.DataFrame(records)  # "dp" int64, "tp" all NaN, "mfu" None
    assert _documents(lr.compute(frame)) == want
    mixed = lr.compute([lr.read(records[:1])[0], records[1]])
    assert _documents(mixed) == want
    assert _documents(lr.compute(lr.compute(records))) == want
    # a 7B model on one rank holds 16 bytes a parameter (Adam, bf16 weights and grads, fp32 master)
    assert want[0]["state_bytes_per_rank"] == 16 * 7 * 10**9


def test_empty_cells_and_numpy_scalars_are_what_a_file_gives():
    """None, NaN and pandas' NA are empty cells (the column's default); np.bool_, np.int64 and
    np.float64 are the Python values they hold."""
    plain_row = {"name": "x", "params_total": "8B", "dp": 8, "mfu": 0.4, "compile": True}
    numpy_row = {
        "name": "x",
        "params_total": "8B",
        "dp": np.int64(8),
        "mfu": np.float64(0.4),
        "compile": np.bool_(True),
        "tp": pd.NA,
        "pp": None,
        "zero": float("nan"),
    }
    assert _documents(lr.compute(numpy_row)) == _documents(lr.compute(plain_row))


def test_a_bad_row_in_a_mix_is_named_by_its_place():
    """[Config, dict]: a problem in the dict names row 2 and the column, as a file's row would;
    a name a Config already has is refused too."""
    first = lr.read({"name": "a", "params_total": "7B"})[0]
    with pytest.raises(lr.InputError) as err:
        lr.compute([first, {"name": "b", "params_total": "7B", "dp": "eight"}])
    [p] = err.value.problems
    assert (p.row, p.column) == (2, "dp")
    with pytest.raises(lr.InputError, match="unique"):
        lr.compute([first, {"name": "A", "params_total": "7B"}])
    with pytest.raises(lr.InputError, match="row 2"):
        lr.compute([first, 42])
    frame = pd.DataFrame([{"name": "a", "params_total": "7B"}, {"name": "b", "dp": -2}])
    with pytest.raises(lr.InputError, match="DataFrame") as err:
        lr.compute(frame)
    assert [(p.row, p.column) for p in err.value.problems if p.column == "dp"] == [(2, "dp")]


def test_bad_prices_and_top_are_clear_errors():
    """prices={"H100-SXM": "cheap"} is an InputError naming the GPU; an unknown GPU is named too;
    top=0 is refused as a usage error before any search."""
    row = {
        "name": "p",
        "params_total": "8B",
        "tokens": "1B",
        "days": 30,
        "seq_len": 4096,
        "global_batch": 64,
    }
    with pytest.raises(lr.InputError, match="H100-SXM") as err:
        lr.plan(row, prices={"H100-SXM": "cheap"})
    assert "cheap" in str(err.value)
    with pytest.raises(lr.InputError, match="H999"):
        lr.plan(row, prices={"H999": 2.0})
    with pytest.raises(lr.InputError, match="top"):
        lr.plan(row, top=0)


def test_a_price_mapping_is_bounded_as_a_prices_file_is(tmp_path):
    """A price of 10^13 per GPU-hour is refused the same way whether it comes in a prices file
    (`plan --prices`) or as lr.plan(prices={...}); the mapping once took it (no 10^12 bound)."""
    row = {"name": "p", "params_total": "8B", "tokens": "1B", "days": 30, "seq_len": 4096}
    row["global_batch"] = 64
    path = tmp_path / "prices.csv"
    path.write_text("gpu,price\nH100-SXM,1e13\n", encoding="utf-8")
    with pytest.raises(lr.InputError, match="from 0 to 10\\^12") as from_file:
        lr.plan(row, prices=path)
    with pytest.raises(lr.InputError, match="from 0 to 10\\^12") as from_mapping:
        lr.plan(row, prices={"H100-SXM": 1e13})
    assert from_file.value.problems[0].expected == from_mapping.value.problems[0].expected


@pytest.mark.slow
def test_to_frame_of_a_plan_document_is_its_plans():
    """lr.to_frame(lr.plan(...)): a row per plan with its rank, GPUs, cost and the row's columns;
    the cost is GPU-hours x price (the plan's own figures)."""
    # the layout narrowed (a short search); an empty cell as pandas has it (NaN) is empty
    rows = (
        pd.read_csv(PLAN_EXAMPLE)
        .head(1)
        .assign(tp=1, pp=1, cp=1, micro_batch=1, notes=float("nan"))
    )
    doc = lr.plan(rows, top=2, prices={"H100-SXM": 2.0})
    frame = lr.to_frame(doc)
    assert len(frame) == len(doc["plans"]) == 2
    assert {"rank", "gpus", "cost", "row.dp", "row.tp"} <= set(frame.columns)
    assert list(frame["rank"]) == [p["rank"] for p in doc["plans"]]
    assert frame["cost"].tolist() == pytest.approx((frame["gpu_hours"] * 2.0).tolist())


def test_build_takes_a_dataframe_with_empty_cells(tmp_path):
    """lr.build of a DataFrame whose empty cells are NaN and None (what pandas gives for a sheet
    with blanks) writes the JSON the same rows give as mappings with those cells left out: an
    empty cell is the column's default.  The 7B row on 8 ranks under ZeRO-0 holds 16 bytes a
    parameter on each (Adam; bf16 weights and gradients; fp32 master and moments)."""
    import json

    frame = pd.DataFrame(
        [
            {"name": "a", "params_total": 7e9, "dp": 8, "tp": float("nan"), "mfu": None},
            {"name": "b", "params_total": 7e9, "dp": float("nan"), "tp": 2, "mfu": 0.4},
        ]
    )
    (path,) = lr.build(frame, tmp_path, formats=("json",), stem="frame")
    got = json.loads(path.read_text(encoding="utf-8"))
    plain = [
        {"name": "a", "params_total": 7e9, "dp": 8},
        {"name": "b", "params_total": 7e9, "tp": 2, "mfu": 0.4},
    ]
    (want,) = lr.build(plain, tmp_path / "plain", formats=("json",), stem="frame")
    assert got == json.loads(want.read_text(encoding="utf-8"))
    assert got["configs"][0]["state_bytes_per_rank"] == 16 * 7 * 10**9


@pytest.mark.slow
def test_the_readme_python_block_runs_as_shown(tmp_path, monkeypatch):
    """README "From Python": its code block, run as written from a folder holding the shipped
        inputs/ (a new user's notebook beside a clone), gives what its comments say: the sweep of the
        21 example rows, 4 ledgers from the DataFrame's first 4 rows (the first 4 lines of
        inputs/examples.csv by name), out/ledgers.{xlsx,pdf,json}, and plans for the plan example's one
    row (its input name, qwen3-8b-100b-30d), one row of the plans' frame each."""
    import shutil

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## From Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    shutil.copytree(ROOT / "inputs", tmp_path / "inputs")
    monkeypatch.chdir(tmp_path)
    names = [line.split(",", 1)[0] for line in EXAMPLE.read_text().splitlines()[1:5]]
    scope: dict = {}
    exec(compile(block, "README.md", "exec"), scope)  # noqa: S102 - the README's own code
    assert len(scope["sweep"]) == 21
    assert [lg.name for lg in scope["ledgers"]] == names
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "ledgers.json",
        "ledgers.pdf",
        "ledgers.xlsx",
    ]
    plans = scope["plans"]["plans"]
    assert plans and {p["input"] for p in plans} == set(pd.read_csv(PLAN_EXAMPLE)["name"])
    assert len(lr.to_frame(scope["plans"])) == len(plans)


def test_a_notebook_echo_of_ledgers_is_short_and_names_the_rows():
    """A notebook prints what a cell returns: lr.compute's 21 example ledgers read as their names
    and sources, not as ~1,000 values and the whole model each (1.8 MB before); a Config shows
    the cells its row has; help(Ledger) no longer prints the default Model (107 kB before)."""
    import pydoc

    from ledger_report.engine import Ledger

    ledgers = lr.compute(EXAMPLE)
    echo = repr(ledgers)
    assert len(echo) < 21 * 120 and all(repr(lg.name) in echo for lg in ledgers)
    assert "examples.csv line 2" in repr(ledgers[0])
    config = repr(ledgers[0].config)
    assert "'layers': 36" in config and "'qk_norm': True" in config and "None" not in config
    assert len(pydoc.render_doc(Ledger)) < 10_000


ROW = {"name": "a", "params_total": "7B"}
PLAN_ROW = {"name": "p", "params_total": "8B", "tokens": "1B", "days": 30, "seq_len": 4096}


def _refused(call, argument: str, found: str) -> lr.InputError:
    """``call()`` raises the package's InputError whose message names ``argument`` and shows
    ``found``, the value the caller gave."""
    with pytest.raises(lr.InputError) as err:
        call()
    message = str(err.value)
    assert message.startswith(f"{argument}:") or message.startswith(f"{argument}, "), message
    assert found in message, message
    return err.value


def test_a_stem_is_a_file_name_in_out_dir(tmp_path):
    """lr.build(stem='../../escape') once wrote escape.json two folders above out_dir: the stem
    is a file name (no / or \\, not . or .., not empty), refused with nothing written."""
    out = tmp_path / "a" / "b" / "out"
    for stem in ("../../escape", "sub/x", "sub\\x", ".", "..", "", 7):
        _refused(lambda: lr.build([ROW], out, ["json"], stem=stem), "stem", repr(stem))
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    (path,) = lr.build([ROW], out, ["json"], stem="ok..name")
    assert path == out / "ok..name.json"


def test_formats_are_read_as_build_format_reads_them(tmp_path):
    """formats=['JSON'] once wrote nothing and returned [] (so did ['docx'] and []): formats are
    matched in any case, as `build --format JSON` is, and an unknown one or none is refused
    naming the formats there are."""
    (path,) = lr.build([ROW], tmp_path, ["JSON"])
    assert path == tmp_path / "ledgers.json" and path.is_file()
    assert lr.build([ROW], tmp_path / "s", "Json") == [tmp_path / "s" / "ledgers.json"]
    for bad in (["docx"], [], ["json", "docx"], [None], 5):
        err = _refused(lambda: lr.build([ROW], tmp_path / "x", bad), "formats", repr(bad))
        assert "xlsx, pdf, json" in str(err)
    assert not (tmp_path / "x").exists()


def test_jobs_and_lang_are_refused_before_any_work(tmp_path):
    """jobs=0, -1, '2' or True were taken (the command's -j refuses 0); lang='fr' was taken for
    JSON and failed late with a bare ValueError for a workbook: each is refused up front."""
    for jobs in (0, -1, "2", 1.5, True):
        _refused(lambda: lr.build([ROW], tmp_path, ["json"], jobs=jobs), "jobs", repr(jobs))
    for lang in ("fr", "EN", None):
        for formats in (["json"], ["xlsx"]):
            err = _refused(
                lambda: lr.build([ROW], tmp_path, formats, lang=lang), "lang", repr(lang)
            )
            assert "en, zh" in str(err)
    assert list(tmp_path.iterdir()) == []
    assert lr.build([ROW], tmp_path, ["json"], jobs=np.int64(2)) == [tmp_path / "ledgers.json"]


def test_a_source_of_the_wrong_kind_says_what_a_source_may_be():
    """lr.compute(None), (5), (b'..'), (['a']) and lr.to_frame(None) raised a bare TypeError: an
    InputError names the source, what it takes (a path, a DataFrame, mappings, Configs) and
    what it got."""
    for source in (None, 5, b"..", object()):
        for call in (lr.compute, lr.read, lr.to_frame):
            err = _refused(lambda: call(source), "source", repr(source)[:20])
            assert all(w in str(err) for w in ("path", "DataFrame", "mapping", "Config")), err
    err = _refused(lambda: lr.compute(["a"]), "source", "'a'")
    assert err.problems[0].row == 1


def test_csv_text_given_as_a_path_is_named_as_text_and_cut():
    """lr.compute(open(f).read()) once echoed the whole file as an over-long file name: a str
    that names no file and holds a line break or more than 300 characters is said to look like
    CSV text, shown cut to a line (not the kilobytes given)."""
    text = EXAMPLE.read_text(encoding="utf-8")
    assert len(text) > 5000
    err = _refused(lambda: lr.compute(text), "source", repr(text[:40])[:-1])
    assert "CSV" in str(err) and f"{len(text):,} characters" in str(err)
    assert len(str(err)) < 400
    _refused(lambda: lr.read("name,params_total\na,7B\n"), "source", "'name,params_total")
    _refused(lambda: lr.to_frame("x" * 400), "source", "'xxxx")
    with pytest.raises(lr.InputError, match="nope.csv"):  # a short name is a missing file
        lr.read("nope.csv")


def test_plan_arguments_are_checked_as_the_command_checks_them(tmp_path):
    """top=0, '3' or NaN raised a bare ValueError; prices=[('H100-SXM', 1)] an AttributeError;
    a NaN price was shown as "found None"; max_candidates=-5 was blamed on column global_batch
    and '10' taken as 10.  top is 1 to 1,000 and max_candidates at least 1 (plan --top,
    --max-candidates), prices a mapping of GPU to a finite price: each refused naming it."""
    row = {**PLAN_ROW, "global_batch": 64}
    for top in (0, "3", float("nan"), 1001, True):
        _refused(lambda: lr.plan(row, top=top), "top", repr(top))
    for cap in (-5, 0, "10", 2.5):
        _refused(lambda: lr.plan(row, max_candidates=cap), "max_candidates", repr(cap))
    _refused(lambda: lr.plan(row, prices=[("H100-SXM", 1)]), "prices", "[('H100-SXM', 1)]")
    for price in (float("nan"), np.float64("nan"), float("inf"), -1.0):
        shown = repr(float(price))  # a numpy scalar shown as the number it holds
        err = _refused(lambda: lr.plan(row, prices={"H100-SXM": price}), "prices", shown)
        assert "H100-SXM" in str(err) and "found None" not in str(err)


def test_a_frame_indexed_by_name_and_a_single_row_series_are_rows():
    """Two things a notebook hands over: the examples with ``set_index("name")`` (pandas keeps the
    names in the index, which ``to_dict("records")`` drops: before, every row was refused for an
    empty name) and one row as a Series (``df.iloc[0]``: before, its values were read as rows).
    Both give the ledgers the same rows give as plain columns."""
    frame = pd.read_csv(EXAMPLE).head(3)
    plain = lr.compute(frame)
    by_index = lr.compute(frame.set_index("name"))
    assert [lg.name for lg in by_index] == [lg.name for lg in plain] == list(frame["name"])
    assert [lg["peak_bytes_per_rank"] for lg in by_index] == [
        lg["peak_bytes_per_rank"] for lg in plain
    ]
    [one] = lr.compute(frame.iloc[0])
    assert (
        one.name == frame["name"][0]
        and one["peak_bytes_per_rank"] == plain[0]["peak_bytes_per_rank"]
    )
