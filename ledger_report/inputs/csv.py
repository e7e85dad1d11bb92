"""CSV files: bytes decoded (UTF-8, GB18030, UTF-16 by its byte-order mark), the delimiter
sniffed, and each record handed to the table with its physical line number.

Parsed with the standard library and a per-row field count, never with pandas, so an unquoted
``1,024`` is an error instead of a silent column shift, and a model named ``NA`` stays the text
``NA``."""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

from ..config import Config
from .cells import show
from .files import fail, open_regular, unreadable
from .tables import Table

MAX_CSV_BYTES = 200 * 2**20  # size of a CSV file
CSV_SUFFIXES = (".csv", ".tsv", ".txt")
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
_ENCODINGS = "text in UTF-8 (or GBK/GB18030, or UTF-16 with a byte-order mark)"


def decode(data: bytes, label: str) -> str:
    """Strict UTF-8 (BOM optional), else GB18030 (a superset of GBK); UTF-16 by its BOM."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            fail(
                label,
                "valid UTF-16 text (the file starts with a UTF-16 byte-order mark)",
                f"bytes that are not UTF-16 at byte offset {exc.start:,}",
                data.count(b"\n", 0, exc.start) + 1,
                "line",
            )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as utf8_error:
        _refuse_mixed(data, utf8_error, label)
        try:
            text = data.decode("gb18030")
        except UnicodeDecodeError as gb_error:
            where = max(utf8_error.start, gb_error.start)
            fail(
                label,
                f"{_ENCODINGS}; save the file as 'CSV UTF-8'",
                f"bytes {data[where : where + 4]!r} that are not text in any of these"
                f" at byte offset {where:,}",
                data.count(b"\n", 0, where) + 1,
                "line",
            )
    head = text[:4096]
    if head.count("\x00") > len(head) // 4:
        fail(
            label,
            f"{_ENCODINGS}; save the file as 'CSV UTF-8'",
            "NUL bytes between the characters: UTF-16 without a byte-order mark",
            1,
            "line",
        )
    return text


def _refuse_mixed(data: bytes, error: UnicodeDecodeError, label: str) -> None:
    """A file that is not UTF-8 is read as GB18030 only where no line of it is UTF-8 beyond
    ASCII: a UTF-8 file with one row saved in GBK would otherwise be decoded whole as GB18030,
    garbling every UTF-8 row (UTF-8 bytes of Chinese are valid GB18030 too)."""
    for utf8_line, line in enumerate(data.split(b"\n"), 1):
        if line.isascii():
            continue
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            continue
        break
    else:
        return  # no line is UTF-8 beyond ASCII
    fail(
        label,
        f"one encoding for the whole file (line {utf8_line} is UTF-8); save the file as 'CSV UTF-8'",
        f"bytes {data[error.start : error.start + 4]!r} that are not UTF-8 at byte offset"
        f" {error.start:,} (another encoding, such as GBK, in one part of the file)",
        data.count(b"\n", 0, error.start) + 1,
        "line",
    )


_SEP_HINT = re.compile(r"\ufeff?sep=([,;\t])[ \t]*\r?\n", re.IGNORECASE)


def _sniff(text: str) -> tuple[str, str]:
    """Comma, semicolon or tab: the one a first line ``sep=;`` names (Excel's hint, which Excel
    reads and some exports write; left as a blank line, so the lines keep their numbers), else
    the one that splits the first non-blank record into the most fields; and the text."""
    hint = _SEP_HINT.match(text)
    if hint:
        return hint.group(1), "\n" + text[hint.end() :]
    sample = text[: 64 * 1024]

    def count(delim: str) -> int:  # the non-blank fields of the first record that has some
        try:
            records = csv.reader(io.StringIO(sample, newline=""), delimiter=delim)
            return next((n for r in records if (n := sum(1 for f in r if f.strip()))), 0)
        except csv.Error:
            return 0

    return max(_DELIMITER_NAMES, key=count), text  # (a tie: the first, comma before the others)


def _read_bytes(path: Path, label: str) -> bytes:
    with open_regular(path, label) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            if size <= MAX_CSV_BYTES:
                data = fh.read(MAX_CSV_BYTES + 1)  # bounded, however the file grows meanwhile
                size = len(data)
        except OSError as exc:
            unreadable(label, exc)
    if size > MAX_CSV_BYTES:
        fail(label, f"a CSV file of at most {MAX_CSV_BYTES // 2**20} MiB", f"{size:,} bytes")
    if not data.strip():
        fail(label, "a header row and configuration rows", "an empty file")
    if data.startswith(b"PK\x03\x04"):
        fail(
            label,
            "CSV text",
            "a zip archive (an .xlsx workbook renamed .csv?); give it the .xlsx extension",
        )
    if data.startswith(OLE_MAGIC):
        fail(
            label,
            "CSV text",
            "an OLE compound file (an Excel .xls or password-protected workbook); save it as CSV"
            " UTF-8",
        )
    return data


def read_csv(path: Path, label: str, lines: range | None = None) -> list[Config]:
    """The file's configuration rows (``lines``: only the records that begin on those physical
    lines, the header read wherever it is)."""
    text = decode(_read_bytes(path, label), label)
    delimiter, text = _sniff(text)
    table = Table(label, None, folder=path.parent)
    # strict: a quote left open to the end of the file is an error, not one giant last field
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    previous_line = 0
    header_done = False
    try:
        for fields in reader:
            start = previous_line + 1  # the physical line where this record begins
            previous_line = reader.line_num
            if not (fields and fields[0].strip()) and not "".join(fields).strip():
                continue  # no field but blanks
            if not header_done:
                table.read_header({i + 1: f for i, f in enumerate(fields)}, start)
                header_done = True
                if table.problems:
                    break
                continue
            if lines is not None and start not in lines:
                if start >= lines.stop:
                    break
                continue
            if table.over_row_bound(start, "file"):
                break
            _read_record(table, start, fields, delimiter)
    except csv.Error as exc:
        table.add(
            previous_line + 1,
            None,
            f"well-formed CSV (quotes closed, fields separated by {_DELIMITER_NAMES[delimiter]}s)",
            f"{exc}",
        )
    return table.finish()


def _read_record(table: Table, start: int, fields: list[str], delimiter: str) -> None:
    """One data record: as many fields as the header (blank ones after them dropped).  More is a
    problem, and fewer: a short row is how an unquoted "1,024" hides when the row has spare
    columns, the fields silently shifted left; every row spells out each column."""
    width = table.width
    if len(fields) == width or (len(fields) > width and not any(f.strip() for f in fields[width:])):
        table.read_row(start, fields if len(fields) == width else fields[:width])
    elif len(fields) > width:
        last = max(i for i, f in enumerate(fields, 1) if f.strip())
        table.add(
            start,
            None,
            f"at most {width} fields, like the header — a number with a comma must be"
            ' quoted ("1,024") or written 1024',
            f"{last} fields: " + show(delimiter.join(fields)),
        )
    else:
        table.add(
            start,
            None,
            f"{width} fields, like the header (an empty cell is an empty field: a,,b)",
            f"{len(fields)} fields: " + show(delimiter.join(fields)),
        )
