"""The arrays interpreter gives what the scalar interpreter gives: ``compute_many`` (rows of a
chunk together, or per pattern of empty columns) against ``compute`` (one row at a time), on the
shipped examples, varied generated rows (bench/example_rows.py) and odd but valid cells; and
``calc --json`` is, line for line, ``json.dumps`` of each scalar ledger's document."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import example_rows  # noqa: E402

from ledger_report.config import COLUMN_NAMES  # noqa: E402
from ledger_report.engine import _row_keys, compute, compute_many, python_values  # noqa: E402
from ledger_report.inputs import read_configs  # noqa: E402
from ledger_report.model.masked import evaluate_masked, masked_arrays, per_pattern  # noqa: E402
from ledger_report.render.document import config_document, json_lines, write_lines  # noqa: E402
from ledger_report.report import DEFAULT  # noqa: E402

GENERATED = 150


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    """The examples, then generated rows (written beside a configs link, for the config.json row)."""
    folder = tmp_path_factory.mktemp("rows")
    (folder / "configs").symlink_to(ROOT / "inputs" / "configs")
    example_rows.write_csv(folder / "rows.csv", example_rows.varied_rows(GENERATED, seed=3))
    return read_configs(ROOT / "inputs" / "examples.csv") + read_configs(folder / "rows.csv")


def test_generated_rows_are_valid_and_distinct(tmp_path):
    """1,000 generated rows: the reader takes every one, and no two give the same values."""
    (tmp_path / "configs").symlink_to(ROOT / "inputs" / "configs")
    n = example_rows.write_csv(tmp_path / "rows.csv", example_rows.varied_rows(1000))
    got = read_configs(tmp_path / "rows.csv")
    assert n == len(got) == 1000
    assert len({tuple((k, v) for k, v in c.values.items() if k != "name") for c in got}) == 1000
    patterns = {frozenset(k for k, v in c.values.items() if v is not None) for c in got}
    assert len(patterns) > 100  # rows differ in which columns they leave empty, too


def test_example_rows_csv_has_the_examples_header():
    with (ROOT / "inputs" / "examples.csv").open(encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert list(example_rows.examples()[0]) == header


def _same(a, b) -> bool:
    """Equal, and of one type, but for a whole number below 10^15 held as int on one side and float
    on the other (model/masked.py: every output writes them alike)."""
    if type(a) is type(b):
        return a == b or (isinstance(a, float) and a != a and b != b)
    if {type(a), type(b)} == {int, float}:
        return float(a) == float(b) and float(a).is_integer() and abs(a) < 1e15
    return False


@pytest.mark.slow
def test_rows_together_equal_rows_per_pattern(configs):
    """Every quantity of every row: evaluated with the rows together (the masked path) as evaluated
    per pattern of empty columns; the masked path is taken, not refused."""
    reg = DEFAULT.registry
    text = set(_row_keys(reg))
    n = len(configs)
    rows = [c.values for c in configs]
    cols, blanks = masked_arrays(np, {name: [r[name] for r in rows] for name in COLUMN_NAMES})
    env = evaluate_masked(reg, cols, blanks, DEFAULT.tables)
    assert env is not None
    parts = per_pattern(np, reg, DEFAULT.tables, rows)
    assert len(parts) > 50
    bad = []
    for apart, idx in parts:
        for k, v in env.items():
            if k in text:
                continue
            unit = reg[k].unit
            together = python_values(np, v, n, unit) or [None] * n
            each = python_values(np, apart[k], len(idx), unit) or [None] * len(idx)
            bad += [
                (k, configs[i].name) for j, i in enumerate(idx) if not _same(together[i], each[j])
            ]
    assert not bad, bad[:10]


def _documents(ledgers) -> list[str]:
    return [
        json.dumps(config_document(lg), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        for lg in ledgers
    ]


def _calc_json_lines(configs) -> list[str]:
    out = io.BytesIO()
    write_lines(compute_many(configs, rows=64, make=json_lines), out)
    text = out.getvalue().decode("utf-8")
    head, tail = '{\n  "schema": "ledger-report/1",\n  "configs": [\n', "\n  ]\n}\n"
    assert text.startswith(head) and text.endswith(tail)
    assert json.loads(text)["configs"][0]["name"] == configs[0].name
    return text[len(head) : -len(tail)].split(",\n")


@pytest.mark.slow
def test_calc_json_is_each_scalar_ledgers_document(configs):
    """calc --json's lines (rows over arrays, 64 a chunk) are json.dumps of config_document of
    each row's ledger from the scalar interpreter, byte for byte."""
    lines = _calc_json_lines(configs)
    expected = _documents(compute(c) for c in configs)
    assert len(lines) == len(expected) == len(configs)
    bad = [i for i, (a, b) in enumerate(zip(lines, expected)) if a != b]
    assert not bad, (len(bad), configs[bad[0]].name)


