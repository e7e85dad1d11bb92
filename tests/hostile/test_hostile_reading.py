"""The reading cases of the red-team pass (#27): each input either reads to a correct result or
is refused with a message naming file, row and column, within seconds; none reaches an output
that cannot hold it (so calc and build accept the same rows), none blocks or reads without end."""

from __future__ import annotations

import math
import os
import threading
import time

import pytest
from files import rewrite_entry, write_csv, write_xlsx

from ledger_report.engine import compute
from ledger_report.errors import InputError
from ledger_report.inputs import configs_from_records, read_configs, xlsx
from ledger_report.reconciler import read_run
from ledger_report.render.document import config_document

SHEET = "xl/worksheets/sheet1.xml"


def _error(path) -> InputError:
    with pytest.raises(InputError) as info:
        read_configs(path)
    return info.value


# --- numbers: every figure computed from a row stays finite ----------------------------------


@pytest.mark.parametrize(
    "column, text",
    [
        ("days", "1e308"),  # calc printed "late by inf days", build failed on the inf
        ("mfu", "5e-324"),
        ("peak_tflops", "1e308"),
        ("efficiency_scale", "1e-308"),
        ("layers", "100000000"),
    ],
)
def test_numbers_no_output_can_hold_are_refused_naming_row_and_column(tmp_path, column, text):
    path = write_csv(tmp_path, f"name,params_total,tokens,{column}\na,7B,1e12,{text}\n")
    (problem,) = _error(path).problems
    assert (problem.file, problem.row, problem.column) == ("inputs.csv", 2, column)
    assert text in problem.found


# A row at the far ends of what the reader accepts: whole numbers at their column's largest (or
# past any model), every float a quantity divides by at 10^-6 and every other at 10^12.
EXTREME = {
    "name": "far",
    "layers": 10_000,
    "hidden": 10**6,
    "heads": 1000,
    "ffn_hidden": 10**7,
    "vocab": 10**7,
    "tokens": 10**16,
    "seq_len": 10**6,
    "global_batch": 2**40,  # the reader's bound on micro-batches in a step
    "dp": 2**20,
    "days": 1e-6,
    "price_per_gpu_hour": 1e12,
    "mfu": 1e-6,
    "peak_tflops": 1e-6,
    "efficiency_scale": 1e-6,
    "hbm_gb": 1e-6,
}


def test_a_row_at_the_ends_of_the_accepted_ranges_computes_finite_figures():
    """Every figure of the ledger is finite and below 10^308 (a workbook cell's largest), and the
    JSON document holds no NaN or Infinity."""
    import json

    lg = compute(configs_from_records([EXTREME])[0])
    bad = [
        (k, v)
        for k, v in lg.values.items()
        if isinstance(v, (int, float))
        and not isinstance(v, bool)
        and not (math.isfinite(v) and abs(v) < 1e308)
    ]
    assert bad == []
    json.dumps(config_document(lg), allow_nan=False)


@pytest.mark.slow  # ~8 s: 150 rows through the whole ledger
def test_rows_with_columns_at_their_bounds_compute_finite_figures():
    """Rows of a Llama-3-8B-like model with three number columns each at one end of what the reader
    accepts (chosen by a seeded generator): whatever the reader accepts, every figure is finite
    and below 10^308."""
    import random

    from ledger_report.config import COLUMNS, COUNT, FLOAT, FLOAT_RANGE, INT

    rng = random.Random(27)
    numeric = [c for c in COLUMNS if c.kind in (FLOAT, INT, COUNT)]
    base = {
        "name": "b",
        "layers": 32,
        "hidden": 4096,
        "heads": 32,
        "ffn_hidden": 14336,
        "vocab": 128256,
        "tokens": "1e12",
        "days": 30,
        "price_per_gpu_hour": 2,
        "seq_len": 4096,
        "global_batch": 512,
    }
    computed = 0
    for _ in range(150):
        row = dict(base)
        for col in rng.sample(numeric, 3):
            if col.kind == FLOAT:
                row[col.name] = rng.choice([FLOAT_RANGE[0], min(col.maximum or 1e12, 1e12)])
            else:
                row[col.name] = rng.choice([max(col.minimum or 1, 1), col.maximum or 10**16])
        try:
            (config,) = configs_from_records([row])
        except InputError:
            continue
        computed += 1
        for key, v in compute(config).values.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                assert math.isfinite(v) and abs(v) < 1e308, (key, v, row)
    assert computed >= 25  # the rows the reader accepted, each checked


