"""Interpreter 1: evaluate the registry on Python scalars (one row) or numpy arrays (many rows).

Scalars: ``None`` is a blank; arithmetic, comparisons and functions on a blank give a blank,
exactly as the spreadsheet guards do (see ``Registry._needs``).  Integers stay Python ints
where the arithmetic allows (parameter counts are exact); ``/`` gives floats.

Arrays (the planner): every input is a numpy array (or a scalar broadcast against them) with
no blanks; ``If`` becomes ``numpy.where``.

Rounding and comparisons follow the spreadsheets, so the workbook's live formulas give the same
figures (tests/test_workbook.py checks against LibreOffice): ``CEIL``/``FLOOR`` first round a
float to 15 significant digits, and numbers closer than about 15 significant digits compare equal
(LibreOffice's ``rtl::math::approxValue`` / ``approxEqual``, which Calc applies in CEILING, FLOOR
and every comparison; Excel also compares to 15 digits).  Without this, float noise such as
1706433408 × (4 × 7051776 / 13651467264) = 3525888.0000000005 ceils to 3525889 in Python and to
the intended 3525888 in the spreadsheet.
"""

from __future__ import annotations

import math
import operator
import struct
from typing import Any, Callable, Mapping

from .expr import BinOp, Call, Cmp, Col, Const, Expr, If, IsBlank, Lookup, Ref
from .registry import Registry

Tables = Mapping[str, Mapping[str, Mapping[str, Any]]]  # table -> key -> field -> value


def _is_blank(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v == "")


def evaluate_row(reg: Registry, row: Mapping[str, Any], tables: Tables) -> dict[str, Any]:
    """Every quantity of the registry for one row of inputs (``None`` = empty cell)."""
    env: dict[str, Any] = {}
    for q in reg:
        env[q.key] = compiled(q.expr)(row, env, tables)
    return env


def eval_scalar(e: Expr, row: Mapping[str, Any], env: Mapping[str, Any], tables: Tables) -> Any:
    """One expression on scalars: columns from ``row``, earlier quantities from ``env``."""
    return compiled(e)(row, env, tables)


_COMPILED: dict[int, tuple[Expr, Callable]] = {}


def compiled(e: Expr) -> Callable[[Mapping[str, Any], Mapping[str, Any], Tables], Any]:
    """The expression as nested Python closures, built once per node (nodes are immutable)."""
    hit = _COMPILED.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    fn = _compile(e)
    _COMPILED[id(e)] = (e, fn)  # keeps ``e`` alive, so its id is not reused
    return fn


def _compile(e: Expr) -> Callable:
    if isinstance(e, Const):
        v = e.value
        return lambda row, env, t: v
    if isinstance(e, Col):
        name = e.name

        def col(row, env, t):
            v = row.get(name)
            return None if _is_blank(v) else v

        return col
    if isinstance(e, Ref):
        key = e.key
        return lambda row, env, t: env[key]
    if isinstance(e, IsBlank):
        x = compiled(e.x)
        return lambda row, env, t: _is_blank(x(row, env, t))
    if isinstance(e, If):
        c_, a_, b_ = compiled(e.cond), compiled(e.then), compiled(e.other)

        def if_(row, env, t):
            c = c_(row, env, t)
            if c is None:
                return None
            return a_(row, env, t) if c else b_(row, env, t)

        return if_
    if isinstance(e, BinOp):
        a_, b_ = compiled(e.a), compiled(e.b)
        op = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}[e.op]

        def binop(row, env, t):
            a = a_(row, env, t)
            if a is None:
                return None
            b = b_(row, env, t)
            if b is None:
                return None
            return op(a, b)

        return binop
    if isinstance(e, Cmp):
        a_, b_ = compiled(e.a), compiled(e.b)
        opname = e.op
        plain = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[opname]

        def cmp(row, env, t):
            a, b = a_(row, env, t), b_(row, env, t)
            if a is None or b is None:
                return None
            if isinstance(a, str) and isinstance(b, str):
                return plain(a.lower(), b.lower())  # spreadsheet comparison is case-insensitive
            if isinstance(a, float) or isinstance(b, float):
                return _compare_numbers(opname, a, b)
            return plain(a, b)

        return cmp
    if isinstance(e, Lookup):
        k_ = compiled(e.key)
        table, field = e.table, e.field

        def lookup(row, env, t):
            k = k_(row, env, t)
            return None if k is None else _lookup(t, table, k, field)

        return lookup
    if isinstance(e, Call):
        args_ = [compiled(a) for a in e.args]
        fn = {
            "MAX": lambda xs: max(xs),
            "MIN": lambda xs: min(xs),
            "CEIL": lambda xs: _ceil(xs[0]),
            "FLOOR": lambda xs: xs[0] if isinstance(xs[0], int) else math.floor(approx_value(xs[0])),
            "AND": lambda xs: all(bool(x) for x in xs),
            "OR": lambda xs: any(bool(x) for x in xs),
            "NOT": lambda xs: not xs[0],
        }[e.fn]

        def call(row, env, t):
            xs = [a(row, env, t) for a in args_]
            if any(x is None for x in xs):
                return None
            return fn(xs)

        return call
    raise TypeError(e)


def _ceil(x: Any) -> int:
    if isinstance(x, int):
        return x
    return math.ceil(approx_value(x))


