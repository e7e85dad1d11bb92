"""Formatting at the edge: GB = 10^9 bytes and GiB = 2^30 bytes, each labelled as what it is."""

from __future__ import annotations

import math

GB = 10**9
GIB = 2**30
TB = 10**12
TIB = 2**40


def _fixed(x: float) -> str:
    """Three significant figures for small values, one decimal from 10 up, thousands separated."""
    ax = abs(x)
    if ax >= 100:
        return f"{x:,.1f}"
    if ax >= 10:
        return f"{x:.1f}"
    if ax == 0:
        return "0"
    return f"{x:.2f}"


def gb(n: float | None) -> str:
    if n is None:
        return "—"
    if abs(n) >= TB:
        return f"{_fixed(n / TB)} TB"
    return f"{_fixed(n / GB)} GB"


def gib(n: float | None) -> str:
    if n is None:
        return "—"
    if abs(n) >= TIB:
        return f"{_fixed(n / TIB)} TiB"
    return f"{_fixed(n / GIB)} GiB"


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
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, str):
        return x
    if abs(x) >= 1e15:
        return sci(x)
    if float(x).is_integer():
        return f"{int(x):,}"
    ax = abs(x)
    if ax >= 100:
        return f"{x:,.0f}"
    if ax >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"