def test_counted_quantities_are_ints_both_ways(configs):
    """Bytes, parameters, counts and tokens that are whole numbers are Python ints from
    compute_many as from compute (the arrays hold them as float64)."""
    reg = DEFAULT.registry
    keys = ["params_total", "state_bytes_per_rank", "peak_bytes_per_rank", "steps"]
    many = list(compute_many(configs[:21]))
    whole = 0
    for lg, c in zip(many, configs[:21]):
        one = compute(c)
        for k in keys:
            assert reg[k].unit in ("bytes", "params", "count")
            a, b = lg[k], one[k]
            if isinstance(b, (int, float)) and float(b).is_integer():
                assert type(a) is int and type(b) is int and a == b, (lg.name, k)
                whole += 1
            elif b is None:
                assert a is None, (lg.name, k)
            else:  # a fraction of a byte on the rank (a state sharded unevenly): float both ways
                assert type(a) is type(b) and a == pytest.approx(b, rel=1e-12), (lg.name, k)
    assert whole > 50
    # Qwen3-8B, the first example: 8,190,735,360 parameters (Qwen's model card: 8.2 B)
    assert many[0]["params_total"] == 8_190_735_360


EDGES = [
    {"reserve_days": "-0"},
    {"tokens": "9999999999999999"},
    {"mfu": "40%"},
    {"price_per_gpu_hour": "0"},
    {"measured_peak_gb": "0.001"},
    {"measured_peak_gb": "1e3"},
    {"tokens": "1"},
    {"days": "0.0001", "reserve_days": "0"},
    {"mfu": "1e-6"},  # the smallest the reader takes
    {"tokens": "10000000000000000"},
    {"price_per_gpu_hour": "123456789.123456789"},
    {"notes": 'quote " backslash \\ tab\there % percent 中文 \u2028 sep'},
    {"name": '名字-%s-"q"'},
    {"framework": "MEGATRON"},
    {"global_batch": "", "micro_batch": ""},
    {"mfu": "", "tokens": "", "days": ""},
]


@pytest.mark.slow
def test_edge_values_give_each_scalar_ledgers_document(tmp_path):
    """Odd but valid cells (a negative zero, the largest counts, percent signs, quotes, backslashes
    and Chinese in text): calc --json's lines are the scalar ledgers' documents byte for byte."""
    rows = []
    for i, edit in enumerate(EDGES * 2):
        r = dict(example_rows.examples()[i % 21], **edit)
        r["name"] = edit["name"] % i if "name" in edit else f"{r['name']}-edge-{i}"
        rows.append(r)
    (tmp_path / "configs").symlink_to(ROOT / "inputs" / "configs")
    example_rows.write_csv(tmp_path / "edge.csv", iter(rows))
    configs = read_configs(tmp_path / "edge.csv")
    lines = _calc_json_lines(configs)
    scalar = _documents(compute(c) for c in configs)
    # tokens past 2^53: the arrays multiply float64s, the scalar rule Python's exact ints, so the
    # FLOPs may differ in the last bit (5.2658190336e+26 against 5.2658190335999994e+26)
    big = [i for i, c in enumerate(configs) if (c.values["tokens"] or 0) > 2**53]
    assert len(big) == 4
    assert [x for i, x in enumerate(lines) if i not in big] == [
        x for i, x in enumerate(scalar) if i not in big
    ]
    for i in big:
        a, b = json.loads(lines[i])["compute"], json.loads(scalar[i])["compute"]
        assert a["total_flops"] == pytest.approx(b["total_flops"], rel=1e-15)
    assert '"reserve_days":-0.0' in lines[0]


