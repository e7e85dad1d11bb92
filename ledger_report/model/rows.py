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

from typing import Any, Callable, Sequence

from .evaluate import (_BINOPS, _FUNCTIONS, Tables, _approx_equal_array, _is_blank, _lookup, _round_array, compare, grouped_text,
                       smallest_divisor_at_least, text_of)
from .expr import Const, Expr, Visitor

Column = Callable[[str], Sequence[Any]]  # name or key -> its value on every row of the batch


def evaluate_rows(e: Expr, rows: Sequence[int], col: Column, ref: Column, tables: Tables) -> list[Any]:
    """``e`` on the rows ``rows`` (positions in the batch): ``col(name)`` gives an input column
    (``None`` for an empty cell), ``ref(key)`` a quantity, each over the whole batch."""
    return _Rows(col, ref, tables).on(e, rows)


class _Rows(Visitor):
    def __init__(self, col: Column, ref: Column, tables: Tables) -> None:
        self.col, self.ref, self.tables = col, ref, tables

    def on(self, e: Expr, rows: Sequence[int]) -> list[Any]:
        if not rows:
            return []
        self.rows = rows
        return self.visit(e)

    def visit_Const(self, e):
        return [e.value] * len(self.rows)

    def visit_Col(self, e):
        c = self.col(e.name)
        return [None if _is_blank(c[i]) else c[i] for i in self.rows]

    def visit_Ref(self, e):
        c = self.ref(e.key)
        rows = self.rows
        if type(rows) is range and len(rows) == len(c):  # every row: the column itself (never written to)
            return c
        return [c[i] for i in rows]

    def visit_IsBlank(self, e):
        return [_is_blank(x) for x in self.visit(e.x)]

    def visit_If(self, e):
        rows = self.rows
        conds = self.visit(e.cond)
        out: list[Any] = [None] * len(rows)
        then = [p for p, c in enumerate(conds) if c is not None and c]
        other = [p for p, c in enumerate(conds) if c is not None and not c]
        for branch, at in ((e.then, then), (e.other, other)):
            for p, v in zip(at, self.on(branch, [rows[p] for p in at])):
                out[p] = v
        self.rows = rows
        return out

    def visit_BinOp(self, e):
        rows = self.rows
        a = self.visit(e.a)
        at = [p for p, x in enumerate(a) if x is not None]
        b = self.on(e.b, [rows[p] for p in at]) if len(at) < len(rows) else self.visit(e.b)
        self.rows = rows
        op = _BINOPS[e.op]
        out: list[Any] = [None] * len(rows)
        for p, y in zip(at, b):
            out[p] = None if y is None else op(a[p], y)
        return out

    def visit_Cmp(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if _floats_against_numbers(a, b):
            return _compare_floats(e.op, a, b)
        return [compare(e.op, x, y) for x, y in zip(a, b)]

    def visit_Lookup(self, e):
        t, table, field, default = self.tables, e.table, e.field, e.default
        return [None if k is None else _lookup(t, table, k, field, default) for k in self.visit(e.key)]

    def visit_Call(self, e):
        args = [self.visit(a) if not isinstance(a, Const) else _Repeated(a.value, len(self.rows)) for a in e.args]
        if e.fn == "CONCAT":
            return ["".join(xs) for xs in zip(*[_texts(a) for a in args])]
        if e.fn == "MINDIV":
            return [None if None in xs else smallest_divisor_at_least(*xs) for xs in zip(*args)]
        if e.fn == "FMT":
            return _grouped_texts(*args)
        if e.fn in ("CEIL", "FLOOR"):
            return _rounded(e.fn, args[0])
        fn = _FUNCTIONS[e.fn]
        return [None if None in xs else fn(list(xs)) for xs in zip(*args)]


def _grouped_texts(xs: list, places: list) -> list[Any]:
    """``FMT`` on each row; each distinct (value, places) written once."""
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


def _rounded(fn: str, xs: list) -> list[Any]:
    """``CEIL``/``FLOOR`` on each row: finite floats over an array by the arrays interpreter's
    rule (``_round_array``: the scalar rule's result, as whole numbers), anything else (whole
    numbers, blanks, values the scalar rule refuses) row by row."""
    import numpy as np

    if xs and set(map(type, xs)) == {float}:
        x = np.array(xs, dtype=float)
        if np.isfinite(x).all() and np.abs(x).max() < 2.0**53:
            return _round_array(np, np.ceil if fn == "CEIL" else np.floor, x).astype(np.int64).tolist()
    f = _FUNCTIONS[fn]
    return [None if x is None else f([x]) for x in xs]


def _floats_against_numbers(a: list, b: list) -> bool:
    """Every pair a float beside a float or a whole number below 2^53 (never blank, text or a
    truth value)."""
    ta, tb = set(map(type, a)), set(map(type, b))
    if not ((ta == {float} and tb <= {float, int}) or (tb == {float} and ta <= {float, int})):
        return False
    ints = [abs(x) for x in (a if int in ta else b if int in tb else ()) if type(x) is int]
    return not ints or max(ints) < 2**53  # ints that float holds exactly (Python compares them exactly)


def _compare_floats(op: str, a: list, b: list) -> list[bool]:
    """``compare`` over arrays where every pair holds a float: the arrays interpreter's rule
    (equal to about 15 digits, ``_approx_equal_array``), which is ``compare``'s, row for row."""
    import numpy as np

    x, y = np.array(a, dtype=float), np.array(b, dtype=float)
    eq = _approx_equal_array(np, x, y)
    got = {"=": lambda: eq, "<>": lambda: ~eq, "<": lambda: ~eq & (x < y), "<=": lambda: eq | (x < y),
           ">": lambda: ~eq & (x > y), ">=": lambda: eq | (x > y)}[op]()
    return got.tolist()



class _Repeated(list):
    """A constant argument: its value on every row (written as text once)."""

    def __init__(self, value: Any, n: int) -> None:
        super().__init__([value] * n)
        self.value = value


def _texts(xs: list) -> list[str]:
    """``text_of`` of each value (a constant's once)."""
    if isinstance(xs, _Repeated):
        return [text_of(xs.value)] * len(xs)
    if set(map(type, xs)) == {float}:  # each distinct number written once (rounded figures repeat)
        memo: dict[float, str] = {}
        return [memo[x] if x in memo else memo.setdefault(x, text_of(x)) for x in xs]
    return [x if type(x) is str else text_of(x) for x in xs]