# --- text: once, against what every output stores ---------------------------------------------


@pytest.mark.parametrize(
    "column, value, said",
    [
        ("notes", "a\uffffb", "U+FFFF at position 2"),  # XML 1.0 has no U+FFFF: build failed
        ("notes", "\U0001f600" * 20_000, "40,000 characters as Excel counts them"),
        ("currency", "X" * 32_767, "at most 16 characters"),  # one PDF page took 67 s
        ("name", "n" * 1000, "at most 256 characters"),
    ],
)
def test_text_no_output_can_store_is_refused(column, value, said):
    with pytest.raises(InputError) as info:
        configs_from_records([{"name": "a", "params_total": "7B", column: value}])
    (problem,) = info.value.problems
    assert problem.column == column and problem.row == 1
    assert said in problem.expected + problem.found


def test_text_at_the_limits_is_read():
    """32,767 UTF-16 units is a cell's limit (16,383 emoji and one letter); a 3-letter currency."""
    note = "\U0001f600" * 16_383 + "x"
    (config,) = configs_from_records(
        [{"name": "a", "params_total": "7B", "notes": note, "currency": "CNY"}]
    )
    assert config.values["notes"] == note and config.values["currency"] == "CNY"


# --- files: regular files, read to a bound ----------------------------------------------------


