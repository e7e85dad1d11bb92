"""Interpreter 2: a quantity's expression as an Excel / LibreOffice formula.

Where things sit is the caller's business (a :class:`Layout`): an input column is a cell of the
row in ``Inputs``; an earlier quantity is a cell of the same row in the results sheet
(``Ledgers``); a lookup is ``INDEX(values, MATCH(key, keys, 0))`` into a lookup sheet.  Each
quantity becomes one :class:`Template` with row markers, generated once per column and filled per
row (or used as the master of a shared formula).

Blanks follow the Python interpreter exactly (``evaluate.py``): a blank input or quantity in
arithmetic, a comparison, a function or a lookup key makes the result blank, and ``If`` evaluates
only the branch it takes.  A spreadsheet would give ``#VALUE!`` (``""*2``) or silently ignore the
blank (``MAX(1,"")``, an empty cell read as 0), so every formula is guarded:

* ``IF(OR(a="",b=""),"",…)`` for the blank-able inputs and quantities the expression evaluates
  unconditionally (``Quantity.needs``);
* a branch of a conditional that is the formula's result is guarded on its own with whatever the
  outer guard does not already cover (``If(c, x*2, 0)`` with ``x`` blank gives ``""``, as Python
  gives ``None``);
* a conditional inside arithmetic or a function (``MAX(…, If(c, h*f, 0))``) cannot return ``""``
  into that arithmetic, so its branch's blank test is hoisted into the guard as
  ``IF(c, <then blank>, <else blank>)``, evaluated lazily like the conditional itself.

``CEIL``/``FLOOR`` are spelt ``CEILING(x,1)``/``FLOOR(x,1)``, which round negative numbers toward
+/- infinity as ``math.ceil``/``math.floor`` do (``ROUNDUP``/``ROUNDDOWN`` round away from / toward
zero); only functions LibreOffice 7.4 and Excel both evaluate are used (:data:`FUNCTIONS`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from .expr import MINDIV_MAX, PRECEDENCE, Const, Expr, If, Ref, Visitor
from .registry import Registry, else_known, needs_of, strict_operands, tag
from .units import SCI_FROM

# Row markers inside a template: the row of ``Inputs`` and the row of the results sheet.
INPUT_ROW = "\x01"
LEDGER_ROW = "\x02"

# Every function a generated formula may use (the workbook adds SUBSTITUTE for its selector).
# Each is in openpyxl.utils.FORMULAE (no _xlfn. prefix) and evaluated by LibreOffice 7.4.
FUNCTIONS = frozenset(
    "IF OR AND NOT MAX MIN CEILING FLOOR MOD TEXT MID INDEX MATCH IFERROR GCD SUMPRODUCT ROW "
    "INDIRECT INT SQRT".split()
)

_CALLS = frozenset({"MAX", "MIN", "AND", "OR", "NOT", "MOD", "MID", "GCD"})  # spelt as they are
_ROUNDING = {"CEIL": "CEILING", "FLOOR": "FLOOR"}  # to a whole number, toward +/- infinity
_CMP_PREC = 0
_ATOM = 9
_MAX_FORMULA_CHARS = 8192  # Excel's limit on a formula's length


class FormulaError(ValueError):
    """An expression that has no spreadsheet spelling (a programming error, not a user error)."""


@dataclass(frozen=True)
class Layout:
    """Where the inputs, the quantities and the lookup tables sit in the workbook."""

    inputs_sheet: str
    inputs: Mapping[str, str]  # input column name -> its column letter in the inputs sheet
    # registry key -> its column letter in the results sheet (the formula's own: no sheet prefix)
    quantities: Mapping[str, str]
    # (table, field) -> the range (or defined name) holding that field; (table, None) the keys'
    tables: Mapping[tuple[str, str | None], str]


@dataclass(frozen=True)
class Template:
    """A formula (without the leading ``=``) whose row numbers are markers."""

    key: str
    text: str

    def fill(self, input_row: int, ledger_row: int) -> str:
        return self.text.replace(INPUT_ROW, str(input_row)).replace(LEDGER_ROW, str(ledger_row))


# Literals ----------------------------------------------------------------------------------------


def number(v: Any) -> str:
    """A number as a formula literal: ``42``, ``0.05``, ``1.5E+22``, ``1E-05``; never ``1e9``,
    which the ``formulas`` parser rejects."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    f = float(v)
    if not math.isfinite(f):
        raise FormulaError(f"{v!r} has no spreadsheet spelling")
    if f.is_integer() and abs(f) < SCI_FROM:
        return str(int(f))
    text = repr(f)  # shortest text that reads back as the same double
    if "e" in text:
        mantissa, exp = text.split("e")
        text = f"{mantissa.removesuffix('.0')}E{int(exp):+03d}"
    return text


def string(s: str) -> str:
    """A string literal: in double quotes, with ``"`` doubled (formulas never hold user text)."""
    if len(s) > 255:
        raise FormulaError("string literals in formulas are limited to 255 characters")
    return '"' + s.replace('"', '""') + '"'


