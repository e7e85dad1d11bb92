"""The live-formula workbook and the empty input template.

``render_xlsx(ledgers, lang)`` returns the bytes of a workbook whose every computed figure is a
formula generated from the model's single definition of that figure (``model/formula.py``) and
carries, as its cached value, the number the engine computed.  What the report sheets show is the
ledgers' own model (``Ledger.model``): its registry (labels, units, sources) and its report spec
(``report.py``: sections, tables, the summary, the assumptions, the charts), walked as the other
reporters walk it; this module decides layout, never figures.  Sheets:

* ``Summary``: one row per configuration: the spec's summary figures, its verdicts and the row's
  check (the rules it breaks, from the model's constraints: red for a broken rule, amber for a
  warning); rows coloured where the model's ``verdicts_bad`` flag is true; a stacked chart of
  per-rank memory by state against HBM (the spec's ``memory`` chart);
* ``Inputs``: the rows as values (row 1 = the input column names; user text always a text
  cell with the quote prefix; blanks stay blank so defaults resolve by formula), dropdowns for
  the enumerated columns, comments with each column's help; ``read_configs`` reads it back;
* ``Ledgers``: one row per configuration, one column per registry quantity (row 1 the key, row 2
  the label and unit), each cell a live formula over its own row of ``Inputs``, earlier columns
  and the lookup sheets; its check column is coloured like the Summary's;
* one printable ledger per configuration (A4 landscape, one page: the spec's tables stacked on
  the left, its figure sections in two columns on the right, the assumptions below) while there
  are at most :data:`MAX_PRINT_SHEETS`; above that one ``Ledger`` sheet whose configuration is
  chosen in a dropdown (LibreOffice pays about 45 ms and 6 MB per sheet);
* ``Budget``: the spec's budget section, one column per configuration, and a scatter chart of
  cost against days (the spec's ``budget`` chart);
* ``Help``, and the lookup sheets ``Dtypes``, ``Moments``, ``Optimizers``, ``GPUs``,
  ``Conventions``, ``Lists`` (hidden).

Every figure of the report sheets is a display formula over its configuration's Ledgers row: an
expression over registry quantities (the quantity, bytes in GB, a truth value as a word, "—" where
a line does not apply) compiled like the quantities themselves and cached with the value the
engine's interpreter gives that expression, so a recalculation gives the same text and numbers.

Printing.  The workbook's default print (Excel's "print entire workbook", LibreOffice's PDF
export) is the Summary and one page per configuration.  A sheet without a print area prints
whole in both, so the sheets that are not pages (Inputs, Ledgers, Budget, Help) have one empty
cell far below their data as print area (nothing printed; clear it to print one), and the lookup
sheets are hidden (hidden sheets never print, and they are tables the formulas read, not pages).
Print sheets fit one page; the Summary fits one page wide and ``summary_pages(n)`` tall with its
header row repeated; wrapped text gets row heights from its length, and the page header sits in
a top margin that holds it.

Written with XlsxWriter's public API only (openpyxl is the reader's library): every formula cell
gets its cached value from ``write_formula(..., value)``; user text always goes through
``write_string`` (never ``write``, which would turn a leading ``=`` into a formula) and the
workbook is opened with ``strings_to_formulas``/``strings_to_urls``/``strings_to_numbers`` off as
a second guard.  Any XlsxWriter warning (a dropped header, an over-long validation message, an
out-of-range cell) is raised as an error instead of leaving a silently different workbook.

Two things XlsxWriter decides, and this module accepts: a formula whose cached text is exactly an
Excel error code (``#N/A``, ``#DIV/0!``, ...; only a configuration named so) carries it as that
error value until the first recalculation, which gives the text again (pandas reads NaN there
meanwhile; the Inputs cell, which a rebuild reads, is text); and a blank result (the formulas'
``""``) is cached as an empty ``<v>``, which readers see as an empty cell.

Speed (bench/bench_workbook.py: 1,000 configurations of 545 quantities, so 545,000 Ledgers
formulas and some 35,000 on the report sheets; 2 shared cores): 24-43 s to write, 16 MB; the
commit before the report sheets walked the spec took 32-52 s on the same machine, so the Ledgers
sheet sets the time, not the report sheets (about 2 s).  Three quarters of it is XlsxWriter's
``write_formula`` running some 30 regular-expression substitutions over every formula for its
dynamic-array function prefixes (``_xlfn.``): 18 s of 24 for the Ledgers formulas alone.  It does
so whatever the options (``use_future_functions`` only adds more substitutions); no public option
or method skips it (the openpyxl writer with shared formulas and XML written directly took 0.5 s
for 227 quantities).  XlsxWriter writes no shared formulas, so every row carries its formula
text.  LibreOffice opens and fully recalculates the workbook in about 14 s (Summary to CSV) at
1.0 GB, as before.

The bytes are deterministic: ``in_memory`` mode stamps every zip entry 1980-01-01 00:00:00 and
the document properties carry the fixed ``created`` time (:data:`FIXED_TIME`), so the same
ledgers give the same bytes on one operating system (a zip entry records the system that made it;
tests/test_workbook.py builds twice, and in processes with different hash seeds).

Sources: research/ecosystem.md sections 1-2 and 5 (cached values, LibreOffice's per-sheet cost,
``1E+9`` literals, functions LibreOffice 7.4 evaluates), research/reliability.md sections 1
(formula injection: text cells and ``quotePrefix``) and 4.4 (determinism).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import io
import math
import re
import textwrap
import unicodedata
import warnings
from typing import Any, Callable, Iterable, Iterator, Sequence

import xlsxwriter
from xlsxwriter.utility import xl_cell_to_rowcol, xl_col_to_name

from ..config import BOOL as K_BOOL
from ..config import COLUMN_NAMES, COLUMNS, Column, Config, default_text
from ..config import COUNT as K_COUNT
from ..config import ENUM as K_ENUM
from ..config import FLOAT as K_FLOAT
from ..config import INT as K_INT
from ..model import formula as fx
from ..model import registry as R
from ..model.definitions import REGISTRY
from ..model.evaluate import eval_scalar
from ..model.expr import Expr, IsBlank, Ref, concat, if_
from ..model.tables import GPU_FIELDS, TABLE_SHEETS, tables
from ..report import Figure, Line, Section, Table
from .view import WORDS
from .view import word as view_word

_COLUMN_CHOICES = {c.name: c.choices for c in COLUMNS if c.choices}

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
]


SUMMARY = "Summary"
INPUTS = "Inputs"
LEDGERS = "Ledgers"
LEDGER = "Ledger"  # the one print sheet with a dropdown, above MAX_PRINT_SHEETS configurations
HELP = "Help"
BUDGET = "Budget"
DTYPES, MOMENTS, OPTIMIZERS, GPUS, LISTS = "Dtypes", "Moments", "Optimizers", "GPUs", "Lists"
RESERVED_TITLES = (
    SUMMARY,
    INPUTS,
    LEDGERS,
    LEDGER,
    BUDGET,
    HELP,
    *TABLE_SHEETS.values(),
    LISTS,
    "History",
)
LANGS = ("en", "zh")

MAX_PRINT_SHEETS = 50
CHART_MAX = 50  # configurations shown in the Summary and Budget charts
SUMMARY_ROWS_PER_PAGE = (
    30  # the Summary prints on ceil(n / 30) pages (one page wide, its header repeated)
)
NO_PRINT_ROW = 1048576  # the one empty cell that is the print area of a sheet left out of the print
INPUT_FIRST_ROW = 2  # Inputs: row 1 is the header
LEDGER_FIRST_ROW = 3  # Ledgers: row 1 the key, row 2 the label and unit
SUMMARY_FIRST_ROW = 2
TEMPLATE_ROWS = 1000  # rows of the template that carry dropdowns and input styling
MAX_TEXT_CHARS = 32767  # a cell's limit; XlsxWriter would truncate with a warning

GB = 10**9

FIXED_TIME = _dt.datetime(2000, 1, 1, 0, 0, 0)  # docProps/core.xml created and modified

# ------------------------------------------------------------------------------------------
# Looks

_HEADER_FILL = "FF1F4E79"
_HEADER_FONT = "FFFFFFFF"
_INPUT_FILL = "FFFFF2CC"  # inputs look like inputs: pale yellow, blue text
_INPUT_FONT = "FF1F3FBF"
_LOOKUP_FILL = "FFEAF1DD"
_BAD_FILL = "FFF4B6B6"  # a broken rule
_WARN_FILL = "FFFFE699"  # a warning
_FLAG_FILL = "FFF8CBAD"  # a verdict says no (does not fit, late)
_SECTION_FONT = "FF1F4E79"
_UNIT_FONT = "FF595959"
DASH = "—"  # a line or figure that does not apply to the configuration

# Number formats by registry unit (Ledgers) and by what a column shows (Summary, print sheets).
F_INT = "#,##0"
F_GB = "#,##0.00"
F_DAYS = "#,##0.0"
F_SCI = "0.000E+00"
F_BPP = "0.0###"
F_RATIO = "0.0000"
F_MONEY = "#,##0.00"
F_GENERAL = "General"
_UNIT_FORMATS = {
    R.BYTES: F_INT,
    R.PARAMS: F_INT,
    R.FLOPS: F_SCI,
    R.SECONDS: "#,##0.00",
    R.DAYS: "#,##0.00",
    R.COUNT: "#,##0.##",
    R.BPP: F_BPP,
    R.RATIO: F_RATIO,
    R.TOKENS: F_INT,
    R.TOKENS_PER_S: "#,##0.0",
    R.TFLOPS: "#,##0.##",
    R.GB: "#,##0.##",
    R.HOURS: "#,##0.0",
    R.MONEY: F_MONEY,
    R.GBPS: "#,##0.##",
}
# ... and as the report sheets show them (bytes in GB)
_SHOW_FORMATS = dict(
    _UNIT_FORMATS,
    **{
        R.BYTES: F_GB,
        R.DAYS: F_DAYS,
        R.HOURS: F_INT,
        R.NODE_HOURS: F_INT,
        R.TOKENS_PER_S: F_INT,
        R.TB: "#,##0.##",
    },
)
# The unit a report cell's number is in, by registry unit (none: a plain number, text, a truth value;
# a cost's unit is the row's currency, a formula).
_UNIT_WORDS = {
    "en": {
        R.BYTES: "GB",
        R.PARAMS: "params",
        R.FLOPS: "FLOPs",
        R.BPP: "B/param",
        R.SECONDS: "s",
        R.DAYS: "days",
        R.TOKENS: "tokens",
        R.TOKENS_PER_S: "tokens/s",
        R.TFLOPS: "TFLOP/s",
        R.GB: "GB",
        R.HOURS: "GPU-h",
        R.NODE_HOURS: "node-h",
        R.GBPS: "GB/s",
        R.TB: "TB",
    },
    "zh": {
        R.BYTES: "GB",
        R.PARAMS: "参数",
        R.FLOPS: "FLOPs",
        R.BPP: "字节/参数",
        R.SECONDS: "秒",
        R.DAYS: "天",
        R.TOKENS: "token",
        R.TOKENS_PER_S: "token/秒",
        R.TFLOPS: "TFLOP/s",
        R.GB: "GB",
        R.HOURS: "GPU 小时",
        R.NODE_HOURS: "节点小时",
        R.GBPS: "GB/s",
        R.TB: "TB",
    },
}
# Printing.
_MARGINS = {
    "left": 0.4,
    "right": 0.4,
    "top": 0.75,
    "bottom": 0.6,
}  # inches; the header sits in the top 0.75
_HEADER_MARGIN = 0.3
_CHART_ROWS = 24  # rows of 15 points under a chart 12 cm tall
_SUMMARY_CHECK_WIDTH = 48
_NAME_SPAN = 16  # print sheets: grid columns of the configuration's name (row 2)
_PANE_WIDTH = 14  # grid columns of a figure column (label 8, value 4, unit 2)
CHOSEN_CELL = (10, 14)  # the one Ledger sheet: row 3, the chosen name's first grid column and width
CHOSEN_ROW_REF = (
    f"${xl_col_to_name(CHOSEN_CELL[0] + CHOSEN_CELL[1])}$3"  # the chosen row within Ledgers (MATCH)
)


# ------------------------------------------------------------------------------------------
# Public entry points


def render_xlsx(ledgers: Sequence[Any], lang: str = "en") -> bytes:
    """The live-formula workbook of these ledgers (``engine.Ledger``), as deterministic bytes.

    ``lang`` ("en" or "zh") is the language of the labels, titles, headers and help; the Inputs
    column names and the Ledgers keys stay as they are, so a workbook in either language is a
    valid input.  What the report sheets show is the ledgers' own model (``Ledger.model``: its
    registry and report spec), not this module's."""
    ledgers = list(ledgers)
    if not ledgers:
        raise ValueError("a workbook needs at least one configuration")
    if lang not in LANGS:
        raise ValueError(f"lang is one of {', '.join(LANGS)}, not {lang!r}")
    model = ledgers[0].model
    if any(lg.model is not model and lg.model != model for lg in ledgers):
        raise ValueError("the ledgers of one workbook come from one model")
    with _strict_xlsxwriter():
        return _render(ledgers, model, lang)


