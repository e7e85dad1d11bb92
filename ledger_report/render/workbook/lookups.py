"""The hidden lookup sheets the formulas read."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ...catalogue import COLUMNS as GPU_COLUMNS
from ...catalogue import GPUS, USER_DESCRIBED
from ...config import COLUMNS
from ...config import ENUM as K_ENUM
from .cells import _LOOKUP_FILL, _Book
from .inputs import _enum_source
from .layout import LISTS, _name, _table_specs


def _write_lookups(book: _Book, t: Any) -> None:
    """The lookup sheets the formulas read, hidden: they are tables, not pages (a hidden sheet
    prints nowhere; show it to read or change it)."""
    gpus = {g.name: asdict(g) for g in (*GPUS.values(), USER_DESCRIBED)}  # the catalogue's rows
    head = book.head()
    cell_st = book.style(fill=_LOOKUP_FILL)
    text_st = book.style(fill=_LOOKUP_FILL, quote=True)
    for table, title, fields in _table_specs(t):
        ws = book.sheet(title)
        ws.hide()
        rows = t[table]
        extra: list[str] = []
        if table == "gpu":
            extra = [c for c in GPU_COLUMNS if c not in fields and c != "name"]
        header = [table if table != "gpu" else "name"] + fields + extra
        for c, h in enumerate(header, start=1):
            book.label(ws, 1, c, h, head)
            ws.set_column(c - 1, c - 1, 14 if h != "source" else 80)
        for r, (key, rec) in enumerate(rows.items(), start=2):
            book.text(ws, r, 1, key, text_st)
            values = {**gpus[key], **rec} if extra else rec
            for c, f in enumerate(fields + extra, start=2):
                x = values[f]
                if isinstance(x, str):
                    book.text(ws, r, c, x, text_st)
                else:
                    book.value(ws, r, c, x, cell_st)
        last = 1 + len(rows)
        book.define(_name(table, None), title, 1, last)
        if table == "gpu":
            book.define("list_gpu", title, 1, last - 1)
        for c, f in enumerate(fields, start=2):
            book.define(_name(table, f), title, c, last)
        ws.freeze_panes(1, 1)
    # the choice lists of the other enumerated columns
    ws = book.sheet(LISTS)
    ws.freeze_panes(1, 0)
    ws.hide()
    c = 0
    # the columns whose choices the column table holds (gpu's are the catalogue's rows)
    for col in COLUMNS:
        if col.kind != K_ENUM or not col.choices or not _enum_source(col).startswith("list_"):
            continue
        c += 1
        book.label(ws, 1, c, col.name, head)
        for i, choice in enumerate(col.choices):
            book.text(ws, 2 + i, c, choice, text_st)
        ws.set_column(c - 1, c - 1, max(12, len(col.name) + 2))
        book.define(_enum_source(col), LISTS, c, 1 + len(col.choices))
