"""The cell grammar: one cell's raw value (a CSV field, a workbook cell, a mapping's value) into
the typed value its column holds, or ``Bad`` (what was expected, what was found).

Everything a rule needs to know about a column is a field of its ``config.Column`` (kind, unit,
range, choices, ``percent``, ``catalogue``): no column is named here.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import math
import numbers
import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..catalogue import GPU_NAMES, USER_DESCRIBED, find_gpu, normalise_gpu_name
from ..config import ALIASES, BOOL, COLUMNS, COUNT, ENUM, FLOAT, FLOAT_RANGE, INT, TEXT, Column
from ..model.units import GB, GIB, TB, TIB

MAX_NUMBER = 10**16  # largest count / integer accepted (5T parameters x 2000 is still far below)

CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_NOT_IN_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")  # two UTF-16 code units each
_SUFFIX_POWER = {"k": 3, "m": 6, "b": 9, "t": 12}

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
# ... and a rate typed with its unit into a column counted in GB/s: 3.35 TB/s, 900 GB/s
_RATE_UNIT_RE = re.compile(_BYTE_UNIT_RE.pattern + "/s", re.ASCII)
_UNIT_RE = {"GB": _BYTE_UNIT_RE, "GB/s": _RATE_UNIT_RE}
_BYTES_PER_UNIT = {"mb": GB // 1000, "gb": GB, "tb": TB, "mib": GIB // 1024, "gib": GIB, "tib": TIB}
_GB_PER_UNIT = {unit: Decimal(n) / GB for unit, n in _BYTES_PER_UNIT.items()}

# (t and f as databases print them; 1.0 and 0.0 as a spreadsheet or pandas writes a 1/0 column)
_TRUE = frozenset({"true", "yes", "1", "1.0", "y", "t", "on"})
_FALSE = frozenset({"false", "no", "0", "0.0", "n", "f", "off"})


# ---------------------------------------------------------------------------------------------
# Cell values that only a workbook can produce, and the problem of one cell


@dataclass
class ExcelError:
    """An Excel error value such as #DIV/0! (a cell of type 'e')."""

    code: str
    coordinate: str


@dataclass
class NoCache:
    """A formula cell whose file holds no saved result."""

    formula: str
    coordinate: str


class Bad(Exception):
    """One bad cell: what was expected, what was found."""

    def __init__(self, expected: str, found: str):
        super().__init__(expected, found)
        self.expected = expected
        self.found = found


# ---------------------------------------------------------------------------------------------
# Showing values in messages


def show(raw: Any) -> str:
    """A cell as it appears in a message: text quoted (at most 60 characters), numbers plain."""
    if isinstance(raw, str):
        return json.dumps(raw if len(raw) <= 60 else raw[:57] + "...", ensure_ascii=False)
    if isinstance(raw, bool):
        return "the boolean " + ("TRUE" if raw else "FALSE")
    if isinstance(raw, int):
        return str(raw)
    if isinstance(raw, float):
        return num(raw)
    if isinstance(raw, ExcelError):
        return f"the Excel error {raw.code}"
    if isinstance(raw, NoCache):
        return f"a formula with no saved value ({raw.formula[:40]})"
    if isinstance(raw, (dt.date, dt.time)):  # a datetime is a date
        return f"a {'time' if isinstance(raw, dt.time) else 'date'} {_as_text(raw)}"
    if isinstance(raw, dt.timedelta):
        return f"a duration {raw}"
    return repr(raw)[:60]


def num(x: int | float) -> str:
    """A number for a message: ints with thousands separators from 10,000, floats shortest."""
    if isinstance(x, float) and not (math.isfinite(x) and x == int(x) and abs(x) < 1e16):
        return repr(x)
    return f"{int(x):,}" if abs(x) >= 10_000 else str(int(x))


