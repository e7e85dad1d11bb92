"""The Ledgers sheet: one row per configuration, one live formula per registry quantity."""

from __future__ import annotations

from ...model import formula as fx
from ...model import registry as R
from .cells import F_GENERAL, _cached, _col_index, _ok, header_width, shown_width
from .layout import INPUT_FIRST_ROW, INPUTS, LEDGER_FIRST_ROW, LEDGERS
from .report import _UNIT_FORMATS, money_format


def _widest(ledgers, q, fmt: str) -> int:
    """The width a number column needs for its largest and its most negative value (a cost with
    its currency after it), so that no cell shows "###"; 0 for text and truth values."""
    if q.unit in (R.TEXT, R.BOOL):
        return 0
    got = (lg.values.get(q.key) for lg in ledgers)
    numbers = [v for v in got if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not numbers:
        return 0
    suffix = 5 if q.unit == R.MONEY else 0  # ' "USD"'
    return max(shown_width(max(numbers, key=abs), fmt), shown_width(min(numbers), fmt)) + 2 + suffix


def write_ledgers(rep, ws) -> None:
    book = rep.book
    head = book.head()
    sub = book.style(italic=True, wrap=True)
    book.label(ws, 1, 1, "name", head)
    book.label(ws, 2, 1, rep.t("configuration", "配置"), sub)
    ws.set_column(0, 0, 24)
    templates = fx.compile_registry(rep.reg, rep.base)
    columns = []  # (0-based column, template, format, key)
    for q in rep.reg:
        j = _col_index(rep.letters[q.key])
        book.label(ws, 1, j, q.key, head)
        label = f"{rep.label(q.key)} [{q.unit}]"
        book.label(ws, 2, j, label, sub)
        fmt = _UNIT_FORMATS.get(q.unit, F_GENERAL)
        least = max(12, min(28, len(q.key) + 2), header_width(label))
        ws.set_column(j - 1, j - 1, max(least, _widest(rep.ledgers, q, fmt)))
        columns.append((j - 1, templates[q.key], book.style(fmt=fmt), q.key))
    ws.set_row(1, 45)
    ws.freeze_panes(LEDGER_FIRST_ROW - 1, 1)
    # the hot loop (some 550 formulas a configuration): XlsxWriter's calls directly, one check per row
    write = ws.write_formula
    money = {q.key for q in rep.reg if q.unit == R.MONEY} if "currency" in rep.reg else set()
    for i, led in enumerate(rep.ledgers):
        r0 = LEDGER_FIRST_ROW - 1 + i  # 0-based
        in_row, led_row = INPUT_FIRST_ROW + i, LEDGER_FIRST_ROW + i
        values = led.values
        status = write(r0, 0, f"={INPUTS}!A{in_row}", None, _cached(led.config.name))
        cur = values.get("currency") if money else None
        for c0, template, style, key in columns:
            if key in money:  # a cost in its row's currency
                style = book.style(fmt=money_format(cur, _UNIT_FORMATS[R.MONEY]))
            status |= write(
                r0, c0, "=" + template.fill(in_row, led_row), style, _cached(values[key])
            )
        _ok(status, f"{LEDGERS} row {led_row}")
    # the check column turns red where the row breaks a rule, amber for a warning
    check, ok = rep.letters[rep.spec.check], rep.letters[rep.spec.check_ok]
    first = LEDGER_FIRST_ROW
    c0 = _col_index(check) - 1
    rep.check_format(ws, first - 1, c0, rep.last - 1, f"${ok}{first}", f"${check}{first}")
