"""Rows and columns into ``Config`` objects: the header, each row's cells, the model fill-in,
the row rules (the registry's constraints), and the problems, as one table shared by the CSV
reader, the XLSX reader and mappings."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..config import (
    COLUMN_BY_NAME,
    COLUMN_NAMES,
    MODEL_COLUMN,
    NAME_COLUMN,
    TEXT,
    Config,
    row_values,
)
from ..errors import InputError, Problem
from .cells import Bad, convert, gpu_hint, is_blank, letter, norm, python_number, sheet_ref, show
from .fill import Models
from .names import column_of, hint

CHECK_BATCH_ROWS = 4096  # rows checked against the model's constraints at once
MAX_ROWS = 100_000  # configuration rows per file
MAX_COLUMNS = 16_384  # Excel's last column, XFD: the widest header every output can hold
MAX_UNKNOWN_LISTED = 10  # unknown header names listed by name (the rest counted)
MAX_KNOWN = 100_000  # cell texts remembered per column


class _Known(dict):
    """One column's cell texts, each with its value (``None``: blank), converted when first met
    (a text column's are not kept: names and notes are mostly distinct, and may be long); a cell
    with a problem is not kept: it reads as its ``Bad`` and adds one to the thread's tally."""

    def __init__(self, name: str):
        super().__init__()
        self.column = COLUMN_BY_NAME[name]
        self.keeps = self.column.kind != TEXT

    def __missing__(self, raw: Any) -> Any:
        try:
            value = None if is_blank(raw) else convert(self.column, raw)
        except Bad as exc:
            _TALLY.bad += 1
            return exc
        if self.keeps and (raw is None or type(raw) is str):  # (1 and True: one key, two values)
            if len(self) >= MAX_KNOWN:
                self.clear()
            self[raw] = value
        return value


class _Tally(threading.local):
    bad = 0  # cells with a problem this thread met (a row adding none has none)


_TALLY = _Tally()
KNOWN = {name: _Known(name) for name in COLUMN_BY_NAME}
_GOOD: frozenset[str] = frozenset()  # the columns of a row read without a problem: none


def name_key(name: str) -> str:
    """A name as the reader compares names (unique in a file)."""
    return norm(name).casefold()


def _blamed(rule: Any, text: str, values: Mapping[str, Any], origins: Mapping[str, str]) -> str:
    """The column a broken rule is reported on: its own, unless the row's model filled it while
    the row typed another column that the rule reads and its message (``text``) names: "experts
    divisible by ep = 6" is the ep the user wrote, not the model's experts."""
    from ..model.checks import constraint_columns
    from ..model.definitions import REGISTRY

    own = rule.column
    if own not in origins:  # typed, or empty (then the rule asks for it)
        return own
    reads = constraint_columns(REGISTRY)[rule.key]
    typed = (
        c
        for c in COLUMN_BY_NAME
        if c in reads and c not in origins and values.get(c) is not None
        if re.search(rf"(?<![\w.]){re.escape(c)}(?![\w])", text)
    )
    return next(typed, own)


class Table:
    """``sheet`` None: a CSV file (rows are lines); ``keyed``: mappings, whose keys are read as a
    header and whose values as the cells of the row below it (rows are the mappings' numbers)."""

    def __init__(
        self, label: str, sheet: str | None, keyed: bool = False, folder: Path | None = None
    ):
        self.label = label
        # a config.json named in a model cell is relative to folder (None: the working directory)
        self.models = Models(folder)
        self.sheet = sheet
        self.keyed = keyed
        self.row_word = "line" if sheet is None and not keyed else "row"
        self.place = label if sheet is None else f"{label} {sheet}"  # + row_word: a Config's source
        self.problems: list[Problem] = []
        self.columns: dict[int, str] = {}  # 1-based position -> canonical column name
        self.written: dict[str, str] = {}  # column -> the other name its header gave it
        self.written_by_row: dict[int | None, dict[str, str]] = {}  # mappings: each its own
        self.blank: set[int] = set()  # header positions that are blank
        self.width = 0  # last non-blank header position
        self.header_row = 1
        self.orphans: dict[int, int] = {}  # position with data but no header -> first row
        self.names: dict[str, int] = {}  # normalised name -> first row
        self.configs: list[Config] = []
        self.rows_seen = 0
        # rows read, not yet checked against the model:
        # (row, values, bad, clean, origins, warned, the values of the header's columns)
        self.pending: list[tuple[int, Mapping[str, Any], Any, bool, dict, tuple, list]] = []
        self.pending_slots: tuple[str, ...] | None = None  # their header's columns (None: mixed)
        # the header's columns in the order of their positions, each one's known texts, their
        # positions, and whether some position between them is no column
        self.slots: tuple[str, ...] = ()
        self.known: list[_Known] = []
        self.positions: list[int] = []
        self.gaps = False
        self.keys: list[Any] | None = None  # mappings: the last one's keys, where read clean

    # -- problems
    def add(
        self,
        row: int | None,
        column: str | None,
        expected: str,
        found: str,
        cell: str | None = None,
    ) -> None:
        written = self.written_by_row.get(row, self.written).get(column or "")
        problem = Problem(self.label, row, column, expected, found, cell, self.row_word, written)
        self.problems.append(problem)

    def cell_ref(self, col: int, row: int) -> str | None:
        return None if self.sheet is None else f"{sheet_ref(self.sheet)}!{letter(col)}{row}"

    def position(self, col: int) -> str:
        return f"field {col} ({letter(col)})" if self.sheet is None else f"column {letter(col)}"

    def over_row_bound(self, row: int, container: str) -> bool:
        """Count one data row; past ``MAX_ROWS`` record the problem and say stop (no whole-sheet
        scan)."""
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

    # -- header
    def read_header(self, cells: dict[int, Any], row: int) -> None:
        self.header_row = row
        if len(cells) > MAX_COLUMNS:  # wider than a sheet can be: refused before names are read
            expected = f"at most {MAX_COLUMNS:,} columns (a spreadsheet's width)"
            self.add(row, None, expected, f"{len(cells):,} fields in the header")
            return
        unknown: list[tuple[int, str]] = []
        seen: dict[str, int] = {}
        shown: dict[int, str] = {}
        for col in sorted(cells):
            raw = cells[col]
            text = raw if isinstance(raw, str) else ("" if raw is None else show(raw))
            key = norm(text.replace("\ufeff", "")).casefold()
            if not key:
                if self.keyed:  # a mapping has no blank header cells: a blank key is unknown
                    unknown.append((col, text))
                else:
                    self.blank.add(col)
                continue
            self.width = max(self.width, col)
            shown[col] = text
            column = column_of(key) or key
            if column in seen:
                self._twice(row, column, seen[column], col, shown)
                continue
            seen[column] = col
            if column in COLUMN_BY_NAME:
                self.columns[col] = column
                if key != column:
                    self.written[column] = text.strip()
            else:
                unknown.append((col, text))
        self.blank.update(range(1, self.width + 1) - cells.keys())
        self.positions = sorted(self.columns)
        self.slots = tuple(self.columns[col] for col in self.positions)
        self.known = [KNOWN[name] for name in self.slots]
        self.gaps = self.positions != list(range(1, len(self.positions) + 1))
        if unknown:
            self._unknown(row, unknown)
        if NAME_COLUMN not in self.columns.values() and not self.keyed:
            # (a mapping without one: an empty name)
            header = ", ".join(show(shown[c]) for c in sorted(shown)) or "nothing"
            self.add(
                row,
                NAME_COLUMN,
                f"a column {show(NAME_COLUMN)} (the label of each configuration)",
                f"the header holds {header}",
            )

    def _twice(self, row: int, key: str, first: int, col: int, shown: dict[int, str]) -> None:
        text = shown[col]
        both = (
            f"the keys {show(shown[first])} and {show(text)}"
            if self.keyed
            else f"{self.position(first)} {show(shown[first])} and {self.position(col)}"
            f" {show(text)}"
        )
        self.add(
            row,
            key if key in COLUMN_BY_NAME else None,
            "each column once",
            f"{both} both read as {show(key)}",
            self.cell_ref(col, row),
        )

    def _unknown(self, row: int, unknown: list[tuple[int, str]]) -> None:
        parts = []
        for col, text in unknown[:MAX_UNKNOWN_LISTED]:
            where = "" if self.keyed else f" in {self.position(col)}"
            parts.append(f"{show(text)}{where}{hint(norm(text).casefold())}")
        if len(unknown) > MAX_UNKNOWN_LISTED:
            parts.append(f"and {len(unknown) - MAX_UNKNOWN_LISTED:,} more")
        self.add(
            row,
            None,
            "only the column names of the input schema (see `ledger-report template`)",
            "unknown column" + ("s " if len(parts) > 1 else " ") + ", ".join(parts),
        )

    # -- rows
    def read_row(self, row: int, cells: Sequence[Any]) -> None:
        """One non-blank data row: ``cells[i]`` is the raw value at position i + 1."""
        seen, before = _TALLY.bad, len(self.problems)
        given = cells
        if self.gaps:  # a blank header cell between two columns
            given = [cells[c - 1] if c <= len(cells) else None for c in self.positions]
        try:
            values = list(map(_Known.__getitem__, self.known, given))
        except TypeError:  # a value no dict holds (a list in a mapping): each converted
            values = list(map(_Known.__missing__, self.known, given))
        bad = _GOOD if _TALLY.bad == seen else self._bad_cells(row, values)
        values.extend([None] * (len(self.slots) - len(values)))  # a short row: empty to the end
        if len(cells) > len(self.columns) and len(cells) - cells.count(None) > len(self.columns):
            for col, raw in enumerate(cells, 1):  # positions that are no column
                if col not in self.columns and not is_blank(raw):
                    if col in self.blank or col > self.width:
                        self.orphans.setdefault(col, row)
                    # unknown or duplicate columns are reported once, on the header
        full = row_values(zip(self.slots, values))
        bad = self._check_name(row, full, bad)
        full, bad, origins, warned = self._fill(row, full, bad)
        if not self.pending or self.pending_slots is not self.slots:  # (mappings: their keys)
            self.pending_slots = self.slots if not self.pending else None
        self.pending.append((row, full, bad, len(self.problems) == before, origins, warned, values))
        if len(self.pending) >= CHECK_BATCH_ROWS:
            self._flush()

    def _bad_cells(self, row: int, values: list[Any]) -> set[str]:
        """The row's cells with a problem: each reported, made empty, and named in the set."""
        bad = set()
        for k, exc in enumerate(values):
            if isinstance(exc, Bad):
                col, name = self.positions[k], self.slots[k]
                self.add(row, name, exc.expected, exc.found, self.cell_ref(col, row))
                values[k] = None
                bad.add(name)
        return bad

    def _check_name(self, row: int, values: Mapping[str, Any], bad: Any) -> Any:
        """Every row named, each name once in the file; the row's columns with a problem."""
        name_value = values[NAME_COLUMN]
        if name_value is None or not name_value.strip():
            if NAME_COLUMN not in bad:
                self.add(
                    row,
                    NAME_COLUMN,
                    "a name (required, unique in the file)",
                    "an empty cell",
                    self._ref_of(NAME_COLUMN, row),
                )
            return {*bad, NAME_COLUMN}
        first = self.names.setdefault(name_key(name_value), row)
        if first != row:
            self.add(
                row,
                NAME_COLUMN,
                "a name unique in the file",
                f"{show(name_value)} again (first at {self.row_word} {first})",
                self._ref_of(NAME_COLUMN, row),
            )
        return bad

    def _fill(self, row: int, values: Mapping[str, Any], bad: Any) -> tuple:
        """The row's values with the columns its model fills (those the row leaves empty: any
        column the row gives, even one it gives badly, wins), its columns with a problem, where
        each filled column came from, and its warnings (the model contradicted)."""
        if values[MODEL_COLUMN] is None:
            return values, bad, {}, ()
        try:
            filled, origin = self.models.columns(values[MODEL_COLUMN])
        except Bad as exc:
            self.add(row, MODEL_COLUMN, exc.expected, exc.found, self._ref_of(MODEL_COLUMN, row))
            # the columns it would have filled are unknown: no rule is checked on them
            bad = {*bad, MODEL_COLUMN, *(c for c, v in values.items() if v is None)}
            return values, bad, {}, ()
        fills = {c: v for c, v in filled.items() if values[c] is None and c not in bad}
        # a warning for each column the row gives with another value than its model's (the row's
        # wins): a stale architecture beside a changed model is the usual cause
        named = {c: f"{w} ({c})" for c, w in self.written.items() if w}  # as the header wrote it
        warned = tuple(
            f"{named.get(column, column)}: expected {show(model_value)}, as {origin} has it; found"
            f" {show(values[column])} (the row's value is used: a model changed without its"
            " architecture columns, or a deliberate variant)"
            for column, model_value in filled.items()
            if model_value is not None
            and values[column] is not None
            and values[column] != model_value
        )
        return row_values(fills.items(), values), bad, dict.fromkeys(fills, origin), warned

    def _columns(self, pending: list[tuple]) -> dict[str, Sequence[Any]]:
        """The pending rows' values a column at a time: from their cells where they share a
        header (and the columns their models filled), else each rule's columns from the rows."""
        if self.pending_slots is None:  # (mappings of different keys)
            return dict(zip(COLUMN_NAMES, zip(*(p[1].values() for p in pending))))
        columns = dict(zip(self.pending_slots, map(list, zip(*(p[6] for p in pending)))))
        for i, (_row, values, _bad, _clean, origins, *_rest) in enumerate(pending):
            for column in origins:
                if column not in columns:
                    columns[column] = [None] * len(pending)
                columns[column][i] = values[column]
        return columns

    def _flush(self) -> None:
        """Check the pending rows against the model's constraints (the same rules the workbook's
        check cells and the planner apply), then keep the good ones."""
        from ..model.checks import failures
        from ..model.definitions import REGISTRY
        from ..model.tables import tables

        pending, self.pending = self.pending, []
        if not pending:
            return
        rows = [values for _row, values, *_rest in pending]
        bad = [b for _r, _v, b, *_rest in pending]
        broken: set[int] = set()
        for f in failures(REGISTRY, tables(), rows, bad, columns=self._columns(pending)):
            row, values, _bad, _clean, origins, _warned, _cells = pending[f.index]
            rule, found = f.constraint.column, f.found
            column = _blamed(f.constraint, f.expected + found, values, origins)
            col = COLUMN_BY_NAME.get(rule)
            if col is not None and col.catalogue == "gpus":
                found += gpu_hint(str(values[rule] or ""))
            if rule in origins:
                found += f" ({rule} from {origins[rule]})"
            self.add(row, column, f.expected, found, self._ref_of(column, row))
            broken.add(row)
        for row, values, _bad, clean, origins, warned, _cells in pending:
            if clean and row not in broken:
                source = f"{self.place} {self.row_word} {row}"
                self.configs.append(Config(values, source, origins, warned))

    def read_record(self, row: int, record: Any) -> None:
        """One mapping: its keys read as a header (the same names and messages as a file's
        column names), then its values as the cells of that row."""
        if not isinstance(record, Mapping):
            self.add(
                row,
                None,
                "a mapping of column names to values",
                f"{type(record).__name__} {show(record)}",
            )
            return
        keys = list(record)
        if keys != self.keys:  # the keys of the mapping before, read clean, are not read again
            self.columns, self.blank, self.width, self.written = {}, set(), 0, {}
            before = len(self.problems)
            self.read_header(dict(enumerate(keys, 1)), row)
            self.keys = keys if len(self.problems) == before else None
        self.written_by_row[row] = self.written
        if self.keys is not None:
            self.read_row(row, [python_number(record[key]) for key in keys])

    def _ref_of(self, column: str, row: int) -> str | None:
        return next((self.cell_ref(c, row) for c, n in self.columns.items() if n == column), None)

    def finish(self) -> list[Config]:
        self._flush()
        for col, row in sorted(self.orphans.items()):
            self.add(
                self.header_row,
                None,
                f"a column name for {self.position(col)}, which has data below it",
                f"a blank header cell (data from {self.row_word} {row})",
                self.cell_ref(col, self.header_row),
            )
        if not self.problems and not self.configs:
            self.add(None, None, "at least one configuration row below the header", "no rows")
        if self.problems:  # in the order of the rows, a file's problems first
            raise InputError(sorted(self.problems, key=lambda p: p.row or 0))
        return self.configs
