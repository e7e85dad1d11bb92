"""The fast paths of ``calc --json`` give what the plain paths give, on the shipped examples and on
varied generated rows (bench/example_rows.py): rows evaluated together equal rows evaluated per
pattern of empty columns, and the streamed document is byte for byte the document of each ledger."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import example_rows  # noqa: E402

from ledger_report.engine import Batch, _as_list, _row_keys, compute_many  # noqa: E402
from ledger_report.inputs import read_configs  # noqa: E402
from ledger_report.model.masked import evaluate_masked, masked_columns  # noqa: E402
from ledger_report.render.document import config_document  # noqa: E402
from ledger_report.report import DEFAULT  # noqa: E402

GENERATED = 600


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    """The examples, then generated rows (written beside a configs link, for the config.json row)."""
    folder = tmp_path_factory.mktemp("rows")
    (folder / "configs").symlink_to(ROOT / "inputs" / "configs")
    example_rows.write_csv(folder / "rows.csv", example_rows.varied_rows(GENERATED, seed=3))
    return read_configs(ROOT / "inputs" / "examples.csv") + read_configs(folder / "rows.csv")


def test_generated_rows_are_valid_and_distinct(tmp_path):
    """3,000 generated rows: the reader takes every one, and no two give the same values."""
    (tmp_path / "configs").symlink_to(ROOT / "inputs" / "configs")
    n = example_rows.write_csv(tmp_path / "rows.csv", example_rows.varied_rows(3000))
    got = read_configs(tmp_path / "rows.csv")
    assert n == len(got) == 3000
    assert len({tuple((k, v) for k, v in c.values.items() if k != "name") for c in got}) == 3000
    patterns = {frozenset(k for k, v in c.values.items() if v is not None) for c in got}
    assert len(patterns) > 100  # rows differ in which columns they leave empty, too


def _same(a, b) -> bool:
    """Equal, and of one type, but for a whole number below 10^15 held as int on one side and float
    on the other (model/masked.py: every output writes them alike)."""
    if type(a) is type(b):
        return a == b or (isinstance(a, float) and a != a and b != b)
    if {type(a), type(b)} == {int, float}:
        return float(a) == float(b) and float(a).is_integer() and abs(a) < 1e15
    return False


def test_rows_together_equal_rows_per_pattern(configs):
    """Every quantity of every row: evaluated with the batch's rows together (the masked path) as
    evaluated per pattern of empty columns; the masked path is taken, not refused."""
    reg = DEFAULT.registry
    text = set(_row_keys(reg))
    cols, blanks = masked_columns(np, [c.values for c in configs])
    env = evaluate_masked(reg, cols, blanks, DEFAULT.tables)
    assert env is not None
    together = {k: _as_list(np, v, len(configs)) for k, v in env.items() if k not in text}
    apart = Batch.evaluate(configs, DEFAULT).ledgers()
    assert len(Batch.evaluate(configs, DEFAULT).parts) > 100
    bad = [
        (k, lg.name)
        for k, col in together.items()
        for j, lg in enumerate(apart)
        if not _same(lg.values[k], None if col is None else col[j])
    ]
    assert not bad, bad[:10]


def _documents(ledgers) -> list[str]:
    return [
        json.dumps(config_document(lg), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        for lg in ledgers
    ]


def test_streamed_json_is_each_ledgers_document(configs):
    """calc --json's stream, line by line, is json.dumps of config_document for each ledger
    computed per pattern (the plain path), byte for byte."""
    from ledger_report.cli import _stream_json

    out = io.BytesIO()
    _stream_json(configs, out, lambda done, total: None)
    text = out.getvalue().decode("utf-8")
    head, tail = '{\n  "schema": "ledger-report/1",\n  "configs": [\n', "\n  ]\n}\n"
    assert text.startswith(head) and text.endswith(tail)
    lines = text[len(head) : -len(tail)].split(",\n")
    expected = _documents(compute_many(configs))
    assert len(lines) == len(expected)
    bad = [i for i, (a, b) in enumerate(zip(lines, expected)) if a != b]
    assert not bad, (len(bad), configs[bad[0]].name)
    assert json.loads(text)["configs"][0]["name"] == configs[0].name


def test_example_rows_csv_has_the_examples_header():
    with (ROOT / "inputs" / "examples.csv").open(encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert list(example_rows.examples()[0]) == header


def test_text_over_rows_equals_the_scalar_interpreter(configs):
    """Every text quantity (messages, sentences) on every row: model/rows.py over the batch gives
    what the scalar interpreter gives on the row's own ledger, type and all."""
    from ledger_report.model.evaluate import eval_scalar

    batch = Batch.evaluate(configs, DEFAULT, together=True)
    assert len(batch.parts) == 1
    ledgers = batch.ledgers()
    reg = DEFAULT.registry
    for key in _row_keys(reg):
        col = batch.column(key)
        expected = [
            eval_scalar(reg[key].expr, lg.config.values, lg.values, DEFAULT.tables)
            for lg in ledgers
        ]
        bad = [
            lg.name for lg, a, b in zip(ledgers, col, expected) if type(a) is not type(b) or a != b
        ]
        assert not bad, (key, bad[:5])
    some = list(range(0, len(configs), 7))
    assert batch.text("verdict_memory_reason", some) == [
        batch.column("verdict_memory_reason")[i] for i in some
    ]


