"""A configuration's report as display rows: the report spec walked once for a language, each value
formatted with its unit and, where the spec asks, its formula text with the numbers filled in.

The terminal table and the handout read these rows; they add layout, never figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engine import Ledger, plain
from ..model import text as mtext
from ..model import units
from ..model.definitions.common import COUNTER_ZH, PARTS
from ..model.definitions.phases import PHASES
from ..model.definitions.stages import STAGE_ZH
from ..model.registry import BOOL, BPP, BYTES, MONEY, TEXT
from ..report import Table

# Enumerated values as each language shows them (the values themselves stay as the row gives them).
WORDS = {
    "en": {True: "yes", False: "no", "whole": "whole", "sharded": "sharded"},
    "zh": {
        True: "是",
        False: "否",
        "whole": "整份",
        "sharded": "分片",
        "hbm": "显存",
        "host": "主机内存",
        "nvme": "NVMe",
        "none": "无",
        "selective": "选择性",
        "full": "全量",
        **STAGE_ZH,  # the pipeline stages (only, first, middle, last)
        "selective_op": "按算子选择性",
        "measured": "实测",
        "predicted": "预测",
        **COUNTER_ZH,  # the counter of a measured peak
        "compute": "算力门",
        "memory": "显存门",
        **{p: zh for p, _en, zh in PARTS},  # the parts of a state
        **{p: zh for p, _en, zh, _items in PHASES},  # the peak's phase
    },
}


def word(v: Any, lang: str) -> str:
    if v is None:
        return "—"
    return WORDS[lang].get(v, str(v)) if isinstance(v, (str, bool)) else str(v)


def show(v: Any, unit: str, lang: str = "en") -> str:
    """A value with its unit for people (``model.text.fmt_value``: bytes in GB (10^9), counts
    grouped, params with a scale), truth values and enumerations in the language's words."""
    if unit in (BOOL, TEXT):
        return word(v, lang)
    if unit == BPP and v is not None:  # a bare number: its column is headed B/param
        return units.num(v)
    return mtext.fmt_value(v, unit, lang)


def text_key(reg: Any, key: str, lang: str) -> str:
    """The quantity a text figure shows in ``lang``: its ``_zh`` twin where it has one (a sentence
    the model writes in both languages)."""
    return f"{key}_zh" if lang == "zh" and reg[key].unit == TEXT and f"{key}_zh" in reg else key


def _label(x: Any, lang: str) -> str:
    """The English or Chinese label of a quantity, section, column or line."""
    return x.en if lang == "en" else x.zh


@dataclass
class Row:
    key: str
    label: str
    unit: str
    value: Any  # as the JSON document carries it
    text: str  # formatted with its unit
    gib: str = ""  # bytes also in GiB
    formula: str = ""
    name: str = ""  # the figure's name in its JSON section
    tone: str = ""  # "good", "bad", "unknown" where the spec gives the figure a tone; else ""


@dataclass
class Item:
    """One named part of a breakdown cell (a phase's items, say)."""

    name: str
    key: str
    label: str
    value: Any
    text: str


@dataclass
class Line:
    id: str
    label: str
    cells: dict[str, str]  # column -> formatted text
    values: dict[str, Any]  # column -> value as the JSON carries it
    formula: str = ""
    items: dict[str, list[Item]] = field(default_factory=dict)  # breakdown column -> its parts
    keys: dict[str, str] = field(default_factory=dict)  # column -> the registry key of its cell


@dataclass
class Chart:
    """A table the spec draws as bars (``report.Bars``), its references looked up."""

    items: str  # the breakdown column
    limit: Row | None = None
    mark: str | None = None  # id of the marked line
    peak: Row | None = None
    note: str = ""  # the note printed with the chart ("" where it is not shown)
    note_key: str = ""


@dataclass
class ViewSection:
    key: str
    title: str
    kind: str  # "figures" or "table"
    rows: list[Row] = field(default_factory=list)
    columns: list[tuple[str, str]] = field(default_factory=list)  # (name, header)
    lines: list[Line] = field(default_factory=list)
    # table columns whose cells are fixed values (ids the line's label names)
    fixed: frozenset[str] = frozenset()
    chart: Chart | None = None


def quantity_row(
    lg: Ledger,
    key: str,
    lang: str,
    formula: bool = False,
    expand: tuple[str, ...] = (),
    name: str = "",
    tone: str = "",
) -> Row:
    """One registry quantity of a ledger as shown (its label, its value with its unit), with its
    formula text where asked, ``name`` in its JSON section and the tone of registry key ``tone``."""
    q = lg.model.registry[key]
    raw = lg.values[text_key(lg.model.registry, key, lang)]
    value = plain(raw, q.unit)
    text = show(value, q.unit, lang)
    if q.unit == MONEY and value is not None and lg.values.get("currency"):
        text = f"{text} {lg.values['currency']}"  # the row's currency beside every cost
    gib = units.gib(value) if q.unit == BYTES and value is not None else ""
    f = ""
    if formula and raw is not None:
        f = mtext.render(lg.model.registry, key, lg.values, lang, frozenset(expand))
    t = str(lg.values[tone]) if tone and lg.values[tone] is not None else ""
    return Row(key, _label(q, lang), q.unit, value, text, gib, f, name or key, t)


