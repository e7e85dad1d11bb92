"""What a handout page shows, as plain data for the template: the report spec walked through
:mod:`ledger_report.render.view` for one configuration and one language, then arranged.

Nothing here computes a figure or decides what a figure says (values, labels, formula texts,
verdicts, tones, which lines are shown and the summary's order are looked up through the view and
the spec).  What it adds is presentation: where each part of the spec goes (the header, wide
tables across the top, bars beside them, the other sections in three columns below, a figure of
several sections once), what a page too full leaves out (:data:`TRIMMED`), the bars' fills, the
cut into columns (:func:`cut`), how much of a long note is shown (:func:`note`), the summary's
groups by currency and the plan handout's Pareto front.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..engine import Ledger
from . import view

COLUMNS = 3  # the flow's columns: two under the state ledger, one under the memory chart
# The flow's sections in reading order: these first (the budget whole, atop the first column),
# the spec's others (a section it adds later too), the least read last.
FLOW_FIRST = ("budget", "peak", "measured", "compute")  # the budget first: never split
FLOW_LAST = ("params", "uncounted", "notes")
NARROW_COLUMNS = 4  # a table with more columns than this goes across the top of the page
HEADER_SECTIONS = ("verdicts", "verdict_reasons")  # badges with their reasons, in the header
COMPACT_SECTIONS = ("layout",)  # label-value pairs run together in the header
# sections that lead the header's note line (the note, shortened to fit, follows)
NOTE_SECTIONS = ("check",)
NOT_IN_FLOW = (*HEADER_SECTIONS, *COMPACT_SECTIONS, *NOTE_SECTIONS)

# A page too full for its sheet is fitted by one rule: at each trim level (the renderer's
# ``density``) the formula texts of more sections are left out, the least read first (ALL: every
# section's; the figures stay: each formula is in the workbook and the JSON, as the page then
# says), and the header's note gets less room (NOTE_MAX_EM, NOTE_MAX_LINES).
ALL = "*"
MAX_DENSITY = 4
_TRIM_STEPS = ((), ("params", "uncounted", "offload", "measured"), ("peak",), ("compute", "phases"))
TRIMMED = (*map(frozenset, itertools.accumulate(_TRIM_STEPS)), frozenset({ALL}))  # each level more
# At the last level (ALL) a section named here keeps only these figures (PageData._kept); the full
# list is in the workbook and the JSON, and the page's foot says so.
ESSENTIAL = {
    "params": frozenset(
        {
            "params_total",
            "params_expert",
            "params_active",
            "params_per_rank",
            "largest_matrix_params",
        }
    ),
}
KEEP_WHOLE = ("budget",)  # sections whose figures stay whole at the last level
# width of a note shown (units of _em; a line across the page is ~96: with the marker of a cut
# note or a rule's text before it, 110 takes two lines)
NOTE_MAX_EM = (360, 210, 110, 110, 110)
NOTE_MAX_LINES = (5, 3, 1, 1, 1)
NAME_MAX_CHARS = 240
SUMMARY_NAME_MAX_CHARS = 30

# Fills of the bar segments: (background, text colour), in an order that alternates dark and light.
# Their luminances (0.299 R + 0.587 G + 0.114 B) are 50, 216, 88, 187, 117, 247 and 154 of 255: no
# two closer than 29 levels, so in greyscale too touching segments differ (they never share a
# fill; see _chart), and each segment's number keys it to the legend.
FILLS = (
    ("#1b365d", "#ffffff"),
    ("#f3d98b", "#000000"),
    ("#2f6f4e", "#ffffff"),
    ("#9cc3e6", "#000000"),
    ("#b5651d", "#ffffff"),
    ("#f7f7f7", "#000000"),
    ("#d98c3f", "#000000"),
)


VISIBLE = 2.5  # per cent of a bar: a narrower segment is a sliver
# Per cent of a bar (~0.2 mm): a narrower segment is not drawn (its white edge alone is as wide;
# the legend keys it with its value), and the segments after it stay where they are.
HAIRLINE = 0.4


# --------------------------------------------------------------------------------------------
# Text widths, for estimates only (the page is measured after layout)


def _em(text: str) -> float:
    """Rough width of ``text`` in em of Noto Sans CJK: CJK and full-width characters 1 em, others
    about half."""
    w = 0.0  # added in order, not by sum() (which compensates from Python 3.12): the same widths
    for ch in text:
        w += 1.0 if ord(ch) >= 0x2E80 else (0.24 if ch == " " else 0.5)
    return w


def _lines(text: str, width_em: float) -> int:
    return max(1, math.ceil(_em(text) / width_em)) if text else 0


# What fits on a line, in the units of _em (measured on the example pages): a column (~89 mm), a
# figure's label cell, a formula under it, a table line's label, an assumption; across the page.
COL_EM = 31.0
LABEL_EM = 17.9
WIDE_LABEL_EM = 24.5
SHORT_VALUE_EM = 5.0  # a value that fits the last cell of a figure's row (18 % of a column)
LONG_TEXT_EM = 10.5  # a text value wider than the row's two value cells goes on a line of its own
FORMULA_EM = 28.7
SENTENCE_EM = 27.5  # a label run on into its sentence (bold, the lines after the first indented)
LINE_LABEL_EM = 16.6
NOTE_EM = 30.5
FULL_EM = 96.5


# --------------------------------------------------------------------------------------------
# The page's data


@dataclass
class PageData:
    """One configuration's page before it is cut into columns (built once, laid out maybe twice)."""

    name: str
    notes: str
    verdicts: list[dict[str, Any]]
    headline: list[dict[str, Any]]
    compact: list[dict[str, Any]]
    wide: list[dict[str, Any]]
    charts: list[dict[str, Any]]
    sections: list[dict[str, Any]]  # flow sections: key, title, kind, headers
    items: list[dict[str, Any]]  # flow items, in order: each with its section's index
    lead: str = ""  # what leads the note line (the NOTE_SECTIONS), never cut
    headline_keys: frozenset[str] = frozenset()  # registry keys of the headline strip
    _flows: dict[int, tuple[list[dict[str, Any]], list[float]]] = field(default_factory=dict)
    est_over: list[float] = field(init=False)  # estimated section overheads (lines)
    # estimated lines above the left and right columns, at each trim level
    est_top: list[tuple[float, float]] = field(init=False)

    def __post_init__(self) -> None:
        self.est_over = [1.6 + header_lines(s) for s in self.sections]
        self.est_top = [_estimate_top(self, density) for density in range(MAX_DENSITY + 1)]

    def _kept(self, section: str, key: str | None, blank: bool = False) -> bool:
        """At the last trim level: a figure the headline strip shows is printed there only, a
        blank figure (no value: the row lacks an input) is left out (the budget's stay: the budget
        box is whole), and a section of ESSENTIAL keeps its essentials."""
        if not key:
            return True
        if (key in self.headline_keys or blank) and section not in KEEP_WHOLE:
            return False
        return key in ESSENTIAL.get(section, (key,))

    def flow(self, density: int) -> tuple[list[dict[str, Any]], list[float]]:
        """The flow items at a trim level (the formula texts of its TRIMMED sections left out),
        numbered in order, with their estimated heights (lines)."""
        if density not in self._flows:
            trimmed = TRIMMED[density]
            flow: list[dict[str, Any]] = []
            for it in self.items:
                key = self.sections[it["sec"]]["key"]
                if ALL in trimmed and not self._kept(key, it.get("key"), it.get("blank")):
                    continue
                cut = it.get("formula") and (key in trimmed or ALL in trimmed)
                n = len(flow)
                flow.append({**it, "n": n, "formula": ""} if cut else {**it, "n": n})
            self._flows[density] = (flow, [_item_lines(it) for it in flow])
        return self._flows[density]

    def nominal(self, density: int) -> list[float]:
        """The flow's heights at a trim level (lines) if every line count is right: no room
        to spare (for a page too full for the first guess's spare room)."""
        return [_item_lines(it, spare=False) for it in self.flow(density)[0]]