def _within(seconds: float, work) -> object:
    """``work()``'s result or exception, run in a thread that must end within ``seconds``."""
    box: list = []

    def run():
        try:
            box.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still reading after {seconds} s"
    return box[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "inputs.csv"
    os.mkfifo(fifo)
    got = _within(10, lambda: read_configs(fifo))
    assert isinstance(got, InputError) and "a named pipe (FIFO)" in str(got)
    assert str(got).startswith("inputs.csv:")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_run_that_is_a_fifo_or_dev_zero_is_refused_without_reading(tmp_path):
    """reconcile's RUN files are opened as the inputs are: a FIFO blocked the open for good, and
    /dev/zero (one endless line) was read until memory ran out."""
    os.mkfifo(tmp_path / "run.jsonl")
    (tmp_path / "zero.log").symlink_to("/dev/zero")
    for name, what in (("run.jsonl", "a named pipe (FIFO)"), ("zero.log", "a character device")):
        got = _within(10, lambda: read_run(tmp_path / name))
        assert isinstance(got, InputError) and what in str(got)


@pytest.mark.parametrize("name", ["inputs.csv", "inputs.xlsx"])
@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_a_symlink_to_dev_zero_is_refused_before_a_byte_is_read(tmp_path, name):
    link = tmp_path / name
    link.symlink_to("/dev/zero")
    got = _within(10, lambda: read_configs(link))
    assert isinstance(got, InputError) and "a character device" in str(got)


def test_a_config_json_nested_2000_deep_or_with_a_5000_digit_number(tmp_path):
    """Python's JSON parser recurses past its limit at 2,000 levels and refuses integers over
    4,300 digits: both are a problem at the row's model cell, not an internal error."""
    (tmp_path / "deep.json").write_text('{"a": ' + "[" * 2000 + "]" * 2000 + "}")
    (tmp_path / "big.json").write_text(
        '{"model_type": "llama", "num_hidden_layers": ' + "9" * 5000 + "}"
    )
    path = write_csv(tmp_path, "name,model\na,deep.json\nb,big.json\n")
    problems = _error(path).problems
    assert [(p.row, p.column) for p in problems] == [(2, "model"), (3, "model")]
    assert "2,001 levels" in problems[0].found and "4,300 digits" in problems[1].expected
    # Python's own words, shortened at a word ("value has 5000 digits; use …"), not mid-word
    assert "value has 5000 digits;" in problems[1].found and " di (" not in problems[1].found


def test_a_header_of_a_million_unknown_columns_is_refused_at_once(tmp_path):
    """10^6 unknown names took 193 s and printed a 34 MB line: a header wider than a sheet
    (16,384 columns, Excel's XFD) is refused before its names are read."""
    n = 10**6
    path = write_csv(tmp_path, f"name,{','.join('x' * n)}\na,{','.join('1' * n)}\n")
    start = time.perf_counter()
    (problem,) = _error(path).problems
    assert time.perf_counter() - start < 10
    assert problem.row == 1 and "at most 16,384 columns" in problem.expected
    assert problem.found == "1,000,001 fields in the header"


def test_many_unknown_names_are_listed_to_ten_then_counted(tmp_path):
    n = 16_000
    header = ",".join(f"x{i}" for i in range(n))
    path = write_csv(tmp_path, f"name,{header}\na,{','.join('1' * n)}\n")
    message = str(_error(path))
    assert len(message) < 2_000 and f"and {n - 10:,} more" in message


# --- encodings: per file, honestly ------------------------------------------------------------


def test_a_utf8_file_with_one_gbk_row_names_the_first_line_that_breaks(tmp_path):
    """UTF-8 bytes of Chinese are valid GB18030 too: decoded whole as GB18030 the UTF-8 rows came
    out garbled.  A file with UTF-8 lines and one that is not is refused at that line."""
    data = (
        "name,params_total,notes\n模型一,7B,中文\n".encode()
        + "模型二,7B,中文\n".encode("gbk")
        + "模型三,7B,好\n".encode()
    )
    path = tmp_path / "mixed.csv"
    path.write_bytes(data)
    (problem,) = _error(path).problems
    assert problem.row == 3 and "line 2 is UTF-8" in problem.expected


def test_a_file_all_in_gbk_still_reads(tmp_path):
    path = write_csv(tmp_path, "name,params_total,notes\n模型一,7B,中文\n", encoding="gbk")
    (config,) = read_configs(path)
    assert (config.name, config.values["notes"]) == ("模型一", "中文")


# --- XLSX: row numbers ------------------------------------------------------------------------


def _renumbered(tmp_path, old: int, new: int):
    path = write_xlsx(tmp_path, [["name", "params_total"], ["a", "7B"], ["b", "8B"], ["c", "9B"]])

    def change(xml: bytes) -> bytes:
        for a, b in ((f'<row r="{old}"', f'<row r="{new}"'), (f'r="A{old}"', f'r="A{new}"')):
            xml = xml.replace(a.encode(), b.encode())
        return xml.replace(f'r="B{old}"'.encode(), f'r="B{new}"'.encode())

    rewrite_entry(path, SHEET, change)
    return path


@pytest.mark.parametrize("old, new", [(4, 3), (2, 9)], ids=["duplicate", "descending"])
def test_rows_numbered_twice_or_backwards_are_refused_not_dropped(tmp_path, old, new):
    """openpyxl reads a row numbered at or below one it has read as nothing: rows c (duplicate
    3) or b and c (after 9) vanished without a word."""
    (problem,) = _error(_renumbered(tmp_path, old, new)).problems
    assert problem.file == "inputs.xlsx" and problem.row == 3
    assert "rows in increasing order" in problem.expected


def test_row_numbers_are_read_across_chunk_boundaries(tmp_path, monkeypatch):
    """The row scan reads the sheet in chunks: with 7-byte chunks every tag is split, and a good
    sheet still reads whole while a bad one is still caught."""
    monkeypatch.setattr(xlsx, "_SCAN_CHUNK", 7)
    good = write_xlsx(tmp_path, [["name", "params_total"]] + [[f"m{i}", "7B"] for i in range(30)])
    assert len(read_configs(good)) == 30
    assert _error(_renumbered(tmp_path, 2, 9)).problems[0].row == 3


# --- prices -----------------------------------------------------------------------------------


def test_a_prices_file_with_a_bom_is_read(tmp_path):
    """Excel's "CSV UTF-8" starts with a byte-order mark: "expected a header gpu,price; found
    gpu,price" before."""
    from ledger_report.inputs.prices import read_prices

    path = tmp_path / "prices.csv"
    path.write_bytes(b"\xef\xbb\xbfgpu,price\nH100-SXM,2.5\n")
    assert read_prices(path) == {"H100-SXM": 2.5}


def _plan_with_prices(tmp_path, text: str):
    """`ledger-report plan` of a one-row input with the prices file ``text`` (read before any
    search)."""
    from click.testing import CliRunner

    from ledger_report.cli import main

    rows = write_csv(tmp_path, "name,params_total,tokens,days,seq_len\np,8B,1B,30,4096\n")
    prices = write_csv(tmp_path, text, "prices.csv")
    return CliRunner().invoke(main, ["plan", str(rows), "--prices", str(prices), "--top", "1"])


def test_a_gpu_priced_twice_is_refused_naming_both_lines(tmp_path):
    """A GPU on two lines took the last line's price (300, not 0.5).  Names are compared as the
    catalogue reads them: "h100 sxm" is H100-SXM."""
    for again in ("H100-SXM", "h100 sxm"):
        r = _plan_with_prices(tmp_path, f"gpu,price\nH100-SXM,0.5\nH200,1\n{again},300\n")
        assert r.exit_code == 1
        assert (
            f'prices.csv, line 4, column "gpu": expected each GPU once; found {again!r} again'
            f" (as H100-SXM; first as 'H100-SXM' at line 2)" in r.output
        )
        assert "Traceback" not in r.output


def test_a_prices_column_other_than_gpu_and_price_is_refused_naming_it(tmp_path):
    """The header gpu,price,extra was read as gpu,price (the extra column ignored); an input
    file refuses an unknown column, and so does a prices file.  Data in a field with no column
    (2,5 for 2.5) is refused on its line."""
    r = _plan_with_prices(tmp_path, "gpu,price,extra\nH100-SXM,0.5\nH200,1\n")
    assert r.exit_code == 1
    assert (
        "prices.csv, line 1: expected only the columns gpu,price; found the unknown column"
        " 'extra' in field 3 (C)" in r.output
    )
    r = _plan_with_prices(tmp_path, "gpu,price\n\nH100-SXM,2,5\n")
    assert r.exit_code == 1
    assert "prices.csv, line 3: expected two fields, gpu and price" in r.output
    assert "found 3 fields: 'H100-SXM,2,5'" in r.output


def test_a_prices_file_of_only_its_header_is_refused(tmp_path):
    """A header and no price line was read as no prices at all (every GPU type searched)."""
    r = _plan_with_prices(tmp_path, "gpu,price\n")
    assert r.exit_code == 1
    assert (
        "prices.csv, line 1: expected at least one gpu,price line below the header;"
        " found only the header" in r.output
    )


def test_a_workbook_given_as_prices_is_asked_for_as_csv(tmp_path):
    """--prices takes CSV; a workbook (the natural place for a price list) was refused as "text
    in UTF-8", which does not say what to do: now the message asks for its sheet as CSV."""
    from click.testing import CliRunner

    from ledger_report.cli import main

    rows = write_csv(tmp_path, "name,params_total,tokens,days,seq_len\np,8B,1B,30,4096\n")
    book = tmp_path / "prices.xlsx"
    book.write_bytes(b"PK\x03\x04")
    r = CliRunner().invoke(main, ["plan", str(rows), "--prices", str(book)])
    assert r.exit_code == 1
    assert (
        "expected a CSV file of gpu,price lines; found a .xlsx workbook; save its sheet as CSV"
        in r.output
    )
