"""Every figure of the three worked scenarios in docs/scenarios.md, reproduced by the engine.

Each test names the scenario's section and the figure it reproduces, with the hand calculation.
Rows come from the shipped example (inputs/examples.csv), so the figures users see are the ones tested.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger_report.engine import compute, config_from_mapping
from ledger_report.inputs import read_configs
from ledger_report.model import units
from ledger_report.render.document import config_document

ROOT = Path(__file__).resolve().parents[1]
ROWS = {c.name: c for c in read_configs(ROOT / "inputs" / "examples.csv")}


def ledger(name: str, **changes):
    c = ROWS[name]
    return compute(c.replace(**changes) if changes else c)


def line(lg, state: str, part: str = "dense") -> int:
    return lg[f"{state}_{part}_bytes"]


# ---- docs/scenarios.md: Qwen3-8B, 100B tokens in 30 days------------------------------------------------


def test_qwen3_8b_parameter_count_from_architecture():
    """docs/scenarios.md, Qwen3-8B (the job in numbers): N = 8,190,735,360 (36 layers, h 4096, 32/8 heads, d 128, ffn 12288, vocab 151936, untied, qk-norm)."""
    assert ledger("qwen3-8b-zero0")["params_total"] == 8_190_735_360


def test_qwen3_8b_state_16_bytes_per_param_is_131_1_GB_122_1_GiB():
    """docs/scenarios.md, Qwen3-8B (the state): 16 B × N = 131.1 GB = 122.1 GiB; each state 16.4 / 16.4 / 32.8 / 32.8 / 32.8 GB."""
    lg = ledger("qwen3-8b-zero0")
    n = 8_190_735_360
    assert lg["state_bytes_per_rank"] == 16 * n
    assert units.gb(lg["state_bytes_per_rank"]) == "131.1 GB"
    assert units.gib(lg["state_bytes_per_rank"]) == "122.1 GiB"
    assert [units.gb(line(lg, s)) for s in ("weights", "grads", "master", "m", "v")] == [
        "16.4 GB",
        "16.4 GB",
        "32.8 GB",
        "32.8 GB",
        "32.8 GB",
    ]


def test_qwen3_8b_fp32_grads_18_bytes_147_4_GB():
    """docs/scenarios.md, Qwen3-8B (the state): with fp32 gradients 18 B per parameter, 147.4 GB."""
    lg = ledger("qwen3-8b-fp32-grads")
    assert lg["state_bytes_per_param"] == 18
    assert units.gb(lg["state_bytes_per_rank"]) == "147.4 GB"


def test_qwen3_8b_task_in_numbers():
    """docs/scenarios.md, Qwen3-8B (the job in numbers): 384 × 8192 = 3,145,728 tokens/step; ⌈1e11/3,145,728⌉ = 31,790 steps; 25 × 86400 / 31,790 ≈ 67.9 s; ≈ 46,300 tokens/s."""
    lg = ledger("qwen3-8b-zero0")
    assert lg["tokens_per_step"] == 3_145_728
    assert lg["steps"] == 31_790
    assert round(lg["step_budget_s"], 1) == 67.9
    assert round(lg["required_tokens_per_s"], -2) == 46_300
    # "38,600 over the full 30 days": the same definition with no reserve
    assert round(ledger("qwen3-8b-zero0", reserve_days=0)["required_tokens_per_s"], -2) == 38_600


def test_qwen3_8b_flops_52_7_G_per_token_5_27e21_total():
    """docs/scenarios.md, Qwen3-8B (compute): 4.31e14 FLOPs per 8,192-token sequence, 52.7 GFLOPs per token, 5.27e21 in all.

    Hand check: 6 × (8,190,735,360 − 151,936 × 4,096) + 6 × 36 × 8,192 × 32 × 128 = 52,658,190,336.
    """
    lg = ledger("qwen3-8b-zero0")
    assert (
        lg["flops_per_token"]
        == 6 * (8_190_735_360 - 151_936 * 4096) + 6 * 36 * 8192 * 32 * 128
        == 52_658_190_336
    )
    assert f"{lg['flops_per_token'] * 8192:.2e}" == "4.31e+14"
    assert units.sci(lg["total_flops"]) == "5.27e21"


def test_qwen3_8b_tokens_per_gpu_and_the_5_vs_6_gpu_check():
    """docs/scenarios.md, Qwen3-8B (compute): H100 at 40 %: 5 GPUs fall short of 38,600 tokens/s, 6 do not.

    Dividing 395.6 TFLOP/s by the rounded 52.7 GFLOPs gives 7,507; the engine divides by the exact
    52.658 GFLOPs and gets 7,513 (5 → 37,563, 6 → 45,076).  The conclusion is the same.
    """
    lg = ledger("qwen3-8b-zero0")
    per_gpu = lg["tokens_per_s_per_gpu"]
    assert round(989e12 * 0.4 / 52.7e9) == 7507  # with the rounded FLOPs per token
    assert round(per_gpu) == 7513
    need = ledger("qwen3-8b-zero0", reserve_days=0)["required_tokens_per_s"]
    assert 5 * per_gpu < need <= 6 * per_gpu


def test_qwen3_8b_six_gpus_for_30_days_at_40_percent():
    """docs/scenarios.md, Qwen3-8B (compute): 5.27e21 / (989e12 × 0.4 × 30 × 86400) ≈ 5.1 → 6 GPUs (no days held in reserve)."""
    lg = ledger("qwen3-8b-30d-6gpu")
    assert lg["gpus_needed_compute"] == 6
    assert lg["min_gpus_compute"] == 6  # 6 divides the 384 sequences of the batch
    assert lg["days_on_config"] <= 30


def test_qwen3_8b_reserve_of_5_days_needs_7_gpus():
    """docs/scenarios.md, Qwen3-8B (compute): with 5 of the 30 days kept for checkpoints and failures,

    the reserve honoured: 5.27e21 / (989e12 × 0.4 × 25 × 86400) = 6.16 → 7 GPUs.
    """
    assert ledger("qwen3-8b-zero0")["gpus_needed_compute"] == 7


def test_qwen3_8b_seven_gpus_of_compute_are_bought_as_eight():
    """docs/scenarios.md, Qwen3-8B (compute): dp must divide the batch of 384 sequences (micro-batch 1):
    its divisors run 6, 8, 12, so 7 GPUs of compute build as 8 and 9 as 12; 5 as 6."""
    assert [d for d in range(5, 13) if 384 % d == 0] == [6, 8, 12]
    assert ledger("qwen3-8b-zero0")["min_gpus_compute"] == 8
    assert ledger("qwen3-8b-zero0", mfu=0.3)["min_gpus_compute"] == 12
    assert ledger("qwen3-8b-zero0", mfu=0.5, reserve_days=0)["min_gpus_compute"] == 6


def test_qwen3_8b_two_gpus_hold_the_state_but_need_77_days():
    """docs/scenarios.md, Qwen3-8B (two gates): 2 × 80 GB hold 131.1 GB (the state's floor is 2) but take about 77 days."""
    lg = ledger("qwen3-8b-2gpu-77d")
    assert lg["state_floor_gpus"] == 2 == -(-131_051_765_760 // 84_943_515_697)
    assert round(lg["days_on_config"]) == 77
    assert lg["binding_gate"] == "compute"


def test_qwen3_8b_zero3_layout_fits_from_three_gpus():
    """docs/scenarios.md, Qwen3-8B (two gates): at two ranks the whole peak is 92.7 GB on the device, over
    the 84.94 GB CUDA gives a process on an H100 80GB; at three the 65.5 GB of sharded state per rank
    becomes 43.7 GB, and the peak falls by the difference (× the allocator reserve) under the HBM."""
    lg = ledger("qwen3-8b-2gpu-77d")
    # 92.7 GB with a flat 5 % reserve; 91.1 GB with the allocator model (the stranded bf16 logits
    # block and the fitted 4 % residual reserve, docs/definitions.md#counters) and no layer's
    # gathered gradients beside the loss backward
    assert lg["fits"] is False and round(lg["peak_bytes_per_rank"] / 1e9, 1) == 91.1
    assert lg["min_gpus_memory"] == 3
    three = ledger("qwen3-8b-2gpu-77d", dp=3, global_batch=384)
    assert three["fits"] is True


def test_qwen3_8b_plain_data_parallel_never_fits():
    """docs/scenarios.md, Qwen3-8B (two gates): under ZeRO-0 every rank keeps 16 B/param = 131.1 GB, above
    84.94 GB whatever dp is: the memory gate says never, and it binds."""
    lg = ledger("qwen3-8b-zero0")
    assert lg["min_gpus_memory"] is None and lg["memory_gate_never"] is True
    assert lg["binding_gate"] == "memory"
    assert (
        lg["min_gpus_memory_reason"].startswith("never: ")
        and "ZeRO-0 shards nothing" in lg["min_gpus_memory_reason"]
    )
    assert ledger("qwen3-8b-zero0", dp=64, global_batch=384)["fits"] is False


def test_qwen3_8b_thirty_percent_needs_7_gpus_not_8():
    """docs/scenarios.md, Qwen3-8B (compute): at 30 % (a common rule of thumb says 8 GPUs; it is neither):

    5.27e21 / (989e12 × 0.3 × 30 × 86400) = 6.85 → 7 GPUs for 30 days, and
    5.27e21 / (989e12 × 0.3 × 25 × 86400) = 8.22 → 9 GPUs with the 5-day reserve.
    And "50 % → 5": 4.11 → 5 GPUs for 30 days (correct).
    """
    assert ledger("qwen3-8b-zero0", mfu=0.3, reserve_days=0)["gpus_needed_compute"] == 7
    assert ledger("qwen3-8b-zero0", mfu=0.3)["gpus_needed_compute"] == 9
    assert ledger("qwen3-8b-zero0", mfu=0.5, reserve_days=0)["gpus_needed_compute"] == 5


@pytest.mark.parametrize(
    "row, per_n",
    [("qwen3-8b-zero0", 16), ("qwen3-8b-zero1", 7), ("qwen3-8b-zero2", 5.5), ("qwen3-8b-zero3", 4)],
    ids=["zero0-16N", "zero1-4N+12N/p", "zero2-2N+14N/p", "zero3-16N/p"],
)
def test_qwen3_8b_zero_stages_on_4_gpus(row, per_n):
    """docs/scenarios.md, Qwen3-8B (sharding on 4 GPUs): p = 4: ZeRO-0 16N, ZeRO-1 4N + 3N = 7N, ZeRO-2 2N + 3.5N = 5.5N, ZeRO-3 4N."""
    lg = ledger(row)
    assert lg["state_bytes_per_rank"] == pytest.approx(per_n * 8_190_735_360, abs=8)


# ---- docs/scenarios.md: a 35B MoE on 40 H20 with EP8 --------------------------------------------------------


def test_moe35b_expert_split_solved_from_params_per_rank():
    """docs/scenarios.md, 35B MoE (the expert split): X + E = 35B, X + E/8 = 6.9B → E ≈ 32.1B, X ≈ 2.9B (E = 28.1/0.875)."""
    lg = ledger("moe35b-ep8-bf16-buffer")
    assert lg["params_expert"] == pytest.approx(28.1e9 / 0.875)
    assert f"{lg['params_expert'] / 1e9:.1f}" == "32.1"
    assert f"{lg['params_dense'] / 1e9:.1f}" == "2.9"
    assert lg["params_per_rank"] == 6_900_000_000


def test_moe35b_weights_and_grad_buffers():
    """docs/scenarios.md, 35B MoE (the state per rank): bf16 weights 6.9e9 × 2 = 13.8 GB; fp32 grad buffer 27.6 GB; bf16 buffer 13.8 GB."""
    fp32 = ledger("moe35b-ep8-fp32-buffer")
    bf16 = ledger("moe35b-ep8-bf16-buffer")
    weights = line(bf16, "weights") + line(bf16, "weights", "expert")
    assert units.gb(weights) == "13.8 GB"
    assert units.gb(line(fp32, "grads") + line(fp32, "grads", "expert")) == "27.6 GB"
    assert units.gb(line(bf16, "grads") + line(bf16, "grads", "expert")) == "13.8 GB"


def test_moe35b_optimizer_shard_10_5_GB_expert_dp_is_5():
    """docs/scenarios.md, 35B MoE (the state per rank): non-expert 2.9e9 × 12 / 40 = 0.87 GB; expert 4.0e9 × 12 / 5 = 9.63 GB; total ≈ 10.5 GB."""
    lg = ledger("moe35b-ep8-bf16-buffer")
    assert lg["dense_shard_group"] == 40 and lg["expert_shard_group"] == 5
    dense = sum(line(lg, s) for s in ("master", "m", "v"))
    expert = sum(line(lg, s, "expert") for s in ("master", "m", "v"))
    assert units.gb(dense) == "0.87 GB"
    assert units.gb(expert) == "9.63 GB"
    assert units.gb(dense + expert) == "10.5 GB"


def test_moe35b_resident_state_38_1_GB_and_47_5_GB_left_for_activations():
    """docs/scenarios.md, 35B MoE (the state per rank): 13.8 + 13.8 + 10.5 = 38.1 GB resident; 85.6 − 38.1 = 47.5 GB of activations and buffers."""
    lg = ledger("moe35b-ep8-bf16-buffer")
    assert units.gb(lg["state_bytes_per_rank"]) == "38.1 GB"
    assert units.gb(lg["measured_minus_state_bytes"]) == "47.5 GB"
    assert (
        round(lg["measured_peak_bytes"] / lg["hbm_bytes"], 2) == 0.84
    )  # of the 95.0 GiB = 102.0 GB CUDA gives a process


def test_moe35b_expert_dp_of_40_would_save_8_4_GB():
    """docs/scenarios.md, 35B MoE (the state per rank): were the experts' group 40: 4.0e9 × 12 / 40 = 1.20 GB, i.e. 9.63 − 1.20 = 8.4 GB less.

    Same per-rank expert parameters, same definition, with that group.
    """
    lg = ledger("moe35b-ep8-bf16-buffer")
    per_rank_expert = lg["expert_params_on_rank"]
    assert units.gb(per_rank_expert * 12 / 40) == "1.20 GB"
    expert_now = sum(line(lg, s, "expert") for s in ("master", "m", "v"))
    assert units.gb(expert_now - per_rank_expert * 12 / 40) == "8.43 GB"  # "8.4 GB"


def test_moe35b_bf16_moments_6_4_GB():
    """docs/scenarios.md, 35B MoE (questions): fp32 master + bf16 m + bf16 v = 8 B; 4.0e9 × 8 / 5 = 6.4 GB, 3.2 GB less than 9.63 GB."""
    lg = ledger("moe35b-ep8-bf16-moments")
    expert = sum(line(lg, s, "expert") for s in ("master", "m", "v"))
    assert units.gb(expert) == "6.42 GB"
    before = ledger("moe35b-ep8-bf16-buffer")
    saved = sum(line(before, s, "expert") for s in ("master", "m", "v")) - expert
    assert f"{saved / 1e9:.1f}" == "3.2"


def test_moe35b_unsharded_state_560_GB():
    """docs/scenarios.md, 35B MoE (the state per rank): 35e9 × 16 B = 560 GB with no sharding (18 B with fp32 gradients)."""
    lg = ledger("moe35b-ep8-bf16-buffer")
    assert lg["state_bytes_logical_total"] == 560e9
    assert ledger("moe35b-ep8-fp32-buffer")["state_bytes_per_param"] == 18


def test_moe35b_full_recompute_activations_9_7_GB():
    """docs/scenarios.md, 35B MoE (outside the state): layers × seq × hidden × 2 B × micro_batch = 48 × 49152 × 2048 × 2 ≈ 9.7 GB."""
    lg = ledger("moe35b-ep8-bf16-buffer")
    # the layers' part: the stage's activations less what lives outside the layers (the
    # embedding's output, the final norm's tensors and the output layer's input)
    layers = lg["activation_bytes_per_rank"] - lg["act_outside_first"] - lg["act_outside_last"]
    assert layers == 48 * 49152 * 2048 * 2
    assert f"{layers / 1e9:.1f}" == "9.7"


def test_moe35b_logits_14_9_GB_bf16_29_9_GB_fp32():
    """docs/scenarios.md, 35B MoE (outside the state): 49152 × 151936 × 2 B = 14.9 GB; × 4 B = 29.9 GB; chunked CE divides by the chunks."""
    bf16 = ledger("moe35b-ep8-bf16-buffer")
    assert units.gb(bf16["logits_bytes_per_rank"]) == "14.9 GB"
    assert (
        units.gb(ledger("moe35b-ep8-bf16-buffer", logits_dtype="fp32")["logits_bytes_per_rank"])
        == "29.9 GB"
    )
    assert (
        ledger("moe35b-ep8-bf16-buffer", loss_chunks=8)["logits_bytes_per_rank"]
        == bf16["logits_bytes_per_rank"] / 8
    )


def test_moe35b_full_recompute_costs_8_over_6_of_the_layers():
    """docs/scenarios.md, 35B MoE (outside the state): full recompute 8ND / 6ND = 4/3 ≈ 1.33 of the
    layers' FLOPs; the output head (6·vocab·h per token) runs once (Megatron-LM @d98e8a64
    megatron/core/transformer/transformer_block.py checkpoints the block's layers only), so
    HFU = MFU × (1 + (flops − 6·vocab·h) / (3·flops)) = 1.31 × MFU, a little under 4/3."""
    lg = ledger("moe35b-ep8-bf16-buffer")
    fpt, head = lg["flops_per_token"], 6 * lg["padded_vocab"] * lg["hidden"]
    assert lg["hfu"] == pytest.approx(lg["mfu"] * (1 + (fpt - head) / (3 * fpt)))
    assert round(lg["hfu"] / lg["mfu"], 2) == 1.31


def test_moe35b_first_step_allocation_and_the_timeline():
    """docs/scenarios.md, 35B MoE (the timeline): Megatron-LM allocates its grad buffer when DDP is built and the fp32
    master shard when the distributed optimizer is built; Adam's m and v (7.0 GB) come at the first
    step.  So the first step peaks at the loss with 31.1 GB of state + 9.66 GB of activations + 14.9 GB
    of bf16 logits + their 29.9 GB fp32 copy = 85.6 GB (the measured peak), and every later step holds
    7.0 GB more."""
    lg = ledger("moe35b-ep8-bf16-buffer")
    d = config_document(lg)
    item = next(u for u in d["uncounted"] if u["item"] == "first_step_optimizer")
    assert units.gb(item["bytes_per_rank"]) == "7.00 GB"
    setup = next(p for p in d["phases"] if p["phase"] == "setup")
    assert units.gb(setup["bytes_per_rank"]) == "31.1 GB"
    # the estimate also holds what lives outside the layers (the embedding's output, the final
    # norm's tensors, the output layer's input: 0.8 GB), within 1.5 % of the measured 85.6 GB
    assert lg["first_step_peak_bytes"] == pytest.approx(85.6e9, rel=0.015)
    assert lg["peak_phase"] == "loss"
    assert lg["peak_allocated_bytes_per_rank"] - lg["first_step_peak_bytes"] == pytest.approx(
        item["bytes_per_rank"], abs=8
    )


def test_moe35b_ep4_question():
    """docs/scenarios.md, 35B MoE (questions): EP8 → EP4: per rank X + E/4 ≈ 10.9B, bf16 weights 21.8 GB, expert DP 10, optimizer shard unchanged (9.63 GB), peak rises."""
    ep4 = ledger("moe35b-ep4-bf16-buffer")
    ep8 = ledger("moe35b-ep8-bf16-buffer")
    assert f"{ep4['params_per_rank'] / 1e9:.1f}" == "10.9"
    assert units.gb(line(ep4, "weights") + line(ep4, "weights", "expert")) == "21.8 GB"
    assert ep4["expert_shard_group"] == 10
    assert units.gb(sum(line(ep4, s, "expert") for s in ("master", "m", "v"))) == "9.63 GB"
    assert ep4["peak_bytes_per_rank"] > ep8["peak_bytes_per_rank"]


# ---- docs/scenarios.md: a 5T-parameter MoE ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "row, bpp, tb, tib",
    [
        ("moe5t-16B", 16, "80.0 TB", "72.8 TiB"),
        ("moe5t-18B", 18, "90.0 TB", "81.9 TiB"),
        ("moe5t-20B", 20, "100.0 TB", "90.9 TiB"),
    ],
    ids=["all-fp32-adam", "bf16-fp32-update", "fp16-double-grad"],
)
def test_moe5t_5T_logical_state(row, bpp, tb, tib):
    """docs/scenarios.md, 5T MoE (the table): 5T × 16 / 18 / 20 B; the baseline 18 B gives 90 TB ≈ 81.9 TiB."""
    lg = ledger(row)
    assert lg["state_bytes_per_param"] == bpp
    assert lg["state_bytes_logical_total"] == bpp * 5 * 10**12
    assert units.gb(lg["state_bytes_logical_total"]) == tb
    assert units.gib(lg["state_bytes_logical_total"]) == tib


def test_moe5t_ddp_replicas_do_not_lower_per_rank_state():
    """docs/scenarios.md, 5T MoE: plain data parallelism keeps the full state on every rank: more dp, same per-rank bytes."""
    one = ledger("moe5t-18B")
    many = ledger("moe5t-18B", dp=64)
    assert many["state_bytes_per_rank"] == one["state_bytes_per_rank"] == 90 * 10**12


@pytest.mark.parametrize("d", [1, 4, 40, 1024])
@pytest.mark.parametrize(
    "dtypes, whole, shard",
    [
        (dict(weight_dtype="bf16", grad_dtype="fp32"), 6, 12),
        (dict(weight_dtype="fp16", grad_dtype="fp16", main_grad_dtype="fp32"), 4, 16),
        (dict(weight_dtype="fp32", grad_dtype="fp32"), 8, 8),
        (dict(weight_dtype="bf16", grad_dtype="bf16"), 4, 12),
    ],
    ids=["bf16-fp32buf-18|6+12/d", "fp16-20|4+16/d", "fp32-16|8+8/d", "bf16buf-16|4+12/d"],
)
def test_megatron_distributed_optimizer_table(dtypes, whole, shard, d):
    """Megatron Core docs, "Distributed Optimizer" table (docs/scenarios.md, 5T MoE): whole + shard/d bytes per parameter."""
    n = 10**9 * d  # divisible by every d, so the figure is exact
    base = dict(name="m", params_total=n, framework="megatron", zero=1, dp=d)
    lg = compute(config_from_mapping({**base, **dtypes}))
    assert lg["state_bytes_per_rank"] == (whole * n + shard * n // d)
    lg0 = compute(config_from_mapping({**base, **dtypes, "zero": 0}))
    assert lg0["state_bytes_per_rank"] == (whole + shard) * n


def test_deepspeed_estimators():
    """DeepSpeed estimate_zero2_model_states_mem_needs: 2P + 18P/N; zero3: 18P/N + 4 × largest layer (outside the ledger)."""
    n = 8 * 10**9
    z2 = compute(
        config_from_mapping(dict(name="d", params_total=n, framework="deepspeed", zero=2, dp=8))
    )
    assert z2["state_bytes_per_rank"] == 2 * n + 18 * n // 8
    row = ROWS["fsdp-7b-finetune"].replace(framework="deepspeed", zero=3, dp=8)
    z3 = compute(row)
    assert z3["state_bytes_per_rank"] == pytest.approx(18 * z3["params_total"] / 8, abs=64)
    assert (
        z3["largest_matrix_params"] == 32000 * 4096
    )  # Llama-2-7B's embedding beats its 4096 × 11008 MLP matrices
    assert z3["zero3_gather_bytes_per_rank"] == 4 * 32000 * 4096


def test_moe35b_attention_matrix_one_head_4_8_GB_without_flash():
    """docs/scenarios.md, 35B MoE (outside the state): naive attention keeps s² scores: 49152² × 2 B ≈ 4.8 GB per head.

    Without dropout the engine's per-layer score term is the softmax output alone, 2·heads·s²·b
    (Korthikanti's 5 = softmax 2 B + dropout mask 1 B + dropout output 2 B per element).
    """
    lg = ledger("moe35b-ep8-bf16-buffer", flash_attention=False, recompute="none")
    per_head_softmax = lg["act_scores_per_attention_layer"] / lg["heads"]
    assert ledger("moe35b-ep8-bf16-buffer", flash_attention=False, recompute="none", dropout=True)[
        "act_scores_per_attention_layer"
    ] == pytest.approx(lg["act_scores_per_attention_layer"] * 5 / 2)
    assert per_head_softmax == 49152**2 * 2
    assert f"{per_head_softmax / 1e9:.1f}" == "4.8"


def test_moe35b_hybrid_one_layer_in_four_has_softmax_attention():
    """docs/scenarios.md, 35B MoE (outside the state): full attention in 1 of every 4 layers (the rest linear attention): 12 of 48 layers pay attention FLOPs."""
    lg = ledger("moe35b-ep8-bf16-buffer")
    assert lg["attention_layers"] == 12
    assert lg["attention_flops_per_token"] == 6 * 12 * 49152 * 16 * 256
