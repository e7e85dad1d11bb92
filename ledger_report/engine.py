"""The engine: configurations in, frozen ``Ledger`` objects out.

Pure: it imports no pandas, click, openpyxl, xlsxwriter, jinja2 or weasyprint (a test walks the imports).
Every number comes from evaluating the model's registry on the row: one row at a time with the
scalar interpreter (``compute``), or many rows at once with the arrays interpreter
(``compute_many``), which gives the same values.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any, Callable, Iterable, Iterator, Sequence

from .config import COLUMN_NAMES, Config
from .errors import InputError, Problem, row_problem

# A Config from a mapping, checked like a file row (one path: the reader's cell conversion and
# cross-checks, raising the same InputError); re-exported for the library, tests and the planner.
from .inputs import config_from_mapping  # noqa: F401
from .model.evaluate import columns_read, eval_scalar, evaluate_row
from .model.expr import TEXT_FUNCTIONS, Call, all_refs, walk
from .model.masked import Parts, evaluate_rows
from .model.registry import BOOL, BYTES, FLOAT_UNITS, INT_UNITS, TEXT
from .report import DEFAULT, Model

CHUNK_ROWS = 1024  # rows per arrays evaluation: bounds memory (~900 arrays of this length)
WHOLE_BELOW = 2.0**53  # floats below this that are whole numbers are exactly an int


@dataclass(frozen=True)
class Ledger:
    """Every quantity of one configuration, and the model that computed them."""

    config: Config
    values: Mapping[str, Any]
    model: Model = DEFAULT

    @property
    def name(self) -> str:
        return self.config.name

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def __repr__(self) -> str:  # a notebook echoes it: the row, not its ~1,000 values and model
        where = self.config.source or "no source"
        return f"<Ledger {self.name!r} ({where}): {len(self.values):,} values>"


def plain(v: Any, unit: str) -> Any:
    """A computed value as the reports carry it: bytes round up to whole bytes, counts to whole
    numbers, other quantities as floats, truth values as bool, text as str, blank as None."""
    return _PLAIN[unit](v)


@functools.cache  # a registry is hashed by identity
def plainers(reg) -> dict[str, Callable[[Any], Any]]:
    """``plain`` of each quantity of the registry, by key: ``plainers(reg)[key](value)``."""
    return {q.key: _PLAIN[q.unit] for q in reg}


def _whole_by(rounding: Callable[[float], int]) -> Callable[[Any], int | None]:
    """A number as a whole number by ``rounding`` (a non-finite one blank)."""

    below = int(WHOLE_BELOW)  # (an int compares faster with an int)

    def whole(v: Any) -> int | None:
        if type(v) is int and -below < v < below:  # exact as a float: itself
            return v
        if v is None:
            return None
        x = float(v)
        return rounding(x) if math.isfinite(x) else None

    return whole


def _finite(v: Any) -> float | None:
    if v is None:
        return None
    x = float(v)
    return x if math.isfinite(x) else None


_PLAIN: dict[str, Callable[[Any], Any]] = {
    BOOL: lambda v: None if v is None else bool(v),
    TEXT: lambda v: None if v is None else str(v),
    BYTES: _whole_by(math.ceil),
}

_PLAIN.update({u: _whole_by(lambda x: math.floor(x + 0.5)) for u in INT_UNITS - {BYTES}})
_PLAIN.update({u: _finite for u in FLOAT_UNITS})


def compute(config: Config, model: Model | None = None) -> Ledger:
    """One row's ledger, by the scalar interpreter (whole numbers of a counted unit as ``int``,
    as ``compute_many`` gives them)."""
    model = model or DEFAULT
    values = evaluate_row(model.registry, config.values, model.tables)
    for key in _keys_in(model.registry, _NUMBER_UNITS):
        v = values[key]
        if type(v) is float and not math.isfinite(v):
            raise NotFiniteError(_not_finite(config, key, v, model))
    for key in _keys_in(model.registry, INT_UNITS):
        values[key] = _whole(values[key])
    return Ledger(config, values, model)


@functools.cache  # a registry is hashed by identity
def _keys_in(reg, units: frozenset) -> tuple[str, ...]:
    return tuple(q.key for q in reg if q.unit in units)


# ---- figures no output can hold ------------------------------------------------------------------
# One rule for every output (the table, the JSON document, the CSV, the workbook, the handout): a
# row one of whose figures is not a finite number (an overflow to infinity, or a NaN from inf - inf
# or 0 × inf) is refused here, where both interpreters' results come out, naming the row and the
# columns it gave that the figure reads; no output writes "inf", and none fails to store it.
_NUMBER_UNITS = INT_UNITS | FLOAT_UNITS


class NotFiniteError(InputError):
    """Rows one of whose figures is not a finite number: every such row named, one line each
    (the first figure of each), the first ten listed and the rest counted."""

    MAX_LISTED = 10


def _not_finite(config: Config, key: str, value: Any, model: Model) -> Problem:
    """The refusal of one row, naming the column the figure reads whose value lies furthest from
    1 (the one that overflowed it, as a rule: 1e308 days, an mfu of 5e-324)."""
    reads = columns_read(model.registry, (key,))
    given = {
        c: v
        for c in COLUMN_NAMES
        if c in reads and type(v := config.values.get(c)) in (int, float) and v != 0
    }
    extreme = max(given, key=lambda c: abs(math.log10(abs(given[c]))), default=None)
    source = f" from {extreme} = {given[extreme]:g}" if extreme else ""
    return row_problem(
        config.source or "input",
        extreme,
        "a value whose every figure is a finite number (no output can hold more)",
        f"{key} ({model.registry[key].en}) = {value}{source}",
    )


def _refuse_non_finite(np, parts, configs: Sequence[Config], model) -> None:
    """The rule above over an arrays result (``parts``: arrays and the rows they cover): every row
    one of whose figures is not finite, with its first such figure in registry order, named in one
    ``NotFiniteError``."""
    found: dict[int, tuple] = {}
    for env, idx in parts:
        for key in _keys_in(model.registry, _NUMBER_UNITS):
            v = env.get(key)  # an array, a masked one, or one value for every row
            data = np.ma.getdata(v)
            if data.dtype.kind != "f":
                continue
            finite = np.isfinite(data)
            if finite.all():  # (the rows' values, blank ones' too, as a rule)
                continue
            bad = ~finite & ~np.ma.getmaskarray(v)
            if bad.any():
                values = np.broadcast_to(data, (len(idx),))
                for j in np.flatnonzero(np.broadcast_to(bad, (len(idx),))):
                    found.setdefault(idx[j], (key, values[j]))
    if found:
        raise NotFiniteError([_not_finite(configs[i], *found[i], model) for i in sorted(found)])


def _evaluated_chunks(
    configs: Iterable[Config], model: Model, rows: int, keys: list[str] | None, make
) -> Iterator[Any]:
    """``make(chunk, evaluate_chunk(chunk))`` of each chunk of ``rows`` configurations in turn (no
    chunk's arrays kept while the next is evaluated); a refusal names every row the run refuses
    (the chunks still to come evaluated too), not only the first chunk's."""
    rest = chunks(configs, rows)
    try:
        for chunk in rest:
            yield make(chunk, evaluate_chunk(chunk, model, keys))
    except NotFiniteError as err:
        problems = list(err.problems)
        for later in rest:
            try:
                evaluate_chunk(later, model, keys)
            except NotFiniteError as more:
                problems.extend(more.problems)
        raise NotFiniteError(problems) from None


def compute_many(
    configs: Iterable[Config], model: Model | None = None, rows=CHUNK_ROWS, make=None
) -> Iterator[Any]:
    """The ledgers of many rows, evaluated over arrays ``rows`` at a time (the same values as
    ``compute``): the rows of a chunk together, an empty cell a blank mask (``model/masked.py``),
    else each group of rows that leave the same columns empty apart.  Text quantities (messages,
    sentences) are filled in per row by the scalar interpreter when they are read.  With ``make``:
    ``make(ledgers)`` of each chunk instead."""
    ledgers = functools.partial(_ledgers, model := model or DEFAULT)
    made = ledgers if make is None else lambda *a: make(ledgers(*a))
    chunked = _evaluated_chunks(configs, model, rows, None, made)
    return chunked if make else chain.from_iterable(chunked)


def chunks(items: Iterable[Any], rows: int) -> Iterator[list[Any]]:
    """``items`` in lists of ``rows`` (the last may be shorter)."""
    it = iter(items)
    while chunk := list(islice(it, rows)):
        yield chunk


def evaluate_chunk(configs: Sequence[Config], model: Model, keys: list[str] | None = None) -> Parts:
    """The arrays interpreter's results for the rows (``keys`` and what they refer to, or every
    quantity): all of them in one pass where that gives the values evaluating each pattern of
    empty columns apart gives, else one pass per pattern; with the rows each part covers."""
    import numpy as np

    reg = model.registry
    read = columns_read(reg, tuple(reg.keys()))
    # a Config holds every column in schema order (Config.__post_init__): the rows transpose at once
    values = zip(*(c.values.values() for c in configs))
    columns = {name: col for name, col in zip(COLUMN_NAMES, values) if name in read}
    parts = evaluate_rows(np, reg, model.tables, [c.values for c in configs], columns, keys)
    _refuse_non_finite(np, parts, configs, model)
    return parts


def _ledgers(model: Model, configs: Sequence[Config], parts: list) -> list[Ledger]:
    import numpy as np

    keys = dict.fromkeys(table_keys(model))  # the rest: _RowValues.__missing__
    out: list[Ledger | None] = [None] * len(configs)
    for env, idx in parts:
        blank = [None] * len(idx)
        columns = [
            python_values(np, env[k], len(idx), model.registry[k].unit) or blank for k in keys
        ]
        for i, row in zip(idx, zip(*columns)):
            out[i] = Ledger(configs[i], _RowValues(keys, row, configs[i], model), model)
    return out  # type: ignore[return-value]


def python_values(np, v: Any, n: int, unit: str) -> list | None:
    """A quantity over ``n`` rows as the arrays interpreter holds it, as Python values (a blank
    row ``None``; ``None`` for a quantity blank on every row); whole numbers of a counted unit
    (bytes, parameters, counts, tokens) as ``int``, as the scalar interpreter gives them."""
    if v is None:
        return None
    if not isinstance(v, (np.ndarray, np.generic)):
        return [_whole(v) if unit in INT_UNITS else v] * n
    data = _on_rows(np, np.ma.getdata(v), n)
    if unit in INT_UNITS and data.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            whole = (np.abs(data) < WHOLE_BELOW) & (data == np.floor(data))
        if whole.all():
            data = data.astype(np.int64)
        else:  # the whole ones as Python ints among the others' floats
            data, ints = data.astype(object), data[whole].astype(np.int64)
            data[whole] = ints
    if not isinstance(v, np.ma.MaskedArray):
        return data.tolist()
    out = data.astype(object)  # each value as Python's, as tolist gives it; blank rows None
    out[_on_rows(np, np.ma.getmaskarray(v), n)] = None
    return out.tolist()


def _on_rows(np, a: Any, n: int) -> Any:
    """``a`` on each of ``n`` rows: itself when it is one value a row already (no broadcast view
    to make: the common case, at a few microseconds each)."""
    return a if a.shape == (n,) else np.broadcast_to(a, (n,))


def _whole(v: Any) -> Any:
    """A float that is a whole number (below 2^53) as an int; anything else as it is."""
    return int(v) if type(v) is float and abs(v) < WHOLE_BELOW and v.is_integer() else v


class _RowValues(dict):
    """One row's quantities out of a chunk: the numbers (and truth values, short texts) as the
    arrays gave them, and each text quantity (messages, sentences) computed by the scalar
    interpreter the first time it is read."""

    __slots__ = ("_config", "_model")

    def __init__(self, keys: dict[str, None], numbers: Sequence[Any], config: Config, model: Model):
        super().__init__(keys)  # a copy of the chunk's keys' table, then their values: no growing
        dict.update(self, zip(keys, numbers))
        self._config, self._model = config, model

    def __missing__(self, key: str) -> Any:
        m = self._model
        v = self[key] = eval_scalar(m.registry[key].expr, self._config.values, self, m.tables)
        return v

    def get(self, key: str, default: Any = None) -> Any:
        # dict.get never calls __missing__: a text quantity not yet read would come back None
        return self[key] if key in self._model.registry else default


@functools.cache  # a registry is hashed by identity
def _row_keys(reg) -> frozenset:
    """Quantities the arrays interpreter leaves to the scalar one: text functions (messages, labels)
    and everything that depends on them."""
    keys: set[str] = set()
    for q in reg:
        text = any(isinstance(n, Call) and n.fn in TEXT_FUNCTIONS for n in walk(q.expr))
        if text or not all_refs(q.expr).isdisjoint(keys):
            keys.add(q.key)
    return frozenset(keys)


def resolved_inputs(lg: Ledger) -> dict[str, Any]:
    """Every input column, resolved to its value (the model's default where the row is empty; a
    given ``params_per_rank`` as given, not as solved from it)."""
    given, v, plain_of = lg.config.values, lg.values, plainers(lg.model.registry)
    out = {c: plain_of[c](v[c]) if c in plain_of else given[c] for c in COLUMN_NAMES}
    if given["params_per_rank"] is not None:
        out["params_per_rank"] = given["params_per_rank"]
    return out


TABLE_ROWS = 16384  # rows a table chunk evaluates at once (~900 arrays of this length, ~120 MB)


def table_keys(model: Model | None = None) -> list[str]:
    """The quantities a sweep table has a column for: every one the arrays interpreter evaluates
    (numbers, truth values, short texts such as the gates and outcomes), in registry order; the
    sentences (messages, notes, reasons) are the JSON document's and the handout's."""
    reg = (model or DEFAULT).registry
    text = _row_keys(reg)
    return [q.key for q in reg if q.key not in text]


def table(
    configs: Iterable[Config], model: Model | None = None, rows: int = TABLE_ROWS
) -> Iterator[dict[str, tuple[Any, Any]]]:
    """The sweep table ``rows`` configurations at a time: for ``name`` and each of ``table_keys``,
    a numpy array of its values as the reports carry them (``plain``: bytes rounded up and counts
    rounded to whole numbers as int64, other numbers float64, truth values bool, text str) and the
    mask of blank rows (``None``: none blank)."""
    model = model or DEFAULT
    keys = table_keys(model)
    make = functools.partial(_table_chunk, model, keys)
    yield from _evaluated_chunks(configs, model, rows, keys, make)


def _table_chunk(model: Model, keys: list[str], chunk: list[Config], parts: list) -> dict:
    import numpy as np

    n = len(chunk)
    out: dict[str, tuple[Any, Any]] = {"name": (np.array([c.name for c in chunk]), None)}
    for k in keys:
        unit = model.registry[k].unit
        if len(parts) == 1:
            out[k] = plain_array(np, parts[0][0][k], n, unit)
        else:  # rows evaluated per pattern: each row's value, then as one array
            vals: list[Any] = [None] * n
            for env, idx in parts:
                for i, v in zip(idx, python_values(np, env[k], len(idx), unit) or ()):
                    vals[i] = plain(v, unit)
            out[k] = _array_of(np, vals, unit)
    return out


def ledger_table(ledgers: Sequence[Ledger]) -> dict[str, tuple[Any, Any]]:
    """``table``'s columns from ledgers already computed (their values, made plain)."""
    import numpy as np

    model = ledgers[0].model
    out = {"name": (np.array([lg.name for lg in ledgers]), None)}
    for k in table_keys(model):
        unit = model.registry[k].unit
        out[k] = _array_of(np, [plain(lg.values[k], unit) for lg in ledgers], unit)
    return out


def plain_array(np, v: Any, n: int, unit: str) -> tuple[Any, Any]:
    """``plain`` of a quantity over ``n`` rows as the arrays interpreter holds it: its values as an
    array and the mask of blank rows (``None``: none blank); a number that is not finite is blank.
    Values already of the kind the unit wants are given as they are (read-only), not copied."""
    if v is None or np.ndim(v) == 0 and not isinstance(v, np.ma.MaskedArray):  # one for every row
        one = (
            _array_of(np, [None], unit) if v is None else plain_array(np, np.reshape(v, 1), 1, unit)
        )
        return np.broadcast_to(one[0], (n,)), None if one[1] is None else np.broadcast_to(one[1], n)
    data = np.broadcast_to(np.ma.getdata(v), (n,))
    blank = (
        np.broadcast_to(np.ma.getmaskarray(v), (n,)) if isinstance(v, np.ma.MaskedArray) else None
    )
    if unit == BOOL:
        return data.astype(bool, copy=False), blank
    if unit == TEXT or data.dtype.kind not in "biuf":
        return data.astype(str, copy=False), blank
    x = data.astype(np.float64, copy=False)
    finite = np.isfinite(x)
    if not finite.all():
        blank = ~finite if blank is None else blank | ~finite
        x = np.where(finite, x, 0.0)
    if unit in INT_UNITS:
        x = np.ceil(x) if unit == BYTES else np.floor(x + 0.5)
        if max(x.max(initial=0.0), -x.min(initial=0.0)) >= 2.0**63:  # past int64: Python ints
            blanks = [False] * len(x) if blank is None else blank.tolist()
            return _array_of(np, [None if b else int(y) for y, b in zip(x.tolist(), blanks)], unit)
        return x.astype(np.int64), blank
    return x, blank


def _array_of(np, vals: list, unit: str) -> tuple[Any, Any]:
    """Plain values (``None`` blank) as an array of the unit's kind, and the blank mask."""
    blank = np.array([v is None for v in vals], dtype=bool)
    if unit == BOOL:
        dtype, fill = bool, False
    elif unit == TEXT:
        dtype, fill = str, ""
    elif unit not in INT_UNITS:
        dtype, fill = np.float64, 0.0
    elif all(v is None or -(2**63) <= v < 2**63 for v in vals):
        dtype, fill = np.int64, 0
    else:
        dtype, fill = object, None  # whole numbers past int64, as Python ints
    arr = np.array([fill if v is None else v for v in vals], dtype=dtype)
    return arr, (blank if blank.any() else None)