def _formula(text: str) -> str:
    """A formula text, or "" for one that says only "x = x" (an item equal to one quantity)."""
    left, sep, right = text.rpartition(" = ")
    return "" if sep and left.strip() == right.strip() else text


def _is_zero(line: view.Line, keyed: Sequence[str]) -> bool:
    """Every number of the line is 0 (it is listed in one sentence, not as a row)."""
    nums = [v for v in (line.values[c] for c in keyed) if _number(v)]
    return bool(nums) and all(v == 0 for v in nums)


def _homes(secs: Sequence[view.ViewSection]) -> tuple[set[str], dict[str, str], dict[str, str]]:
    """Where a figure shown in several sections is printed: nowhere among the figures when a
    narrow table's line shows it (activations in "Not in the state ledger"), else in the last
    section that lists it (GPU-hours and the cost in the budget, not in the compute floor), with
    the formula text of any of its places."""
    in_lines: set[str] = set()
    home: dict[str, str] = {}
    formula: dict[str, str] = {}
    for s in secs:
        if s.key in NOT_IN_FLOW:
            continue
        if s.kind == "table" and s.chart is None and len(s.columns) <= NARROW_COLUMNS:
            for ln in s.lines:
                in_lines.update(ln.keys.values())
        if s.kind == "figures":
            for r in s.rows:
                home[r.key] = s.key
                if _formula(r.formula):
                    formula.setdefault(r.key, r.formula)
    return in_lines, home, formula