CELLS = [
    "0",
    "007",
    "42",
    "1234567890123456",
    "12345678901234567",
    "10000000000000000",
    "0.1",
    "3.14159",
    "2.5",
    "0.551",
    "1.0000000000000002",
    "99999999999999.99",
    "1e3",
    "7B",
    "35b",
    "1,024",
    "40%",
    "50",
    "0.4",
    "１２",
    "1.5",
    "5.",
    ".5",
    " 8 ",
    "-3",
    "+4",
    "nan",
    "abc",
]


@pytest.mark.parametrize(
    "column", ["tokens", "dp", "layers", "mfu", "days", "price_per_gpu_hour", "hbm_gb"]
)
def test_plain_digit_cells_read_as_the_decimal_path_reads_them(column, monkeypatch):
    """Each cell through the fast paths and the reader's memo gives the value (type and all) or
    the problem that the Decimal path gives."""
    import re

    from ledger_report.config import COLUMN_BY_NAME
    from ledger_report.inputs import cells, tables

    col = COLUMN_BY_NAME[column]

    def read(text):
        try:
            v = cells.convert(col, text)
            return type(v), v
        except cells.Bad as exc:
            return "bad", exc.expected, exc.found

    fast = [read(t) for t in CELLS]
    memo = [tables.KNOWN[column][t] for t in CELLS] * 2  # the second time remembered
    monkeypatch.setattr(cells, "_PLAIN_WHOLE", re.compile(r"(?!)"))
    monkeypatch.setattr(cells, "_PLAIN_FLOAT", re.compile(r"(?!)"))
    slow = [read(t) for t in CELLS]
    assert fast == slow
    remembered = [("bad", v.expected, v.found) if isinstance(v, cells.Bad) else v for v in memo]
    assert remembered == [r if r[0] == "bad" else r[1] for r in slow] * 2


