"""The step-time model against published measured throughput (tests/data/measured_throughput.csv,
bench/bench_throughput.py): the errors must not get worse, and every run names its source."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import bench_throughput as bt  # noqa: E402

# Where the project stood when the model was built (bench/bench_throughput.py); the targets of the
# issue are 10 % and 25 %.
MEDIAN_LIMIT = 0.05
LARGEST_LIMIT = 0.16
# Sources whose figures must never be used (the model is checked against them elsewhere).
FORBIDDEN = (
    "torchtitan benchmarks/",
    "torchtune readme",
    "golden_values",
    "llm-foundry",
    "nemo performance",
    "megatron-bridge performance",
    "ms-swift",
    "fms-fsdp",
    "pytorch fsdp blog",
)

ROWS = bt.load()
COMPLETE = [r for r in ROWS if r["complete"] == "yes"]


@pytest.fixture(scope="module")
def results():
    return {r["run"]: bt.predict(r) for r in COMPLETE}


def test_median_and_largest_errors_do_not_get_worse(results):
    """Complete configurations (27 runs, 6 sources): median |predicted/measured − 1| ≤ 5 % and the largest ≤ 16 %,
    with mfu left empty (issue targets: 10 % and 25 %)."""
    errs = [abs(r["ratio"] - 1) for r in results.values()]
    assert len(errs) == len(COMPLETE) >= 25
    assert statistics.median(errs) <= MEDIAN_LIMIT
    assert max(errs) <= LARGEST_LIMIT, max(results.values(), key=lambda r: abs(r["ratio"] - 1))


@pytest.mark.parametrize("row", COMPLETE, ids=[r["run"] for r in COMPLETE])
def test_each_run_within_the_largest_error(row, results):
    """Each complete run: predicted tokens/s per GPU within 16 % of the published figure (source in the row)."""
    assert row["source"] and row["quote"]
    assert abs(results[row["run"]]["ratio"] - 1) <= LARGEST_LIMIT, (row["run"], row["source"])


def test_every_run_names_its_source_and_none_is_forbidden():
    """Every row carries its source and the quote it was read from; no figure comes from a forbidden source."""
    assert len(ROWS) == 73
    for r in ROWS:
        assert r["source"].strip() and r["quote"].strip(), r["run"]
        low = r["source"].lower()
        assert not any(f in low for f in FORBIDDEN), r["run"]
        assert r["complete"] in ("yes", "no") and (r["complete"] == "yes") == (
            r["excluded_because"] == ""
        )


def test_sources_span_frameworks_and_accelerators():
    """The counted runs cover several independent sources, frameworks and GPU generations."""
    sources = {r["source"].split(";")[0].split("(")[0].strip()[:40] for r in COMPLETE}
    assert len({r["framework"] for r in COMPLETE}) >= 3
    assert {"A100-80GB", "A800", "H100-SXM", "H800", "B200"} <= {r["gpu"] for r in COMPLETE}
    assert len(sources) >= 5
