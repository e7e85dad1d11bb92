"""The cell-writing layer every sheet uses: XlsxWriter's public API behind 1-based rows and
columns, the looks (cell styles), the checks on text, and the wrapped-text estimates that row
heights come from."""

from __future__ import annotations

import contextlib
import datetime as _dt
import io
import math
import re
import tempfile
import textwrap
import unicodedata
import warnings
from dataclasses import dataclass
from typing import Any, Iterator

import xlsxwriter
from xlsxwriter.utility import xl_cell_to_rowcol, xl_col_to_name

from ...config import MAX_TEXT_CHARS

FIXED_TIME = _dt.datetime(2000, 1, 1, 0, 0, 0)  # docProps/core.xml created and modified


# ------------------------------------------------------------------------------------------
# Looks

_HEADER_FILL = "#1F4E79"
_HEADER_FONT = "#FFFFFF"
_INPUT_FILL = "#FFF2CC"  # inputs look like inputs: pale yellow, blue text
_INPUT_FONT = "#1F3FBF"
_LOOKUP_FILL = "#EAF1DD"
_BAD_FILL = "#F4B6B6"  # a broken rule
_WARN_FILL = "#FFE699"  # a warning
_FLAG_FILL = "#F8CBAD"  # a verdict says no (does not fit, late)
_SECTION_FONT = "#1F4E79"
_UNIT_FONT = "#595959"
DASH = "—"  # a line or figure that does not apply to the configuration

F_INT = "#,##0"  # number formats besides a unit's (model/units.py UNIT_DISPLAY)
F_GENERAL = "General"


# Printing.
_MARGINS = {"left": 0.4, "right": 0.4, "top": 0.75, "bottom": 0.6}  # inches; header in the top
_HEADER_MARGIN = 0.3
_LINE_PT = 15.0  # points a line of 11-point text takes


# ------------------------------------------------------------------------------------------
# The book: XlsxWriter's public API.  Rows and columns are 1-based here, as a sheet shows them
# (XlsxWriter's are 0-based); the conversion happens only in this class.

_WORKBOOK_OPTIONS: dict[str, Any] = {
    "in_memory": True,  # no temp files; every zip entry stamped 1980-01-01 00:00:00
    "strings_to_formulas": False,  # a second guard: text is never a formula, whatever writes it
    "strings_to_urls": False,
    "strings_to_numbers": False,
    "nan_inf_to_errors": False,
}
_PROPERTIES: dict[str, Any] = {
    "title": "ledger-report: per-rank model-state ledgers and compute floors",
    "author": "ledger-report",  # also cp:lastModifiedBy, which XlsxWriter always writes
    "created": FIXED_TIME,  # also dcterms:modified
}
_CM_TO_PX = 96 / 2.54  # chart sizes are given in centimetres below


@dataclass(frozen=True)
class _Looks:
    """A cell's looks and their defaults (:meth:`_Book.style`)."""

    fmt: str = F_GENERAL
    bold: bool = False
    fill: str | None = None
    font_color: str | None = None
    quote: bool = False
    wrap: bool = False
    size: int | None = None
    italic: bool = False
    align: str | None = None
    top: bool = False


def _ok(status: int, what: str) -> None:
    """XlsxWriter's write methods return 0, or -1/-2 for a cell they did not (fully) write; before
    XlsxWriter 3.1.1 some (define_name) returned None on success."""
    if status not in (0, None):
        raise ValueError(f"{what}: XlsxWriter refused the cell (status {status})")


