"""The peak against published measured runs (tests/data/measured_runs.csv): each run's source is in
the file beside its quote and the counter it measured; the estimate is compared on that counter.

The goal is a median |estimate / measured − 1| of at most 10 % and a largest of at most 25 %, a bias
(median estimate / measured) within 0.95-1.05 on every counter, leaving each source out of the fit
of the constants the data set (tests/support/measured.py FITTED), with no run that ran said not to
fit; these tests keep the model from getting worse than it is (`python bench/bench_fidelity.py`
prints every run and the three figures per counter).
"""

from __future__ import annotations

import csv

import pytest
from support.measured import (
    DATA,
    FITTED,
    bias,
    by_counter,
    errors,
    in_sample,
    load,
    loso,
    model_with,
    source_key,
)

RUNS, SKIPPED = load()
HELD, HELD_VALUES = loso(RUNS)


def test_the_data_names_its_sources():
    """Every run has a source, a verbatim quote and a counter; at least 20 runs from 4 sources."""
    with open(DATA, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) >= 20
    assert all(
        r["source"] and r["quote"] and r["counter"] in ("allocated", "reserved", "device")
        for r in rows
    )
    assert len({source_key(r["source"]) for r in rows}) >= 4


def test_shipped_median_and_largest_error_do_not_get_worse():
    med, worst = errors(RUNS)
    assert len(RUNS) >= 20
    assert med <= 0.10, f"median error {med:.1%}"
    assert worst <= 0.25, f"largest error {worst:.1%}"


# The leave-one-source-out bounds per counter (median, largest error): the goal, 10 % and 25 %,
# except where the model is not there yet, held at today's figure so it cannot get worse.
LOSO_LIMITS = {"allocated": (0.10, 0.25), "reserved": (0.10, 0.25), "device": (0.11, 0.25)}


def test_leave_one_source_out_per_counter():
    """Leave-one-source-out, per counter: the median and largest error within LOSO_LIMITS and the
    bias within 0.95-1.05 on the counters with runs from more than one source (one source's runs can
    only be predicted with the constants the others set).  Recorded before the allocator model
    (python bench/bench_fidelity.py): median 7.5 / 5.8 / 3.9 %, largest 13.7 / 14.1 / 3.9 %, bias
    0.951 / 1.004 / 0.961 (allocated / reserved / device), with one constant fitted on all three."""
    for counter, runs in by_counter(HELD).items():
        med, worst = errors(runs)
        lim_med, lim_worst = LOSO_LIMITS[counter]
        assert med <= lim_med, f"{counter}: median {med:.1%}"
        assert worst <= lim_worst, f"{counter}: largest {worst:.1%}"
        if len({r.source_key for r in runs}) > 1:
            assert 0.95 <= bias(runs) <= 1.05, f"{counter}: bias {bias(runs):.3f}"


def test_the_fitted_constants_are_stable_leaving_any_source_out():
    """Leaving one source out moves a fitted constant fitted on more than one source by little: the
    data, not one source, sets it."""
    _, values = in_sample(RUNS)
    for name in FITTED:
        if len({r.source_key for r in RUNS if r.constant == name and r.counter == "reserved"}) > 1:
            assert max(abs(v[name] - values[name]) for v in HELD_VALUES.values()) <= 0.03


def test_the_refit_is_the_engine_at_those_constants():
    """The refit recomputes each estimate from the engine's reserved_explained_bytes, capacity and
    device overhead; the engine itself, given other constants (0.37 and 0.02), gives the same."""
    from support.measured import ESTIMATE_KEY, _records, input_row

    from ledger_report.engine import compute
    from ledger_report.inputs import config_from_mapping

    values = dict(zip(FITTED, (0.37, 0.02)))
    model = model_with(values)
    recs = {rec["run"]: rec for rec in _records(DATA)}
    for run in RUNS[::3]:
        rec = recs[run.run]
        led = compute(config_from_mapping(input_row(rec)), model)
        assert led[ESTIMATE_KEY[rec["counter"]]] == pytest.approx(run.at(values).estimate_bytes)
        assert led["peak_bytes_per_rank"] == pytest.approx(run.at(values).device_bytes)


def test_no_run_that_ran_is_said_not_to_fit():
    """A run that completed fitted its GPU: the device estimate of every such run is within its
    HBM, at the shipped constants and leaving its source out."""
    assert [r.run for r in RUNS if r.said_not_to_fit] == []
    assert [r.run for r in HELD if r.said_not_to_fit] == []


@pytest.mark.parametrize("run", [r for r in RUNS if r.framework == "megatron"], ids=lambda r: r.run)
def test_megatron_runs_within_15_percent(run):
    """Megatron-LM's own measurements (PR #6311, #6429 on 64 H100, their pipeline layout given as the
    first and last stages' layers, the leading dense layers from the recipe they ran): within 15 % on
    the counter (the device counter's communicator buffers are not itemised by the source)."""
    assert abs(run.ratio - 1) <= 0.15
