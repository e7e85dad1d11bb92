"""Framework conventions as data: ``ledger_report/data/conventions.csv``, a row per field (one
thing that differs between frameworks, with its meaning), a column per convention.

The definitions read a convention's fields through the ``convention`` lookup table (like the dtype
and optimizer tables), so the workbook carries them on a lookup sheet and its formulas follow a
changed field.  Adding a convention is adding a column to the file (and its tests); no definition,
reporter or validation names a framework.  A convention's empty cell is the generic convention's
value (ZeRO as the paper describes it): each other convention writes only the fields that differ.
A cell is read as an integer, else a number, else text; the time fields' sources are cited where
a definition reads them (definitions/time.py).
"""

from __future__ import annotations

import contextlib
from typing import Any

from .. import data

MIB = 2**20

# The constants of the memory model whose value is chosen from measured peaks (each a field of every
# convention): tests/support/measured.py refits them on tests/data/measured_runs.csv, in sample and
# leaving each source out, and bench/bench_fidelity.py prints both.  Everything else in the table
# is read from a framework's code.
FITTED_CONSTANTS = ("reserved_fraction", "reserved_fraction_expandable")


def _value(text: str) -> Any:
    for kind in (int, float):
        with contextlib.suppress(ValueError):
            return kind(text)
    return text


def _read() -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Each convention's fields, in the file's order, and each field's meaning."""
    rows = data.rows("conventions.csv")
    names = [n for n in rows[0] if n not in ("field", "meaning")]
    generic = {r["field"]: _value(r[names[0]]) for r in rows}
    conventions = {
        n: {r["field"]: _value(r[n]) if r[n] else generic[r["field"]] for r in rows} for n in names
    }
    return conventions, {r["field"]: r["meaning"] for r in rows}


CONVENTIONS, MEANINGS = _read()


def convention_names() -> tuple[str, ...]:
    return tuple(CONVENTIONS)
