"""The live-formula workbook and the empty input template: a module per sheet, over a
cell-writing layer (``cells``), the places things sit (``layout``) and the report sheets' display
formulas and units (``report``).

Every computed figure is a formula generated from the model's single definition of that figure
(``model/formula.py``), cached with the number the engine computed: this package decides layout,
never figures.  Above :data:`MAX_PRINT_SHEETS` configurations the printable ledgers are one
``Ledger`` sheet chosen in a dropdown (LibreOffice pays about 45 ms and 6 MB per sheet).

Written with XlsxWriter's public API only; any XlsxWriter warning is an error.  Two things it
decides, and this package accepts: a formula whose cached text is exactly an Excel error code
(``#N/A``, ...; only a configuration named so) carries that error until the first recalculation;
a blank result (the formulas' ``""``) is cached as an empty ``<v>``, which readers see as empty.
The cyclic garbage collector is paused while the workbook is written (``workers.no_cyclic_gc``:
XlsxWriter keeps every cell until it saves, and each full collection walks them all).  The bytes
are deterministic (``cells``: fixed zip stamps and document times).
"""

from __future__ import annotations

from typing import Any, Sequence

from ...config import LANGS, Config
from ...model.tables import tables
from ..workers import no_cyclic_gc
from .budget import write_budget
from .cells import _Book, _strict_xlsxwriter
from .help import _write_help
from .inputs import EXAMPLE_ROW, _write_inputs
from .layout import (
    BUDGET,
    HELP,
    INPUTS,
    LEDGER,
    LEDGERS,
    MAX_PRINT_SHEETS,
    RESERVED_TITLES,
    SUMMARY,
    TEMPLATE_ROWS,
    _no_print,
    sheet_title,
)
from .ledgers import write_ledgers
from .lookups import write_lookups
from .models import model_rows, relocated
from .page import _PrintSheet
from .plans import write_plans
from .report import _Report
from .summary import summary_columns, summary_pages, write_summary

__all__ = [
    "render_xlsx",
    "template_xlsx",
    "sheet_title",
    "summary_columns",
    "summary_pages",
    "MAX_PRINT_SHEETS",
    "INPUTS",
    "LEDGERS",
    "SUMMARY",
    "BUDGET",
    "EXAMPLE_ROW",  # the template's example row (output.template_csv)
]


def render_xlsx(
    ledgers: Sequence[Any],
    lang: str = "en",
    *,
    folders: tuple[Any, Any] | None = None,
    plans: Any = None,
) -> bytes:
    """The live-formula workbook of these ledgers (``engine.Ledger``), as deterministic bytes.

    ``lang`` ("en" or "zh") is the language of the labels, titles, headers and help; the Inputs
    column names and the Ledgers keys stay as they are, so a workbook in either language is a
    valid input.  ``folders``: (the folder the rows were read from, the folder the workbook goes
    to); a row's config.json ``model`` path, relative to the first, is written relative to the
    second, so the workbook rebuilds from where it is."""
    ledgers = list(ledgers)
    if not ledgers:
        raise ValueError("a workbook needs at least one configuration")
    if lang not in LANGS:
        raise ValueError(f"lang is one of {', '.join(LANGS)}, not {lang!r}")
    model = ledgers[0].model
    if any(lg.model is not model and lg.model != model for lg in ledgers):
        raise ValueError("the ledgers of one workbook come from one model")
    with _strict_xlsxwriter(), no_cyclic_gc():
        return _render(ledgers, model, lang, folders, plans)


def _render(ledgers: list[Any], model: Any, lang: str, folders: Any, plans: Any) -> bytes:
    n = len(ledgers)
    book = _Book(spill=n > MAX_PRINT_SHEETS)  # a large workbook's XML goes through temp files
    rep = _Report(book, model, lang, ledgers)

    summary = book.sheet(SUMMARY)
    if plans is not None:
        write_plans(book, plans, lang)
    inputs = book.sheet(INPUTS)
    led = book.sheet(LEDGERS)
    configs = [relocated(l.config, folders) for l in ledgers]
    models = model_rows(configs)
    _write_inputs(book, inputs, configs, dropdown_rows=n, models=models)
    write_ledgers(rep, led)
    write_summary(rep, summary)
    if n <= MAX_PRINT_SHEETS:
        taken = {t.casefold() for t in RESERVED_TITLES}
        for i, l in enumerate(ledgers):
            title = sheet_title(l.name, taken)
            taken.add(title.casefold())
            _PrintSheet(rep, book.sheet(title), i).write()
    else:
        _PrintSheet(rep, book.sheet(LEDGER), None).write()
    write_budget(rep, book.sheet(BUDGET))
    help_ws = book.sheet(HELP)
    _write_help(book, help_ws, built=True, lang=lang)
    write_lookups(book, model.tables, models)
    for ws in (inputs, led, help_ws):
        _no_print(ws)
    return book.finish()


def template_xlsx(lang: str = "en") -> bytes:
    """The empty input workbook: the input columns with help, dropdowns and one example row."""
    with _strict_xlsxwriter(), no_cyclic_gc():
        book = _Book()
        _write_inputs(book, book.sheet(INPUTS), [Config(EXAMPLE_ROW, "template")], TEMPLATE_ROWS)
        _write_help(book, book.sheet(HELP), built=False, lang=lang)
        write_lookups(book, tables(), None)
        return book.finish()
