"""The spec's tables on a printable ledger."""

from __future__ import annotations

import math
from itertools import accumulate
from typing import Any

from ...model import registry as R
from ...report import Line, Table
from ..view import word as view_word
from .cells import _text_width
from .layout import _PANE, _SMALL, _U_CHARS, _grid_lines
from .report import _words

_TABLE_LABEL_MIN, _TABLE_LABEL_MAX = 5, 10  # grid columns of a line's label (from its longest)
_SPAN_BY_UNIT = {R.TEXT: 4, R.BPP: 2, R.BOOL: 2, R.COUNT: 2, R.PARAMS: 5, R.BYTES: 3}
_REST_MIN = 12  # grid columns of a wide text column (sources, breakdowns) at least


def _unit(reg: Any, t: Table, col: Any) -> str:
    """The unit of a table's column: its own, else its first line's quantity's."""
    keys = (ln.cells[col.name].key for ln in t.lines if ln.cells[col.name].key)
    return col.unit or next((reg[k].unit for k in keys), "")


def table_columns(page, t: Table) -> tuple[list[tuple[str, Any, int]], int]:
    """The printed columns of a table, (kind, column, grid width), and their total width: the
    line's label, then each column with a quantity or a breakdown (a column of fixed values
    is the line's label already), then the line's source where the table gives it."""
    longest = max(_text_width(page.rep.t(ln.en, ln.zh)) for ln in t.lines)
    label = min(_TABLE_LABEL_MAX, max(_TABLE_LABEL_MIN, math.ceil(longest / _U_CHARS)))
    cols: list[tuple[str, Any, int]] = [("label", None, label)]
    for col in t.columns:
        cells = [ln.cells[col.name] for ln in t.lines]
        if any(c.items for c in cells):
            cols.append(("items", col, 0))
        elif any(c.key for c in cells):
            cols.append(("key", col, _SPAN_BY_UNIT.get(_unit(page.rep.reg, t, col), 3)))
    if t.sources:
        cols.append(("source", None, 0))
    return cols, sum(w or _REST_MIN for _k, _c, w in cols)


def write_table(page, r: int, c0: int, t: Table, width: int) -> int:
    """A table over ``width`` grid columns from row ``r``: its title, header, lines (hidden where
    they do not apply) and totals; the row after it."""
    rep = page.rep
    cols, _need = table_columns(page, t)
    widths = [w for _k, _c, w in cols]
    rests = [k for k, w in enumerate(widths) if w == 0]
    spare = width - sum(widths)
    for n, k in enumerate(rests):  # the wide columns share what is left
        widths[k] = spare // len(rests) + (1 if n < spare % len(rests) else 0)
    placed = list(zip(accumulate(widths[:-1], initial=c0), widths, cols))  # (column, width, ...)
    page.label(r, c0, rep.t(t.en, t.zh), "section")
    r += 1
    for c, w, (kind, col, _w) in placed:
        if kind in ("label", "source"):
            text = rep.t("source", "来源") if kind == "source" else ""
        else:
            text = rep.t(col.en, col.zh) + (" (GB)" if _unit(rep.reg, t, col) == R.BYTES else "")
        page.label(r, c, text, "head", w)
        page.need(r, _grid_lines(text, w))
    r += 1
    for ln in t.lines:
        if not page.shows(ln.show):
            page.hidden.add(r)
        guards = (ln.show,)
        lines = [_cell(page, r, c, w, ln, kind, col, guards) for c, w, (kind, col, _w) in placed]
        page.need(r, max([1, *lines]))
        r += 1
    wide = (width - _PANE[1] - _PANE[2], _PANE[1], _PANE[2])  # labels under a table: its width
    for f in t.total:
        if not f.pages or not page.shows(f.show):
            continue
        page.figure_row(r, c0, f, rep.label(f.shown), (f.show,) if page.chosen else (), wide)
        r += 1
    return r


def _cell(page, r: int, c: int, w: int, ln: Line, kind: str, col: Any, guards) -> float:
    """A table line's cell of a ``kind`` column over ``w`` grid columns; the lines it takes."""
    rep, ws, book = page.rep, page.ws, page.book
    page.span(r, c, w)
    if kind == "label":
        text = rep.t(ln.en, ln.zh)
        book.label(ws, r, c, text, page.st["text"])
        return _grid_lines(text, w)
    if kind == "source":
        text = rep.reg[ln.formula].source if ln.formula else ""
        book.label(ws, r, c, text, page.st["small_note"])
        return _grid_lines(text, w, _SMALL)
    cell = ln.cells[col.name]
    if kind == "items":  # the breakdown's sentence
        got = page.put_figure(r, c, cell.text, guards, page.st["small"])
        if page.chosen:
            got = page.longest(lambda l: l.values[rep.text_key(cell.text)])
        return _grid_lines(str(got or ""), w, _SMALL)
    if cell.key:
        words = _words(rep.lang, *col.words) if col.words else None
        page.value_cell(r, c, cell.key, guards, words, col.unit)
    else:
        book.label(ws, r, c, view_word(cell.value, rep.lang), page.st["text"])
    return 1