def _const(v: Any) -> tuple[str, int]:
    if isinstance(v, (bool, int, float)):
        text = number(v)
        return (f"({text})" if text.startswith("-") else text), _ATOM
    if isinstance(v, str):
        return string(v), _ATOM
    raise FormulaError(f"constant {v!r} has no spreadsheet spelling")


# Blank analysis (the registry's rule, registry.needs_of, for any sub-expression) -----------------


def _strict_ifs(e: Expr) -> Iterator[If]:
    """The outermost conditionals that ``e`` evaluates as operands (not through a branch; each
    part of a CONCAT is guarded on its own)."""
    if isinstance(e, If):
        yield e
    else:
        for c in strict_operands(e):
            yield from _strict_ifs(c)


# The compiler ------------------------------------------------------------------------------------


def _smallest_divisor_formula(n: str, lo: str, step: str) -> str:
    """SUMPRODUCT evaluates its argument as an array in Excel and LibreOffice without array entry.
    The divisors of n come in pairs (k, n/k) with k <= sqrt(n), so k walks 1..INT(SQRT(n)) (at
    most 1,048,576 rows for n <= MINDIV_MAX, however large n is below that); of the divisors that
    qualify, the largest (n + 1 - d) gives the smallest d; none gives blank, and so does an n
    past MINDIV_MAX (the row's rules refuse it first)."""
    n, lo, step = (a if _is_atom(a) else f"({a})" for a in (n, lo, step))
    k = f'ROW(INDIRECT("1:"&INT(SQRT({n}))))'
    divides = f"(MOD({n},{k})=0)"
    small = f"{divides}*({k}>={lo})*(MOD({k},{step})=0)*({n}+1-{k})"
    big = f"{divides}*({n}/{k}>={lo})*(MOD({n}/{k},{step})=0)*({n}+1-{n}/{k})"
    best = f"SUMPRODUCT(MAX({small},{big}))"
    return f'IFERROR(IF(OR({n}>{MINDIV_MAX},{best}=0),"",{n}+1-{best}),"")'


