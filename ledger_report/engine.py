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
from itertools import repeat
from typing import Any, Iterable, Iterator, Sequence

from .config import COLUMN_NAMES, Config

# A Config from a mapping, checked like a file row (one path: the reader's cell conversion and
# cross-checks, raising the same InputError); re-exported for the library, tests and the planner.
from .inputs import config_from_mapping, configs_from_records  # noqa: F401
from .model.evaluate import eval_scalar, evaluate_arrays, evaluate_row, first_seen_codes
from .model.expr import Call
from .model.masked import evaluate_masked, masked_arrays
from .model.registry import BOOL, BYTES, FLOAT_UNITS, INT_UNITS, TEXT
from .model.rows import evaluate_rows
from .report import DEFAULT, Model

BATCH_ROWS = 4096  # rows per arrays evaluation: bounds memory (a few hundred arrays of this length)


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


def plain(v: Any, unit: str) -> Any:
    """A computed value as the reports carry it: bytes round up to whole bytes, counts to whole
    numbers, other quantities as floats, truth values as bool, text as str, blank as None."""
    if v is None:
        return None
    if unit == BOOL:
        return bool(v)
    if unit == TEXT:
        return str(v)
    if unit in INT_UNITS:
        x = float(v)
        if not math.isfinite(x):
            return None
        return int(math.ceil(x)) if unit == BYTES else int(math.floor(x + 0.5))
    if unit in FLOAT_UNITS:
        x = float(v)
        return x if math.isfinite(x) else None
    return v


class PackedConfigs:
    """Configurations held compactly, a column at a time (each column's value on every row, in
    schema order), and built again one at a time when iterated: a file's rows in a fraction of the
    memory their ``Config`` objects take (``read_configs(path, sink=packed.append,
    sink_columns=packed.extend_columns)``).  Rows appended one at a time wait as tuples and join
    the columns at once, when the columns are next read or extended."""

    def __init__(self) -> None:
        self._columns: list[list[Any]] = [[] for _ in COLUMN_NAMES]  # in schema order
        self._sources: list[str] = []
        self._origins: list[Mapping[str, str] | None] = []
        self._waiting: list[tuple] = []  # appended rows' values, not yet in the columns

    def append(self, config: Config) -> None:
        self._waiting.append(tuple(config.values.values()))
        self._sources.append(config.source)
        self._origins.append(dict(config.origins) or None)

    def extend_columns(
        self,
        columns: Mapping[str, Sequence[Any]],
        sources: Sequence[str],
        origins: Sequence[Mapping[str, str] | None],
    ) -> None:
        """Rows given a column at a time: ``columns`` each column's value on every row (a column
        left out is empty on every row), each row's source and origins (``None``: no column filled
        by its model; only non-empty columns named)."""
        self._joined()
        n = len(sources)
        for name, held in zip(COLUMN_NAMES, self._columns):
            held.extend(columns.get(name) or repeat(None, n))
        self._sources.extend(sources)
        self._origins.extend(origins)

    def _joined(self) -> list[list[Any]]:
        """The columns, the rows waiting put in them first."""
        if self._waiting:
            for held, values in zip(self._columns, zip(*self._waiting)):
                held.extend(values)
            self._waiting = []
        return self._columns

    def __len__(self) -> int:
        return len(self._sources)

    def __iter__(self) -> Iterator[Config]:
        return iter(
            PackedRows(self._joined(), self._sources, self._origins)
        )  # the columns as they are, not copied

    def __getitem__(self, rows: slice) -> list[Config]:
        return list(self.part(rows))

    def part(self, rows: slice) -> "PackedRows":
        """Some rows, their configurations built only where one is read."""
        return PackedRows(
            [held[rows] for held in self._joined()], self._sources[rows], self._origins[rows]
        )

    def column(self, name: str) -> list[Any]:
        """One input column's value on every row (``None`` for an empty cell)."""
        return list(self._joined()[COLUMN_NAMES.index(name)])