def _render(ledgers: list[Any], model: Any, lang: str) -> bytes:
    book = _Book()
    n = len(ledgers)
    rep = _Report(book, model, lang, ledgers)

    summary = book.sheet(SUMMARY)
    inputs = book.sheet(INPUTS)
    led = book.sheet(LEDGERS)
    _write_inputs(book, inputs, [l.config for l in ledgers], dropdown_rows=n)
    rep.write_ledgers(led)
    rep.write_summary(summary)
    if n <= MAX_PRINT_SHEETS:
        taken = {t.casefold() for t in RESERVED_TITLES}
        for i, l in enumerate(ledgers):
            title = sheet_title(l.name, taken)
            taken.add(title.casefold())
            _PrintSheet(rep, book.sheet(title), i).write()
    else:
        _PrintSheet(rep, book.sheet(LEDGER), None).write()
    budget = book.sheet(BUDGET)
    rep.write_budget(budget)
    help_ws = book.sheet(HELP)
    _write_help(book, help_ws, built=True, lang=lang)
    _write_lookups(book, model.tables)
    for ws in (inputs, led, budget, help_ws):
        _no_print(ws)
    return book.finish()


def template_xlsx(lang: str = "en") -> bytes:
    """The empty input workbook: the input columns with help, dropdowns and one example row."""
    with _strict_xlsxwriter():
        book = _Book()
        inputs = book.sheet(INPUTS)
        _write_inputs(book, inputs, [Config(EXAMPLE_ROW, "template")], dropdown_rows=TEMPLATE_ROWS)
        _write_help(book, book.sheet(HELP), built=False, lang=lang)
        _write_lookups(book, tables())
        return book.finish()


EXAMPLE_ROW: dict[str, Any] = {
    "name": "example-8b-dp32-tp2",
    "notes": "Example row (a Llama-3-8B-like dense model): replace it or add rows below",
    "layers": 32,
    "hidden": 4096,
    "heads": 32,
    "kv_heads": 8,
    "ffn_hidden": 14336,
    "vocab": 128256,
    "framework": "megatron",
    "weight_dtype": "bf16",
    "grad_dtype": "fp32",
    "dp": 32,
    "tp": 2,
    "pp": 1,
    "zero": 1,
    "sequence_parallel": True,
    "seq_len": 8192,
    "micro_batch": 1,
    "global_batch": 512,
    "recompute": "selective",
    "gpu": "H100-SXM",
    "mfu": 0.4,
    "tokens": 1_000_000_000_000,
    "days": 30,
    "reserve_days": 3,
    "price_per_gpu_hour": 2.5,
}


def sheet_title(name: str, taken: Iterable[str] = ()) -> str:
    """A sheet title for a configuration name: no ``[]:*?/\\``, no leading or trailing quote, at
    most 31 characters (UTF-16 units, as Excel counts), not a reserved title and unique
    (case-insensitively) among ``taken``."""
    taken_cf = {t.casefold() for t in taken}
    base = re.sub(r"[\[\]:*?/\\\x00-\x1f\x7f]", "_", str(name)).strip().strip("'").strip()
    base = base or "config"

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


def _rgb(argb: str) -> str:
    """``FF1F4E79`` (the looks above) as XlsxWriter's ``#1F4E79``."""
    return "#" + argb[-6:]


def _ok(status: int, what: str) -> None:
    """XlsxWriter's write methods return 0, or -1/-2 for a cell they did not (fully) write; before
    XlsxWriter 3.1.1 some (define_name) returned None on success."""
    if status not in (0, None):
        raise ValueError(f"{what}: XlsxWriter refused the cell (status {status})")


