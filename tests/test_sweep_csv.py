"""``calc --csv``'s lines (render/sweep.py: each column's distinct cells written once, laid into a
matrix of lines as bytes) are the bytes the csv module writes from Python values a cell at a time
(tests/support/csv_reference.py): a float as Python's ``repr`` (1e+16, 1e-05, -0.0, nan, inf,
5e-324), an int as ``str`` (past 2^53 and past int64 too), true/false, a blank as an empty cell,
text made safe (``output.csv_text``) and quoted where it holds a comma, a quote or a line break,
CRLF line ends.  The figures are Python's own: ``repr``/``str`` and the csv module."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import example_rows  # noqa: E402
from support.csv_reference import reference_lines  # noqa: E402

from ledger_report.engine import table, table_keys  # noqa: E402
from ledger_report.inputs import read_configs  # noqa: E402
from ledger_report.render import sweep  # noqa: E402
from ledger_report.render.output import csv_lines  # noqa: E402

# floats where repr takes another form or numpy and Python might part: the exponent forms and
# their edges (1e+16, 1e-05), negative zero, the smallest subnormal and the largest double,
# 2^53 and past it, not-a-number and the infinities, a sum that is not its decimal
EDGE_FLOATS = [
    0.0, -0.0, 1e16, 9999999999999998.0, 1e-05, 0.0001, 1e-4 * 0.9, 5e-324, -5e-324,
    2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 2.0**53,
    2.0**53 + 2, 1e22, 1e23, 0.1 + 0.2, 1 / 3, 123456789012345.6, 1.5, -2.5,
    float("nan"), float("inf"), float("-inf"),
]  # fmt: skip
EDGE_INTS = [0, -1, 1, 2**53, 2**53 + 1, -(2**53) - 1, 2**63 - 1, -(2**63), 10**18, -(10**17)]
EDGE_TEXTS = [
    "", "ok", "=1+1", "+y", "-x", "@sum", "\tz", "a,b", 'say "hi"', "two\nlines", "cr\rhere",
    "crlf\r\nend", " lead", "trail ", "日本語", "naïve,", "a\x00b", "'quoted'", "-",
]  # fmt: skip


def _column(draw, n: int):
    """One column as engine.table gives it: values of a kind, a blank mask or None, perhaps one
    value broadcast to every row (a stride of 0)."""
    kind = draw(st.sampled_from("fibUO"))
    if kind == "f":
        cell = st.sampled_from(EDGE_FLOATS) | st.floats(width=64)
        few = st.sampled_from(EDGE_FLOATS[:5] + [draw(st.floats(width=64))])
    elif kind == "i":
        cell = st.sampled_from(EDGE_INTS) | st.integers(-(2**63), 2**63 - 1)
        few = st.integers(-3, 40)  # a narrow span: values repeated
    elif kind == "b":
        cell = few = st.booleans()
    elif kind == "U":
        text = st.text(st.characters(exclude_categories=["Cs"]), max_size=6)
        cell = st.sampled_from(EDGE_TEXTS) | text
        few = st.sampled_from(EDGE_TEXTS[:4])
    else:  # whole numbers past int64, as Python ints (None where blank)
        cell = few = st.sampled_from([2**63, -(2**63) - 1, 10**30, 7, None])
    if draw(st.booleans()):  # one value for every row
        one = draw(cell)
        values = np.broadcast_to(np.array([one], dtype=_dtype(kind, [one])), (n,))
    else:
        cells = draw(st.lists(draw(st.sampled_from([cell, few])), min_size=n, max_size=n))
        values = np.array(cells, dtype=_dtype(kind, cells))
    blank = draw(st.sampled_from(["none", "some", "all", "broadcast"]))
    if blank == "none":
        return values, None
    if blank == "broadcast":
        return values, np.broadcast_to(np.array([draw(st.booleans())]), (n,))
    mask = [True] * n if blank == "all" else draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return values, np.array(mask, dtype=bool)


def _dtype(kind: str, cells: list):
    return {"f": np.float64, "i": np.int64, "b": bool, "U": str, "O": object}[kind]


@st.composite
def chunks(draw):
    n = draw(st.integers(1, 12))
    return [_column(draw, n) for _ in range(draw(st.integers(1, 7)))]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunks())
def test_lines_are_what_the_csv_module_writes(columns):
    """Any mix of columns and blanks: table_lines' bytes are the csv module's, cell by cell."""
    assert b"".join(sweep.table_lines(columns)) == reference_lines(columns)


@pytest.mark.parametrize("kind", ["f", "i", "U"])
def test_each_edge_value_is_written_as_python_writes_it(kind):
    """Each edge value in a column of its own kind, repeated and among others (so the distinct
    values are found by np.unique over bit patterns or by the text codes), in rows of one
    cell as the csv module writes them; a float column's cells are repr's very text."""
    pool = {"f": EDGE_FLOATS, "i": EDGE_INTS, "U": EDGE_TEXTS}[kind]
    cells = [pool[(5 * i) % len(pool)] for i in range(4 * len(pool))]
    values = np.array(cells, dtype={"f": np.float64, "i": np.int64, "U": str}[kind])
    columns = [(values, None), (np.zeros(len(cells), dtype=bool), None)]
    got = b"".join(sweep.table_lines(columns))
    assert got == reference_lines(columns)
    if kind == "f":
        assert got.decode().split("\r\n")[:-1] == [f"{repr(v)},false" for v in cells]


def test_many_floats_are_written_as_repr_writes_them():
    """Floats through orjson (from 1e-4 up to 1e16) and through repr (the rest), 300,000 of them
    (random bit patterns, and decimal fractions across the exponent forms' edges): each cell is
    repr's very text, Python's own figure."""
    rng = np.random.default_rng(23)
    scaled = rng.random(100_000) * 10.0 ** rng.uniform(-6, 18, 100_000)
    bits = rng.integers(0, 2**64, 100_000, dtype=np.uint64, endpoint=False).view(np.float64)
    values = np.concatenate([bits[np.isfinite(bits)], scaled, np.round(scaled, 3)])
    got = b"".join(sweep.table_lines([(values, None)]))
    assert got.decode().split("\r\n")[:-1] == list(map(repr, values.tolist()))


@pytest.fixture(scope="module")
def sweep_chunks(tmp_path_factory):
    """engine.table over the shipped examples and 150 varied rows (bench/example_rows.py)."""
    folder = tmp_path_factory.mktemp("rows")
    (folder / "configs").symlink_to(ROOT / "inputs" / "configs")
    example_rows.write_csv(folder / "rows.csv", example_rows.varied_rows(150, seed=5))
    configs = read_configs(ROOT / "inputs" / "examples.csv") + read_configs(folder / "rows.csv")
    return ["name", *table_keys()], list(table(configs, rows=64))


def test_the_table_is_written_as_the_csv_module_writes_it(sweep_chunks, monkeypatch):
    """write_table on the real table (chunks of 64 rows, blocks of a few rows, so a chunk spans
    blocks and a block ends mid-chunk): the header, then each chunk's rows as the csv module
    writes them from Python values."""
    header, chunks = sweep_chunks
    monkeypatch.setattr(sweep, "BLOCK_BYTES", 50_000)
    out = io.BytesIO()
    sweep.write_table(header, chunks, out)
    expected = csv_lines([header]) + b"".join(
        reference_lines([c[name] for name in header]) for c in chunks
    )
    assert out.getvalue() == expected
    assert out.getvalue().count(b"\r\n") == 1 + 21 + 150


def test_no_rows_is_the_header_alone():
    out = io.BytesIO()
    sweep.write_table(["name", "a,b"], [], out)
    assert out.getvalue() == b'name,"a,b"\r\n'
