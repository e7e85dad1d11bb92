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


def test_runs_the_model_was_not_built_on():
    """The ten runs added after the allocator, loss and pipeline mechanisms were written (torchtitan
    PR 1690: Qwen3-32B on 8-32 H100 96GB, FSDP and FSDP + TP with loss parallel, full AC; PR 1672:
    DeepSeek-V3 16B with EP 4; PR 2679: Qwen3-30B-A3B, EP 8), at the shipped constants fitted before
    they were added (python bench/bench_fidelity.py): median 4.5 %, largest 16.1 %, bias 0.984 (the
    model before these mechanisms: 18.6 %, 26.3 %, 0.814)."""
    new = [r for r in RUNS if r.run.startswith(("tt1690", "tt1672", "tt2679"))]
    assert len(new) == 10
    med, worst = errors(new)
    assert med <= 0.05 and worst <= 0.20
    assert 0.95 <= bias(new) <= 1.05


def test_shipped_median_and_largest_error_do_not_get_worse():
    med, worst = errors(RUNS)
    assert len(RUNS) >= 20
    assert med <= 0.10, f"median error {med:.1%}"
    assert worst <= 0.25, f"largest error {worst:.1%}"


# The leave-one-source-out bounds per counter (median, largest error): the goal, 10 % and 25 %.
LOSO_LIMITS = {"allocated": (0.10, 0.25), "reserved": (0.10, 0.25), "device": (0.10, 0.25)}


def test_leave_one_source_out_per_counter():
    """Leave-one-source-out, per counter: the median and largest error within LOSO_LIMITS and the
    bias within 0.95-1.05 on the counters with runs from more than one source (one source's runs can
    only be predicted with the constants the others set).  Recorded before the allocator model
    (python bench/bench_fidelity.py): median 7.5 / 5.8 / 3.9 %, largest 13.7 / 14.1 / 3.9 %, bias
    0.951 / 1.004 / 0.961 (allocated / reserved / device), with one constant fitted on all three
    counters; after it, fitted on the reserved counter only, with 10 runs from three new sources
    (torchtitan PRs 1690, 1672, 2679): 7.3 / 4.2 / 4.6 %, 15.1 / 17.4 / 4.6 %, 0.973 / 1.005 / 0.954."""
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


def _row(**cols):
    from ledger_report.engine import compute
    from ledger_report.inputs import config_from_mapping

    base = dict(
        name="r",
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        ffn_hidden=14336,
        vocab=128256,
        seq_len=8192,
        micro_batch=1,
        dp=8,
        zero=3,
        framework="fsdp2",
    )
    base.update(cols)
    return compute(config_from_mapping(base))


def test_loss_bytes_per_logit_follow_each_kernel():
    """Bytes per logit by implementation, 16-bit logits, read from the kernels' code: eager
    cross_entropy(logits.float()) 8 forward / 12 backward (aten log_softmax, nll_loss_backward,
    _log_softmax_backward_data); PyTorch's loss parallel 12 / 16 (torch/distributed/tensor/parallel/
    loss.py @ 02eef6b8: x.to(fp32), x − max, exp; zeros_like(x), exp(x), their sum and the result);
    Megatron-LM's vocab-parallel loss 4 / 6 (one fp32 copy in place; the 16-bit gradient);
    torchtune's chunked output with 8 chunks 4 + 4/8 / 4 + 8/8 and its logits not divided."""
    n = 8192 * 128256
    for impl, fwd, bwd in (
        ("eager_fp32", 8, 12),
        ("loss_parallel", 12, 16),
        ("megatron_fused", 4, 6),
        ("chunked_output", 4.5, 5),
    ):
        led = _row(loss_impl=impl, logits_dtype="bf16", loss_chunks=8)
        chunks = 1 if impl == "chunked_output" else 8
        assert led["logit_elements"] == n / chunks
        assert led["loss_forward_bytes"] == pytest.approx(n / chunks * fwd)
        assert led["loss_backward_bytes"] == pytest.approx(n / chunks * bwd)
    assert _row(loss_impl="fused_linear_ce")["logits_full_bytes"] == 0


def test_loss_parallel_is_torchtitans_default_with_tp():
    """torchtitan turns loss parallel on with tensor parallelism (torchtitan/distributed/utils.py
    maybe_enable_loss_parallel); Megatron-LM runs its own vocab-parallel loss."""
    assert _row(tp=2)["loss_impl"] == "loss_parallel"
    assert _row()["loss_impl"] == "eager_fp32"
    assert _row(framework="megatron", zero=1)["loss_impl"] == "megatron_fused"


def test_the_allocator_keeps_the_16_bit_logits_block_in_the_loss_backward():
    """Hand-traced with CUDACachingAllocator's rules (c10/cuda/CUDACachingAllocator.cpp @ 001074d2):
    forward takes the bf16 logits (2 B a logit), their fp32 copy (4) and the log-softmax (4); the
    copy and the logits are freed; backward's nll gradient (4) reuses the copy's block, the
    log-softmax gradient (4) finds only the 2-byte block free and takes new memory.  So the reserved
    peak at the loss backward is the allocated one plus the logits' 2 bytes a logit; Megatron's
    in-place loss strands nothing."""
    led = _row(loss_impl="eager_fp32", logits_dtype="bf16")
    assert led["allocator_stranded_bytes"] == 8192 * 128256 * 2
    assert led["reserved_explained_bytes"] == max(
        led["peak_allocated_bytes_per_rank"],
        led["phase_backward_bytes"] + led["allocator_stranded_bytes"],
    )
    assert _row(framework="megatron", zero=1)["allocator_stranded_bytes"] == 0


def test_output_layer_input_is_gathered_under_sequence_parallelism_in_torchtitan():
    """torchtitan's output layer all-gathers the sequence (ColwiseParallel(input_layouts=Shard(1)))
    and saves the gathered 16-bit input, 2·s·b·h; Megatron-LM saves the shard, 2·s·b·h/tp."""
    sbh = 8192 * 4096
    assert _row(tp=4, sequence_parallel=True)["act_output_layer_input"] == 2 * sbh
    led = _row(framework="megatron", zero=1, tp=4, sequence_parallel=True)
    assert led["act_output_layer_input"] == 2 * sbh / 4


@pytest.mark.parametrize("cp,seq", [(1, 32000), (2, 80000), (4, 144000), (8, 300000)])
def test_the_longest_sequences_that_ran_are_said_to_fit(cp, seq):
    """torchtitan PR 592 (pytorch/torchtitan b19456a9, 'enable Context Parallel'): Llama-3-8B,
    train_configs/llama3_8b.toml with full activation checkpointing, batch 1, FSDP 8 × CP on H100
    80GB: 'As Context Parallel degrees goes up (1, 2, 4, 8), the max seq_len also increases (32k,
    80k, 144k, 300k)' without OOM; the loss cross_entropy(pred.float()) eager, 'del pred' before
    backward (train.py), run_llama_train.sh sets expandable_segments:True.  32-40 thousand tokens a
    rank, so the loss holds 49-62 GB: each of these ran, so each must be said to fit."""
    led = _row(
        cp=cp,
        seq_len=seq,
        recompute="full",
        expandable_segments=True,
        grad_dtype="fp32",
        master_dtype="fp32",
        optimizer="adamw",
        global_batch=8,
    )
    assert led["loss_backward_bytes"] > 45e9
    assert led["fits"], f"{led['peak_bytes_per_rank'] / 1e9:.1f} GB on {led['hbm_bytes'] / 1e9:.1f}"