class _Book:
    def __init__(self) -> None:
        self.buf = io.BytesIO()
        self.wb = xlsxwriter.Workbook(self.buf, dict(_WORKBOOK_OPTIONS))
        self.wb.set_properties(dict(_PROPERTIES))
        self._formats: dict[tuple, Any] = {}
        self._looks: dict[int, dict[str, Any]] = {}  # id(format) -> the looks it was made from
        self._fills: dict[str, Any] = {}

    def sheet(self, title: str):
        return self.wb.add_worksheet(title)

    # styles ---------------------------------------------------------------------------------
    def style(
        self,
        *,
        fmt: str = F_GENERAL,
        bold: bool = False,
        fill: str | None = None,
        font_color: str | None = None,
        quote: bool = False,
        wrap: bool = False,
        size: float | None = None,
        italic: bool = False,
        align: str | None = None,
        top: bool = False,
    ):
        """The (cached) cell format for these looks; ``None`` for none at all."""
        looks = dict(
            fmt=fmt,
            bold=bold,
            fill=fill,
            font_color=font_color,
            quote=quote,
            wrap=wrap,
            size=size,
            italic=italic,
            align=align,
            top=top,
        )
        key = tuple(looks.values())
        if key in self._formats:
            return self._formats[key]
        props: dict[str, Any] = {}
        if fmt != F_GENERAL:
            props["num_format"] = fmt
        if bold:
            props["bold"] = True
        if italic:
            props["italic"] = True
        if size:
            props["font_size"] = size
        if font_color:
            props["font_color"] = _rgb(font_color)
        if fill:
            props["pattern"] = 1  # solid
            props["bg_color"] = _rgb(fill)
        if wrap:
            props["text_wrap"] = True
        if wrap or top:
            props["valign"] = "top"
        if align:
            props["align"] = align
        if quote:
            props["quote_prefix"] = True
        got = self.wb.add_format(props) if props else None
        self._formats[key] = got
        if got is not None:
            self._looks[id(got)] = looks
        return got

    def quoted(self, style):
        """The same looks with the quote prefix (user text)."""
        looks = dict(self._looks[id(style)]) if style is not None else {}
        looks["quote"] = True
        return self.style(**looks)

    def fill(self, argb: str):
        """The fill of a conditional format (a differential format: the fill only)."""
        if argb not in self._fills:
            self._fills[argb] = self.wb.add_format({"bg_color": _rgb(argb)})
        return self._fills[argb]

    # cells ------------------------------------------------------------------------------------
    def text(self, ws, row: int, col: int, s: str, style=None, where: str = "") -> None:
        """User text (or text next to it) as a text cell with the quote prefix: never a formula,
        never an error value, whatever it starts with."""
        self.label(ws, row, col, s, self.quoted(style), where)

    def label(self, ws, row: int, col: int, s: str, style=None, where: str = "") -> None:
        """Our own text (headers, labels, help) as a text cell, without the quote prefix; ``""``
        as a formatted blank."""
        s = check_text(str(s), where or ws.get_name())
        if s == "":
            _ok(ws.write_blank(row - 1, col - 1, None, style), where or ws.get_name())
        else:
            _ok(ws.write_string(row - 1, col - 1, s, style), where or ws.get_name())

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
        self.wb.close()
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
    if isinstance(v, bool):
        return bool(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(_finite(v, "a cached value"))
    if isinstance(v, str):
        return str(v)
    raise TypeError(f"cannot cache {v!r} in a cell")


@contextlib.contextmanager
def _strict_xlsxwriter() -> Iterator[None]:
    """XlsxWriter warns and carries on where it drops something (a header with a stray ``&G``,
    a validation message over 255 characters, a cell out of range); here that is an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", module=r"xlsxwriter(\.|$)")
        yield


_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def check_text(s: str, where: str) -> str:
    """Text a cell can hold: no control characters, at most 32,767 characters (XlsxWriter would
    escape or truncate)."""
    if len(s) > MAX_TEXT_CHARS:
        raise ValueError(
            f"{where}: text of {len(s):,} characters is over a cell's {MAX_TEXT_CHARS:,}"
        )
    bad = _ILLEGAL_XML.search(s)
    if bad:
        raise ValueError(
            f"{where}: text holds the character U+{ord(bad.group()):04X}, which a workbook cannot store"
        )
    return s


# ------------------------------------------------------------------------------------------
# Layout: where inputs, quantities and lookups sit


def _letter(i: int) -> str:
    """Column letters of a 1-based column number."""
    return xl_col_to_name(i - 1)


def _col_index(letter: str) -> int:
    """The 1-based column number of column letters."""
    return xl_cell_to_rowcol(f"{letter}1")[1] + 1


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
    refs: dict[tuple[str, str | None], str] = {}
    for table, _sheet, fields in _table_specs(t):
        refs[(table, None)] = _name(table, None)
        for f in fields:
            refs[(table, f)] = _name(table, f)
    letters = QUANTITY_LETTERS if reg is REGISTRY else _quantity_letters(reg)
    return fx.Layout(INPUTS, INPUT_LETTERS, letters, refs)


# ------------------------------------------------------------------------------------------
# Inputs


def _enum_source(col: Column) -> str:
    """The defined name whose range lists the choices of an enumerated column."""
    if col.name == "gpu":
        return "list_gpu"  # the catalogue's rows, without the last: the profile of a user-described GPU
    if col.name == "optimizer":
        return _name("optimizer", None)
    if col.name in ("m_dtype", "v_dtype"):
        return _name("moment", None)
    return f"list_{col.name}"


def _help_text(col: Column) -> str:
    lines = [col.help_en, col.help_zh]
    if col.unit:
        lines.append(f"unit: {col.unit}")
    lines.append(
        f"default: {col.default}"
        if col.default
        else ("required" if col.required else "default: empty")
    )
    if col.choices:
        lines.append("choices: " + ", ".join(col.choices))
    elif col.name == "gpu":
        lines.append("choices: the GPUs sheet")
    bounds = []
    if col.minimum is not None:
        bounds.append(f"{'>' if col.min_exclusive else '≥'} {col.minimum:g}")
    if col.maximum is not None:
        bounds.append(f"≤ {col.maximum:g}")
    if bounds:
        lines.append("range: " + ", ".join(bounds))
    return "\n".join(lines)


def _count_rule(col: Column, letter: str) -> str:
    """The custom validation of a count column: text (``35B``, ``8.19e9``, ``8,190,735,360``: the
    reader parses it when the workbook is rebuilt) or a number within the column's range."""
    ref = f"{letter}{INPUT_FIRST_ROW}"  # relative: the rule moves with each cell of the range
    tests = [f"ISNUMBER({ref})"]
    if col.minimum is not None:
        tests.append(f"{ref}{'>' if col.min_exclusive else '>='}{fx.number(col.minimum)}")
    if col.maximum is not None:
        tests.append(f"{ref}<={fx.number(col.maximum)}")
    return f"=OR(ISTEXT({ref}),AND({','.join(tests)}))"


def _write_inputs(book: _Book, ws, configs: list[Config], dropdown_rows: int) -> None:
    head = book.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT)
    text_in = book.style(fill=_INPUT_FILL, font_color=_INPUT_FONT, quote=True)
    num_in = book.style(fill=_INPUT_FILL, font_color=_INPUT_FONT, fmt=F_GENERAL)
    count_in = book.style(fill=_INPUT_FILL, font_color=_INPUT_FONT, fmt=F_INT)
    empty_in = book.style(
        fill=_INPUT_FILL, font_color=_INPUT_FONT
    )  # the empty cells look like inputs too
    for j, col in enumerate(COLUMNS, start=1):
        book.label(ws, 1, j, col.name, head)
        _ok(
            ws.write_comment(
                0, j - 1, _help_text(col), {"author": "ledger-report", "width": 320, "height": 150}
            ),
            f"{INPUTS}!{INPUT_LETTERS[col.name]}1 (comment)",
        )
        width = 24 if col.name in ("name", "notes") else max(10, len(col.name) + 3)
        ws.set_column(j - 1, j - 1, width, empty_in)
    # the rows, as values: text always a text cell, blank stays blank (the default is resolved
    # by formula), numbers and booleans typed
    for i, cfg in enumerate(configs):
        r = INPUT_FIRST_ROW + i
        for j, col in enumerate(COLUMNS, start=1):
            v = cfg.values.get(col.name)
            where = f"{INPUTS}!{INPUT_LETTERS[col.name]}{r}"
            if v is None or v == "":
                continue
            if isinstance(v, str):
                book.text(ws, r, j, v, text_in, f"{where} ({col.name} of {cfg.name!r})")
            elif isinstance(v, (bool, int, float)):
                book.value(ws, r, j, v, count_in if col.kind == K_COUNT else num_in)
            else:
                book.text(ws, r, j, str(v), text_in, where)
    ws.freeze_panes(1, 1)
    first, last = INPUT_FIRST_ROW - 1, INPUT_FIRST_ROW + max(dropdown_rows, 1) - 2  # 0-based rows
    for j, col in enumerate(COLUMNS):
        bounds = _help_text(col).splitlines()[-1]
        rule: dict[str, Any] | None = None
        if col.kind == K_ENUM:
            rule = {
                "validate": "list",
                "source": "=" + _enum_source(col),
                "error_title": col.name,
                "error_message": f"{col.name}: choose one of the list (see the Help sheet)",
            }
            if (
                col.name == "gpu"
            ):  # a GPU outside the catalogue is allowed with hbm_gb and peak_tflops
                rule.update(
                    error_type="warning",
                    error_message="gpu: not in the GPUs sheet; give hbm_gb and peak_tflops to describe it",
                )
        elif col.kind == K_COUNT:
            # not "decimal": Excel would refuse 35B, which the reader accepts (README, Inputs)
            rule = {
                "validate": "custom",
                "value": _count_rule(col, INPUT_LETTERS[col.name]),
                "error_type": "warning",
                "error_title": col.name,
                "error_message": f"{col.name}: a number ({bounds}) or a count such as 8.19e9, 35B, 5T, 350M, 7K",
            }
        elif col.kind in (K_INT, K_FLOAT) and (col.minimum is not None or col.maximum is not None):
            kind = "integer" if col.kind == K_INT else "decimal"
            lo = col.minimum if col.minimum is not None else -1e307
            hi = col.maximum if col.maximum is not None else 1e307
            if col.min_exclusive:
                lo = lo + (1e-9 if kind == "decimal" else 1)
            rule = {
                "validate": kind,
                "criteria": "between",
                "minimum": fx.number(lo),
                "maximum": fx.number(hi),
                "error_type": "warning",
                "error_title": col.name,
                "error_message": f"{col.name}: expected a number, {bounds}",
            }
        elif col.kind == K_BOOL:
            rule = {"validate": "list", "source": ["TRUE", "FALSE"], "error_type": "warning"}
        if rule is not None:
            rule.update(ignore_blank=True, show_error=True)
            _ok(
                ws.data_validation(first, j, last, j, rule),
                f"{INPUTS}: the validation of {col.name}",
            )


# ------------------------------------------------------------------------------------------
# The report sheets: what they show is the spec's, every figure a formula over Ledgers


def _words(lang: str, true: Any = True, false: Any = False) -> tuple[str, str]:
    return WORDS[lang][true], WORDS[lang][false]


def _unit_word(unit: str, lang: str) -> str:
    return _UNIT_WORDS[lang].get(unit, "")


def _header(reg: R.Registry, key: str, lang: str) -> str:
    """A column header: the quantity's label and the unit the column shows it in."""
    q = reg[key]
    label = q.en if lang == "en" else q.zh
    unit = _unit_word(q.unit, lang)
    return f"{label} ({unit})" if unit else label


def _summary_keys(spec: Any) -> list[str]:
    """The Summary's figures: the spec's summary, the figures of its summary sections (the
    verdicts), the row's check."""
    keys = [f.key for f in spec.summary]
    for s in spec.summary_sections:
        keys += [f.key for f in spec.section(s).figures]
    keys.append(spec.check)
    return list(dict.fromkeys(keys))


