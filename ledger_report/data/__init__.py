"""The files packaged here (the column, alias, convention and catalogue tables, the topics of the
generated docs), read from a source tree or an installed wheel."""

from __future__ import annotations

import csv
import io
from importlib import resources


def text(name: str) -> str:
    """A file of this folder, as text."""
    return resources.files(__name__).joinpath(name).read_text("utf-8")


def rows(name: str) -> list[dict[str, str]]:
    """A CSV file of this folder: a mapping of its header's names for each row."""
    return list(csv.DictReader(io.StringIO(text(name))))
