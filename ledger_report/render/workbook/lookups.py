"""The hidden lookup sheets the formulas read: the tables, the choice lists and the models."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Mapping, Sequence

from ...catalogue import COLUMNS as GPU_COLUMNS
from ...catalogue import GPUS, USER_DESCRIBED
from ...config import COLUMNS, MODEL_FILLS
from ...config import ENUM as K_ENUM
from .cells import _LOOKUP_FILL, _Book
from .inputs import _enum_source
from .layout import LISTS, MODELS_SHEET, _name, _table_specs


def write_lookups(book: _Book, t: Any, models: Mapping[str, Mapping[str, Any]] | None) -> None:
    """The lookup sheets, hidden: they are tables, not pages (a hidden sheet prints nowhere; show
    it to read or change it); the Models sheet (models.py) where ``models`` are given."""
    gpus = {g.name: asdict(g) for g in (*GPUS.values(), USER_DESCRIBED)}  # the catalogue's rows
    for table, title, fields in _table_specs(t):
        extra = (
            [c for c in GPU_COLUMNS if c not in fields and c != "name"] if table == "gpu" else []
        )
        rows = {k: {**gpus[k], **rec} if extra else rec for k, rec in t[table].items()}
        header = ["name" if table == "gpu" else table, *fields, *extra]
        _table_sheet(book, title, header, rows, [80 if h == "source" else 14 for h in header])
        for c, f in enumerate([None, *fields], start=1):
            book.define(_name(table, f), title, c, 1 + len(rows))
        if table == "gpu":  # the choices: the catalogue's rows, less the user-described GPU's
            book.define("list_gpu", title, 1, len(rows))
    _write_lists(book)
    if models is not None:
        widths = [36] + [max(10, len(col) + 2) for col in MODEL_FILLS]
        _table_sheet(book, MODELS_SHEET, ["model", *MODEL_FILLS], models, widths)
        for c, col in enumerate([None, *MODEL_FILLS], start=1):
            book.define(_name("models", col), MODELS_SHEET, c, 1 + len(models))


def _table_sheet(book: _Book, title: str, header: Sequence[str], rows, widths) -> None:
    """A hidden sheet of ``header`` and, per (key, record) of ``rows``, the key and the record's
    value of each further header (text as text, none as no cell)."""
    ws = book.sheet(title)
    ws.hide()
    head = book.head()
    cell = book.style(fill=_LOOKUP_FILL)
    text = book.style(fill=_LOOKUP_FILL, quote=True)
    for c, (h, width) in enumerate(zip(header, widths), start=1):
        book.label(ws, 1, c, h, head)
        ws.set_column(c - 1, c - 1, width)
    for r, (key, rec) in enumerate(rows.items(), start=2):
        book.text(ws, r, 1, key, text, f"{title}!A{r}")
        for c, f in enumerate(header[1:], start=2):
            x = rec.get(f)
            if isinstance(x, str):
                book.text(ws, r, c, x, text)
            elif x is not None:
                book.value(ws, r, c, x, cell)
    ws.freeze_panes(1, 1)


def _write_lists(book: _Book) -> None:
    """The choice lists of the enumerated columns whose choices the column table holds (gpu's
    are the catalogue's rows)."""
    ws = book.sheet(LISTS)
    ws.freeze_panes(1, 0)
    ws.hide()
    head = book.head()
    text = book.style(fill=_LOOKUP_FILL, quote=True)
    cols = [c for c in COLUMNS if c.kind == K_ENUM and c.choices]
    for c, col in enumerate((c for c in cols if _enum_source(c).startswith("list_")), start=1):
        book.label(ws, 1, c, col.name, head)
        for i, choice in enumerate(col.choices):
            book.text(ws, 2 + i, c, choice, text)
        ws.set_column(c - 1, c - 1, max(12, len(col.name) + 2))
        book.define(_enum_source(col), LISTS, c, 1 + len(col.choices))