class PackedRows(Sequence):
    """Rows of a ``PackedConfigs``: a configuration built again where it is read, the input
    columns and the origins straight from what is held (as ``_input_columns`` gives them)."""

    def __init__(
        self, columns: list[list[Any]], sources: list[str], origins: list[Mapping[str, str] | None]
    ) -> None:
        self._columns, self._sources, self._origins = columns, sources, origins

    def __len__(self) -> int:
        return len(self._sources)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return PackedRows(
                [held[i] for held in self._columns], self._sources[i], self._origins[i]
            )
        values = [held[i] for held in self._columns]
        return Config.rebuilt(values, self._sources[i], self._origins[i] or {})

    def __iter__(self) -> Iterator[Config]:
        for values, source, origins in zip(zip(*self._columns), self._sources, self._origins):
            yield Config.rebuilt(values, source, origins or {})

    def columns(self) -> dict[str, Sequence[Any]]:
        return dict(zip(COLUMN_NAMES, self._columns))

    def origins(self) -> list[Mapping[str, str]]:
        return [origins or {} for origins in self._origins]


def compute(config: Config, model: Model | None = None) -> Ledger:
    model = model or DEFAULT
    return Ledger(config, evaluate_row(model.registry, config.values, model.tables), model)


def compute_many(
    configs: Iterable[Config],
    model: Model | None = None,
    batch: int = BATCH_ROWS,
    together: bool = False,
) -> Iterator[Ledger]:
    """The ledgers of many rows, evaluated over arrays in batches; the same values as ``compute``.

    Rows are grouped by which columns they leave empty, so a blank is the same for a whole group;
    ``together`` evaluates a batch's rows in one pass instead (``batches``).  Text quantities
    (messages) are filled in per row by the scalar interpreter."""
    for b in batches(configs, model, batch, together):
        yield from b.ledgers()


def batches(
    configs: Iterable[Config],
    model: Model | None = None,
    rows: int = BATCH_ROWS,
    together: bool = False,
) -> Iterator["Batch"]:
    """The rows evaluated ``rows`` at a time.  ``together``: each batch in one pass, an empty cell a
    blank mask (``model/masked.py``), much faster on rows that leave different columns empty; a
    whole number may then come as a float (1.0 for 1), which the JSON document writes alike (the
    workbook's cached values do not, so the other outputs evaluate per pattern)."""
    model = model or DEFAULT
    pending: list[Config] = []
    for c in configs:
        pending.append(c)
        if len(pending) >= rows:
            yield Batch.evaluate(pending, model, together)
            pending = []
    if pending:
        yield Batch.evaluate(pending, model, together)


