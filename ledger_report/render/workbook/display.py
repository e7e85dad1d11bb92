"""Units as the workbook shows them: number formats and unit words."""

from __future__ import annotations

from typing import Any

from ...model import registry as R
from ..view import WORDS
from .cells import (
    F_BPP,
    F_DAYS,
    F_GB,
    F_INT,
    F_MONEY,
    F_RATIO,
    F_SCI,
)

_UNIT_FORMATS = {
    R.BYTES: F_INT,
    R.PARAMS: F_INT,
    R.FLOPS: F_SCI,
    R.SECONDS: "#,##0.00",
    R.DAYS: "#,##0.00",
    R.COUNT: "#,##0.##",
    R.BPP: F_BPP,
    R.RATIO: F_RATIO,
    R.TOKENS: F_INT,
    R.TOKENS_PER_S: "#,##0.0",
    R.TFLOPS: "#,##0.##",
    R.GB: "#,##0.##",
    R.HOURS: "#,##0.0",
    R.MONEY: F_MONEY,
    R.GBPS: "#,##0.##",
}
# ... and as the report sheets show them (bytes in GB)
_SHOW_FORMATS = dict(
    _UNIT_FORMATS,
    **{
        R.BYTES: F_GB,
        R.DAYS: F_DAYS,
        R.HOURS: F_INT,
        R.NODE_HOURS: F_INT,
        R.TOKENS_PER_S: F_INT,
        R.TB: "#,##0.##",
    },
)
# The unit a report cell's number is in, by registry unit (none: a plain number, text, a truth value;
# a cost's unit is the row's currency, a formula).
_UNIT_WORDS = {
    "en": {
        R.BYTES: "GB",
        R.PARAMS: "params",
        R.FLOPS: "FLOPs",
        R.BPP: "B/param",
        R.SECONDS: "s",
        R.DAYS: "days",
        R.TOKENS: "tokens",
        R.TOKENS_PER_S: "tokens/s",
        R.TFLOPS: "TFLOP/s",
        R.GB: "GB",
        R.HOURS: "GPU-h",
        R.NODE_HOURS: "node-h",
        R.GBPS: "GB/s",
        R.TB: "TB",
    },
    "zh": {
        R.BYTES: "GB",
        R.PARAMS: "参数",
        R.FLOPS: "FLOPs",
        R.BPP: "字节/参数",
        R.SECONDS: "秒",
        R.DAYS: "天",
        R.TOKENS: "token",
        R.TOKENS_PER_S: "token/秒",
        R.TFLOPS: "TFLOP/s",
        R.GB: "GB",
        R.HOURS: "GPU 小时",
        R.NODE_HOURS: "节点小时",
        R.GBPS: "GB/s",
        R.TB: "TB",
    },
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
