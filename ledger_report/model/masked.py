"""Rows that leave different columns empty, evaluated over arrays together.

Evaluating each pattern of empty columns apart (``evaluate_arrays`` with every column of the group
given) costs one pass over the registry per pattern, and varied rows have hundreds of patterns in a
batch.  Here a batch is one pass: an empty cell is a blank mask over a placeholder value (the
column's first value given), so a row is blank exactly where it would be blank on its own.

Evaluated apart, a conditional whose condition is a blank test picks one branch for the whole
group, so a quantity may come out as the whole number 1 in one group and the float 1.0 in another;
together it is the float.  The outputs write the two alike (``plain``, ``text_of``, the comparisons
and ``FMT`` treat a whole float below 10^15 as the integer, and the engine gives whole numbers of
a counted unit as ``int``), and the reader's checks read truth values only.  Anything else that
could differ (a condition choosing between truth values and numbers, or text and numbers;
arithmetic on two truth values; a lookup by a number; larger whole numbers) makes
``evaluate_masked`` answer ``None``, and the caller evaluates per pattern.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .evaluate import Tables, _ArrayEval, evaluate_arrays, first_seen_codes
from .registry import TEXT, Registry
from .units import SCI_FROM


class Inexact(Exception):
    """The batch may give other values than evaluating each pattern apart."""


Rows = Sequence[Mapping[str, Any]]  # each row's value by column (None: an empty cell)
Parts = list[tuple[dict[str, Any], list[int]]]  # results, each with the rows it covers


def evaluate_rows(
    np, reg: Registry, tables: Tables, rows: Rows, columns: Mapping[str, Sequence[Any]], keys=None
) -> Parts:
    """``keys`` (and what they refer to; every quantity for ``None``) over the rows, with the rows
    each result covers: all rows together (``evaluate_masked`` of ``columns``, each column read
    with its value on every row) where that gives the values evaluating each pattern of empty
    columns apart gives, else ``per_pattern``."""
    masked = masked_arrays(np, columns)
    env = None if masked is None else evaluate_masked(reg, *masked, tables, keys)
    if env is not None:
        return [(env, list(range(len(rows))))]
    return per_pattern(np, reg, tables, rows, keys)


def per_pattern(np, reg: Registry, tables: Tables, rows: Rows, keys=None) -> Parts:
    """``evaluate_arrays`` of each group of rows that leave the same columns empty."""
    groups: dict[frozenset, list[int]] = {}
    for i, row in enumerate(rows):
        given = frozenset(k for k, v in row.items() if v is not None and v != "")
        groups.setdefault(given, []).append(i)
    out = []
    for given, idx in groups.items():
        cols = {name: _column(np, [rows[i][name] for i in idx]) for name in given}
        out.append((evaluate_arrays(reg, cols, tables, keys), idx))
    return out


def _column(np, vals: list) -> Any:
    """One input column as an array: text as str, truth values as bool, numbers as float64 (so
    products such as FLOPs × tokens cannot overflow an integer type)."""
    if isinstance(vals[0], str):
        return np.array(vals, dtype=str)
    if all(isinstance(v, bool) for v in vals):
        return np.array(vals, dtype=bool)
    return np.array(vals, dtype=float)


def masked_arrays(
    np, columns: Mapping[str, Sequence[Any]]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Input columns (each a value per row) as arrays, with a blank mask for each column some rows
    leave empty (a column empty on every row is left out); ``None`` when a column is not of one
    plain kind (``_one_kind``): the caller evaluates such rows per pattern."""
    cols, blanks = {}, {}
    for name, vals in columns.items():
        nones = vals.count(None)  # first: cheap (an identity test), and many columns are all None
        if nones == len(vals):
            continue  # absent: blank on every row
        types = frozenset(map(type, vals))
        # a value of these plain types equals "" only if it is one: "" counted only where it may be
        empty = nones + (vals.count("") if str in types or not types <= _PLAIN else 0)
        if empty == len(vals):
            continue
        one = _one_kind(np, vals, types, empty)
        if one is None:
            return None
        cols[name] = one[0]
        if one[1] is not None:
            blanks[name] = one[1]
    return cols, blanks


_NUMBERS = frozenset({int, float, type(None)})
_TEXTS = frozenset({str, type(None)})
_TRUTHS = frozenset({bool, type(None)})
_BLANK_TEXT = {None: ""}
_PLAIN = frozenset({int, float, bool, str, type(None)})  # types no other type's value equals


