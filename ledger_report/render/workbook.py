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

Speed (1,000 configurations, 227,000 formulas): the ``Ledgers`` and ``Summary`` rows are written
as sheet XML directly, one shared formula per column (``<f t="shared">``: the formula text once,
every other row refers to it), with the cached values inline.  openpyxl writes everything else;
its formula cells get their cached values in a pass over the saved XML (openpyxl writes
``<v/>``).  The bytes are deterministic: fixed document properties and ``deterministic_zip``.

Sources: research/ecosystem.md sections 1-2 and 5 (cached values, LibreOffice's per-sheet cost,
``1E+9`` literals, functions LibreOffice 7.4 evaluates), research/reliability.md sections 1
(formula injection: text cells with ``data_type='s'`` and ``quotePrefix``) and 4.4 (determinism).
"""

from __future__ import annotations

import datetime as _dt
import io
import math
import re
import zipfile
from copy import copy
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence
from xml.sax.saxutils import escape as _xml_escape

from ..config import BOOL as K_BOOL
from ..config import COLUMN_NAMES, COLUMNS, COUNT as K_COUNT, ENUM as K_ENUM, FLOAT as K_FLOAT, INT as K_INT
from ..config import Column, Config
from ..model import formula as fx
from ..model import registry as R
from ..model.definitions import PARTS, REGISTRY, STATES
from ..model.tables import GPU_FIELDS, tables
from .output import deterministic_zip

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
RESERVED_TITLES = (SUMMARY, INPUTS, LEDGERS, LEDGER, HELP, DTYPES, MOMENTS, OPTIMIZERS, GPUS, LISTS, "History")

MAX_PRINT_SHEETS = 50
CHART_MAX = 50  # configurations shown in the Summary chart
INPUT_FIRST_ROW = 2  # Inputs: row 1 is the header
LEDGER_FIRST_ROW = 3  # Ledgers: row 1 the key, row 2 the label and unit
SUMMARY_FIRST_ROW = 2
TEMPLATE_ROWS = 1000  # rows of the template that carry dropdowns and input styling
MAX_TEXT_CHARS = 32767  # a cell's limit; openpyxl would truncate silently

GB = 10**9
GIB = 2**30
GB_TEXT = "1E+9"
GIB_TEXT = "1073741824"

FIXED_TIME = _dt.datetime(2000, 1, 1, 0, 0, 0)

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
    book.wb.active = 0
    return book.finish()


def template_xlsx() -> bytes:
    """The empty input workbook: the CONTRACT columns with help, dropdowns and one example row."""
    book = _Book()
    inputs = book.sheet(INPUTS)
    _write_inputs(book, inputs, [Config(EXAMPLE_ROW, "template")], dropdown_rows=TEMPLATE_ROWS)
    _write_help(book, book.sheet(HELP), built=False)
    _write_lookups(book)
    book.wb.active = 0
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
# The book: openpyxl for structure and styles, cached values and bulk rows patched into the XML


@dataclass
class _BulkColumn:
    letter: str
    style_id: int
    formula: str | None  # the first row's formula (shared down the column); None = plain values
    values: list[Any]
    text_style_id: int = 0  # plain-value columns: the style of text values


class _Book:
    def __init__(self) -> None:
        from openpyxl import Workbook

        self.wb = Workbook()
        self._first = True
        self.cached: dict[str, dict[str, Any]] = {}  # sheet title -> coordinate -> cached value
        self.bulk: dict[str, tuple[int, int, list[_BulkColumn]]] = {}  # title -> (first row, rows, cols)
        self._styles: dict[tuple, Any] = {}
        p = self.wb.properties
        p.creator = "ledger-report"
        p.lastModifiedBy = None
        p.title = "ledger-report: per-rank model-state ledgers and compute floors"
        p.created = FIXED_TIME
        p.modified = FIXED_TIME

    def sheet(self, title: str):
        if self._first:
            ws = self.wb.active
            ws.title = title
            self._first = False
        else:
            ws = self.wb.create_sheet(title)
        self.cached[title] = {}
        return ws

    # styles ---------------------------------------------------------------------------------
    def style(self, ws, *, fmt: str = F_GENERAL, bold: bool = False, fill: str | None = None,
              font_color: str | None = None, quote: bool = False, wrap: bool = False,
              size: float | None = None, italic: bool = False, align: str | None = None, top: bool = False):
        """A StyleArray for these looks (cached), to copy onto cells cheaply."""
        key = (fmt, bold, fill, font_color, quote, wrap, size, italic, align, top)
        got = self._styles.get(key)
        if got is None:
            from openpyxl.styles import Alignment, Font, PatternFill

            probe = ws.cell(row=1048576, column=16384)
            probe.number_format = fmt
            if bold or font_color or size or italic:
                probe.font = Font(bold=bold, color=font_color, size=size or 11, italic=italic)
            if fill:
                probe.fill = PatternFill("solid", start_color=fill, end_color=fill)
            if wrap or align or top:
                probe.alignment = Alignment(wrap_text=wrap, vertical="top" if (wrap or top) else None, horizontal=align)
            if quote:
                probe.quotePrefix = True
            got = copy(probe._style)
            del ws._cells[(1048576, 16384)]
            self._styles[key] = got
        return got

    def style_id(self, style) -> int:
        return self.wb._cell_styles.add(style)

    # cells ------------------------------------------------------------------------------------
    def text(self, ws, row: int, col: int, s: str, style=None, where: str = ""):
        """User (or our) text as a text cell: never a formula, never an error value."""
        s = check_text(str(s), where or ws.title)
        c = ws.cell(row=row, column=col)
        c.value = s
        c.data_type = "s"  # after the assignment, which would make "=..." a formula and "#N/A" an error
        if style is not None:
            c._style = copy(style)
        c.quotePrefix = True
        return c

    def value(self, ws, row: int, col: int, v: Any, style=None):
        c = ws.cell(row=row, column=col)
        c.value = v
        if style is not None:
            c._style = copy(style)
        return c

    def formula(self, ws, row: int, col: int, text: str, cached: Any, style=None):
        """A formula cell (``text`` without ``=``) and the value it must show before any recalculation."""
        c = ws.cell(row=row, column=col)
        c.value = "=" + text
        if style is not None:
            c._style = copy(style)
        self.cached[ws.title][c.coordinate] = cached
        return c

    def add_bulk(self, ws, first_row: int, rows: int, cols: list[_BulkColumn]) -> None:
        self.bulk[ws.title] = (first_row, rows, cols)

    # saving -----------------------------------------------------------------------------------
    def finish(self) -> bytes:
        buf = io.BytesIO()
        self.wb.save(buf)
        parts = _sheet_parts(buf.getvalue())
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as src, zipfile.ZipFile(out, "w") as dst:
            for info in src.infolist():
                data = src.read(info)
                title = parts.get(info.filename)
                if title is not None:
                    data = self._patch_sheet(title, data)
                dst.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=1)
        return deterministic_zip(out.getvalue())

    def _patch_sheet(self, title: str, xml: bytes) -> bytes:
        cached = self.cached.get(title, {})
        text = xml.decode("utf-8")
        if cached:
            missing: list[str] = []

            def put(m: re.Match) -> str:
                ref, attrs, f = m.group(1), m.group(2), m.group(3)
                if ref not in cached:
                    missing.append(ref)
                    return m.group(0)
                t, v = _cell_value(cached[ref])
                return f'<c r="{ref}"{attrs}{t}><f>{f}</f><v>{v}</v></c>'

            text = _EMPTY_FORMULA.sub(put, text)
            if missing:
                raise AssertionError(f"{title}: formula cells without a cached value: {missing[:5]}")
        bulk = self.bulk.get(title)
        if bulk is not None:
            first, rows, cols = bulk
            body = _bulk_rows(first, rows, cols)
            if "</sheetData>" not in text:
                raise AssertionError(f"{title}: no sheetData to extend")
            text = text.replace("</sheetData>", body + "</sheetData>", 1)
            last_col = max((c.letter for c in cols), key=lambda s: (len(s), s))
            text = re.sub(r'<dimension ref="[^"]*"\s*/>', f'<dimension ref="A1:{last_col}{first + rows - 1}" />', text, count=1)
        return text.encode("utf-8")


_EMPTY_FORMULA = re.compile(r'<c r="([A-Z]+[0-9]+)"([^>]*)><f>(.*?)</f><v\s*/></c>', re.S)


def _sheet_parts(xlsx: bytes) -> dict[str, str]:
    """Part name (``xl/worksheets/sheet3.xml``) -> sheet title, from workbook.xml and its rels."""
    from xml.etree import ElementTree as ET

    ns_main = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
    ns_rel = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
    with zipfile.ZipFile(io.BytesIO(xlsx)) as z:
        wbx = ET.fromstring(z.read("xl/workbook.xml"))
        rels = ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))
    targets = {r.get("Id"): r.get("Target") for r in rels}
    out = {}
    for s in wbx.iter(f"{ns_main}sheet"):
        target = targets[s.get(f"{ns_rel}id")]
        target = target.lstrip("/")
        if not target.startswith("xl/"):
            target = "xl/" + target
        out[target] = s.get("name")
    return out


def _float_text(v: float) -> str:
    if v != v or v in (math.inf, -math.inf):
        raise ValueError(f"cannot cache {v!r} in a cell")
    return repr(v).replace("e", "E")


_VALUE_TEXT: dict[type, Callable[[Any], tuple[str, str]]] = {
    type(None): lambda v: (' t="str"', ""),
    bool: lambda v: (' t="b"', "1" if v else "0"),
    str: lambda v: (' t="str"', _xml_escape(v)),
    int: lambda v: ("", str(v)),
    float: lambda v: ("", _float_text(v)),
}


def _cell_value(v: Any) -> tuple[str, str]:
    """(type attribute, <v> text) of a cached value: "" for a blank, ``t="b"`` for booleans."""
    try:
        return _VALUE_TEXT[type(v)](v)
    except KeyError:
        if isinstance(v, bool):
            return _VALUE_TEXT[bool](v)
        if isinstance(v, int):
            return _VALUE_TEXT[int](int(v))
        if isinstance(v, float):
            return _VALUE_TEXT[float](float(v))
        if isinstance(v, str):
            return _VALUE_TEXT[str](str(v))
        raise TypeError(f"cannot cache {v!r} in a cell") from None


_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def check_text(s: str, where: str) -> str:
    """Text a cell can hold: no control characters, at most 32,767 characters (openpyxl would
    raise or silently truncate)."""
    if len(s) > MAX_TEXT_CHARS:
        raise ValueError(f"{where}: text of {len(s):,} characters is over a cell's {MAX_TEXT_CHARS:,}")
    bad = _ILLEGAL_XML.search(s)
    if bad:
        raise ValueError(f"{where}: text holds the character U+{ord(bad.group()):04X}, which a workbook cannot store")
    return s


def _bulk_rows(first: int, rows: int, cols: list[_BulkColumn]) -> str:
    """Sheet XML for rows first..first+rows-1: each formula column one shared formula (the text
    in the first row, a reference to it below) with the cached values; value columns as values."""
    last = first + rows - 1
    out: list[str] = []
    add = out.append
    specs = []
    for si, c in enumerate(cols):
        style = f' s="{c.style_id}"' if c.style_id else ""
        if c.formula is None:
            specs.append((c, f'<c r="{c.letter}', style, None, None))
        else:
            master = f'<f t="shared" ref="{c.letter}{first}:{c.letter}{last}" si="{si}">{_xml_escape(c.formula)}</f><v>'
            specs.append((c, f'<c r="{c.letter}', style, master, f'<f t="shared" si="{si}"/><v>'))
    text_styles = {id(c): (f' s="{c.text_style_id}"' if c.text_style_id else "") for c in cols}
    for i in range(rows):
        r = str(first + i)
        add(f'<row r="{r}">')
        for c, pre, style, master, shared in specs:
            v = c.values[i]
            if master is None:
                if v is None:
                    continue
                if type(v) is str:
                    add(f'{pre}{r}"{text_styles[id(c)]} t="inlineStr"><is><t xml:space="preserve">{_xml_escape(v)}</t></is></c>')
                else:
                    t, x = _cell_value(v)
                    add(f"{pre}{r}\"{style}{t}><v>{x}</v></c>")
            else:
                t, x = _cell_value(v)
                add(f"{pre}{r}\"{style}{t}>{master if i == 0 else shared}{x}</v></c>")
        add("</row>")
    return "".join(out)


# ------------------------------------------------------------------------------------------
# Layout: where inputs, quantities and lookups sit


def _letter(i: int) -> str:
    from openpyxl.utils import get_column_letter

    return get_column_letter(i)


INPUT_LETTERS: dict[str, str] = {c: _letter(i + 1) for i, c in enumerate(COLUMN_NAMES)}
QUANTITY_LETTERS: dict[str, str] = {k: _letter(i + 2) for i, k in enumerate(REGISTRY.keys())}  # A = name


def _table_specs() -> list[tuple[str, str, list[str]]]:
    """(table, sheet, fields) of the lookup sheets, in sheet order."""
    t = tables()
    return [
        ("dtype", DTYPES, list(next(iter(t["dtype"].values())))),
        ("moment", MOMENTS, list(next(iter(t["moment"].values())))),
        ("optimizer", OPTIMIZERS, list(next(iter(t["optimizer"].values())))),
        ("gpu", GPUS, list(GPU_FIELDS)),
    ]


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
        return _name("gpu", None)
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


def _write_inputs(book: _Book, ws, configs: list[Config], dropdown_rows: int) -> None:
    from openpyxl.comments import Comment
    from openpyxl.styles import Font, PatternFill
    from openpyxl.worksheet.datavalidation import DataValidation

    head = book.style(ws, bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT)
    text_in = book.style(ws, fill=_INPUT_FILL, font_color=_INPUT_FONT, quote=True)
    num_in = book.style(ws, fill=_INPUT_FILL, font_color=_INPUT_FONT, fmt=F_GENERAL)
    count_in = book.style(ws, fill=_INPUT_FILL, font_color=_INPUT_FONT, fmt=F_INT)
    for j, col in enumerate(COLUMNS, start=1):
        c = book.text(ws, 1, j, col.name, head)
        c.quotePrefix = False
        cm = Comment(_help_text(col), "ledger-report")
        cm.width, cm.height = 320, 150
        c.comment = cm
        letter = INPUT_LETTERS[col.name]
        dim = ws.column_dimensions[letter]
        dim.width = 24 if col.name in ("name", "notes") else max(10, len(col.name) + 3)
        # the empty cells of the column look like inputs too
        dim.fill = PatternFill("solid", start_color=_INPUT_FILL, end_color=_INPUT_FILL)
        dim.font = Font(color=_INPUT_FONT)
    # the rows, as values (written as sheet XML: 63 columns x 1,000 rows through openpyxl's cell
    # objects would take most of the time budget)
    text_id = book.style_id(text_in)
    cols: list[_BulkColumn] = []
    for col in COLUMNS:
        values: list[Any] = []
        for i, cfg in enumerate(configs):
            v = cfg.values.get(col.name)
            if isinstance(v, str):
                if v == "":
                    v = None  # blank stays blank: the default is resolved by formula
                else:
                    v = check_text(v, f"{INPUTS}!{INPUT_LETTERS[col.name]}{INPUT_FIRST_ROW + i} ({col.name} of {cfg.name!r})")
            elif v is not None and not isinstance(v, (bool, int, float)):
                v = check_text(str(v), f"{INPUTS}!{INPUT_LETTERS[col.name]}{INPUT_FIRST_ROW + i}")
            values.append(v)
        sid = book.style_id(count_in if col.kind == K_COUNT else num_in)
        cols.append(_BulkColumn(INPUT_LETTERS[col.name], sid, None, values, text_id))
    book.add_bulk(ws, INPUT_FIRST_ROW, len(configs), cols)
    ws.freeze_panes = "B2"
    last = INPUT_FIRST_ROW + max(dropdown_rows, 1) - 1
    for col in COLUMNS:
        letter = INPUT_LETTERS[col.name]
        rng = f"{letter}{INPUT_FIRST_ROW}:{letter}{last}"
        dv = None
        if col.kind == K_ENUM:
            dv = DataValidation(type="list", formula1=_enum_source(col), allow_blank=True)
            dv.error = f"{col.name}: choose one of the list (see the Help sheet)"
            dv.errorTitle = col.name
        elif col.kind in (K_INT, K_COUNT, K_FLOAT) and (col.minimum is not None or col.maximum is not None):
            kind = "whole" if col.kind == K_INT else "decimal"
            lo = col.minimum if col.minimum is not None else -1e307
            hi = col.maximum if col.maximum is not None else 1e307
            if col.min_exclusive:
                lo = lo + (1e-9 if kind == "decimal" else 1)
            dv = DataValidation(type=kind, operator="between", formula1=fx.number(lo), formula2=fx.number(hi),
                                allow_blank=True)
            dv.errorStyle = "warning"
            dv.error = f"{col.name}: expected a number, {_help_text(col).splitlines()[-1]}"
            dv.errorTitle = col.name
        elif col.kind == K_BOOL:
            dv = DataValidation(type="list", formula1='"TRUE,FALSE"', allow_blank=True)
            dv.errorStyle = "warning"
        if dv is not None:
            dv.showErrorMessage = True
            dv.add(rng)
            ws.add_data_validation(dv)


# ------------------------------------------------------------------------------------------
# Ledgers (bulk XML: one shared formula per column)


def _write_ledgers(book: _Book, ws, ledgers: list[Any], templates: Mapping[str, fx.Template]) -> None:
    head = book.style(ws, bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT)
    sub = book.style(ws, italic=True, wrap=True)
    book.text(ws, 1, 1, "name", head).quotePrefix = False
    book.text(ws, 2, 1, "configuration", sub).quotePrefix = False
    ws.column_dimensions["A"].width = 24
    n = len(ledgers)
    cols = [
        _BulkColumn("A", 0, f"{INPUTS}!A{INPUT_FIRST_ROW}", [l.config.name for l in ledgers]),
    ]
    ids: dict[str, int] = {}
    for q in REGISTRY:
        letter = QUANTITY_LETTERS[q.key]
        j = _col_index(letter)
        book.text(ws, 1, j, q.key, head).quotePrefix = False
        book.text(ws, 2, j, f"{q.en} [{q.unit}]", sub).quotePrefix = False
        ws.column_dimensions[letter].width = max(12, min(28, len(q.key) + 2))
        fmt = _UNIT_FORMATS.get(q.unit, F_GENERAL)
        if fmt not in ids:
            ids[fmt] = book.style_id(book.style(ws, fmt=fmt))
        cols.append(_BulkColumn(letter, ids[fmt], templates[q.key].fill(INPUT_FIRST_ROW, LEDGER_FIRST_ROW),
                                [l.values[q.key] for l in ledgers]))
    ws.row_dimensions[2].height = 45
    ws.freeze_panes = f"B{LEDGER_FIRST_ROW}"
    book.add_bulk(ws, LEDGER_FIRST_ROW, n, cols)


def _col_index(letter: str) -> int:
    from openpyxl.utils import column_index_from_string

    return column_index_from_string(letter)


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
# Summary (bulk XML too)

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


def _summary_cell(kind: str, key: str) -> tuple[str, Callable[[Mapping[str, Any]], Any]]:
    """(formula for the first Summary row, python value of that formula)."""
    if key == "name":
        return _lref("name"), lambda v: v["__name__"]
    ref = _lref(key)
    if kind == "gb":
        if REGISTRY[key].nullable:
            return _guard([ref], f"{ref}/{GB_TEXT}"), lambda v: _gb(v[key])
        return f"{ref}/{GB_TEXT}", lambda v: v[key] / GB
    return ref, lambda v: v[key]


def _chart_cells() -> list[tuple[str, str, Callable[[Mapping[str, Any]], Any]]]:
    """(header, first-row formula, value) of the chart's data: per state, GB in HBM per rank."""
    out = []
    for s, col, en, _zh in STATES:
        d, e, loc = _lref(f"{s}_dense_bytes"), _lref(f"{s}_expert_bytes"), _lref(col)
        body = f'IF({loc}="hbm",({d}+{e})/{GB_TEXT},0)'
        refs = [r for r, k in ((d, f"{s}_dense_bytes"), (e, f"{s}_expert_bytes")) if REGISTRY[k].nullable]

        def val(v, s=s, col=col):
            a, b = v[f"{s}_dense_bytes"], v[f"{s}_expert_bytes"]
            if a is None or b is None:
                return None
            return (a + b) / GB if str(v[col]).lower() == "hbm" else 0

        out.append((f"{en} GB", _guard(refs, body), val))
    p, st = _lref("peak_bytes_per_rank"), _lref("state_bytes_per_rank")

    def outside(v):
        a, b = v["peak_bytes_per_rank"], v["state_bytes_per_rank"]
        return None if a is None or b is None else (a - b) / GB

    out.append(("outside the state ledger GB", _guard([p, st], f"({p}-{st})/{GB_TEXT}"), outside))
    return out


