"""The plan workbook's Plans sheet (``plan -o DIR``): each plan's layout and figures as the planner
found them, the Pareto front of days against cost per input, and a chart of it.

The plans are also the workbook's rows (Inputs, Ledgers, one page each), whose figures are live
formulas; this sheet states what the planner chose and why (its layout, its place on the front)."""

from __future__ import annotations

from typing import Any, Mapping

from ...model import registry as R
from .cells import F_INT, _ok, chart_looks, print_setup
from .layout import PLANS
from .report import _SHOW_FORMATS, money_format

_LAYOUT = ("dp", "tp", "pp", "cp", "ep", "zero", "micro_batch", "recompute", "sequence_parallel")
_WIDTHS = (30, 30, 8, 44, 10, 10, 16, 10, 40)


def layout_text(row: Mapping[str, Any]) -> str:
    """A plan's layout in one line: ``dp 4 · tp 1 · pp 1 · cp 2 · ep 1 · zero 2 · ...``."""
    given = [(k, row.get(k)) for k in _LAYOUT if row.get(k) not in (None, "")]
    return " · ".join(
        f"{k} {('yes' if v else 'no') if isinstance(v, bool) else v}" for k, v in given
    )


_HEADS = {
    "en": ("input", "name", "rank", "GPU", "layout", "GPUs", "days", "cost", "peak / HBM", "why"),
    "zh": ("输入", "名称", "排名", "GPU", "布局", "GPU 数", "天数", "成本", "峰值 / 显存", "原因"),
}
_WORDS = {
    "en": ("Plans (as the planner chose them, in its order)", "Pareto front: days against cost"),
    "zh": ("方案（规划器选出的顺序）", "帕累托前沿：天数与成本"),
}
_CHART = {
    "en": ("Cost against days", "days", "cost", "Pareto front", "plans"),
    "zh": ("成本与天数", "天", "成本", "帕累托前沿", "方案"),
}


def _table(
    book, ws, r: int, title: str, entries: list[Mapping[str, Any]], rank: bool, lang: str
) -> int:
    """One table of plans (or Pareto points) from row ``r``; the first row after it."""
    head = book.head(wrap=True)
    book.label(ws, r, 1, title, book.section())
    r += 1
    h = _HEADS[lang]
    cols = (h[0], h[1], h[2] if rank else h[3], *h[4:])
    for c, h in enumerate(cols, start=1):
        book.label(ws, r, c, h, head)
    r += 1
    for e in entries:
        row = e.get("row") or {}
        book.text(ws, r, 1, str(e.get("input", "")), None, f"{PLANS}!A{r}")
        book.text(ws, r, 2, str(row.get("name", "")), None, f"{PLANS}!B{r}")
        if rank:
            book.value(ws, r, 3, e.get("rank"))
        else:
            book.text(ws, r, 3, str(e.get("gpu", "")), None, f"{PLANS}!C{r}")
        book.text(ws, r, 4, layout_text(row), book.style(wrap=True), f"{PLANS}!D{r}")
        book.value(ws, r, 5, e.get("gpus"), book.style(fmt=F_INT))
        book.value(ws, r, 6, e.get("days"), book.style(fmt=_SHOW_FORMATS[R.DAYS]))
        money = book.style(fmt=money_format(row.get("currency"), _SHOW_FORMATS[R.MONEY]))
        book.value(ws, r, 7, e.get("cost"), money)
        book.value(ws, r, 8, e.get("peak_fraction"), book.style(fmt="0.0%"))
        why = e.get("why")
        book.text(ws, r, 9, why if isinstance(why, str) else "", book.style(wrap=True), PLANS)
        r += 1
    return r


def _series(name: str, first: int, last: int, marker: str, size: int) -> dict[str, Any]:
    """A chart series of the days (x) and costs (y) of rows ``first`` to ``last``."""
    return {
        "name": name,
        "categories": [PLANS, first - 1, 5, last - 1, 5],
        "values": [PLANS, first - 1, 6, last - 1, 6],
        "marker": {"type": marker, "size": size},
    }


def write_plans(book, doc: Mapping[str, Any], lang: str = "en") -> None:
    """The plans, the Pareto front, and the chart of days against cost (the front per input as
    a line, the plans as markers)."""
    plans = list(doc.get("plans") or [])
    front = list(doc.get("pareto") or [])
    ws = book.sheet(PLANS)
    for c, w in enumerate(_WIDTHS):
        ws.set_column(c, c, w)
    r = _table(book, ws, 1, _WORDS[lang][0], plans, True, lang)
    plans_rows = (3, r - 1)
    front_top = r + 1
    r = _table(book, ws, front_top, _WORDS[lang][1], front, False, lang)
    ws.freeze_panes(2, 2)
    chart = book.wb.add_chart({"type": "scatter", "subtype": "straight_with_markers"})
    inputs = list(dict.fromkeys(str(e.get("input", "")) for e in front))
    first = front_top + 2  # the front's first data row (1-based)
    for name in inputs:
        rows = [first + k for k, e in enumerate(front) if str(e.get("input", "")) == name]
        if not rows or rows != list(range(rows[0], rows[-1] + 1)):
            continue  # the front lists each input's points together
        chart.add_series(_series(f"{_CHART[lang][3]} {name}"[:255], rows[0], rows[-1], "circle", 6))
    if plans:
        series = _series(_CHART[lang][4], *plans_rows, "diamond", 8)
        chart.add_series({**series, "line": {"none": True}})
    title, x, y = _CHART[lang][:3]
    chart_looks(chart, title, {"name": y, "min": 0}, 22, {"name": x, "min": 0})
    _ok(ws.insert_chart(r + 1, 0, chart), f"{PLANS}: the chart")
    ws.print_area(0, 0, r + 24, len(_WIDTHS) - 1)  # the chart's 24 rows too
    print_setup(ws, 0)
    ws.repeat_rows(1)
