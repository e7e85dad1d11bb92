"""The registry: every quantity, defined once, in evaluation order.

A ``Quantity`` is a key, an expression (``expr.py``), a unit, labels in English and Chinese, the
section of the model it belongs to, and the source the definition follows; a ``Constraint`` is a
rule that makes a row invalid (or, as a warning, questionable).  The definitions
(``definitions/``) fill one ``Registry``; the engine, input validation, the planner, the workbook,
the handout and the documentation all read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from .expr import Call, Col, Const, Expr, If, IsBlank, Ref, all_refs, children, lift

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
NODE_HOURS = "node-hours"
MONEY = "cost"
GBPS = "GB/s"
TB = "TB"

INT_UNITS = frozenset({BYTES, PARAMS, COUNT, TOKENS})
FLOAT_UNITS = frozenset(
    {FLOPS, SECONDS, DAYS, BPP, RATIO, TOKENS_PER_S, TFLOPS, GB, HOURS, NODE_HOURS, MONEY, GBPS, TB}
)

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Quantity:
    key: str
    expr: Expr
    unit: str
    en: str
    zh: str
    source: str = ""
    section: str = ""
    nullable: bool = False  # may be blank (None) for some rows
    needs: frozenset = field(default_factory=frozenset)  # ("col", name) / ("ref", key) guards


@dataclass(frozen=True)
class Constraint:
    """A rule on a row.  ``ok`` is the key of a BOOL quantity, true (or blank: not applicable)
    when the rule holds; ``column`` is the input the message names; ``expected`` and ``found``
    are text expressions of the message, with the row's numbers in them (input validation, the
    workbook's check cells and the planner's masks all read them)."""

    key: str
    ok: str
    column: str
    expected: Expr
    found: Expr
    severity: str = ERROR
    en: str = ""  # the rule in words, for the documentation
    zh: str = ""
    # about the row's own figures, not its layout: the planner does not search around it
    row_only: bool = False

    @property
    def message(self) -> str:
        """The key of the TEXT quantity that words the rule where the row breaks it (else empty):
        "column: expected ..., found ..." (model/definitions/verdicts.py)."""
        return f"message_{self.key}"


class Registry:
    def __init__(self) -> None:
        self._q: dict[str, Quantity] = {}
        self.constraints: list[Constraint] = []
        self.section = ""

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
        nullable = _maybe_blank(self, e)
        needs = needs_of(self, e)
        self._q[key] = Quantity(key, e, unit, en, zh, source, self.section, nullable, needs)
        return Ref(key)

    def constraint(self, key, ok, column, expected, found, *, source="", **rule) -> Ref:
        """A rule: ``ok`` true when it holds.  Defined as the quantity ``ok_<key>``; ``rule``: the
        :class:`Constraint`'s severity, words (``en``, ``zh``) and ``row_only``."""
        c = Constraint(key, f"ok_{key}", column, lift(expected), lift(found), **rule)
        ref = self.define(c.ok, ok, BOOL, c.en or key, c.zh or c.en or key, source)
        self.constraints.append(c)
        return ref


def tag(x: Expr):
    if isinstance(x, Col):
        return ("col", x.name)
    if isinstance(x, Ref):
        return ("ref", x.key)
    return None


def strict_operands(e: Expr) -> tuple[Expr, ...]:
    """The operands whose blank makes ``e`` blank: none for a blank test or a text (a blank part
    is empty text); a conditional's branches are the callers' business."""
    if isinstance(e, IsBlank) or (isinstance(e, Call) and e.fn == "CONCAT"):
        return ()
    return children(e)


def else_known(e: If) -> frozenset:
    """What the else branch of ``e`` may take as not blank: ``If(IsBlank(x), a, b)`` evaluates b
    where x is not blank."""
    return frozenset({tag(e.cond.x)}) if isinstance(e.cond, IsBlank) else frozenset()


def _maybe_blank(reg: Registry, e: Expr, known: frozenset = frozenset()) -> bool:
    """Whether an expression may evaluate to blank, given the inputs known not to be blank."""
    if isinstance(e, (Col, Ref)):
        return tag(e) not in known and (isinstance(e, Col) or reg[e.key].nullable)
    if isinstance(e, Call) and e.fn == "MINDIV":
        return True  # no divisor qualifies
    if isinstance(e, If):
        other = _maybe_blank(reg, e.other, known | else_known(e))
        return _maybe_blank(reg, e.cond, known) or _maybe_blank(reg, e.then, known) or other
    return any(_maybe_blank(reg, c, known) for c in strict_operands(e))


def needs_of(reg: "Registry", e: Expr, _memo: dict | None = None) -> frozenset:
    """Blank-able inputs (``("col", name)``) and quantities (``("ref", key)``) that ``e`` evaluates
    unconditionally: if any is blank, ``e`` is blank.  The one blank rule: the registry stores it
    per definition (``Quantity.needs``) and the spreadsheet interpreter applies it to branches."""
    memo = {} if _memo is None else _memo
    got = memo.get(id(e))
    if got is not None:
        return got
    if isinstance(e, Col) or (isinstance(e, Ref) and reg[e.key].nullable):
        got = frozenset({tag(e)})
    elif isinstance(e, If):
        then, other = needs_of(reg, e.then, memo), needs_of(reg, e.other, memo) - else_known(e)
        got = needs_of(reg, e.cond, memo) | (then & other)
    else:
        got = frozenset().union(*(needs_of(reg, c, memo) for c in strict_operands(e)))
    memo[id(e)] = got
    return got


def choices(reg: Registry, key: str, columns: Any = None) -> tuple[str, ...] | None:
    """The values a text quantity can take, where its expression names them all (constants picked
    by conditions, other such quantities, an input column of ``columns``: name -> its choices), in
    the order the expression gives them; None where it composes text (a sentence, a number)."""
    out = _choices(reg, columns or {}, reg[key].expr)
    return tuple(dict.fromkeys(out)) if out is not None else None


def _choices(reg: Registry, columns: Any, e: Expr) -> list | None:
    if isinstance(e, Const):
        return [e.value] if isinstance(e.value, str) else None
    if isinstance(e, Col):
        got = columns.get(e.name)
        return list(got) if got else None
    if isinstance(e, Ref):
        return _choices(reg, columns, reg[e.key].expr)
    if isinstance(e, If):
        then, other = _choices(reg, columns, e.then), _choices(reg, columns, e.other)
        return then + other if then is not None and other is not None else None
    return None