class _Compiler(Visitor):
    def __init__(self, reg: Registry, layout: Layout) -> None:
        self.reg, self.layout = reg, layout
        self._sheet = _quote_sheet(layout.inputs_sheet)
        self._needs: dict[int, frozenset] = {}
        self._key_index = {k: i for i, k in enumerate(reg.keys())}
        self._col_index = {c: i for i, c in enumerate(layout.inputs)}

    # references --------------------------------------------------------------------------
    def cell(self, tag) -> str:
        kind, name = tag
        if kind == "col" and name in self.layout.inputs:
            return f"{self._sheet}!{self.layout.inputs[name]}{INPUT_ROW}"
        if kind == "ref" and name in self.layout.quantities:
            return f"{self.layout.quantities[name]}{LEDGER_ROW}"
        what = "input column" if kind == "col" else "quantity"
        raise FormulaError(f"{what} {name!r} has no place in the layout")

    def _any_blank(self, tags: Iterable) -> str | None:
        """A test that any tag is blank, in a fixed order (inputs by sheet column, then quantities
        by registry order)."""
        keys, cols = self._key_index, self._col_index
        tags = sorted(tags, key=lambda t: (0, cols[t[1]]) if t[0] == "col" else (1, keys[t[1]]))
        return _any_of([f'{self.cell(t)}=""' for t in tags])

    # values: the plain translation, with its precedence (blanks are the guards' business) ----
    def visit_Const(self, e):
        return _const(e.value)

    def visit_Col(self, e):
        return self.cell(tag(e)), _ATOM

    visit_Ref = visit_Col

    def visit_Lookup(self, e):
        try:
            keys = self.layout.tables[(e.table, None)]
            vals = self.layout.tables[(e.table, e.field)]
        except KeyError:
            raise FormulaError(f"lookup {e.table}.{e.field} has no place in the layout") from None
        found = f"INDEX({vals},MATCH({self.visit(e.key)[0]},{keys},0))"
        if e.default is not None:
            return f"IFERROR({found},{_const(e.default)[0]})", _ATOM
        return found, _ATOM

    def _operator(self, e, a_from: int, b_from: int) -> str:
        """``a op b``, an operand bracketed where its precedence is below ``a_from``/``b_from``."""
        (a, pa), (b, pb) = self.visit(e.a), self.visit(e.b)
        a, b = (a if pa >= a_from else f"({a})"), (b if pb >= b_from else f"({b})")
        return f"{a}{e.op}{b}"

    def visit_BinOp(self, e):
        p = PRECEDENCE[e.op]
        # the tree's grouping exactly: a+(b+c) is not (a+b)+c in floating point
        return self._operator(e, p, p + 1), p

    def visit_Cmp(self, e):
        return self._operator(e, _CMP_PREC + 1, _CMP_PREC + 1), _CMP_PREC

    def visit_IsBlank(self, e):
        if tag(e.x) is None:
            raise FormulaError("a blank test applies to an input column or a quantity")
        return f'{self.visit(e.x)[0]}=""', _CMP_PREC

    def visit_If(self, e):
        c, t, o = (self.visit(x)[0] for x in (e.cond, e.then, e.other))
        return f"IF({c},{t},{o})", _ATOM

    def visit_Call(self, e):
        if e.fn == "CONCAT":
            # each part on its own guard: a blank part is empty text, as in Python
            parts = [self.result(a, frozenset()) for a in e.args]
            return "(" + "&".join(p if _is_atom(p) else f"({p})" for p in parts) + ")", _ATOM
        args = [self.visit(a)[0] for a in e.args]
        if e.fn == "MINDIV":
            return _smallest_divisor_formula(*args), _ATOM
        if e.fn == "FMT":
            places = int(e.args[1].value) if isinstance(e.args[1], Const) else 0
            pattern = "#,##0" + ("." + "0" * places if places else "")
            return f'TEXT({args[0]},"{pattern}")', _ATOM
        if e.fn in _ROUNDING:
            return f"{_ROUNDING[e.fn]}({args[0]},1)", _ATOM
        if e.fn not in _CALLS:
            raise FormulaError(f"function {e.fn} has no spreadsheet spelling")
        return f"{e.fn}({','.join(args)})", _ATOM

    # blank tests -------------------------------------------------------------------------
    def blank(self, e: Expr, covered: frozenset) -> str | None:
        """A formula that is TRUE when ``e`` evaluates to blank, safe to evaluate whenever the
        ``covered`` inputs and quantities are not blank; None when ``e`` cannot be blank then."""
        if isinstance(e, If):
            return self._if_blank(e, covered)
        return self._strict_blank(e, e, covered)[0]

    def _strict_blank(self, e: Expr, operands: Expr, covered: frozenset) -> tuple:
        """The blank test of what ``e`` evaluates unconditionally (its needs, and the conditionals
        among ``operands``), and what is covered once that test is FALSE."""
        atoms = needs_of(self.reg, e, self._needs) - covered
        inner = covered | atoms
        parts = [p for p in (self._if_blank(n, inner) for n in _strict_ifs(operands)) if p]
        return _either(self._any_blank(atoms), _any_of(parts)), inner

    def _if_blank(self, e: If, covered: frozenset) -> str | None:
        first = self.blank(e.cond, covered)
        inner = covered | needs_of(self.reg, e.cond, self._needs)
        then = self.blank(e.then, inner)
        other = self.blank(e.other, inner | else_known(e))
        if not (then or other):
            return first
        return _either(first, f"IF({self.visit(e.cond)[0]},{then or 'FALSE'},{other or 'FALSE'})")

    # the quantity's formula --------------------------------------------------------------
    def result(self, e: Expr, covered: frozenset) -> str:
        """``e`` as the formula's result: blank ("") exactly where Python gives None."""
        if isinstance(e, Ref):
            return self.visit(e)[0]  # a blank quantity's cell already holds ""
        if isinstance(e, If):
            guard, inner = self._strict_blank(e, e.cond, covered)
            then = self.result(e.then, inner)
            other = self.result(e.other, inner | else_known(e))
            return _guard(guard, f"IF({self.visit(e.cond)[0]},{then},{other})")
        return _guard(self.blank(e, covered), self.visit(e)[0])


def _either(a: str | None, b: str | None) -> str | None:
    """``a`` or else ``b``, with ``b`` evaluated only when ``a`` is FALSE."""
    return f"IF({a},TRUE,{b})" if a and b else a or b


def _any_of(parts: list[str]) -> str | None:
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else f"OR({','.join(parts)})"


def _guard(test: str | None, body: str) -> str:
    return body if test is None else f'IF({test},"",{body})'


def _is_atom(text: str) -> bool:
    return bool(re.fullmatch(r'[A-Za-z0-9_$!.\']+|"(?:[^"]|"")*"', text))


def _quote_sheet(name: str) -> str:
    plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name)
    if plain and not re.fullmatch(r"[A-Za-z]{1,3}[0-9]+", name):  # (not a cell's name)
        return name
    return "'" + name.replace("'", "''") + "'"


# Public entry points -----------------------------------------------------------------------------


def compile_expression(
    reg: Registry, e: Expr, layout: Layout, key: str = "", _c: _Compiler | None = None
) -> Template:
    """The formula template of an expression over the registry's quantities (a report cell that
    shows a quantity converted, worded or guarded), blank exactly where Python gives None."""
    text = (_c or _Compiler(reg, layout)).result(e, frozenset())
    if len(text) + 20 > _MAX_FORMULA_CHARS:
        raise FormulaError(
            f"the formula of {key or 'an expression'} is {len(text)} characters, over Excel's limit"
        )
    return Template(key, text)


def compile_registry(reg: Registry, layout: Layout) -> dict[str, Template]:
    c = _Compiler(reg, layout)
    return {q.key: compile_expression(reg, q.expr, layout, q.key, c) for q in reg}