def page_data(lg: Ledger, lang: str) -> PageData:
    secs = view.sections(lg, lang)
    by_key = {s.key: s for s in secs}
    sep = "; " if lang == "en" else "；"
    verdict_rows, reason_rows = (by_key[k].rows if k in by_key else [] for k in HEADER_SECTIONS)
    reasons = {r.name: r.text for r in reason_rows}
    verdicts = [
        dict(label=r.label, text=r.text, tone=r.tone or "none", reason=reasons.get(r.name, ""))
        for r in verdict_rows
    ]
    headline_rows = view.short_rows(lg, lg.model.spec.headline, lang)
    headline = [{"label": r.label, "text": r.text} for r in headline_rows]
    compact = [
        {"title": by_key[k].title, "pairs": [(r.label, r.text) for r in by_key[k].rows]}
        for k in COMPACT_SECTIONS
        if k in by_key
    ]
    wide: list[dict[str, Any]] = []
    charts: list[dict[str, Any]] = []
    sections: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    moved_notes: set[str] = set()
    in_lines, home, formula = _homes(secs)

    def section(key: str, title: str, kind: str = "figures", headers: Sequence[str] = ()) -> int:
        sections.append({"key": key, "title": title, "kind": kind, "headers": list(headers)})
        return len(sections) - 1

    for s in sorted(secs, key=_reading_rank):  # the assumptions ("notes") last, below
        if s.key in NOT_IN_FLOW:
            continue
        if s.kind == "table" and s.chart is not None:
            charts.append(_chart(s))
            if s.chart.note:
                moved_notes.add(s.chart.note_key)
            if s.rows:  # the table's totals join the flow, under the chart's title
                k = section(s.key, s.title)
                items += [_row_item(k, r) for r in s.rows]
            continue
        if s.kind == "table":
            cols = [
                (name, head)
                for name, head in s.columns
                # neither fixed values nor breakdowns (their items are listed)
                if name not in s.fixed and not any(name in ln.items for ln in s.lines)
            ]
            if len(s.columns) > NARROW_COLUMNS:
                wide.append(_wide(s, cols))
                continue
            k = section(s.key, s.title, "table", [h for _n, h in cols])
            zeros = []
            for ln in s.lines:
                if _is_zero(ln, [c for c, _h in cols]):
                    nums = [ln.cells[c] for c, _h in cols if _number(ln.values.get(c))]
                    zeros.append(f"{ln.label} {' '.join(nums)}".strip())
                    continue
                cells = [ln.cells[c] for c, _h in cols]
                f = _formula(ln.formula)
                items.append(dict(sec=k, kind="line", label=ln.label, cells=cells, formula=f))
            if zeros:
                items.append({"sec": k, "kind": "zeros", "text": sep.join(zeros)})
            items += [_row_item(k, r) for r in s.rows]
            continue
        shown = [r for r in s.rows if r.key not in in_lines and home.get(r.key) == s.key]
        if not shown:
            continue
        k = section(s.key, s.title)
        items += [_row_item(k, r, formula.get(r.key, "")) for r in shown]
    notes = [(key, text) for key, text in view.assumption_items(lg, lang) if key not in moved_notes]
    if notes:
        k = section("notes", "", "notes")  # the template names it
        items += [{"sec": k, "kind": "note", "text": text} for _key, text in notes]
    # the reader's warnings (a column contradicting the row's model), then the rules the row breaks
    lead = [str(w) for w in lg.config.warnings] + [
        sep.join(r.text.rstrip("; ；") for r in by_key[k].rows)
        for k in NOTE_SECTIONS
        if k in by_key
    ]
    return PageData(
        str(lg.name),
        str(lg.config.get("notes") or ""),
        verdicts,
        headline,
        compact,
        wide,
        charts,
        sections,
        items,
        lead=" · ".join(lead),
        headline_keys=frozenset(r.key for r in headline_rows),
    )


