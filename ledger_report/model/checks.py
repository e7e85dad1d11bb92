"""The registry's constraints checked on many rows at once: which rule each row breaks, with its
message.  Input validation uses this (errors refuse a row); the reports state the warnings.

Rows are evaluated over arrays (together, or grouped by which columns they leave empty: see
``masked.py``), and only the rules' own quantities are computed; the message of a broken rule is
filled in for that row alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .evaluate import Tables, _closure, eval_scalar, evaluate_arrays, evaluate_row
from .expr import all_cols
from .masked import evaluate_masked, masked_arrays, masked_columns
from .registry import ERROR, Constraint, Registry


@dataclass(frozen=True)
class Failure:
    index: int  # the row's position in the list checked
    constraint: Constraint
    expected: str
    found: str


_COLS: dict[int, tuple[Registry, dict[str, frozenset]]] = {}


def constraint_columns(reg: Registry) -> dict[str, frozenset]:
    """For each constraint, every input column it reads (through the quantities it refers to)."""
    hit = _COLS.get(id(reg))
    if hit is not None and hit[0] is reg:
        return hit[1]
    out = {}
    for c in reg.constraints:
        cols: set[str] = set(all_cols(c.expected)) | set(all_cols(c.found))
        for key in _closure(reg, [c.ok]):
            cols |= all_cols(reg[key].expr)
        out[c.key] = frozenset(cols)
    _COLS[id(reg)] = (reg, out)
    return out


def failures(
    reg: Registry,
    tables: Tables,
    rows: Sequence[Mapping[str, Any]],
    skip: Sequence[Iterable[str]] = (),
    severity: str = ERROR,
    columns: Mapping[str, Sequence[Any]] | None = None,
) -> list[Failure]:
    """The rules of ``severity`` that each row breaks.  ``skip[i]`` names columns of row i whose
    cells could not be read: rules that read them are not checked there (the cell is reported).
    ``columns``, where the caller has them: the rows' values a column at a time (each column's
    value on every row, ``None`` where empty; a column left out is empty on every row)."""
    import numpy as np

    rules = [c for c in reg.constraints if c.severity == severity]
    keys = [c.ok for c in rules]
    reads = constraint_columns(reg)
    broken: dict[int, list[Constraint]] = {}
    for env, idx in _evaluated(np, reg, tables, rows, keys, columns):
        for c in rules:
            ok = env[c.ok]
            if ok is None:
                continue
            bad = (
                ~np.asarray(ok, dtype=bool)
                if not isinstance(ok, np.ma.MaskedArray)
                else (~ok.astype(bool)).filled(False)
            )
            bad = np.broadcast_to(bad, (len(idx),))
            for j in np.nonzero(bad)[0]:
                broken.setdefault(idx[j], []).append(c)
    out: list[Failure] = []
    for i in sorted(broken):
        skipped = set(skip[i]) if i < len(skip) else set()
        env = None
        for c in sorted(broken[i], key=rules.index):
            if reads[c.key] & skipped:
                continue
            env = env if env is not None else evaluate_row(reg, rows[i], tables)
            if env[c.ok] is not False:
                continue  # the arrays and the row agree; a blank rule does not apply
            out.append(
                Failure(
                    i,
                    c,
                    str(eval_scalar(c.expected, rows[i], env, tables)),
                    str(eval_scalar(c.found, rows[i], env, tables)),
                )
            )
    return out


def _evaluated(
    np,
    reg: Registry,
    tables: Tables,
    rows: Sequence[Mapping[str, Any]],
    keys: list[str],
    columns: Mapping[str, Sequence[Any]] | None = None,
) -> list[tuple[dict, list[int]]]:
    """The rules' quantities over the rows: all rows together (``masked.py``), else each group of
    rows that leave the same columns empty apart; with the rows each result covers."""
    read = frozenset().union(*constraint_columns(reg).values())  # every column a rule reads
    if columns is None:
        masked = masked_columns(np, rows, read)
    else:
        nothing = [None] * len(rows)
        masked = masked_arrays(np, {name: columns.get(name, nothing) for name in read})
    env = evaluate_masked(reg, masked[0], masked[1], tables, keys) if masked is not None else None
    if env is not None:
        return [(env, list(range(len(rows))))]
    groups: dict[frozenset, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(
            frozenset(k for k, v in row.items() if v is not None and v != ""), []
        ).append(i)
    out = []
    for given, idx in groups.items():
        cols = {name: _column(np, [rows[i][name] for i in idx]) for name in given}
        out.append((evaluate_arrays(reg, cols, tables, keys), idx))
    return out


def _column(np, vals: list) -> Any:
    if isinstance(vals[0], str):
        return np.array(vals, dtype=str)
    if all(isinstance(v, bool) for v in vals):
        return np.array(vals, dtype=bool)
    return np.array(vals, dtype=float)