class Batch:
    """Rows' quantities: ``parts`` holds the arrays interpreter's results, for all the rows at once
    or for each group of rows that leave the same columns empty (with the rows each covers);
    ``ledgers`` gives one ledger per row, ``column`` a quantity on every row."""

    def __init__(
        self,
        configs: Sequence[Config],
        model: Model,
        parts: list[tuple[dict[str, Any], list[int]]],
        inputs: dict[str, Sequence[Any]] | None = None,
    ) -> None:
        self.configs, self.model, self.parts = configs, model, parts
        self.text_keys = frozenset(_row_keys(model.registry))
        self._columns: dict[str, list] = {}
        self._inputs: dict[str, Sequence[Any]] = inputs or {}
        self._value_codes: dict[tuple[str, bool], tuple[Any, int]] = {}
        self._distincts: dict[tuple, tuple[list[int], list[int]] | None] = {}
        self._coded: dict[str, tuple[list[int] | None, list]] = {}
        self._f64: dict[str, tuple[Any, Any] | None] = {}

    def column(self, key: str) -> list:
        """The quantity's value on each row, as the row's ledger gives it; text (messages) by the
        scalar rules over the rows (``model/rows.py``), which raises where a row's ledger would."""
        hit = self._columns.get(key)
        if hit is None:
            if key in self.text_keys:
                inverse, texts = self.coded_column(key)
                hit = texts if inverse is None else list(map(texts.__getitem__, inverse))
            else:
                hit = self._numbers(key)
            self._columns[key] = hit
        return hit

    def coded_column(self, key: str) -> tuple[list[int] | None, list]:
        """A text quantity on every row, as ``text_coded`` gives it."""
        hit = self._coded.get(key)
        if hit is None:
            hit = self._coded[key] = self.text_coded(key, range(len(self.configs)))
        return hit

    def text(self, key: str, rows: Sequence[int]) -> list:
        """A text quantity on some rows (positions in the batch) only (``text_coded``, each row's
        value)."""
        inverse, texts = self.text_coded(key, rows)
        return texts if inverse is None else list(map(texts.__getitem__, inverse))

    def text_coded(self, key: str, rows: Sequence[int]) -> tuple[list[int] | None, list]:
        """A text quantity on some rows: the values, and for each row its value's place among
        them (``None``: a value a row, in order).  Evaluated once for each distinct combination of
        the values it reads (its columns and quantities), on the first row that has it; a row's
        text depends on nothing else."""
        e = self.model.registry[key].expr
        distinct = self._distinct(e, rows)
        if distinct is None:
            return None, evaluate_rows(
                e, rows, self.inputs, self.column, self.model.tables, self._float64
            )
        first, inverse = distinct
        return inverse, evaluate_rows(
            e, first, self.inputs, self.column, self.model.tables, self._float64
        )

    def _float64(self, key: str) -> tuple[Any, Any] | None:
        """A quantity the arrays interpreter holds as float64 or bool over the rows (which
        ``column`` gives as those floats or truth values): its values and blank mask (``None``: no
        blank row); ``None`` for any other quantity (text, whole numbers, rows evaluated per
        pattern)."""
        if key in self._f64:
            return self._f64[key]
        import numpy as np

        held = None if len(self.parts) > 1 or key in self.text_keys else self._held(key)
        got = None
        if held is not None and held[0].dtype in (np.float64, np.bool_):
            data, blank = held
            got = (
                np.broadcast_to(data, (len(self.configs),)),
                (blank if blank is not None and blank.any() else None),
            )
        self._f64[key] = got
        return got

    def _distinct(self, e: Any, rows: Sequence[int]) -> tuple[list[int], list[int]] | None:
        """The first of the rows with each distinct combination of what ``e`` reads, and for each
        row its combination's place among them; ``None`` where that would save nothing (found
        once for texts that read the same on the same rows: a message and its Chinese)."""
        if len(rows) < 2 or len(self.parts) > 1:
            return None
        reads = _reads(e)
        key = (reads, (rows.start, rows.stop, rows.step) if type(rows) is range else tuple(rows))
        if key not in self._distincts:
            self._distincts[key] = self._combinations(reads, rows)
        return self._distincts[key]

    def _combinations(
        self, reads: list[tuple[str, bool]], rows: Sequence[int]
    ) -> tuple[list[int], list[int]] | None:
        """``_distinct``'s finding."""
        import numpy as np

        at = np.asarray(rows, dtype=np.intp)
        columns = (
            (codes[at], k)
            for codes, k in (self._codes(name, of_column) for name, of_column in reads)
        )
        first, inverse = combined_codes(np, columns, len(at))
        if len(first) == len(at):
            return None
        return at[first].tolist(), inverse.tolist()

    def _codes(self, name: str, of_column: bool) -> tuple[Any, int]:
        """A code for each row, equal where the column's (or quantity's) values are identical
        (type, sign of a zero and all), and how many codes there are."""
        hit = self._value_codes.get((name, of_column))
        if hit is None:
            import numpy as np

            if of_column:
                hit = _python_codes(np, self.inputs(name))
            elif name in self.text_keys:
                hit = _python_codes(np, self.column(name))
            else:
                hit = _array_codes(np, self.parts[0][0][name], len(self.configs))
            self._value_codes[(name, of_column)] = hit
        return hit

    def origins(self) -> list[Mapping[str, str]]:
        """Each row's origins (the columns its model filled, and from where)."""
        if isinstance(self.configs, PackedRows):
            return self.configs.origins()
        return [c.origins for c in self.configs]

    def inputs(self, name: str) -> Sequence[Any]:
        """An input column as the rows give it (``None`` for an empty cell)."""
        if not self._inputs:
            self._inputs = _input_columns(self.configs)
        return self._inputs[name]

    def numeric(self, key: str) -> bool:
        """Whether the quantity is held as numbers or truth values over the rows (``floats``
        reads it without a conversion of text)."""
        if key in self.text_keys or len(self.parts) > 1:
            return False
        v = self.parts[0][0][key]
        return (
            v is None
            or getattr(v, "dtype", None) is not None
            and v.dtype.kind in "biuf"
            or type(v) in (bool, int, float)
        )

    def floats(self, key: str) -> tuple[Any, Any] | None:
        """A quantity as float64 values over the rows and the mask of its blank rows (``None``: no
        blank row); ``None`` when it is blank on every row."""
        import numpy as np

        n = len(self.configs)
        if len(self.parts) > 1 or key in self.text_keys:
            vals = self.column(key)
            blank = np.array([v is None for v in vals], dtype=bool)
            return np.array([0.0 if v is None else v for v in vals], dtype=float), blank
        held = self._held(key)
        if held is None:
            return None
        return np.broadcast_to(np.asarray(held[0], dtype=float), (n,)), held[1]

    def _held(self, key: str) -> tuple[Any, Any] | None:
        """A quantity as the arrays interpreter holds it over the rows (one part, not text): its
        values as held (an array, or one value for every row) and the mask of its blank rows
        (``None``: not masked); ``None`` where it is blank on every row."""
        import numpy as np

        v = self.parts[0][0][key]
        if v is None:
            return None
        blank = (
            np.broadcast_to(np.ma.getmaskarray(v), (len(self.configs),))
            if isinstance(v, np.ma.MaskedArray)
            else None
        )
        return np.ma.getdata(v), blank

    def _numbers(self, key: str) -> list:
        import numpy as np

        if len(self.parts) == 1:
            env, idx = self.parts[0]
            return _as_list(np, env[key], len(idx)) or [None] * len(idx)
        out: list[Any] = [None] * len(self.configs)
        for env, idx in self.parts:
            for i, v in zip(idx, _as_list(np, env[key], len(idx)) or ()):
                out[i] = v
        return out

    @classmethod
    def evaluate(cls, configs: Sequence[Config], model: Model, together: bool = False) -> "Batch":
        import numpy as np

        if together:
            inputs = _input_columns(configs)
            read = _read_columns(model.registry)
            masked = masked_arrays(np, {k: v for k, v in inputs.items() if k in read})
            env = (
                evaluate_masked(model.registry, masked[0], masked[1], model.tables)
                if masked is not None
                else None
            )
            if env is not None:
                return cls(configs, model, [(env, list(range(len(configs))))], inputs)
        return cls(configs, model, _per_pattern(np, configs, model))

    def ledgers(self) -> list[Ledger]:
        import numpy as np

        out: list[Ledger | None] = [None] * len(self.configs)
        for env, idx in self.parts:
            columns = {
                k: _as_list(np, v, len(idx)) for k, v in env.items() if k not in self.text_keys
            }
            for j, i in enumerate(idx):
                c = self.configs[i]
                out[i] = Ledger(
                    c, _RowValues(columns, j, c, self.model, self.text_keys), self.model
                )
        return out  # type: ignore[return-value]


