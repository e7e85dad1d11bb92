"""The registry: every quantity, defined once, in evaluation order.

A ``Quantity`` is a key, an expression (``expr.py``), a unit, labels in English and Chinese,
and the source the definition follows.  ``definitions.py`` fills one ``Registry``; the engine,
the planner, the workbook and the handout all iterate it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from .expr import all_refs, BinOp, Call, Cmp, Col, Const, Expr, If, IsBlank, Lookup, Ref, lift

# Units.  Numbers are bytes, FLOPs, seconds... inside; formatting happens at the edge.
BYTES = "bytes"
PARAMS = "params"
FLOPS = "flops"
SECONDS = "s"
DAYS = "days"
COUNT = "count"
BPP = "B/param"
RATIO = "ratio"
BOOL = "bool"
TEXT = "text"
TOKENS = "tokens"
TOKENS_PER_S = "tokens/s"
TFLOPS = "TFLOP/s"
GB = "GB"
HOURS = "GPU-hours"
MONEY = "cost"
GBPS = "GB/s"

INT_UNITS = {BYTES, PARAMS, COUNT, TOKENS}


@dataclass(frozen=True)
class Quantity:
    key: str
    expr: Expr
    unit: str
    en: str
    zh: str
    source: str = ""
    nullable: bool = False  # may be blank (None) for some rows
    needs: frozenset = field(default_factory=frozenset)  # ("col", name) / ("ref", key) guards


class Registry:
    def __init__(self) -> None:
        self._q: dict[str, Quantity] = {}

    def __iter__(self) -> Iterator[Quantity]:
        return iter(self._q.values())

    def __len__(self) -> int:
        return len(self._q)

    def __getitem__(self, key: str) -> Quantity:
        return self._q[key]

    def __contains__(self, key: str) -> bool:
        return key in self._q

    def keys(self) -> list[str]:
        return list(self._q)

    def define(self, key: str, expr: Any, unit: str, en: str, zh: str, source: str = "") -> Ref:
        if key in self._q:
            raise ValueError(f"quantity {key!r} defined twice")
        e = lift(expr)
        for r in all_refs(e):
            if r not in self._q:
                raise ValueError(f"{key!r} refers to {r!r}, which is not defined before it")
        nullable = self._maybe_none(e, frozenset())
        needs = frozenset(self._needs(e))
        self._q[key] = Quantity(key, e, unit, en, zh, source, nullable, needs)
        return Ref(key)

    # blank analysis -------------------------------------------------------------------------
    def _maybe_none(self, e: Expr, known: frozenset) -> bool:
        if isinstance(e, Const) or isinstance(e, IsBlank):
            return False
        if isinstance(e, Col):
            return ("col", e.name) not in known
        if isinstance(e, Ref):
            return self._q[e.key].nullable and ("ref", e.key) not in known
        if isinstance(e, If):
            if isinstance(e.cond, IsBlank):
                x = tag(e.cond.x)
                return self._maybe_none(e.then, known) or self._maybe_none(
                    e.other, known | ({x} if x else frozenset())
                )
            return any(self._maybe_none(c, known) for c in (e.cond, e.then, e.other))
        if isinstance(e, (BinOp, Cmp)):
            return self._maybe_none(e.a, known) or self._maybe_none(e.b, known)
        if isinstance(e, Lookup):
            return self._maybe_none(e.key, known)
        if isinstance(e, Call):
            return any(self._maybe_none(a, known) for a in e.args)
        raise TypeError(e)

    def _needs(self, e: Expr) -> set:
        """Blank-able inputs and quantities evaluated unconditionally by ``e``."""
        return set(needs_of(self, e))


def tag(x: Expr):
    if isinstance(x, Col):
        return ("col", x.name)
    if isinstance(x, Ref):
        return ("ref", x.key)
    return None


def needs_of(reg: "Registry", e: Expr, _memo: dict | None = None) -> frozenset:
    """Blank-able inputs (``("col", name)``) and quantities (``("ref", key)``) that ``e`` evaluates
    unconditionally: if any is blank, ``e`` is blank.  The one blank rule: the registry stores it
    per definition (``Quantity.needs``) and the spreadsheet interpreter applies it to branches."""
    memo = {} if _memo is None else _memo
    got = memo.get(id(e))
    if got is not None:
        return got

    def n(x: Expr) -> frozenset:
        return needs_of(reg, x, memo)

    if isinstance(e, (Const, IsBlank)):
        out: frozenset = frozenset()
    elif isinstance(e, Col):
        out = frozenset({("col", e.name)})
    elif isinstance(e, Ref):
        out = frozenset({("ref", e.key)}) if reg[e.key].nullable else frozenset()
    elif isinstance(e, If):
        then, other = n(e.then), n(e.other)
        if isinstance(e.cond, IsBlank):
            other = other - {tag(e.cond.x)}
        out = n(e.cond) | (then & other)
    elif isinstance(e, (BinOp, Cmp)):
        out = n(e.a) | n(e.b)
    elif isinstance(e, Lookup):
        out = n(e.key)
    elif isinstance(e, Call):
        out = frozenset()
        for arg in e.args:
            out |= n(arg)
    else:
        raise TypeError(e)
    memo[id(e)] = out
    return out


