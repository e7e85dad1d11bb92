"""The Budget sheet: the spec's budget section side by side, and its chart of cost against days."""

from __future__ import annotations

from functools import partial

from ...model import registry as R
from ...model.expr import IsBlank, Ref, if_
from ...report import Section
from .cells import _LINE_PT, F_INT, _letter, _ok, chart_looks, print_setup
from .layout import BUDGET, CHART_MAX
from .report import _unit_word, money_format

# What the Budget sheet shows before the spec's budget figures: the accelerator, how many, the
# days needed against the deadline, and the spec's verdicts (so a row that does not fit, or is
# late, reads so beside its cost).
_CONTEXT = ("gpu", "gpus", "days_on_config", "days")
# The functions the totals use besides the model's (formula.FUNCTIONS): all in openpyxl's FORMULAE
# and evaluated by LibreOffice 7.4.
FUNCTIONS = frozenset({"SUM", "SUMIF", "COUNTIF", "COLUMNS"})
# The figures the totals add up, within one currency (a cost, or GPU-hours of rows priced in it).
_TOTALS = ("gpu_hours", "cost", "cost_with_reserve", "cost_deadline_hold")
_BUDGET_WIDTH = 18  # a configuration's column: 11,735,094.00 USD at the default font


def write_budget(rep, ws) -> None:
    """The spec's budget section, one column per configuration, after the GPUs, days and
    verdicts; totals per currency (never one total across currencies); a print area of those,
    one page wide; and its chart of cost against days (over chart-data rows below)."""
    book, n = rep.book, rep.n
    head = book.head(wrap=True)
    sec = next((s for s in rep.spec.sections if s.key == "budget"), None)
    figures = [f.key for f in sec.figures] if isinstance(sec, Section) else []
    verdicts = [f.key for f in rep.spec.summary_figures()]
    keys = [k for k in dict.fromkeys([*_CONTEXT, *verdicts, *figures]) if k in rep.reg]
    title = rep.t(sec.en, sec.zh) if sec is not None else rep.t("Budget", "预算")
    book.label(ws, 1, 1, title, head)
    book.label(ws, 1, 2, rep.t("unit", "单位"), head)
    ws.set_column(0, 0, 40)
    ws.set_column(1, 1, 10)
    ws.set_column(2, 1 + n, _BUDGET_WIDTH)
    for i in range(n):
        book.formula(ws, 1, 3 + i, rep.name_ref("absolute", i), rep.ledgers[i].config.name, head)
    ws.set_row(0, 45)
    ws.freeze_panes(1, 2)
    rows = {key: r for r, key in enumerate(keys, start=2)}
    for key, r in rows.items():
        _label(rep, ws, r, key)
        wrap = key in verdicts
        for i in range(n):
            style = book.style(fmt=rep.cell_fmt(key, i), wrap=wrap, top=wrap)
            rep.write_word(ws, r, 3 + i, "absolute", key, i, style)
        if wrap:
            longest = max(len(str(lg.values.get(key) or "")) for lg in rep.ledgers)
            ws.set_row(r - 1, _LINE_PT * max(1, -(-longest // (_BUDGET_WIDTH - 1))))
    last = write_totals(rep, ws, 3 + len(keys), rows)
    # printed: the figures and totals, one page wide, the labels repeated on every page across
    ws.print_area(0, 0, last - 1, max(1 + n, 1 + len(_currencies(rep))))
    ws.repeat_columns(0, 1)
    title = rep.t("ledger-report: budget", "ledger-report：预算")
    print_setup(ws, 0, title, rep.footer(), numbered=True)
    write_chart(rep, ws, last + 1)


def _label(rep, ws, r: int, key: str, text: str = "", style=None) -> None:
    """A figure's row label (``text``, else the quantity's) and its unit."""
    rep.book.label(ws, r, 1, text or rep.label(key), style)
    rep.book.label(ws, r, 2, _unit_word(rep.reg[key].unit, rep.lang), style)


def _currencies(rep) -> dict[str, tuple[str, list]]:
    """The rows by currency: its case-folded text (the spreadsheet's SUMIF compares text ignoring
    case; "" for the rows that give none) -> (the text as first written, the rows), in row order."""
    out: dict[str, tuple[str, list]] = {}
    for lg in rep.ledgers:
        cur = lg.values.get("currency")
        fold = cur.casefold() if isinstance(cur, str) and cur.strip() else ""
        out.setdefault(fold, (str(cur or ""), []))[1].append(lg)
    return out


def write_totals(rep, ws, r: int, rows: dict[str, int]) -> int:
    """One column per currency (and one for the rows that give none): the configurations priced
    in it and the sum of each total figure over them (SUMIF over the currency row); the last row
    written."""
    book, n = rep.book, rep.n
    currencies = _currencies(rep)
    keys = [k for k in _TOTALS if k in rows]
    if "currency" not in rows or not keys:
        return r - 1
    head = book.head()
    book.label(ws, r, 1, rep.t("Totals by currency", "按币种合计"), book.section())
    never = rep.t("(never added across currencies)", "（不同币种不相加）")
    book.label(ws, r, 2, never, book.style(italic=True))
    r += 1
    book.label(ws, r, 1, rep.t("currency", "币种"), head)
    book.label(ws, r, 2, "", head)
    for j, (cur, _lgs) in enumerate(currencies.values()):
        if cur:
            book.text(ws, r, 3 + j, cur, head, f"{BUDGET} totals")
        else:
            book.label(ws, r, 3 + j, rep.t("(not given)", "（未给出）"), head)
    header = r
    span = f"$C${{row}}:${_letter(2 + n)}${{row}}"
    in_cur = span.format(row=rows["currency"])
    named = [f"{_letter(3 + j)}${header}" for j, fold in enumerate(currencies) if fold]

    def each(fn: str, rest: str, whole: str) -> list[str]:
        """A formula per currency column: ``fn`` over the rows in that currency; for the rows
        that give none, ``whole`` less every named currency's (a blank is no SUMIF criterion)."""
        unnamed = "-".join([whole] + [f"{fn}({in_cur},{c}{rest})" for c in named])
        return [
            f"{fn}({in_cur},{_letter(3 + j)}${header}{rest})" if fold else unnamed
            for j, fold in enumerate(currencies)
        ]

    r += 1
    book.label(ws, r, 1, rep.t("configurations", "配置数"))
    counts = each("COUNTIF", "", f"COLUMNS({in_cur})")
    for j, (_cur, lgs) in enumerate(currencies.values()):
        book.formula(ws, r, 3 + j, counts[j], len(lgs), book.style(fmt=F_INT))
    for key in keys:
        r += 1
        _label(rep, ws, r, key, rep.t("total ", "合计：") + rep.label(key))
        values = span.format(row=rows[key])
        sums = each("SUMIF", f",{values}", f"SUM({values})")
        for j, (cur, lgs) in enumerate(currencies.values()):
            got = [lg.values.get(key) for lg in lgs]
            total = sum(v for v in got if isinstance(v, (int, float)) and not isinstance(v, bool))
            fmt = money_format(cur, rep.fmt(key)) if rep.reg[key].unit == R.MONEY else rep.fmt(key)
            book.formula(ws, r, 3 + j, sums[j], total, book.style(fmt=fmt))
    return r


def write_chart(rep, ws, r: int) -> None:
    """The spec's budget chart over chart-data rows from row ``r + 1``."""
    book, n = rep.book, rep.n
    chart = rep.spec.chart("budget")
    if chart is None:
        return
    # chart data: each series' x and y, 0 where blank (a chart reads text as 0, and Excel
    # reads a scatter series with any text x as 1, 2, 3 ...)
    r += 1
    book.label(ws, r, 1, rep.t("chart data", "图表数据"), book.section())
    r += 1
    first = r  # series k: its x on row first + 2k, its y below
    for key in [key for s in chart.series for key in (s.x, s.y)]:
        _label(rep, ws, r, key, style=book.style(italic=True))
        style = book.style(fmt=rep.fmt(key))
        build = partial(if_, IsBlank(Ref(key)), 0, Ref(key))
        for i in range(n):
            rep.write(ws, r, 3 + i, "absolute", ("chart", key), build, i, style)
        r += 1
    shown = min(n, CHART_MAX)
    sc = book.wb.add_chart({"type": "scatter"})
    markers = ("circle", "diamond", "square", "triangle")
    for k, s in enumerate(chart.series):
        x = first - 1 + 2 * k  # 0-based
        sc.add_series(
            {
                "name": rep.label(s.y),
                "categories": [BUDGET, x, 2, x, 1 + shown],
                "values": [BUDGET, x + 1, 2, x + 1, 1 + shown],
                "marker": {"type": markers[k % len(markers)], "size": 7},
            }
        )
    x_axis = {"name": rep.t(chart.x_en, chart.x_zh), "min": 0}
    y_axis = {"name": rep.t(chart.y_en, chart.y_zh), "min": 0}
    chart_looks(sc, rep.chart_title(chart, shown), y_axis, 20, x_axis)
    _ok(ws.insert_chart(r + 1, 0, sc), f"{BUDGET}: the chart")
