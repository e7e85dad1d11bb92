"""Rows and columns into ``Config`` objects: the header, each row's cells, the model fill-in,
the row rules (the registry's constraints), and the problems, as one table shared by the CSV
reader, the XLSX reader and mappings."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, NoReturn, Sequence

from ..config import COLUMN_BY_NAME, MODEL_COLUMN, NAME_COLUMN, Config
from ..errors import InputError, Problem
from .cells import CELLS, Bad, cell, gpu_hint, is_blank, letter, norm, sheet_ref, show
from .fill import Models
from .names import column_of, hint

CHECK_BATCH_ROWS = 4096  # rows checked against the model's constraints at once
MAX_ROWS = 100_000  # configuration rows per file
MAX_COLUMNS = 16_384  # Excel's last column, XFD: the widest header every output can hold
MAX_UNKNOWN_LISTED = 10  # unknown header names listed by name (the rest counted)


def fail(
    label: str, expected: str, found: str, row: int | None = None, row_label: str = "row"
) -> NoReturn:
    raise InputError(Problem(label, row, None, expected, found, row_label=row_label))


def name_key(name: str) -> str:
    """A name as the reader compares names (unique in a file)."""
    return norm(name).casefold()


def _columns(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """The rows' values a column at a time (``None`` where a row has none), from the cells each
    row has (a few dozen of the schema's columns)."""
    out: dict[str, list[Any]] = {}
    nothing = [None] * len(rows)
    for i, row in enumerate(rows):
        for name, value in row.items():
            column = out.get(name)
            if column is None:
                column = out[name] = nothing.copy()
            column[i] = value
    return out


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
        self.warned: dict[int, tuple[str, ...]] = {}  # row -> its warnings (model contradicted)
        self.blank: set[int] = set()  # header positions that are blank
        self.width = 0  # last non-blank header position
        self.header_row = 1
        self.orphans: dict[int, int] = {}  # position with data but no header -> first row
        self.names: dict[str, int] = {}  # normalised name -> first row
        self.configs: list[Config] = []
        self.rows_seen = 0
        # rows read, not yet checked against the model: (row, values, bad, clean, origins)
        self.pending: list[tuple[int, dict[str, Any], set[str], bool, dict[str, str]]] = []
        self._slots_of: dict[int, str] | None = None  # the columns ``_slots_list`` was made for
        self._slots_list: list[tuple[int, str, dict[str, Any] | None]] = []

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
        if self.sheet is None:
            return None
        return f"{sheet_ref(self.sheet)}!{letter(col)}{row}"

    def position(self, col: int) -> str:
        if self.sheet is None:
            return f"field {col} ({letter(col)})"
        return f"column {letter(col)}"

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
    def too_wide(self, width: int, row: int) -> bool:
        """A header wider than a sheet can be is refused before its names are read."""
        if width <= MAX_COLUMNS:
            return False
        self.add(
            row,
            None,
            f"at most {MAX_COLUMNS:,} columns (a spreadsheet's width)",
            f"{width:,} fields in the header",
        )
        return True

    def read_header(self, cells: dict[int, Any], row: int) -> None:
        self.header_row = row
        if self.too_wide(len(cells), row):
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
    def read_row(self, row: int, cells: dict[int, Any]) -> None:
        """One non-blank data row: ``cells`` maps 1-based positions to raw values."""
        values: dict[str, Any] = {}
        bad: set[str] = set()
        before = len(self.problems)
        for col, name, seen in self._slots():
            raw = cells.get(col)
            if raw is None or raw == "":
                continue
            if seen is not None and type(raw) is str:  # a text converted before: its value
                hit = seen.get(raw, seen)
                if hit is not seen:
                    values[name] = hit
                    continue
            if isinstance(raw, str) and not raw.strip():  # blank
                continue
            try:
                values[name] = cell(COLUMN_BY_NAME[name], raw)
            except Bad as exc:
                self.add(row, name, exc.expected, exc.found, self.cell_ref(col, row))
                bad.add(name)
        if len(cells) > len(self.columns):  # positions that are no column
            for col in cells.keys() - self.columns.keys():
                if not is_blank(cells[col]) and (col in self.blank or col > self.width):
                    self.orphans.setdefault(col, row)
                # unknown or duplicate columns are reported once, on the header
        self._check_name(row, values, bad)
        origins = self._fill(row, values, bad)
        self.pending.append((row, values, bad, len(self.problems) == before, origins))
        if len(self.pending) >= CHECK_BATCH_ROWS:
            self._flush()

    def _slots(self) -> list[tuple[int, str, dict[str, Any] | None]]:
        """The header's columns in the order of their positions: (position, column, the memo of
        its converted texts), made again when the header changes (each mapping has its own)."""
        if self._slots_of is not self.columns:
            self._slots_of = self.columns
            self._slots_list = [(c, n, CELLS[n]) for c, n in sorted(self.columns.items())]
        return self._slots_list

    def _check_name(self, row: int, values: dict[str, Any], bad: set[str]) -> None:
        """Every row named, each name once in the file."""
        name_value = values.get(NAME_COLUMN)
        if name_value is None or not name_value.strip():
            if NAME_COLUMN not in bad:
                self.add(
                    row,
                    NAME_COLUMN,
                    "a name (required, unique in the file)",
                    "an empty cell",
                    self._ref_of(NAME_COLUMN, row),
                )
            values.pop(NAME_COLUMN, None)
            bad.add(NAME_COLUMN)
            return
        first = self.names.setdefault(name_key(name_value), row)
        if first != row:
            self.add(
                row,
                NAME_COLUMN,
                "a name unique in the file",
                f"{show(name_value)} again (first at {self.row_word} {first})",
                self._ref_of(NAME_COLUMN, row),
            )

    def _fill(self, row: int, values: dict[str, Any], bad: set[str]) -> dict[str, str]:
        """The columns the row's model fills, and where each came from: those the row leaves
        empty (any column the row gives, even one it gives badly, wins)."""
        origins: dict[str, str] = {}
        if values.get(MODEL_COLUMN) is None:
            return origins
        try:
            filled, origin = self.models.columns(values[MODEL_COLUMN])
        except Bad as exc:
            self.add(row, MODEL_COLUMN, exc.expected, exc.found, self._ref_of(MODEL_COLUMN, row))
            # the columns it would have filled are unknown: no rule is checked on them
            bad.update(c for c in COLUMN_BY_NAME if values.get(c) is None)
            bad.add(MODEL_COLUMN)
        else:
            for column, value in filled.items():
                if column not in values and column not in bad:
                    values[column] = value
                    origins[column] = origin
            self._contradictions(row, values, filled, origin)
        return origins

    def _contradictions(
        self, row: int, values: Mapping[str, Any], filled: Mapping[str, Any], origin: str
    ) -> None:
        """A warning for each column the row gives with another value than its model's (the
        row's wins): a stale architecture beside a changed model is the usual cause."""
        warned = [
            f"{self._name(column)}: expected {show(model_value)}, as {origin} has it; found"
            f" {show(values[column])} (the row's value is used: a model changed without its"
            " architecture columns, or a deliberate variant)"
            for column, model_value in filled.items()
            if column in values and model_value is not None and values[column] != model_value
        ]
        if warned:
            self.warned[row] = tuple(warned)

    def _name(self, column: str) -> str:
        written = self.written.get(column)
        return f"{written} ({column})" if written else column

    def _flush(self) -> None:
        """Check the pending rows against the model's constraints (the same rules the workbook's
        check cells and the planner apply), then keep the good ones."""
        from ..model.checks import failures
        from ..model.definitions import REGISTRY
        from ..model.tables import tables

        pending, self.pending = self.pending, []
        if not pending:
            return
        rows = [v for _r, v, *_rest in pending]
        bad = [b for _r, _v, b, *_rest in pending]
        broken: set[int] = set()
        for f in failures(REGISTRY, tables(), rows, bad, columns=_columns(rows)):
            row, values, _bad, _clean, origins = pending[f.index]
            rule, found = f.constraint.column, f.found
            column = _blamed(f.constraint, f.expected + found, values, origins)
            col = COLUMN_BY_NAME.get(rule)
            if col is not None and col.catalogue == "gpus":
                found += gpu_hint(str(values.get(rule, "")))
            if rule in origins:
                found += f" ({rule} from {origins[rule]})"
            self.add(row, column, f.expected, found, self._ref_of(column, row))
            broken.add(row)
        for row, values, _bad, clean, origins in pending:
            if clean and row not in broken:
                warned = self.warned.pop(row, ())
                source = f"{self.place} {self.row_word} {row}"
                self.configs.append(Config(values, source, origins, warned))

    def read_record(self, row: int, record: Any) -> None:
        """One mapping: its keys read as a header (the same names and messages as a file's
        column names), then its values as the cells of that row."""
        from .cells import python_number

        if not isinstance(record, Mapping):
            self.add(
                row,
                None,
                "a mapping of column names to values",
                f"{type(record).__name__} {show(record)}",
            )
            return
        keys = list(record)
        self.columns, self.blank, self.width, self.written = {}, set(), 0, {}
        before = len(self.problems)
        self.read_header(dict(enumerate(keys, 1)), row)
        self.written_by_row[row] = self.written
        if len(self.problems) == before:
            self.read_row(row, {col: python_number(record[key]) for col, key in enumerate(keys, 1)})

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