def _reading_rank(s: view.ViewSection) -> tuple[int, int]:
    """The flow's order: FLOW_FIRST, the others (in the spec's order), FLOW_LAST."""
    if s.key in FLOW_FIRST:
        return (0, FLOW_FIRST.index(s.key))
    return (2, FLOW_LAST.index(s.key)) if s.key in FLOW_LAST else (1, 0)


def _row_item(sec: int, r: view.Row, formula: str = "") -> dict[str, Any]:
    """A figure's row: its label over two cells and its value in the last, or, where the value is
    too long for one cell (or has a GiB beside it), the label in one and the value in the others.
    ``formula``: the figure's formula text where another place of it has one."""
    return {
        "sec": sec,
        "kind": "row",
        "key": r.key,
        "blank": r.value is None,
        "label": r.label,
        "text": r.text,
        "gib": r.gib,
        "formula": _formula(r.formula) or formula,
        "tone": r.tone,
        "wide_value": bool(r.gib) or _em(r.text) > SHORT_VALUE_EM,
        # words or a breakdown: on a line of its own, wrapped
        "sentence": r.unit in ("text", "") and _em(r.text) > LONG_TEXT_EM,
    }


def _wide(s: view.ViewSection, cols: list[tuple[str, str]]) -> dict[str, Any]:
    numeric = {
        name: all(v is None or _number(v) for v in (ln.values.get(name) for ln in s.lines))
        for name, _h in cols
    }
    return {
        "title": s.title,
        "headers": [{"text": h, "n": numeric[name]} for name, h in cols],
        "lines": [
            {
                "label": ln.label,
                "cells": [{"text": ln.cells[name], "n": numeric[name]} for name, _h in cols],
            }
            for ln in s.lines
        ],
        "rows": [
            {"label": r.label, "text": r.text, "gib": r.gib, "formula": r.formula} for r in s.rows
        ],
        "span": len(cols) + 1,
    }


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# --------------------------------------------------------------------------------------------
# The chart


