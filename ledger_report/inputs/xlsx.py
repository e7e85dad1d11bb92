"""XLSX workbooks: the zip container checked before any XML is parsed, then the sheet streamed.

* The container is checked with ``zipfile``'s listing (entry count, declared sizes, compression
  ratio, encryption; OLE / truncated files), and openpyxl must be running on defusedxml, which
  refuses any XML entity declaration in any part it parses.
* Only public APIs of openpyxl, defusedxml and zipfile are used.  The sheet is streamed once
  (``_read_sheet``), its ``<dimension>`` tag never trusted.
* Formula cells use their saved value (``_Formulas``); without one, and for error cells and
  dates in number columns, the cell is named in an error.
"""

from __future__ import annotations

import posixpath
import re
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Any, Iterator, NoReturn

from ..config import Config
from ..errors import InputError, Problem
from .cells import ExcelError, NoCache, is_blank, letter, sheet_ref, show
from .csv import OLE_MAGIC
from .files import fail, open_regular
from .tables import Table

XLSX_SUFFIXES = (".xlsx", ".xlsm")
# a spreadsheet program's other files: refused, with the way to save them as .xlsx or .csv
OTHER_WORKBOOK_SUFFIXES = (".xls", ".xlsb", ".ods", ".numbers")
MAX_ZIP_ENTRIES = 1000  # Apache POI ZipSecureFile.MAX_FILE_COUNT
MAX_ENTRY_BYTES = 200 * 2**20  # declared uncompressed size of one zip entry
MAX_TOTAL_BYTES = 1 * 2**30  # declared uncompressed size of all entries together
MAX_RATIO = 100  # uncompressed : compressed (POI MIN_INFLATE_RATIO = 0.01)
# entries up to this size are exempt from the ratio (POI GRACE_ENTRY_SIZE)
RATIO_GRACE_BYTES = 100 * 2**10
MAX_SHEET_ROWS = 1_048_576  # Excel's last row: empty rows up to a huge row number are not walked
# cells of all rows, each from column A to its last cell (padding included)
MAX_SHEET_CELLS = 20_000_000


_EXPECTED = "an .xlsx workbook saved by Excel or LibreOffice"

# ---------------------------------------------------------------------------------------------
# XLSX: the zip container


def _check_zip(fh: Any, label: str) -> None:
    """Check the container before any XML is parsed (``zipfile``'s own directory listing)."""
    head = fh.read(8)
    fh.seek(0)
    if not head:
        fail(label, _EXPECTED, "an empty file")
    if head.startswith(OLE_MAGIC):
        fail(
            label,
            _EXPECTED,
            "an OLE compound file, i.e. a password-protected workbook or a legacy .xls; remove the password or save it as .xlsx",
        )
    if not head.startswith(b"PK"):
        sample = fh.read(4096)
        fh.seek(0)
        try:
            sample.decode("utf-8")
            looks_text = b"\x00" not in sample
        except UnicodeDecodeError:
            looks_text = False
        if looks_text:
            fail(label, _EXPECTED, "plain text (a CSV renamed .xlsx?); give it the .csv extension")
        fail(label, _EXPECTED, "a file that is not a zip archive, so not an .xlsx")
    # zipfile reads the central directory by its recorded size, not by the entry count the end
    # record claims, so a lying count costs nothing; the real directory is bounded by the file.
    try:
        with zipfile.ZipFile(fh) as zf:
            infos = zf.infolist()
    except Exception as exc:  # noqa: BLE001 - BadZipFile, struct/Unicode errors: all a broken zip
        fail(
            label, _EXPECTED, f"a corrupt or truncated zip archive ({exc}); save the workbook again"
        )
    finally:
        fh.seek(0)
    if len(infos) > MAX_ZIP_ENTRIES:
        fail(
            label,
            f"a workbook of at most {MAX_ZIP_ENTRIES:,} zip entries",
            f"{len(infos):,} entries",
        )
    total = 0
    for info in infos:
        size, packed = info.file_size, info.compress_size
        if info.flag_bits & 0x1:
            fail(
                label,
                "an unencrypted workbook",
                f"the encrypted zip entry {info.filename!r}; remove the password",
            )
        if size > MAX_ENTRY_BYTES:
            fail(
                label,
                f"each part of the workbook at most {MAX_ENTRY_BYTES:,} bytes uncompressed",
                f"entry {info.filename!r} declaring {size:,} bytes ({packed:,} compressed); refusing to read",
            )
        if size > RATIO_GRACE_BYTES and size > MAX_RATIO * packed:
            ratio = f"{size / packed:,.0f}:1" if packed else "unbounded"
            fail(
                label,
                f"a compression ratio of at most {MAX_RATIO}:1 for parts over {RATIO_GRACE_BYTES // 1024} KiB",
                f"entry {info.filename!r}: {size:,} bytes from {packed:,} compressed (ratio {ratio}, a zip bomb?); refusing to read",
            )
        total += size
    if total > MAX_TOTAL_BYTES:
        fail(
            label,
            f"a workbook of at most {MAX_TOTAL_BYTES:,} bytes uncompressed",
            f"{total:,} bytes declared",
        )
    if "[Content_Types].xml" not in {info.filename for info in infos}:
        fail(
            label,
            _EXPECTED,
            "a zip archive without [Content_Types].xml (not an Office Open XML file)",
        )


