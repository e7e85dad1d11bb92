"""One base error; input errors carry file, row, column, expected and found.

Errors are values until the CLI edge, which turns any ``LedgerError`` into a message and exit
status 1 (``cli.py``).  "Does not fit in HBM" is a finding on the ledger, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass


class LedgerError(Exception):
    """Base class of every error the tool reports to a user (exit status 1)."""


MAX_FOUND_SHOWN = 500  # characters of what was found that a message prints


@dataclass
class Problem:
    """One bad cell or row.  ``row`` is the row number the user sees (spreadsheet row or CSV line)."""

    file: str
    row: int | None
    column: str | None
    expected: str
    found: str
    cell: str | None = None  # e.g. "Inputs!C5" for a workbook
    row_label: str = "row"  # "line" for CSV, whose rows are physical line numbers
    written: str | None = None  # the column's name as the header wrote it, where another

    def __str__(self) -> str:
        where = [self.file]
        if self.cell:
            where.append(self.cell)
        if self.row is not None:
            where.append(f"{self.row_label} {self.row}")
        if self.column and self.written:
            where.append(f'column "{self.written}" ({self.column})')
        elif self.column:
            where.append(f'column "{self.column}"')
        found = self.found
        if len(found) > MAX_FOUND_SHOWN:  # a 5,000-character cell is not read back in full
            found = f"{found[: MAX_FOUND_SHOWN - 40]}… ({len(found):,} characters)"
        return f"{', '.join(where)}: expected {self.expected}; found {found}"


def row_problem(source: str, column: str | None, expected: str, found: str) -> Problem:
    """A problem with one row, given the row's source ("x.csv line 4", "x.xlsx Inputs row 4",
    "mapping"): its file, row number and row word apart, so that it reads as the reader's own
    problems do ("x.csv, line 4, column ...")."""
    head, _, number = source.rpartition(" ")
    place, _, word = head.rpartition(" ")
    if place and number.isdigit() and word in ("line", "row"):
        return Problem(place, int(number), column, expected, found, row_label=word)
    return Problem(source, None, column, expected, found)


class InputError(LedgerError):
    """Bad input: one or more problems, each naming file, row, column, expectation and finding."""

    MAX_LISTED = 50

    def __init__(self, problems: list[Problem] | Problem):
        if isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(problems)
        lines = [str(p) for p in self.problems[: self.MAX_LISTED]]
        more = len(self.problems) - self.MAX_LISTED
        if more > 0:
            lines.append(f"... and {more} more")
        super().__init__("\n".join(lines))

    def __reduce__(self):  # pickled with its problems (a worker process sends it whole)
        return type(self), (self.problems,)


class OutputError(LedgerError):
    """An output could not be written (the earlier file, if any, is left as it was)."""