def _chart(s: view.ViewSection) -> dict[str, Any]:
    ch = s.chart
    assert ch is not None
    bars = []
    info: dict[str, view.Item] = {}  # each item by name, in order of first appearance (the legend)
    neighbours: dict[str, set[str]] = {}
    for ln in s.lines:
        segs = [
            it
            for it in ln.items.get(ch.items, [])
            if isinstance(it.value, (int, float)) and it.value > 0
        ]
        for it in segs:
            info.setdefault(it.name, it)
        total = ln.values.get("bytes_per_rank")  # the phase's total, as the engine sums its items
        bars.append(
            {
                "id": ln.id,
                "label": ln.label,
                "segs": segs,
                "sum": total if isinstance(total, (int, float)) else sum(it.value for it in segs),
                "total": ln.cells.get("bytes_per_rank", ""),
                "marked": ln.id == ch.mark,
            }
        )
    limit, peak = (
        r.value if r is not None and isinstance(r.value, (int, float)) else None
        for r in (ch.limit, ch.peak)
    )
    top = max([b["sum"] for b in bars] + [x for x in (limit, peak) if x] + [1]) * 1.02
    # Touching segments get different fills; so do segments with only slivers (narrower than
    # VISIBLE per cent of the bar, which the eye does not see) between them.
    for b in bars:
        segs = b["segs"]
        seen = [it for it in segs if it.value / top * 100 >= VISIBLE]
        for run in (segs, seen):
            for a, c in zip(run, run[1:]):
                neighbours.setdefault(a.name, set()).add(c.name)
                neighbours.setdefault(c.name, set()).add(a.name)
    fill: dict[str, int] = {}
    for k, name in enumerate(info):
        taken = {fill[o] for o in neighbours.get(name, ()) if o in fill}
        start = k % len(FILLS)  # the first free fill from the item's own, else its own
        free = [j for j in [*range(start, len(FILLS)), *range(start)] if j not in taken]
        fill[name] = free[0] if free else start
    code = {name: str(k + 1) for k, name in enumerate(info)}
    for b in bars:
        x = 0.0
        out = []
        for it in b["segs"]:
            w = it.value / top * 100
            out.append(
                {
                    "x": round(x, 3),
                    "w": round(w, 3),
                    "fill": fill[it.name],  # a class of FILLS (the template's style element)
                    "code": code[it.name],
                    "labelled": w >= 2.2 * len(code[it.name]) + 1.2,
                    "drawn": w >= HAIRLINE,
                }
            )
            x += w
        b["segs"] = out
        b["peak_x"] = round(peak / top * 100, 3) if (b["marked"] and peak) else None
    return {
        "title": s.title,
        "bars": bars,
        "limit_x": round(limit / top * 100, 3) if limit else None,
        "limit": {"label": ch.limit.label, "text": ch.limit.text} if ch.limit is not None else None,
        "peak": {"label": ch.peak.label, "text": ch.peak.text} if ch.peak is not None else None,
        "legend": [
            {"code": code[n], "fill": fill[n], "label": it.label, "text": it.text}
            for n, it in info.items()
        ],
        "note": ch.note,
    }


# --------------------------------------------------------------------------------------------
# Estimates (in lines of body text) and the cut into columns


def _item_lines(it: dict[str, Any], spare: bool = True) -> float:
    """An item's estimated height in lines: its lines of text (a line is a line's height exactly
    on the page), plus, with ``spare``, the room the first guess leaves for a wrong count."""
    if it["kind"] == "zeros":
        return _lines(it["text"], COL_EM) + 0.2 * spare
    if it["kind"] == "note":
        return _lines(it["text"], NOTE_EM) + 0.1 * spare
    if it["kind"] == "line":
        text = max(_lines(it["label"], LINE_LABEL_EM), 1)
    elif it.get("sentence"):  # a row: the label, then the sentence in bold
        text = _lines(f"{it['label']}: {it['text']}", SENTENCE_EM)
    else:
        text = max(_lines(it["label"], LABEL_EM if it["wide_value"] else WIDE_LABEL_EM), 1)
    return text + 0.05 * spare + _lines(it["formula"], FORMULA_EM)


def header_lines(s: dict[str, Any]) -> int:
    return max(_lines(h, 7.0) for h in s["headers"]) if s["headers"] else 0


