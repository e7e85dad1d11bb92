"""Interpreter 3: a definition as text with its numbers filled in, for the handout.

``12 B × 4.01 B params ÷ 5 = 9.63 GB``: the expression of one quantity, with each referenced
quantity replaced by its value and unit, the taken branch of each conditional only, and the
integer rounding left out (it moves a figure by less than one byte).
"""

from __future__ import annotations

from typing import Any, Mapping

from .expr import BinOp, Call, Cmp, Col, Const, Expr, If, IsBlank, Lookup, Ref
from .registry import BOOL, BPP, BYTES, COUNT, DAYS, FLOPS, GB, HOURS, MONEY, PARAMS, RATIO, SECONDS, TEXT, TOKENS, Registry
from . import units
from .evaluate import eval_scalar
from .tables import tables

_OPS = {"+": " + ", "-": " − ", "*": " × ", "/": " ÷ "}
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}


def fmt_value(v: Any, unit: str, lang: str = "en") -> str:
    """A value with its unit, as the handout prints it (same digits in every language)."""
    if v is None:
        return "—"
    if unit == BYTES:
        return units.gb(v)
    if unit == PARAMS:
        return units.params(v, lang)
    if unit == FLOPS:
        return units.sci(v) + (" FLOPs" if lang == "en" else " FLOPs")
    if unit == BPP:
        return units.num(v) + " B"
    if unit == SECONDS:
        return units.num(v) + " s"
    if unit == DAYS:
        return units.num(v) + (" days" if lang == "en" else " 天")
    if unit == GB:
        return units.num(v) + " GB"
    if unit == HOURS:
        return units.num(v) + (" GPU-h" if lang == "en" else " GPU 小时")
    if unit in (COUNT, TOKENS, MONEY):
        return units.num(v)
    if unit == RATIO:
        return units.num(v)
    if unit in (BOOL, TEXT):
        return str(v)
    return units.num(v)


def render(reg: Registry, key: str, values: Mapping[str, Any], lang: str = "en", expand: frozenset = frozenset()) -> str:
    """``<expression with numbers> = <value>`` for one quantity."""
    q = reg[key]
    body = _render(reg, q.expr, values, lang, expand, 0)
    return f"{body} = {fmt_value(values.get(key), q.unit, lang)}"


def _render(reg: Registry, e: Expr, values: Mapping[str, Any], lang: str, expand: frozenset, prec: int) -> str:
    if isinstance(e, Const):
        v = e.value
        if isinstance(v, int) and not isinstance(v, bool) and v >= 1000 and str(v).rstrip("0") == "1":
            return f"10^{len(str(v)) - 1}"
        return units.num(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)
    if isinstance(e, Ref):
        if e.key in expand:
            return _render(reg, reg[e.key].expr, values, lang, expand, prec)
        return fmt_value(values.get(e.key), reg[e.key].unit, lang)
    if isinstance(e, Col):
        return str(e.name)
    if isinstance(e, Lookup):
        v = _eval(reg, e, values)
        return units.num(v) + (" B" if e.field == "bytes" else "")
    if isinstance(e, If):
        c = _eval(reg, e.cond, values)
        branch = e.then if c else e.other
        return _render(reg, branch, values, lang, expand, prec)
    if isinstance(e, BinOp):
        p = _PREC[e.op]
        # leave out terms that are zero in a sum, for readability
        if e.op == "+":
            terms = [t for t in _flatten_sum(e) if _eval(reg, t, values) not in (0, None)]
            if not terms:
                return "0"
            s = " + ".join(_render(reg, t, values, lang, expand, p) for t in terms)
            return f"({s})" if prec > p and len(terms) > 1 else s
        left = _render(reg, e.a, values, lang, expand, p)
        right = _render(reg, e.b, values, lang, expand, p + 1)
        s = left + _OPS[e.op] + right
        return f"({s})" if prec > p else s
    if isinstance(e, Call):
        if e.fn in ("CEIL", "FLOOR"):
            arg = e.args[0]
            if isinstance(arg, BinOp) and arg.op == "+" and isinstance(arg.b, Const) and arg.b.value == 0.5:
                arg = arg.a  # nearest(): rounding to a whole parameter is left out of the text
            return _render(reg, arg, values, lang, expand, prec)
        args = ", ".join(_render(reg, a, values, lang, expand, 0) for a in e.args)
        return f"{e.fn.lower()}({args})"
    if isinstance(e, (Cmp, IsBlank)):
        return str(_eval(reg, e, values))
    return "?"


def _flatten_sum(e: Expr) -> list[Expr]:
    if isinstance(e, BinOp) and e.op == "+":
        return _flatten_sum(e.a) + _flatten_sum(e.b)
    return [e]


def _eval(reg: Registry, e: Expr, values: Mapping[str, Any]) -> Any:
    """A sub-expression on the row's computed values, by the engine's own scalar interpreter."""
    return eval_scalar(e, values, values, tables())
