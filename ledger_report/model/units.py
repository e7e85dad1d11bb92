"""Formatting at the edge: GB = 10^9 bytes and GiB = 2^30 bytes, each labelled as what it is."""

from __future__ import annotations

import math
from dataclasses import dataclass

# From here on a number is shown in scientific notation and no longer as a whole number: the
# spreadsheet keeps 15 significant digits (text_of, grouped_text, num and the arrays' check agree).
SCI_FROM = 1e15

GB = 10**9
GIB = 2**30
TB = 10**12
TIB = 2**40


def _fixed(x: float) -> str:
    """Two decimals below 10, one from 10 up (thousands separated), and 0 as "0"."""
    if abs(x) >= 10:
        return f"{x:,.1f}"
    if x == 0:
        return "0"
    return f"{x:.2f}"


def gb(n: float | None) -> str:
    return _bytes(n, (TB, "TB"), (GB, "GB"))


def gib(n: float | None) -> str:
    return _bytes(n, (TIB, "TiB"), (GIB, "GiB"))


def _bytes(n: float | None, big: tuple[int, str], small: tuple[int, str]) -> str:
    if n is None:
        return "—"
    scale, word = big if abs(n) >= big[0] else small
    return f"{_fixed(n / scale)} {word}"


def params(n: float | None, lang: str = "en") -> str:
    if n is None:
        return "—"
    word = " params" if lang == "en" else " 参数"
    for scale, sym in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {sym}{word}"
    return f"{n:g}{word}"


def sci(x: float | None) -> str:
    if x is None:
        return "—"
    if x == 0:
        return "0"
    e = math.floor(math.log10(abs(x)))
    m = x / 10**e
    if round(m, 2) >= 10:
        m /= 10
        e += 1
    return f"{m:.2f}e{e}"


def num(x) -> str:
    if x is None:
        return "—"
    if isinstance(x, (bool, str)):
        return str(x)
    if abs(x) >= SCI_FROM:
        return sci(x)
    if float(x).is_integer():
        return f"{int(x):,}"
    ax = abs(x)
    if ax >= 100:
        return f"{x:,.0f}"
    if ax >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"


@dataclass(frozen=True)
class UnitDisplay:
    """A registry unit as the reports show it, defined once: the workbook's unit words and number
    formats (``sheet`` in the Ledgers sheet, ``shown`` in Summary, print sheets and Budget) come
    from ``UNIT_DISPLAY``.  A unit absent there shows as a plain number with no word (counts,
    ratios) or as text; a cost's unit is the row's currency."""

    en: str = ""  # the word beside a number in the unit the report shows (bytes in GB), in English
    zh: str = ""  # ... and in Chinese
    sheet: str = "General"  # spreadsheet number format of the value in its own unit
    shown: str = ""  # ... as a report cell shows it ("" = as ``sheet``)

    def word(self, lang: str) -> str:
        return self.en if lang == "en" else self.zh

    @property
    def shown_format(self) -> str:
        return self.shown or self.sheet


_INT, _ONE, _TWO, _UPTO2 = "#,##0", "#,##0.0", "#,##0.00", "#,##0.##"
# keys are the registry's unit names (model/registry.py: BYTES = "bytes", ...)
UNIT_DISPLAY: dict[str, UnitDisplay] = {
    "bytes": UnitDisplay("GB", "GB", _INT, _TWO),  # shown as bytes / 10^9
    "params": UnitDisplay("params", "参数", _INT),
    "flops": UnitDisplay("FLOPs", "FLOPs", "0.000E+00"),
    "s": UnitDisplay("s", "秒", _TWO),
    "days": UnitDisplay("days", "天", _TWO, _ONE),
    "count": UnitDisplay("", "", _UPTO2),
    "B/param": UnitDisplay("B/param", "字节/参数", "0.0###"),
    "ratio": UnitDisplay("", "", "0.0000"),
    "tokens": UnitDisplay("tokens", "token", _INT),
    "tokens/s": UnitDisplay("tokens/s", "token/秒", _ONE, _INT),
    "TFLOP/s": UnitDisplay("TFLOP/s", "TFLOP/s", _UPTO2),
    "GB": UnitDisplay("GB", "GB", _UPTO2),
    "GPU-hours": UnitDisplay("GPU-h", "GPU 小时", _ONE, _INT),
    "node-hours": UnitDisplay("node-h", "节点小时", "General", _INT),
    "cost": UnitDisplay("", "", _TWO),
    "GB/s": UnitDisplay("GB/s", "GB/s", _UPTO2),
    "TB": UnitDisplay("TB", "TB", "General", _UPTO2),
}