def _note_lines(d: PageData, density: int) -> float:
    """Lines of the header's note line at a trim level, as :func:`note` cuts it (with the marker
    of a cut note)."""
    if not (d.notes or d.lead):
        return 0.0
    n = note(d.notes, density, d.lead)
    text = n["text"] + (_MARKER_SAMPLE if n["truncated"] else "")
    return NOTE_LINES * sum(max(_lines(line, FULL_EM), 1) for line in text.split("\n"))


def _estimate_top(d: PageData, density: int) -> tuple[float, float]:
    """Estimated lines above the left columns (the header and the wide tables, with their totals'
    formula texts where the level prints them) and above the right column (the header and the
    chart) at a trim level."""
    header = 2.0 * min(_lines(d.name, FULL_EM / 1.35), 3) + 0.4 + _note_lines(d, density)
    if d.verdicts:  # the badge on a line of its own, its reason under it
        w = FULL_EM / len(d.verdicts) - 1
        tallest = max(
            _lines(f"{v['label']} {v['text']}", w) + _lines(v["reason"], w) for v in d.verdicts
        )
        header += tallest + 0.6
    if d.headline:  # a label over each value, the value at 1.25 em
        header += 2.6
    for c in d.compact:
        header += _lines(" ".join(f"{a} {b}  " for a, b in c["pairs"]), FULL_EM) + 0.2
    formulas = ALL not in TRIMMED[density]
    left = sum(
        WIDE_HEAD_LINES
        + len(w["lines"]) * WIDE_LINE_LINES
        + sum(
            WIDE_LINE_LINES
            + (WIDE_FORMULA_LINES * _lines(r["formula"], FULL_EM * 0.62) if formulas else 0)
            for r in w["rows"]
        )
        for w in d.wide
    )
    right = sum(
        CHART_HEAD_LINES
        + len(c["bars"]) * BAR_LINES
        + LEGEND_LINES
        * _lines(" ".join(f"00 {e['label']} {e['text']}  " for e in c["legend"]), COL_EM)
        + CHART_NOTE_LINES * _lines(c["note"], COL_EM)
        for c in d.charts
    )
    return (header + left + 0.5, header + right + 0.5)


# The estimate's parts (lines of body text): a line of the header's note, a wide table's heading
# and header row, each of its lines, a line of its totals' formula texts; a chart's heading and
# scale, each bar, a line of its legend and of its note.  Fitted (least squares) to the measured
# room above the columns of pages of inputs/examples.csv and bench/rows.py in both languages:
# within 1.2 lines of the measure, either way.
NOTE_LINES = 0.9
WIDE_HEAD_LINES = 2.53
WIDE_LINE_LINES = 0.96
WIDE_FORMULA_LINES = 0.89
CHART_HEAD_LINES = 1.39
BAR_LINES = 1.3
LEGEND_LINES = 1.08
CHART_NOTE_LINES = 1.26


def heights_of(
    cols: list[list[tuple[int, list[int]]]], heights: Sequence[float], over: Sequence[float]
) -> list[float]:
    return [sum(over[s] + sum(heights[i] for i in idx) for s, idx in col) for col in cols]


# Room a cut leaves in each column for the estimate's errors, as a share of the column's height:
# a cut that leaves it is preferred to one that splits fewer sections.
CUT_SPARE = 0.04