def _write_summary(book: _Book, ws, ledgers: list[Any]) -> None:
    from openpyxl.chart import BarChart, LineChart, Reference
    from openpyxl.formatting.rule import FormulaRule
    from openpyxl.styles import PatternFill

    head = book.style(ws, bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT, wrap=True)
    n = len(ledgers)
    first, last = SUMMARY_FIRST_ROW, SUMMARY_FIRST_ROW + n - 1
    vals = [dict(l.values, __name__=l.config.name) for l in ledgers]
    cols: list[_BulkColumn] = []
    j = 0
    for j, (header, kind, key) in enumerate(SUMMARY_COLUMNS, start=1):
        letter = _letter(j)
        book.text(ws, 1, j, header, head).quotePrefix = False
        f, fn = _summary_cell(kind, key)
        sid = book.style_id(book.style(ws, fmt=_SUMMARY_FORMATS.get(key, F_GENERAL)))
        cols.append(_BulkColumn(letter, sid, f, [fn(v) for v in vals]))
        ws.column_dimensions[letter].width = 26 if key == "name" else 13
    chart_first = j + 2
    gb_id = book.style_id(book.style(ws, fmt=F_GB))
    chart_letters = []
    for k, (header, f, fn) in enumerate(_chart_cells()):
        letter = _letter(chart_first + k)
        chart_letters.append(letter)
        book.text(ws, 1, chart_first + k, header, head).quotePrefix = False
        cols.append(_BulkColumn(letter, gb_id, f, [fn(v) for v in vals]))
        ws.column_dimensions[letter].width = 12
    ws.row_dimensions[1].height = 45
    ws.freeze_panes = "B2"
    ws.auto_filter.ref = f"A1:{_letter(len(SUMMARY_COLUMNS))}{last}"
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.print_title_rows = "1:1"
    ws.print_area = f"A1:{_letter(len(SUMMARY_COLUMNS))}{last}"
    book.add_bulk(ws, first, n, cols)

    # red where the peak does not fit
    bad = PatternFill("solid", start_color=_BAD_FILL, end_color=_BAD_FILL)
    fits_col = _letter([k for _h, _k, k in SUMMARY_COLUMNS].index("fits") + 1)
    ws.conditional_formatting.add(f"A{first}:{_letter(len(SUMMARY_COLUMNS))}{last}",
                                  FormulaRule(formula=[f"${fits_col}{first}=FALSE"], fill=bad))

    # per-rank memory by state (stacked) against HBM (a line); LibreOffice spends seconds on a
    # chart of 1,000 categories, and nobody reads one, so it shows the first CHART_MAX rows
    shown = min(n, CHART_MAX)
    chart_last = first + shown - 1
    bar = BarChart()
    bar.type = "col"
    bar.grouping = "stacked"
    bar.overlap = 100
    bar.title = "Per-rank memory by state vs HBM (GB)" + (f", first {shown} configurations" if shown < n else "")
    bar.y_axis.title = "GB per rank"
    cats = Reference(ws, min_col=1, min_row=first, max_row=chart_last)
    for letter in chart_letters:
        c = _col_index(letter)
        bar.add_data(Reference(ws, min_col=c, min_row=1, max_row=chart_last), titles_from_data=True)
    bar.set_categories(cats)
    line = LineChart()
    hbm_col = [k for _h, _k, k in SUMMARY_COLUMNS].index("hbm_bytes") + 1
    line.add_data(Reference(ws, min_col=hbm_col, min_row=1, max_row=chart_last), titles_from_data=True)
    line.set_categories(cats)
    bar += line
    bar.width = min(40, 16 + 0.8 * shown)
    bar.height = 12
    # below the table while it is short, else to the right of the chart data (visible from row 1)
    anchor = f"A{last + 3}" if n <= CHART_MAX else f"{_letter(_col_index(chart_letters[-1]) + 2)}2"
    ws.add_chart(bar, anchor)


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
    from openpyxl.worksheet.datavalidation import DataValidation

    v = ledger.values

    def look(**kw):
        return book.style(ws, top=True, **kw)  # top-aligned: rows grow for wrapped basis text

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
        book.text(ws, r, c, s, style or label).quotePrefix = False

    # title -----------------------------------------------------------------------------------
    lbl(1, 1, "Per-rank memory ledger and compute floor", title_st)
    book.formula(ws, 2, 1, rows.q("name"), ledger.config.name, look(bold=True, size=13))
    notes = ledger.config.get("notes")
    book.formula(ws, 2, 5, rows.notes(), notes if notes not in (None, "") else None, note)
    _merge(ws, 2, 5, 2, 14)
    if isinstance(rows, _ChosenRow):
        lbl(3, 1, "configuration shown (choose):", bold)
        book.text(ws, 3, 2, ledger.config.name, look(fill=_INPUT_FILL, font_color=_INPUT_FONT, quote=True, bold=True))
        ls = f"{LEDGERS}!$A${LEDGER_FIRST_ROW}:$A${rows.last}"
        esc = 'SUBSTITUTE(SUBSTITUTE(SUBSTITUTE($B$3,"~","~~"),"*","~*"),"?","~?")'
        # C3: the chosen row within Ledgers (used by every figure of the sheet)
        book.formula(ws, 3, 3, f"MATCH({esc},{ls},0)", 1, st[F_GENERAL])
        dv = DataValidation(type="list", formula1=ls, allow_blank=False)
        dv.add("B3")
        ws.add_data_validation(dv)
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
    ws.row_dimensions[r].height = 30
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
    lbl(r, 1, "GB = 10^9 bytes, GiB = 2^30 bytes; a shard group of 1 = stored whole on every rank.", note)
    _merge(ws, r, 1, r, 10)
    r += 2

    # items outside the ledger ------------------------------------------------------------------
    from ..engine import UNCOUNTED

    lbl(r, 1, "Not in the state ledger, per rank", section)
    r += 1
    chosen = isinstance(rows, _ChosenRow)
    for c, h in ((1, "item"), (3, "GB"), (4, "GiB"), (5, "in the peak"), (6, "source" if chosen else "basis (as built)")):
        lbl(r, c, h, head)
    _merge(ws, r, 1, r, 2)
    _merge(ws, r, 6, r, 10)
    ws.row_dimensions[r].height = 30
    r += 1
    unc = {u["item"]: u for u in ledger.uncounted()}
    for item, key, in_peak in UNCOUNTED:
        lbl(r, 1, REGISTRY[key].en, wrap)
        _merge(ws, r, 1, r, 2)
        put_gb(r, 3, key)
        put_gb(r, 4, key, GIB)
        lbl(r, 5, "yes" if in_peak else "no (a note)")
        basis = REGISTRY[key].source if chosen else unc[item]["basis"]
        book.text(ws, r, 6, basis, wrap)
        _merge(ws, r, 6, r, 10)
        ws.row_dimensions[r].height = 15 * max(1, math.ceil(len(basis) / 70), math.ceil(len(REGISTRY[key].en) / 26))
        r += 1
    r += 1
    lbl(r, 1, "Peak per rank", section)
    r += 1
    for c, h in ((1, ""), (3, "GB"), (4, "GiB")):
        lbl(r, c, h, head)
    _merge(ws, r, 1, r, 2)
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
    from openpyxl.formatting.rule import FormulaRule
    from openpyxl.styles import PatternFill

    bad = PatternFill("solid", start_color=_BAD_FILL, end_color=_BAD_FILL)
    ws.conditional_formatting.add(f"A{r}:D{r}", FormulaRule(formula=[f"$C${r}=FALSE"], fill=bad))
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
        from ..assumptions import assumptions

        said = assumptions(ledger)[0]
    for text in said:
        book.text(ws, r, 1, "• " + text, wrap)
        _merge(ws, r, 1, r, 14)
        ws.row_dimensions[r].height = 15 * max(1, math.ceil(len(text) / 190))
        r += 1
    last_row = r - 1

    for letter, width in zip("ABCDEFGHIJKLMN", (25, 7, 11, 9, 10, 8, 15, 10, 10, 9, 2, 40, 16, 10)):
        ws.column_dimensions[letter].width = width
    ws.print_area = f"A1:N{last_row}"
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 1
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.print_options.horizontalCentered = True
    ws.page_margins.left = ws.page_margins.right = 0.4
    ws.page_margins.top = ws.page_margins.bottom = 0.6
    ws.oddHeader.center.text = _header_escape(header_text)
    ws.oddHeader.center.size = 11
    ws.oddFooter.left.text = "ledger-report · GB = 10^9 bytes, GiB = 2^30 bytes"
    ws.oddFooter.left.size = 8
    ws.sheet_view.showGridLines = False


