"""Reading and validating the input rows (the columns of docs/columns.md) from CSV or XLSX.

``read_configs(path)`` returns one frozen ``Config`` per configuration row, or raises one
``InputError`` that lists every problem found (file, row as the user sees it, column, what was
expected, what was found).  No other exception escapes for any bad file: zip, XML, CSV and
Unicode failures are all turned into problems here.

Hostile-input findings this module is shaped by (docs: ``research/reliability.md`` sections 0-2):

* CSV is parsed with the standard library and a per-row field count, never with pandas, so an
  unquoted ``1,024`` is an error instead of a silent column shift, and a model named ``NA``
  stays the text ``NA``.
* An XLSX is checked as a zip *before* openpyxl sees it (``zipfile``'s listing: entry count,
  declared sizes, compression ratio, encryption; OLE / truncated files), and openpyxl must be
  running on defusedxml, which refuses any XML entity declaration in any part it parses.
* Only public APIs of openpyxl, defusedxml and zipfile are used.  The sheet is streamed once
  with ``load_workbook(read_only=True)`` and ``iter_rows`` after ``reset_dimensions``, so the
  ``<dimension>`` tag is never trusted: an understated one cannot hide rows and an overstated
  one cannot pad rows to 16,384 cells.  Rows are bounded by ``MAX_ROWS``; empty rows and
  padding by ``MAX_SHEET_ROWS`` and ``MAX_SHEET_CELLS``.
* Formula cells use their saved value (the same sheet read with ``data_only=True``, opened only
  when a formula is met); without one, and for error cells and dates in number columns, the
  cell is named in an error.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import difflib
import io
import json
import math
import numbers
import posixpath
import re
import unicodedata
import warnings
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

from .config import (
    ALIASES,
    BOOL,
    COLUMN_BY_NAME,
    COLUMN_NAMES,
    COUNT,
    ENUM,
    FLOAT,
    INT,
    TEXT,
    Column,
    Config,
)
from .errors import InputError, Problem
from .model.units import GB, GIB, TB, TIB

__all__ = [
    "read_configs",
    "stream_configs",
    "config_from_mapping",
    "configs_from_records",
    "CSV_SUFFIXES",
    "XLSX_SUFFIXES",
]

# ---------------------------------------------------------------------------------------------
# Limits (module level so tests can monkeypatch them down)

CHECK_BATCH_ROWS = 4096  # rows checked against the model's constraints at once
MAX_ROWS = 100_000  # configuration rows per file
MAX_ZIP_ENTRIES = 1000  # Apache POI ZipSecureFile.MAX_FILE_COUNT
MAX_ENTRY_BYTES = 200 * 2**20  # declared uncompressed size of one zip entry
MAX_TOTAL_BYTES = 1 * 2**30  # declared uncompressed size of all entries together
MAX_RATIO = 100  # uncompressed : compressed (POI MIN_INFLATE_RATIO = 0.01)
RATIO_GRACE_BYTES = (
    100 * 2**10
)  # entries up to this size are exempt from the ratio (POI GRACE_ENTRY_SIZE)
MAX_SHEET_ROWS = 1_048_576  # Excel's last row: empty rows up to a huge row number are not walked
MAX_SHEET_CELLS = (
    20_000_000  # cells of all rows, each from column A to its last cell (padding included)
)
MAX_CSV_BYTES = 200 * 2**20  # size of a CSV file
MAX_TEXT_CHARS = 32_767  # Excel's cell limit; openpyxl would silently cut longer text
MAX_NUMBER = 10**16  # largest count / integer accepted (5T parameters x 2000 is still far below)

CSV_SUFFIXES = (".csv", ".tsv", ".txt")
XLSX_SUFFIXES = (".xlsx", ".xlsm")

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_SUFFIX_POWER = {"k": 3, "m": 6, "b": 9, "t": 12}
_DELIMITERS = (",", ";", "\t")
_DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}

# A number as people type it (after NFKC): optional sign; digits, or digits in groups of exactly
# three separated by one kind of separator (comma, space, underscore); optional fraction;
# optional exponent; optional K/M/B/T suffix; optional percent sign.  ASCII digits only.
_NUMBER_RE = re.compile(
    r"(?P<sign>[+-])?"
    r"(?P<int>\d{1,3}(?P<sep>[, _])\d{3}(?:(?P=sep)\d{3})*|\d+)?"
    r"(?:\.(?P<frac>\d*))?"
    r"(?:[eE](?P<exp>[+-]?\d+))?"
    r"(?: ?(?P<suffix>[kKmMbBtT]))?"
    r"(?P<pct> ?%)?",
    re.ASCII,
)

# A size typed with its unit into a column counted in GB (10^9 bytes): GB, GiB, MB, MiB, TB, TiB.
_BYTE_UNIT_RE = re.compile(r"(?P<num>.*?) ?(?P<unit>[mgtMGT](?:i|I)?[bB])", re.ASCII)
_GB_PER_UNIT = {
    unit: Decimal(n) / GB
    for unit, n in (
        ("mb", GB // 1000),
        ("gb", GB),
        ("tb", TB),
        ("mib", GIB // 1024),
        ("gib", GIB),
        ("tib", TIB),
    )
}

_TRUE = frozenset({"true", "yes", "1", "y", "on"})
_FALSE = frozenset({"false", "no", "0", "n", "off"})


# ---------------------------------------------------------------------------------------------
# Public entry point


def stream_configs(path: str | Path, each: Callable[[Config], None]) -> int:
    """Hand every configuration row to ``each`` without holding them all (memory does not grow
    with the rows).  The file is read twice: first to check every row, so that ``each`` sees
    nothing unless the whole file is good; then to hand the rows over.  Returns the row count."""
    read_configs(path, sink=lambda config: None)
    n = 0

    def counted(config: Config) -> None:
        nonlocal n
        n += 1
        each(config)

    read_configs(path, sink=counted)
    return n


def read_configs(
    path: str | Path,
    sink: Callable[[Config], None] | None = None,
    keep: Callable[[int], bool] | None = None,
    sink_columns: Callable[
        [Mapping[str, Sequence[Any]], list[str], list[Mapping[str, str] | None]], None
    ]
    | None = None,
) -> list[Config]:
    """Read every configuration row of a .csv or .xlsx file; raise ``InputError`` on any problem.

    With ``sink``, each good row goes to it as it is read and the list returned is empty.  With
    ``sink_columns`` as well (``PackedConfigs.extend_columns``), good rows of a .csv file read a
    column at a time go to it instead, a block at a time, in their place among the rows: each
    column's value on the rows (a column left out is empty on every row), their sources and their
    origins (``None`` where the row's model filled no column), as their ``Config`` would hold them.  With
    ``keep`` (a .csv file only), a data row is read and checked only where ``keep`` of its
    position (0 for the first data row) is true: the rest are counted and skipped, so their
    problems, and names repeated across the parts, are for whoever reads them."""
    path = Path(path)
    label = path.name or str(path)
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except (OSError, ValueError) as exc:  # e.g. a NUL byte or an over-long name
        _fail(label, "a path to a .csv or .xlsx file", f"an unusable path ({exc})")
    if not exists:
        _fail(label, "an existing .csv or .xlsx file", "no such file")
    if is_dir:
        _fail(label, "a .csv or .xlsx file", "a directory")
    suffix = path.suffix.lower()
    if suffix in CSV_SUFFIXES:
        return _read_csv(path, label, sink, keep, sink_columns)
    if keep is not None:
        raise ValueError("keep reads part of a .csv file only")
    if suffix in XLSX_SUFFIXES:
        return _read_xlsx(path, label, sink)
    if suffix == ".xls":
        _fail(
            label,
            "a .csv or .xlsx file",
            "a legacy .xls workbook; save it from Excel as .xlsx (Excel Workbook)",
        )
    if suffix in (".xlsb", ".ods", ".numbers"):
        _fail(label, "a .csv or .xlsx file", f"a {suffix} file; save it as .xlsx or .csv")
    _fail(label, "a file ending in .csv or .xlsx", f"the extension {suffix or '(none)'!r}")


def name_key(name: str) -> str:
    """A name as the reader compares names (unique in a file)."""
    return _norm(name).casefold()


def config_from_mapping(values: Mapping[str, Any], source: str = "mapping") -> Config:
    """One configuration from a mapping of column names to values, checked like a file row.

    Each value goes through the conversion a CSV or workbook cell gets (``"35B"``, ``8``,
    ``1e11``, ``"40%"``, ``"bf16"``...), then the same cross-column checks; ``None`` and ``""``
    are empty cells, and a key is read like a column name (unknown ones are refused).  Any
    problem raises the ``InputError`` a file would get, naming ``source``, row 1 and the column.
    The ``Config`` comes out with ``source`` "<source> row 1"."""
    return configs_from_records([values], source)[0]


def configs_from_records(
    records: Iterable[Mapping[str, Any]], source: str = "records"
) -> list[Config]:
    """Configurations from mappings, each checked like a file row (see ``config_from_mapping``);
    the n-th mapping is row n in messages and sources, and names are unique across them as in a
    file.  Every problem of every mapping is reported in one ``InputError``; no mappings, no
    configurations."""
    table = _Table(source, None, keyed=True)
    n = 0
    for n, record in enumerate(records, 1):
        table.read_record(n, record)
    if not n:
        return []
    return table.finish()


def _python_number(value: Any) -> Any:
    """A number type a file never gives (numpy's, Fraction) as the Python int or float it
    stands for, so that it is converted like a cell holding that number."""
    if isinstance(value, (bool, int, float)) or not isinstance(value, numbers.Real):
        return value
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def _fail(
    label: str, expected: str, found: str, row: int | None = None, row_label: str = "row"
) -> NoReturn:
    raise InputError(Problem(label, row, None, expected, found, row_label=row_label))


# ---------------------------------------------------------------------------------------------
# Cell values that only a workbook can produce


class _ExcelError:
    """An Excel error value such as #DIV/0! (a cell of type 'e')."""

    def __init__(self, code: str, coordinate: str):
        self.code = code
        self.coordinate = coordinate


class _NoCache:
    """A formula cell whose file holds no saved result."""

    def __init__(self, formula: str, coordinate: str):
        self.formula = formula
        self.coordinate = coordinate


class _Bad(Exception):
    """One bad cell: what was expected, what was found."""

    def __init__(self, expected: str, found: str):
        super().__init__(expected, found)
        self.expected = expected
        self.found = found


# ---------------------------------------------------------------------------------------------
# Showing values in messages


def _show(raw: Any) -> str:
    """A cell as it appears in a message: text quoted (at most 60 characters), numbers plain."""
    if isinstance(raw, str):
        text = raw if len(raw) <= 60 else raw[:57] + "..."
        return json.dumps(text, ensure_ascii=False)
    if isinstance(raw, bool):
        return "the boolean " + ("TRUE" if raw else "FALSE")
    if isinstance(raw, int):
        return str(raw)
    if isinstance(raw, float):
        return _num(raw)
    if isinstance(raw, _ExcelError):
        return f"the Excel error {raw.code}"
    if isinstance(raw, _NoCache):
        return f"a formula with no saved value ({raw.formula[:40]})"
    if isinstance(raw, dt.datetime):
        if raw.time() == dt.time(0):
            return f"a date {raw.date().isoformat()}"
        return f"a date {raw.isoformat(sep=' ')}"
    if isinstance(raw, dt.date):
        return f"a date {raw.isoformat()}"
    if isinstance(raw, dt.time):
        return f"a time {raw.isoformat()}"
    if isinstance(raw, dt.timedelta):
        return f"a duration {raw}"
    return repr(raw)[:60]


def _num(x: int | float | Decimal) -> str:
    """A number for a message: ints with thousands separators from 10,000, floats shortest."""
    if isinstance(x, float):
        if math.isfinite(x) and x == int(x) and abs(x) < 1e16:
            x = int(x)
        else:
            return repr(x)
    if isinstance(x, Decimal):
        return str(x)
    return f"{x:,}" if abs(x) >= 10_000 else str(x)


def _letter(col: int) -> str:
    """Spreadsheet column letters for a 1-based column index."""
    letters = ""
    while col > 0:
        col, rem = divmod(col - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


def _sheet_ref(title: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", title):
        return title
    return "'" + title.replace("'", "''") + "'"


# ---------------------------------------------------------------------------------------------
# Value parsing, one function per column kind


def _is_blank(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip())


def _norm(text: str) -> str:
    """NFKC (full-width digits and letters, NBSP) and surrounding whitespace removed."""
    return unicodedata.normalize("NFKC", text).strip()


def _fmt_bound(x: float | None) -> str:
    if x is None:
        return ""
    return _num(int(x)) if float(x).is_integer() else repr(x)


def _range_text(col: Column) -> str:
    lo, hi = col.minimum, col.maximum
    if lo is not None and hi is not None:
        if col.min_exclusive:
            return f"in ({_fmt_bound(lo)}, {_fmt_bound(hi)}]"
        return f"from {_fmt_bound(lo)} to {_fmt_bound(hi)}"
    if lo is not None:
        return f"{'>' if col.min_exclusive else '≥'} {_fmt_bound(lo)}"
    if hi is not None:
        return f"≤ {_fmt_bound(hi)}"
    return ""


def _expected(col: Column) -> str:
    rng = _range_text(col)
    rng = f" {rng}" if rng else ""
    if col.kind == COUNT:
        return f"a whole number{rng} such as 7000000000, 7,000,000,000, 7e9 or 7B"
    if col.kind == INT:
        return f"a whole number{rng}"
    if col.kind == FLOAT:
        if col.name == "mfu":
            return f"a fraction{rng} such as 0.4 or 40%"
        return f"a number{rng}"
    if col.kind == BOOL:
        return "true or false (also yes/no, 1/0)"
    if col.kind == ENUM:
        if col.name == "gpu":
            return "a GPU from the catalogue (ledger-report gpus)"
        return "one of " + ", ".join(col.choices)
    return f"text of at most {MAX_TEXT_CHARS:,} characters"


def _number_hint(text: str) -> str:
    low = text.lower()
    if low.lstrip("+-") in ("nan", "inf", "infinity", "-inf"):
        return " — not a finite number"
    if low.startswith(("0x", "-0x", "+0x")):
        return " — hexadecimal is not accepted"
    if re.search(r"\d,\d", text) and not re.search(r"\d,\d{3}(?!\d)", text):
        return " — a comma here is not a thousands separator (groups of exactly 3 digits, 1,024); if it is a decimal comma write a point (3.5)"
    if re.search(r"\d,\d", text):
        return " — thousands separators must group exactly 3 digits (1,024,000); if a comma is a decimal comma write a point"
    if re.search(r"\d\s*[gG]$", text):
        return " — write B for billions, or the size's unit in full (GB, GiB) in a column counted in GB"
    return ""


def _decimal(text: str, col: Column, sized_ok: bool = True) -> tuple[Decimal, bool]:
    """Parse a typed number into an exact Decimal; returns (value, had a percent sign).  In a
    column counted in GB, a size may carry one unit (79.7 GiB, 96GB, 512 MiB): it is converted to GB."""
    s = re.sub(r"\s+", " ", _norm(text)).strip()
    sized = _BYTE_UNIT_RE.fullmatch(s) if sized_ok and col.unit == "GB" else None
    if sized:
        value, pct = _decimal(sized.group("num"), col, sized_ok=False)
        return value * _GB_PER_UNIT[sized.group("unit").lower()], pct
    m = _NUMBER_RE.fullmatch(s)
    if not m or (m.group("int") is None and not m.group("frac")):
        raise _Bad(_expected(col), _show(text) + _number_hint(s))
    if m.group("suffix") and col.kind != COUNT:
        raise _Bad(
            _expected(col),
            _show(text) + " — K/M/B/T suffixes are only for counts (params_*, tokens)",
        )
    if m.group("suffix") and m.group("exp") is not None:
        raise _Bad(_expected(col), _show(text) + " — give an exponent or a suffix, not both")
    pct = bool(m.group("pct"))
    if pct and col.name != "mfu":
        raise _Bad(_expected(col), _show(text) + " — a percent sign is only accepted in mfu")
    exp_text = m.group("exp") or "0"
    if len(exp_text.lstrip("+-")) > 6:
        raise _Bad(_expected(col) + ", at most 10^16", _show(text) + " — out of range")
    exp = (
        int(exp_text) + _SUFFIX_POWER.get((m.group("suffix") or "").lower(), 0) - (2 if pct else 0)
    )
    digits = m.group("int") or "0"
    if m.group("sep"):
        digits = digits.replace(m.group("sep"), "")
    try:
        value = Decimal(f"{m.group('sign') or ''}{digits}.{m.group('frac') or '0'}E{exp}")
    except InvalidOperation:  # pragma: no cover - the regex admits only valid literals
        raise _Bad(_expected(col), _show(text)) from None
    return value, pct


def _not_a_number_kind(raw: Any, col: Column) -> None:
    """Raise for workbook values that are never a number: booleans, dates, errors."""
    if isinstance(raw, bool):
        raise _Bad(_expected(col), _show(raw) + " — a TRUE/FALSE cell is not a number")
    if isinstance(raw, (dt.datetime, dt.date, dt.time, dt.timedelta)):
        raise _Bad(
            _expected(col),
            _show(raw)
            + " — Excel may have converted what you typed into a date; format the cell as Text or Number and type it again",
        )


def _to_decimal(raw: Any, col: Column) -> tuple[Decimal, bool]:
    _not_a_number_kind(raw, col)
    if isinstance(raw, int):
        return Decimal(raw), False
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise _Bad(_expected(col), _show(raw) + " — not a finite number")
        return Decimal(repr(raw)), False
    if isinstance(raw, str):
        return _decimal(raw, col)
    raise _Bad(_expected(col), _show(raw))


# Cells typed as plain digits (with a decimal point for a float), short enough to be below
# MAX_NUMBER: read directly, to the value the Decimal path gives (Python rounds a decimal string to
# the nearest float, as float(Decimal) does).
_PLAIN_WHOLE = re.compile(r"[0-9]{1,16}")
_PLAIN_FLOAT = re.compile(r"[0-9]{1,16}(?:\.[0-9]{1,16})?")


def _whole(raw: Any, col: Column) -> int:
    if type(raw) is str and _PLAIN_WHOLE.fullmatch(raw):
        return int(raw)
    value, _ = _to_decimal(raw, col)
    if abs(value) > MAX_NUMBER:
        raise _Bad(_expected(col) + ", at most 10^16", _show(raw) + " — too large")
    if value != int(value):
        raise _Bad(_expected(col), _show(raw) + " — not a whole number")
    return int(value)


def _float(raw: Any, col: Column) -> float:
    if type(raw) is str and _PLAIN_FLOAT.fullmatch(raw):
        number = float(raw)
        if not (
            col.name == "mfu" and 1 < number <= 100
        ):  # that one is refused below, with its hint
            return number
    value, pct = _to_decimal(raw, col)
    number = float(value)
    if not math.isfinite(number):
        raise _Bad(_expected(col), _show(raw) + " — not a finite number")
    if col.name == "mfu" and not pct and 1 < number <= 100:
        shown = _num(number)
        raise _Bad(_expected(col), f"{_show(raw)} — did you mean {shown}%?")
    return number


def _bool(raw: Any, col: Column) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, (int, float)) and raw in (0, 1):
        return bool(raw)
    if isinstance(raw, str):
        key = _norm(raw).lower()
        if key in _TRUE:
            return True
        if key in _FALSE:
            return False
    raise _Bad(_expected(col), _show(raw))


def _enum(raw: Any, col: Column) -> str:
    if not isinstance(raw, str):
        raise _Bad(_expected(col), _show(raw))
    key = _norm(raw).lower()
    if col.name == "gpu":
        return _gpu(raw, key, col)
    key = ALIASES.get(key, key)
    if key in col.choices:
        return key
    near = difflib.get_close_matches(key, col.choices, n=1, cutoff=0.6)
    hint = f" — did you mean {near[0]}?" if near else ""
    raise _Bad(_expected(col), _show(raw) + hint)


def _gpu(raw: str, key: str, col: Column) -> str:
    try:
        from . import catalogue
    except ImportError:  # pragma: no cover - the catalogue ships with the package
        return _norm(raw)
    gpu = catalogue.find_gpu(_norm(raw))
    if gpu is not None:
        return gpu.name
    if catalogue.normalise_gpu_name(_norm(raw)) == catalogue.normalise_gpu_name(
        catalogue.USER_DESCRIBED.name
    ):
        raise _Bad(
            "a GPU's name", _show(raw) + " (the name of the profile for GPUs outside the catalogue)"
        )
    return _norm(
        raw
    )  # outside the catalogue: the model's gpu_described rule asks for hbm_gb and peak_tflops


def gpu_hint(name: str) -> str:
    """ " — did you mean H100-SXM?" for a name close to a catalogue entry, else empty."""
    from . import catalogue

    key = catalogue.normalise_gpu_name(name)
    near = [
        g for g in catalogue.GPU_NAMES if key and catalogue.normalise_gpu_name(g).startswith(key)
    ]
    near = near or difflib.get_close_matches(name, list(catalogue.GPU_NAMES), n=1, cutoff=0.5)
    return f" — did you mean {' or '.join(near[:2])}?" if near else ""


def _text(raw: Any, col: Column) -> str:
    if isinstance(raw, str):
        text = raw
    elif isinstance(raw, bool):
        text = "TRUE" if raw else "FALSE"
    elif isinstance(raw, (int, float)):
        text = (
            str(int(raw))
            if isinstance(raw, int) or (math.isfinite(raw) and raw == int(raw))
            else repr(raw)
        )
    elif isinstance(raw, dt.datetime):
        text = raw.date().isoformat() if raw.time() == dt.time(0) else raw.isoformat(sep=" ")
    elif isinstance(raw, (dt.date, dt.time)):
        text = raw.isoformat()
    else:
        text = str(raw)
    bad = _CONTROL_CHARS.search(text)
    if bad:
        raise _Bad(
            "text without control characters",
            f"{_show(text)} with the control character U+{ord(bad.group()):04X} at position {bad.start() + 1}",
        )
    if len(text) > MAX_TEXT_CHARS:
        raise _Bad(_expected(col), f"{len(text):,} characters ({_show(text)})")
    return text


def _check_range(value: float | int, raw: Any, col: Column) -> None:
    lo, hi = col.minimum, col.maximum
    too_low = lo is not None and (value <= lo if col.min_exclusive else value < lo)
    too_high = hi is not None and value > hi
    if too_low or too_high:
        hint = ""
        if col.name == "mfu" and 1 < value <= 100:
            hint = f" — did you mean {_num(value)}%?"
        raise _Bad(_expected(col), _show(raw) + hint)


_CELLS: dict[
    tuple[str, str], Any
] = {}  # (column, cell text) -> its value, for cells read without a problem
_MAX_CELLS = 100_000


def _cell(col: Column, raw: Any) -> Any:
    """``_convert``, each distinct text of a column converted once (the conversion depends on
    nothing else; a cell with a problem is converted again, to report it)."""
    if type(raw) is not str or col.kind == TEXT:
        return _convert(col, raw)
    key = (col.name, raw)
    hit = _CELLS.get(key, _CELLS)
    if hit is _CELLS:
        hit = _convert(col, raw)
        if len(_CELLS) >= _MAX_CELLS:
            _CELLS.clear()
        _CELLS[key] = hit
    return hit


def _convert(col: Column, raw: Any) -> Any:
    """The typed value of one non-empty cell, or ``_Bad``."""
    if isinstance(raw, _ExcelError):
        raise _Bad(_expected(col), f"cell {raw.coordinate} holds the Excel error {raw.code}")
    if isinstance(raw, _NoCache):
        raise _Bad(
            "a value (open and save the file in Excel or LibreOffice so formulas get saved results, or type the value)",
            f"cell {raw.coordinate} holds a formula with no saved value ({raw.formula[:60]})",
        )
    if col.kind == TEXT:
        return _text(raw, col)
    if col.kind in (COUNT, INT):
        value = _whole(raw, col)
    elif col.kind == FLOAT:
        value = _float(raw, col)
    elif col.kind == BOOL:
        return _bool(raw, col)
    elif col.kind == ENUM:
        return _enum(raw, col)
    else:  # pragma: no cover - config.COLUMNS uses only the kinds above
        raise _Bad(col.kind, _show(raw))
    _check_range(value, raw, col)
    return value


# ---------------------------------------------------------------------------------------------
# Cross-column checks (after every cell of the row parsed)


def _model_checks(
    lines: Sequence[int],
    rows: Sequence[Mapping[str, Any]],
    bad: Sequence[Iterable[str]] = (),
    columns: Mapping[str, Sequence[Any]] | None = None,
) -> list[tuple[int, str, str, str]]:
    """Contradictions between columns, from the model's constraints (the same rules the workbook's
    check cells and the planner apply): (row, column, expected, found) for each broken rule, the
    rows numbered by ``lines`` (``bad[i]``: row i's cells that could not be read; ``columns``:
    the rows' values a column at a time, where the reader has them)."""
    from .model.checks import failures
    from .model.definitions import REGISTRY
    from .model.tables import tables

    found = failures(REGISTRY, tables(), rows, bad, columns=columns)
    return [(lines[f.index], f.constraint.column, f.expected, f.found) for f in found]


class _Models:
    """The architecture columns a ``model`` cell names: a catalogue entry, or a Hugging Face
    config.json (a path relative to the input file's folder), read once per file."""

    def __init__(self, folder: Path | None):
        self.folder = folder
        self.seen: dict[str, tuple[dict[str, Any], str]] = {}

    def columns(self, spec: str) -> tuple[dict[str, Any], str]:
        hit = self.seen.get(spec)
        if hit is None:
            hit = self.seen[spec] = self._resolve(spec)
        return dict(hit[0]), hit[1]

    def _resolve(self, spec: str) -> tuple[dict[str, Any], str]:
        from . import catalogue, hf_config

        text = _norm(spec)
        if text.lower().endswith(".json") or "/" in text or "\\" in text:
            path = Path(text.replace("\\", "/"))
            if not path.is_absolute():
                path = (self.folder or Path.cwd()) / path
            try:
                return hf_config.read_config_json(path), f"config.json {text}"
            except hf_config.UnsupportedConfig as exc:
                raise _Bad(exc.expected, f"{exc.found} (in {text})") from None
        entry = catalogue.find_model(text)
        if entry is None:
            near = difflib.get_close_matches(text, catalogue.MODEL_NAMES, n=1, cutoff=0.5)
            hint = f" — did you mean {near[0]}?" if near else ""
            raise _Bad(
                "a model of the catalogue (ledger-report models) or a path to a config.json",
                _show(spec) + hint,
            )
        return dict(entry.columns), f"model {entry.name}"


# ---------------------------------------------------------------------------------------------
# The table: header, rows, problems.  Shared by the CSV and XLSX readers.


class _Table:
    """``sheet`` None: a CSV file (rows are lines); ``keyed``: mappings, whose keys are read as a
    header and whose values as the cells of the row below it (rows are the mappings' numbers)."""

    def __init__(
        self,
        label: str,
        sheet: str | None,
        sink: Callable[[Config], None] | None = None,
        keyed: bool = False,
        folder: Path | None = None,
        sink_columns: Callable[..., None] | None = None,
    ):
        self.label = label
        self.folder = folder  # a config.json named in a model cell is relative to it (None: the working directory)
        self.models = _Models(folder)
        self.sheet = sheet
        self.keyed = keyed
        self.row_word = "line" if sheet is None and not keyed else "row"
        self.problems: list[Problem] = []
        self.columns: dict[int, str] = {}  # 1-based position -> canonical column name
        self.blank: set[int] = set()  # header positions that are blank
        self.width = 0  # last non-blank header position
        self.header_row = 1
        self.orphans: dict[int, int] = {}  # position with data but no header -> first row
        self.names: dict[str, int] = {}  # normalised name -> first row
        self.configs: list[Config] = []
        self.sink = sink  # given: each good row goes to it instead of the list (streaming)
        self.sink_columns = sink_columns  # given with sink: good rows read a column at a time go to it a block at a time
        self.count = 0
        self.rows_seen = 0
        self.pending: list[
            tuple[int, dict[str, Any], set[str], bool, dict[str, str]]
        ] = []  # rows read, not yet checked against the model
        self.buffered: list[tuple[int, list[str]]] = []  # CSV rows not yet read (``buffer_row``)
        self.pending_block: _Block | None = (
            None  # rows read a column at a time, not yet checked (pending then empty)
        )

    # -- problems
    def add(
        self,
        row: int | None,
        column: str | None,
        expected: str,
        found: str,
        cell: str | None = None,
    ) -> None:
        self.read_buffered()  # the rows before a problem are read before it is recorded
        self.problems.append(
            Problem(self.label, row, column, expected, found, cell, row_label=self.row_word)
        )

    def cell_ref(self, col: int, row: int) -> str | None:
        if self.sheet is None:
            return None
        return f"{_sheet_ref(self.sheet)}!{_letter(col)}{row}"

    def position(self, col: int) -> str:
        if self.sheet is None:
            return f"field {col} ({_letter(col)})"
        return f"column {_letter(col)}"

    def over_row_bound(self, row: int, container: str) -> bool:
        """Count one data row; past ``MAX_ROWS`` record the problem and say stop (no whole-sheet scan)."""
        self.rows_seen += 1
        if self.rows_seen > MAX_ROWS:
            self.add(
                row,
                None,
                f"at most {MAX_ROWS:,} configuration rows",
                f"more rows; split the {container}",
            )
            return True
        return False

    def raise_if_problems(self) -> None:
        if self.problems:
            raise InputError(self.problems)

    # -- header
    def read_header(self, cells: dict[int, Any], row: int) -> None:
        self.header_row = row
        unknown: list[tuple[int, str]] = []
        seen: dict[str, int] = {}
        shown: dict[int, str] = {}
        for col in sorted(cells):
            raw = cells[col]
            text = raw if isinstance(raw, str) else ("" if raw is None else _show(raw))
            key = _norm(text.replace("\ufeff", "")).casefold()
            if not key:
                if (
                    self.keyed
                ):  # a mapping has no blank header cells: a blank key is an unknown column
                    unknown.append((col, text))
                else:
                    self.blank.add(col)
                continue
            self.width = max(self.width, col)
            shown[col] = text
            if key in seen:
                first = seen[key]
                both = (
                    f"the keys {_show(shown[first])} and {_show(text)}"
                    if self.keyed
                    else f"{self.position(first)} {_show(shown[first])} and {self.position(col)} {_show(text)}"
                )
                self.add(
                    row,
                    key if key in COLUMN_BY_NAME else None,
                    "each column once",
                    f"{both} both read as {_show(key)}",
                    self.cell_ref(col, row),
                )
                continue
            seen[key] = col
            if key in COLUMN_BY_NAME:
                self.columns[col] = key
            else:
                unknown.append((col, text))
        for col in range(1, self.width + 1):
            if col not in cells:
                self.blank.add(col)
        if unknown:
            parts = []
            for col, text in unknown:
                near = difflib.get_close_matches(
                    _norm(text).casefold(), COLUMN_NAMES, n=1, cutoff=0.6
                )
                hint = f" (did you mean {_show(near[0])}?)" if near else ""
                where = "" if self.keyed else f" in {self.position(col)}"
                parts.append(f"{_show(text)}{where}{hint}")
            self.add(
                row,
                None,
                "only the column names of the input schema (see `ledger-report template`)",
                "unknown column" + ("s " if len(parts) > 1 else " ") + ", ".join(parts),
            )
        if (
            "name" not in self.columns.values() and not self.keyed
        ):  # a mapping without one: an empty name
            header = ", ".join(_show(shown[c]) for c in sorted(shown)) or "nothing"
            self.add(
                row,
                "name",
                'a column "name" (the label of each configuration)',
                f"the header holds {header}",
            )

    # -- rows
    def read_row(self, row: int, cells: dict[int, Any]) -> None:
        """One non-blank data row: ``cells`` maps 1-based positions to raw values."""
        values: dict[str, Any] = {}
        bad: set[str] = set()
        before = len(self.problems)
        for col in sorted(cells):
            raw = cells[col]
            if _is_blank(raw):
                continue
            name = self.columns.get(col)
            if name is None:
                if col in self.blank or col > self.width:
                    self.orphans.setdefault(col, row)
                continue  # unknown or duplicate columns are reported once, on the header
            try:
                values[name] = _cell(COLUMN_BY_NAME[name], raw)
            except _Bad as exc:
                self.add(row, name, exc.expected, exc.found, self.cell_ref(col, row))
                bad.add(name)
        name_value = values.get("name")
        if name_value is None or not name_value.strip():
            if "name" not in bad:
                self.add(
                    row,
                    "name",
                    "a name (required, unique in the file)",
                    "an empty cell",
                    self._ref_of("name", row),
                )
            values.pop("name", None)
            bad.add("name")
        else:
            key = name_key(name_value)
            if key in self.names:
                self.add(
                    row,
                    "name",
                    "a name unique in the file",
                    f"{_show(name_value)} again (first at {self.row_word} {self.names[key]})",
                    self._ref_of("name", row),
                )
            else:
                self.names[key] = row
        origins: dict[str, str] = {}
        if values.get("model") is not None:
            try:
                filled, origin = self.models.columns(values["model"])
            except _Bad as exc:
                self.add(row, "model", exc.expected, exc.found, self._ref_of("model", row))
                bad.add("model")
            else:
                _fill_from_model(values, filled, origin, origins, bad)
        self._unblock()
        self.pending.append((row, values, bad, len(self.problems) == before, origins))
        if len(self.pending) >= CHECK_BATCH_ROWS:
            self._flush()

    def buffer_row(self, row: int, fields: list[str]) -> None:
        """A CSV data row with as many fields as the header, read later with its neighbours
        (``read_buffered``), before anything else happens to the table."""
        self.buffered.append((row, fields))
        if len(self.buffered) >= CHECK_BATCH_ROWS:
            self.read_buffered()

    def read_buffered(self) -> None:
        """The buffered rows read: a column at a time where no row has a problem there, else each
        by ``read_row``; the same values, problems and pending rows either way, in the same order."""
        rows, self.buffered = self.buffered, []
        block = _Columns(self, rows).block() if rows else None
        if block is None:
            for row, fields in rows:
                self.read_row(row, {i + 1: f for i, f in enumerate(fields) if f.strip()})
            return
        self.names.update(zip(block.keys, block.lines))
        if not self.pending and self.pending_block is None and len(block) <= CHECK_BATCH_ROWS:
            self.pending_block = (
                block  # checked a column at a time, kept as columns where it is clean
            )
            if len(block) >= CHECK_BATCH_ROWS:
                self._flush()
            return
        self._unblock()
        for entry in block.entries():
            self.pending.append(entry)
            if len(self.pending) >= CHECK_BATCH_ROWS:
                self._flush()

    def _unblock(self) -> None:
        """The pending block's rows made pending rows (other rows are to join them)."""
        if self.pending_block is not None:
            self.pending.extend(self.pending_block.entries())
            self.pending_block = None

    def _flush(self) -> None:
        """Check the pending rows against the model's constraints, then keep the good ones."""
        block, self.pending_block = self.pending_block, None
        if block is not None:
            found = _model_checks(block.lines, block, columns=block.columns)
            if not found:
                self._keep_block(block)
                return
            pending = block.entries()
        else:
            pending, self.pending = self.pending, []
            if not pending:
                return
            found = _model_checks(
                [r for r, *_rest in pending],
                [v for _r, v, *_rest in pending],
                [b for _r, _v, b, *_rest in pending],
            )
        broken: set[int] = set()
        values_of = {r: v for r, v, *_rest in pending}
        for row, column, expected, found_text in found:
            if column == "gpu":
                found_text += gpu_hint(str(values_of[row].get("gpu", "")))
            self.add(row, column, expected, found_text, self._ref_of(column, row))
            broken.add(row)
        for row, values, _bad, clean, origins in pending:
            if clean and row not in broken:
                self._keep(Config(values, self._source(row), origins))

    def _keep_block(self, block: _Block) -> None:
        """A block of good rows kept: handed to ``sink_columns`` as columns where it is given, else
        each row as a ``Config``, as ``_flush`` keeps them."""
        if self.sink is None or self.sink_columns is None:
            for row, values, _bad, _clean, origins in block.entries():
                self._keep(Config(values, self._source(row), origins))
            return
        self.count += len(block)
        if not self.problems:
            self.sink_columns(
                block.columns, [self._source(row) for row in block.lines], block.origins
            )

    def _keep(self, config: Config) -> None:
        """One good row kept: in the list, or handed to the sink while the file has no problem."""
        self.count += 1
        if self.sink is None:
            self.configs.append(config)
        elif not self.problems:
            self.sink(config)

    def _source(self, row: int) -> str:
        """A row's place, as a ``Config`` names it."""
        if self.sheet is not None:
            return f"{self.label} {self.sheet} row {row}"
        return f"{self.label} {self.row_word} {row}"

    def read_record(self, row: int, record: Any) -> None:
        """One mapping: its keys read as a header (the same names and messages as a file's
        column names), then its values as the cells of that row."""
        if not isinstance(record, Mapping):
            self.add(
                row,
                None,
                "a mapping of column names to values",
                f"{type(record).__name__} {_show(record)}",
            )
            return
        keys = list(record)
        self.columns, self.blank, self.width = {}, set(), 0
        before = len(self.problems)
        self.read_header(dict(enumerate(keys, 1)), row)
        if len(self.problems) == before:
            self.read_row(
                row, {col: _python_number(record[key]) for col, key in enumerate(keys, 1)}
            )

    def _ref_of(self, column: str, row: int) -> str | None:
        for col, name in self.columns.items():
            if name == column:
                return self.cell_ref(col, row)
        return None

    def finish(self) -> list[Config]:
        self.read_buffered()
        self._flush()
        for col, row in sorted(self.orphans.items()):
            self.add(
                self.header_row,
                None,
                f"a column name for {self.position(col)}, which has data below it",
                f"a blank header cell (data from {self.row_word} {row})",
                self.cell_ref(col, self.header_row),
            )
        if (
            not self.problems and not self.count and not self.rows_seen
        ):  # rows_seen: rows ``keep`` skipped count too
            self.add(None, None, "at least one configuration row below the header", "no rows")
        self.raise_if_problems()
        return self.configs


def _fill_from_model(
    values: dict[str, Any],
    filled: Mapping[str, Any],
    origin: str,
    origins: dict[str, str],
    bad: Iterable[str] = (),
) -> None:
    """The columns a row's model fills: those the row leaves empty (any column the row gives, even
    one it gives badly, wins), each with where it came from."""
    for column, value in filled.items():
        if column not in values and column not in bad:
            values[column] = value
            origins[column] = origin


class _Columns:
    """Buffered CSV rows read a column at a time (each distinct cell text of a column converted
    once), as ``_Table.read_row`` would read each: ``block`` gives the rows so read, or ``None``
    where some row would meet a problem (a cell, its name, its model) or leave data under a
    blank header, so that the rows are read row by row instead and report it."""

    def __init__(self, table: _Table, rows: list[tuple[int, list[str]]]) -> None:
        self.table, self.rows = table, rows
        self.keys: list[str] = []  # each row's name as names are compared

    def block(self) -> "_Block | None":
        """The rows' values a column at a time, the columns their models fill included."""
        cols: dict[str, list[Any]] = {}
        fields = list(zip(*[f for _r, f in self.rows]))  # each field's texts down the rows
        for pos in range(self.table.width):
            name = self.table.columns.get(pos + 1)
            values = self._converted(name, pos, fields[pos])
            if values is None:
                return None
            if name is not None:
                cols[name] = values
        names = cols.get("name")
        if names is None or not self._new_names(names):
            return None
        origins = self._filled(cols)
        if origins is None:
            return None
        return _Block([row for row, _f in self.rows], cols, origins, self.keys)

    def _filled(self, cols: dict[str, list[Any]]) -> list[dict[str, str] | None] | None:
        """Each row's origins (``None``: its model filled nothing), the columns its model fills
        put in ``cols`` where the row leaves them empty, as read_row fills them; ``None`` where a
        row's model cannot be read."""
        n = len(self.rows)
        origins: list[dict[str, str] | None] = [None] * n
        for i, spec in enumerate(cols.get("model") or ()):
            if spec is None:
                continue
            try:
                filled, origin = self.table.models.columns(spec)
            except _Bad:
                return None
            own: dict[str, str] = {}
            for column, value in filled.items():
                held = cols.get(column)
                if held is None:
                    held = cols[column] = [None] * n
                if held[i] is None:
                    held[i] = value
                    if value is not None:  # a Config names only the non-empty columns' origins
                        own[column] = origin
            origins[i] = own or None
        return origins

    def _converted(self, name: str | None, pos: int, raws: Sequence[str]) -> list[Any] | None:
        seen: dict[str, Any] = {}
        for raw in dict.fromkeys(raws):
            if not raw.strip():
                seen[raw] = None
            elif name is None:
                if pos + 1 in self.table.blank:
                    return None  # data under a blank header: reported row by row
                seen[raw] = (
                    None  # under a column the header reports: ignored, as read_row ignores it
                )
            else:
                try:
                    seen[raw] = _cell(COLUMN_BY_NAME[name], raw)
                except _Bad:
                    return None
        return list(map(seen.__getitem__, raws))

    def _new_names(self, names: list[Any]) -> bool:
        """Every row named, no name twice nor already in the file."""
        if any(v is None or not v.strip() for v in names):
            return False
        self.keys = keys = [name_key(v) for v in names]
        return len(set(keys)) == len(keys) and not any(k in self.table.names for k in keys)


class _Block(Sequence):
    """Rows read a column at a time without a problem in their cells: their lines, each column's
    value on every row (``None`` where empty; the columns the rows' models fill included), each
    row's origins (``None``: none) and name as names are compared.  As a sequence: each row's
    non-empty values, in column order, as ``_Table.read_row`` gives them."""

    def __init__(
        self,
        lines: list[int],
        columns: dict[str, list[Any]],
        origins: list[dict[str, str] | None],
        keys: list[str],
    ) -> None:
        self.lines, self.columns, self.origins, self.keys = lines, columns, origins, keys

    def __len__(self) -> int:
        return len(self.lines)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(len(self))[i]]
        return {name: held[i] for name, held in self.columns.items() if held[i] is not None}

    def entries(self) -> list[tuple[int, dict[str, Any], set[str], bool, dict[str, str]]]:
        """The rows as ``_Table.read_row`` makes them pending."""
        return [
            (row, self[i], set(), True, dict(origins or {}))
            for i, (row, origins) in enumerate(zip(self.lines, self.origins))
        ]


# ---------------------------------------------------------------------------------------------
# CSV


def _decode(data: bytes, label: str) -> str:
    """Strict UTF-8 (BOM optional), else GB18030 (a superset of GBK); UTF-16 by its BOM."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            _fail(
                label,
                "valid UTF-16 text (the file starts with a UTF-16 byte-order mark)",
                f"bytes that are not UTF-16 at byte offset {exc.start:,}",
                line,
                "line",
            )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as utf8_error:
        try:
            text = data.decode("gb18030")
        except UnicodeDecodeError as gb_error:
            where = max(utf8_error.start, gb_error.start)
            line = data.count(b"\n", 0, where) + 1
            _fail(
                label,
                "text in UTF-8 (or GBK/GB18030, or UTF-16 with a byte-order mark); save the file as 'CSV UTF-8'",
                f"bytes {data[where : where + 4]!r} that are not text in any of these at byte offset {where:,}",
                line,
                "line",
            )
    head = text[:4096]
    if head.count("\x00") > len(head) // 4:
        _fail(
            label,
            "text in UTF-8 (or GBK/GB18030, or UTF-16 with a byte-order mark); save the file as 'CSV UTF-8'",
            "NUL bytes between the characters: UTF-16 without a byte-order mark",
            1,
            "line",
        )
    return text


def _sniff(text: str) -> str:
    """Comma, semicolon or tab: the one that splits the first non-blank record into the most fields."""
    sample = text[: 64 * 1024]
    best, best_count = ",", 0
    for delim in _DELIMITERS:
        try:
            for fields in csv.reader(io.StringIO(sample, newline=""), delimiter=delim):
                if any(f.strip() for f in fields):
                    count = sum(1 for f in fields if f.strip())
                    if count > best_count:
                        best, best_count = delim, count
                    break
        except csv.Error:
            continue
    return best


def _read_odd_row(table: _Table, start: int, fields: list[str], delimiter: str) -> None:
    """A record with other fields than the header's: too many (a problem), too few (a problem: a
    short row is how an unquoted "1,024" hides when the row has spare columns, the fields
    silently shifted left; every row spells out each column), or blank ones after the header's
    (read as the row)."""
    table.read_buffered()
    nonblank = [i for i, f in enumerate(fields) if f.strip()]
    last = nonblank[-1] + 1
    if last > table.width:
        table.add(
            start,
            None,
            f'at most {table.width} fields, like the header — a number with a comma must be quoted ("1,024") or written 1024',
            f"{last} fields: " + _show(delimiter.join(fields)),
        )
    elif len(fields) < table.width:
        table.add(
            start,
            None,
            f"{table.width} fields, like the header (an empty cell is an empty field: a,,b)",
            f"{len(fields)} fields: " + _show(delimiter.join(fields)),
        )
    else:
        table.read_row(start, {i + 1: fields[i] for i in nonblank})


def _read_csv(
    path: Path,
    label: str,
    sink: Callable[[Config], None] | None = None,
    keep: Callable[[int], bool] | None = None,
    sink_columns: Callable[..., None] | None = None,
) -> list[Config]:
    try:
        size = path.stat().st_size
        if size > MAX_CSV_BYTES:
            _fail(label, f"a CSV file of at most {MAX_CSV_BYTES // 2**20} MiB", f"{size:,} bytes")
        data = path.read_bytes()
    except OSError as exc:
        _fail(label, "a readable file", f"{type(exc).__name__}: {exc.strerror or exc}")
    if not data.strip():
        _fail(label, "a header row and configuration rows", "an empty file")
    if data.startswith(b"PK\x03\x04"):
        _fail(
            label,
            "CSV text",
            "a zip archive (an .xlsx workbook renamed .csv?); give it the .xlsx extension",
        )
    if data.startswith(_OLE_MAGIC):
        _fail(
            label,
            "CSV text",
            "an OLE compound file (an Excel .xls or password-protected workbook); save it as CSV UTF-8",
        )
    text = _decode(data, label)
    del data  # the decoded text is all that is needed from here on
    delimiter = _sniff(text)
    table = _Table(label, None, sink, folder=path.parent, sink_columns=sink_columns)
    # strict: a quote left open to the end of the file is an error, not one giant last field
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    previous_line = 0
    header_done = False
    try:
        for fields in reader:
            start = previous_line + 1  # the physical line where this record begins
            previous_line = reader.line_num
            if (
                not (fields and fields[0].strip()) and not "".join(fields).strip()
            ):  # no field but blanks
                continue
            if not header_done:
                table.read_header({i + 1: f for i, f in enumerate(fields)}, start)
                header_done = True
                if table.problems:
                    break
                continue
            if table.over_row_bound(start, "file"):
                break
            if keep is not None and not keep(table.rows_seen - 1):
                continue
            if len(fields) == table.width:
                table.buffer_row(start, fields)
                continue
            if len(fields) > table.width and not any(f.strip() for f in fields[table.width :]):
                table.buffer_row(
                    start, fields[: table.width]
                )  # as the header's fields, blank ones after them dropped
                continue
            _read_odd_row(table, start, fields, delimiter)
    except csv.Error as exc:
        table.add(
            previous_line + 1,
            None,
            f"well-formed CSV (quotes closed, fields separated by {_DELIMITER_NAMES[delimiter]}s)",
            f"{exc}",
        )
    return table.finish()


# ---------------------------------------------------------------------------------------------
# XLSX: the zip container


def _check_zip(fh: Any, label: str) -> None:
    """Check the container before any XML is parsed (``zipfile``'s own directory listing)."""
    head = fh.read(8)
    fh.seek(0)
    expected = "an .xlsx workbook saved by Excel or LibreOffice"
    if not head:
        _fail(label, expected, "an empty file")
    if head.startswith(_OLE_MAGIC):
        _fail(
            label,
            expected,
            "an OLE compound file, i.e. a password-protected workbook or a legacy .xls; remove the password or save it as .xlsx",
        )
    if not head.startswith(b"PK"):
        sample = fh.read(4096)
        fh.seek(0)
        try:
            sample.decode("utf-8")
            looks_text = b"\x00" not in sample
        except UnicodeDecodeError:
            looks_text = False
        if looks_text:
            _fail(label, expected, "plain text (a CSV renamed .xlsx?); give it the .csv extension")
        _fail(label, expected, "a file that is not a zip archive, so not an .xlsx")
    # zipfile reads the central directory by its recorded size, not by the entry count the end
    # record claims, so a lying count costs nothing; the real directory is bounded by the file.
    try:
        with zipfile.ZipFile(fh) as zf:
            infos = zf.infolist()
    except Exception as exc:  # noqa: BLE001 - BadZipFile, struct/Unicode errors: all a broken zip
        _fail(
            label, expected, f"a corrupt or truncated zip archive ({exc}); save the workbook again"
        )
    finally:
        fh.seek(0)
    _check_entries(infos, label)


def _check_entries(infos: list[zipfile.ZipInfo], label: str) -> None:
    if len(infos) > MAX_ZIP_ENTRIES:
        _fail(
            label,
            f"a workbook of at most {MAX_ZIP_ENTRIES:,} zip entries",
            f"{len(infos):,} entries",
        )
    total = 0
    for info in infos:
        size, packed = info.file_size, info.compress_size
        if info.flag_bits & 0x1:
            _fail(
                label,
                "an unencrypted workbook",
                f"the encrypted zip entry {info.filename!r}; remove the password",
            )
        if size > MAX_ENTRY_BYTES:
            _fail(
                label,
                f"each part of the workbook at most {MAX_ENTRY_BYTES:,} bytes uncompressed",
                f"entry {info.filename!r} declaring {size:,} bytes ({packed:,} compressed); refusing to read",
            )
        if size > RATIO_GRACE_BYTES and size > MAX_RATIO * packed:
            ratio = f"{size / packed:,.0f}:1" if packed else "unbounded"
            _fail(
                label,
                f"a compression ratio of at most {MAX_RATIO}:1 for parts over {RATIO_GRACE_BYTES // 1024} KiB",
                f"entry {info.filename!r}: {size:,} bytes from {packed:,} compressed (ratio {ratio}, a zip bomb?); refusing to read",
            )
        total += size
    if total > MAX_TOTAL_BYTES:
        _fail(
            label,
            f"a workbook of at most {MAX_TOTAL_BYTES:,} bytes uncompressed",
            f"{total:,} bytes declared",
        )
    if "[Content_Types].xml" not in {info.filename for info in infos}:
        _fail(
            label,
            "an .xlsx workbook saved by Excel or LibreOffice",
            "a zip archive without [Content_Types].xml (not an Office Open XML file)",
        )


def _exception_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _workbook_failure(label: str, exc: BaseException) -> InputError:
    """Turn anything openpyxl / zipfile / the XML parser raised into one sentence.

    openpyxl parses every part with defusedxml, which refuses any entity declaration
    (``EntitiesForbidden``, a ``DefusedXmlException``) before anything is expanded or fetched."""
    try:
        from defusedxml import DefusedXmlException
    except ImportError:  # pragma: no cover - defusedxml is a hard dependency
        DefusedXmlException = ()  # type: ignore[assignment,misc]
    expected = "an .xlsx workbook saved by Excel or LibreOffice"
    for err in _exception_chain(exc):
        text = str(err).lower()
        if isinstance(err, DefusedXmlException) or (
            isinstance(err, SyntaxError) and ("entit" in text or "amplification" in text)
        ):
            return InputError(
                Problem(
                    label,
                    None,
                    None,
                    "a workbook without XML entity declarations",
                    "workbook contains XML entity declarations; refusing to read",
                )
            )
        if isinstance(err, (zipfile.BadZipFile, zlib.error)):
            what = "CRC mismatch" if "crc" in text else str(err)
            return InputError(
                Problem(
                    label,
                    None,
                    None,
                    expected,
                    f"a corrupt workbook ({what}); save it again from Excel",
                )
            )
        if isinstance(err, MemoryError):
            return InputError(Problem(label, None, None, expected, "a workbook too large to read"))
    first = str(exc).splitlines()[0][:200] if str(exc) else ""
    return InputError(
        Problem(
            label,
            None,
            None,
            expected,
            f"a workbook that could not be read ({type(exc).__name__}: {first}); open it in Excel and save it again",
        )
    )


# ---------------------------------------------------------------------------------------------
# XLSX: the sheet


def _load(fh: Any, data_only: bool) -> Any:
    import openpyxl

    fh.seek(0)
    return openpyxl.load_workbook(fh, read_only=True, data_only=data_only, keep_links=False)


def _pick_sheet(wb: Any, label: str) -> Any:
    """The visible sheet named Inputs (any case), else the first visible sheet."""
    sheets = wb.worksheets  # chartsheets are not listed
    visible = [ws for ws in sheets if ws.sheet_state in (None, "visible")]
    if not visible:
        _fail(label, "a visible worksheet", "only hidden sheets" if sheets else "no worksheets")
    for ws in visible:
        if ws.title.strip().casefold() == "inputs":
            return ws
    return visible[0]


def _read_xlsx(
    path: Path, label: str, sink: Callable[[Config], None] | None = None
) -> list[Config]:
    try:
        fh = open(path, "rb")
    except OSError as exc:
        _fail(label, "a readable file", f"{type(exc).__name__}: {exc.strerror or exc}")
    with fh:
        _check_zip(fh, label)
        import openpyxl

        if not openpyxl.DEFUSEDXML:
            _fail(
                label,
                "openpyxl running on defusedxml (is OPENPYXL_DEFUSEDXML set to False?)",
                "defusedxml inactive; refusing to read workbooks",
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # openpyxl warns about extensions it drops
            try:
                wb = _load(fh, data_only=True)
            except Exception as exc:  # noqa: BLE001 - any failure inside openpyxl is a bad file
                raise _workbook_failure(label, exc) from None
            formulas = ws = None
            try:
                ws = _pick_sheet(wb, label)
                part = _Part(fh, ws.title)
                formulas = _Formulas(fh, ws.title, part.may_hold_formulas())
                return _read_sheet(ws, label, formulas, part, sink, folder=path.parent)
            except InputError as err:
                if ws is None or ws.title.strip().casefold() == "inputs":
                    raise
                # rows read from the first sheet: every message says which sheet it was
                where = f"{label} (sheet {ws.title!r}: no sheet is named Inputs)"
                raise InputError(
                    [
                        dataclasses.replace(p, file=where) if p.file == label else p
                        for p in err.problems
                    ]
                ) from None
            except Exception as exc:  # noqa: BLE001 - a failure while streaming the sheet XML
                raise _workbook_failure(label, exc) from None
            finally:
                if formulas is not None:
                    formulas.close()
                wb.close()


class _Formulas:
    """Which empty-reading cells are formulas with no saved result.

    The sheet is read with ``data_only=True``: a formula cell gives its saved result, as Excel
    shows it.  A formula with no saved result reads as an empty cell there, so for a cell that
    reads empty this looks it up in the same sheet read with ``data_only=False`` (the formula
    text).  That reader is opened at the first such cell only, and only when the sheet's XML
    holds a formula element at all (``possible``); it then walks behind the main read.  Both
    readers walk the same XML and yield the same sequence of rows, so the n-th row of one is the
    n-th row of the other."""

    def __init__(self, fh: Any, title: str, possible: bool):
        self.fh = fh
        self.title = title
        self.possible = possible
        self.wb: Any = None
        self.rows: Iterator[tuple[Any, ...]] = iter(())
        self.index = 0
        self.row: tuple[Any, ...] = ()

    def text(self, row: int, col: int) -> str | None:
        """The formula in the cell, or None when it holds none."""
        if self.wb is None:
            self.wb = _load(self.fh, data_only=False)
            ws = self.wb[self.title]
            ws.reset_dimensions()
            self.rows = ws.iter_rows()
        while self.index < row:
            self.row = next(self.rows, ())
            self.index += 1
        cell = self.row[col - 1] if col <= len(self.row) else None
        if cell is None or cell.data_type != "f":
            return None
        formula = cell.value  # "=B2*2", or an ArrayFormula / DataTableFormula object
        return str(getattr(formula, "text", formula))

    def close(self) -> None:
        if self.wb is not None:
            self.wb.close()


def _read_sheet(
    ws: Any,
    label: str,
    formulas: _Formulas,
    part: "_Part",
    sink: Callable[[Config], None] | None = None,
    folder: Path | None = None,
) -> list[Config]:
    """Stream the sheet once: header in row 1, then rows, bounded by ``MAX_ROWS``.

    ``reset_dimensions`` makes ``iter_rows`` ignore the ``<dimension>`` tag: an understated one
    cannot hide rows and an overstated one cannot pad rows to 16,384 cells or add a million empty
    rows; each row then ends at its own last cell.  What is left to a hostile file, empty rows
    up to a huge row number and rows padded out to a far-right cell, is bounded by
    ``MAX_SHEET_ROWS`` and ``MAX_SHEET_CELLS``."""
    from openpyxl.cell.read_only import EMPTY_CELL  # the filler iter_rows pads a row with

    title = ws.title
    table = _Table(label, title, sink, folder=folder)
    last_row = max_col = 0
    header_done = False
    completed = False
    cells_seen = 0
    maybe_formula = formulas.possible
    ws.reset_dimensions()
    row = 0
    for cells in ws.iter_rows():
        row += 1
        if row > MAX_SHEET_ROWS:
            table.add(
                row,
                None,
                f"at most {MAX_SHEET_ROWS:,} rows (Excel's last row)",
                "a row numbered beyond it; save the workbook again from Excel",
            )
            break
        if not cells:
            continue
        cells_seen += len(cells)
        if cells_seen > MAX_SHEET_CELLS:
            table.add(
                row,
                None,
                f"rows spanning at most {MAX_SHEET_CELLS:,} cells in all (each row from column A to its last cell, "
                "an empty formatted one too)",
                f"more with this row, which ends at column {_letter(len(cells))}; delete the unused columns on the right",
            )
            break
        raw: dict[int, Any] = {}
        for col, cell in enumerate(cells, 1):
            value = cell.value
            if value is None:
                # t="str" with an empty <v> is a saved "" result: an empty cell
                if maybe_formula and cell is not EMPTY_CELL and cell.data_type != "str":
                    text = formulas.text(row, col)
                    if text is not None:
                        raw[col] = _NoCache(text, f"{_letter(col)}{row}")
            elif cell.data_type == "e":
                raw[col] = _ExcelError(str(value), f"{_letter(col)}{row}")
            else:
                raw[col] = value
        if all(_is_blank(v) for v in raw.values()):
            continue
        last_row, max_col = row, max(max_col, max(raw))
        if not header_done:
            header_done = True
            if row != 1:
                table.add(
                    1,
                    None,
                    f"column names in row 1 of the sheet {_show(title)}",
                    f"an empty row 1 (the first row with data is row {row})",
                )
                break
            table.read_header(raw, 1)
            if table.problems:
                break
            continue
        if table.over_row_bound(row, "workbook"):
            break
        table.read_row(row, raw)
    else:
        completed = True
    if not header_done:
        table.add(1, None, f"column names in row 1 of the sheet {_show(title)}", "an empty sheet")
    if completed:
        # <mergeCells> follows <sheetData>, so merges are looked for only now; they explain any
        # other problem in their rows (a merged name reads as empty), so they are reported alone.
        merged = _merged_problems(table, title, part.merged_refs(), last_row, max_col)
        if merged:
            raise InputError(merged)
    return table.finish()


# ---------------------------------------------------------------------------------------------
# XLSX: the sheet's own XML.  A read-only worksheet has no ``merged_cells`` and does not say
# which zip entry it is read from; so the entry is found through the package's relationships,
# its bytes scanned for formula and merge elements, and its <mergeCell> elements (when the scan
# finds some) read with defusedxml, all public APIs.  Loading the workbook in full instead, for
# ``merged_cells``, would hold every cell in memory.


def _marks(name: str) -> tuple[bytes, ...]:
    return tuple(name.encode(encoding) for encoding in ("utf-8", "utf-16-le", "utf-16-be"))


_MERGE_MARKS = _marks("mergeCell")
# A formula element, <f>, <f t="shared" .../>, <f/>, or with a namespace prefix (<x:f>).  Text
# cannot hide one (a "<" in text is escaped), so a part without these holds no formula.
_FORMULA_MARKS = (b"<f>", b"<f ", b"<f/", b":f>", b":f ", b":f/")
_SCAN_CHUNK = 1 << 20


def _local(tag: Any) -> str:
    return str(tag).rpartition("}")[2]


class _Part:
    """The zip entry holding one worksheet (``name`` None where the package's relationships do
    not lead to it: formulas are then assumed present and merges are not looked for)."""

    def __init__(self, fh: Any, title: str):
        self.fh = fh
        fh.seek(0)
        with zipfile.ZipFile(fh) as zf:
            try:
                part = _sheet_part(zf, title)
            except Exception:  # noqa: BLE001 - openpyxl found the sheet its own way; ours is a bonus
                part = None
            self.name = part if part in zf.namelist() else None

    def _chunks(self, zf: zipfile.ZipFile) -> Iterator[bytes]:
        """The entry's bytes in chunks, each starting with the last 31 bytes of the one before."""
        with zf.open(self.name) as source:  # type: ignore[arg-type]
            tail = b""
            while chunk := source.read(_SCAN_CHUNK):
                window = tail + chunk
                yield window
                tail = window[-31:]

    def _holds(self, marks: tuple[bytes, ...]) -> bool:
        if self.name is None:
            return True  # unknown: assume it does
        self.fh.seek(0)
        with zipfile.ZipFile(self.fh) as zf:
            first = True
            for window in self._chunks(zf):
                if first and (
                    window.startswith((b"\xff\xfe", b"\xfe\xff")) or window[1:2] == b"\x00"
                ):
                    return True  # UTF-16: the ASCII marks do not apply; assume it does
                first = False
                if any(mark in window for mark in marks):
                    return True
        return False

    def may_hold_formulas(self) -> bool:
        return self._holds(_FORMULA_MARKS)

    def merged_refs(self) -> list[str]:
        """The ref of every <mergeCell> (a byte scan first: most sheets have none)."""
        from defusedxml.ElementTree import iterparse

        if self.name is None or not self._holds(_MERGE_MARKS):
            return []
        refs = []
        self.fh.seek(0)
        with zipfile.ZipFile(self.fh) as zf, zf.open(self.name) as source:
            for _event, element in iterparse(source):
                local = _local(element.tag)
                if local == "mergeCell":
                    refs.append(str(element.get("ref") or ""))
                elif local == "row":
                    element.clear()
        return refs


def _relationships(zf: zipfile.ZipFile, part: str) -> dict[str, tuple[str, str]]:
    """Id -> (type, target entry) of one part's relationships ('' is the package itself)."""
    from defusedxml.ElementTree import fromstring

    folder, name = posixpath.split(part)
    try:
        root = fromstring(zf.read(posixpath.join(folder, "_rels", name + ".rels")))
    except KeyError:
        return {}
    out = {}
    for rel in root:
        target = rel.get("Target") or ""
        if rel.get("TargetMode") == "External":
            continue
        full = (
            target.lstrip("/")
            if target.startswith("/")
            else posixpath.normpath(posixpath.join(folder, target))
        )
        out[rel.get("Id") or ""] = (rel.get("Type") or "", full)
    return out


def _sheet_part(zf: zipfile.ZipFile, title: str) -> str | None:
    """The zip entry holding the worksheet ``title``, or None where the package does not say."""
    from defusedxml.ElementTree import fromstring

    book = next(
        (
            target
            for kind, target in _relationships(zf, "").values()
            if kind.endswith("/officeDocument")
        ),
        None,
    )
    if book is None:
        return None
    rels = _relationships(zf, book)
    for element in fromstring(zf.read(book)).iter():
        if _local(element.tag) == "sheet" and element.get("name") == title:
            rid = next(
                (v for k, v in element.attrib.items() if k.startswith("{") and _local(k) == "id"),
                "",
            )
            return rels.get(rid, ("", None))[1]
    return None


def _merged_problems(
    table: _Table, title: str, refs: list[str], last_row: int, max_col: int
) -> list[Problem]:
    from openpyxl.utils import range_boundaries

    problems = []
    for ref in refs:
        try:
            c1, r1, _c2, r2 = range_boundaries(ref)
        except (ValueError, TypeError):
            continue
        if r1 is None or r1 > max(last_row, 1) or (c1 or 1) > max(max_col, 1):
            continue  # outside the region holding data
        rows = f"{table.row_word}s {r1}–{r2}" if r2 != r1 else f"{table.row_word} {r1}"
        problems.append(
            Problem(
                table.label,
                r1,
                table.columns.get(c1 or 1),
                "one value per cell (unmerge the cells and fill each row)",
                f"merged cells {ref} ({rows})",
                f"{_sheet_ref(title)}!{ref}",
            )
        )
    return problems