def _fail_workbook(label: str, exc: BaseException) -> NoReturn:
    """Turn anything openpyxl / zipfile / the XML parser raised into one sentence.

    openpyxl parses every part with defusedxml, which refuses any entity declaration
    (``EntitiesForbidden``, a ``DefusedXmlException``) before anything is expanded or fetched."""
    from defusedxml import DefusedXmlException

    seen: set[int] = set()
    err: BaseException | None = exc
    while err is not None and id(err) not in seen:  # the exception and its causes
        seen.add(id(err))
        text = str(err).lower()
        if isinstance(err, DefusedXmlException) or (
            isinstance(err, SyntaxError) and ("entit" in text or "amplification" in text)
        ):
            fail(
                label,
                "a workbook without XML entity declarations",
                "workbook contains XML entity declarations; refusing to read",
            )
        if isinstance(err, (zipfile.BadZipFile, zlib.error)):
            what = "CRC mismatch" if "crc" in text else str(err)
            fail(label, _EXPECTED, f"a corrupt workbook ({what}); save it again from Excel")
        if isinstance(err, MemoryError):
            fail(label, _EXPECTED, "a workbook too large to read")
        err = err.__cause__ or err.__context__
    first = str(exc).splitlines()[0][:200] if str(exc) else ""
    fail(
        label,
        _EXPECTED,
        f"a workbook that could not be read ({type(exc).__name__}: {first}); open it in Excel and save it again",
    )


# ---------------------------------------------------------------------------------------------
# XLSX: the sheet


def _load(fh: Any, data_only: bool) -> Any:
    import openpyxl

    fh.seek(0)
    return openpyxl.load_workbook(fh, read_only=True, data_only=data_only, keep_links=False)


def _pick_sheet(wb: Any, label: str) -> Any:
    """The visible sheet named Inputs (any case), else the first visible sheet."""
    sheets = wb.worksheets  # chartsheets are not listed
    visible = [ws for ws in sheets if ws.sheet_state in (None, "visible")]
    if not visible:
        fail(label, "a visible worksheet", "only hidden sheets" if sheets else "no worksheets")
    return next((ws for ws in visible if ws.title.strip().casefold() == "inputs"), visible[0])


