"""Reading and validating the input rows (the columns of docs/columns.md) from CSV, XLSX or
mappings.

``read_configs(path)`` returns one frozen ``Config`` per configuration row, or raises one
``InputError`` that lists every problem found (file, row as the user sees it, column, what was
expected, what was found).  No other exception escapes for any bad file: zip, XML, CSV and
Unicode failures are all turned into problems here.

The package, by layer: ``cells`` (one cell's text into its column's type), ``fill`` (a ``model``
cell's architecture into the row), ``tables`` (header, rows, the row rules, problems), ``csv``
(decoding and records), ``xlsx`` (zip checks and the streamed sheet).  Every rule about a
column is a field of its entry in ``config.COLUMNS``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from ..config import Config
from .csv import CSV_SUFFIXES, read_csv
from .files import fail
from .tables import Table, name_key
from .xlsx import OTHER_WORKBOOK_SUFFIXES, XLSX_SUFFIXES, read_xlsx

__all__ = [
    "read_configs",
    "config_from_mapping",
    "configs_from_records",
    "name_key",
]


def read_configs(path: str | Path, lines: range | None = None) -> list[Config]:
    """Read every configuration row of a .csv or .xlsx file (of a CSV file, with ``lines``, the
    rows that begin on those lines); raise ``InputError`` on any problem."""
    path = Path(path)
    label = path.name or str(path)
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except (OSError, ValueError) as exc:  # e.g. a NUL byte or an over-long name
        fail(label, "a path to a .csv or .xlsx file", f"an unusable path ({exc})")
    if not exists:
        fail(label, "an existing .csv or .xlsx file", "no such file")
    if is_dir:
        fail(label, "a .csv or .xlsx file", "a directory")
    suffix = path.suffix.lower()
    if suffix in CSV_SUFFIXES:
        return read_csv(path, label, lines)
    if suffix in XLSX_SUFFIXES:
        return read_xlsx(path, label)
    if suffix == ".xls":
        fail(
            label,
            "a .csv or .xlsx file",
            "a legacy .xls workbook; save it from Excel as .xlsx (Excel Workbook)",
        )
    if suffix in OTHER_WORKBOOK_SUFFIXES:
        fail(label, "a .csv or .xlsx file", f"a {suffix} file; save it as .xlsx or .csv")
    fail(label, "a file ending in .csv or .xlsx", f"the extension {suffix or '(none)'!r}")


def config_from_mapping(values: Mapping[str, Any], source: str = "mapping") -> Config:
    """One configuration from a mapping of column names to values, checked like a file row.

    Each value goes through the conversion a CSV or workbook cell gets (``"35B"``, ``8``,
    ``1e11``, ``"40%"``, ``"bf16"``...), then the same cross-column checks; ``None`` and ``""``
    are empty cells, and a key is read like a column name (unknown ones are refused).  Any
    problem raises the ``InputError`` a file would get, naming ``source``, row 1 and the column.
    The ``Config`` comes out with ``source`` "<source> row 1"."""
    return configs_from_records([values], source)[0]


def configs_from_records(
    records: Iterable[Mapping[str, Any]], source: str = "records"
) -> list[Config]:
    """Configurations from mappings, each checked like a file row (see ``config_from_mapping``);
    the n-th mapping is row n in messages and sources, and names are unique across them as in a
    file.  Every problem of every mapping is reported in one ``InputError``; no mappings, no
    configurations."""
    table = Table(source, None, keyed=True)
    n = 0
    for n, record in enumerate(records, 1):
        table.read_record(n, record)
    return table.finish() if n else []