@functools.cache  # a registry and an expression are hashed by identity (they hold no equality of their own)
def _read_columns(reg) -> frozenset:
    """The input columns some quantity of the registry reads."""
    from .model.expr import all_cols

    return frozenset().union(*(all_cols(q.expr) for q in reg))


@functools.cache
def _reads(e: Any) -> tuple[tuple[str, bool], ...]:
    """What an expression reads: (column name, True) and (quantity key, False), in a fixed order."""
    from .model.expr import all_cols, all_refs

    return tuple(
        [(c, True) for c in sorted(all_cols(e))] + [(k, False) for k in sorted(all_refs(e))]
    )


MAX_CODE = 2**62  # combined codes are numbered again before they would reach it
TABLE_SPAN = 4  # combined codes fewer than this many times the rows: counted in a table, not sorted


def combined_codes(np, columns: Iterable[tuple[Any, int]], n: int) -> tuple[Any, Any]:
    """For code columns ((codes, how many), ...) over n rows: a row of each distinct combination
    (not always the first: any row of it has the same values), and each row's place among the
    combinations (sorted, without the stable sort that finding the first rows takes)."""
    code, size = np.zeros(n, dtype=np.int64), 1
    for codes, k in columns:
        if size * k >= MAX_CODE:
            distinct, code = np.unique(code, return_inverse=True)
            code, size = code.reshape(-1), len(distinct)
        code, size = code * k + codes, size * k
    if size <= TABLE_SPAN * n:
        return tabled_codes(np, code, size)
    order = code.argsort()
    starts = np.empty(n, dtype=bool)  # where a combination begins in sorted order
    starts[:1] = True
    np.not_equal(code[order[1:]], code[order[:-1]], out=starts[1:])
    inverse = np.empty(n, dtype=np.intp)
    inverse[order] = np.cumsum(starts) - 1
    return order[starts], inverse


