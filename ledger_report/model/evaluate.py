"""Interpreter 1: evaluate the registry on Python scalars (one row) or numpy arrays (many rows).

Scalars: ``None`` is a blank; arithmetic, comparisons and functions on a blank give a blank,
exactly as the spreadsheet guards do (see ``registry.needs_of``).  Integers stay Python ints
where the arithmetic allows (parameter counts are exact); ``/`` gives floats.

Arrays (the planner, and ``calc``/``build`` in batches): every input is a numpy array, a scalar
broadcast against them, or absent (blank for every row).  A value is carried with its blank mask
(``_A``), so a row whose branch or input is blank is blank exactly as the scalar interpreter makes
it; ``If`` becomes ``numpy.where`` over both branches.

Rounding and comparisons follow the spreadsheets, so the workbook's live formulas give the same
figures (tests/test_workbook.py checks against LibreOffice): ``CEIL``/``FLOOR`` first round a
float to 15 significant digits, and numbers closer than about 15 significant digits compare equal
(LibreOffice's ``rtl::math::approxValue`` / ``approxEqual``, which Calc applies in CEILING, FLOOR
and every comparison; Excel also compares to 15 digits).  Without this, float noise such as
1706433408 × (4 × 7051776 / 13651467264) = 3525888.0000000005 ceils to 3525889 in Python and to
the intended 3525888 in the spreadsheet.
"""

from __future__ import annotations

import bisect
import functools
import math
import operator
import struct
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .divisors import divisors
from .expr import TEXT_FUNCTIONS, Col, Const, Expr, Ref, Visitor, all_cols, all_refs, structure
from .registry import Registry
from .units import SCI_FROM

Tables = Mapping[str, Mapping[str, Mapping[str, Any]]]  # table -> key -> field -> value


def _is_blank(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v == "")


def evaluate_row(reg: Registry, row: Mapping[str, Any], tables: Tables) -> dict[str, Any]:
    """Every quantity of the registry for one row of inputs (``None`` = empty cell)."""
    env: dict[str, Any] = {}
    for q in reg:
        try:
            env[q.key] = compiled(q.expr)(row, env, tables)
        except ZeroDivisionError:  # only on rows a constraint refuses (the sheet shows #DIV/0!)
            env[q.key] = None
    return env


def eval_scalar(e: Expr, row: Mapping[str, Any], env: Mapping[str, Any], tables: Tables) -> Any:
    """One expression on scalars: columns from ``row``, earlier quantities from ``env``."""
    return compiled(e)(row, env, tables)


@functools.cache  # a node is hashed by identity (and kept alive here)
def compiled(e: Expr) -> Callable[[Mapping[str, Any], Mapping[str, Any], Tables], Any]:
    """The expression as nested Python closures, built once per node (nodes are immutable)."""
    return _Closures().visit(e)


_BINOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}

_CMPS = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def text_of(x: Any) -> str:
    """A value as a spreadsheet writes it into text: blank as nothing, numbers plainly."""
    if type(x) is str:  # the common case in a sentence: checked first
        return x
    if x is None:
        return ""
    if isinstance(x, bool):
        return "TRUE" if x else "FALSE"
    if isinstance(x, float):
        return str(int(x)) if x.is_integer() and abs(x) < SCI_FROM else f"{x:.10g}"
    return str(x)


def grouped_text(x: Any, places: int = 0) -> str:
    """A number with thousands separators and ``places`` decimals, as TEXT(x, "#,##0.0…") writes
    it (halves rounded away from zero, as the spreadsheet does; a zero unsigned), from 10^15 on
    in scientific notation."""
    if isinstance(x, (bool, str)):
        return text_of(x)
    if abs(x) >= SCI_FROM:
        return f"{x:.3e}"
    scale = 10**places
    rounded = math.copysign(math.floor(abs(x) * scale + 0.5) / scale, x) + 0.0  # -0.0 is 0.0
    return format(rounded, f",.{places}f")