def _row_by_row(batch) -> list[str]:
    return _documents(batch.ledgers())


def test_batches_are_written_a_column_at_a_time(configs, monkeypatch):
    """The column writer takes every batch of the examples and the generated rows (it does not
    fall back to row by row), joins runs of its columns (a row is far fewer columns than the
    document has values), and row by row gives the same texts, chunk after chunk."""
    from ledger_report.engine import batches
    from ledger_report.render import json_batch

    def columns(batch):
        return sum(type(p) is not str for p in json_batch._Writer(batch).parts())

    every = next(batches(configs, rows=len(configs), together=True))
    joined = columns(every)
    with monkeypatch.context() as m:
        m.setattr(json_batch, "_runs", lambda parts, n: json_batch._merged(parts))  # no run joined
        assert joined < 0.5 * columns(every)
    for batch in batches(configs, rows=300, together=True):
        parts = json_batch._Writer(batch).parts()
        expected = _row_by_row(batch)
        for start in range(0, len(batch.configs), 128):
            rows = slice(start, min(start + 128, len(batch.configs)))
            fast = json_batch._documents_at(
                parts, np.arange(rows.start, rows.stop)
            )  # UTF-8 bytes, one character a byte
            assert [d.encode("latin-1").decode("utf-8") for d in fast] == expected[rows]


def test_a_chunk_json_cannot_write_goes_row_by_row(configs, monkeypatch):
    """A value the column writer does not know how to write sends its chunk row by row, where
    json.dumps meets it as it always did: the rows before it are written, then the error."""
    from ledger_report.engine import batches
    from ledger_report.render import json_batch

    with pytest.raises(json_batch._Unusual):
        json_batch.raw_json(float("nan"))
    batch = next(batches(configs[:5], together=True))
    written = io.BytesIO()
    json_batch.write_batch(batch, written, True, lambda n: None)
    assert written.getvalue().decode().split(",\n") == _row_by_row(batch)

    bad = batch.ledgers()[3].config.replace(
        notes=float("nan")
    )  # a value no reader gives: json refuses it
    batch = next(batches(list(configs[:3]) + [bad, configs[4]], together=True))
    written = io.BytesIO()
    with pytest.raises(ValueError):
        json_batch.write_batch(batch, written, True, lambda n: None)
    assert written.getvalue().decode().split(",\n") == _row_by_row(
        next(batches(configs[:3], together=True))
    )


CELLS = [
    "0",
    "007",
    "42",
    "1234567890123456",
    "12345678901234567",
    "10000000000000000",
    "0.1",
    "3.14159",
    "2.5",
    "0.551",
    "1.0000000000000002",
    "99999999999999.99",
    "1e3",
    "7B",
    "35b",
    "1,024",
    "40%",
    "50",
    "0.4",
    "１２",
    "1.5",
    "5.",
    ".5",
    " 8 ",
    "-3",
    "+4",
    "nan",
    "abc",
]


