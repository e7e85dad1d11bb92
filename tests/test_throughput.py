"""The step-time model against published measured throughput (tests/data/measured_throughput.csv,
bench/bench_throughput.py): the leave-one-source-out errors and bias (every constant the runs set
refitted without the source predicted, tests/support/fit.py) meet the issue's targets, and every
run names its source."""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import bench_throughput as bt  # noqa: E402
from support import fit  # noqa: E402

# Issue #24's targets, held on the leave-one-source-out figures (never the in-sample ones), with the
# three fitted constants (SUSTAINED_FRACTION, GROUPED_GEMM_RELATIVE, EXPERT_GEMM_LAUNCH_S) refitted
# per fold: on the runs of the first five sources (median 8.3 %, largest 16.1 %, bias 0.987) and over
# every source (the runs at scale added for issue #24 from xtuner, Megatron-MoE-ModelZoo,
# Pai-Megatron-Patch and torchtitan PR #1690: median 8.9 %, largest 23.8 %, an xtuner Qwen3-235B
# full-recompute run predicted slow, bias 1.001; bench/bench_throughput.py).  The largest over every
# source rests on which (launch, grouped) pair the xtuner fold's refit picks from its grid: the
# objective differs by about 0.002 between pairs that put it at 24 % or 34 %.
MEDIAN_LIMIT = 0.10
LARGEST_LIMIT = 0.25
BIAS_RANGE = (0.95, 1.05)
FIRST_SOURCES = (
    "korthikanti2022",
    "bigscience_bloom",
    "flagperf",
    "pithtrain",
    "torchtitan_pr1690",
)
ALL_MEDIAN_LIMIT = MEDIAN_LIMIT
FIRST_LARGEST_LIMIT = LARGEST_LIMIT
ALL_LARGEST_LIMIT = LARGEST_LIMIT
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
def records():
    return fit.records(COMPLETE)


@pytest.mark.slow
def test_leave_one_source_out_on_the_first_sources(records):
    """The complete runs of the first five sources (those the model was first built on, with every
    torchtitan PR #1690 run: its TP runs since the model carries the q/k all-gathers of torchtitan's
    Qwen3 TP plan at that commit), the fitted constants refitted without the source predicted:
    median |predicted/measured − 1| (8.3 %) within issue #24's 10 %, the largest (16.1 %,
    Korthikanti et al.'s 1T run with full recompute) within its 25 % and the bias (0.987) within
    0.95-1.05."""
    first = [r for r in records if r.source_id in FIRST_SOURCES]
    loso = fit.leave_one_source_out(first)
    f = fit.figures([q for q, _ in loso.values()])
    assert f["runs"] >= 25
    assert f["median_error"] <= MEDIAN_LIMIT
    assert f["largest_error"] <= FIRST_LARGEST_LIMIT, max(
        loso.items(), key=lambda kv: abs(kv[1][0] - 1)
    )
    assert BIAS_RANGE[0] <= f["bias"] <= BIAS_RANGE[1]


@pytest.mark.slow
def test_leave_one_source_out_over_every_source(records):
    """Every complete run, each source predicted with the constants fitted without it: the median
    (8.9 %) within issue #24's 10 %, the largest (23.8 %, xtuner's Qwen3-235B full-recompute run at
    tp 1, 4 sequences per micro-batch, predicted slow) within its 25 % and the bias (1.001) within
    0.95-1.05."""
    loso = fit.leave_one_source_out(records)
    f = fit.figures([q for q, _ in loso.values()])
    assert f["runs"] == len(COMPLETE) >= 40
    assert len({r.source_id for r in records}) >= 8
    assert f["median_error"] <= ALL_MEDIAN_LIMIT
    assert f["largest_error"] <= ALL_LARGEST_LIMIT
    assert BIAS_RANGE[0] <= f["bias"] <= BIAS_RANGE[1]


@pytest.mark.slow
def test_a_source_is_predicted_with_constants_that_never_saw_it(records):
    """Leave-one-source-out cannot fool itself: changing one source's measured figures (here ×2)
    leaves the constants its runs are predicted with unchanged, and moves them in an ordinary fit."""
    source = "flagperf"
    doubled = [replace(r, measured=r.measured * 2) if r.source_id == source else r for r in records]
    before = fit.leave_one_source_out(records)
    after = fit.leave_one_source_out(doubled)
    run = next(r.run for r in records if r.source_id == source)
    assert after[run][1] == pytest.approx(before[run][1], rel=1e-12)
    assert after[run][0] == pytest.approx(before[run][0] / 2, rel=1e-3)
    assert fit.fit(doubled) != pytest.approx(fit.fit(records), rel=1e-3)


@pytest.mark.slow
def test_the_fit_is_the_model_run_at_the_constants_it_returns(records):
    """The fit evaluates the model at each constant it tries, none interpolated: with the constants
    it returns, the median log(predicted/measured) of each class's runs is 0 to 1e-9, as a fit that
    sets it to 0 by definition must give (interpolating between grid scales 5 % apart left each
    run's log ratio up to 7e-5 off, and the fit depending on the constants the product holds)."""
    c = fit.fit(records)
    for cls in fit.SUSTAINED_FRACTION:
        logs = [math.log(q) for q in fit.ratios([r for r in records if r.cls == cls], c)]
        assert statistics.median(logs) == pytest.approx(0, abs=1e-9), cls


