"""The live-formula workbook (CONTRACT section 5) and the empty input template.

``render_xlsx(ledgers)`` returns the bytes of a workbook whose every computed figure is a
formula generated from the engine's single definition of that figure (``model/formula.py``) and
carries, as its cached value, the number the engine computed.  Sheets:

* ``Summary``: one row per configuration, the headline figures (GB = bytes/1E+9), a red mark
  where the peak does not fit, and a stacked chart of per-rank memory by state against HBM;
* ``Inputs``: the rows as values (row 1 = the CONTRACT column names; user text always a text
  cell with the quote prefix; blanks stay blank so defaults resolve by formula), dropdowns for
  the enumerated columns, comments with each column's help; ``read_configs`` reads it back;
* ``Ledgers``: one row per configuration, one column per registry quantity (row 1 the key, row 2
  the English label and unit), each cell a live formula over its own row of ``Inputs``, earlier
  columns and the lookup sheets;
* one printable ledger per configuration (A4 landscape, one page) while there are at most
  :data:`MAX_PRINT_SHEETS`; above that one ``Ledger`` sheet whose configuration is chosen in a
  dropdown (LibreOffice pays about 45 ms and 6 MB per sheet);
* ``Help``, and the lookup sheets ``Dtypes``, ``Moments``, ``Optimizers``, ``GPUs``, ``Lists``.

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

Speed (1,000 configurations, 227,000 formulas; bench/bench_workbook.py): about 6.3 s of CPU,
three quarters of it inside ``write_formula`` (XlsxWriter runs some 30 regular-expression
substitutions over every formula for its future-function prefixes; the openpyxl writer with
shared formulas and XML written directly took 0.5 s).  XlsxWriter writes no shared formulas, so
every row carries its formula text (the Ledgers sheet's XML is 24 MB instead of 14 MB; 4.4 MiB
zipped instead of 1.7) and LibreOffice takes about 2-3 s longer to open and recalculate it.

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
import functools
import io
import math
import re
import warnings
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import xlsxwriter
from xlsxwriter.utility import xl_cell_to_rowcol, xl_col_to_name

from ..config import BOOL as K_BOOL
from ..config import COLUMN_NAMES, COLUMNS, COUNT as K_COUNT, ENUM as K_ENUM, FLOAT as K_FLOAT, INT as K_INT
from ..config import Column, Config
from ..model import formula as fx
from ..model import registry as R
from ..model.definitions import PARTS, REGISTRY, STATES
from ..model.tables import TABLE_SHEETS, table_fields, tables

__all__ = [
    "render_xlsx",
    "template_xlsx",
    "sheet_title",
    "MAX_PRINT_SHEETS",
    "INPUTS",
    "LEDGERS",
    "SUMMARY",
]


SUMMARY = "Summary"
INPUTS = "Inputs"
LEDGERS = "Ledgers"
LEDGER = "Ledger"  # the one print sheet with a dropdown, above MAX_PRINT_SHEETS configurations
HELP = "Help"
DTYPES, MOMENTS, OPTIMIZERS, GPUS, LISTS = "Dtypes", "Moments", "Optimizers", "GPUs", "Lists"
RESERVED_TITLES = (SUMMARY, INPUTS, LEDGERS, LEDGER, HELP, *TABLE_SHEETS.values(), LISTS, "History")

MAX_PRINT_SHEETS = 50
CHART_MAX = 50  # configurations shown in the Summary chart
INPUT_FIRST_ROW = 2  # Inputs: row 1 is the header
LEDGER_FIRST_ROW = 3  # Ledgers: row 1 the key, row 2 the label and unit
SUMMARY_FIRST_ROW = 2
TEMPLATE_ROWS = 1000  # rows of the template that carry dropdowns and input styling
MAX_TEXT_CHARS = 32767  # a cell's limit; XlsxWriter would truncate with a warning

GB = 10**9
GIB = 2**30
GB_TEXT = "1E+9"
GIB_TEXT = "1073741824"

FIXED_TIME = _dt.datetime(2000, 1, 1, 0, 0, 0)  # docProps/core.xml created and modified

# ------------------------------------------------------------------------------------------
# Looks

_HEADER_FILL = "FF1F4E79"
_HEADER_FONT = "FFFFFFFF"
_INPUT_FILL = "FFFFF2CC"  # inputs look like inputs: pale yellow, blue text
_INPUT_FONT = "FF1F3FBF"
_LOOKUP_FILL = "FFEAF1DD"
_BAD_FILL = "FFF4B6B6"
_SECTION_FONT = "FF1F4E79"

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



# ------------------------------------------------------------------------------------------
# Public entry points


def render_xlsx(ledgers: Sequence[Any]) -> bytes:
    """The live-formula workbook of these ledgers (``engine.Ledger``), as deterministic bytes."""
    ledgers = list(ledgers)
    if not ledgers:
        raise ValueError("a workbook needs at least one configuration")
    with _strict_xlsxwriter():
        return _render(ledgers)


def _render(ledgers: list[Any]) -> bytes:
    book = _Book()
    n = len(ledgers)
    layout = _layout()
    templates = fx.compile_registry(REGISTRY, layout)

    summary = book.sheet(SUMMARY)
    inputs = book.sheet(INPUTS)
    led = book.sheet(LEDGERS)
    _write_inputs(book, inputs, [l.config for l in ledgers], dropdown_rows=n)
    _write_ledgers(book, led, ledgers, templates)
    _write_summary(book, summary, ledgers)
    if n <= MAX_PRINT_SHEETS:
        taken = {t.casefold() for t in RESERVED_TITLES}
        for i, l in enumerate(ledgers):
            title = sheet_title(l.name, taken)
            taken.add(title.casefold())
            _write_print_sheet(book, book.sheet(title), l, _FixedRow(i))
    else:
        _write_print_sheet(book, book.sheet(LEDGER), ledgers[0], _ChosenRow(n))
    _write_help(book, book.sheet(HELP), built=True)
    _write_lookups(book)
    return book.finish()


def template_xlsx() -> bytes:
    """The empty input workbook: the CONTRACT columns with help, dropdowns and one example row."""
    with _strict_xlsxwriter():
        book = _Book()
        inputs = book.sheet(INPUTS)
        _write_inputs(book, inputs, [Config(EXAMPLE_ROW, "template")], dropdown_rows=TEMPLATE_ROWS)
        _write_help(book, book.sheet(HELP), built=False)
        _write_lookups(book)
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
    def style(self, *, fmt: str = F_GENERAL, bold: bool = False, fill: str | None = None,
              font_color: str | None = None, quote: bool = False, wrap: bool = False,
              size: float | None = None, italic: bool = False, align: str | None = None, top: bool = False):
        """The (cached) cell format for these looks; ``None`` for none at all."""
        looks = dict(fmt=fmt, bold=bold, fill=fill, font_color=font_color, quote=quote, wrap=wrap,
                     size=size, italic=italic, align=align, top=top)
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

    def bad_fill(self):
        """The red fill of a conditional format (a differential format: the fill only)."""
        if "bad" not in self._fills:
            self._fills["bad"] = self.wb.add_format({"bg_color": _rgb(_BAD_FILL)})
        return self._fills["bad"]

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
        raise ValueError(f"{where}: text of {len(s):,} characters is over a cell's {MAX_TEXT_CHARS:,}")
    bad = _ILLEGAL_XML.search(s)
    if bad:
        raise ValueError(f"{where}: text holds the character U+{ord(bad.group()):04X}, which a workbook cannot store")
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
QUANTITY_LETTERS: dict[str, str] = {k: _letter(i + 2) for i, k in enumerate(REGISTRY.keys())}  # A = name


def _table_specs() -> list[tuple[str, str, list[str]]]:
    """(table, sheet, fields) of the lookup sheets, in sheet order."""
    return [(name, sheet, table_fields(name)) for name, sheet in TABLE_SHEETS.items()]


def _name(table: str, field: str | None) -> str:
    return f"tbl_{table}_{field or 'key'}"


def _layout() -> fx.Layout:
    refs: dict[tuple[str, str | None], str] = {}
    for table, _sheet, fields in _table_specs():
        refs[(table, None)] = _name(table, None)
        for f in fields:
            refs[(table, f)] = _name(table, f)
    return fx.Layout(INPUTS, INPUT_LETTERS, QUANTITY_LETTERS, refs)


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
    lines.append(f"default: {col.default}" if col.default else ("required" if col.required else "default: empty"))
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
    empty_in = book.style(fill=_INPUT_FILL, font_color=_INPUT_FONT)  # the empty cells look like inputs too
    for j, col in enumerate(COLUMNS, start=1):
        book.label(ws, 1, j, col.name, head)
        _ok(ws.write_comment(0, j - 1, _help_text(col), {"author": "ledger-report", "width": 320, "height": 150}),
            f"{INPUTS}!{INPUT_LETTERS[col.name]}1 (comment)")
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
            rule = {"validate": "list", "source": "=" + _enum_source(col),
                    "error_title": col.name, "error_message": f"{col.name}: choose one of the list (see the Help sheet)"}
            if col.name == "gpu":  # a GPU outside the catalogue is allowed with hbm_gb and peak_tflops
                rule.update(error_type="warning", error_message="gpu: not in the GPUs sheet; give hbm_gb and peak_tflops to describe it")
        elif col.kind == K_COUNT:
            # not "decimal": Excel would refuse 35B, which the reader accepts (README, Inputs)
            rule = {"validate": "custom", "value": _count_rule(col, INPUT_LETTERS[col.name]), "error_type": "warning",
                    "error_title": col.name,
                    "error_message": f"{col.name}: a number ({bounds}) or a count such as 8.19e9, 35B, 5T, 350M, 7K"}
        elif col.kind in (K_INT, K_FLOAT) and (col.minimum is not None or col.maximum is not None):
            kind = "integer" if col.kind == K_INT else "decimal"
            lo = col.minimum if col.minimum is not None else -1e307
            hi = col.maximum if col.maximum is not None else 1e307
            if col.min_exclusive:
                lo = lo + (1e-9 if kind == "decimal" else 1)
            rule = {"validate": kind, "criteria": "between", "minimum": fx.number(lo), "maximum": fx.number(hi),
                    "error_type": "warning", "error_title": col.name,
                    "error_message": f"{col.name}: expected a number, {bounds}"}
        elif col.kind == K_BOOL:
            rule = {"validate": "list", "source": ["TRUE", "FALSE"], "error_type": "warning"}
        if rule is not None:
            rule.update(ignore_blank=True, show_error=True)
            _ok(ws.data_validation(first, j, last, j, rule), f"{INPUTS}: the validation of {col.name}")


# ------------------------------------------------------------------------------------------
# Ledgers


def _write_ledgers(book: _Book, ws, ledgers: list[Any], templates: Mapping[str, fx.Template]) -> None:
    head = book.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT)
    sub = book.style(italic=True, wrap=True)
    book.label(ws, 1, 1, "name", head)
    book.label(ws, 2, 1, "configuration", sub)
    ws.set_column(0, 0, 24)
    columns = []  # (0-based column, template, format, key)
    for q in REGISTRY:
        letter = QUANTITY_LETTERS[q.key]
        j = _col_index(letter)
        book.label(ws, 1, j, q.key, head)
        book.label(ws, 2, j, f"{q.en} [{q.unit}]", sub)
        ws.set_column(j - 1, j - 1, max(12, min(28, len(q.key) + 2)))
        columns.append((j - 1, templates[q.key], book.style(fmt=_UNIT_FORMATS.get(q.unit, F_GENERAL)), q.key))
    ws.set_row(1, 45)
    ws.freeze_panes(LEDGER_FIRST_ROW - 1, 1)
    # the hot loop (227 formulas a configuration): XlsxWriter's calls directly, one check per row
    write = ws.write_formula
    for i, led in enumerate(ledgers):
        r0 = LEDGER_FIRST_ROW - 1 + i  # 0-based
        in_row, led_row = INPUT_FIRST_ROW + i, LEDGER_FIRST_ROW + i
        values = led.values
        status = write(r0, 0, f"={INPUTS}!A{in_row}", None, _cached(led.config.name))
        for c0, template, style, key in columns:
            status |= write(r0, c0, "=" + template.fill(in_row, led_row), style, _cached(values[key]))
        _ok(status, f"{LEDGERS} row {led_row}")



def _lref(key: str, row: int | None = None, absolute: bool = False) -> str:
    """A Ledgers cell: ``Ledgers!X3`` (relative) or ``Ledgers!$X$3``."""
    letter = "A" if key == "name" else QUANTITY_LETTERS[key]
    r = LEDGER_FIRST_ROW if row is None else row
    return f"{LEDGERS}!${letter}${r}" if absolute else f"{LEDGERS}!{letter}{r}"


def _gb(v: Any, div: int = GB) -> Any:
    return None if v is None else v / div


def _guard(refs: Sequence[str], body: str) -> str:
    tests = [f'{r}=""' for r in refs]
    if not tests:
        return body
    t = tests[0] if len(tests) == 1 else f"OR({','.join(tests)})"
    return f'IF({t},"",{body})'


# ------------------------------------------------------------------------------------------
# Summary

# (header, kind, registry key): kind "gb" = bytes / 1E+9, "ref" = the value itself
SUMMARY_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("name", "ref", "name"),
    ("state GB per rank (HBM)", "gb", "state_bytes_per_rank"),
    ("peak GB per rank", "gb", "peak_bytes_per_rank"),
    ("HBM GB", "gb", "hbm_bytes"),
    ("fits", "ref", "fits"),
    ("headroom GB", "gb", "headroom_bytes"),
    ("logical state total GB", "gb", "state_bytes_logical_total"),
    ("min GPUs (compute gate)", "ref", "min_gpus_compute"),
    ("min GPUs (memory gate)", "ref", "min_gpus_memory"),
    ("binding gate", "ref", "binding_gate"),
    ("days on this configuration", "ref", "days_on_config"),
    ("GPU-hours", "ref", "gpu_hours"),
    ("cost", "ref", "cost"),
)
_SUMMARY_FORMATS = {
    "state_bytes_per_rank": F_GB, "peak_bytes_per_rank": F_GB, "hbm_bytes": F_GB, "headroom_bytes": F_GB,
    "state_bytes_logical_total": F_INT, "min_gpus_compute": F_INT, "min_gpus_memory": F_INT,
    "days_on_config": F_DAYS, "gpu_hours": F_INT, "cost": F_INT,
}
_STATE_LOCATION = {s: col for s, col, _en, _zh in STATES}


def _summary_cell(kind: str, key: str, row: int = LEDGER_FIRST_ROW) -> tuple[str, Callable[[Mapping[str, Any]], Any]]:
    """(formula of the Summary row that shows Ledgers row ``row``, python value of that formula)."""
    if key == "name":
        return _lref("name", row), lambda v: v["__name__"]
    ref = _lref(key, row)
    if kind == "gb":
        if REGISTRY[key].nullable:
            return _guard([ref], f"{ref}/{GB_TEXT}"), lambda v: _gb(v[key])
        return f"{ref}/{GB_TEXT}", lambda v: v[key] / GB
    return ref, lambda v: v[key]


def _chart_cells(row: int = LEDGER_FIRST_ROW) -> list[tuple[str, str, Callable[[Mapping[str, Any]], Any]]]:
    """(header, formula, value) of the chart's data for Ledgers row ``row``: per state, GB in HBM
    per rank."""
    out = []
    for s, col, en, _zh in STATES:
        d, e, loc = _lref(f"{s}_dense_bytes", row), _lref(f"{s}_expert_bytes", row), _lref(col, row)
        body = f'IF({loc}="hbm",({d}+{e})/{GB_TEXT},0)'
        refs = [r for r, k in ((d, f"{s}_dense_bytes"), (e, f"{s}_expert_bytes")) if REGISTRY[k].nullable]

        def val(v, s=s, col=col):
            a, b = v[f"{s}_dense_bytes"], v[f"{s}_expert_bytes"]
            if a is None or b is None:
                return None
            return (a + b) / GB if str(v[col]).lower() == "hbm" else 0

        out.append((f"{en} GB", _guard(refs, body), val))
    p, st = _lref("peak_bytes_per_rank", row), _lref("state_bytes_per_rank", row)

    def outside(v):
        a, b = v["peak_bytes_per_rank"], v["state_bytes_per_rank"]
        return None if a is None or b is None else (a - b) / GB

    out.append(("outside the state ledger GB", _guard([p, st], f"({p}-{st})/{GB_TEXT}"), outside))
    return out



def _write_summary(book: _Book, ws, ledgers: list[Any]) -> None:
    head = book.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT, wrap=True)
    n = len(ledgers)
    first, last = SUMMARY_FIRST_ROW, SUMMARY_FIRST_ROW + n - 1
    vals = [dict(l.values, __name__=l.config.name) for l in ledgers]
    cols: list[tuple[int, Any, Callable[[Mapping[str, Any]], Any]]] = []  # (column, format, value)
    j = 0
    for j, (header, kind, key) in enumerate(SUMMARY_COLUMNS, start=1):
        book.label(ws, 1, j, header, head)
        cols.append((j, book.style(fmt=_SUMMARY_FORMATS.get(key, F_GENERAL)), _summary_cell(kind, key)[1]))
        ws.set_column(j - 1, j - 1, 26 if key == "name" else 13)
    chart_first = j + 2
    gb = book.style(fmt=F_GB)
    chart_cols = []
    for k, (header, _f, fn) in enumerate(_chart_cells()):
        c = chart_first + k
        chart_cols.append(c)
        book.label(ws, 1, c, header, head)
        cols.append((c, gb, fn))
        ws.set_column(c - 1, c - 1, 12)
    ws.set_row(0, 45)
    ws.freeze_panes(1, 1)
    table_last_col = len(SUMMARY_COLUMNS) - 1  # 0-based
    ws.autofilter(0, 0, last - 1, table_last_col)
    ws.set_landscape()
    ws.set_paper(9)  # A4
    ws.fit_to_pages(1, 0)  # one page wide, as many tall as it takes
    ws.repeat_rows(0)
    ws.print_area(0, 0, last - 1, table_last_col)
    for i, v in enumerate(vals):
        lrow = LEDGER_FIRST_ROW + i  # the Ledgers row of this configuration
        formulas = [_summary_cell(kind, key, lrow)[0] for _h, kind, key in SUMMARY_COLUMNS]
        formulas += [f for _h, f, _fn in _chart_cells(lrow)]
        for (c, style, fn), f in zip(cols, formulas):
            book.formula(ws, first + i, c, f, fn(v), style)

    # red where the peak does not fit
    fits_col = _letter([k for _h, _k, k in SUMMARY_COLUMNS].index("fits") + 1)
    _ok(ws.conditional_format(first - 1, 0, last - 1, table_last_col,
                              {"type": "formula", "criteria": f"=${fits_col}{first}=FALSE", "format": book.bad_fill()}),
        f"{SUMMARY}: the conditional format")

    # per-rank memory by state (stacked) against HBM (a line); LibreOffice spends seconds on a
    # chart of 1,000 categories, and nobody reads one, so it shows the first CHART_MAX rows
    shown = min(n, CHART_MAX)
    chart_last = first + shown - 1
    bar = book.wb.add_chart({"type": "column", "subtype": "stacked"})
    cats = [SUMMARY, first - 1, 0, chart_last - 1, 0]
    for c in chart_cols:
        bar.add_series({"name": [SUMMARY, 0, c - 1], "categories": cats,
                        "values": [SUMMARY, first - 1, c - 1, chart_last - 1, c - 1], "overlap": 100})
    bar.set_title({"name": "Per-rank memory by state vs HBM (GB)" + (f", first {shown} configurations" if shown < n else "")})
    bar.set_y_axis({"name": "GB per rank"})
    line = book.wb.add_chart({"type": "line"})
    hbm_col = [k for _h, _k, k in SUMMARY_COLUMNS].index("hbm_bytes")  # 0-based
    line.add_series({"name": [SUMMARY, 0, hbm_col], "categories": cats,
                     "values": [SUMMARY, first - 1, hbm_col, chart_last - 1, hbm_col]})
    bar.combine(line)
    bar.set_size({"width": round(min(40, 16 + 0.8 * shown) * _CM_TO_PX), "height": round(12 * _CM_TO_PX)})
    # below the table while it is short, else to the right of the chart data (visible from row 1)
    if n <= CHART_MAX:
        _ok(ws.insert_chart(last + 2, 0, bar), f"{SUMMARY}: the chart")
    else:
        _ok(ws.insert_chart(1, chart_cols[-1] + 1, bar), f"{SUMMARY}: the chart")


# ------------------------------------------------------------------------------------------
# The printable one-page ledgers


class _FixedRow:
    """References into one fixed Ledgers row."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.row = LEDGER_FIRST_ROW + index

    def q(self, key: str) -> str:
        return _lref(key, self.row, absolute=True)

    def notes(self) -> str:
        ref = f"{INPUTS}!$B${INPUT_FIRST_ROW + self.index}"
        return f'IF({ref}="","",{ref})'