def smallest_divisor_at_least(n: Any, at_least: Any, step: Any) -> Any:
    """The smallest d ≥ at_least with d | n and step | d, or None (n, step whole and ≥ 1)."""
    if not all(math.isfinite(float(x)) for x in (n, at_least, step)) or round(n) < 1:
        return None  # (none at least inf, as the arrays interpreter gives)
    n, step = int(round(n)), max(int(round(step)), 1)
    lo = max(int(math.ceil(approx_value(float(at_least)))), 1)
    candidates = stepped_divisors(n, step)
    at = bisect.bisect_left(candidates, lo)
    return candidates[at] if at < len(candidates) else None


def stepped_divisors(n: int, step: int) -> list[int]:
    """The divisors of ``n`` that ``step`` divides, in increasing order."""
    return [d for d in divisors(n) if d % step == 0]


_FUNCTIONS: dict[str, Callable[[list], Any]] = {
    "MAX": max,
    "MIN": min,
    "CEIL": lambda xs: _rounded(math.ceil, xs[0]),
    "FLOOR": lambda xs: _rounded(math.floor, xs[0]),
    "MOD": lambda xs: xs[0] % xs[1],
    "AND": lambda xs: all(bool(x) for x in xs),
    "OR": lambda xs: any(bool(x) for x in xs),
    "NOT": lambda xs: not xs[0],
    "FMT": lambda xs: grouped_text(xs[0], int(xs[1])),
    "MID": lambda xs: str(xs[0])[int(xs[1]) - 1 : int(xs[1]) - 1 + int(xs[2])],
    "GCD": lambda xs: math.gcd(int(round(xs[0])), int(round(xs[1]))),
    "MINDIV": lambda xs: smallest_divisor_at_least(*xs),
}


class _Closures(Visitor):
    """Interpreter 1a: each node becomes a closure over (row, env, tables)."""

    def visit_Const(self, e):
        v = e.value
        return lambda row, env, t: v

    def visit_Col(self, e):
        name = e.name

        def col(row, env, t):
            v = row.get(name)
            return None if _is_blank(v) else v

        return col

    def visit_Ref(self, e):
        key = e.key
        return lambda row, env, t: env[key]

    def visit_IsBlank(self, e):
        x = compiled(e.x)
        return lambda row, env, t: _is_blank(x(row, env, t))

    def visit_If(self, e):
        c_, a_, b_ = compiled(e.cond), compiled(e.then), compiled(e.other)

        def if_(row, env, t):
            c = c_(row, env, t)
            if c is None:
                return None
            return a_(row, env, t) if c else b_(row, env, t)

        return if_

    def visit_BinOp(self, e):
        a_, b_, op = compiled(e.a), compiled(e.b), _BINOPS[e.op]

        def binop(row, env, t):
            a = a_(row, env, t)
            if a is None:
                return None
            b = b_(row, env, t)
            return None if b is None else op(a, b)

        return binop

    def visit_Cmp(self, e):
        a_, b_, opname = compiled(e.a), compiled(e.b), e.op
        return lambda row, env, t: compare(opname, a_(row, env, t), b_(row, env, t))

    def visit_Lookup(self, e):
        k_, table, field, fallback = compiled(e.key), e.table, e.field, e.default

        def lookup(row, env, t):
            k = k_(row, env, t)
            return None if k is None else _lookup(t, table, k, field, fallback)

        return lookup

    def visit_Call(self, e):
        if e.fn == "CONCAT":  # a constant part's text written once, when compiled
            parts = [
                (text_of(a.value), None) if type(a) is Const else ("", compiled(a)) for a in e.args
            ]
            return lambda row, env, t: "".join(
                [x if f is None else text_of(f(row, env, t)) for x, f in parts]
            )
        args_, fn = [compiled(a) for a in e.args], _FUNCTIONS[e.fn]

        def call(row, env, t):
            xs = [a(row, env, t) for a in args_]
            return None if None in xs else fn(xs)

        return call