def _merge(ws, r1: int, c1: int, r2: int, c2: int) -> None:
    """Merge a range without openpyxl creating a MergedCell per covered cell (1-2 ms each)."""
    from openpyxl.worksheet.cell_range import CellRange

    ws.merged_cells.add(CellRange(min_row=r1, min_col=c1, max_row=r2, max_col=c2))


def _header_escape(s: str, limit: int = 120) -> str:
    """Page header text: ``&`` starts a header code, so a literal one is doubled; kept short
    (Excel allows 255 characters for all header sections together)."""
    s = re.sub(r"[\x00-\x1f]", " ", s)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return s.replace("&", "&&")


# ------------------------------------------------------------------------------------------
# Help and the lookup sheets


def _write_help(book: _Book, ws, built: bool) -> None:
    head = book.style(ws, bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT)
    wrap = book.style(ws, wrap=True)
    section = book.style(ws, bold=True, size=12, font_color=_SECTION_FONT)
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
    book.text(ws, r, 1, "Help", section).quotePrefix = False
    r += 1
    for text in lines:
        book.text(ws, r, 1, text, wrap).quotePrefix = False
        _merge(ws, r, 1, r, 7)
        ws.row_dimensions[r].height = 30
        r += 1
    r += 1
    for c, h in enumerate(("column", "kind", "unit", "default", "choices", "meaning", "含义"), start=1):
        book.text(ws, r, c, h, head).quotePrefix = False
    r += 1
    ws.freeze_panes = f"A{r}"
    for col in COLUMNS:
        choices = ", ".join(col.choices) if col.choices else ("see the GPUs sheet" if col.name == "gpu" else "")
        default = col.default or ("required" if col.required else "")
        for c, text in enumerate((col.name, col.kind, col.unit, default, choices, col.help_en, col.help_zh), start=1):
            if text:
                book.text(ws, r, c, text, wrap).quotePrefix = False
        r += 1
    for letter, width in zip("ABCDEFG", (22, 8, 10, 28, 30, 60, 40)):
        ws.column_dimensions[letter].width = width


