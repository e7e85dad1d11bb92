"""The Summary sheet: the spec's summary figures, verdicts and check per configuration, and
the stacked memory chart."""

from __future__ import annotations

from typing import Any

from ...model import registry as R
from ...report import DEFAULT
from .cells import _letter, _lines, _ok, chart_looks, header_width, print_setup, shown_width
from .layout import CHART_MAX, SUMMARY, SUMMARY_FIRST_ROW, SUMMARY_ROWS_PER_PAGE
from .report import _header

_CHART_ROWS = 24  # rows of 15 points under a chart 12 cm tall
_SUMMARY_CHECK_WIDTH = 48


def _summary_keys(spec: Any) -> list[str]:
    """The Summary's figures: the spec's summary, the figures of its summary sections (the
    verdicts), the row's check."""
    keys = [f.key for f in (*spec.summary, *spec.summary_figures())]
    return list(dict.fromkeys([*keys, spec.check]))


def write_summary(rep, ws) -> None:
    book, n = rep.book, rep.n
    head = book.head(wrap=True)
    first, last = SUMMARY_FIRST_ROW, SUMMARY_FIRST_ROW + n - 1
    keys = _summary_keys(rep.spec)
    check_col = 2 + keys.index(rep.spec.check)
    book.label(ws, 1, 1, rep.t("name", "名称"), head)
    ws.set_column(0, 0, 26)
    cols = list(enumerate(keys, start=2))  # (column, key)
    for j, key in cols:
        book.label(ws, 1, j, rep.header(key), head)
    ws.set_column(check_col - 1, check_col - 1, _SUMMARY_CHECK_WIDTH)  # the others: from values
    table_last_col = 1 + len(keys)  # 1-based
    # chart data, right of the table: the spec's memory chart, per configuration
    chart = rep.spec.chart("memory")
    chart_cols: list[tuple[int, str]] = []
    c = table_last_col + 2
    if chart is not None:
        for key in [s.y for s in chart.series] + list(chart.line):
            if key in keys:
                chart_cols.append((keys.index(key) + 2, key))
                continue
            book.label(ws, 1, c, rep.header(key), head)
            cols.append((c, key))
            chart_cols.append((c, key))
            c += 1
    ws.set_row(0, 60)
    ws.freeze_panes(1, 1)
    ws.autofilter(0, 0, last - 1, table_last_col - 1)
    name_style = book.style(bold=True, top=True)
    widths: dict[int, int] = {}  # the widest value of each column, in characters
    for i in range(n):
        r = first + i
        book.formula(ws, r, 1, rep.name_ref("relative", i), rep.ledgers[i].config.name, name_style)
        for j, key in cols:
            fmt = rep.cell_fmt(key, i)  # a cost in its row's currency
            style = book.style(fmt=fmt, wrap=j == check_col, top=True)
            got = rep.write_word(ws, r, j, "relative", key, i, style)
            if j != check_col:
                widths[j] = max(widths.get(j, 0), shown_width(got, fmt))
            if j == check_col and got:
                ws.set_row(r - 1, 15 * _lines(str(got), _SUMMARY_CHECK_WIDTH))
    # widths: every value whole (no "###"), no header word broken, text up to 60 characters (a
    # layout such as "dp128×tp1×pp16×cp1 = 2,048 GPUs; ep1; ZeRO-1; recompute full" whole)
    for j, key in cols:
        if j == check_col:
            continue
        text = rep.reg[key].unit in (R.TEXT, R.BOOL)
        least = 14 if rep.reg[key].unit == R.TEXT else 11
        need = max(least, header_width(rep.header(key)), widths.get(j, 0) + 2)
        ws.set_column(j - 1, j - 1, min(60, need) if text else need)
    # colours: a row whose verdicts say no (the model's flag), the check cell of a row that
    # breaks a rule (red) or has a warning (amber)
    rep.flag_format(ws, first - 1, 0, last - 1, table_last_col - 1, rep.flag_ref(rep.spec.flag))
    ok, check = rep.flag_ref(rep.spec.check_ok), f"${_letter(check_col)}{first}"
    rep.check_format(ws, first - 1, check_col - 1, last - 1, ok, check)
    # printing: the table (and the chart below it), one page wide, the header row repeated
    ws.repeat_rows(0)
    title = rep.t("ledger-report: summary", "ledger-report：汇总")
    print_setup(ws, summary_pages(n), title, rep.footer(), numbered=True)
    print_last_row = last
    if chart is not None:
        bar = stacked_chart(rep, chart, chart_cols, min(n, CHART_MAX))
        if n <= CHART_MAX:
            _ok(ws.insert_chart(last + 1, 0, bar), f"{SUMMARY}: the chart")
            print_last_row = last + 1 + _CHART_ROWS
        else:
            _ok(ws.insert_chart(1, c, bar), f"{SUMMARY}: the chart")
    ws.print_area(0, 0, print_last_row - 1, table_last_col - 1)


def stacked_chart(rep, chart: Any, chart_cols: list[tuple[int, str]], shown: int):
    """Per configuration, the series stacked in columns and the ``line`` quantities over them."""
    first = SUMMARY_FIRST_ROW
    last = first + shown - 1
    cats = [SUMMARY, first - 1, 0, last - 1, 0]
    bar = rep.book.wb.add_chart({"type": "column", "subtype": "stacked"})
    line = rep.book.wb.add_chart({"type": "line"})
    for c, key in chart_cols:
        series = {
            "name": rep.label(key),
            "categories": cats,
            "values": [SUMMARY, first - 1, c - 1, last - 1, c - 1],
        }
        if key in chart.line:
            line.add_series(series)
        else:
            bar.add_series({**series, "overlap": 100})
    bar.combine(line)
    y_axis = {"name": rep.t(chart.y_en, chart.y_zh)}
    chart_looks(bar, rep.chart_title(chart, shown), y_axis, min(40, 16 + 0.8 * shown))
    return bar


def summary_columns(model: Any = None, lang: str = "en") -> list[tuple[str, str]]:
    """(header, registry key) of the Summary table's columns after the name, in order (the
    values are the display formulas: bytes in GB, text in the workbook's language)."""
    model = model or DEFAULT
    return [(_header(model.registry, k, lang), k) for k in _summary_keys(model.spec)]


def summary_pages(n: int) -> int:
    """Pages the Summary prints on: SUMMARY_ROWS_PER_PAGE configurations a page."""
    return max(1, -(-n // SUMMARY_ROWS_PER_PAGE))