def cut(
    heights: Sequence[float],
    secs: Sequence[int],
    over: Sequence[float],
    caps: Sequence[float],
) -> list[list[tuple[int, list[int]]]]:
    """The flow (items with their heights, each in a section whose heading costs ``over``, again
    in a column it continues in) cut into the three columns in order: each column a list of
    pieces ``(section, [item index])``.  Every cut between items is tried (numpy, over the pairs
    of cut points): among those that leave :data:`CUT_SPARE` of every column free, the one that
    splits fewest sections (a section's first item alone at the foot of a column counting as a
    second split), then the one with the most room in its fullest column; else, among those that
    fit, the fewest headings left with one item, then the most room; else the one whose fullest
    column overflows least."""
    n = len(heights)
    if len(caps) != 3:
        raise ValueError(f"cut: three columns expected, {len(caps)} given")
    sec = np.asarray(secs, dtype=np.int64)
    ov = np.asarray(over, dtype=float)[sec] if n else np.zeros(0)
    start = np.ones(n, dtype=bool)
    start[1:] = sec[1:] != sec[:-1]
    hsum = np.concatenate(([0.0], np.cumsum(np.asarray(heights, dtype=float))))
    osum = np.concatenate(([0.0], np.cumsum(np.where(start, ov, 0.0))))
    first = np.concatenate((ov, [0.0]))  # the heading of the section a column starts in

    def col(lo, hi):  # the height of items lo..hi-1 as one column (0 where empty)
        lo1 = np.minimum(lo + 1, n)
        body = hsum[hi] - hsum[lo] + first[lo] + osum[hi] - osum[lo1]
        return np.where(hi > lo, body, 0.0)

    a = np.arange(n + 1)[:, None]
    b = np.arange(n + 1)[None, :]
    spans = ((np.zeros_like(a), a), (a, b), (b, np.full_like(b, n)))  # the three columns
    free = [c - col(lo, hi) for c, (lo, hi) in zip(caps, spans)]
    slack = functools.reduce(np.minimum, free)
    spare = functools.reduce(np.minimum, [f - CUT_SPARE * c for f, c in zip(free, caps)])
    inner = np.zeros(n + 1, dtype=bool)
    inner[1:n] = ~start[1:]  # a cut before item p splits its section
    alone = np.zeros(n + 1, dtype=bool)
    alone[1:n] = inner[1:n] & start[: n - 1]  # ... leaving its first item alone above the cut
    splits = inner[a].astype(float) + inner[b] + alone[a] + alone[b]
    lonely = alone[a].astype(float) + alone[b]
    valid = b >= a
    big = 1e6
    # ties go to the cut that fills the earlier columns (the reading order), never a gap
    slack = slack + 1e-6 * (a + b)
    for fits, penalty in ((spare >= 0, splits), (slack >= 0.5, lonely), (valid, 0.0)):
        if np.any(valid & fits):  # the first of these tiers any cut reaches
            score = np.where(valid & fits, penalty * big - slack, np.inf)
            break
    ka, kb = np.unravel_index(int(np.argmin(score)), score.shape)
    bounds = (0, int(ka), int(kb), n)
    return [
        [(s, list(idx)) for s, idx in itertools.groupby(range(lo, hi), key=secs.__getitem__)]
        for lo, hi in zip(bounds, bounds[1:])
    ]


_MARKER_SAMPLE = (
    " [truncated: 999 characters shown of 9,999; the full note is in the JSON and the workbook]"
)


def note(text: str, density: int, lead: str = "") -> dict[str, Any]:
    """A note cut to what the page has room for: at most N lines and a width of text.  Lines beyond
    the limit are joined with " / " (nothing is lost); characters beyond the width are cut, and the
    template then prints a visible marker with the shown and total counts.  ``lead`` (the rules the
    row breaks) comes first, whole, and the note gets the room that is left."""
    lines = [ln.strip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    lines = [ln for ln in lines if ln]
    keep = NOTE_MAX_LINES[density]
    if len(lines) > keep:
        lines = lines[: keep - 1] + [" / ".join(lines[keep - 1 :])]
    joined = "\n".join(lines)
    limit = max(NOTE_MAX_EM[density] - (_em(lead + " · ") if lead else 0.0), 0)
    # the marker takes room too: a note that fits in the limit and the marker's room is shown whole
    truncated = _em(joined) > limit + _em(_MARKER_SAMPLE)
    if truncated:  # the characters whose widths add up to the limit (every width is positive)
        k = bisect.bisect_right(list(itertools.accumulate(map(_em, joined))), limit)
        joined = joined[:k].rstrip()
    shown = " · ".join(t for t in (lead, joined) if t)
    return {"text": shown, "truncated": truncated, "shown": len(joined), "total": len(text)}


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 1)].rstrip() + "…"


# --------------------------------------------------------------------------------------------
# The summary