# Spreadsheet number semantics (LibreOffice 7.4, sal/rtl/math.cxx) -----------------------------
_APPROX_BIG = 2199023255552.0  # 2^41: above it Calc leaves a value as it is (at most 11 fraction bits)
_E48 = 2.0**-48
_E44 = 2.0**-44


def _fraction_bits(a: float) -> int:
    """How many bits of ``a``'s mantissa lie after the binary point (0 for an integer)."""
    bits = struct.unpack("<Q", struct.pack("<d", a))[0]
    exp = ((bits >> 52) & 0x7FF) - 1023
    if exp >= 52:
        return 0
    frac = bits & ((1 << 52) - 1)
    least = (frac & -frac).bit_length() if frac else 53
    return max(53 - least - exp, 0)


def approx_value(x: float) -> float:
    """``x`` rounded to 15 significant digits, as Calc does before CEILING and FLOOR."""
    if x == 0 or not math.isfinite(x) or x > _APPROX_BIG:
        return x
    a = abs(x)
    if (a.is_integer() and a < 2**53) or _fraction_bits(a) <= 11:
        return x
    n = 14 - math.floor(math.log10(a))
    if abs(n) > 308:
        return x  # near the ends of the double range: Calc bails out too
    f = 10.0 ** abs(n)
    y = a / f if n < 0 else a * f
    if not math.isfinite(y):
        return x
    y = math.floor(y + 0.5)  # std::round, halves away from zero
    y = y * f if n < 0 else y / f
    if not math.isfinite(y):
        return x
    return -y if x < 0 else y


def approx_equal(a: float, b: float) -> bool:
    """Calc's number equality: equal, or closer than 2^-48 relative (about 15 digits)."""
    if a == b:
        return True
    if a == 0 or b == 0:
        return False
    d = abs(a - b)
    if not math.isfinite(d):
        return False
    a, b = abs(a), abs(b)
    if d > a * _E44 or d > b * _E44:
        return False
    if float(d).is_integer() and float(a).is_integer() and float(b).is_integer():
        return False  # distinct integers are never equal
    return d < a * _E48 and d < b * _E48


def _compare_numbers(op: str, a: Any, b: Any) -> bool:
    eq = approx_equal(float(a), float(b))
    if op == "=":
        return eq
    if op == "<>":
        return not eq
    if op == "<":
        return not eq and a < b
    if op == "<=":
        return eq or a < b
    if op == ">":
        return not eq and a > b
    if op == ">=":
        return eq or a > b
    raise ValueError(op)


def _round_array(np, fn, x):
    """``fn(approx_value(x))`` (fn = numpy.ceil or numpy.floor) over an array, cheaply.

    Rounding to 15 digits can only change the result of a value just past an integer (ceil: just
    above one, floor: just below), by under 5e-15 relative, and Calc leaves values above 2^41
    alone, so the distance to the integer is under 0.011 (or the value is below -2^41): two array
    passes find the candidates, and the few there are go through the scalar rule."""
    x = np.asarray(x, dtype=float)
    out = fn(x)
    with np.errstate(all="ignore"):
        gap = (out - x) if fn is np.ceil else (x - out)
        cand = (gap > 0.989) | (x < -_APPROX_BIG)
        if cand.any():
            idx = np.nonzero(cand)
            sub = x[idx]
            r = np.rint(sub)
            near = np.abs(sub - r) < np.abs(sub) * 1e-14
            if near.any():
                out = np.array(out, dtype=float, copy=True)
                pick = tuple(i[near] for i in idx)
                out[pick] = [fn(approx_value(float(v))) for v in x[pick]]
    return out


def _approx_equal_array(np, a, b):
    """``approx_equal`` over arrays: exact equality, refined by the scalar rule where the values
    differ by less than 2^-48 relative (rare)."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    eq = a == b
    with np.errstate(all="ignore"):
        near = ~eq & (np.abs(a - b) < np.abs(a) * _E48)
    if near.any():
        eq = eq.copy()
        idx = np.nonzero(near)
        eq[idx] = [approx_equal(float(x), float(y)) for x, y in zip(a[idx], b[idx])]
    return eq


def _is_float_array(np, x) -> bool:
    return isinstance(x, float) or (isinstance(x, np.ndarray) and x.dtype.kind == "f")


_INDEX: dict[int, tuple[Any, dict[str, Any]]] = {}


def _lookup(tables: Tables, table: str, key: Any, field: str) -> Any:
    """``tables[table][key][field]``, the key matched case-insensitively (as MATCH does)."""
    t = tables[table]
    hit = _INDEX.get(id(t))
    if hit is None or hit[0] is not t:
        hit = (t, {name.lower(): rec for name, rec in t.items()})
        _INDEX[id(t)] = hit
    rec = hit[1].get(str(key).lower())
    if rec is None:
        raise KeyError(f"{key!r} is not in the {table} table")
    return rec[field]


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
            if _is_float_array(np, a) or _is_float_array(np, b):
                eq = _approx_equal_array(np, a, b)
                return {
                    "=": lambda: eq,
                    "<>": lambda: ~eq,
                    "<": lambda: ~eq & np.less(a, b),
                    "<=": lambda: eq | np.less(a, b),
                    ">": lambda: ~eq & np.greater(a, b),
                    ">=": lambda: eq | np.greater(a, b),
                }[e.op]()
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
                x = args[0]
                return _round_array(np, np.ceil, x) if _is_float_array(np, x) else np.ceil(x)
            if fn == "FLOOR":
                x = args[0]
                return _round_array(np, np.floor, x) if _is_float_array(np, x) else np.floor(x)
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