def read_xlsx(path: Path, label: str) -> list[Config]:
    with open_regular(path, label) as fh:
        _check_zip(fh, label)
        import openpyxl

        if not openpyxl.DEFUSEDXML:
            fail(
                label,
                "openpyxl running on defusedxml (is OPENPYXL_DEFUSEDXML set to False?)",
                "defusedxml inactive; refusing to read workbooks",
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # openpyxl warns about extensions it drops
            wb = formulas = ws = None
            try:
                wb = _load(fh, data_only=True)
                ws = _pick_sheet(wb, label)
                part = _Part(fh, ws.title, label)
                formulas = _Formulas(fh, ws.title)
                return _read_sheet(ws, label, formulas, part, path.parent)
            except InputError as err:
                if ws is None or ws.title.strip().casefold() == "inputs":
                    raise
                # rows read from the first sheet: every message says which sheet it was
                where = f"{label} (sheet {ws.title!r}: no sheet is named Inputs)"
                for p in err.problems:
                    if p.file == label:
                        p.file = where
                raise InputError(err.problems) from None
            except Exception as exc:  # noqa: BLE001 - any failure inside openpyxl is a bad file
                _fail_workbook(label, exc)
            finally:
                if formulas is not None:
                    formulas.close()
                if wb is not None:
                    wb.close()


class _Formulas:
    """Which empty-reading cells are formulas with no saved result.

    The sheet is read with ``data_only=True``: a formula cell gives its saved result, as Excel
    shows it.  A formula with no saved result reads as an empty cell there, so for a cell that
    reads empty this looks it up in the same sheet read with ``data_only=False`` (the formula
    text).  That reader is opened at the first such cell only, and only when the sheet's XML
    holds a formula element at all; it then walks behind the main read (both readers yield the
    same sequence of rows from the same XML)."""

    def __init__(self, fh: Any, title: str):
        self.fh = fh
        self.title = title
        self.wb: Any = None
        self.rows: Iterator[tuple[Any, ...]] = iter(())
        self.index = 0
        self.row: tuple[Any, ...] = ()

    def text(self, row: int, col: int) -> str | None:
        """The formula in the cell, or None when it holds none."""
        if self.wb is None:
            self.wb = _load(self.fh, data_only=False)
            ws = self.wb[self.title]
            ws.reset_dimensions()
            self.rows = ws.iter_rows()
        while self.index < row:
            self.row = next(self.rows, ())
            self.index += 1
        cell = self.row[col - 1] if col <= len(self.row) else None
        if cell is None or cell.data_type != "f":
            return None
        formula = cell.value  # "=B2*2", or an ArrayFormula / DataTableFormula object
        return str(getattr(formula, "text", formula))

    def close(self) -> None:
        if self.wb is not None:
            self.wb.close()


def _read_sheet(
    ws: Any, label: str, formulas: _Formulas, part: "_Part", folder: Path
) -> list[Config]:
    """Stream the sheet once (``iter_rows`` after ``reset_dimensions``: an understated
    ``<dimension>`` cannot hide rows, nor an overstated one pad rows to 16,384 cells): header in
    row 1, then rows, bounded by ``MAX_ROWS``; empty rows and padding by ``MAX_SHEET_ROWS`` and
    ``MAX_SHEET_CELLS``."""
    from openpyxl.cell.read_only import EMPTY_CELL  # the filler iter_rows pads a row with

    title = ws.title
    table = Table(label, title, folder=folder)
    header = f"column names in row 1 of the sheet {show(title)}"
    last_row = max_col = cells_seen = 0
    header_done = False
    ws.reset_dimensions()
    for row, cells in enumerate(ws.iter_rows(), 1):
        if row > MAX_SHEET_ROWS:
            table.add(
                row,
                None,
                f"at most {MAX_SHEET_ROWS:,} rows (Excel's last row)",
                "a row numbered beyond it; save the workbook again from Excel",
            )
            break
        if not cells:
            continue
        cells_seen += len(cells)
        if cells_seen > MAX_SHEET_CELLS:
            table.add(
                row,
                None,
                f"rows spanning at most {MAX_SHEET_CELLS:,} cells in all (each row from column A to its last cell, "
                "an empty formatted one too)",
                f"more with this row, which ends at column {letter(len(cells))}; delete the unused columns on the right",
            )
            break
        raw: list[Any] = []
        for col, cell in enumerate(cells, 1):
            value = cell.value
            if value is None:
                # t="str" with an empty <v> is a saved "" result: an empty cell
                if part.formulas and cell is not EMPTY_CELL and cell.data_type != "str":
                    text = formulas.text(row, col)
                    if text is not None:
                        value = NoCache(text, f"{letter(col)}{row}")
            elif cell.data_type == "e":
                value = ExcelError(str(value), f"{letter(col)}{row}")
            raw.append(value)
        if all(is_blank(v) for v in raw):
            continue
        last_row = row
        max_col = max(max_col, max(c for c, v in enumerate(raw, 1) if v is not None))
        if not header_done:
            header_done = True
            if row != 1:
                table.add(1, None, header, f"an empty row 1 (the first row with data is row {row})")
                break
            table.read_header({c: v for c, v in enumerate(raw, 1) if v is not None}, 1)
            if table.problems:
                break
            continue
        if table.over_row_bound(row, "workbook"):
            break
        table.read_row(row, raw)
    else:
        # <mergeCells> follows <sheetData>, so merges are looked for only now; they explain any
        # other problem in their rows (a merged name reads as empty), so they are reported alone.
        merged = _merged_problems(table, title, part.merged_refs(), last_row, max_col)
        if merged:
            raise InputError(merged)
    if not header_done:
        table.add(1, None, header, "an empty sheet")
    return table.finish()


# ---------------------------------------------------------------------------------------------
# XLSX: the sheet's own XML.  A read-only worksheet has no ``merged_cells`` and does not say
# which zip entry it is read from; so the entry is found through the package's relationships,
# its bytes scanned once for row numbers, formula and merge elements, and its <mergeCell>
# elements (when the scan finds some) read with defusedxml, all public APIs.  Loading the
# workbook in full instead, for ``merged_cells``, would hold every cell in memory.

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_MERGE_MARKS = tuple("mergeCell".encode(e) for e in ("utf-8", "utf-16-le", "utf-16-be"))
# A formula element, <f>, <f t="shared" .../>, <f/>, or with a namespace prefix (<x:f>).  Text
# cannot hide one (a "<" in text is escaped), so a part without these holds no formula.
_FORMULA_MARKS = (b"<f>", b"<f ", b"<f/", b":f>", b":f ", b":f/")
_SCAN_CHUNK = 1 << 20
_ROW_TAG = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?row[\s/>]")
_ROW_NUMBER = re.compile(rb"""\sr\s*=\s*["'](\d+)""")


def _local(tag: Any) -> str:
    return str(tag).rpartition("}")[2]


class _Part:
    """The zip entry holding one worksheet, read once in chunks: whether it holds formula and
    merge elements, and its rows numbered in increasing order, each once (openpyxl reads a row
    numbered at or below one already read as nothing, without a word).  ``name`` None where the
    package's relationships do not lead to it: formulas are then assumed present and merges
    are not looked for; in UTF-16 the byte patterns do not apply and both are assumed."""

    def __init__(self, fh: Any, title: str, label: str):
        self.fh = fh
        fh.seek(0)
        with zipfile.ZipFile(fh) as zf:
            try:
                part = _sheet_part(zf, title)
            except Exception:  # noqa: BLE001 - openpyxl found the sheet its own way; ours is a bonus
                part = None
            self.name = part if part in zf.namelist() else None
            self.formulas, self.merges = self.name is None, False
            if self.name is not None:
                with zf.open(self.name) as source:
                    self._scan(source, label, title)

    def _scan(self, source: Any, label: str, title: str) -> None:
        head = source.read(2)
        if head in _UTF16_BOMS or head[1:2] == b"\x00":
            self.formulas = self.merges = True
        tail, buffer, previous = head, b"", 0
        while chunk := source.read(_SCAN_CHUNK):
            window = tail + chunk  # a mark split between two chunks is whole in the window
            self.formulas = self.formulas or any(m in window for m in _FORMULA_MARKS)
            self.merges = self.merges or any(m in window for m in _MERGE_MARKS)
            tail = window[-31:]
            if head not in _UTF16_BOMS:
                buffer, previous = _rows_in_order(buffer + chunk, previous, label, title)

    def merged_refs(self) -> list[str]:
        """The ref of every <mergeCell> (most sheets have none: the scan found no mark)."""
        from defusedxml.ElementTree import iterparse

        if self.name is None or not self.merges:
            return []
        refs = []
        self.fh.seek(0)
        with zipfile.ZipFile(self.fh) as zf, zf.open(self.name) as source:
            for _event, element in iterparse(source):
                local = _local(element.tag)
                if local == "mergeCell":
                    refs.append(str(element.get("ref") or ""))
                elif local == "row":
                    element.clear()
        return refs


def _rows_in_order(buffer: bytes, previous: int, label: str, title: str) -> tuple[bytes, int]:
    """Check the r attribute of each whole <row> tag in ``buffer`` (none: the row after the one
    before); returns what may start a tag the next chunk completes, and the last row number."""
    done = 0  # bytes of the buffer read to the end of a tag
    for match in _ROW_TAG.finditer(buffer):
        end = buffer.find(b">", match.start())
        if end < 0:
            break  # the tag goes on in the next chunk
        found = _ROW_NUMBER.search(buffer, match.start(), end)
        number = int(found.group(1)) if found else previous + 1
        if number <= previous:
            fail(
                label,
                f"rows in increasing order in the sheet {show(title)}'s XML, each once"
                " (a workbook Excel or LibreOffice saved)",
                f"row {number} after row {previous}; open the workbook and save it again",
                row=number,
            )
        previous, done = number, end + 1
    start = buffer.rfind(b"<", done)
    return (buffer[start:] if start >= 0 else b""), previous


def _relationships(zf: zipfile.ZipFile, part: str) -> dict[str, tuple[str, str]]:
    """Id -> (type, target entry) of one part's relationships ('' is the package itself)."""
    from defusedxml.ElementTree import fromstring

    folder, name = posixpath.split(part)
    try:
        root = fromstring(zf.read(posixpath.join(folder, "_rels", name + ".rels")))
    except KeyError:
        return {}
    out = {}
    for rel in root:
        target = rel.get("Target") or ""
        if rel.get("TargetMode") == "External":
            continue
        full = posixpath.normpath(posixpath.join(folder, target)).lstrip("/")  # "/xl/..": absolute
        out[rel.get("Id") or ""] = (rel.get("Type") or "", full)
    return out


def _sheet_part(zf: zipfile.ZipFile, title: str) -> str | None:
    """The zip entry holding the worksheet ``title``, or None where the package does not say."""
    from defusedxml.ElementTree import fromstring

    books = [t for kind, t in _relationships(zf, "").values() if kind.endswith("/officeDocument")]
    if not books:
        return None
    book = books[0]
    rels = _relationships(zf, book)
    for element in fromstring(zf.read(book)).iter():
        if _local(element.tag) == "sheet" and element.get("name") == title:
            rid = next(
                (v for k, v in element.attrib.items() if k.startswith("{") and _local(k) == "id"),
                "",
            )
            return rels.get(rid, ("", None))[1]
    return None


def _merged_problems(
    table: Table, title: str, refs: list[str], last_row: int, max_col: int
) -> list[Problem]:
    from openpyxl.utils import range_boundaries

    problems = []
    for ref in refs:
        try:
            c1, r1, _c2, r2 = range_boundaries(ref)
        except (ValueError, TypeError):
            continue
        if r1 is None or r1 > max(last_row, 1) or (c1 or 1) > max(max_col, 1):
            continue  # outside the region holding data
        rows = f"{table.row_word}s {r1}–{r2}" if r2 != r1 else f"{table.row_word} {r1}"
        problems.append(
            Problem(
                table.label,
                r1,
                table.columns.get(c1 or 1),
                "one value per cell (unmerge the cells and fill each row)",
                f"merged cells {ref} ({rows})",
                f"{sheet_ref(title)}!{ref}",
            )
        )
    return problems