def letter(col: int) -> str:
    """Spreadsheet column letters for a 1-based column index."""
    letters = ""
    while col > 0:
        col, rem = divmod(col - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


def sheet_ref(title: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", title):
        return title
    return "'" + title.replace("'", "''") + "'"


def is_blank(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip())


def norm(text: str) -> str:
    """NFKC (full-width digits and letters, NBSP) and surrounding whitespace removed."""
    return unicodedata.normalize("NFKC", text).strip()


def python_number(value: Any) -> Any:
    """A number type a file never gives (numpy's, Fraction) as the Python int or float it
    stands for, so that it is converted like a cell holding that number."""
    if isinstance(value, (bool, int, float)) or not isinstance(value, numbers.Real):
        return value
    return int(value) if isinstance(value, numbers.Integral) else float(value)


# ---------------------------------------------------------------------------------------------
# What a column expects, in words


def expected(col: Column) -> str:
    lo, hi = col.minimum, col.maximum
    rng = ""
    if lo is not None and hi is not None:
        rng = (
            f" in ({num(lo)}, {num(hi)}]" if col.min_exclusive else f" from {num(lo)} to {num(hi)}"
        )
    elif lo is not None:
        rng = f" {'>' if col.min_exclusive else '≥'} {num(lo)}"
    elif hi is not None:
        rng = f" ≤ {num(hi)}"
    if col.kind == COUNT:
        return f"a whole number{rng} such as 7000000000, 7,000,000,000, 7e9 or 7B"
    if col.kind == INT:
        return f"a whole number{rng}"
    if col.kind == FLOAT:
        return f"a fraction{rng} such as 0.4 or 40%" if col.percent else f"a number{rng}"
    if col.kind == BOOL:
        return "true or false (also yes/no, y/n, t/f, on/off, 1/0)"
    if col.kind == ENUM:
        if col.catalogue == "gpus":
            return "a GPU from the catalogue (ledger-report gpus)"
        return "one of " + ", ".join(col.choices)
    return f"text of at most {col.max_chars:,} characters"


def _number_hint(text: str) -> str:
    low = text.lower()
    if low.lstrip("+-") in ("nan", "inf", "infinity", "-inf"):
        return " — not a finite number"
    if low.startswith(("0x", "-0x", "+0x")):
        return " — hexadecimal is not accepted"
    if re.search(r"\d,\d", text) and not re.search(r"\d,\d{3}(?!\d)", text):
        return (
            " — a comma here is not a thousands separator (groups of exactly 3 digits, 1,024);"
            " if it is a decimal comma write a point (3.5)"
        )
    if re.search(r"\d,\d", text):
        return (
            " — thousands separators must group exactly 3 digits (1,024,000);"
            " if a comma is a decimal comma write a point"
        )
    if re.search(r"\d\s*[gG]$", text):
        return (
            " — write B for billions, or the size's unit in full (GB, GiB) in a column counted"
            " in GB"
        )
    return ""


def _percent_hint(col: Column, value: float) -> str:
    """ " — did you mean 40%?" for 40 typed bare in a column that takes a percent."""
    return f" — did you mean {num(value)}%?" if col.percent and 1 < value <= 100 else ""


# ---------------------------------------------------------------------------------------------
# Numbers


def _decimal(text: str, col: Column, sized_ok: bool = True) -> tuple[Decimal, bool]:
    """Parse a typed number into an exact Decimal; returns (value, had a percent sign).  In a
    column counted in GB, a size may carry one unit (79.7 GiB, 96GB, 512 MiB), and in one
    counted in GB/s a rate (3.35 TB/s): it is converted to GB (GB/s)."""
    s = re.sub(r"\s+", " ", norm(text)).strip()
    sized = _UNIT_RE[col.unit].fullmatch(s) if sized_ok and col.unit in _UNIT_RE else None
    if sized:
        try:
            value, pct = _decimal(sized.group("num"), col, sized_ok=False)
        except Bad as exc:  # the cell as typed, not its number part ("80 GB GB", "NaN GB")
            raise Bad(exc.expected, show(text)) from None
        return value * _GB_PER_UNIT[sized.group("unit").lower()], pct
    m = _NUMBER_RE.fullmatch(s)
    if not m or (m.group("int") is None and not m.group("frac")):
        raise Bad(expected(col), show(text) + _number_hint(s))
    # a suffix only on counts, not with an exponent; a percent sign only where the column takes one
    if m.group("suffix") and col.kind != COUNT:
        raise Bad(
            expected(col), show(text) + " — K/M/B/T suffixes are only for counts (params_*, tokens)"
        )
    if m.group("suffix") and m.group("exp") is not None:
        raise Bad(expected(col), show(text) + " — give an exponent or a suffix, not both")
    if m.group("pct") and not col.percent:
        percent = ", ".join(c.name for c in COLUMNS if c.percent)
        raise Bad(expected(col), show(text) + " — a percent sign is only accepted in " + percent)
    pct = bool(m.group("pct"))
    exp_text = m.group("exp") or "0"
    if len(exp_text.lstrip("+-")) > 6:
        raise Bad(expected(col) + ", at most 10^16", show(text) + " — out of range")
    exp = (
        int(exp_text) + _SUFFIX_POWER.get((m.group("suffix") or "").lower(), 0) - (2 if pct else 0)
    )
    digits = m.group("int") or "0"
    if m.group("sep"):
        digits = digits.replace(m.group("sep"), "")
    # the regex admits only valid literals
    return Decimal(f"{m.group('sign') or ''}{digits}.{m.group('frac') or '0'}E{exp}"), pct


def _to_decimal(raw: Any, col: Column) -> tuple[Decimal, bool]:
    if isinstance(raw, bool):
        raise Bad(expected(col), show(raw) + " — a TRUE/FALSE cell is not a number")
    if isinstance(raw, (dt.datetime, dt.date, dt.time, dt.timedelta)):
        raise Bad(
            expected(col),
            show(raw) + " — Excel may have converted what you typed into a date; format the cell"
            " as Text or Number and type it again",
        )
    if isinstance(raw, int):
        return Decimal(raw), False
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise Bad(expected(col), show(raw) + " — not a finite number")
        return Decimal(repr(raw)), False
    if isinstance(raw, str):
        return _decimal(raw, col)
    raise Bad(expected(col), show(raw))


# Cells typed as plain digits (with a decimal point for a float), short enough to be below
# MAX_NUMBER: read directly, to the value the Decimal path gives (Python rounds a decimal string
# to the nearest float, as float(Decimal) does).
_PLAIN_WHOLE = re.compile(r"[0-9]{1,16}")
_PLAIN_FLOAT = re.compile(r"[0-9]{1,16}(?:\.[0-9]{1,16})?")


def _whole(raw: Any, col: Column) -> int:
    if type(raw) is str and _PLAIN_WHOLE.fullmatch(raw):
        return int(raw)
    value, _ = _to_decimal(raw, col)
    if abs(value) > MAX_NUMBER:
        raise Bad(expected(col) + ", at most 10^16", show(raw) + " — too large")
    if value != int(value):
        raise Bad(expected(col), show(raw) + " — not a whole number")
    return int(value)


def _float(raw: Any, col: Column) -> float:
    if type(raw) is str and _PLAIN_FLOAT.fullmatch(raw):
        number = float(raw)
        if not _percent_hint(col, number):  # that one is refused below, with its hint
            return number
    value, pct = _to_decimal(raw, col)
    number = float(value)
    if not math.isfinite(number):
        raise Bad(expected(col), show(raw) + " — not a finite number")
    if not pct and _percent_hint(col, number):
        raise Bad(expected(col), show(raw) + _percent_hint(col, number))
    return number


# ---------------------------------------------------------------------------------------------
# Truth values, names from a list, text


def _bool(raw: Any, col: Column) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, (int, float)) and raw in (0, 1):
        return bool(raw)
    if isinstance(raw, str):
        key = norm(raw).lower()
        if key in _TRUE:
            return True
        if key in _FALSE:
            return False
    raise Bad(expected(col), show(raw))


def _enum(raw: Any, col: Column) -> str:
    if not isinstance(raw, str):
        raise Bad(expected(col), show(raw))
    if col.catalogue == "gpus":
        return _gpu(raw)
    key = norm(raw).lower()
    key = ALIASES.get(key, key)
    if key in col.choices:
        return key
    near = difflib.get_close_matches(key, col.choices, n=1, cutoff=0.6)
    hint = f" — did you mean {near[0]}?" if near else ""
    raise Bad(expected(col), show(raw) + hint)


def _gpu(raw: str) -> str:
    gpu = find_gpu(norm(raw))
    if gpu is not None:
        return gpu.name
    if normalise_gpu_name(norm(raw)) == normalise_gpu_name(USER_DESCRIBED.name):
        raise Bad(
            "a GPU's name", show(raw) + " (the name of the profile for GPUs outside the catalogue)"
        )
    # outside the catalogue: the model's gpu_described rule asks for hbm_gb and peak_tflops
    return norm(raw)


def gpu_hint(name: str) -> str:
    """ " — did you mean H100-SXM?" for a name close to a catalogue entry, else empty."""
    key = normalise_gpu_name(name)
    near = [g for g in GPU_NAMES if key and normalise_gpu_name(g).startswith(key)]
    near = near or difflib.get_close_matches(name, list(GPU_NAMES), n=1, cutoff=0.5)
    return f" — did you mean {' or '.join(near[:2])}?" if near else ""


def _as_text(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, bool):
        return "TRUE" if raw else "FALSE"
    if isinstance(raw, (int, float)):
        whole = isinstance(raw, int) or (math.isfinite(raw) and raw == int(raw))
        return str(int(raw)) if whole else repr(raw)
    if isinstance(raw, dt.datetime):
        return raw.date().isoformat() if raw.time() == dt.time(0) else raw.isoformat(sep=" ")
    if isinstance(raw, (dt.date, dt.time)):
        return raw.isoformat()
    return str(raw)


def _text(raw: Any, col: Column) -> str:
    """Text every output can store, checked here once: no character XML 1.0 refuses (a
    workbook is XML), and no longer than the column takes, counted as Excel counts."""
    text = _as_text(raw)
    bad = CONTROL_CHARS.search(text)
    if bad:
        raise Bad(
            "text without control characters",
            f"{show(text)} with the control character U+{ord(bad.group()):04X}"
            f" at position {bad.start() + 1}",
        )
    bad = _NOT_IN_XML.search(text)
    if bad:
        raise Bad(
            "text of characters a workbook can hold (not U+FFFE, U+FFFF or a lone surrogate)",
            f"{show(_NOT_IN_XML.sub(lambda m: f'<U+{ord(m.group()):04X}>', text))}"
            f" with U+{ord(bad.group()):04X} at position {bad.start() + 1}",
        )
    units = len(text) + len(_ASTRAL.findall(text)) if len(text) * 2 > col.max_chars else 0
    if units > col.max_chars:
        pairs = " as Excel counts them, an emoji two" if units > len(text) else ""
        raise Bad(expected(col), f"{units:,} characters{pairs} ({show(text)})")
    return text


# ---------------------------------------------------------------------------------------------
# One cell


def _check_range(value: float | int, raw: Any, col: Column) -> None:
    lo, hi = col.minimum, col.maximum
    too_low = lo is not None and (value <= lo if col.min_exclusive else value < lo)
    too_high = hi is not None and value > hi
    if too_low or too_high:
        raise Bad(expected(col), show(raw) + _percent_hint(col, value))
    smallest, largest = FLOAT_RANGE
    if col.kind == FLOAT and value and not smallest <= abs(value) <= largest:
        # what the column takes within FLOAT_RANGE: "a number from 10^-6 to 10^12"
        hi = largest if col.maximum is None else min(col.maximum, largest)
        zero = col.minimum is not None and col.minimum <= 0 and not col.min_exclusive
        word = "a fraction" if col.percent else "a number"
        high = f"10^{round(math.log10(hi))}" if hi == largest else num(hi)
        band = f"{word} from 10^{round(math.log10(smallest))} to {high}"
        size = "small" if abs(value) < smallest else "large"
        raise Bad(
            f"0, or {band}" if zero else band,
            f"{show(raw)} — too {size} for the figures computed from it to stay finite",
        )


def convert(col: Column, raw: Any) -> Any:
    """The typed value of one non-empty cell, or ``Bad``."""
    if isinstance(raw, ExcelError):
        raise Bad(expected(col), f"cell {raw.coordinate} holds the Excel error {raw.code}")
    if isinstance(raw, NoCache):
        raise Bad(
            "a value (open and save the file in Excel or LibreOffice so formulas get saved"
            " results, or type the value)",
            f"cell {raw.coordinate} holds a formula with no saved value ({raw.formula[:60]})",
        )
    if col.kind == TEXT:
        return _text(raw, col)
    if col.kind == BOOL:
        return _bool(raw, col)
    if col.kind == ENUM:
        return _enum(raw, col)
    if col.kind in (COUNT, INT):
        value: float | int = _whole(raw, col)
    else:  # FLOAT, the one kind left in config.COLUMNS
        value = _float(raw, col)
    _check_range(value, raw, col)
    return value