class _ChosenRow:
    """References through the row of the configuration chosen in ``$B$3`` (a dropdown)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.last = LEDGER_FIRST_ROW + n - 1

    def q(self, key: str) -> str:
        letter = "A" if key == "name" else QUANTITY_LETTERS[key]
        return f"INDEX({LEDGERS}!${letter}${LEDGER_FIRST_ROW}:${letter}${self.last},$C$3)"

    def notes(self) -> str:
        ref = f"INDEX({INPUTS}!$B${INPUT_FIRST_ROW}:$B${INPUT_FIRST_ROW + self.n - 1},$C$3)"
        return f'IF({ref}="","",{ref})'


def _write_print_sheet(book: _Book, ws, ledger: Any, rows: Any) -> None:
    """One A4-landscape page: the state ledger, the items outside it, the peak (left), the
    parameters and the compute floor (right), the assumptions (below); every number a formula
    over ``Ledgers`` through ``rows`` (a fixed row, or the row chosen in a dropdown)."""
    v = ledger.values

    def look(**kw):
        return book.style(top=True, **kw)  # top-aligned: rows grow for wrapped basis text

    title_st = look(bold=True, size=14, font_color=_SECTION_FONT)
    section = look(bold=True, size=12, font_color=_SECTION_FONT)
    head = look(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT, wrap=True)
    label = look()
    bold = look(bold=True)
    wrap = look(wrap=True)
    note = look(italic=True, wrap=True)
    st = {f: look(fmt=f) for f in (F_INT, F_GB, F_DAYS, F_SCI, F_BPP, F_RATIO, F_MONEY, F_GENERAL, "#,##0.##", "#,##0.0")}

    def put(r: int, c: int, key: str, fmt: str = F_GENERAL) -> None:
        book.formula(ws, r, c, rows.q(key), v[key], st[fmt])

    def put_gb(r: int, c: int, key: str, div: int = GB) -> None:
        ref = rows.q(key)
        lit = GB_TEXT if div == GB else GIB_TEXT
        book.formula(ws, r, c, _guard([ref], f"{ref}/{lit}"), _gb(v[key], div), st[F_GB])

    def lbl(r: int, c: int, s: str, style=None) -> None:
        book.label(ws, r, c, s, style or label)

    merge = functools.partial(book.merge, ws)  # before the top-left cell is written

    # title -----------------------------------------------------------------------------------
    lbl(1, 1, "Per-rank memory ledger and compute floor", title_st)
    book.formula(ws, 2, 1, rows.q("name"), ledger.config.name, look(bold=True, size=13))
    notes = ledger.config.get("notes")
    merge(2, 5, 2, 14)
    book.formula(ws, 2, 5, rows.notes(), notes if notes not in (None, "") else None, note)
    if isinstance(rows, _ChosenRow):
        lbl(3, 1, "configuration shown (choose):", bold)
        book.text(ws, 3, 2, ledger.config.name, look(fill=_INPUT_FILL, font_color=_INPUT_FONT, quote=True, bold=True))
        ls = f"{LEDGERS}!$A${LEDGER_FIRST_ROW}:$A${rows.last}"
        esc = 'SUBSTITUTE(SUBSTITUTE(SUBSTITUTE($B$3,"~","~~"),"*","~*"),"?","~?")'
        # C3: the chosen row within Ledgers (used by every figure of the sheet)
        book.formula(ws, 3, 3, f"MATCH({esc},{ls},0)", 1, st[F_GENERAL])
        _ok(ws.data_validation(2, 1, 2, 1, {"validate": "list", "source": "=" + ls, "ignore_blank": False,
                                                 "show_error": False}),
            f"{ws.get_name()}: the dropdown")
        lbl(3, 4, "(row in Ledgers)", note)
        header_text = "ledger-report: the configuration chosen in cell B3"
    else:
        header_text = ledger.config.name
    lbl(4, 1, "Reported pipeline stage:", bold)
    put(4, 3, "reported_stage")

    # the state ledger (left block, columns A-J) -------------------------------------------------
    r = 6
    lbl(r, 1, "Model-state ledger, per rank", section)
    r += 1
    for c, h in enumerate(("state", "part", "dtype", "B/param", "stored", "shard group",
                           "params on rank", "GB", "GiB", "location"), start=1):
        lbl(r, c, h, head)
    ws.set_row(r - 1, 30)
    r += 1
    for s, col, en, _zh in STATES:
        for p, pen, _pzh in PARTS:
            lbl(r, 1, en)
            lbl(r, 2, pen)
            dt_key = {"weights": "weight_dtype", "grads": "grad_dtype", "main_grads": "main_grad_dtype",
                      "master": "master_dtype", "m": "m_dtype", "v": "v_dtype"}[s]
            if s == "v":
                opt = rows.q("optimizer")
                book.formula(ws, r, 3, f'{rows.q(dt_key)}&IF({opt}="adafactor"," (factored)","")',
                             str(v[dt_key]) + (" (factored)" if str(v["optimizer"]).lower() == "adafactor" else ""), label)
            else:
                put(r, 3, dt_key)
            put(r, 4, f"{s}_bytes_per_param", F_BPP)
            g = rows.q(f"{s}_{p}_shard_group")
            gv = v[f"{s}_{p}_shard_group"]
            book.formula(ws, r, 5, _guard([g], f'IF({g}=1,"whole","sharded")'),
                         None if gv is None else ("whole" if gv == 1 else "sharded"), label)
            put(r, 6, f"{s}_{p}_shard_group", "#,##0.##")
            put(r, 7, f"{s}_{p}_params_on_rank", F_INT)
            put_gb(r, 8, f"{s}_{p}_bytes")
            put_gb(r, 9, f"{s}_{p}_bytes", GIB)
            put(r, 10, col)
            r += 1
    for key, text in (("state_bytes_per_rank", "model state in HBM"),
                      ("host_state_bytes_per_rank", "model state on the host"),
                      ("nvme_state_bytes_per_rank", "model state on NVMe")):
        lbl(r, 1, text, bold)
        put_gb(r, 8, key)
        put_gb(r, 9, key, GIB)
        r += 1
    merge(r, 1, r, 10)
    lbl(r, 1, "GB = 10^9 bytes, GiB = 2^30 bytes; a shard group of 1 = stored whole on every rank.", note)
    r += 2

    # items outside the ledger ------------------------------------------------------------------
    from ..report import OUTSIDE as UNCOUNTED

    lbl(r, 1, "Not in the state ledger, per rank", section)
    r += 1
    chosen = isinstance(rows, _ChosenRow)
    merge(r, 1, r, 2)
    merge(r, 6, r, 10)
    for c, h in ((1, "item"), (3, "GB"), (4, "GiB"), (5, "in the peak"), (6, "source" if chosen else "basis (as built)")):
        lbl(r, c, h, head)
    ws.set_row(r - 1, 30)
    r += 1
    for item, key, in_peak in UNCOUNTED:
        merge(r, 1, r, 2)
        merge(r, 6, r, 10)
        lbl(r, 1, REGISTRY[key].en, wrap)
        put_gb(r, 3, key)
        put_gb(r, 4, key, GIB)
        put(r, 5, in_peak)
        basis = REGISTRY[key].source
        book.text(ws, r, 6, basis, wrap)
        ws.set_row(r - 1, 15 * max(1, math.ceil(len(basis) / 70), math.ceil(len(REGISTRY[key].en) / 26)))
        r += 1
    r += 1
    lbl(r, 1, "Peak per rank", section)
    r += 1
    merge(r, 1, r, 2)
    for c, h in ((1, ""), (3, "GB"), (4, "GiB")):
        lbl(r, c, h, head)
    r += 1
    for key, text in (("peak_bytes_per_rank", "peak per rank"), ("hbm_bytes", "HBM per GPU"),
                      ("headroom_bytes", "headroom (HBM − peak)"), ("measured_peak_bytes", "measured peak"),
                      ("unexplained_bytes", "measured − estimated peak")):
        lbl(r, 1, text, bold if key == "peak_bytes_per_rank" else label)
        put_gb(r, 3, key)
        put_gb(r, 4, key, GIB)
        r += 1
    lbl(r, 1, "fits in HBM", bold)
    put(r, 3, "fits")
    _ok(ws.conditional_format(r - 1, 0, r - 1, 3, {"type": "formula", "criteria": f"=$C${r}=FALSE",
                                                   "format": book.bad_fill()}),
        f"{ws.get_name()}: the conditional format")
    left_end = r

    # right block, columns L-N: parameters and the compute floor -----------------------------------
    rr = 6
    lbl(rr, 12, "Parameters", section)
    rr += 1
    for key, text in (("params_total", "total"), ("params_expert", "routed experts"), ("params_dense", "non-expert"),
                      ("params_active", "active per token"), ("params_per_rank", "on the rank (before sharding)")):
        lbl(rr, 12, text)
        put(rr, 13, key, F_INT)
        lbl(rr, 14, "params")
        rr += 1
    rr += 1
    lbl(rr, 12, "Compute floor", section)
    rr += 1
    floor = (
        ("flops_per_token", "FLOPs per token", F_SCI, "FLOPs"),
        ("total_flops", "training FLOPs", F_SCI, "FLOPs"),
        ("tokens_per_step", "tokens per step", F_INT, "tokens"),
        ("steps", "steps", F_INT, ""),
        ("step_budget_s", "seconds per step allowed", "#,##0.##", "s"),
        ("required_tokens_per_s", "tokens/s needed", F_INT, "tokens/s"),
        ("tokens_per_s_per_gpu", "tokens/s per GPU", F_INT, "tokens/s"),
        ("gpus", "GPUs of this configuration", F_INT, "GPUs"),
        ("days_on_config", "days on these GPUs", F_DAYS, "days"),
        ("min_gpus_compute", "min GPUs for the deadline (compute gate)", F_INT, "GPUs"),
        ("min_gpus_memory", "min GPUs to hold the state (memory gate)", F_INT, "GPUs"),
        ("binding_gate", "binding gate", F_GENERAL, ""),
        ("gpu_hours", "GPU-hours", F_INT, "GPU-h"),
        ("cost", "cost", F_MONEY, "currency"),
        ("mfu", "MFU (model FLOPs utilisation)", F_RATIO, ""),
        ("hfu", "HFU (hardware FLOPs utilisation)", F_RATIO, ""),
    )
    for key, text, fmt, unit in floor:
        lbl(rr, 12, text)
        put(rr, 13, key, fmt)
        lbl(rr, 14, unit)
        rr += 1

    # assumptions (as built) ------------------------------------------------------------------------
    r = max(left_end, rr) + 2
    lbl(r, 1, "Assumptions (as built)", section)
    r += 1
    if chosen:
        said = ["Each configuration's own assumptions are in the handout (ledger-report build) and in ledger-report calc.",
                "GB = 10^9 bytes and GiB = 2^30 bytes; state lines are per rank on the reported pipeline stage."]
    else:
        from .view import assumptions

        said = assumptions(ledger, "en")
    for text in said:
        merge(r, 1, r, 14)
        book.text(ws, r, 1, "• " + text, wrap)
        ws.set_row(r - 1, 15 * max(1, math.ceil(len(text) / 190)))
        r += 1
    last_row = r - 1

    for c, width in enumerate((25, 7, 11, 9, 10, 8, 15, 10, 10, 9, 2, 40, 16, 10)):  # A-N
        ws.set_column(c, c, width)
    ws.print_area(0, 0, last_row - 1, 13)  # A1:N<last>
    ws.set_landscape()
    ws.set_paper(9)  # A4
    ws.fit_to_pages(1, 1)
    ws.center_horizontally()
    ws.set_margins(left=0.4, right=0.4, top=0.6, bottom=0.6)
    ws.set_header("&C&11 " + _header_escape(header_text), margin=0.5)
    ws.set_footer("&L&8 ledger-report · GB = 10^9 bytes, GiB = 2^30 bytes", margin=0.5)
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


def _write_help(book: _Book, ws, built: bool) -> None:
    head = book.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT)
    wrap = book.style(wrap=True)
    section = book.style(bold=True, size=12, font_color=_SECTION_FONT)
    lines = [
        "ledger-report input columns (CONTRACT section 2). One row per configuration in the Inputs sheet; an empty cell takes the default.",
        "Counts accept 8190735360, 8,190,735,360, 8.19e9, 8.19B, 35B, 5T, 350M, 7K when the workbook is rebuilt; the live formulas need plain numbers.",
        "GB = 10^9 bytes and GiB = 2^30 bytes.",
    ]
    if built:
        lines += [
            "Sheets: Summary (headline figures), Inputs (the rows; edit them), Ledgers (every quantity as a live formula, one row per configuration), "
            "one printable ledger per configuration (or the Ledger sheet with a dropdown above 50), and the lookup sheets Dtypes, Moments, Optimizers, GPUs, Lists.",
            "After editing Inputs or a lookup sheet, recalculate (Excel: automatic; LibreOffice: Data > Calculate > Recalculate Hard, Ctrl+Shift+F9) and every figure follows.",
            "Rebuild with: ledger-report build THIS.xlsx (only the Inputs sheet is read).",
        ]
    r = 1
    book.label(ws, r, 1, "Help", section)
    r += 1
    for text in lines:
        book.merge(ws, r, 1, r, 7)
        book.label(ws, r, 1, text, wrap)
        ws.set_row(r - 1, 30)
        r += 1
    r += 1
    for c, h in enumerate(("column", "kind", "unit", "default", "choices", "meaning", "含义"), start=1):
        book.label(ws, r, c, h, head)
    r += 1
    ws.freeze_panes(r - 1, 0)
    for col in COLUMNS:
        choices = ", ".join(col.choices) if col.choices else ("see the GPUs sheet" if col.name == "gpu" else "")
        default = col.default or ("required" if col.required else "")
        for c, text in enumerate((col.name, col.kind, col.unit, default, choices, col.help_en, col.help_zh), start=1):
            if text:
                book.label(ws, r, c, text, wrap)
        r += 1
    for c, width in enumerate((22, 8, 10, 28, 30, 60, 40)):  # A-G
        ws.set_column(c, c, width)


def _write_lookups(book: _Book) -> None:
    t = tables()
    catalogue = _catalogue_rows()
    for table, title, fields in _table_specs():
        ws = book.sheet(title)
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
            _ok(book.wb.define_name(_name(table, f), f"={title}!${col}$2:${col}${last}"), _name(table, f))
        ws.freeze_panes(1, 1)
    # the choice lists of the other enumerated columns
    ws = book.sheet(LISTS)
    head = book.style(bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT)
    text_st = book.style(fill=_LOOKUP_FILL, quote=True)
    c = 0
    for col in COLUMNS:
        if col.kind != K_ENUM or not _enum_source(col).startswith("list_"):
            continue
        c += 1
        letter = _letter(c)
        book.label(ws, 1, c, col.name, head)
        for i, choice in enumerate(col.choices):
            book.text(ws, 2 + i, c, choice, text_st)
        ws.set_column(c - 1, c - 1, max(12, len(col.name) + 2))
        name = _enum_source(col)
        _ok(book.wb.define_name(name, f"={LISTS}!${letter}$2:${letter}${1 + len(col.choices)}"), name)


def _catalogue_rows() -> tuple[list[str], dict[str, dict[str, Any]]]:
    from dataclasses import asdict

    from ..catalogue import COLUMNS as CAT_COLUMNS
    from ..catalogue import GPUS as CAT
    from ..catalogue import USER_DESCRIBED

    return list(CAT_COLUMNS), {g.name: asdict(g) for g in (*CAT.values(), USER_DESCRIBED)}