def _one_kind(np, vals: Sequence[Any], types: frozenset, empty: int) -> tuple[Any, Any] | None:
    """A column of one plain kind (numbers, texts or truth values, blanks among them) as an array
    of that kind, each blank filled with the first value given, and its blank mask (``None``: no
    blank); ``None`` for any other column.  No Python step per row."""
    if types <= _TEXTS:  # each distinct text converted once (a column holds few), then to the rows
        codes, distinct = first_seen_codes(np, vals)
        if len(distinct) > len(vals) // 4:  # names, notes: nearly one a row
            a = np.array(list(map(_BLANK_TEXT.get, vals, vals)), dtype=str)
        else:
            a = np.array(list(map(_BLANK_TEXT.get, distinct, distinct)), dtype=str)[codes]
        blank = a == ""
    elif types <= _NUMBERS or types <= _TRUTHS:
        a = np.array(vals, dtype=float)  # None as NaN
        blank = np.isnan(a)
    else:
        return None
    if int(np.count_nonzero(blank)) != empty:
        return None  # a NaN given, or a text numpy would cut short
    if empty:
        a[blank] = a[np.argmin(blank)]  # the first value given, as the loop fills a blank
    if types <= _TRUTHS:
        a = a != 0
    return a, (blank if empty else None)


def evaluate_masked(
    reg: Registry,
    cols: Mapping[str, Any],
    blanks: Mapping[str, Any],
    tables: Tables,
    keys: list[str] | None = None,
) -> dict[str, Any] | None:
    """``evaluate_arrays`` of the rows together (see the module docstring), or ``None`` where the
    values could differ from evaluating each pattern of empty columns apart."""
    try:
        return evaluate_arrays(reg, cols, tables, keys, blanks, _Guarded)
    except Exception:  # Inexact, or an error the per-pattern evaluation may not meet (a branch)
        return None


def _kind(np, v: Any) -> str:
    """The kind of a value as numpy holds it: b(ool), i(nteger), f(loat), U (text), or another."""
    t = type(v)
    if t is int:
        return "i" if -(2**63) <= v < 2**64 else "O"  # past 64 bits numpy holds it as an object
    k = v.dtype.kind if t is np.ndarray else _KINDS.get(t) or np.asarray(v).dtype.kind
    return "i" if k == "u" else k


_KINDS = {bool: "b", float: "f", str: "U"}  # Python scalars, as numpy holds them


def _small_whole(np, v: Any) -> bool:
    # whole numbers below SCI_FROM are written alike as int or float (text_of, units.num)
    return bool((np.abs(np.asarray(v, dtype=float)) < SCI_FROM).all())


class _Guarded(_ArrayEval):
    """The arrays interpreter, raising ``Inexact`` where rows evaluated together could differ from
    rows evaluated per pattern by more than a whole number held as a float."""

    def quantity(self, q):
        a = super().quantity(q)
        if q.unit == TEXT and a is not None and _kind(self.np, a.v) != "U":
            raise Inexact(q.key)
        return a

    def _pick(self, cv, cblank, t, o):
        np = self.np
        if t is not None and o is not None:
            kt, ko = _kind(np, t.v), _kind(np, o.v)
            if kt != ko and not (
                {kt, ko} == {"i", "f"} and _small_whole(np, t.v if kt == "i" else o.v)
            ):
                raise Inexact(f"a conditional between {kt} and {ko}")
        return super()._pick(cv, cblank, t, o)

    def _binop(self, op, a, b):
        np = self.np
        out = super()._binop(op, a, b)
        kind = _kind(np, out.v)
        if kind == "b" or (kind == "i" and not _small_whole(np, out.v)):
            raise Inexact(f"{op} on truth values or large whole numbers")
        return out

    def _lookup_key(self, e, k):
        np = self.np
        if k is not None and _kind(np, k.v) != "U":
            raise Inexact(f"{e.table} looked up by a number")
        values = [rec[e.field] for rec in self.tables[e.table].values()]
        types = {type(v) for v in values}
        if len(types) > 1 and not (types == {int, float} and _small_whole(np, values)):
            raise Inexact(f"{e.table}.{e.field} holds values of several kinds")
        return super()._lookup_key(e, k)