def compare(opname: str, a: Any, b: Any) -> Any:
    """Two scalars compared as the spreadsheet compares them: blank if either is blank, text
    case-insensitively, numbers to about 15 digits (``approx_equal``)."""
    if a is None or b is None:
        return None
    if isinstance(a, str) and isinstance(b, str):
        return _CMPS[opname](a.lower(), b.lower())
    if (isinstance(a, float) or isinstance(b, float)) and approx_equal(float(a), float(b)):
        return opname in ("=", "<=", ">=")
    return _CMPS[opname](a, b)  # (not equal to about 15 digits: not equal exactly)


def _rounded(fn: Callable[[float], int], x: Any) -> Any:
    """``fn(x)`` (math.ceil, math.floor) after Calc's 15-digit rounding; an int or a non-finite
    number stays as it is (the engine refuses the latter)."""
    return x if isinstance(x, int) or not math.isfinite(x) else fn(approx_value(x))


# Spreadsheet number semantics (LibreOffice 7.4, sal/rtl/math.cxx) -----------------------------
# 2^41: above it Calc leaves a value as it is (at most 11 fraction bits)
_APPROX_BIG = 2199023255552.0
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


def _round_array(np, fn, x):
    """``fn(approx_value(x))`` (fn = numpy.ceil or numpy.floor) over an array, cheaply.

    Rounding to 15 digits can only change the result of a value just past an integer (ceil: just
    above one, floor: just below), by under 5e-15 relative, and Calc leaves values above 2^41
    alone, so the distance to the integer is under 0.011 (or the value is below -2^41): two array
    passes find the candidates, and the few there are go through the scalar rule."""
    shape = np.shape(x)
    x = np.asarray(x, dtype=float).reshape(-1)  # a 0-d array (one value for every row) too
    out = fn(x)
    with np.errstate(all="ignore"):
        gap = (out - x) if fn is np.ceil else (x - out)
        cand = (gap > 0.989) | (x < -_APPROX_BIG)
        if cand.any():
            idx = np.flatnonzero(cand)
            sub = x[idx]
            pick = idx[np.abs(sub - np.rint(sub)) < np.abs(sub) * 1e-14]
            out[pick] = [fn(approx_value(float(v))) for v in x[pick]]
    return out.reshape(shape)