def figure_row(lg: Ledger, f, lang: str, formulas: bool) -> Row:
    """A figure as shown: its quantity, or for a breakdown (``items``) its sentence (``text``)."""
    return quantity_row(lg, f.shown, lang, formulas and f.formula, f.expand, f.name, f.tone)


def _figure_rows(lg: Ledger, figures, lang: str, formulas: bool) -> list[Row]:
    """The figures shown on the pages for this row (``pages``, and ``show`` where it has one)."""
    v = lg.values
    return [
        figure_row(lg, f, lang, formulas) for f in figures if f.pages and (not f.show or v[f.show])
    ]


def sections(lg: Ledger, lang: str = "en", formulas: bool = True) -> list[ViewSection]:
    """The report of one configuration, section by section, as shown (hidden rows left out)."""
    out: list[ViewSection] = []
    for sec in lg.model.spec.sections:
        if isinstance(sec, Table):
            out.append(_table(lg, sec, lang, formulas))
        elif not sec.show or lg.values[sec.show]:
            rows = _figure_rows(lg, sec.figures, lang, formulas)
            out.append(ViewSection(sec.key, _label(sec, lang), "figures", rows=rows))
    return out


def _table(lg: Ledger, sec: Table, lang: str, formulas: bool) -> ViewSection:
    v = lg.values
    vs = ViewSection(
        sec.key,
        _label(sec, lang),
        "table",
        columns=[(c.name, _label(c, lang)) for c in sec.columns],
        fixed=frozenset(
            c.name
            for c in sec.columns
            if all(not ln.cells[c.name].key and not ln.cells[c.name].items for ln in sec.lines)
        ),
    )
    vs.lines = [_line(lg, sec, ln, lang, formulas) for ln in sec.lines if not ln.show or v[ln.show]]
    vs.rows = _figure_rows(lg, sec.total, lang, formulas)
    if sec.bars is not None:
        ch = sec.bars
        note = ""
        if ch.note and v[ch.note + "_shown"]:
            note = v[ch.note + ("" if lang == "en" else "_zh")]
        vs.chart = Chart(
            ch.items,
            quantity_row(lg, ch.limit, lang) if ch.limit else None,
            str(v[ch.mark]) if ch.mark and v[ch.mark] is not None else None,
            quantity_row(lg, ch.peak, lang) if ch.peak else None,
            note,
            ch.note,
        )
    return vs


def _line(lg: Ledger, sec: Table, ln, lang: str, formulas: bool) -> Line:
    v, reg = lg.values, lg.model.registry
    cells, values, items = {}, {}, {}
    for c in sec.columns:
        cell = ln.cells[c.name]
        if cell.items:
            vals = {n: plain(v[k], reg[k].unit) for n, k in cell.items}
            values[c.name] = vals
            items[c.name] = [
                Item(n, k, _label(reg[k], lang), vals[n], show(vals[n], reg[k].unit, lang))
                for n, k in cell.items
            ]
            cells[c.name] = quantity_row(lg, cell.text, lang).text  # the model's sentence of them
            continue
        unit = reg[cell.key].unit if cell.key else TEXT
        val = plain(v[cell.key], unit) if cell.key else cell.value
        values[c.name] = val
        if c.words:
            cells[c.name] = word(c.words[0] if val else c.words[1], lang)
        else:
            cells[c.name] = show(val, c.unit or unit, lang)
    f = ""
    if formulas and ln.formula and v[ln.formula] is not None:
        # the formula text of a state's bytes writes its parameters on the rank inline
        inline = ln.formula.replace("_bytes", "_params_on_rank")
        f = mtext.render(reg, ln.formula, v, lang, frozenset({inline} if inline in reg else ()))
    keys = {name: cell.key for name, cell in ln.cells.items() if cell.key}
    return Line(ln.id, _label(ln, lang), cells, values, f, items, keys)


def assumptions(lg: Ledger, lang: str = "en") -> list[str]:
    return [text for _key, text in assumption_items(lg, lang)]


def assumption_items(lg: Ledger, lang: str = "en") -> list[tuple[str, str]]:
    """The assumption sentences that apply to the row, each with its key (``note_*``)."""
    v = lg.values
    suffix = "" if lang == "en" else "_zh"
    return [(k, v[k + suffix]) for k in lg.model.spec.assumptions if v[k + "_shown"]]


def short_rows(lg: Ledger, figures, lang: str = "en") -> list[Row]:
    """Figures of the spec (its ``summary``, a page's ``headline``) of one configuration, headed by
    their short labels where given."""
    rows = [figure_row(lg, f, lang, False) for f in figures]
    for f, row in zip(figures, rows):
        if f.short:
            row.label = f.short[0] if lang == "en" else f.short[1]
    return rows
