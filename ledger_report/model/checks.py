"""The registry's constraints checked on many rows at once: which rule each row breaks, with its
message.  Input validation uses this (errors refuse a row); the reports state the warnings.

Rows are evaluated over arrays (together, or grouped by which columns they leave empty: see
``masked.py``), and only the rules' own quantities are computed; the message of a broken rule is
filled in for that row alone.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .evaluate import Tables, columns_read, eval_scalar, evaluate_row
from .expr import all_cols
from .masked import evaluate_rows
from .registry import ERROR, Constraint, Registry


@dataclass(frozen=True)
class Failure:
    index: int  # the row's position in the list checked
    constraint: Constraint
    expected: str
    found: str


@functools.cache  # a registry is hashed by identity
def constraint_columns(reg: Registry) -> dict[str, frozenset]:
    """For each constraint, every input column it reads (through the quantities it refers to)."""
    return {
        c.key: frozenset(all_cols(c.expected) | all_cols(c.found) | columns_read(reg, (c.ok,)))
        for c in reg.constraints
    }


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
    reads = constraint_columns(reg)
    broken: dict[int, list[Constraint]] = {}
    read = frozenset().union(*reads.values())  # every column a rule reads
    if columns is None:
        columns = {name: [r.get(name) for r in rows] for name in read}
    else:
        columns = {name: columns.get(name, [None] * len(rows)) for name in read}
    for env, idx in evaluate_rows(np, reg, tables, rows, columns, [c.ok for c in rules]):
        for c in rules:
            ok = env[c.ok]
            if ok is None:
                continue
            bad = ~np.asarray(np.ma.filled(ok, True), dtype=bool)  # a masked (blank) rule holds
            for j in np.nonzero(np.broadcast_to(bad, (len(idx),)))[0]:
                broken.setdefault(idx[j], []).append(c)
    out: list[Failure] = []
    for i in sorted(broken):
        skipped = set(skip[i]) if i < len(skip) else set()
        env = None
        for c in broken[i]:  # in the rules' order: each row is in one part
            if reads[c.key] & skipped:
                continue
            env = env if env is not None else evaluate_row(reg, rows[i], tables)
            if env[c.ok] is not False:
                continue  # the arrays and the row agree; a blank rule does not apply
            texts = [str(eval_scalar(x, rows[i], env, tables)) for x in (c.expected, c.found)]
            out.append(Failure(i, c, *texts))
    return out