def _write_lookups(book: _Book) -> None:
    from openpyxl.workbook.defined_name import DefinedName

    t = tables()
    catalogue = _catalogue_rows()
    for table, title, fields in _table_specs():
        ws = book.sheet(title)
        head = book.style(ws, bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT)
        cell_st = book.style(ws, fill=_LOOKUP_FILL)
        text_st = book.style(ws, fill=_LOOKUP_FILL, quote=True)
        rows = t[table]
        extra: list[str] = []
        if table == "gpu":
            extra = [c for c in catalogue[0] if c not in fields and c != "name"]
        header = [table if table != "gpu" else "name"] + fields + extra
        for c, h in enumerate(header, start=1):
            book.text(ws, 1, c, h, head).quotePrefix = False
            ws.column_dimensions[_letter(c)].width = 14 if h != "source" else 80
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
        book.wb.defined_names[_name(table, None)] = DefinedName(_name(table, None), attr_text=f"{title}!$A$2:$A${last}")
        for c, f in enumerate(fields, start=2):
            col = _letter(c)
            book.wb.defined_names[_name(table, f)] = DefinedName(_name(table, f), attr_text=f"{title}!${col}$2:${col}${last}")
        ws.freeze_panes = "B2"
    # the choice lists of the other enumerated columns
    ws = book.sheet(LISTS)
    head = book.style(ws, bold=True, fill=_HEADER_FILL, font_color=_HEADER_FONT)
    text_st = book.style(ws, fill=_LOOKUP_FILL, quote=True)
    c = 0
    for col in COLUMNS:
        if col.kind != K_ENUM or not _enum_source(col).startswith("list_"):
            continue
        c += 1
        letter = _letter(c)
        book.text(ws, 1, c, col.name, head).quotePrefix = False
        for i, choice in enumerate(col.choices):
            book.text(ws, 2 + i, c, choice, text_st)
        ws.column_dimensions[letter].width = max(12, len(col.name) + 2)
        name = _enum_source(col)
        book.wb.defined_names[name] = DefinedName(name, attr_text=f"{LISTS}!${letter}$2:${letter}${1 + len(col.choices)}")


def _catalogue_rows() -> tuple[list[str], dict[str, dict[str, Any]]]:
    from dataclasses import asdict

    from ..catalogue import COLUMNS as CAT_COLUMNS
    from ..catalogue import GPUS as CAT

    return list(CAT_COLUMNS), {name: asdict(g) for name, g in CAT.items()}
