"""Interpreter 3: a definition as text, for the handout and the documentation.

With a row's values (the handout): ``12 B × 4.01 B params ÷ 5 = 9.63 GB`` — each referenced
quantity replaced by its value and unit, the taken branch of each conditional only, terms that are
zero left out of a sum, and the integer rounding left out (it moves a figure by less than one byte).

Without values (the documentation, :func:`symbolic`): ``m_bytes_per_param × dense_params_on_rank ÷
m_dense_shard_group`` — each quantity by its key, every branch of a conditional as ``if(c, a, b)``.
"""

from __future__ import annotations

from typing import Any, Mapping

from . import registry as R
from . import units
from .evaluate import eval_scalar
from .expr import PRECEDENCE, TEXT_FUNCTIONS, BinOp, Call, Const, Expr, Visitor
from .tables import tables

_OPS = {"+": " + ", "-": " − ", "*": " × ", "/": " ÷ "}
_CMP = {"=": " = ", "<>": " ≠ ", "<": " < ", "<=": " ≤ ", ">": " > ", ">=": " ≥ "}


# unit -> how a value in it is written, and the word after it in English and in Chinese; a unit
# not here is a plain number (counts, tokens, ratios, costs)
_SHOWN = {
    R.BYTES: (units.gb, "", ""),
    R.FLOPS: (units.sci, " FLOPs", " FLOPs"),
    R.BPP: (units.num, " B", " B"),
    R.SECONDS: (units.num, " s", " s"),
    R.DAYS: (units.num, " days", " 天"),
    R.GB: (units.num, " GB", " GB"),
    R.HOURS: (units.num, " GPU-h", " GPU 小时"),
}


def fmt_value(v: Any, unit: str, lang: str = "en") -> str:
    """A value with its unit, as the handout prints it (same digits in every language)."""
    if v is None:
        return "—"
    if unit == R.PARAMS:
        return units.params(v, lang)
    if unit in (R.BOOL, R.TEXT):
        return str(v)
    write, en, zh = _SHOWN.get(unit, (units.num, "", ""))
    return write(v) + (en if lang == "en" else zh)


def render(
    reg: R.Registry,
    key: str,
    values: Mapping[str, Any],
    lang: str = "en",
    expand: frozenset = frozenset(),
) -> str:
    """``<expression with numbers> = <value>`` for one quantity."""
    q = reg[key]
    body = _Filled(reg, values, lang, expand).text(q.expr, 0)
    result = fmt_value(values.get(key), q.unit, lang)
    if q.unit == R.MONEY and values.get(key) is not None and values.get("currency"):
        result += f" {values['currency']}"  # a cost says its currency, here too
    return f"{body} = {result}"


def symbolic(reg: R.Registry, key: str) -> str:
    """The definition of one quantity, each input and quantity by its name."""
    return _Symbolic().text(reg[key].expr, 0)


def _flatten_sum(e: Expr) -> list[Expr]:
    return _flatten_sum(e.a) + _flatten_sum(e.b) if isinstance(e, BinOp) and e.op == "+" else [e]


def _const_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int) and v >= 1000 and str(v).rstrip("0") == "1":
        return f"10^{len(str(v)) - 1}"
    if isinstance(v, (int, float)):
        return units.num(v)
    return f'"{v}"'


_CALL_NAMES = {"MINDIV": "smallest_divisor", "GCD": "gcd"}


def _unround(e: Call) -> Expr:
    arg = e.args[0]
    if isinstance(arg, BinOp) and arg.op == "+" and isinstance(arg.b, Const) and arg.b.value == 0.5:
        return arg.a  # nearest(): rounding to a whole parameter is left out of the text
    return arg


class _Text(Visitor):
    """What both text interpreters share: operators, precedence and function calls."""

    def text(self, e: Expr, prec: int) -> str:
        self.prec = prec
        return self.visit(e)

    def visit_BinOp(self, e):
        prec = self.prec
        p = PRECEDENCE[e.op]
        if e.op == "+":
            terms = self.terms(e)
            if not terms:
                return "0"
            s = " + ".join(self.text(t, p) for t in terms)
            return f"({s})" if prec > p and len(terms) > 1 else s
        s = self.text(e.a, p) + _OPS[e.op] + self.text(e.b, p + 1)
        return f"({s})" if prec > p else s

    def terms(self, e: Expr) -> list[Expr]:
        return _flatten_sum(e)

    def visit_Call(self, e):
        if e.fn in ("CEIL", "FLOOR") and self.drop_rounding:
            return self.text(_unround(e), self.prec)
        args = ", ".join(self.text(a, 0) for a in e.args)
        return f"{_CALL_NAMES.get(e.fn, e.fn.lower())}({args})"

    drop_rounding = True


class _Filled(_Text):
    def __init__(
        self, reg: R.Registry, values: Mapping[str, Any], lang: str, expand: frozenset
    ) -> None:
        self.reg, self.values, self.lang, self.expand = reg, values, lang, expand

    def eval(self, e: Expr) -> Any:
        """A sub-expression on the row's computed values, by the engine's own scalar interpreter."""
        return eval_scalar(e, self.values, self.values, tables())

    def visit_Const(self, e):
        return str(e.value) if isinstance(e.value, (bool, str)) else _const_text(e.value)

    def visit_Ref(self, e):
        if e.key in self.expand:
            return self.text(self.reg[e.key].expr, self.prec)
        return fmt_value(self.values.get(e.key), self.reg[e.key].unit, self.lang)

    def visit_Col(self, e):
        return str(e.name)

    def visit_Lookup(self, e):
        return units.num(self.eval(e)) + (" B" if e.field == "bytes" else "")

    def visit_If(self, e):
        return self.text(e.then if self.eval(e.cond) else e.other, self.prec)

    def terms(self, e: Expr) -> list[Expr]:
        return [t for t in _flatten_sum(e) if self.eval(t) not in (0, None)]

    def visit_Call(self, e):
        return str(self.eval(e)) if e.fn in TEXT_FUNCTIONS else super().visit_Call(e)

    def visit_Cmp(self, e):
        return str(self.eval(e))

    visit_IsBlank = visit_Cmp


class _Symbolic(_Text):
    drop_rounding = False

    def visit_Const(self, e):
        return _const_text(e.value)

    def visit_Ref(self, e):
        return e.key

    def visit_Col(self, e):
        return f"[{e.name}]"

    def visit_Lookup(self, e):
        return f"{e.table}[{self.text(e.key, 0)}].{e.field}"

    def visit_If(self, e):
        return f"if({self.text(e.cond, 0)}, {self.text(e.then, 0)}, {self.text(e.other, 0)})"

    def visit_Cmp(self, e):
        s = self.text(e.a, 3) + _CMP[e.op] + self.text(e.b, 3)
        return f"({s})" if self.prec > 0 else s

    def visit_IsBlank(self, e):
        return f"blank({self.text(e.x, 0)})"

    def visit_Call(self, e):
        if e.fn == "CONCAT":
            return " & ".join(self.text(a, 3) for a in e.args)
        return super().visit_Call(e)
