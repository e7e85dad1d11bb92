"""The printable ledgers' grid: column widths in grid units, spans, small print."""

from __future__ import annotations

from ...model import registry as R
from .cells import _lines

_NAME_SPAN = 16  # print sheets: grid columns of the configuration's name (row 2)
_PANE_WIDTH = 14  # grid columns of a figure column (label 8, value 4, unit 2)


def _small_lines(text: str, width: int) -> float:
    """Lines ``text`` takes in small print over ``width`` grid columns, in lines of 11-point text."""
    return _lines(text, width * _U_CHARS * 11 / _SMALL) * _SMALL / 11


_U = 3.29  # the print sheet's grid column, in column-width units (28 pixels)
_U_CHARS = 4.0  # characters a grid column holds
_PANE = (8, 4, 2)  # a figure row: label, value, unit (grid columns)
_TABLE_LABEL = 8  # grid columns of a row label at the top
_TABLE_LABEL_MIN, _TABLE_LABEL_MAX = 5, 10  # ... of a table line's label (from its longest)
_TEXT_LABEL = 5  # ... of a label in a section of sentences (the verdicts)
_SMALL = 8  # points: the wide text columns of tables (sources, breakdowns)
_SPAN_BY_UNIT = {R.TEXT: 4, R.BPP: 2, R.BOOL: 2, R.COUNT: 2, R.PARAMS: 5, R.BYTES: 3}
_REST_MIN = 12  # grid columns of a table's wide text column (sources, breakdowns) at least