class _Book:
    """The workbook being written.  ``spill``: XlsxWriter assembles each sheet's XML in a
    temporary folder (removed when the book is finished, or by the folder's finaliser) instead of
    in one string per sheet, which for a large workbook is two thirds of its memory; its zip
    entries are then stamped 1980-01-31 instead of 1980-01-01, as deterministic."""

    def __init__(self, spill: bool = False) -> None:
        self.buf = io.BytesIO()
        options = dict(_WORKBOOK_OPTIONS)
        self._tmp = None
        if spill:
            self._tmp = tempfile.TemporaryDirectory(prefix="ledger-report-xlsx-")
            options.update(in_memory=False, tmpdir=self._tmp.name)
        self.wb = xlsxwriter.Workbook(self.buf, options)
        self.wb.set_properties(dict(_PROPERTIES))
        self._formats: dict[tuple, Any] = {}
        self._looks: dict[int, _Looks] = {}  # id(format) -> the looks it was made from
        self._fills: dict[str, Any] = {}

    def sheet(self, title: str):
        return self.wb.add_worksheet(title)

    # styles ---------------------------------------------------------------------------------
    def style(self, **looks: Any):
        """The (cached) cell format for these looks (:class:`_Looks`); ``None`` for none at all."""
        k = _Looks(**looks)
        if k in self._formats:
            return self._formats[k]
        props = {
            "num_format": k.fmt if k.fmt != F_GENERAL else None,
            "bold": k.bold,
            "italic": k.italic,
            "font_size": k.size,
            "font_color": k.font_color,
            "pattern": 1 if k.fill else None,  # solid
            "bg_color": k.fill,
            "text_wrap": k.wrap,
            "valign": "top" if k.wrap or k.top else None,
            "align": k.align,
            "quote_prefix": k.quote,
        }
        props = {p: v for p, v in props.items() if v}
        got = self._formats[k] = self.wb.add_format(props) if props else None
        if got is not None:
            self._looks[id(got)] = k
        return got

    def head(self, wrap: bool = False):
        """A table header: bold white on dark blue."""
        return self.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT, wrap=wrap)

    def entry(self, **looks: Any):
        """A cell a user fills in: pale yellow, blue text."""
        return self.style(fill=_INPUT_FILL, font_color=_INPUT_FONT, **looks)

    def section(self):
        """A section's title."""
        return self.style(bold=True, size=12, font_color=_SECTION_FONT)

    def fill(self, rgb: str):
        """The fill of a conditional format (a differential format: the fill only)."""
        if rgb not in self._fills:
            self._fills[rgb] = self.wb.add_format({"bg_color": rgb})
        return self._fills[rgb]

    def define(self, name: str, sheet: str, col: int, last_row: int) -> None:
        """The defined name ``name`` of rows 2 to ``last_row`` of column ``col`` of ``sheet``."""
        letter = _letter(col)
        _ok(self.wb.define_name(name, f"={sheet}!${letter}$2:${letter}${last_row}"), name)

    # cells ------------------------------------------------------------------------------------
    def text(self, ws, row: int, col: int, s: str, style=None, where: str = "") -> None:
        """User text (or text next to it) as a text cell with the quote prefix: never a formula,
        never an error value, whatever it starts with."""
        looks = vars(self._looks[id(style)]) if style is not None else {}
        self.label(ws, row, col, s, self.style(**{**looks, "quote": True}), where)

    def label(self, ws, row: int, col: int, s: str, style=None, where: str = "") -> None:
        """Our own text (headers, labels, help) as a text cell, without the quote prefix; ``""``
        as a formatted blank.  No control characters, at most 32,767 characters (XlsxWriter would
        escape or truncate)."""
        where, s = where or ws.get_name(), str(s)
        if len(s) > MAX_TEXT_CHARS:
            raise ValueError(
                f"{where}: text of {len(s):,} characters is over a cell's {MAX_TEXT_CHARS:,}"
            )
        if bad := _ILLEGAL_XML.search(s):
            raise ValueError(
                f"{where}: text holds the character U+{ord(bad.group()):04X}, which a workbook cannot store"
            )
        write = ws.write_string if s else ws.write_blank  # "": a formatted blank
        _ok(write(row - 1, col - 1, s, style), where)

    def value(self, ws, row: int, col: int, v: Any, style=None) -> None:
        """A number, a boolean or (``None``) a formatted blank."""
        where = f"{ws.get_name()}!{_letter(col)}{row}"
        if v is None:
            _ok(ws.write_blank(row - 1, col - 1, None, style), where)
        elif isinstance(v, bool):
            _ok(ws.write_boolean(row - 1, col - 1, v, style), where)
        elif isinstance(v, (int, float)):
            _ok(ws.write_number(row - 1, col - 1, _finite(v, where), style), where)
        else:
            raise TypeError(f"{where}: {v!r} is not a number, a boolean or blank")

    def formula(self, ws, row: int, col: int, text: str, cached: Any, style=None) -> None:
        """A formula cell (``text`` without ``=``) and the value it must show before any recalculation."""
        _ok(ws.write_formula(row - 1, col - 1, "=" + text, style, _cached(cached)), ws.get_name())

    @staticmethod
    def merge(ws, r1: int, c1: int, r2: int, c2: int) -> None:
        """Merge a range.  Called before the top-left cell is written: ``merge_range`` writes its
        (here empty, unformatted, so ignored) data there."""
        _ok(ws.merge_range(r1 - 1, c1 - 1, r2 - 1, c2 - 1, "", None), ws.get_name())

    # saving -----------------------------------------------------------------------------------
    def finish(self) -> bytes:
        try:
            self.wb.close()
        finally:
            if self._tmp is not None:
                self._tmp.cleanup()
        return self.buf.getvalue()


def _finite(v: int | float, where: str) -> int | float:
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"{where}: cannot store {v!r} in a cell")
    return v


