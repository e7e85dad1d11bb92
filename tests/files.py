"""Input files the reader tests build in tmp_path (no binary fixtures are committed)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import openpyxl


def write_csv(tmp_path: Path, text: str, name: str = "inputs.csv", encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def write_xlsx(
    tmp_path: Path,
    rows: list[list],
    name: str = "inputs.xlsx",
    title: str = "Inputs",
    before: tuple[str, ...] = (),
    setup=None,
) -> Path:
    """A workbook whose sheet ``title`` holds ``rows``; sheets named in ``before`` come first;
    ``setup(ws)`` may change the sheet before it is saved."""
    wb = openpyxl.Workbook()
    first = wb.active
    sheets = list(before) + [title]
    first.title = sheets[0]
    for other in sheets[1:]:
        wb.create_sheet(other)
    ws = wb[title]
    for row in rows:
        ws.append(row)
    for other in before:
        wb[other]["A1"] = "not the inputs"
    if setup is not None:
        setup(ws)
    path = tmp_path / name
    wb.save(path)
    return path


def rewrite_entry(path: Path, entry: str, change) -> None:
    """Rewrite one part of a zip archive in place (``change`` maps bytes to bytes)."""
    with zipfile.ZipFile(path) as zin:
        parts = [(info.filename, zin.read(info.filename)) for info in zin.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for name, data in parts:
            zout.writestr(name, change(data) if name == entry else data)