def tabled_codes(np, code: Any, size: int) -> tuple[Any, Any]:
    """``combined_codes``' finding for codes from 0 to below ``size`` (a few times the rows, at
    most ``TABLE_SPAN`` times): the codes present marked in a table of that size and numbered in
    order, a row of each kept."""
    present = np.zeros(size, dtype=bool)
    present[code] = True
    row = np.empty(size, dtype=np.intp)
    row[code] = np.arange(len(code))  # (of rows with one code, any one stays)
    return row[present], (np.cumsum(present, dtype=np.intp) - 1)[code]


def _python_codes(np, vals: Sequence[Any]) -> tuple[Any, int]:
    """Codes of Python values: by value where that is identity (texts, whole numbers, truth
    values, blanks), else by ``repr`` (1, 1.0 and True apart, -0.0 apart from 0.0)."""
    kinds = set(map(type, vals)) - {type(None)}
    keys = vals if len(kinds) <= 1 and kinds <= {str, int, bool} else list(map(repr, vals))
    codes, distinct = first_seen_codes(np, keys)
    return codes, max(len(distinct), 1)


def _array_codes(np, v: Any, n: int) -> tuple[Any, int]:
    """Codes of a quantity over the rows as the arrays interpreter holds it: equal where the
    values are bit for bit the same (numbers) or the same text, blank rows a code of their own."""
    if v is None or np.ndim(v) == 0 and not isinstance(v, np.ma.MaskedArray):
        return np.zeros(n, dtype=np.int64), 1
    data = np.ascontiguousarray(np.broadcast_to(np.ma.getdata(v), (n,)))
    if data.dtype.kind == "b":  # false 1, true 2 (no sort)
        codes, k = data.astype(np.int64) + 1, 3
        if isinstance(v, np.ma.MaskedArray):
            codes = np.where(np.broadcast_to(np.ma.getmaskarray(v), (n,)), 0, codes)
        return codes, k
    if data.dtype.kind == "f":
        data = data.astype(np.float64).view(np.int64)  # -0.0 apart from 0.0
    elif data.dtype.kind not in "biu":
        return _python_codes(np, _as_list(np, v, n))
    _, codes = np.unique(data, return_inverse=True)
    codes, k = codes.reshape(-1).astype(np.int64) + 1, int(codes.max(initial=0)) + 2
    if isinstance(v, np.ma.MaskedArray):
        codes = np.where(np.broadcast_to(np.ma.getmaskarray(v), (n,)), 0, codes)
    return codes, k


def _input_columns(configs: Sequence[Config]) -> dict[str, Sequence[Any]]:
    """Every input column: a list of its value on each row (a config holds every column, in schema order)."""
    if isinstance(configs, PackedRows):
        return configs.columns()
    return dict(zip(COLUMN_NAMES, map(list, zip(*[c.values.values() for c in configs]))))


