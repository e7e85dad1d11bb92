"""Units as the workbook shows them: number formats and unit words."""

from __future__ import annotations

import re
from typing import Any

from ...model import registry as R
from ...model.units import UNIT_DISPLAY
from ..view import WORDS
from .cells import F_GENERAL

# Derived from the one definition of how a unit shows (model/units.py, UNIT_DISPLAY).
_UNIT_FORMATS = {u: d.sheet for u, d in UNIT_DISPLAY.items() if d.sheet != F_GENERAL}
# ... and as the report sheets show them (bytes in GB)
_SHOW_FORMATS = {u: d.shown_format for u, d in UNIT_DISPLAY.items() if d.shown_format != F_GENERAL}
# The unit a report cell's number is in, by registry unit (none: a plain number, text, a truth value;
# a cost's unit is the row's currency, a formula).
_UNIT_WORDS = {
    lang: {u: d.word(lang) for u, d in UNIT_DISPLAY.items() if d.word(lang)}
    for lang in ("en", "zh")
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
