"""Interpreter 1: evaluate the registry on Python scalars (one row) or numpy arrays (many rows).

Scalars: ``None`` is a blank; arithmetic, comparisons and functions on a blank give a blank,
exactly as the spreadsheet guards do (see ``Registry._needs``).  Integers stay Python ints
where the arithmetic allows (parameter counts are exact); ``/`` gives floats.

Arrays (the planner): every input is a numpy array (or a scalar broadcast against them) with
no blanks; ``If`` becomes ``numpy.where``.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from .expr import BinOp, Call, Cmp, Col, Const, Expr, If, IsBlank, Lookup, Ref
from .registry import Registry

Tables = Mapping[str, Mapping[str, Mapping[str, Any]]]  # table -> key -> field -> value


def _is_blank(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v == "")


def evaluate_row(reg: Registry, row: Mapping[str, Any], tables: Tables) -> dict[str, Any]:
    """Every quantity of the registry for one row of inputs (``None`` = empty cell)."""
    env: dict[str, Any] = {}
    for q in reg:
        env[q.key] = eval_scalar(q.expr, row, env, tables)
    return env


def eval_scalar(e: Expr, row: Mapping[str, Any], env: Mapping[str, Any], tables: Tables) -> Any:
    """One expression on scalars: columns from ``row``, earlier quantities from ``env``."""

    def ev(e: Expr) -> Any:
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Col):
            v = row.get(e.name)
            return None if _is_blank(v) else v
        if isinstance(e, Ref):
            return env[e.key]
        if isinstance(e, IsBlank):
            return _is_blank(ev(e.x))
        if isinstance(e, If):
            c = ev(e.cond)
            if c is None:
                return None
            return ev(e.then) if c else ev(e.other)
        if isinstance(e, BinOp):
            a, b = ev(e.a), ev(e.b)
            if a is None or b is None:
                return None
            if e.op == "+":
                return a + b
            if e.op == "-":
                return a - b
            if e.op == "*":
                return a * b
            if e.op == "/":
                return a / b
            raise ValueError(e.op)
        if isinstance(e, Cmp):
            a, b = ev(e.a), ev(e.b)
            if a is None or b is None:
                return None
            if isinstance(a, str) and isinstance(b, str):
                a, b = a.lower(), b.lower()  # spreadsheet comparison is case-insensitive
            return {
                "=": a == b,
                "<>": a != b,
                "<": a < b,
                "<=": a <= b,
                ">": a > b,
                ">=": a >= b,
            }[e.op]
        if isinstance(e, Lookup):
            k = ev(e.key)
            if k is None:
                return None
            return _lookup(tables, e.table, k, e.field)
        if isinstance(e, Call):
            args = [ev(a) for a in e.args]
            if any(a is None for a in args):
                return None
            fn = e.fn
            if fn == "MAX":
                return max(args)
            if fn == "MIN":
                return min(args)
            if fn == "CEIL":
                return _ceil(args[0])
            if fn == "FLOOR":
                return math.floor(args[0])
            if fn == "AND":
                return all(bool(a) for a in args)
            if fn == "OR":
                return any(bool(a) for a in args)
            if fn == "NOT":
                return not args[0]
            raise ValueError(fn)
        raise TypeError(e)

    return ev(e)


def _ceil(x: Any) -> int:
    if isinstance(x, int):
        return x
    return math.ceil(x)


def _lookup(tables: Tables, table: str, key: Any, field: str) -> Any:
    t = tables[table]
    k = str(key).lower()
    for name, rec in t.items():
        if name.lower() == k:
            return rec[field]
    raise KeyError(f"{key!r} is not in the {table} table")


def evaluate_arrays(reg: Registry, cols: Mapping[str, Any], tables: Tables, keys: list[str] | None = None) -> dict[str, Any]:
    """Every quantity for many rows at once; ``cols`` maps a column to an array or a scalar.

    Columns absent from ``cols`` are blank for every row (a blank test on them is True).
    """
    import numpy as np

    env: dict[str, Any] = {}
    blank_cols = {c for c, v in cols.items() if v is None}

    def is_blank_static(e: Expr) -> bool | None:
        if isinstance(e, Col):
            return e.name not in cols or e.name in blank_cols
        if isinstance(e, Ref):
            return env[e.key] is None
        return None

    def ev(e: Expr) -> Any:
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Col):
            return cols.get(e.name)
        if isinstance(e, Ref):
            return env[e.key]
        if isinstance(e, IsBlank):
            s = is_blank_static(e.x)
            if s is None:
                raise TypeError("blank tests in arrays apply to columns and quantities")
            return s
        if isinstance(e, If):
            c = ev(e.cond)
            if isinstance(c, (bool, np.bool_)):
                return ev(e.then) if c else ev(e.other)
            if c is None:
                return None
            t, o = ev(e.then), ev(e.other)
            if t is None or o is None:
                return t if o is None else o
            return np.where(c, t, o)
        if isinstance(e, BinOp):
            a, b = ev(e.a), ev(e.b)
            if a is None or b is None:
                return None
            if e.op == "+":
                return a + b
            if e.op == "-":
                return a - b
            if e.op == "*":
                return a * b
            if e.op == "/":
                with np.errstate(divide="ignore", invalid="ignore"):
                    return np.true_divide(a, b)
            raise ValueError(e.op)
        if isinstance(e, Cmp):
            a, b = ev(e.a), ev(e.b)
            if a is None or b is None:
                return None
            if isinstance(a, str):
                a = a.lower()
            if isinstance(b, str):
                b = b.lower()
            return {
                "=": lambda: np.equal(a, b),
                "<>": lambda: np.not_equal(a, b),
                "<": lambda: np.less(a, b),
                "<=": lambda: np.less_equal(a, b),
                ">": lambda: np.greater(a, b),
                ">=": lambda: np.greater_equal(a, b),
            }[e.op]()
        if isinstance(e, Lookup):
            k = ev(e.key)
            if k is None:
                return None
            t = tables[e.table]
            if isinstance(k, str):
                return _lookup(tables, e.table, k, e.field)
            names = {n.lower(): rec[e.field] for n, rec in t.items()}
            uniq, inv = np.unique(np.char.lower(np.asarray(k, dtype=str)), return_inverse=True)
            vals = np.array([names[u] for u in uniq])
            return vals[inv].reshape(np.shape(k))
        if isinstance(e, Call):
            args = [ev(a) for a in e.args]
            if any(a is None for a in args):
                return None
            fn = e.fn
            if fn == "MAX":
                out = args[0]
                for a in args[1:]:
                    out = np.maximum(out, a)
                return out
            if fn == "MIN":
                out = args[0]
                for a in args[1:]:
                    out = np.minimum(out, a)
                return out
            if fn == "CEIL":
                return np.ceil(args[0])
            if fn == "FLOOR":
                return np.floor(args[0])
            if fn == "AND":
                out = args[0]
                for a in args[1:]:
                    out = np.logical_and(out, a)
                return out
            if fn == "OR":
                out = args[0]
                for a in args[1:]:
                    out = np.logical_or(out, a)
                return out
            if fn == "NOT":
                return np.logical_not(args[0])
            raise ValueError(fn)
        raise TypeError(e)

    wanted = None if keys is None else _closure(reg, keys)
    for q in reg:
        if wanted is not None and q.key not in wanted:
            continue
        env[q.key] = ev(q.expr)
    return env


def _closure(reg: Registry, keys: list[str]) -> set[str]:
    from .expr import all_refs

    out: set[str] = set()
    stack = list(keys)
    while stack:
        k = stack.pop()
        if k in out:
            continue
        out.add(k)
        stack.extend(all_refs(reg[k].expr))
    return out
