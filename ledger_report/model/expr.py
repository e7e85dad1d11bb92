"""A small expression tree: each ledger quantity is written once, as one of these.

Interpreters walk it: ``evaluate.py`` (Python values for one row, numpy arrays for many; the
arrays one guarded in ``masked.py``), ``formula.py`` (a spreadsheet formula) and ``text.py`` (the
handout's filled-in formula text, the documentation's symbolic one).  Keep the node types few:
inputs, references to earlier quantities, constants, lookups, arithmetic, comparisons, a
conditional, a blank test, and a few functions.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterator

PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}  # of the arithmetic operators, as written out
# functions that make text: the arrays interpreter leaves them (and their readers) to the scalar one
TEXT_FUNCTIONS = frozenset({"CONCAT", "FMT", "MID"})


def _arith(op: str) -> tuple[Callable[[Expr, Any], Expr], Callable[[Expr, Any], Expr]]:
    """The operator's method and its reflected one (``2 * x`` as well as ``x * 2``)."""
    return (lambda self, o: BinOp(op, self, lift(o))), (lambda self, o: BinOp(op, lift(o), self))


def _compare(op: str) -> Callable[[Expr, Any], Expr]:
    return lambda self, o: Cmp(op, self, lift(o))


class Expr:
    """Base node.  Python operators build arithmetic; methods build comparisons."""

    __slots__ = ()
    operands: tuple[str, ...] = ()  # the fields that hold child nodes (``children``)

    # arithmetic by Python's operators; comparisons by methods (== must stay usable on nodes)
    __add__, __radd__ = _arith("+")
    __sub__, __rsub__ = _arith("-")
    __mul__, __rmul__ = _arith("*")
    __truediv__, __rtruediv__ = _arith("/")
    eq, ne, lt, le, gt, ge = (_compare(op) for op in ("=", "<>", "<", "<=", ">", ">="))


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: Any  # int, float, str or bool


@dataclass(frozen=True, eq=False)
class Col(Expr):
    """A raw input column of the row (``None`` when the cell is empty)."""

    name: str


@dataclass(frozen=True, eq=False)
class Ref(Expr):
    """A reference to an earlier defined quantity, by key."""

    key: str


@dataclass(frozen=True, eq=False)
class Lookup(Expr):
    """``table[key][field]`` from a lookup table (dtype widths, optimizers, GPU catalogue); with a
    ``default``, a key the table does not hold gives it (the spreadsheet's IFERROR)."""

    table: str
    key: Expr
    field: str
    default: Any = None
    operands = ("key",)


@dataclass(frozen=True, eq=False)
class BinOp(Expr):
    op: str  # + - * /
    a: Expr
    b: Expr
    operands = ("a", "b")


@dataclass(frozen=True, eq=False)
class Cmp(Expr):
    op: str  # = <> < <= > >=
    a: Expr
    b: Expr
    operands = ("a", "b")


@dataclass(frozen=True, eq=False)
class If(Expr):
    cond: Expr
    then: Expr
    other: Expr
    operands = ("cond", "then", "other")


@dataclass(frozen=True, eq=False)
class IsBlank(Expr):
    """True when the referenced input or quantity has no value (an empty cell / ``None``)."""

    x: Expr
    operands = ("x",)


@dataclass(frozen=True, eq=False)
class Call(Expr):
    fn: str  # MAX, MIN, CEIL, FLOOR, MOD, AND, OR, NOT, CONCAT, FMT, MID, GCD, MINDIV
    args: tuple[Expr, ...]


def lift(x: Any) -> Expr:
    return x if isinstance(x, Expr) else Const(x)


def _function(name: str) -> Callable[..., Expr]:
    """The builder of a call to ``name``, its arguments lifted to nodes: ``maximum(x, 1)``."""
    return lambda *args: Call(name, tuple(lift(a) for a in args))


maximum, minimum, ceil, floor, gcd = map(_function, ("MAX", "MIN", "CEIL", "FLOOR", "GCD"))
all_of, any_of, negate = map(_function, ("AND", "OR", "NOT"))
# mod(x, y): the remainder of x ÷ y, with the sign of y (spreadsheet MOD, Python %).
# smallest_divisor(n, at_least, step): the smallest d ≥ at_least that divides n and is a multiple
# of step; blank when there is none (the buildable data-parallel sizes of a batch).
# concat(*parts): text joined from parts; a blank part is empty text, a number written plainly.
mod, smallest_divisor, concat = map(_function, ("MOD", "MINDIV", "CONCAT"))


