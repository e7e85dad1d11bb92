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

from .evaluate import _BINOPS, _FUNCTIONS, Tables, _is_blank, _lookup, compare, smallest_divisor_at_least, text_of
from .expr import Expr, Visitor

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
        return [c[i] for i in self.rows]

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
        return [compare(e.op, x, y) for x, y in zip(a, b)]

    def visit_Lookup(self, e):
        t, table, field, default = self.tables, e.table, e.field, e.default
        return [None if k is None else _lookup(t, table, k, field, default) for k in self.visit(e.key)]

    def visit_Call(self, e):
        args = [self.visit(a) for a in e.args]
        if e.fn == "CONCAT":
            return ["".join([text_of(x) for x in xs]) for xs in zip(*args)]
        if e.fn == "MINDIV":
            return [None if any(x is None for x in xs) else smallest_divisor_at_least(*xs) for xs in zip(*args)]
        fn = _FUNCTIONS[e.fn]
        return [None if any(x is None for x in xs) else fn(list(xs)) for xs in zip(*args)]

