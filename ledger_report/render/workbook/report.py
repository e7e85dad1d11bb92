"""The report sheets' shared core: display formulas over a configuration's Ledgers row, and units
as the workbook shows them (number formats, unit words)."""

from __future__ import annotations

import re
from functools import partial
from typing import Any, Callable

from ...config import COLUMNS, LANGS
from ...model import formula as fx
from ...model import registry as R
from ...model.evaluate import eval_scalar
from ...model.expr import Expr, Ref, if_
from ...model.units import GB, UNIT_DISPLAY
from ..view import WORDS, text_key
from .cells import _BAD_FILL, _FLAG_FILL, _WARN_FILL, F_GENERAL, _Book, _ok
from .layout import (
    CHOSEN_ROW_REF,
    INPUT_FIRST_ROW,
    INPUT_LETTERS,
    INPUTS,
    LEDGER_FIRST_ROW,
    LEDGERS,
    _layout,
)

# How a unit shows (model/units.py, UNIT_DISPLAY): on Ledgers, on the report sheets (bytes in GB),
# and the word a report cell's unit is (none for a plain number, text or a truth value; a cost's
# is its row's currency, a formula).
_UNIT_FORMATS = {u: d.sheet for u, d in UNIT_DISPLAY.items() if d.sheet != F_GENERAL}
_SHOW_FORMATS = {u: d.shown_format for u, d in UNIT_DISPLAY.items() if d.shown_format != F_GENERAL}
_UNIT_WORDS = {
    lang: {u: d.word(lang) for u, d in UNIT_DISPLAY.items() if d.word(lang)} for lang in LANGS
}


def _words(lang: str, true: Any = True, false: Any = False) -> tuple[str, str]:
    return WORDS[lang][true], WORDS[lang][false]


def _unit_word(unit: str, lang: str) -> str:
    return _UNIT_WORDS[lang].get(unit, "")


def _header(reg: R.Registry, key: str, lang: str) -> str:
    """A column header: the quantity's label and the unit the column shows it in."""
    q = reg[key]
    label = q.en if lang == "en" else q.zh
    unit = _unit_word(q.unit, lang)
    return f"{label} ({unit})" if unit else label


_CURRENCY_TEXT = re.compile(r'[^"\\\x00-\x1f;\[\]]{1,16}')


def money_format(currency: Any, base: str) -> str:
    """A cost's number format with its row's currency after it (``#,##0.00 "USD"``); the plain
    format where the currency is empty or holds what a format string cannot quote."""
    if not isinstance(currency, str) or not _CURRENCY_TEXT.fullmatch(currency.strip()):
        return base
    return f'{base} "{currency.strip()}"'


_COLUMN_CHOICES = {c.name: c.choices for c in COLUMNS if c.choices}