def nearest(x: Any) -> Expr:
    """Round a parameter count to the nearest whole parameter (half up): FLOOR(x + 0.5)."""
    return Call("FLOOR", (lift(x) + 0.5,))


def divides(d: Any, n: Any) -> Expr:
    return mod(n, d).eq(0)


# The largest n whose smallest divisor every interpreter finds exactly, the workbook's formula
# included: it walks k = 1..isqrt(n) (each k with n/k its pair) and ROW(INDIRECT(...)) counts at
# most a sheet's 1,048,576 rows.  A rule (constraints.py, batch_slots_bounded) refuses larger n.
MINDIV_MAX = 1_048_576**2


def grouped(x: Any, decimals: int = 0) -> Expr:
    """A number as text with thousands separators and ``decimals`` places (8,000,000,000), for
    messages and notes; the spreadsheet writes it with TEXT(x, "#,##0.0…")."""
    return Call("FMT", (lift(x), Const(decimals)))


def drop_first(text: Any, n: int) -> Expr:
    """Text without its first ``n`` characters (spreadsheet MID(text, n + 1, …))."""
    return Call("MID", (lift(text), Const(n + 1), Const(10_000)))


def sig_text(x: Any) -> Expr:
    """A positive number as text to three significant figures from 0.001 up, grouped above 100:
    "1,234", "92.8", "1.50", "0.0869", "0.00683" (below 0.001, five decimals)."""
    x = lift(x)
    e = grouped(x, 5)
    for at_least, decimals in ((0.01, 4), (0.1, 3), (1, 2), (10, 1), (100, 0)):
        e = if_(x.ge(at_least), grouped(x, decimals), e)
    return e


def gb_text(x: Any) -> Expr:
    """Bytes as the reports print them: "85.6 GB", "0.29 GB", "90.0 TB" (GB = 10^9 bytes)."""
    x = lift(x)
    gb = x / 10**9
    gb_words = if_(gb.ge(10), concat(grouped(gb, 1), " GB"), concat(grouped(gb, 2), " GB"))
    return if_(x.ge(10**12), concat(grouped(x / 10**12, 1), " TB"), gb_words)


def if_(cond: Any, then: Any, other: Any) -> Expr:
    return If(lift(cond), lift(then), lift(other))


def total_of(terms: list) -> Expr:
    """The sum of the terms, left to right (no leading zero)."""
    return functools.reduce(operator.add, terms[1:], lift(terms[0]))


def default(col: str, value: Any) -> Expr:
    """The input column, or ``value`` (a constant or an expression) when the cell is empty."""
    return If(IsBlank(Col(col)), lift(value), Col(col))


class Visitor:
    """Dispatch on the node type: ``visit(e)`` calls ``visit_<NodeType>(e)``.  Each interpreter is
    one visitor; a node type it does not handle is an error, not a silent default."""

    def visit(self, e: Expr) -> Any:
        return getattr(self, "visit_" + type(e).__name__)(e)


def children(e: Expr) -> tuple[Expr, ...]:
    """The operands of a node, in field order (a call's arguments, a lookup's key)."""
    return e.args if isinstance(e, Call) else tuple(getattr(e, f) for f in e.operands)


def walk(e: Expr) -> Iterator[Expr]:
    """Every node of the tree under ``e``, ``e`` first."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(children(n))


def all_refs(e: Expr) -> set[str]:
    return {n.key for n in walk(e) if isinstance(n, Ref)}


def all_cols(e: Expr) -> set[str]:
    return {n.name for n in walk(e) if isinstance(n, Col)}


_STRUCTURES: dict[tuple, int] = {}


@functools.cache  # a node is hashed by identity (and kept alive here)
def structure(e: Expr) -> int:
    """A number the nodes of the same structure share (their type, fields and operands), whichever
    objects they are: subtrees that a registry repeats."""
    key = (type(e), *(_field_key(getattr(e, f.name)) for f in dataclasses.fields(e)))
    return _STRUCTURES.setdefault(key, len(_STRUCTURES))


def _field_key(v: Any) -> Any:
    if isinstance(v, Expr):
        return structure(v)
    if isinstance(v, tuple):  # a call's arguments
        return tuple(map(structure, v))
    return (type(v), repr(v))  # a constant: 1, 1.0 and True apart, and 0.0 and -0.0
