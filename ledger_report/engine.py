"""The engine: configurations in, frozen ``Ledger`` objects out.

Pure: it imports no pandas, click, openpyxl, xlsxwriter, jinja2 or weasyprint (a test walks the imports).
Every number comes from evaluating the model's registry on the row: one row at a time with the
scalar interpreter (``compute``), or many rows at once with the arrays interpreter
(``compute_many``), which gives the same values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .config import COLUMN_NAMES, Config
# A Config from a mapping, checked like a file row (one path: the reader's cell conversion and
# cross-checks, raising the same InputError); re-exported for the library, tests and the planner.
from .inputs import config_from_mapping, configs_from_records  # noqa: F401
from .model.evaluate import evaluate_arrays, evaluate_row, eval_scalar
from .model.expr import Call
from .model.registry import BOOL, BYTES, FLOAT_UNITS, INT_UNITS, TEXT
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


def compute(config: Config, model: Model | None = None) -> Ledger:
    model = model or DEFAULT
    return Ledger(config, evaluate_row(model.registry, config.values, model.tables), model)


def compute_many(configs: Iterable[Config], model: Model | None = None, batch: int = BATCH_ROWS) -> Iterator[Ledger]:
    """The ledgers of many rows, evaluated over arrays in batches; the same values as ``compute``.

    Rows are grouped by which columns they leave empty, so a blank is the same for a whole group
    and the arrays need no per-row masks for inputs; text quantities (messages) are filled in per
    row by the scalar interpreter."""
    model = model or DEFAULT
    pending: list[Config] = []
    for c in configs:
        pending.append(c)
        if len(pending) >= batch:
            yield from _batch(pending, model)
            pending = []
    if pending:
        yield from _batch(pending, model)


def _batch(configs: Sequence[Config], model: Model) -> list[Ledger]:
    import numpy as np

    groups: dict[frozenset, list[int]] = {}
    for i, c in enumerate(configs):
        groups.setdefault(frozenset(k for k, v in c.values.items() if v is not None and v != ""), []).append(i)
    out: list[Ledger | None] = [None] * len(configs)
    reg = model.registry
    text_keys = _row_keys(reg)
    for given, idx in groups.items():
        cols = {}
        for name in given:
            cols[name] = _column(np, [configs[i].values[name] for i in idx])
        env = evaluate_arrays(reg, cols, model.tables)
        for j, i in enumerate(idx):
            values = {k: _pick(v, j) for k, v in env.items()}
            for k in text_keys:
                values[k] = eval_scalar(reg[k].expr, configs[i].values, values, model.tables)
            out[i] = Ledger(configs[i], values, model)
    return out  # type: ignore[return-value]


def _pick(v: Any, j: int) -> Any:
    import numpy as np

    if v is None:
        return None
    if isinstance(v, np.ma.MaskedArray):
        if v.mask is not np.ma.nomask and np.ndim(v.mask) and v.mask[j]:
            return None
        x = v.data[j] if np.ndim(v.data) else v.data
    elif isinstance(v, np.ndarray):
        x = v[j] if v.ndim else v[()]
    else:
        x = v
    if isinstance(x, np.generic):
        x = x.item()
    return x


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