def _approx_compare(np, op: str, a, b):
    """``compare`` of numbers over arrays: the exact comparison, refined by the scalar rule on the
    rows where ``a`` and ``b`` differ by less than 2^-48 relative (rare: ``approx_equal`` holds
    nowhere else) and it could change the answer; against a scalar, the bound is one number
    (against a zero nothing is near, as ``approx_equal`` says)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    out = _CMPS[op](a, b)
    one = b if b.ndim == 0 else a if a.ndim == 0 else None
    if one is not None and one == 0:
        return out
    bound = np.abs(a) * _E48 if one is None else abs(float(one)) * _E48
    near = np.abs(a - b) < bound  # under evaluate_arrays's errstate
    flip = near & (out if op in ("<>", "<", ">") else ~out)  # approx_equal turns these over
    if flip.any():
        a, b = np.broadcast_arrays(a, b)
        out = np.array(out, dtype=bool)  # a boolean mask, not np.nonzero: 0-d arrays too
        out[flip] ^= [approx_equal(float(x), float(y)) for x, y in zip(a[flip], b[flip])]
    return out


def first_seen_codes(np, keys: Sequence[Any]) -> tuple[Any, list[Any]]:
    """Each key's place among the distinct keys (in order of first appearance), and those keys
    (a dict's work: no sort, which compares texts character by character)."""
    index = {k: j for j, k in enumerate(dict.fromkeys(keys))}
    return np.fromiter(map(index.__getitem__, keys), dtype=np.int64, count=len(keys)), list(index)


FEW_TEXTS = 8  # distinct texts found by comparison; past them, by a sort


def text_codes(np, a: Any) -> tuple[Any, list[str]]:
    """Each value's place among the distinct values of a 1-d text array, and those values: one
    array comparison per distinct value while they are few (gates, outcomes, dtypes), else a
    sort; no Python object per value."""
    codes = np.zeros(len(a), dtype=np.int64)
    todo = np.ones(len(a), dtype=bool)
    texts: list[str] = []
    at = 0
    while at < len(a) and len(texts) < FEW_TEXTS:
        same = a == a[at]
        codes[same] = len(texts)
        texts.append(str(a[at]))
        todo &= ~same
        at = int(todo.argmax()) if todo.any() else len(a)
    if at < len(a):
        distinct, codes = np.unique(a, return_inverse=True)
        return codes.reshape(-1), distinct.tolist()
    return codes, texts


def _is_float_array(np, x) -> bool:
    return isinstance(x, float) or (isinstance(x, np.ndarray) and x.dtype.kind == "f")


_INDEX: dict[int, tuple[Any, dict[str, Any]]] = {}


def _lookup(tables: Tables, table: str, key: Any, field: str, default: Any = None) -> Any:
    """``tables[table][key][field]``, the key matched case-insensitively (as MATCH does); a key the
    table lacks gives ``default`` when there is one."""
    t = tables[table]
    hit = _INDEX.get(id(t))
    if hit is None or hit[0] is not t:
        hit = _INDEX[id(t)] = (t, {name.lower(): rec for name, rec in t.items()})
    rec = hit[1].get(str(key).lower())
    if rec is None and default is None:
        raise KeyError(f"{key!r} is not in the {table} table")
    return default if rec is None else rec[field]


@dataclass(slots=True, eq=False)
class _A:
    """An array value with its blank mask: ``blank`` is False (no row blank) or a bool array."""

    v: Any
    blank: Any = False


def _or(np, a: Any, b: Any) -> Any:
    if a is False:
        return b
    if b is False:
        return a
    return np.logical_or(a, b)


def evaluate_arrays(
    reg: Registry,
    cols: Mapping[str, Any],
    tables: Tables,
    keys: list[str] | None = None,
    blanks: Mapping[str, Any] | None = None,
    evaluator: type[_ArrayEval] | None = None,
) -> dict[str, Any]:
    """``keys`` and what they refer to (or every quantity) for many rows at once; ``cols`` maps a
    column to an array or a scalar.

    Columns absent from ``cols`` (or ``None``) are blank for every row; ``blanks`` may give a bool
    array per column for rows where that column is blank (their values in ``cols`` are ignored).
    A result is an array (or scalar), ``None`` when blank for every row, or, when blank for some
    rows only, a numpy masked array whose mask marks the blank rows.  ``CONCAT`` (message text) is
    not evaluated here: its quantities are ``None``; the scalar interpreter gives them per row.
    """
    import numpy as np

    ev = (evaluator or _ArrayEval)(np, cols, tables, blanks or {})

    wanted = None if keys is None else closure(reg, tuple(keys))
    out: dict[str, Any] = {}
    # a division by zero or the like gives inf or NaN, as the rules expect
    with np.errstate(all="ignore"):
        for q in reg:
            if wanted is None or q.key in wanted:
                a = ev.env[q.key] = ev.quantity(q)
                out[q.key] = _result(np, a)
    return out


def _result(np, a: "_A | None") -> Any:
    if a is None or a.blank is True:
        return None
    if a.blank is False or not a.blank.any():  # (else an array, or numpy's bool)
        return a.v
    if a.blank.all():
        return None
    v, m = np.broadcast_arrays(np.asarray(a.v), np.asarray(a.blank))
    return np.ma.masked_array(v, mask=m)


# values of nodes an arrays evaluation keeps for reuse across quantities (~36 MiB: a float and a
# blank flag each); past them, the kept values are dropped before the next quantity
KEPT_VALUES = 2**22


class _ArrayEval:
    """Interpreter 1b: each expression, compiled once into closures (``array_compiled``), gives an
    ``_A`` (or ``None``: blank in every row) over the evaluation's columns; the closures call the
    methods below for the work on arrays, so a subclass (``masked._Guarded``) changes them."""

    def __init__(
        self, np, cols: Mapping[str, Any], tables: Tables, blanks: Mapping[str, Any]
    ) -> None:
        self.np, self.cols, self.tables, self.blanks = np, cols, tables, blanks
        self.env: dict[str, Any] = {}
        self._cols: dict[str, Any] = {}  # column -> its _A (or None), made once per evaluation
        self.done: dict[Callable, Any] = {}  # a node's closure -> its _A (or None): ``_once``
        self.rows = max((np.size(v) for v in cols.values()), default=1)
        # id(array) -> (array, lowered, (distinct, inverse))
        self._lowered: dict[int, tuple[Any, Any, Any]] = {}

    def quantity(self, q: Any) -> "_A | None":
        """The value of quantity ``q`` over the rows."""
        if len(self.done) * self.rows > KEPT_VALUES:
            self.done.clear()
        return array_compiled(q.expr)(self)

    def lowered(self, v: Any) -> tuple[Any, tuple[Any, Any]]:
        """``numpy.char.lower`` of a text array and the distinct lowered values with their inverse;
        each array is lowered once per evaluation, through its distinct values (columns such as
        gpu or framework are compared and looked up many times)."""
        np = self.np
        hit = self._lowered.get(id(v))
        if hit is not None and hit[0] is v:
            return hit[1], hit[2]
        a = np.asarray(v, dtype=str)
        codes, texts = text_codes(np, a.ravel())
        lowered = np.char.lower(np.array(texts, dtype=a.dtype))  # may widen: lower can be longer
        low_codes, low_texts = first_seen_codes(np, lowered.tolist())
        inverse = low_codes[codes]
        distinct = np.array(low_texts, dtype=lowered.dtype)
        low = distinct[inverse].reshape(a.shape)
        self._lowered[id(v)] = (v, low, (distinct, inverse))
        return low, (distinct, inverse)

    def col(self, name: str) -> "_A | None":
        """Column ``name`` as an ``_A`` (``None``: blank on every row), made once an evaluation."""
        if name in self._cols:
            return self._cols[name]
        v, b = self.cols.get(name), self.blanks.get(name, False)
        if b is not False and not b.any():  # (a bool array)
            b = False
        all_blank = v is None or (b is not False and b.all())
        a = self._cols[name] = None if all_blank else _A(v, b)
        return a

    def _pick(self, cv, cblank, t, o):
        np = self.np
        cond = np.asarray(cv, dtype=bool)
        if t is None:  # blank where the condition holds
            return _A(o.v, _or(np, cblank, _or(np, cond, o.blank)))
        if o is None:
            return _A(t.v, _or(np, cblank, _or(np, np.logical_not(cond), t.blank)))
        v = np.where(cond, t.v, o.v)
        if t.blank is False and o.blank is False:
            return _A(v, cblank)
        return _A(v, _or(np, cblank, np.where(cond, t.blank, o.blank)))

    def _binop(self, op: str, a: "_A", b: "_A") -> "_A":
        np = self.np  # under evaluate_arrays's errstate
        v = np.true_divide(a.v, b.v) if op == "/" else _BINOPS[op](a.v, b.v)
        return _A(v, _or(np, a.blank, b.blank))

    def _cmp(self, op: str, a: "_A", b: "_A") -> "_A":
        np = self.np
        av, bv = a.v, b.v
        blank = _or(np, a.blank, b.blank)
        rows, one = (av, bv) if isinstance(bv, str) else (bv, av)
        text_rows = isinstance(rows, np.ndarray) and rows.dtype.kind == "U" and rows.ndim
        if op in ("=", "<>") and isinstance(one, str) and text_rows:
            # a text array against one text, case-insensitively: compared once for each distinct
            # value (``lowered``) and taken to the rows
            low, (distinct, inverse) = self.lowered(rows)
            on_rows = (distinct == one.lower())[inverse].reshape(low.shape)
            return _A(on_rows if op == "=" else ~on_rows, blank)
        if _is_text(np, av):
            av = self.lowered(av)[0] if not isinstance(av, str) else av.lower()
        if _is_text(np, bv):
            bv = self.lowered(bv)[0] if not isinstance(bv, str) else bv.lower()
        if not (_is_float_array(np, av) or _is_float_array(np, bv)):
            return _A(_CMPS[op](av, bv), blank)
        return _A(_approx_compare(np, op, av, bv), blank)

    def _lookup_key(self, e, k):
        np = self.np
        if k is None:
            return None
        if isinstance(k.v, str):
            return _A(_lookup(self.tables, e.table, k.v, e.field, e.default), k.blank)
        names = {n.lower(): rec[e.field] for n, rec in self.tables[e.table].items()}
        low, (uniq, inv) = self.lowered(k.v)
        blank = k.blank
        missing = [u for u in uniq if u not in names]
        if e.default is not None:
            names.update({u: e.default for u in missing})
        elif missing:  # keys of blank rows (or rows the reader refused) have no entry: blank there
            blank = _or(np, blank, np.isin(low, missing))
        fill = "" if isinstance(next(iter(names.values())), str) else 0
        vals = np.array([names.get(u, fill) for u in uniq])
        return _A(vals[inv].reshape(np.shape(k.v)), blank)

    def _call(self, fn: str, args: list) -> "_A":
        np = self.np
        blank = functools.reduce(functools.partial(_or, np), [a.blank for a in args], False)
        xs = [a.v for a in args]
        if fn in _FOLDS:  # MOD too: its two arguments
            out = functools.reduce(getattr(np, _FOLDS[fn]), xs)
        elif fn in ("CEIL", "FLOOR"):
            f = np.ceil if fn == "CEIL" else np.floor
            out = _round_array(np, f, xs[0]) if _is_float_array(np, xs[0]) else f(xs[0])
        elif fn == "GCD":
            out = np.gcd(*[np.rint(x).astype(np.int64) for x in xs]).astype(float)
        elif fn == "MINDIV":
            vals, none = _mindiv_array(np, xs)
            return _A(vals, _or(np, blank, none))
        elif fn == "NOT":
            out = np.logical_not(xs[0])
        else:
            raise ValueError(fn)
        return _A(out, blank)


_FOLDS = dict(MAX="maximum", MIN="minimum", AND="logical_and", OR="logical_or", MOD="mod")


@functools.cache  # as compiled
def array_compiled(e: Expr) -> Callable[[_ArrayEval], "_A | None"]:
    """The expression as nested closures over an arrays evaluation, built once per node (nodes
    are immutable): evaluating a chunk of rows is then calls, not a walk of the tree.

    Nodes of the same structure (``structure``) share one closure, which evaluates them once per
    evaluation: the registry repeats subtrees (a quantity's expression written into several
    others), and two in three node evaluations would be repeats."""
    if type(e) in (Const, Col, Ref):  # cheaper to evaluate than to look up
        return _ArrayClosures().visit(e)
    number = structure(e)
    shared = _BY_STRUCTURE.get(number)
    if shared is None:
        shared = _BY_STRUCTURE[number] = _once(_ArrayClosures().visit(e))
    return shared


_BY_STRUCTURE: dict[int, Callable[[_ArrayEval], "_A | None"]] = {}


def _once(node: Callable[[_ArrayEval], "_A | None"]) -> Callable[[_ArrayEval], "_A | None"]:
    """``node``, evaluated at most once per evaluation (its value kept in ``ev.done``)."""

    def once(ev):
        a = ev.done.get(once, _NOT_YET)
        if a is _NOT_YET:
            a = ev.done[once] = node(ev)
        return a

    return once


_NOT_YET = object()


_BLANK_ROWS = _A(True)  # ISBLANK of what is blank on every row


class _ArrayClosures(Visitor):
    """Each node becomes a closure over an ``_ArrayEval``, giving an ``_A`` or ``None``."""

    def visit_Const(self, e):
        a = _A(e.value)  # never changed: shared by every evaluation
        return lambda ev: a

    def visit_Col(self, e):
        name = e.name
        return lambda ev: ev.col(name)

    def visit_Ref(self, e):
        key = e.key
        return lambda ev: ev.env[key]

    def visit_IsBlank(self, e):
        x_ = array_compiled(e.x)

        def is_blank(ev):
            x = x_(ev)
            return _BLANK_ROWS if x is None else _A(x.blank)

        return is_blank

    def visit_If(self, e):
        c_, t_, o_ = array_compiled(e.cond), array_compiled(e.then), array_compiled(e.other)

        def if_(ev):
            c = c_(ev)
            if c is None:
                return None
            cv = c.v
            if isinstance(cv, (bool, ev.np.bool_)) and c.blank is False:
                return t_(ev) if cv else o_(ev)
            t, o = t_(ev), o_(ev)
            return None if t is None and o is None else ev._pick(cv, c.blank, t, o)

        return if_

    def visit_BinOp(self, e):
        """Both operands evaluated, then the evaluation's ``_binop(op, a, b)`` (``_cmp`` for a
        comparison); None (not evaluated over arrays) where either operand is."""
        a_, b_, op = array_compiled(e.a), array_compiled(e.b), e.op
        method = "_binop" if e.op in _BINOPS else "_cmp"

        def both(ev):
            a, b = a_(ev), b_(ev)
            return None if a is None or b is None else getattr(ev, method)(op, a, b)

        return both

    visit_Cmp = visit_BinOp

    def visit_Lookup(self, e):
        k_ = array_compiled(e.key)
        return lambda ev: ev._lookup_key(e, k_(ev))

    def visit_Call(self, e):
        if e.fn in TEXT_FUNCTIONS:  # the scalar interpreter's, per row
            return lambda ev: None
        args_, fn = [array_compiled(a) for a in e.args], e.fn

        def call(ev):
            args = [a(ev) for a in args_]
            return None if any(a is None for a in args) else ev._call(fn, args)

        return call


def _mindiv_array(np, xs: list) -> tuple[Any, Any]:
    """``smallest_divisor_at_least`` on each row (0 where there is none) and where there is none:
    the arguments rounded as it rounds them (whole n and step, at_least up after ``approx_value``),
    then for each distinct (n, step) its divisors searched for its rows' at_least at once."""
    with np.errstate(all="ignore"):
        n, lo, k = np.broadcast_arrays(
            np.rint(np.asarray(xs[0], dtype=float)),
            _round_array(np, np.ceil, xs[1]),
            np.rint(np.asarray(xs[2], dtype=float)),
        )
    shape, n, lo, k = n.shape, n.ravel(), np.maximum(lo.ravel(), 1.0), np.maximum(k.ravel(), 1.0)
    vals = np.zeros(n.shape)
    rows = np.flatnonzero(np.isfinite(n) & np.isfinite(lo) & np.isfinite(k) & (n >= 1))
    ns, n_at = np.unique(n[rows], return_inverse=True)
    ks, k_at = np.unique(k[rows], return_inverse=True)
    # one code per (n, step)
    codes, inverse = np.unique(n_at.ravel() * len(ks) + k_at.ravel(), return_inverse=True)
    order = np.argsort(inverse.ravel(), kind="stable")
    groups = np.split(rows[order], np.cumsum(np.bincount(inverse.ravel()))[:-1])
    for nj, kj, at in zip(ns[codes // len(ks)].tolist(), ks[codes % len(ks)].tolist(), groups):
        candidates = np.array(stepped_divisors(int(nj), int(kj)) + [0], dtype=float)
        vals[at] = candidates[np.searchsorted(candidates[:-1], lo[at])]  # the 0: none at least lo
    vals, none = vals.reshape(shape), (vals == 0).reshape(shape)
    return (vals if vals.ndim else vals[()]), (none if none.ndim else bool(none))


def _is_text(np, x) -> bool:
    return isinstance(x, str) or (isinstance(x, np.ndarray) and x.dtype.kind in "USO")


@functools.cache  # a registry is hashed by identity
def closure(reg: Registry, keys: tuple[str, ...]) -> frozenset:
    """The keys and every quantity they refer to, through references."""
    out: set[str] = set()
    stack = list(keys)
    while stack:
        k = stack.pop()
        if k not in out:
            out.add(k)
            stack.extend(all_refs(reg[k].expr))
    return frozenset(out)


@functools.cache  # a registry is hashed by identity
def columns_read(reg: Registry, keys: tuple[str, ...]) -> frozenset:
    """The input columns the quantities ``keys`` read, through the quantities they refer to."""
    return frozenset().union(*(all_cols(reg[k].expr) for k in closure(reg, keys)))