def test_every_run_names_its_source_and_none_is_forbidden():
    """Every row carries its source and the quote it was read from; no figure comes from a forbidden source."""
    assert len(ROWS) == 99
    for r in ROWS:
        assert r["source"].strip() and r["quote"].strip() and r["source_id"].strip(), r["run"]
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


@pytest.mark.slow
def test_torchtitan_tp_runs_cost_what_the_same_runs_without_tp_cost():
    """torchtitan PR #1690 (Qwen3-32B, H100, no compile, full AC) measured its FSDP-only runs and its
    FSDP × TP runs on the same code: whatever the model misses that is not tensor-parallel (eager
    element-wise work, the optimizer) misses both alike.  With the q/k all-gathers of torchtitan's
    Qwen3 TP plan at that commit (tp_qk_norm_gather: NoParallel on q_norm and k_norm,
    torchtitan/experiments/qwen3/infra/parallelize.py @d66b72a6, issue #1867) and the copies of its
    sequence-parallel collectives on batch-first activations, each TP run's predicted/measured lies
    within 12 % of the median of the FSDP-only runs' (8-11 %: what stays is tensor-parallel and not
    modelled); without the gathers the TP8 runs sit 20 % or more above it."""
    runs = [r for r in COMPLETE if r["source_id"] == "torchtitan_pr1690"]
    fsdp = [bt.predict(r)["ratio"] for r in runs if r["run"].endswith("_nocompile")]
    tp = [r for r in runs if r["tp"] not in ("", "1")]
    assert len(fsdp) == 3 and len(tp) == 4
    ref = statistics.median(fsdp)
    for r in tp:
        assert r["tp_qk_norm_gather"] == "true"
        assert bt.predict(r)["ratio"] / ref == pytest.approx(1, abs=0.12), r["run"]
        if "_tp8_" in r["run"]:
            plain = bt.predict({**r, "tp_qk_norm_gather": ""})["ratio"]
            assert plain / ref >= 1.20, r["run"]


def test_eager_rotary_work_on_the_ranks_own_heads():
    """torchtitan runs apply_rotary_emb and repeat_kv as eager ops on every head of the rank
    (pytorch/torchtitan @d66b72a6 torchtitan/experiments/qwen3/model/model.py), 22 bytes per q/k
    element per forward pass and 26 backward (the count time.py already used for the heads
    tp_qk_norm_gather replicates).  Qwen3-32B, FSDP 8, 2 × 4096 tokens, full AC (two forward passes),
    by hand: 64 layers × 8,192 tokens × (64 + 8) heads × 128 × (22 × 2 + 26) = 338,228,674,560 bytes;
    Megatron-LM (fused RoPE, grouped keys read in place) none."""
    row = next(
        r for r in COMPLETE if r["run"] == "torchtitan_pr1690_qwen3_32b_fsdp8_lbs2_nocompile"
    )
    v = bt.compute(bt.config_of(row)).values
    assert v["middle_stage_qk_eager_bytes"] == 64 * 8192 * (64 + 8) * 128 * (22 * 2 + 26)
    mega = bt.compute(bt.config_of({**row, "framework": "megatron"})).values
    assert mega["middle_stage_qk_eager_bytes"] == 0


def test_fsdp2_copies_each_gathered_layer_out_on_the_compute_stream():
    """FSDP2's foreach_all_gather_copy_out (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py
    @010ae4a8) waits on the all-gather's event and copies the flat buffer into the parameters with
    torch.split_with_sizes_copy on the compute stream.  Qwen3-32B, FSDP 8, one micro-batch, gathered
    in forward and again in backward, by hand: 2 × 32,762,123,264 parameters × (2 read + 2 written
    bytes) ÷ (3,350 GB/s × 0.9) = 0.0869 s; Megatron-LM's ZeRO-1 has no such copy."""
    row = next(
        r for r in COMPLETE if r["run"] == "torchtitan_pr1690_qwen3_32b_fsdp8_lbs1_nocompile"
    )
    v = bt.compute(bt.config_of(row)).values
    assert v["zero3_gather_copy_s"] == pytest.approx(2 * 32_762_123_264 * 4 / (3350e9 * 0.9))
    mega = bt.compute(bt.config_of({**row, "framework": "megatron", "zero": "1"})).values
    assert mega["zero3_gather_copy_s"] == 0
    # FSDP over a group of one rank gathers nothing and copies nothing out: PyTorch skips
    # foreach_all_gather and foreach_all_gather_copy_out when the shard group has one rank
    # (pytorch/pytorch#160135, "skipping allgather when world size is 1"; a (N, 1)
    # HSDP mesh runs no all-gather, pytorch/pytorch#163761)
    alone = bt.compute(bt.config_of({**row, "dp": "1", "global_batch": "1"})).values
    assert alone["zero3_gather_copy_s"] == 0
