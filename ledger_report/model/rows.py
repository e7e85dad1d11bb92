"""Interpreter 1c: the scalar interpreter's rules, one node at a time over many rows.

The arrays interpreter leaves text (messages, sentences: ``CONCAT``, ``FMT``, ``MID``) to the
scalar one, which walks the expression once per row.  This walks it once per batch: each node
gives a list of Python values, one per row asked for, computed by exactly the scalar rules
(``evaluate.py``: blanks, ``compare``, ``text_of``, the functions), and every row meets exactly
the nodes the scalar interpreter would meet — a conditional's branch only on the rows that take
it, the right side of an operator only where the left is not blank.  An error the scalar
interpreter would raise on a row is raised here too (the caller then goes row by row, so it comes
where it always came).
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, Callable, Sequence

import numpy as np

from .evaluate import (
    _BINOPS,
    _FUNCTIONS,
    FMT_BIG,
    Tables,
    _approx_equal_array,
    _is_blank,
    _lookup,
    _round_array,
    compare,
    fmt_rounded,
    fmt_spec,
    grouped_text,
    smallest_divisor_at_least,
    text_of,
)
from .expr import Const, Expr, Ref, Visitor

Column = Callable[[str], Sequence[Any]]  # name or key -> its value on every row of the batch
Floats = Callable[[str], Any]  # key -> (float64 values over the batch, blank mask or None), or None


def evaluate_rows(
    e: Expr,
    rows: Sequence[int],
    col: Column,
    ref: Column,
    tables: Tables,
    floats: Floats | None = None,
) -> list[Any]:
    """``e`` on the rows ``rows`` (positions in the batch): ``col(name)`` gives an input column
    (``None`` for an empty cell), ``ref(key)`` a quantity, each over the whole batch.
    ``floats(key)``, where given, holds a quantity the arrays interpreter keeps as float64 or bool
    (values, blank mask): a node whose every row is a float is then carried as a float64 array
    (``_Floats``), which gives the same floats as the scalar rules (IEEE arithmetic, ``compare``'s
    rule, ``FMT``'s rounding), and one whose every row is a truth value as a bool array
    (``_Truths``: a conditional's rows partitioned over it)."""
    return _listed(_Rows(col, ref, tables, floats).on(e, rows))


_FEW = 16  # rows below which lists beat arrays


class _Floats(np.ndarray):
    """A node's value on each row when every row's is a float (never blank): float64."""


class _Truths(np.ndarray):
    """A node's value on each row when every row's is a truth value (never blank): bool."""


def _floats(x: Any) -> "_Floats":
    return np.asarray(x, dtype=np.float64).view(_Floats)


def _listed(v: Any) -> list[Any]:
    """A node's values as a list of Python values."""
    return np.ndarray.tolist(v) if isinstance(v, np.ndarray) else v


def _number(e: Expr) -> float | None:
    """A constant's value where it is a float or a whole number a float holds exactly (Python's
    arithmetic with a float then is float64's), else ``None``."""
    if isinstance(e, Const) and (
        type(e.value) is float or type(e.value) is int and abs(e.value) < 2**53
    ):
        return float(e.value)
    return None


class _Rows(Visitor):
    def __init__(
        self, col: Column, ref: Column, tables: Tables, floats: Floats | None = None
    ) -> None:
        self.col, self.ref, self.tables, self.floats = col, ref, tables, floats
        self._at: Any = None

    def on(self, e: Expr, rows: Sequence[int], at: Any = None) -> Any:
        """``e`` on ``rows`` (``at``: the same as an index array, where the caller has it)."""
        if not len(rows):
            return []
        self.rows, self._at = rows, at
        return self.visit(e)

    def held(self, key: str) -> Any:
        """The quantity's (values, blank mask) on the rows as arrays, where ``floats`` gives them
        and the rows are not few; else ``None``."""
        if self.floats is None or len(self.rows) < _FEW:
            return None
        got = self.floats(key)
        if got is None:
            return None
        data, blank = got
        return data[self.at()], (None if blank is None else blank[self.at()])

    def at(self) -> Any:
        """The rows as an index array."""
        if self._at is None:
            r = self.rows
            self._at = (
                np.arange(r.start, r.stop, r.step)
                if type(r) is range
                else np.fromiter(r, dtype=np.intp, count=len(r))
            )
        return self._at

    def visit_Const(self, e):
        return [e.value] * len(self.rows)

    def visit_Col(self, e):
        c = self.col(e.name)
        if None not in c and "" not in c:  # no blank cell (a column without any, at once)
            return list(c) if self.rows == range(len(c)) else [c[i] for i in self.rows]
        return [None if _is_blank(c[i]) else c[i] for i in self.rows]

    def visit_Ref(self, e):
        got = self.held(e.key)
        if got is not None and (got[1] is None or not got[1].any()):
            return got[0].view(_Floats if got[0].dtype.kind == "f" else _Truths)
        c = self.ref(e.key)
        rows = self.rows
        if type(rows) is range and len(rows) == len(
            c
        ):  # every row: the column itself (never written to)
            return c
        return [c[i] for i in rows]

    def visit_IsBlank(self, e):
        got = self.held(e.x.key) if isinstance(e.x, Ref) else None
        if got is not None:  # the blank mask itself
            blank = got[1]
            return (np.zeros(len(self.rows), dtype=bool) if blank is None else blank).view(_Truths)
        x = self.visit(e.x)
        return [False] * len(x) if isinstance(x, np.ndarray) else [_is_blank(v) for v in x]

    def visit_If(self, e):
        rows, at = self.rows, self._at
        conds = self.visit(e.cond)
        if type(conds) is _Truths:  # every row takes a branch: partitioned over the array
            then, other = np.flatnonzero(conds), np.flatnonzero(~conds)
            at = self.at()
            got = [
                (p, self.on(branch, at[p].tolist(), at[p]))
                for branch, p in ((e.then, then), (e.other, other))
            ]
        else:
            then = [p for p, c in enumerate(conds) if c is not None and c]
            other = [p for p, c in enumerate(conds) if c is not None and not c]
            got = [
                (p, self.on(branch, [rows[q] for q in p]))
                for branch, p in ((e.then, then), (e.other, other))
            ]
        self.rows, self._at = rows, at
        kinds = {type(v) for p, v in got if len(p)}
        if len(then) + len(other) == len(rows) and len(kinds) == 1 and kinds <= {_Floats, _Truths}:
            out = np.empty(len(rows), dtype=float if kinds == {_Floats} else bool).view(kinds.pop())
            for p, v in got:  # every row a float (or every row a truth value): an array again
                out[p] = v
            return out
        listed: list[Any] = [None] * len(rows)
        for p, v in got:
            for q, x in zip(_listed(p), _listed(v)):
                listed[q] = x
        return listed

    def visit_BinOp(self, e):
        rows, at = self.rows, self._at
        a = self.visit(e.a)
        if type(a) is _Floats:  # no blank: the right side on every row
            b = self.visit(e.b)
            got = _float_op(e.op, a, b, e.b)
            if got is not None:
                return got
            a, b, live = _listed(a), _listed(b), range(len(rows))
        else:
            live = [p for p, x in enumerate(a) if x is not None]
            b = _listed(
                self.on(e.b, [rows[p] for p in live]) if len(live) < len(rows) else self.visit(e.b)
            )
            self.rows, self._at = rows, at
        op = _BINOPS[e.op]
        out: list[Any] = [None] * len(rows)
        for p, y in zip(live, b):
            out[p] = None if y is None else op(a[p], y)
        return out

    def visit_Cmp(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if type(a) is _Floats or type(b) is _Floats:
            x, y = _float_operand(a, e.a), _float_operand(b, e.b)
            if x is not None and y is not None:
                return _compare_arrays(e.op, x, y).view(_Truths)
        a, b = _listed(a), _listed(b)
        if _floats_against_numbers(a, b):
            return _compare_floats(e.op, a, b)
        return [compare(e.op, x, y) for x, y in zip(a, b)]

    def visit_Lookup(self, e):
        t, table, field, default = self.tables, e.table, e.field, e.default
        return [
            None if k is None else _lookup(t, table, k, field, default)
            for k in _listed(self.visit(e.key))
        ]

    def visit_Call(self, e):
        args = [
            self.visit(a) if not isinstance(a, Const) else _Repeated(a.value, len(self.rows))
            for a in e.args
        ]
        if e.fn == "CONCAT":
            return list(map("".join, zip(*[_texts(a) for a in args])))
        if e.fn == "FMT":
            return _grouped_texts(*args)
        if e.fn in ("CEIL", "FLOOR"):
            return _rounded(e.fn, _listed(args[0]))
        args = [_listed(a) for a in args]
        if e.fn == "MINDIV":
            return [None if None in xs else smallest_divisor_at_least(*xs) for xs in zip(*args)]
        fn = _FUNCTIONS[e.fn]
        return [None if None in xs else fn(list(xs)) for xs in zip(*args)]


def _float_operand(v: Any, e: Expr) -> Any:
    """An operand as float64 (an array, or a constant's float), or ``None`` where it is neither."""
    if type(v) is _Floats:
        return v
    return _number(e)


def _float_op(op: str, a: "_Floats", b: Any, eb: Expr) -> "_Floats | None":
    """``a op b`` over float64 where ``b`` is floats too (an array or a constant) and the scalar
    rule would not raise (a division by zero); ``None`` otherwise (the caller goes row by row)."""
    y = _float_operand(b, eb)
    if y is None or op == "/" and not np.all(y != 0):
        return None
    with np.errstate(all="ignore"):  # Python's float arithmetic overflows to inf without a word
        return _floats(_BINOPS[op](a, y))  # the scalar rule's operator, which numpy's arrays take


def _grouped_texts(xs: Any, places: list) -> list[Any]:
    """``FMT`` on each row; each distinct (value, places) written once."""
    if type(xs) is _Floats and isinstance(places, _Repeated) and type(places.value) is int:
        got = _grouped_floats(xs, places.value)
        if got is not None:
            return got
    xs = _listed(xs)
    memo: dict[tuple, str] = {}
    out: list[Any] = []
    for x, p in zip(xs, places):
        if x is None or p is None:
            out.append(None)
            continue
        key = (type(x), x, type(p), p)
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = grouped_text(x, int(p))
        out.append(hit)
    return out


def _grouped_floats(x: Any, places: int) -> list[str] | None:
    """``grouped_text`` of floats over an array: the scalar rule's rounding (``floor(|x| ×
    10^places + 0.5) / 10^places``, signed, IEEE arithmetic alike) on every value below 1e15,
    each distinct rounded value written once, the others (1e15 and above, infinities) by the
    scalar rule; ``None`` where a value is NaN (the caller goes by the scalar rule, which raises)."""
    a = np.abs(x)
    if np.isnan(a).any():
        return None
    big = a >= FMT_BIG
    with np.errstate(all="ignore"):
        signed = fmt_rounded(np.where(big, 0.0, x), places, np.floor, np.copysign)
    distinct, inverse = np.unique(signed, return_inverse=True)
    texts = list(map(format, distinct.tolist(), repeat(fmt_spec(places))))
    out = list(map(texts.__getitem__, inverse.reshape(-1).tolist()))
    for i in np.flatnonzero(big).tolist():
        out[i] = grouped_text(float(x[i]), places)
    return out


def _rounded(fn: str, xs: list) -> list[Any]:
    """``CEIL``/``FLOOR`` on each row: finite floats over an array by the arrays interpreter's
    rule (``_round_array``: the scalar rule's result, as whole numbers), anything else (whole
    numbers, blanks, values the scalar rule refuses) row by row."""
    if xs and set(map(type, xs)) == {float}:
        x = np.array(xs, dtype=float)
        if np.isfinite(x).all() and np.abs(x).max() < 2.0**53:
            return (
                _round_array(np, np.ceil if fn == "CEIL" else np.floor, x).astype(np.int64).tolist()
            )
    f = _FUNCTIONS[fn]
    return [None if x is None else f([x]) for x in xs]


def _floats_against_numbers(a: list, b: list) -> bool:
    """Every pair a float beside a float or a whole number below 2^53 (never blank, text or a
    truth value)."""
    ta, tb = set(map(type, a)), set(map(type, b))
    if not ((ta == {float} and tb <= {float, int}) or (tb == {float} and ta <= {float, int})):
        return False
    ints = [abs(x) for x in (a if int in ta else b if int in tb else ()) if type(x) is int]
    return (
        not ints or max(ints) < 2**53
    )  # ints that float holds exactly (Python compares them exactly)


def _compare_floats(op: str, a: list, b: list) -> list[bool]:
    """``compare`` over arrays where every pair holds a float: the arrays interpreter's rule
    (equal to about 15 digits, ``_approx_equal_array``), which is ``compare``'s, row for row."""
    return _compare_arrays(op, np.array(a, dtype=float), np.array(b, dtype=float)).tolist()


def _compare_arrays(op: str, x: Any, y: Any) -> Any:
    """``_compare_floats`` on float64 values (arrays, or a float beside an array)."""
    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    eq = _approx_equal_array(np, x, y)
    got = {
        "=": lambda: eq,
        "<>": lambda: ~eq,
        "<": lambda: ~eq & (x < y),
        "<=": lambda: eq | (x < y),
        ">": lambda: ~eq & (x > y),
        ">=": lambda: eq | (x > y),
    }[op]()
    return np.asarray(got)


class _Repeated(list):
    """A constant argument: its value on every row (written as text once)."""

    def __init__(self, value: Any, n: int) -> None:
        super().__init__([value] * n)
        self.value = value


def _texts(xs: list) -> list[str]:
    """``text_of`` of each value (a constant's once)."""
    if isinstance(xs, _Repeated):
        return [text_of(xs.value)] * len(xs)
    xs = _listed(xs)
    kinds = set(map(type, xs))
    if kinds == {str}:
        return xs
    if kinds == {float}:  # each distinct number written once (rounded figures repeat)
        memo: dict[float, str] = {}
        return [memo[x] if x in memo else memo.setdefault(x, text_of(x)) for x in xs]
    return [x if type(x) is str else text_of(x) for x in xs]
