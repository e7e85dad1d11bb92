"""The Budget sheet: the spec's budget section side by side, and its chart of cost against days."""

from __future__ import annotations

from ...model.expr import IsBlank, Ref, if_
from ...report import Section
from .cells import (
    _CM_TO_PX,
    _HEADER_FILL,
    _HEADER_FONT,
    _SECTION_FONT,
    _ok,
)
from .display import (
    _unit_word,
    _words,
)
from .layout import (
    BUDGET,
    CHART_MAX,
)


def write_budget(rep, ws) -> None:
    """The spec's budget section, one column per configuration, and its chart of cost
    against days (a scatter chart over chart-data rows below the figures)."""
    book, n = rep.book, rep.n
    head = book.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT, wrap=True)
    section = book.style(bold=True, size=12, font_color=_SECTION_FONT)
    note = book.style(italic=True)
    sec = next((s for s in rep.spec.sections if s.key == "budget"), None)
    figures = [f.key for f in sec.figures] if isinstance(sec, Section) else []
    book.label(
        ws, 1, 1, rep.t(sec.en, sec.zh) if sec is not None else rep.t("Budget", "预算"), head
    )
    book.label(ws, 1, 2, rep.t("unit", "单位"), head)
    ws.set_column(0, 0, 40)
    ws.set_column(1, 1, 10)
    ws.set_column(2, 1 + n, 16)
    for i in range(n):
        book.formula(ws, 1, 3 + i, rep.name_ref("absolute", i), rep.ledgers[i].config.name, head)
    ws.set_row(0, 45)
    ws.freeze_panes(1, 2)
    r = 2
    for key in figures:
        book.label(ws, r, 1, rep.label(key))
        book.label(ws, r, 2, _unit_word(rep.reg[key].unit, rep.lang))
        style = book.style(fmt=rep.fmt(key))
        for i in range(n):
            rep.write(
                ws,
                r,
                3 + i,
                "absolute",
                ("word", key),
                lambda key=key: rep.shown(key, _words(rep.lang)),
                i,
                style,
            )
        r += 1
    chart = rep.spec.chart("budget")
    if chart is None:
        return
    # chart data: each series' x and y, 0 where blank (a chart reads text as 0, and Excel
    # reads a scatter series with any text x as 1, 2, 3 ...)
    r += 1
    book.label(ws, r, 1, rep.t("chart data", "图表数据"), section)
    r += 1
    rows: list[tuple[int, int]] = []  # (row of x, row of y) per series
    for s in chart.series:
        pair = []
        for key in (s.x, s.y):
            book.label(ws, r, 1, rep.label(key), note)
            book.label(ws, r, 2, _unit_word(rep.reg[key].unit, rep.lang), note)
            style = book.style(fmt=rep.fmt(key))
            for i in range(n):
                rep.write(
                    ws,
                    r,
                    3 + i,
                    "absolute",
                    ("chart", key),
                    lambda key=key: if_(IsBlank(Ref(key)), 0, Ref(key)),
                    i,
                    style,
                )
            pair.append(r)
            r += 1
        rows.append((pair[0], pair[1]))
    shown = min(n, CHART_MAX)
    sc = book.wb.add_chart({"type": "scatter"})
    markers = ("circle", "diamond", "square", "triangle")
    for k, (s, (rx, ry)) in enumerate(zip(chart.series, rows)):
        sc.add_series(
            {
                "name": rep.label(s.y),
                "categories": [BUDGET, rx - 1, 2, rx - 1, 1 + shown],
                "values": [BUDGET, ry - 1, 2, ry - 1, 1 + shown],
                "marker": {"type": markers[k % len(markers)], "size": 7},
            }
        )
    more = rep.t(f", first {shown} configurations", f"，前 {shown} 个配置") if shown < n else ""
    sc.set_title({"name": rep.t(chart.en, chart.zh) + more, "name_font": {"size": 12}})
    sc.set_x_axis({"name": rep.t(chart.x_en, chart.x_zh), "min": 0})
    sc.set_y_axis({"name": rep.t(chart.y_en, chart.y_zh), "min": 0})
    sc.set_legend({"position": "bottom"})
    sc.set_size({"width": round(20 * _CM_TO_PX), "height": round(12 * _CM_TO_PX)})
    _ok(ws.insert_chart(r + 1, 0, sc), f"{BUDGET}: the chart")