class _Report:
    """The sheets that present the ledgers (Ledgers, Summary, the print sheets, Budget) for one
    model and one language.  Every figure is a display formula over its configuration's Ledgers
    row: an expression over registry quantities (the quantity itself, bytes in GB, a truth value
    as a word, a line that does not exist as "—"), compiled by ``model/formula.py`` like the
    quantities themselves, and cached with the value the engine's interpreter gives it."""

    def __init__(self, book: _Book, model: Any, lang: str, ledgers: list[Any]) -> None:
        self.book = book
        self.model = model
        self.reg = model.registry
        self.spec = model.spec
        self.tables = model.tables
        self.lang = lang
        self.ledgers = ledgers
        self.n = len(ledgers)
        self.last = LEDGER_FIRST_ROW + self.n - 1
        self.letters = _quantity_letters(self.reg)
        self.table_refs = _layout(self.reg, self.tables).tables
        self._layouts: dict[str, fx.Layout] = {}
        self._compiled: dict[tuple, tuple[Expr, fx.Template]] = {}

    # words --------------------------------------------------------------------------------
    def t(self, en: str, zh: str) -> str:
        return en if self.lang == "en" else zh

    def label(self, key: str) -> str:
        q = self.reg[key]
        return q.en if self.lang == "en" else q.zh

    def header(self, key: str) -> str:
        return _header(self.reg, key, self.lang)

    def text_key(self, key: str) -> str:
        """The quantity a text figure shows in this language (its ``_zh`` twin where it has one)."""
        if self.lang == "zh" and self.reg[key].unit == R.TEXT and f"{key}_zh" in self.reg:
            return f"{key}_zh"
        return key

    # display expressions ------------------------------------------------------------------
    def shown(self, key: str, words: tuple[str, str] | None = None) -> Expr:
        """A quantity as a report cell shows it: bytes in GB, a truth value as a word where
        ``words`` are given, text in the workbook's language."""
        unit = self.reg[key].unit
        if unit == R.BYTES:
            return Ref(key) / GB
        if unit == R.BOOL and words:
            return if_(Ref(key), words[0], words[1])
        shown = self.text_key(key)
        e: Expr = Ref(shown)
        if unit == R.TEXT and shown == key:
            for v, w in reversed(self.choice_words(key)):
                e = if_(Ref(key).eq(v), w, e)
        return e

    def choice_words(self, key: str) -> list[tuple[str, str]]:
        """(value, word) for the values of a choice quantity that this language says in its own
        words (the handout's words); empty in English and for composed text."""
        if self.lang == "en":
            return []
        got = R.choices(self.reg, key, _COLUMN_CHOICES) or ()
        return [(v, WORDS[self.lang][v]) for v in got if WORDS[self.lang].get(v, v) != v]

    def fmt(self, key: str) -> str:
        return _SHOW_FORMATS.get(self.reg[key].unit, F_GENERAL)

    # formulas over a Ledgers row ----------------------------------------------------------
    def layout(self, mode: str) -> fx.Layout:
        """Where a report cell finds the quantities: ``relative`` (Ledgers!X3, the Summary),
        ``absolute`` (Ledgers!$X$3, a print sheet or Budget column of one configuration) or
        ``chosen`` (the row chosen on the one print sheet above MAX_PRINT_SHEETS)."""
        if mode not in self._layouts:
            if mode == "relative":
                q = {k: f"{LEDGERS}!{l}" for k, l in self.letters.items()}
            elif mode == "absolute":
                q = {k: f"{LEDGERS}!${l}$" for k, l in self.letters.items()}
            else:
                q = {
                    k: f"INDEX({LEDGERS}!${l}${LEDGER_FIRST_ROW}:${l}${self.last},{CHOSEN_ROW_REF})"
                    for k, l in self.letters.items()
                }
            self._layouts[mode] = fx.Layout(INPUTS, INPUT_LETTERS, q, self.table_refs)
        return self._layouts[mode]

    def compiled(
        self, mode: str, ident: tuple, build: Callable[[], Expr]
    ) -> tuple[Expr, fx.Template]:
        hit = self._compiled.get((mode, ident))
        if hit is None:
            e = build()
            hit = self._compiled[(mode, ident)] = (
                e,
                fx.compile_expression(self.reg, e, self.layout(mode), str(ident[0])),
            )
        return hit

    def formula(
        self, mode: str, ident: tuple, build: Callable[[], Expr], i: int | None
    ) -> tuple[str, Any]:
        """(formula text, cached value) of a display expression for configuration ``i`` (None: the
        chosen row, cached as the first configuration, which the dropdown starts on)."""
        e, t = self.compiled(mode, ident, build)
        lg = self.ledgers[i or 0]
        row = "" if mode == "chosen" else str(LEDGER_FIRST_ROW + (i or 0))
        return t.text.replace(fx.LEDGER_ROW, row), eval_scalar(
            e, lg.config.values, lg.values, self.tables
        )

    def write(
        self,
        ws,
        r: int,
        c: int,
        mode: str,
        ident: tuple,
        build: Callable[[], Expr],
        i: int | None,
        style=None,
    ) -> Any:
        text, cached = self.formula(mode, ident, build, i)
        self.book.formula(ws, r, c, text, cached, style)
        return cached

    def name_ref(self, mode: str, i: int | None) -> str:
        if mode == "relative":
            return f"{LEDGERS}!A{LEDGER_FIRST_ROW + (i or 0)}"
        if mode == "absolute":
            return f"{LEDGERS}!$A${LEDGER_FIRST_ROW + (i or 0)}"
        return f"INDEX({LEDGERS}!$A${LEDGER_FIRST_ROW}:$A${self.last},{CHOSEN_ROW_REF})"

    def flag_ref(self, key: str) -> str:
        """A Ledgers cell for a conditional format: column fixed, row relative."""
        return f"{LEDGERS}!${self.letters[key]}{LEDGER_FIRST_ROW}"

    # Ledgers ------------------------------------------------------------------------------
    def write_ledgers(self, ws) -> None:
        book = self.book
        head = book.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT)
        sub = book.style(italic=True, wrap=True)
        book.label(ws, 1, 1, "name", head)
        book.label(ws, 2, 1, self.t("configuration", "配置"), sub)
        ws.set_column(0, 0, 24)
        templates = fx.compile_registry(self.reg, _layout(self.reg, self.tables))
        columns = []  # (0-based column, template, format, key)
        for q in self.reg:
            j = _col_index(self.letters[q.key])
            book.label(ws, 1, j, q.key, head)
            book.label(ws, 2, j, f"{q.en if self.lang == 'en' else q.zh} [{q.unit}]", sub)
            ws.set_column(j - 1, j - 1, max(12, min(28, len(q.key) + 2)))
            columns.append(
                (
                    j - 1,
                    templates[q.key],
                    book.style(fmt=_UNIT_FORMATS.get(q.unit, F_GENERAL)),
                    q.key,
                )
            )
        ws.set_row(1, 45)
        ws.freeze_panes(LEDGER_FIRST_ROW - 1, 1)
        # the hot loop (some 550 formulas a configuration): XlsxWriter's calls directly, one check per row
        write = ws.write_formula
        for i, led in enumerate(self.ledgers):
            r0 = LEDGER_FIRST_ROW - 1 + i  # 0-based
            in_row, led_row = INPUT_FIRST_ROW + i, LEDGER_FIRST_ROW + i
            values = led.values
            status = write(r0, 0, f"={INPUTS}!A{in_row}", None, _cached(led.config.name))
            for c0, template, style, key in columns:
                status |= write(
                    r0, c0, "=" + template.fill(in_row, led_row), style, _cached(values[key])
                )
            _ok(status, f"{LEDGERS} row {led_row}")
        # the check column turns red where the row breaks a rule, amber for a warning
        c0 = _col_index(self.letters[self.spec.check]) - 1
        ok = self.letters[self.spec.check_ok]
        self.check_format(
            ws,
            LEDGER_FIRST_ROW - 1,
            c0,
            self.last - 1,
            f"=${ok}{LEDGER_FIRST_ROW}=FALSE",
            f"=LEN(${self.letters[self.spec.check]}{LEDGER_FIRST_ROW})>0",
        )

    def check_format(self, ws, r0: int, c0: int, r1: int, bad: str, warn: str) -> None:
        """Red where ``bad`` holds (a broken rule), else amber where ``warn`` does (a warning)."""
        _ok(
            ws.conditional_format(
                r0,
                c0,
                r1,
                c0,
                {
                    "type": "formula",
                    "criteria": bad,
                    "format": self.book.fill(_BAD_FILL),
                    "stop_if_true": True,
                },
            ),
            f"{ws.get_name()}: the check format",
        )
        _ok(
            ws.conditional_format(
                r0,
                c0,
                r1,
                c0,
                {"type": "formula", "criteria": warn, "format": self.book.fill(_WARN_FILL)},
            ),
            f"{ws.get_name()}: the check format",
        )

    # Summary ------------------------------------------------------------------------------

    def write_summary(self, ws) -> None:
        book, n = self.book, self.n
        head = book.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT, wrap=True)
        first, last = SUMMARY_FIRST_ROW, SUMMARY_FIRST_ROW + n - 1
        keys = _summary_keys(self.spec)
        check_col = 2 + keys.index(self.spec.check)
        book.label(ws, 1, 1, self.t("name", "名称"), head)
        ws.set_column(0, 0, 26)
        cols: list[tuple[int, str, Any]] = []  # (column, key, style)
        for j, key in enumerate(keys, start=2):
            book.label(ws, 1, j, self.header(key), head)
            unit = self.reg[key].unit
            wrap = key == self.spec.check
            cols.append((j, key, book.style(fmt=self.fmt(key), wrap=wrap, top=True)))
            ws.set_column(
                j - 1, j - 1, _SUMMARY_CHECK_WIDTH if wrap else (14 if unit == R.TEXT else 11)
            )
        table_last_col = 1 + len(keys)  # 1-based
        # chart data, right of the table: the spec's memory chart, per configuration
        chart = self.spec.chart("memory")
        chart_cols: list[tuple[int, str]] = []
        c = table_last_col + 2
        if chart is not None:
            gb = book.style(fmt=F_GB, top=True)
            for key in [s.y for s in chart.series] + list(chart.line):
                if key in keys:
                    chart_cols.append((keys.index(key) + 2, key))
                    continue
                book.label(ws, 1, c, self.header(key), head)
                cols.append((c, key, gb))
                chart_cols.append((c, key))
                ws.set_column(c - 1, c - 1, 12)
                c += 1
        ws.set_row(0, 60)
        ws.freeze_panes(1, 1)
        ws.autofilter(0, 0, last - 1, table_last_col - 1)
        name_style = book.style(bold=True, top=True)
        for i in range(n):
            r = first + i
            book.formula(
                ws, r, 1, self.name_ref("relative", i), self.ledgers[i].config.name, name_style
            )
            for j, key, style in cols:
                got = self.write(
                    ws,
                    r,
                    j,
                    "relative",
                    ("word", key),
                    lambda key=key: self.shown(key, _words(self.lang)),
                    i,
                    style,
                )
                if j == check_col and got:
                    ws.set_row(r - 1, 15 * _lines(str(got), _SUMMARY_CHECK_WIDTH))
        # colours: a row whose verdicts say no (the model's flag), the check cell of a row that
        # breaks a rule (red) or has a warning (amber)
        _ok(
            ws.conditional_format(
                first - 1,
                0,
                last - 1,
                table_last_col - 1,
                {
                    "type": "formula",
                    "criteria": f"={self.flag_ref(self.spec.flag)}=TRUE",
                    "format": book.fill(_FLAG_FILL),
                },
            ),
            f"{SUMMARY}: the verdict format",
        )
        self.check_format(
            ws,
            first - 1,
            check_col - 1,
            last - 1,
            f"={self.flag_ref(self.spec.check_ok)}=FALSE",
            f"=LEN(${_letter(check_col)}{first})>0",
        )
        # printing: the table (and the chart below it), one page wide, the header row repeated
        ws.set_landscape()
        ws.set_paper(9)  # A4
        ws.repeat_rows(0)
        ws.set_margins(**_MARGINS)
        ws.set_header(
            "&C&11 " + _header_escape(self.t("ledger-report: summary", "ledger-report：汇总")),
            margin=_HEADER_MARGIN,
        )
        ws.set_footer(
            "&L&8 " + _header_escape(self.footer()) + "&R&8 &P / &N", margin=_HEADER_MARGIN
        )
        print_last_row = last
        if chart is not None:
            shown = min(n, CHART_MAX)
            bar = self.stacked_chart(chart, chart_cols, shown)
            if n <= CHART_MAX:
                _ok(ws.insert_chart(last + 1, 0, bar), f"{SUMMARY}: the chart")
                print_last_row = last + 1 + _CHART_ROWS
            else:
                _ok(ws.insert_chart(1, c, bar), f"{SUMMARY}: the chart")
        ws.print_area(0, 0, print_last_row - 1, table_last_col - 1)
        ws.fit_to_pages(1, summary_pages(n))

    def stacked_chart(self, chart: Any, chart_cols: list[tuple[int, str]], shown: int):
        """Per configuration, the series stacked in columns and the ``line`` quantities over them."""
        first = SUMMARY_FIRST_ROW
        last = first + shown - 1
        cats = [SUMMARY, first - 1, 0, last - 1, 0]
        line_keys = set(chart.line)
        bar = self.book.wb.add_chart({"type": "column", "subtype": "stacked"})
        for c, key in chart_cols:
            if key in line_keys:
                continue
            bar.add_series(
                {
                    "name": self.label(key),
                    "categories": cats,
                    "values": [SUMMARY, first - 1, c - 1, last - 1, c - 1],
                    "overlap": 100,
                }
            )
        line = self.book.wb.add_chart({"type": "line"})
        for c, key in chart_cols:
            if key in line_keys:
                line.add_series(
                    {
                        "name": self.label(key),
                        "categories": cats,
                        "values": [SUMMARY, first - 1, c - 1, last - 1, c - 1],
                    }
                )
        bar.combine(line)
        more = (
            self.t(f", first {shown} configurations", f"，前 {shown} 个配置")
            if shown < self.n
            else ""
        )
        bar.set_title({"name": self.t(chart.en, chart.zh) + more, "name_font": {"size": 12}})
        bar.set_y_axis({"name": self.t(chart.y_en, chart.y_zh)})
        bar.set_legend({"position": "bottom"})
        bar.set_size(
            {"width": round(min(40, 16 + 0.8 * shown) * _CM_TO_PX), "height": round(12 * _CM_TO_PX)}
        )
        return bar

    def footer(self) -> str:
        return self.t(
            "ledger-report · GB = 10^9 bytes, GiB = 2^30 bytes",
            "ledger-report · GB = 10^9 字节，GiB = 2^30 字节",
        )

    # Budget -------------------------------------------------------------------------------
    def write_budget(self, ws) -> None:
        """The spec's budget section, one column per configuration, and its chart of cost
        against days (a scatter chart over chart-data rows below the figures)."""
        book, n = self.book, self.n
        head = book.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT, wrap=True)
        section = book.style(bold=True, size=12, font_color=_SECTION_FONT)
        note = book.style(italic=True)
        sec = next((s for s in self.spec.sections if s.key == "budget"), None)
        figures = [f.key for f in sec.figures] if isinstance(sec, Section) else []
        book.label(
            ws, 1, 1, self.t(sec.en, sec.zh) if sec is not None else self.t("Budget", "预算"), head
        )
        book.label(ws, 1, 2, self.t("unit", "单位"), head)
        ws.set_column(0, 0, 40)
        ws.set_column(1, 1, 10)
        ws.set_column(2, 1 + n, 16)
        for i in range(n):
            book.formula(
                ws, 1, 3 + i, self.name_ref("absolute", i), self.ledgers[i].config.name, head
            )
        ws.set_row(0, 45)
        ws.freeze_panes(1, 2)
        r = 2
        for key in figures:
            book.label(ws, r, 1, self.label(key))
            book.label(ws, r, 2, _unit_word(self.reg[key].unit, self.lang))
            style = book.style(fmt=self.fmt(key))
            for i in range(n):
                self.write(
                    ws,
                    r,
                    3 + i,
                    "absolute",
                    ("word", key),
                    lambda key=key: self.shown(key, _words(self.lang)),
                    i,
                    style,
                )
            r += 1
        chart = self.spec.chart("budget")
        if chart is None:
            return
        # chart data: each series' x and y, 0 where blank (a chart reads text as 0, and Excel
        # reads a scatter series with any text x as 1, 2, 3 ...)
        r += 1
        book.label(ws, r, 1, self.t("chart data", "图表数据"), section)
        r += 1
        rows: list[tuple[int, int]] = []  # (row of x, row of y) per series
        for s in chart.series:
            pair = []
            for key in (s.x, s.y):
                book.label(ws, r, 1, self.label(key), note)
                book.label(ws, r, 2, _unit_word(self.reg[key].unit, self.lang), note)
                style = book.style(fmt=self.fmt(key))
                for i in range(n):
                    self.write(
                        ws,
                        r,
                        3 + i,
                        "absolute",
                        ("chart", key),
                        lambda key=key: if_(IsBlank(Ref(key)), 0, Ref(key)),
                        i,
                        style,
                    )
                pair.append(r)
                r += 1
            rows.append((pair[0], pair[1]))
        shown = min(n, CHART_MAX)
        sc = book.wb.add_chart({"type": "scatter"})
        markers = ("circle", "diamond", "square", "triangle")
        for k, (s, (rx, ry)) in enumerate(zip(chart.series, rows)):
            sc.add_series(
                {
                    "name": self.label(s.y),
                    "categories": [BUDGET, rx - 1, 2, rx - 1, 1 + shown],
                    "values": [BUDGET, ry - 1, 2, ry - 1, 1 + shown],
                    "marker": {"type": markers[k % len(markers)], "size": 7},
                }
            )
        more = (
            self.t(f", first {shown} configurations", f"，前 {shown} 个配置") if shown < n else ""
        )
        sc.set_title({"name": self.t(chart.en, chart.zh) + more, "name_font": {"size": 12}})
        sc.set_x_axis({"name": self.t(chart.x_en, chart.x_zh), "min": 0})
        sc.set_y_axis({"name": self.t(chart.y_en, chart.y_zh), "min": 0})
        sc.set_legend({"position": "bottom"})
        sc.set_size({"width": round(20 * _CM_TO_PX), "height": round(12 * _CM_TO_PX)})
        _ok(ws.insert_chart(r + 1, 0, sc), f"{BUDGET}: the chart")