def _cached(v: Any) -> Any:
    """The cached value XlsxWriter stores for a formula: a blank result (the formula's ``""``)
    as ``""``, booleans as booleans, numbers as numbers, text as text."""
    if v is None:
        return ""
    if isinstance(v, float):
        return float(_finite(v, "a cached value"))
    if isinstance(v, (int, str)):  # a bool is an int
        return v
    raise TypeError(f"cannot cache {v!r} in a cell")


@contextlib.contextmanager
def _strict_xlsxwriter() -> Iterator[None]:
    """XlsxWriter warns and carries on where it drops something (a header with a stray ``&G``,
    a validation message over 255 characters, a cell out of range); here that is an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", module=r"xlsxwriter(\.|$)")
        yield


_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _letter(i: int) -> str:
    """Column letters of a 1-based column number."""
    return xl_col_to_name(i - 1)


def _col_index(letter: str) -> int:
    """The 1-based column number of column letters."""
    return xl_cell_to_rowcol(f"{letter}1")[1] + 1


def _widened(s: str) -> str:
    """``s`` with each East Asian wide character twice, as wide as it shows."""
    if s.isascii():  # none is wide
        return s
    return "".join(ch * 2 if unicodedata.east_asian_width(ch) in "WF" else ch for ch in s)


def _text_width(s: str) -> int:
    """Display width: East Asian wide characters count twice."""
    return len(_widened(s))


def _lines(text: str, width_chars: float) -> int:
    """Lines a wrapped cell of ``width_chars`` (column-width units) takes for ``text`` (an
    estimate on the safe side: word wrap, wide characters twice)."""
    cap = max(4, int(width_chars * 0.92))
    paras = str(text).split("\n")
    return sum(max(1, len(textwrap.wrap(_widened(p), cap, break_on_hyphens=False))) for p in paras)


def _header_escape(s: str, limit: int = 120) -> str:
    """Page header text: ``&`` starts a header code, so a literal one is doubled; kept short
    (Excel allows 255 characters for all header sections together).  XlsxWriter reads every
    ``&G`` (and ``&[Picture]``) as an image placeholder, even after a doubled ``&``, so an
    ampersand before those is the full-width one (U+FF06), which needs no escape."""
    s = re.sub(r"[\x00-\x1f]", " ", s)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    s = s.replace("&G", "\uff06G").replace("&[Picture]", "\uff06[Picture]")
    return s.replace("&", "&&")


def chart_looks(chart, title: str, y_axis: dict, width_cm: float, x_axis: dict | None = None):
    """A chart's title, axes, legend (below) and size (12 cm tall)."""
    chart.set_title({"name": title, "name_font": {"size": 12}})
    if x_axis is not None:
        chart.set_x_axis(x_axis)
    chart.set_y_axis(y_axis)
    chart.set_legend({"position": "bottom"})
    chart.set_size({"width": round(width_cm * _CM_TO_PX), "height": round(12 * _CM_TO_PX)})


def print_setup(ws, tall: int, header: str | None = None, footer: str = "", numbered=False):
    """A4 landscape, one page wide and ``tall`` pages tall (0: as many as it takes); with a
    ``header``, the margins that hold it, and the ``footer`` (page numbers where ``numbered``)."""
    ws.set_landscape()
    ws.set_paper(9)  # A4
    ws.fit_to_pages(1, tall)
    if header is not None:
        ws.set_margins(**_MARGINS)
        ws.set_header("&C&11 " + _header_escape(header), margin=_HEADER_MARGIN)
        pages = "&R&8 &P / &N" if numbered else ""
        ws.set_footer("&L&8 " + _header_escape(footer) + pages, margin=_HEADER_MARGIN)


_QUOTED = re.compile(r'"([^"]*)"')
_PLACES = re.compile(r"\.([0#]+)")


def shown_width(v: Any, fmt: str) -> int:
    """Characters a value takes in a cell of number format ``fmt`` at the default font (digits,
    separators and the quoted unit; text by its display width): what a column needs so that a
    number never shows as "###"."""
    if v is None or v == "":
        return 0
    if isinstance(v, str):
        return _text_width(v)
    if isinstance(v, bool):
        return 5
    if fmt == F_GENERAL:
        return len(f"{v:.10g}")
    quoted = _QUOTED.search(fmt)
    suffix = len(quoted.group(1)) + 1 if quoted else 0
    if "E+" in fmt:
        return 10 + suffix
    places = _PLACES.search(fmt)
    n = len(places.group(1)) if places else 0
    text = f"{v:,.{n}f}" if "," in fmt else f"{v:.{n}f}"
    return len(text) + (1 if fmt.endswith("%") else 0) + suffix


def header_width(text: str) -> int:
    """The width a wrapped header needs so that no word breaks: its longest word (a header
    without spaces, as Chinese ones are, wraps anywhere; counted to 20 at most)."""
    return min(20, max((_text_width(w) for w in str(text).split()), default=0)) + 2