def currency(lg: Ledger) -> str:
    """The currency of the row's costs ("" where it names none)."""
    return str(lg.values.get("currency") or "")


def currencies(ledgers: Sequence[Ledger]) -> list[str]:
    """The currencies of the rows' costs, in order of first appearance."""
    return list(dict.fromkeys(map(currency, ledgers)))


def rank_order(ledgers: Sequence[Ledger]) -> list[int]:
    """Indices of the ledgers in the summary's order: grouped by currency (in order of first
    appearance: costs in different currencies are never ranked against each other), then by the
    spec's ``rank`` values in turn (False before True, smaller first, blank last), input order
    breaking ties (a stable order).  Ledgers whose spec ranks nothing (plans) keep the order given."""
    if ledgers and not ledgers[0].model.spec.rank:
        return list(range(len(ledgers)))
    group = {c: k for k, c in enumerate(currencies(ledgers))}

    def key(i: int):
        lg = ledgers[i]
        out: list[Any] = [group[currency(lg)]]
        for k in lg.model.spec.rank:
            v = lg.values.get(k)
            out += [v is None, 0 if v is None else (int(v) if isinstance(v, bool) else float(v))]
        return (*out, i)

    return sorted(range(len(ledgers)), key=key)


def _summary_verdicts(lg: Ledger, lang: str) -> list[view.Row]:
    """The rows of the sections the spec puts beside the summary figures (the verdicts)."""
    return [view.figure_row(lg, f, lang, False) for f in lg.model.spec.summary_figures()]


def summary_row(lg: Ledger, lang: str, rank: int) -> dict[str, Any]:
    flag = lg.model.spec.flag
    return {
        "rank": rank,
        "name": clip(str(lg.name), SUMMARY_NAME_MAX_CHARS),
        "currency": currency(lg),
        "flag": bool(flag and lg.values.get(flag)),
        "verdicts": [
            {"text": r.text, "tone": r.tone or "none"} for r in _summary_verdicts(lg, lang)
        ],
        "cells": [
            {"text": r.text, "n": r.unit not in ("text", "bool")}
            for r in view.short_rows(lg, lg.model.spec.summary, lang)
        ],
    }


def summary_headers(lg: Ledger, lang: str) -> dict[str, Any]:
    return {
        "verdicts": [r.label for r in _summary_verdicts(lg, lang)],
        "cells": [
            {
                "text": r.label,
                "n": r.unit not in ("text", "bool"),
                # CSS classes of the column: its unit's (its width: handout.css, col.u-*) and key's
                "unit": f"{_css_name('u-' + r.unit.lower())} {_css_name('k-' + r.key)}",
            }
            for r in view.short_rows(lg, lg.model.spec.summary, lang)
        ],
    }


def _css_name(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text)


# --------------------------------------------------------------------------------------------
# The Pareto front of a plan handout

PARETO_KEYS = ("layout_text", "days_on_config", "cost")  # registry keys of each front plan's row


def pareto(front: Sequence[Ledger], lang: str) -> list[dict[str, Any]]:
    """The planner's front (the ledgers of its ``pareto`` plans, fastest first) as bars: each
    plan's name and layout, its days and its cost as texts, and each as a bar in per cent of the
    front's largest (presentation geometry only)."""
    rows = [[view.quantity_row(lg, k, lang) for k in PARETO_KEYS] for lg in front]
    top_days, top_cost = (
        max([r[k].value for r in rows if isinstance(r[k].value, (int, float))] + [0]) or 1
        for k in (1, 2)
    )
    return [
        {
            "name": clip(str(lg.name), SUMMARY_NAME_MAX_CHARS),
            "layout": layout.text,
            "days": days.text,
            "cost": cost.text,
            "days_w": round(100 * (days.value or 0) / top_days, 2),
            "cost_w": round(100 * (cost.value or 0) / top_cost, 2),
            "days_label": days.label,
            "cost_label": cost.label,
        }
        for lg, (layout, days, cost) in zip(front, rows)
    ]