class _Report:
    """The sheets that present the ledgers (Ledgers, Summary, the print sheets, Budget) for one
    model and one language.  Every figure is a display formula over its configuration's Ledgers
    row: an expression over registry quantities (the quantity itself, bytes in GB, a truth value
    as a word, a line that does not exist as "—"), compiled by ``model/formula.py`` like the
    quantities themselves, and cached with the value the engine's interpreter gives it."""

    def __init__(self, book: _Book, model: Any, lang: str, ledgers: list[Any]) -> None:
        self.book = book
        self.reg = model.registry
        self.spec = model.spec
        self.tables = model.tables
        self.lang = lang
        self.ledgers = ledgers
        self.n = len(ledgers)
        self.last = LEDGER_FIRST_ROW + self.n - 1
        self.base = _layout(self.reg, self.tables)  # the Ledgers sheet's own formulas
        self.letters = self.base.quantities
        self._layouts: dict[str, fx.Layout] = {}
        self._compiled: dict[tuple, tuple[Expr, fx.Template]] = {}

    # words --------------------------------------------------------------------------------
    def t(self, en: str, zh: str) -> str:
        return en if self.lang == "en" else zh

    def label(self, key: str) -> str:
        return self.t(self.reg[key].en, self.reg[key].zh)

    def header(self, key: str) -> str:
        return _header(self.reg, key, self.lang)

    def text_key(self, key: str) -> str:
        """The quantity a text figure shows in this language (``view.text_key``)."""
        return text_key(self.reg, key, self.lang)

    # display expressions ------------------------------------------------------------------
    def shown(self, key: str, words: tuple[str, str] | None = None) -> Expr:
        """A quantity as a report cell shows it: bytes in GB, a truth value as a word where
        ``words`` are given, text in the workbook's language (a choice in the handout's words)."""
        unit = self.reg[key].unit
        if unit == R.BYTES:
            return Ref(key) / GB
        if unit == R.BOOL and words:
            return if_(Ref(key), words[0], words[1])
        shown = self.text_key(key)
        e: Expr = Ref(shown)
        if unit == R.TEXT and shown == key and self.lang != "en":
            said = WORDS[self.lang]
            for v in reversed(R.choices(self.reg, key, _COLUMN_CHOICES) or ()):
                if said.get(v, v) != v:
                    e = if_(Ref(key).eq(v), said[v], e)
        return e

    def cell_fmt(self, key: str, i: int) -> str:
        """A report cell's format for configuration ``i``: a cost with the row's currency."""
        if self.reg[key].unit == R.MONEY and "currency" in self.reg:
            return money_format(self.ledgers[i].values.get("currency"), self.fmt(key))
        return self.fmt(key)

    def fmt(self, key: str, unit: str = "") -> str:
        """The number format a report cell shows ``key`` in (in that of ``unit`` where given)."""
        return _SHOW_FORMATS.get(unit or self.reg[key].unit, F_GENERAL)

    # formulas over a Ledgers row ----------------------------------------------------------
    def layout(self, mode: str) -> fx.Layout:
        """Where a report cell finds the quantities (the modes of :meth:`ref`; the formula gives
        the row where it is not chosen)."""
        if mode not in self._layouts:
            d = "$" if mode == "absolute" else ""
            q = {
                k: self.ref(LEDGERS, l, mode, None) if mode == "chosen" else f"{LEDGERS}!{d}{l}{d}"
                for k, l in self.letters.items()
            }
            self._layouts[mode] = fx.Layout(INPUTS, INPUT_LETTERS, q, self.base.tables)
        return self._layouts[mode]

    def ref(self, sheet: str, letter: str, mode: str, i: int | None) -> str:
        """The cell of column ``letter`` of Ledgers or Inputs for configuration ``i``: ``relative``
        (Ledgers!X3, the Summary), ``absolute`` (Ledgers!$X$3, a print sheet or Budget column of
        one configuration) or ``chosen`` (the row chosen on the one print sheet above
        MAX_PRINT_SHEETS)."""
        first = LEDGER_FIRST_ROW if sheet == LEDGERS else INPUT_FIRST_ROW
        if mode == "chosen":
            rows = f"${letter}${first}:${letter}${first + self.n - 1}"
            return f"INDEX({sheet}!{rows},{CHOSEN_ROW_REF})"
        d = "$" if mode == "absolute" else ""
        return f"{sheet}!{d}{letter}{d}{first + (i or 0)}"

    def write(
        self, ws, r: int, c: int, mode: str, ident: tuple, build: Callable[[], Expr], i, style=None
    ) -> Any:
        """A display expression (``build`` gives it, compiled once per ``mode`` and ``ident``) for
        configuration ``i`` (None: the chosen row, cached as the first configuration, which the
        dropdown starts on); its cached value."""
        hit = self._compiled.get((mode, ident))
        if hit is None:
            e = build()
            t = fx.compile_expression(self.reg, e, self.layout(mode), str(ident[0]))
            hit = self._compiled[(mode, ident)] = (e, t)
        e, t = hit
        lg = self.ledgers[i or 0]
        row = "" if mode == "chosen" else str(LEDGER_FIRST_ROW + (i or 0))
        cached = eval_scalar(e, lg.config.values, lg.values, self.tables)
        self.book.formula(ws, r, c, t.text.replace(fx.LEDGER_ROW, row), cached, style)
        return cached

    def write_word(self, ws, r: int, c: int, mode: str, key: str, i: int, style=None) -> Any:
        """A quantity as a report cell shows it, a truth value as a word (:meth:`shown`)."""
        build = partial(self.shown, key, _words(self.lang))
        return self.write(ws, r, c, mode, ("word", key), build, i, style)

    def name_ref(self, mode: str, i: int | None) -> str:
        return self.ref(LEDGERS, "A", mode, i)

    def flag_ref(self, key: str) -> str:
        """A Ledgers cell for a conditional format: column fixed, row relative."""
        return f"{LEDGERS}!${self.letters[key]}{LEDGER_FIRST_ROW}"

    def check_format(self, ws, r0: int, c0: int, r1: int, ok: str, check: str) -> None:
        """Red where the row's ``ok`` cell is FALSE (a broken rule), else amber where its
        ``check`` cell is not empty (a warning)."""
        for criteria, fill in ((f"={ok}=FALSE", _BAD_FILL), (f"=LEN({check})>0", _WARN_FILL)):
            rule = {"type": "formula", "criteria": criteria, "format": self.book.fill(fill)}
            if fill == _BAD_FILL:
                rule["stop_if_true"] = True
            _ok(ws.conditional_format(r0, c0, r1, c0, rule), f"{ws.get_name()}: the check format")

    def flag_format(self, ws, r0: int, c0: int, r1: int, c1: int, ref: str) -> None:
        """The verdict colour over a range where the flag cell ``ref`` (the model's) is true."""
        rule = {"type": "formula", "criteria": f"={ref}=TRUE", "format": self.book.fill(_FLAG_FILL)}
        _ok(ws.conditional_format(r0, c0, r1, c1, rule), f"{ws.get_name()}: the verdict format")

    def chart_title(self, chart: Any, shown: int) -> str:
        """A chart's title, which says so where it shows only the first ``shown`` configurations."""
        more = self.t(f", first {shown} configurations", f"，前 {shown} 个配置")
        return self.t(chart.en, chart.zh) + (more if shown < self.n else "")

    def footer(self) -> str:
        return self.t(
            "ledger-report · GB = 10^9 bytes, GiB = 2^30 bytes",
            "ledger-report · GB = 10^9 字节，GiB = 2^30 字节",
        )