def test_a_bad_cell_is_reported_on_every_row_it_is_on(tmp_path):
    """The memo keeps only cells read without a problem: the same bad text on two rows is two problems."""
    from ledger_report.errors import InputError

    path = tmp_path / "bad.csv"
    path.write_text("name,params_total,dp\na,7B,x4\nb,7B,x4\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_configs(path)
    assert [(p.row, p.column) for p in err.value.problems] == [(2, "dp"), (3, "dp")]


def test_smallest_divisor_from_remembered_divisors_equals_the_search():
    """MINDIV through the remembered divisors gives what the plain search over i ≤ √n gives."""
    import math
    import random

    from ledger_report.model.evaluate import approx_value, smallest_divisor_at_least

    def search(n, at_least, step):
        n, step = int(round(n)), max(int(round(step)), 1)
        if n < 1:
            return None
        lo = max(int(math.ceil(approx_value(float(at_least)))), 1)
        found = [
            d
            for i in range(1, math.isqrt(n) + 1)
            if n % i == 0
            for d in (i, n // i)
            if d >= lo and d % step == 0
        ]
        return min(found) if found else None

    rng = random.Random(5)
    for _ in range(3000):
        n = rng.choice([rng.randint(0, 5000), rng.randint(1, 10**6), 15360, 384, 36, 1])
        args = (n, rng.uniform(-3, n + 3), rng.choice([1, 2, 3, 4, 8, rng.randint(1, 50), 0.6]))
        assert smallest_divisor_at_least(*args) == search(*args), args


def test_number_comparisons_over_arrays_equal_the_scalar_rule():
    """Each comparison over arrays (against a scalar either side, a zero, or another array) gives
    on every row what ``compare`` gives, the scalar rule that follows LibreOffice's approxEqual
    (sal/rtl/math.cxx: equal within 2^-48 relative, distinct integers never): values a few ulps
    apart, 2^-47..2^-50 apart, integers, zeros, infinities and NaN."""
    from ledger_report.model.evaluate import _approx_compare, compare

    base = [0.0, -0.0, 3.0, 3525888.0, 2.0**41 + 0.5, 2.0**53, 1 / 3, -2.5, 5e-324, 1e300]
    vals = [float("inf"), float("-inf"), float("nan")]
    for v in base:
        vals += [v, *(v * (1 + k * 2.0**-50) for k in (-8, -4, -1, 1, 2, 4, 9)), v + 1e-13]
    vals += [float(np.nextafter(v, np.inf)) for v in base]
    a = np.array(vals)
    with np.errstate(all="ignore"):
        for op in ("=", "<>", "<", "<=", ">", ">="):
            for x in vals:
                assert list(_approx_compare(np, op, a, x)) == [compare(op, y, x) for y in vals]
                assert list(_approx_compare(np, op, x, a)) == [compare(op, x, y) for y in vals]
            b = a[::-1].copy()
            assert list(_approx_compare(np, op, a, b)) == list(map(compare, [op] * len(a), a, b))


def test_smallest_divisor_over_arrays_equals_the_scalar_rule():
    """MINDIV over arrays (each distinct n and step searched once for all its rows) gives on every
    row what the scalar rule gives, blanks (no divisor, n below 1, a non-finite argument) included."""
    import random

    from ledger_report.model.evaluate import _mindiv_array, smallest_divisor_at_least

    rng = random.Random(7)
    ns = [
        rng.choice(
            [rng.randint(-3, 5000), 15360, 384, 36, 1, 0, 2.5, 96.4999, float("nan"), float("inf")]
        )
        for _ in range(4000)
    ]
    los = [
        rng.choice([rng.uniform(-3, 400), 3.0000000000000004, 8, 0, float("nan"), 1e300])
        for _ in ns
    ]
    steps = [rng.choice([1, 2, 3, 4, 8, 0.6, 0, -2, rng.randint(1, 50)]) for _ in ns]
    vals, none = _mindiv_array(np, [np.array(ns), np.array(los), np.array(steps)])
    scalar = [
        smallest_divisor_at_least(*a) if all(map(np.isfinite, a)) else None
        for a in zip(ns, los, steps)
    ]
    got = [None if b else v for v, b in zip(vals.tolist(), none.tolist())]
    assert got == scalar
    assert sum(v is None for v in scalar) > 100 and len(set(scalar)) > 50
    v, b = _mindiv_array(np, [384.0, np.array([5.0, 500.0]), 4.0])  # a scalar beside an array
    assert v.tolist()[0] == 8 and b.tolist() == [False, True]


def _masked_by_the_loop(vals):
    """A column as ``masked_arrays`` once made it a row at a time (the reference)."""
    blank = [v is None or v == "" for v in vals]
    given = [v for v, b in zip(vals, blank) if not b]
    kind = {
        str if isinstance(v, str) else bool if isinstance(v, bool) else float for v in given
    }.pop()
    filled = [given[0] if b else v for v, b in zip(vals, blank)]
    return np.array(
        filled, dtype=str if kind is str else bool if kind is bool else float
    ), np.array(blank)


@pytest.mark.parametrize(
    "vals",
    [
        (None, 2, 3.5, None, 2**60),
        (1.0, 2.0),
        ("a", None, "", "bcd"),
        ("x",),
        (True, None, False),
        (None, float("nan"), 1.0),
        ("\x00", "a", None),
        (None, "a\x00", "b"),
        (float("inf"), None, -0.0),
    ],
)
def test_masked_columns_of_one_kind_as_the_loop_made_them(vals):
    """A column of numbers, texts or truth values (blanks among them) comes out as the row-by-row
    loop made it: the same values, dtype and blank mask; a column numpy would not hold as given (a
    NaN given, a text of one NUL that it reads as empty) is refused (``None``: the caller
    evaluates per pattern)."""
    got = masked_arrays(np, {"c": vals})
    if "\x00" in vals or any(v != v for v in vals if isinstance(v, float)):
        assert got is None
        return
    cols, blanks = got
    want, blank = _masked_by_the_loop(vals)

    assert cols["c"].dtype == want.dtype and np.array_equal(
        cols["c"], want, equal_nan=want.dtype.kind == "f"
    )
    assert np.array_equal(blanks.get("c", np.zeros(len(vals), dtype=bool)), blank)


@pytest.mark.slow
def test_the_sweep_table_over_arrays_is_each_ledgers_plain_values(configs):
    """lr.to_frame of the rows (plain values made over arrays, a chunk at a time: engine.table)
    equals the table made from each row's ledger value by value (engine.plain), blanks, fractions
    of a byte rounded up and whole counts included; and the counts are integer columns."""
    import pandas as pd

    import ledger_report as lr

    over_arrays = lr.to_frame(configs)
    from_ledgers = lr.to_frame(list(compute_many(configs, rows=64)))
    pd.testing.assert_frame_equal(over_arrays, from_ledgers)
    assert over_arrays["state_bytes_per_rank"].dtype.kind == "i"
    assert over_arrays.isna().any().any()  # some rows leave figures blank (no tokens, say)


@pytest.mark.parametrize("distinct", [1, 3, 8, 9, 40])
def test_text_codes_give_back_every_row(distinct):
    """text_codes (the arrays interpreter's distinct texts, by comparison while there are at most
    FEW_TEXTS, else by a sort) numbers each row so that its distinct texts taken by the codes are
    the rows again, each distinct text listed once; the texts are made by hand here (upper and
    lower case apart, an empty text among them)."""
    from ledger_report.model.evaluate import text_codes

    pool = ["", "H100", "h100", "bf16"] + [f"t{i}" for i in range(distinct)]
    rows = np.array([pool[(7 * i) % distinct] for i in range(50)])
    codes, texts = text_codes(np, rows)
    assert sorted(texts) == sorted(set(rows.tolist()))
    assert np.array(texts, dtype=object)[codes].tolist() == rows.tolist()


def test_nodes_alike_but_for_a_constant_evaluate_apart():
    """Over arrays, nodes of the same structure are evaluated once an evaluation; constants that
    compare equal but differ in type or sign (1, 1.0 and True; 0.0 and -0.0) keep their nodes
    apart, so each quantity keeps its own type, and a division by zero its own sign."""
    from ledger_report.model.evaluate import evaluate_arrays
    from ledger_report.model.expr import Col, IsBlank, if_
    from ledger_report.model.registry import COUNT, FLOAT_UNITS, Registry

    reg, ratio = Registry(), sorted(FLOAT_UNITS)[0]
    x = reg.define("x", Col("dp"), COUNT, "x", "x")
    for name, one in (("int", 1), ("float", 1.0), ("bool", True)):
        reg.define(f"{name}_rows", if_(x.gt(2), one, 0), COUNT, name, name)
        reg.define(f"{name}_all", if_(IsBlank(Col("tp")), one, 0), COUNT, name, name)
    reg.define("up", 1 / (x * 0.0), ratio, "up", "up")
    reg.define("down", 1 / (x * -0.0), ratio, "down", "down")
    with np.errstate(divide="ignore"):
        env = evaluate_arrays(reg, {"dp": np.array([1.0, 3.0])}, {})
    assert [env[f"{n}_rows"].dtype.kind for n in ("int", "float", "bool")] == ["i", "f", "i"]
    assert [type(env[f"{n}_all"]) for n in ("int", "float", "bool")] == [int, float, bool]
    assert list(env["up"]) == [np.inf] * 2 and list(env["down"]) == [-np.inf] * 2
