"""Figures no output can hold: values the reader accepted overflowed later (days = 1e308, mfu =
5e-324, peak_tflops = 1e308, efficiency_scale = 1e-308): `calc` printed "inf days", `build` failed
"cannot store inf in a cell", `plan` said "internal error".  Whatever bounds the reader puts on the
inputs, one rule in the engine refuses a row with a figure that is not a finite number, naming the
row, the column and the figure: the same for every output."""

from __future__ import annotations

import csv
import math

import pytest
from click.testing import CliRunner
from support.jobs import QWEN3_8B_JOB

from ledger_report.cli import main
from ledger_report.config import Config
from ledger_report.engine import compute, compute_many, config_from_mapping, table
from ledger_report.errors import InputError
from ledger_report.render.document import json_lines

# docs/scenarios.md's Qwen3-8B job (100B tokens in 30 days on H100 at 40 % MFU)
JOB = {k: v for k, v in QWEN3_8B_JOB.items() if k != "price_per_gpu_hour"}
CASES = [
    # column, value, a figure it overflows (by hand: 1e308 × 86,400 s; 5.27e21 FLOPs ÷ (989e12 ×
    # 5e-324); 1e308 × 10^12; the step's compute ÷ 1e-308)
    ("days", 1e308, "train_window_s"),
    ("mfu", 5e-324, "days_on_config"),
    ("peak_tflops", 1e308, "bf16_peak_flops"),
    ("efficiency_scale", 1e-308, "time_compute_s"),
]


def _unchecked(column: str, value: float) -> Config:
    """The job with one value put in after the reader's checks (a ``Config`` checks
    nothing), so the engine's own rule is what is tested, whatever the reader bounds."""
    good = config_from_mapping(JOB)
    values = dict(good.values)
    values[column] = value
    return Config(values, "jobs.csv line 2")


@pytest.mark.parametrize("column,value,figure", CASES)
def test_the_engine_refuses_a_figure_that_is_not_finite(column, value, figure):
    """The scalar interpreter (compute), the arrays interpreter (compute_many) and the sweep table
    (calc --csv, to_frame) refuse the row alike: file and line, the column with the extreme value,
    the figure; never an OverflowError or a ValueError from int(inf)."""
    config = _unchecked(column, value)
    messages = []
    for run in (
        lambda: compute(config),
        lambda: list(compute_many([config])),
        lambda: list(table([config])),
    ):
        with pytest.raises(InputError) as info:
            run()
        messages.append(str(info.value))
    assert len(set(messages)) == 1, messages
    message = messages[0]
    assert message.startswith(f'jobs.csv, line 2, column "{column}": expected a value whose')
    assert f"{figure} (" in message and "= inf" in message


def test_a_finite_row_is_not_refused():
    """The job as docs/scenarios.md gives it computes: its days on one GPU (by hand 5.27e21 FLOPs ÷
    (989 × 10^12 × 0.4) ÷ 86,400 ≈ 154 days) finite."""
    lg = compute(config_from_mapping(JOB))
    assert math.isfinite(lg["days_on_config"]) and 150 < lg["days_on_config"] < 160


@pytest.mark.parametrize("column,value,figure", CASES)
@pytest.mark.parametrize("command", [["calc"], ["calc", "--json"], ["calc", "--csv"], ["plan"]])
def test_the_commands_refuse_in_one_line(tmp_path, command, column, value, figure):
    """Through the CLI (whichever check refuses first, the reader's bounds or the engine's rule):
    exit 1, one line naming the file, line 2 and the column; no "inf", no internal error."""
    path = tmp_path / "jobs.csv"
    row = {**JOB, column: repr(value)}
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(row))
        w.writeheader()
        w.writerow(row)
    r = CliRunner().invoke(
        main, [*command, str(path), "-q"] if command == ["plan"] else [*command, str(path)]
    )
    assert r.exit_code == 1, r.output
    line = r.output.strip()
    assert line.startswith("Error: ") and "\n" not in line
    assert "internal error" not in line and "inf days" not in line
    assert "jobs.csv" in line and "line 2" in line and f'"{column}"' in line


@pytest.mark.slow  # renders nothing, but writes through the whole build path
def test_build_writes_nothing(tmp_path):
    """build of the four rows: exit 1 naming the first, no output folder."""
    path = tmp_path / "jobs.csv"
    rows = [{**JOB, "name": f"r{k}", c: repr(v)} for k, (c, v, _f) in enumerate(CASES)]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]) + ["peak_tflops", "efficiency_scale"])
        w.writeheader()
        w.writerows(rows)
    r = CliRunner().invoke(main, ["build", str(path), "-o", str(tmp_path / "out")])
    assert r.exit_code == 1 and "jobs.csv" in r.output and "internal error" not in r.output
    assert not (tmp_path / "out").exists()


def _unchecked_rows(bad: int, good: int) -> list[tuple[Config, bool]]:
    """Good and bad rows in turn (good first) until either runs out, then the rest; the n-th bad
    row takes CASES[n mod 4] (unchecked); row k comes from "jobs.csv line k + 2"."""
    base = dict(config_from_mapping(JOB).values)
    kinds = [False, True] * min(bad, good) + [True] * (bad - good) + [False] * (good - bad)
    rows, n_bad = [], 0
    for k, is_bad in enumerate(kinds):
        values = {**base, "name": f"r{k}"}
        if is_bad:
            column, value, _figure = CASES[n_bad % len(CASES)]
            values[column] = value
            n_bad += 1
        rows.append((Config(values, f"jobs.csv line {k + 2}"), is_bad))
    return rows


def test_build_names_every_row_no_output_can_hold(tmp_path):
    """Found in a red-team pass: a build over several rows whose figures overflow named only the first.
    Four bad rows among four good ones (lines 3, 5, 7, 9 bad, by construction): lr.build raises
    one error with a line for each bad row, in file order, each naming its line and the column
    with the extreme value; the good rows are not named; nothing is written."""
    from ledger_report import api

    rows = _unchecked_rows(bad=4, good=4)
    bad_lines = [r.source for r, is_bad in rows if is_bad]
    assert bad_lines == [f"jobs.csv line {n}" for n in (3, 5, 7, 9)]
    with pytest.raises(InputError) as info:
        api.build([r for r, _ in rows], tmp_path / "out", ["json", "xlsx"])
    lines = str(info.value).splitlines()
    assert ["".join(line.split(",")[:2]) for line in lines] == bad_lines  # "jobs.csv, line 3"
    for line, (column, _value, figure) in zip(lines, CASES):
        assert f'column "{column}"' in line and f"{figure} (" in line
    assert not (tmp_path / "out").exists()


def test_every_row_is_named_across_chunks_and_counted_past_ten():
    """Fourteen bad rows spread over chunks of two rows (the arrays interpreter evaluates a chunk
    at a time; the refusal of the first chunk no longer hides the later ones): the sweep table and
    compute_many list the first ten bad rows in file order, one line each, then "and 4 more"."""
    rows = [r for r, _ in _unchecked_rows(bad=14, good=6)]
    bad = [r.source for r, is_bad in _unchecked_rows(bad=14, good=6) if is_bad]
    assert len(bad) == 14
    runs = (
        lambda: list(compute_many(rows, rows=2)),
        lambda: list(compute_many(rows, rows=2, make=json_lines)),  # calc --json's
        lambda: list(table(rows, rows=2)),
    )
    for run in runs:
        with pytest.raises(InputError) as info:
            run()
        lines = str(info.value).splitlines()
        assert ["".join(line.split(",")[:2]) for line in lines[:10]] == bad[:10]
        assert lines[10:] == ["... and 4 more"]