@pytest.mark.parametrize(
    "column", ["tokens", "dp", "layers", "mfu", "days", "price_per_gpu_hour", "hbm_gb"]
)
def test_plain_digit_cells_read_as_the_decimal_path_reads_them(column, monkeypatch):
    """Each cell through the fast paths and the memo gives the value (type and all) or the problem
    that the Decimal path gives."""
    import re

    from ledger_report.config import COLUMN_BY_NAME
    from ledger_report.inputs import cells

    col = COLUMN_BY_NAME[column]

    def read(text):
        try:
            v = cells.cell(col, text)
            return type(v), v
        except cells.Bad as exc:
            return "bad", exc.expected, exc.found

    fast = [read(t) for t in CELLS] + [read(t) for t in CELLS]  # the second time from the memo
    monkeypatch.setattr(cells, "_PLAIN_WHOLE", re.compile(r"(?!)"))
    monkeypatch.setattr(cells, "_PLAIN_FLOAT", re.compile(r"(?!)"))
    monkeypatch.setattr(cells, "_CELLS", {})
    slow = [read(t) for t in CELLS]
    assert fast == slow + slow


def test_a_bad_cell_is_reported_on_every_row_it_is_on(tmp_path):
    """The memo keeps only cells read without a problem: the same bad text on two rows is two problems."""
    from ledger_report.errors import InputError

    path = tmp_path / "bad.csv"
    path.write_text("name,params_total,dp\na,7B,x4\nb,7B,x4\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_configs(path)
    assert [(p.row, p.column) for p in err.value.problems] == [(2, "dp"), (3, "dp")]


def test_batches_in_worker_processes_give_the_same_bytes(configs, tmp_path):
    """Batches computed side by side in forked workers, each writing in its turn: the same bytes
    as one process writes; a batch that fails leaves what one process leaves (the batches before
    it, its rows before the failing one) and raises the same error."""
    from ledger_report.render.json_stream import write_configs

    def run(rows, jobs):
        serial = io.BytesIO()
        with (tmp_path / "out").open("wb") as f:
            try:
                write_configs(rows, f, lambda n: None, jobs=jobs, rows=64)
            except ValueError as exc:
                err = str(exc)
            else:
                err = None
        try:
            write_configs(rows, serial, lambda n: None, jobs=1, rows=64)
        except ValueError as exc:
            assert str(exc) == err
        else:
            assert err is None
        return (tmp_path / "out").read_bytes(), serial.getvalue()

    parallel, serial = run(configs, jobs=3)
    assert parallel == serial and len(parallel.split(b",\n")) == len(configs)
    broken = list(configs)
    broken[200] = broken[200].replace(notes=float("nan"))  # no reader gives it: its batch fails
    parallel, serial = run(broken, jobs=2)
    assert parallel == serial and 0 < len(parallel.split(b",\n")) <= 200


EDGES = [
    {"reserve_days": "-0"},
    {"tokens": "9999999999999999"},
    {"mfu": "40%"},
    {"price_per_gpu_hour": "0"},
    {"measured_peak_gb": "0.001"},
    {"measured_peak_gb": "1e3"},
    {"tokens": "1"},
    {"days": "0.0001", "reserve_days": "0"},
    {"mfu": "1e-9"},
    {"tokens": "10000000000000000"},
    {"price_per_gpu_hour": "123456789.123456789"},
    {"notes": 'quote " backslash \\ tab\there % percent 中文 \u2028 sep'},
    {"name": '名字-%s-"q"'},
    {"framework": "MEGATRON"},
    {"global_batch": "", "micro_batch": ""},
    {"mfu": "", "tokens": "", "days": ""},
]


def test_edge_values_stream_as_each_ledgers_document(tmp_path):
    """Odd but valid cells (a negative zero, the largest counts, percent signs, quotes, backslashes
    and Chinese in text): the streamed document is byte for byte the plain path's."""
    from ledger_report.cli import _stream_json

    rows = []
    for i, edit in enumerate(EDGES * 2):
        r = dict(example_rows.examples()[i % 21], **edit)
        r["name"] = edit["name"] % i if "name" in edit else f"{r['name']}-edge-{i}"
        rows.append(r)
    (tmp_path / "configs").symlink_to(ROOT / "inputs" / "configs")
    example_rows.write_csv(tmp_path / "edge.csv", iter(rows))
    configs = read_configs(tmp_path / "edge.csv")
    out = io.BytesIO()
    _stream_json(configs, out, lambda done, total: None)
    lines = out.getvalue().decode("utf-8").split("\n", 3)[3].rsplit("\n  ]", 1)[0].split(",\n")
    assert lines == _documents(compute_many(configs))
    assert '"reserve_days":-0.0' in lines[0]


def test_smallest_divisor_from_remembered_divisors_equals_the_search():
    """MINDIV through the remembered divisors gives what the plain search over i ≤ √n gives."""
    import math
    import random

    from ledger_report.model.evaluate import approx_value, smallest_divisor_at_least

    def search(n, at_least, step):
        n, step = int(round(n)), max(int(round(step)), 1)
        if n < 1:
            return None
        lo = max(int(math.ceil(approx_value(float(at_least)))), 1)
        found = [
            d
            for i in range(1, math.isqrt(n) + 1)
            if n % i == 0
            for d in (i, n // i)
            if d >= lo and d % step == 0
        ]
        return min(found) if found else None

    rng = random.Random(5)
    for _ in range(3000):
        n = rng.choice([rng.randint(0, 5000), rng.randint(1, 10**6), 15360, 384, 36, 1])
        args = (n, rng.uniform(-3, n + 3), rng.choice([1, 2, 3, 4, 8, rng.randint(1, 50), 0.6]))
        assert smallest_divisor_at_least(*args) == search(*args), args


def test_smallest_divisor_over_arrays_equals_the_scalar_rule():
    """MINDIV over arrays (each distinct n and step searched once for all its rows) gives on every
    row what the scalar rule gives, blanks (no divisor, n below 1, a non-finite argument) included."""
    import random

    from ledger_report.model.evaluate import _mindiv_array, smallest_divisor_at_least

    rng = random.Random(7)
    ns = [
        rng.choice(
            [rng.randint(-3, 5000), 15360, 384, 36, 1, 0, 2.5, 96.4999, float("nan"), float("inf")]
        )
        for _ in range(4000)
    ]
    los = [
        rng.choice([rng.uniform(-3, 400), 3.0000000000000004, 8, 0, float("nan"), 1e300])
        for _ in ns
    ]
    steps = [rng.choice([1, 2, 3, 4, 8, 0.6, 0, -2, rng.randint(1, 50)]) for _ in ns]
    vals, none = _mindiv_array(np, [np.array(ns), np.array(los), np.array(steps)])
    scalar = [
        smallest_divisor_at_least(*a) if all(map(np.isfinite, a)) else None
        for a in zip(ns, los, steps)
    ]
    got = [None if b else v for v, b in zip(vals.tolist(), none.tolist())]
    assert got == scalar
    assert sum(v is None for v in scalar) > 100 and len(set(scalar)) > 50
    v, b = _mindiv_array(np, [384.0, np.array([5.0, 500.0]), 4.0])  # a scalar beside an array
    assert v.tolist()[0] == 8 and b.tolist() == [False, True]


def test_rounding_over_rows_equals_the_scalar_rule():
    """CEIL and FLOOR over a batch's rows (finite floats over an array) give what the scalar rule
    gives on each row, float noise next to whole numbers and values past 2^41 included; a value
    the scalar rule refuses still raises."""
    import random

    from ledger_report.model.evaluate import _FUNCTIONS
    from ledger_report.model.rows import _rounded

    rng = random.Random(11)
    xs = [
        rng.choice(
            [
                rng.uniform(-1e6, 1e6),
                1706433408 * (4 * 7051776 / 13651467264),
                0.1 * 3,
                -0.0,
                2.0**41 + 0.5,
                -(2.0**45) - 0.25,
                1e15 + 0.3,
                12.0,
                5e-324,
                rng.randint(-10, 10) + rng.choice([1e-15, -1e-15, 0.5]),
            ]
        )
        for _ in range(5000)
    ]
    for fn in ("CEIL", "FLOOR"):
        got = _rounded(fn, xs)
        assert got == [_FUNCTIONS[fn]([x]) for x in xs]
        assert {type(v) for v in got} == {int}
        assert _rounded(fn, [1.5, None, 7]) == [_FUNCTIONS[fn]([1.5]), None, 7]
        with pytest.raises((ValueError, OverflowError)):
            _rounded(fn, [1.5, float("nan")])


def _file_in_workers(path, tmp_path, jobs=3, rows=64):
    """``write_file``'s bytes (header and footer as calc writes them) and what it returned."""
    from ledger_report.cli import _JSON_TAIL, _json_head
    from ledger_report.render.json_stream import write_file

    totals = []

    def begin(total):
        totals.append(total)
        f.write(_json_head())
        return lambda n: None

    with (tmp_path / "out.json").open("wb") as f:
        done = write_file(str(path), f, begin, jobs=jobs, rows=rows)
        if done:
            f.write(_JSON_TAIL)
    return done, totals, (tmp_path / "out.json").read_bytes()


def _plain_bytes(path) -> bytes:
    from ledger_report.cli import _stream_json

    out = io.BytesIO()
    _stream_json(read_configs(path), out, lambda done, total: None)
    return out.getvalue()


@pytest.fixture()
def rows_csv(tmp_path):
    (tmp_path / "configs").symlink_to(ROOT / "inputs" / "configs")
    rows = list(example_rows.varied_rows(GENERATED, seed=5))
    return tmp_path, rows


def test_a_file_read_in_workers_gives_the_plain_bytes(rows_csv):
    """Each worker reading and checking only its own batches' rows: the same bytes as the file
    read here and written in one process, on the generated rows and on the examples."""
    tmp_path, rows = rows_csv
    path = tmp_path / "rows.csv"
    example_rows.write_csv(path, iter(rows))
    done, totals, got = _file_in_workers(path, tmp_path)
    assert done and totals == [GENERATED] and got == _plain_bytes(path)
    done, totals, got = _file_in_workers(ROOT / "inputs" / "examples.csv", tmp_path, jobs=2, rows=4)
    assert done and totals == [21] and got == _plain_bytes(ROOT / "inputs" / "examples.csv")


def test_the_rows_keep_reads_are_the_rows_of_the_file(rows_csv):
    """``keep`` splits the rows: the parts read, put back in order, are the file's configurations."""
    tmp_path, rows = rows_csv
    path = tmp_path / "rows.csv"
    example_rows.write_csv(path, iter(rows))
    parts = [read_configs(path, keep=lambda i, w=w: i // 50 % 3 == w) for w in range(3)]
    merged = [parts[i // 50 % 3][(i // 150) * 50 + i % 50] for i in range(GENERATED)]
    assert merged == read_configs(path)


@pytest.mark.parametrize("edit", ["bad cell", "name in two workers' rows", "extra field"])
def test_a_file_with_a_problem_is_left_to_the_plain_reader(rows_csv, edit):
    """A problem in any worker's rows, or a name repeated across two workers' rows (which no
    worker sees alone): nothing written, and the file is read as always (the same error)."""
    from ledger_report.errors import InputError

    tmp_path, rows = rows_csv
    if edit == "bad cell":
        rows[300]["dp"] = "x4"
    elif edit == "extra field":
        rows[450]["extra"] = "1"
    else:
        rows[130]["name"] = rows[5]["name"]  # batches 0 and 2 of 64 rows: workers 0 and 2
    path = tmp_path / "rows.csv"
    if edit == "extra field":
        _write_extra(path, rows)
    else:
        example_rows.write_csv(path, iter(rows))
    done, totals, got = _file_in_workers(path, tmp_path)
    assert (done, totals, got) == (False, [], b"")
    with pytest.raises(InputError):
        read_configs(path)


def _write_extra(path, rows):
    """The rows with one line a field longer than the header."""
    header = [k for k in rows[0] if k != "extra"]
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            w.writerow([r.get(k, "") for k in header] + ([r["extra"]] if "extra" in r else []))


def test_a_batch_failing_in_a_file_worker_fails_here_after_the_batches_before_it(
    rows_csv, monkeypatch
):
    """A batch that fails in a worker is done again here once the batches before it are written:
    the same bytes before it and the same error as one process gives."""
    from ledger_report.render import json_stream

    tmp_path, rows = rows_csv
    path = tmp_path / "rows.csv"
    example_rows.write_csv(path, iter(rows))
    failing, plain = rows[200]["name"], _plain_bytes(path)
    plain_write = json_stream.write_batch

    def write_batch(batch, out, first, progress):
        if any(c.name == failing for c in batch.configs):
            raise ValueError("no such value")
        plain_write(batch, out, first, progress)

    monkeypatch.setattr(json_stream, "write_batch", write_batch)  # the forked workers inherit it
    with pytest.raises(ValueError, match="no such value"):
        _file_in_workers(path, tmp_path)
    got = (tmp_path / "out.json").read_bytes()
    size = json_stream._even_batches(str(path), 64, 3)  # 51: 601 lines in 12 batches, 4 a worker
    before = 200 // size * size  # the rows of the batches before the failing row's
    assert (
        size == 51 and plain.startswith(got) and len(got.split(b"\n", 3)[3].split(b",\n")) == before
    )


def test_packed_configs_are_the_configs_read(configs):
    """Configurations held packed and rebuilt (``Config.rebuilt``, nothing checked again) equal
    the ones read: the same values in schema order, source and origins, and they replace alike."""
    from ledger_report.engine import PackedConfigs

    packed = PackedConfigs()
    for c in configs:
        packed.append(c)
    again = packed[0 : len(configs)]
    assert again == configs and [list(c.values) for c in again] == [list(c.values) for c in configs]
    assert [dict(c.origins) for c in again] == [dict(c.origins) for c in configs]
    assert again[0].replace(dp=2) == configs[0].replace(dp=2)


def test_packed_configs_keep_rows_appended_and_given_as_columns_in_order(configs):
    """Rows appended one at a time and rows handed over a column at a time (``extend_columns``,
    as the reader hands a clean block) come back in the order given, each its own configuration,
    and a part's columns are those of its configurations."""
    from ledger_report.engine import PackedConfigs, _input_columns

    packed = PackedConfigs()
    for c in configs[:10]:
        packed.append(c)
    block = configs[10:30]
    given = {
        k: v for k, v in _input_columns(block).items() if any(x is not None for x in v)
    }  # empty columns left out
    packed.extend_columns(
        given, [c.source for c in block], [dict(c.origins) or None for c in block]
    )
    for c in configs[30:]:
        packed.append(c)
    assert len(packed) == len(configs) and list(packed) == configs and packed[5:35] == configs[5:35]
    assert [c.source for c in packed] == [c.source for c in configs]
    assert [dict(c.origins) for c in packed] == [dict(c.origins) for c in configs]
    assert packed.part(slice(5, 35)).columns() == _input_columns(configs[5:35])
    assert packed.column("name") == [c.name for c in configs]


def test_an_output_closed_under_the_file_workers_raises_here(rows_csv):
    """A worker that cannot write (the reader went away: ``| head``) hands its error to the
    parent, which raises it (the command then stops quietly, as it always did)."""
    import os

    from ledger_report.render.json_stream import write_file

    tmp_path, rows = rows_csv
    path = tmp_path / "rows.csv"
    example_rows.write_csv(path, iter(rows))
    reader, writer = os.pipe()
    os.close(reader)
    with os.fdopen(writer, "wb") as f, pytest.raises(BrokenPipeError):
        write_file(str(path), f, lambda total: lambda n: None, jobs=2, rows=64)


def _masked_by_the_loop(vals):
    """A column as ``masked_arrays`` made it a row at a time before its one-kind path."""
    blank = [v is None or v == "" for v in vals]
    given = [v for v, b in zip(vals, blank) if not b]
    kind = {
        str if isinstance(v, str) else bool if isinstance(v, bool) else float for v in given
    }.pop()
    filled = [given[0] if b else v for v, b in zip(vals, blank)]
    return np.array(
        filled, dtype=str if kind is str else bool if kind is bool else float
    ), np.array(blank)


@pytest.mark.parametrize(
    "vals",
    [
        (None, 2, 3.5, None, 2**60),
        (1.0, 2.0),
        ("a", None, "", "bcd"),
        ("x",),
        (True, None, False),
        (None, float("nan"), 1.0),
        ("\x00", "a", None),
        (None, "a\x00", "b"),
        (float("inf"), None, -0.0),
    ],
)
def test_masked_columns_of_one_kind_as_the_loop_made_them(vals):
    """A column of numbers, texts or truth values (blanks among them) comes out of the one-kind
    path as the row-by-row loop made it: the same values, dtype and blank mask."""
    from ledger_report.model.masked import masked_arrays

    cols, blanks = masked_arrays(np, {"c": vals})
    want, blank = _masked_by_the_loop(vals)
    assert cols["c"].dtype == want.dtype and np.array_equal(
        cols["c"], want, equal_nan=want.dtype.kind == "f"
    )
    assert np.array_equal(blanks.get("c", np.zeros(len(vals), dtype=bool)), blank)


def test_packed_rows_give_the_columns_and_origins_of_their_configs(configs):
    """A part of the packed rows gives the input columns and origins its built configurations give."""
    from ledger_report.engine import PackedConfigs, _input_columns

    packed = PackedConfigs()
    for c in configs:
        packed.append(c)
    part = packed.part(slice(3, 40))
    built = list(part)
    assert built == configs[3:40] and part[5] == configs[8] and len(part) == 37
    assert part.columns() == _input_columns(built)
    assert part.origins() == [dict(c.origins) for c in built] and any(part.origins())


def test_a_worker_buffer_gives_each_batch_only_its_own_bytes(tmp_path):
    """The buffer a worker writes its batches into, used again batch after batch, gives each
    batch exactly what was written for it (a shorter batch after a longer one included)."""
    import os

    from ledger_report.render.json_stream import _Held, _write_all

    held, path = _Held(), tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        for chunks in ([b"abc", b"defgh"], [b"XY"], [b"", b"12345678901"]):
            for c in chunks:
                held.write(c)
            _write_all(fd, held.written())
    finally:
        os.close(fd)
    assert path.read_bytes() == b"abcdefghXY12345678901"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(blacklist_categories=("Cs",)))
        | st.sampled_from(
            ['"', "\\", "\n", "\x00", "\x1f", "\x7f", "a\x7fb", "显存 85.6 GB", "é", "🙂", "\u2028"]
        ),
        max_size=12,
    )
)
def test_texts_escaped_at_once_as_json_dumps_writes_each(texts):
    """strings_json escapes a list of texts joined by one character, then splits them: each must
    be exactly what json.dumps (ensure_ascii off) writes, as UTF-8 bytes held one a character,
    whatever the texts hold (quotes, backslashes, control characters, DEL itself, Chinese)."""
    from ledger_report.render.json_batch import strings_json

    expected = [json.dumps(t, ensure_ascii=False).encode("utf-8").decode("latin-1") for t in texts]
    assert strings_json(texts) == expected


def test_number_columns_distinct_values_are_np_unique_s():
    """A number column's distinct values and each row's place among them, found by counting
    (whole numbers close together), at once (one value) or by a sort, are np.unique's."""
    from ledger_report.render.json_batch import _distinct_sorted

    rng = np.random.default_rng(7)
    columns = [
        rng.integers(-50, 900, 4000),
        rng.integers(0, 10**12, 4000),
        np.full(300, 12, dtype=np.int64),
        rng.integers(0, 3, 5) * 10**9,
        rng.random(2000).round(2) - 0.5,
        np.full(10, 2.5),
        np.zeros(0, dtype=np.int64),
    ]
    for x in columns:
        distinct, inverse = _distinct_sorted(x)
        expected, places = np.unique(x, return_inverse=True)
        assert distinct.tolist() == expected.tolist()
        assert inverse.tolist() == places.reshape(-1).tolist()


def test_combinations_are_numbered_in_order_few_or_many():
    """combined_codes, counting few combinations in a table or sorting many: each row's place is
    its combination's among the distinct ones in order (np.unique's), and the row it gives for a
    combination has that combination."""
    from ledger_report.engine import combined_codes

    rng = np.random.default_rng(3)
    for k in (3, 5000):  # 21 combinations at most (a table), or up to 35,000 (a sort)
        a, b = rng.integers(0, k, 1000), rng.integers(0, 7, 1000)
        first, inverse = combined_codes(np, [(a, k), (b, 7)], 1000)
        distinct, places = np.unique(a * 7 + b, return_inverse=True)
        assert inverse.tolist() == places.reshape(-1).tolist()
        assert (a * 7 + b)[first].tolist() == distinct.tolist()


@pytest.mark.parametrize(
    "lines, most, workers, rows",
    [
        (
            100_001,
            8192,
            2,
            7143,
        ),  # 100,000 rows and a header: 14 batches, 7 a worker (8,192 would give 13: 7 and 6)
        (20_001, 8192, 2, 5001),  # 4 batches of 5,001 or fewer, 2 a worker (8,192 would give 3)
        (3, 8192, 2, 2),  # a header and two rows: a batch each
        (9_000, 4096, 3, 3000),  # 3 workers, 3 batches
    ],
)
def test_batches_split_evenly_between_workers(tmp_path, lines, most, workers, rows):
    """The rows a batch the workers use for a file: at most ``most``, and as many batches for each
    worker (counted by hand from the file's lines, which bound its rows)."""
    from ledger_report.render.json_stream import _even_batches

    path = tmp_path / "rows.csv"
    path.write_bytes(b"x\n" * (lines - 1) + b"x")
    got = _even_batches(str(path), most, workers)
    assert got == rows
    batches = -(-lines // got)
    assert got <= most and batches % workers == 0