def _per_pattern(
    np, configs: Sequence[Config], model: Model
) -> list[tuple[dict[str, Any], list[int]]]:
    """The arrays of each group of rows that leave the same columns empty."""
    groups: dict[frozenset, list[int]] = {}
    for i, c in enumerate(configs):
        groups.setdefault(
            frozenset(k for k, v in c.values.items() if v is not None and v != ""), []
        ).append(i)
    out = []
    for given, idx in groups.items():
        cols = {name: _column(np, [configs[i].values[name] for i in idx]) for name in given}
        out.append((evaluate_arrays(model.registry, cols, model.tables), idx))
    return out


def _as_list(np, v: Any, n: int) -> Any:
    """A quantity over the batch as a plain Python list (blank rows None), or one scalar for all."""
    if v is None:
        return None
    if isinstance(v, np.ma.MaskedArray):
        data = np.broadcast_to(v.data, (n,)).tolist()
        mask = np.broadcast_to(np.ma.getmaskarray(v), (n,)).tolist()
        return [None if m else x for x, m in zip(data, mask)]
    if isinstance(v, np.ndarray):
        return np.broadcast_to(v, (n,)).tolist() if v.ndim else [v.item()] * n
    if isinstance(v, np.generic):
        return [v.item()] * n
    return [v] * n


class _RowValues(Mapping):
    """One row's quantities out of a batch: numbers read from the batch's columns, text (messages,
    sentences) computed by the scalar interpreter the first time it is read."""

    __slots__ = ("_columns", "_j", "_config", "_model", "_text", "_cache")

    def __init__(
        self, columns: Mapping[str, Any], j: int, config: Config, model: Model, text_keys: frozenset
    ) -> None:
        self._columns, self._j, self._config, self._model, self._text = (
            columns,
            j,
            config,
            model,
            text_keys,
        )
        self._cache: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        hit = self._cache.get(key, _MISSING)
        if hit is not _MISSING:
            return hit
        if key in self._text:
            v = eval_scalar(
                self._model.registry[key].expr, self._config.values, self, self._model.tables
            )
        else:
            col = self._columns[key]
            v = None if col is None else col[self._j]
        self._cache[key] = v
        return v

    def __iter__(self) -> Iterator[str]:
        return iter(self._model.registry.keys())

    def __len__(self) -> int:
        return len(self._model.registry)


_MISSING = object()


def _column(np, vals: list) -> Any:
    """One input column as an array: text as str, truth values as bool, numbers as float64 (so
    products such as FLOPs × tokens cannot overflow an integer type)."""
    if isinstance(vals[0], str):
        return np.array(vals, dtype=str)
    if all(isinstance(v, bool) for v in vals):
        return np.array(vals, dtype=bool)
    return np.array(vals, dtype=float)


_ROW_KEYS: dict[int, tuple] = {}


def _row_keys(reg) -> list[str]:
    """Quantities the arrays interpreter leaves to the scalar one: text functions (messages, labels)
    and everything that depends on them, in registry order."""
    from .model.expr import all_refs, children

    hit = _ROW_KEYS.get(id(reg))
    if hit is not None and hit[0] is reg:
        return hit[1]

    def direct(e) -> bool:
        stack = [e]
        while stack:
            n = stack.pop()
            if isinstance(n, Call) and n.fn in ("CONCAT", "FMT", "MID"):
                return True
            stack.extend(children(n))
        return False

    keys: list[str] = []
    seen: set[str] = set()
    for q in reg:
        if direct(q.expr) or all_refs(q.expr) & seen:
            keys.append(q.key)
            seen.add(q.key)
    _ROW_KEYS[id(reg)] = (reg, keys)
    return keys


def resolved_inputs(lg: Ledger) -> dict[str, Any]:
    """Every input column, resolved to its value (the model's default where the row is empty)."""
    reg = lg.model.registry
    out: dict[str, Any] = {}
    for col in COLUMN_NAMES:
        given = lg.config.get(col)
        if col in reg and not (col == "params_per_rank" and given is not None):
            out[col] = plain(lg.values[col], reg[col].unit)
        else:
            out[col] = given
    return out
