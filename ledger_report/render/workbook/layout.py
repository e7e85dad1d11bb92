"""Where things sit: the sheet titles, the Inputs and Ledgers columns, the lookup tables' names,
the print sheets' grid."""

from __future__ import annotations

import re
from typing import Any, Iterable

from ...config import COLUMN_NAMES
from ...model import formula as fx
from ...model import registry as R
from ...model.definitions import REGISTRY
from ...model.tables import GPU_FIELDS, TABLE_SHEETS, tables
from .cells import _letter, _lines

SUMMARY = "Summary"
INPUTS = "Inputs"
LEDGERS = "Ledgers"
LEDGER = "Ledger"  # the one print sheet with a dropdown, above MAX_PRINT_SHEETS configurations
HELP = "Help"
BUDGET = "Budget"
LISTS = "Lists"
MODELS_SHEET = "Models"  # the models the architecture cells follow (models.py)
PLANS = "Plans"  # the plan workbook's (plans.py)
_OWN_TITLES = (SUMMARY, INPUTS, LEDGERS, LEDGER, BUDGET, HELP, LISTS, MODELS_SHEET, PLANS)
RESERVED_TITLES = (*_OWN_TITLES, *TABLE_SHEETS.values(), "History")  # Excel reserves History

MAX_PRINT_SHEETS = 50
CHART_MAX = 50  # configurations shown in the Summary and Budget charts
# the Summary prints on ceil(n / 30) pages (one page wide, its header repeated)
SUMMARY_ROWS_PER_PAGE = 30
NO_PRINT_ROW = 1048576  # the one empty cell that is the print area of a sheet left out of the print
INPUT_FIRST_ROW = 2  # Inputs: row 1 is the header
LEDGER_FIRST_ROW = 3  # Ledgers: row 1 the key, row 2 the label and unit
SUMMARY_FIRST_ROW = 2
TEMPLATE_ROWS = 1000  # rows of the template that carry dropdowns and input styling


CHOSEN_CELL = (10, 14)  # the one Ledger sheet: row 3, the chosen name's first grid column and width
# the chosen row within Ledgers (MATCH), a column after the chosen name (page.write_chooser)
CHOSEN_ROW_REF = f"${_letter(CHOSEN_CELL[0] + CHOSEN_CELL[1] + 1)}$3"

# The print sheets' grid: widths in grid columns.
_U = 3.29  # a grid column, in column-width units (28 pixels)
_U_CHARS = 4.0  # characters a grid column holds
_NAME_SPAN = 16  # the configuration's name (row 2)
_PANE = (8, 4, 2)  # a figure row: label, value, unit
_PANE_WIDTH = sum(_PANE)  # a pane of figures
_TABLE_LABEL = 8  # a row label at the top
_TEXT_LABEL = 5  # a label in a section of sentences (the verdicts)
_SMALL = 8  # points: the wide text columns of tables (sources, breakdowns)


def _grid_lines(text: str, width: int, size: float = 11) -> float:
    """Lines ``text`` takes over ``width`` grid columns at ``size`` points, in 11-point lines."""
    return _lines(text, width * _U_CHARS * 11 / size) * size / 11


INPUT_LETTERS: dict[str, str] = {c: _letter(i + 1) for i, c in enumerate(COLUMN_NAMES)}


def _quantity_letters(reg: R.Registry) -> dict[str, str]:
    """The Ledgers column of each quantity of a registry (A is the name)."""
    return {k: _letter(i + 2) for i, k in enumerate(reg.keys())}


QUANTITY_LETTERS: dict[str, str] = _quantity_letters(REGISTRY)  # the default model's


def _table_specs(t: Any = None) -> list[tuple[str, str, list[str]]]:
    """(table, sheet, fields) of the lookup sheets, in sheet order."""
    t = tables() if t is None else t
    return [
        (name, sheet, list(GPU_FIELDS) if name == "gpu" else list(next(iter(t[name].values()))))
        for name, sheet in TABLE_SHEETS.items()
    ]


def _name(table: str, field: str | None) -> str:
    return f"tbl_{table}_{field or 'key'}"


def _layout(reg: R.Registry = REGISTRY, t: Any = None) -> fx.Layout:
    """Where the Ledgers sheet's formulas find the inputs, the quantities and the lookup tables."""
    specs = _table_specs(t)
    refs = {(table, f): _name(table, f) for table, _s, fields in specs for f in [None, *fields]}
    letters = QUANTITY_LETTERS if reg is REGISTRY else _quantity_letters(reg)
    return fx.Layout(INPUTS, INPUT_LETTERS, letters, refs)


def sheet_title(name: str, taken: Iterable[str] = ()) -> str:
    """A sheet title for a configuration name: no ``[]:*?/\\``, no leading or trailing quote, at
    most 31 characters (UTF-16 units, as Excel counts), not a reserved title and unique
    (case-insensitively) among ``taken``."""
    taken_cf = {t.casefold() for t in taken}
    base = re.sub(r"[\[\]:*?/\\\x00-\x1f\x7f]", "_", str(name)).strip().strip("'").strip()

    def fit(s: str, limit: int) -> str:
        while len(s.encode("utf-16-le")) // 2 > limit:
            s = s[:-1]
        return s.rstrip().rstrip("'") or "config"

    title = fit(base, 31)
    k = 2
    while title.casefold() in taken_cf or title.casefold() == "history":
        suffix = f" ({k})"
        title = fit(base, 31 - len(suffix)) + suffix
        k += 1
    return title


def _no_print(ws) -> None:
    """A sheet that the workbook's default print leaves out: its print area is one empty cell far
    below the data (Excel and LibreOffice print nothing for it; clear the print area to print it).
    Printing every sheet without a print area would print the whole Ledgers sheet."""
    ws.print_area(NO_PRINT_ROW - 1, 0, NO_PRINT_ROW - 1, 0)
