"""model/rows.py carries float and truth-value nodes as arrays where the arrays interpreter holds
them so: on numbers chosen to meet its edges (halves, signs, zeros, huge values, NaN, infinities,
values a row leaves blank) it gives what the scalar interpreter gives on each row, type and all, and
raises where a row would."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_report.model.evaluate import eval_scalar
from ledger_report.model.expr import IsBlank, Ref, concat, gb_text, grouped, if_
from ledger_report.model.rows import evaluate_rows

EDGES = [
    0.0,
    -0.0,
    1.0,
    0.25,
    0.5,
    1.5,
    2.5,
    -2.5,
    0.125,
    0.005,
    1.005,
    2.675,
    -0.04,
    0.05,
    1e9,
    999.95,
    85.55e9,
    1.2345e12,
    -3.3e12,
    9.99e14,
    1e15,
    3e17,
    7.0,
    12345678.9,
    1 / 3,
    2 / 3,
    1e-9,
    3.0000000000000004,
]
ODD = [math.nan, math.inf, -math.inf]


def _both(e, x, y, blank=None):
    """``e`` over the rows by rows.py with the arrays (x, y as float64 quantities "x", "y"; ``blank``
    the rows where "x" is blank), and by the scalar interpreter row by row."""
    n = len(x)
    blank = np.zeros(n, dtype=bool) if blank is None else np.asarray(blank)
    xs = [None if b else v for v, b in zip(x, blank)]
    cols = {"x": xs, "y": list(y), "t": [v > 1 for v in y]}
    held = {
        "x": (np.asarray(x, dtype=float), blank if blank.any() else None),
        "y": (np.asarray(y, dtype=float), None),
        "t": (np.asarray(cols["t"]), None),
    }
    rows = range(n)
    got = _outcome(
        lambda: evaluate_rows(e, rows, lambda c: [None] * n, cols.__getitem__, {}, held.get)
    )
    plain = _outcome(lambda: evaluate_rows(e, rows, lambda c: [None] * n, cols.__getitem__, {}))
    want = _outcome(
        lambda: [eval_scalar(e, {}, {k: v[i] for k, v in cols.items()}, {}) for i in rows]
    )
    return got, plain, want


def _outcome(f):
    """What ``f()`` gives, or the type of the error it raises."""
    try:
        return f()
    except Exception as err:  # noqa: BLE001 - the error itself is the outcome compared
        return type(err)


def _sentence():
    x, y = Ref("x"), Ref("y")
    return concat(
        "a ",
        gb_text(x),
        " b ",
        grouped(x - y, 1),
        " c ",
        grouped(x / 7, 2),
        " d ",
        if_(x.ge(y), grouped(x * y, 0), concat(x, "/", y)),
        if_(Ref("t"), " T", " F"),
        " e ",
        if_(IsBlank(x), "blank", grouped(x + 0.5, 3)),
        " ",
        Ref("t"),
        " f ",
        grouped(x, 0),
        " ",
        grouped(x, 2),
    )


@pytest.mark.parametrize("extra", [[], ODD])
def test_arrays_give_the_scalar_rules(extra):
    """Every pair of edge values (and NaN, infinities): the same texts as row by row."""
    vals = EDGES + extra
    x = [a for a in vals for _b in vals] + [-a for a in vals]
    y = [b for _a in vals for b in vals] + [1.0] * len(vals)
    got, plain, want = _both(_sentence(), x, y)
    assert got == plain == want
    assert want is ValueError if extra else [type(v) for v in got] == [type(v) for v in want]
    finite = if_(
        Ref("x").gt(1e300),
        "big",
        if_(Ref("x").lt(-1e300), "small", concat(Ref("x"), " ", grouped(Ref("y"), 1))),
    )
    got, plain, want = _both(
        finite, x, [abs(v) if v == v else 1.0 for v in y]
    )  # NaN in x, never formatted
    assert got == plain == want and type(want) is list


def test_blank_rows_and_numbers_stay_as_the_scalar_rules_make_them():
    x = EDGES * 3
    blank = [i % 4 == 1 for i in range(len(x))]
    got, _plain, want = _both(_sentence(), x, [2.0] * len(x), blank)
    assert got == want and "blank" in got[1]
    e = Ref("x") * 3 - Ref("y")  # numbers out: floats as the scalar rules give them
    got, _plain, want = _both(e, EDGES, EDGES)
    assert [repr(v) for v in got] == [repr(v) for v in want]


def test_a_division_by_zero_raises_where_a_row_would():
    y = [1.0] * 20 + [0.0] + [2.0] * 20
    with pytest.raises(ZeroDivisionError):
        eval_scalar(Ref("x") / Ref("y"), {}, {"x": 1.0, "y": 0.0}, {})
    assert _both(grouped(Ref("x") / Ref("y"), 1), [3.0] * len(y), y) == (ZeroDivisionError,) * 3
    got, _plain, want = _both(
        if_(Ref("y").gt(0), grouped(Ref("x") / Ref("y"), 1), "none"), [3.0] * len(y), y
    )
    assert got == want


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(),
            st.floats(allow_nan=True, allow_infinity=True),
            st.floats(allow_nan=True, allow_infinity=True),
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_select_is_numpy_where_bit_for_bit(rows):
    """evaluate.select, the conditional's pick without a branch on each row, gives exactly what
    numpy.where gives (the same bits: signed zeros, NaN payloads, infinities) for float64 arrays,
    truth-value arrays and truth values, and the same kind of array."""
    from ledger_report.model.evaluate import select

    cond, x, y, p, q = (np.array(col) for col in zip(*rows))
    x, y = x.astype(np.float64), y.astype(np.float64)
    for a, b in ((x, y), (p, q), (False, q), (p, False), (True, q)):
        got, want = select(np, cond, a, b), np.where(cond, a, b)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