def summary_columns(model: Any = None, lang: str = "en") -> list[tuple[str, str]]:
    """(header, registry key) of the Summary table's columns after the name, in order (the
    values are the display formulas: bytes in GB, text in the workbook's language)."""
    from ..report import DEFAULT

    model = model or DEFAULT
    return [(_header(model.registry, k, lang), k) for k in _summary_keys(model.spec)]


def summary_pages(n: int) -> int:
    """Pages the Summary prints on: SUMMARY_ROWS_PER_PAGE configurations a page."""
    return max(1, -(-n // SUMMARY_ROWS_PER_PAGE))


def _no_print(ws) -> None:
    """A sheet that the workbook's default print leaves out: its print area is one empty cell far
    below the data (Excel and LibreOffice print nothing for it; clear the print area to print it).
    Printing every sheet without a print area would print the whole Ledgers sheet."""
    ws.print_area(NO_PRINT_ROW - 1, 0, NO_PRINT_ROW - 1, 0)


# ------------------------------------------------------------------------------------------
# The printable one-page ledgers


def _small(lines: int) -> float:
    """Lines of small print, in lines of 11-point text."""
    return lines * _SMALL / 11


def _text_width(s: str) -> int:
    """Display width: East Asian wide characters count twice."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in s)


def _lines(text: str, width_chars: float) -> int:
    """Lines a wrapped cell of ``width_chars`` (column-width units) takes for ``text`` (an
    estimate on the safe side: word wrap, wide characters twice)."""
    cap = max(4, int(width_chars * 0.92))
    n = 0
    for para in str(text).split("\n"):
        widened = "".join(ch * 2 if unicodedata.east_asian_width(ch) in "WF" else ch for ch in para)
        n += max(1, len(textwrap.wrap(widened, cap, break_long_words=True, break_on_hyphens=False)))
    return max(1, n)


_U = 3.29  # the print sheet's grid column, in column-width units (28 pixels)
_U_CHARS = 4.0  # characters a grid column holds
_PANE = (8, 4, 2)  # a figure row: label, value, unit (grid columns)
_TABLE_LABEL = 8  # grid columns of a row label at the top
_TABLE_LABEL_MIN, _TABLE_LABEL_MAX = 5, 10  # ... of a table line's label (from its longest)
_TEXT_LABEL = 5  # ... of a label in a section of sentences (the verdicts)
_SMALL = 8  # points: the wide text columns of tables (sources, breakdowns)
_SMALL_RATIO = 11 / _SMALL
_SPAN_BY_UNIT = {R.TEXT: 4, R.BPP: 2, R.BOOL: 2, R.COUNT: 2, R.PARAMS: 5, R.BYTES: 3}
_REST_MIN = 12  # grid columns of a table's wide text column (sources, breakdowns) at least
_LINE_PT = 15.0  # points a line of 11-point text takes


class _PrintSheet:
    """One A4-landscape page for one configuration (``index``), or for the configuration chosen
    in a dropdown (``index`` None).  The spec is walked once: its tables stacked on the left,
    its figure sections in two columns on the right, the assumptions below, every figure a
    formula over Ledgers.  On a configuration's own sheet, a table line that does not exist for
    it (its ``show`` quantity false) is a hidden row, the columns beside it skip that row, and a
    section or figure that does not apply is left out, as the other reports leave it out; the
    chosen sheet shows every line, "—" where it does not apply."""

    def __init__(self, rep: _Report, ws, index: int | None) -> None:
        self.rep = rep
        self.book = rep.book
        self.ws = ws
        self.i = index
        self.chosen = index is None
        self.mode = "chosen" if self.chosen else "absolute"
        self.lg = rep.ledgers[index or 0]
        self.v = self.lg.values
        self.heights: dict[int, float] = {}
        self.hidden: set[int] = set()
        look = self.look
        self.st = {
            "title": look(bold=True, size=14, font_color=_SECTION_FONT),
            "name": look(bold=True, size=13),
            "section": look(bold=True, size=12, font_color=_SECTION_FONT),
            "head": look(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT, wrap=True),
            "label": look(wrap=True),
            "bold": look(bold=True),
            "text": look(wrap=True),
            "unit": look(font_color=_UNIT_FONT),
            "note": look(italic=True, wrap=True),
            "small": look(wrap=True, size=_SMALL),
            "small_note": look(italic=True, wrap=True, size=_SMALL),
        }

    def look(self, **kw):
        return self.book.style(top=True, **kw)  # top-aligned: rows grow for wrapped text

    def num(self, fmt: str):
        return self.look(fmt=fmt, align="right")

    # rows ---------------------------------------------------------------------------------
    def need(self, r: int, lines: float, size: float = 11) -> None:
        h = max(1.0, lines) * _LINE_PT * size / 11
        self.heights[r] = max(self.heights.get(r, _LINE_PT), h)

    def applies(self, *keys: str) -> bool:
        """Whether every ``show`` key (empty: none) is true for the configuration at build time."""
        return all(not k or bool(self.v[k]) for k in keys)

    def span(self, r: int, c: int, width: int) -> None:
        if width > 1:
            self.book.merge(self.ws, r, c, r, c + width - 1)

    def text_lines(self, key: str, width: int) -> int:
        """Lines a text quantity takes in ``width`` grid columns (the chosen sheet: its longest)."""
        key = self.rep.text_key(key)
        lgs = self.rep.ledgers if self.chosen else [self.lg]
        longest = max((str(l.values[key] or "") for l in lgs), key=_text_width)
        return _lines(longest, width * _U_CHARS)

    def figure_value(
        self, key: str, guards: tuple[str, ...], words: tuple[str, str] | None = None
    ) -> tuple[tuple, Callable[[], Expr]]:
        """The display expression of a figure, "—" unless every ``guards`` key is true (on the
        chosen sheet; a configuration's own sheet leaves out what does not apply)."""
        guards = tuple(g for g in guards if g)

        def build() -> Expr:
            e = self.rep.shown(key, words)
            for g in reversed(guards):
                e = if_(Ref(g), e, DASH)
            return e

        return ("fig", key, guards, words), build

    def figure_row(
        self,
        r: int,
        c: int,
        f: Figure,
        label: str,
        guards: tuple[str, ...],
        spans: tuple[int, int, int] = _PANE,
    ) -> None:
        """label | value | unit, from grid column ``c`` (``spans``: their grid widths)."""
        rep = self.rep
        wl, wv, wu = spans
        key = f.shown
        q = rep.reg[key]
        self.span(r, c, wl)
        self.book.label(self.ws, r, c, label, self.st["label"])
        lines = _lines(label, wl * _U_CHARS)
        ident, build = self.figure_value(
            key, guards, _words(rep.lang) if q.unit == R.BOOL else None
        )
        if q.unit in (R.TEXT, R.BOOL):
            self.span(r, c + wl, wv + wu)
            rep.write(self.ws, r, c + wl, self.mode, ident, build, self.i, self.st["text"])
            if q.unit == R.TEXT:
                lines = max(lines, self.text_lines(key, wv + wu))
        else:
            self.span(r, c + wl, wv)
            rep.write(self.ws, r, c + wl, self.mode, ident, build, self.i, self.num(rep.fmt(key)))
            self.unit_cell(r, c + wl + wv, key, wu)
        self.need(r, lines)

    def unit_cell(self, r: int, c: int, key: str, width: int) -> None:
        rep = self.rep
        self.span(r, c, width)
        if rep.reg[key].unit == R.MONEY and "currency" in rep.reg:
            rep.write(
                self.ws,
                r,
                c,
                self.mode,
                ("show", "currency"),
                lambda: rep.shown("currency"),
                self.i,
                self.st["unit"],
            )
        else:
            self.book.label(self.ws, r, c, _unit_word(rep.reg[key].unit, rep.lang), self.st["unit"])

    # the spec, walked -----------------------------------------------------------------------
    def write(self) -> None:
        rep, ws = self.rep, self.ws
        tables = [s for s in rep.spec.sections if isinstance(s, Table)]
        sections = [
            s
            for s in rep.spec.sections
            if isinstance(s, Section) and (self.chosen or self.applies(s.show))
        ]
        widths = [self.table_columns(t)[1] for t in tables]
        left = max([_PANE_WIDTH] + widths)
        pane_cols = (left + 2, left + 2 + _PANE_WIDTH + 1)  # 1-based first grid column of each pane
        last_col = pane_cols[1] + _PANE_WIDTH - 1
        top = self.write_top(last_col)
        # the tables, stacked on the left
        r = top
        for t in tables:
            r = self.write_table(r, 1, t, left) + 1
        left_end = r
        # the figure sections, in two columns on the right, each skipping the hidden rows
        parts = [(s, figs) for s in sections for figs in [self.section_figures(s)] if figs]
        sizes = [1 + len(figs) + 1 for _s, figs in parts]
        split = min(range(len(parts) + 1), key=lambda k: (max(sum(sizes[:k]), sum(sizes[k:])), k))
        ends = []
        for pane, chunk in ((0, parts[:split]), (1, parts[split:])):
            r = top
            for s, figs in chunk:
                r = self.free(r)
                self.book.label(ws, r, pane_cols[pane], rep.t(s.en, s.zh), self.st["section"])
                r += 1
                spans = _PANE
                if all(
                    rep.reg[f.shown].unit == R.TEXT and _text_width(label) <= _TEXT_LABEL * _U_CHARS
                    for f, label, _g in figs
                ):
                    spans = (
                        _TEXT_LABEL,
                        _PANE_WIDTH - _TEXT_LABEL,
                        0,
                    )  # a section of sentences: the text takes the room
                for f, label, guards in figs:
                    r = self.free(r)
                    self.figure_row(r, pane_cols[pane], f, label, guards, spans)
                    r += 1
                r += 1
            ends.append(r)
        r = max([left_end] + ends)
        last_row = self.write_notes(r, last_col)
        for row in range(1, last_row + 1):
            h = self.heights.get(row)
            if row in self.hidden:
                ws.set_row(row - 1, h or _LINE_PT, None, {"hidden": True})
            elif h is not None and h != _LINE_PT:
                ws.set_row(row - 1, h)
        ws.set_column(0, last_col - 1, _U)
        self.page_setup(last_row, last_col)

    def free(self, r: int) -> int:
        """The first row from ``r`` that is not hidden."""
        while r in self.hidden:
            r += 1
        return r

    def section_figures(self, s: Section) -> list[tuple[Figure, str, tuple[str, ...]]]:
        """(figure, label, guards) of the figures a section shows here: labels from the registry
        (a label the section repeats carries the figure's name), guards the show keys that the
        chosen sheet tests in its formulas."""
        rep = self.rep
        figs = [f for f in s.figures if f.pages and (self.chosen or self.applies(f.show))]
        labels = [rep.label(f.shown) for f in figs]
        out = []
        for f, label in zip(figs, labels):
            if labels.count(label) > 1:
                label = f"{label} ({f.name})" if rep.lang == "en" else f"{label}（{f.name}）"
            out.append((f, label, (s.show, f.show) if self.chosen else ()))
        return out

    # the top: title, name, notes, the chooser, the row's check ------------------------------
    def write_top(self, last_col: int) -> int:
        rep, ws, book = self.rep, self.ws, self.book
        book.label(
            ws,
            1,
            1,
            rep.t("Per-rank memory ledger and compute floor", "每卡显存账本与算力下界"),
            self.st["title"],
        )
        self.need(1, 1, 14)
        self.span(2, 1, _NAME_SPAN)
        book.formula(
            ws, 2, 1, rep.name_ref(self.mode, self.i), self.lg.config.name, self.st["name"]
        )
        _ok(
            ws.conditional_format(
                1,
                0,
                1,
                0,
                {
                    "type": "formula",
                    "criteria": f"={self._flag(rep.spec.flag)}=TRUE",
                    "format": book.fill(_FLAG_FILL),
                },
            ),
            f"{ws.get_name()}: the verdict format",
        )
        notes_col = _NAME_SPAN + 2
        self.span(2, notes_col, last_col - notes_col + 1)
        notes = self.lg.config.get("notes")
        book.formula(
            ws,
            2,
            notes_col,
            self.notes_ref(),
            notes if notes not in (None, "") else None,
            self.st["note"],
        )
        longest = max(
            (str(l.config.get("notes") or "") for l in (rep.ledgers if self.chosen else [self.lg])),
            key=_text_width,
        )
        self.need(2, _lines(longest, (last_col - notes_col + 1) * _U_CHARS), 11)
        self.need(2, 1, 13)
        r = 3
        if self.chosen:
            self.span(r, 1, _TABLE_LABEL)
            book.label(
                ws,
                r,
                1,
                rep.t("configuration shown (choose):", "显示的配置（可选）："),
                self.st["bold"],
            )
            first, width = CHOSEN_CELL
            self.span(r, first, width)
            book.text(
                ws,
                r,
                first,
                self.lg.config.name,
                self.look(fill=_INPUT_FILL, font_color=_INPUT_FONT, quote=True, bold=True),
            )
            ls = f"{LEDGERS}!$A${LEDGER_FIRST_ROW}:$A${rep.last}"
            ref = f"${_letter(first)}${r}"
            esc = f'SUBSTITUTE(SUBSTITUTE(SUBSTITUTE({ref},"~","~~"),"*","~*"),"?","~?")'
            row_col = first + width + 1
            book.formula(ws, r, row_col, f"MATCH({esc},{ls},0)", 1, self.look())
            _ok(
                ws.data_validation(
                    r - 1,
                    first - 1,
                    r - 1,
                    first - 1,
                    {
                        "validate": "list",
                        "source": "=" + ls,
                        "ignore_blank": False,
                        "show_error": False,
                    },
                ),
                f"{ws.get_name()}: the dropdown",
            )
            self.span(r, row_col + 1, 8)
            book.label(
                ws,
                r,
                row_col + 1,
                rep.t("(its row in Ledgers)", "（在 Ledgers 中的行）"),
                self.st["note"],
            )
            r += 1
        # the row's check: the rules it breaks (the model's constraints), red where it breaks one
        check, ok = rep.spec.check, rep.spec.check_ok
        self.span(r, 1, _TABLE_LABEL)
        book.label(ws, r, 1, rep.t("check", "检查"), self.st["bold"])
        width = last_col - _TABLE_LABEL
        self.span(r, _TABLE_LABEL + 1, width)
        fine = rep.t("meets every rule", "满足全部规则")
        rep.write(
            ws,
            r,
            _TABLE_LABEL + 1,
            self.mode,
            ("check", fine),
            lambda: if_(Ref(check).eq(""), fine, Ref(check)),
            self.i,
            self.st["text"],
        )
        self.need(r, self.text_lines(check, width))
        rep.check_format(
            ws,
            r - 1,
            _TABLE_LABEL,
            r - 1,
            f"={self._flag(ok)}=FALSE",
            f"=LEN({self._flag(check)})>0",
        )
        return r + 2

    def _flag(self, key: str) -> str:
        """The Ledgers cell of ``key`` for this sheet's configuration (a conditional format's reference)."""
        letter = self.rep.letters[key]
        if self.chosen:
            return f"INDEX({LEDGERS}!${letter}${LEDGER_FIRST_ROW}:${letter}${self.rep.last},{CHOSEN_ROW_REF})"
        return f"{LEDGERS}!${letter}${LEDGER_FIRST_ROW + self.i}"

    def notes_ref(self) -> str:
        col = INPUT_LETTERS["notes"]
        if self.chosen:
            ref = f"INDEX({INPUTS}!${col}${INPUT_FIRST_ROW}:${col}${INPUT_FIRST_ROW + self.rep.n - 1},{CHOSEN_ROW_REF})"
        else:
            ref = f"{INPUTS}!${col}${INPUT_FIRST_ROW + self.i}"
        return f'IF({ref}="","",{ref})'

    # tables --------------------------------------------------------------------------------
    def table_columns(self, t: Table) -> tuple[list[tuple[str, Any, int]], int]:
        """The printed columns of a table, (kind, column, grid width), and their total width: the
        line's label, then each column with a quantity or a breakdown (a column of fixed values
        is the line's label already), then the line's source where the table gives it."""
        reg = self.rep.reg
        longest = max(_text_width(ln.en if self.rep.lang == "en" else ln.zh) for ln in t.lines)
        cols: list[tuple[str, Any, int]] = [
            (
                "label",
                None,
                min(_TABLE_LABEL_MAX, max(_TABLE_LABEL_MIN, math.ceil(longest / _U_CHARS))),
            )
        ]
        for col in t.columns:
            cells = [ln.cells[col.name] for ln in t.lines]
            if any(c.items for c in cells):
                cols.append(("items", col, 0))
            elif any(c.key for c in cells):
                unit = col.unit or reg[next(c.key for c in cells if c.key)].unit
                cols.append(("key", col, _SPAN_BY_UNIT.get(unit, 3)))
        if t.sources:
            cols.append(("source", None, 0))
        fixed = sum(w for _k, _c, w in cols)
        rests = sum(1 for _k, _c, w in cols if w == 0)
        return cols, fixed + rests * _REST_MIN

    def write_table(self, r: int, c0: int, t: Table, width: int) -> int:
        rep, ws, book = self.rep, self.ws, self.book
        cols, need = self.table_columns(t)
        rests = [k for k, (_kind, _c, w) in enumerate(cols) if w == 0]
        spare = width - sum(w for _k, _c, w in cols)
        widths = [w for _k, _c, w in cols]
        for n, k in enumerate(rests):  # the wide columns share what is left
            widths[k] = spare // len(rests) + (1 if n < spare % len(rests) else 0)
        book.label(ws, r, c0, rep.t(t.en, t.zh), self.st["section"])
        r += 1
        c = c0
        for (kind, col, _w), w in zip(cols, widths):
            if kind == "label":
                text = ""
            elif kind == "source":
                text = rep.t("source", "来源")
            else:
                text = rep.t(col.en, col.zh)
                unit = col.unit or next(
                    (
                        rep.reg[ln.cells[col.name].key].unit
                        for ln in t.lines
                        if ln.cells[col.name].key
                    ),
                    "",
                )
                if unit == R.BYTES:
                    text += " (GB)"
            self.span(r, c, w)
            book.label(ws, r, c, text, self.st["head"])
            self.need(r, _lines(text, w * _U_CHARS))
            c += w
        r += 1
        for ln in t.lines:
            if not self.chosen and not self.applies(ln.show):
                self.hidden.add(r)
            guards = (ln.show,) if ln.show else ()
            c = c0
            lines = 1
            for (kind, col, _w), w in zip(cols, widths):
                self.span(r, c, w)
                if kind == "label":
                    text = ln.en if rep.lang == "en" else ln.zh
                    book.label(ws, r, c, text, self.st["label"])
                    lines = max(lines, _lines(text, w * _U_CHARS))
                elif kind == "source":
                    text = rep.reg[ln.formula].source if ln.formula else ""
                    book.label(ws, r, c, text, self.st["small_note"])
                    lines = max(lines, _small(_lines(text, w * _U_CHARS * _SMALL_RATIO)))
                elif kind == "items":
                    key = ln.cells[col.name].text  # the breakdown's sentence
                    ident, build = self.figure_value(key, guards)
                    got = rep.write(ws, r, c, self.mode, ident, build, self.i, self.st["small"])
                    if self.chosen:
                        got = max(
                            (str(l.values[rep.text_key(key)] or "") for l in rep.ledgers),
                            key=_text_width,
                        )
                    lines = max(lines, _small(_lines(str(got or ""), w * _U_CHARS * _SMALL_RATIO)))
                else:
                    self.table_cell(r, c, ln, col, guards)
                c += w
            self.need(r, lines)
            r += 1
        wide = (
            width - _PANE[1] - _PANE[2],
            _PANE[1],
            _PANE[2],
        )  # under a table, labels have its width
        for f in t.total:
            if not f.pages or (not self.chosen and not self.applies(f.show)):
                continue
            self.figure_row(
                r, c0, f, rep.label(f.shown), (f.show,) if self.chosen and f.show else (), wide
            )
            r += 1
        return r

    def table_cell(self, r: int, c: int, ln: Line, col: Any, guards: tuple[str, ...]) -> None:
        rep = self.rep
        cell = ln.cells[col.name]
        if not cell.key:
            self.book.label(self.ws, r, c, view_word(cell.value, rep.lang), self.st["text"])
            return
        unit = rep.reg[cell.key].unit
        words = (
            _words(rep.lang, *col.words)
            if col.words
            else (_words(rep.lang) if unit == R.BOOL else None)
        )
        ident, build = self.figure_value(cell.key, guards, words)
        style = (
            self.st["text"]
            if unit in (R.TEXT, R.BOOL)
            else self.num(_SHOW_FORMATS.get(col.unit or unit, F_GENERAL))
        )
        rep.write(self.ws, r, c, self.mode, ident, build, self.i, style)

    # the assumptions --------------------------------------------------------------------------
    def write_notes(self, r: int, last_col: int) -> int:
        """The model's assumption sentences (live text), each where its ``_shown`` quantity says it
        applies; on a configuration's own sheet the others are hidden rows."""
        rep, ws, book = self.rep, self.ws, self.book
        book.label(ws, r, 1, rep.t("Assumptions", "假设"), self.st["section"])
        r += 1
        suffix = "" if rep.lang == "en" else "_zh"
        for k in rep.spec.assumptions:
            shown = f"{k}_shown"
            if not self.chosen and not self.v[shown]:
                self.hidden.add(r)
            self.span(r, 1, last_col)
            key = k + suffix
            rep.write(
                ws,
                r,
                1,
                self.mode,
                ("note", key),
                lambda key=key, shown=shown: if_(Ref(shown), concat("• ", Ref(key)), ""),
                self.i,
                self.st["text"],
            )
            self.need(r, self.text_lines(key, last_col) if self.chosen or self.v[shown] else 1)
            r += 1
        return r - 1

    def page_setup(self, last_row: int, last_col: int) -> None:
        ws, rep = self.ws, self.rep
        ws.print_area(0, 0, last_row - 1, last_col - 1)
        ws.set_landscape()
        ws.set_paper(9)  # A4
        ws.fit_to_pages(1, 1)
        ws.center_horizontally()
        ws.set_margins(**_MARGINS)
        header = (
            rep.t(
                "ledger-report: the configuration chosen on this sheet",
                "ledger-report：本页所选的配置",
            )
            if self.chosen
            else self.lg.config.name
        )
        ws.set_header("&C&11 " + _header_escape(header), margin=_HEADER_MARGIN)
        ws.set_footer("&L&8 " + _header_escape(rep.footer()), margin=_HEADER_MARGIN)
        ws.hide_gridlines(2)  # on screen and on paper


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


# ------------------------------------------------------------------------------------------
# Help and the lookup sheets

_HELP = {
    "en": {
        "title": "Help",
        "intro": [
            "The input columns: one row per configuration in the Inputs sheet; an empty cell takes its default.",
            "Counts accept 8190735360, 8,190,735,360, 8.19e9, 8.19B, 35B, 5T, 350M, 7K when the workbook is rebuilt; the live formulas need plain numbers.",
            "GB = 10^9 bytes and GiB = 2^30 bytes.",
            "The lookup sheets (Dtypes, Moments, Optimizers, GPUs, Conventions, Lists) are hidden: the formulas read them; show them (Excel: right-click a sheet tab > Unhide; LibreOffice: Sheet > Show Sheet) to read or change a width, an optimizer or a GPU.",
        ],
        "built": [
            "Sheets: Summary (the headline figures, the verdicts and each row's check), Inputs (the rows; edit them), Ledgers (every quantity as a live formula, one row per configuration, with the check column), "
            "one printable ledger per configuration (above {max} configurations, one Ledger sheet with a dropdown), Budget (the budget of every configuration side by side, with a chart of cost against days), and this Help.",
            "After editing Inputs or a lookup sheet, recalculate (Excel: automatic; LibreOffice: Data > Calculate > Recalculate Hard, Ctrl+Shift+F9) and every figure follows; the check column names every rule a row breaks (red) or warns about (amber).",
            "Printing the workbook gives the Summary and one page per configuration. Inputs, Ledgers, Budget and Help are left out: their print area is one empty cell; clear it (Excel: Page Layout > Print Area > Clear Print Area; LibreOffice: Format > Print Ranges > Clear) to print one.",
            "Rebuild with: ledger-report build THIS.xlsx (only the Inputs sheet is read).",
        ],
        "headers": ("column", "kind", "unit", "default", "choices", "meaning", "含义"),
        "gpu": "see the GPUs sheet",
        "required": "required",
    },
    "zh": {
        "title": "说明",
        "intro": [
            "输入列：Inputs 表中每行一个配置；空单元格取默认值。",
            "重新生成工作簿时，数量可写作 8190735360、8,190,735,360、8.19e9、8.19B、35B、5T、350M、7K；实时公式需要普通数字。",
            "GB = 10^9 字节，GiB = 2^30 字节。",
            "查找表（Dtypes、Moments、Optimizers、GPUs、Conventions、Lists）已隐藏：公式读取它们；如需查看或修改精度宽度、优化器或 GPU，请取消隐藏（Excel：右键工作表标签 > 取消隐藏；LibreOffice：工作表 > 显示工作表）。",
        ],
        "built": [
            "各表：Summary（主要数值、结论与每行的检查）、Inputs（输入行，可编辑）、Ledgers（每个量的实时公式，每个配置一行，含检查列）、"
            "每个配置一张可打印的账本（超过 {max} 个配置时为一张带下拉选择的 Ledger 表）、Budget（各配置的预算并列，附成本与天数图）以及本说明。",
            "修改 Inputs 或查找表后重新计算（Excel 自动；LibreOffice：数据 > 计算 > 硬重算，Ctrl+Shift+F9），所有数值随之更新；检查列写出该行违反（红色）或提醒（琥珀色）的每条规则。",
            "打印工作簿得到 Summary 与每个配置一页。Inputs、Ledgers、Budget 与本说明不打印：其打印区域为一个空单元格；清除打印区域即可打印（Excel：页面布局 > 打印区域 > 取消打印区域；LibreOffice：格式 > 打印范围 > 清除）。",
            "重新生成：ledger-report build THIS.xlsx（只读取 Inputs 表）。",
        ],
        "headers": ("列", "类型", "单位", "默认值", "可选值", "含义", "meaning"),
        "gpu": "见 GPUs 表",
        "required": "必填",
    },
}
_HELP_WIDTHS = (22, 8, 10, 30, 34, 60, 44)  # A-G


def _write_help(book: _Book, ws, built: bool, lang: str = "en") -> None:
    words = _HELP[lang]
    head = book.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT, wrap=True)
    wrap = book.style(wrap=True)
    section = book.style(bold=True, size=12, font_color=_SECTION_FONT)
    lines = list(words["intro"])
    if built:
        lines += [s.format(max=MAX_PRINT_SHEETS) for s in words["built"]]
    r = 1
    book.label(ws, r, 1, words["title"], section)
    r += 1
    full = sum(_HELP_WIDTHS)
    for text in lines:
        book.merge(ws, r, 1, r, len(_HELP_WIDTHS))
        book.label(ws, r, 1, text, wrap)
        ws.set_row(r - 1, _LINE_PT * _lines(text, full))
        r += 1
    r += 1
    for c, h in enumerate(words["headers"], start=1):
        book.label(ws, r, c, h, head)
    r += 1
    ws.freeze_panes(r - 1, 0)
    for col in COLUMNS:
        choices = (
            ", ".join(col.choices) if col.choices else (words["gpu"] if col.name == "gpu" else "")
        )
        default = default_text(col, lang) or (words["required"] if col.required else "")
        meaning = (col.help_en, col.help_zh) if lang == "en" else (col.help_zh, col.help_en)
        cells = (col.name, col.kind, col.unit, default, choices, *meaning)
        lines_needed = 1
        for c, text in enumerate(cells, start=1):
            if text:
                book.label(ws, r, c, text, wrap)
                lines_needed = max(lines_needed, _lines(text, _HELP_WIDTHS[c - 1]))
        if lines_needed > 1:
            ws.set_row(r - 1, _LINE_PT * lines_needed)
        r += 1
    for c, width in enumerate(_HELP_WIDTHS):
        ws.set_column(c, c, width)
    ws.set_landscape()
    ws.set_paper(9)
    ws.fit_to_pages(1, 0)
    ws.repeat_rows(len(lines) + 2)


def _write_lookups(book: _Book, t: Any) -> None:
    """The lookup sheets the formulas read, hidden: they are tables, not pages (a hidden sheet
    prints nowhere; show it to read or change it)."""
    catalogue = _catalogue_rows()
    for table, title, fields in _table_specs(t):
        ws = book.sheet(title)
        ws.hide()
        head = book.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT)
        cell_st = book.style(fill=_LOOKUP_FILL)
        text_st = book.style(fill=_LOOKUP_FILL, quote=True)
        rows = t[table]
        extra: list[str] = []
        if table == "gpu":
            extra = [c for c in catalogue[0] if c not in fields and c != "name"]
        header = [table if table != "gpu" else "name"] + fields + extra
        for c, h in enumerate(header, start=1):
            book.label(ws, 1, c, h, head)
            ws.set_column(c - 1, c - 1, 14 if h != "source" else 80)
        for i, (key, rec) in enumerate(rows.items()):
            r = 2 + i
            book.text(ws, r, 1, key, text_st)
            for c, f in enumerate(fields, start=2):
                x = rec[f]
                if isinstance(x, str):
                    book.text(ws, r, c, x, text_st)
                else:
                    book.value(ws, r, c, x, cell_st)
            if extra:
                src = catalogue[1][key]
                for c, f in enumerate(extra, start=2 + len(fields)):
                    x = src[f]
                    if isinstance(x, str):
                        book.text(ws, r, c, x, text_st)
                    else:
                        book.value(ws, r, c, x, cell_st)
        last = 1 + len(rows)
        _ok(book.wb.define_name(_name(table, None), f"={title}!$A$2:$A${last}"), _name(table, None))
        if table == "gpu":
            _ok(book.wb.define_name("list_gpu", f"={title}!$A$2:$A${last - 1}"), "list_gpu")
        for c, f in enumerate(fields, start=2):
            col = _letter(c)
            _ok(
                book.wb.define_name(_name(table, f), f"={title}!${col}$2:${col}${last}"),
                _name(table, f),
            )
        ws.freeze_panes(1, 1)
    # the choice lists of the other enumerated columns
    ws = book.sheet(LISTS)
    ws.hide()
    head = book.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT)
    text_st = book.style(fill=_LOOKUP_FILL, quote=True)
    c = 0
    for col in (
        COLUMNS
    ):  # the columns whose choices the column table holds (gpu's are the catalogue's rows)
        if col.kind != K_ENUM or not col.choices or not _enum_source(col).startswith("list_"):
            continue
        c += 1
        letter = _letter(c)
        book.label(ws, 1, c, col.name, head)
        for i, choice in enumerate(col.choices):
            book.text(ws, 2 + i, c, choice, text_st)
        ws.set_column(c - 1, c - 1, max(12, len(col.name) + 2))
        name = _enum_source(col)
        _ok(
            book.wb.define_name(name, f"={LISTS}!${letter}$2:${letter}${1 + len(col.choices)}"),
            name,
        )


def _catalogue_rows() -> tuple[list[str], dict[str, dict[str, Any]]]:
    from dataclasses import asdict

    from ..catalogue import COLUMNS as CAT_COLUMNS
    from ..catalogue import GPUS as CAT
    from ..catalogue import USER_DESCRIBED

    return list(CAT_COLUMNS), {g.name: asdict(g) for g in (*CAT.values(), USER_DESCRIBED)}
