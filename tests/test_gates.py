"""The two gates on the GPU count (model/definitions/compute.py, docs/definitions.md#gates), each
against a hand calculation on a shipped example row: buildable counts only, the memory gate at the
row's own layout, 'never' with its reason, and the binding gate."""

from __future__ import annotations

from pathlib import Path

from ledger_report.engine import compute, config_from_mapping
from ledger_report.inputs import read_configs

ROOT = Path(__file__).resolve().parents[1]
ROWS = {c.name: c for c in read_configs(ROOT / "inputs" / "examples.csv")}


def ledger(name: str, **changes):
    c = ROWS[name]
    return compute(c.replace(**changes) if changes else c)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def test_tp8_pp2_deadline_gate_is_a_buildable_count():
    """Llama-3-70B at tp8·pp2: the deadline needs 239 GPUs of compute; a replica is 16 GPUs and dp must
    divide the 512 sequences of the batch (micro-batch 1): ceil(239 / 16) = 15 → the next divisor of 512
    is 16, so 16 × 16 = 256 GPUs."""
    lg = ledger("llama3-70b-64xh100")
    assert lg["gpus_needed_compute"] == 239
    assert lg["model_parallel_gpus"] == 16 and lg["batch_slots"] == 512
    assert min(d for d in divisors(512) if d >= -(-239 // 16)) == 16
    assert lg["min_gpus_compute"] == 256
    assert (
        lg["min_gpus_compute_reason"] == "239 GPUs of compute, built as 256 (dp 16 × tp·pp·cp 16)"
    )


def test_expert_groups_keep_dp_in_steps():
    """The 35B MoE at ep8, tp1: the experts' data-parallel group dp·cp·tp/(ep·etp) must be whole, so dp
    moves in steps of 8 / gcd(8, 1) = 8; the row's dp 40 is one of them."""
    lg = ledger("moe35b-ep8-bf16-buffer")
    assert lg["dp_step"] == 8
    assert lg["min_gpus_memory"] % 8 == 0


def test_whole_nodes_round_the_gates_to_nodes():
    """Qwen3-8B (tp1) with whole_nodes on H100 nodes of 8: dp steps by 8 / gcd(8, 1) = 8; 7 GPUs of
    compute become 8, and a 9-GPU need (mfu 0.3 with the reserve) becomes 16 rather than 12."""
    assert ledger("qwen3-8b-zero0", whole_nodes=True)["dp_step"] == 8
    assert ledger("qwen3-8b-zero0", mfu=0.3)["min_gpus_compute"] == 12  # 12 divides 384
    assert ledger("qwen3-8b-zero0", mfu=0.3, whole_nodes=True)["min_gpus_compute"] == 16


def test_memory_gate_can_shrink_a_row_that_fits():
    """Llama-2-7B, FSDP full shard on 8 A100-80GB: every state line is sharded, so fewer ranks hold more
    of it; the gate finds the fewest GPUs whose peak still fits, and the row's 8 is not it."""
    lg = ledger("fsdp-7b-finetune")
    assert lg["fits"] is True
    smallest = lg["min_gpus_memory"]
    assert smallest < 8
    assert ledger("fsdp-7b-finetune", dp=smallest)["fits"] is True
    below = [d for d in divisors(int(lg["batch_slots"])) if d < smallest]
    assert not below or ledger("fsdp-7b-finetune", dp=below[-1])["fits"] is False


def test_growing_dp_to_the_memory_gate_makes_the_row_fit():
    """Qwen3-8B ZeRO-3 on 4 H100 does not fit (no recompute: 54 GB of activations); the gate's dp fits
    and the buildable dp below it does not."""
    lg = ledger("qwen3-8b-zero3")
    assert lg["fits"] is False
    dp = lg["dp_for_memory"]
    assert ledger("qwen3-8b-zero3", dp=dp)["fits"] is True
    below = max(d for d in divisors(384) if d < dp)
    assert ledger("qwen3-8b-zero3", dp=below)["fits"] is False


def test_never_when_nothing_is_sharded():
    """ZeRO-0 keeps all 16 B/param on every rank: the part of the peak that shrinks with dp is 0, so the
    gate is never, the reason says so, and memory binds."""
    lg = ledger("qwen3-8b-zero0")
    assert lg["dp_sharded_peak_bytes"] == 0
    assert lg["min_gpus_memory"] is None and lg["memory_gate_never"] is True
    assert (
        lg["min_gpus_memory_reason"]
        == "never: 212.4 GB of the peak does not shrink with dp, above HBM 84.9 GB (ZeRO-0 shards nothing)"
    )
    assert lg["binding_gate"] == "memory"


def test_deadline_out_of_reach_of_the_batch():
    """A deadline that needs more data-parallel ranks than the batch has micro-batches cannot be met at
    this layout: the gate is blank and says how far dp can go (here 384 sequences: at most 384 GPUs)."""
    lg = ledger("qwen3-8b-zero0", tokens=10**13, days=10, reserve_days=0)
    assert lg["gpus_needed_compute"] > 384
    assert lg["min_gpus_compute"] is None
    assert lg["min_gpus_compute_reason"].endswith(
        "GPUs; the batch's 384 micro-batches cap this layout at 384"
    )
    assert lg["binding_gate"] == "memory"  # no dp fits under ZeRO-0 either


def test_columns_that_do_nothing_on_the_row_are_warned_of():
    """Megatron-LM's interleaved schedule splits each pipeline rank's layers into virtual stages;
    with pp = 1 there is no pipeline, so virtual_stages changes no figure (the bubble (pp - 1) /
    (v · m) is 0 either way); the mixture-of-experts columns describe experts, so on a dense
    row (experts empty) moe_every and shared_experts are not read.  Each is accepted, with a
    warning naming the column and the values, and the figures are those of the row without it."""
    from ledger_report.render.document import warnings

    base = {"name": "d", "model": "Qwen3-8B", "tokens": "10B", "days": 30}
    plain = compute(config_from_mapping(base))
    cases = {
        "virtual_stages = 1000 with pp = 1": {"virtual_stages": 1000},
        "experts empty with shared_experts = 3, moe_every = 7": {
            "moe_every": 7,
            "shared_experts": 3,
        },
    }
    for found, extra in cases.items():
        lg = compute(config_from_mapping({**base, **extra}))
        [text] = warnings(lg)
        assert found in text
        for key in ("peak_bytes_per_rank", "step_time_s", "params_total", "flops_per_token"):
            assert lg[key] == plain[key], key
    assert warnings(plain) == []


def test_a_hybrid_layout_without_its_linear_attention_columns_is_warned_of():
    """full_attention_every = 4 gives softmax attention to one layer in four; the others are the
    Gated DeltaNet layers the linear-attention columns describe, and without those columns they
    are counted as softmax attention (columns.csv's default of linear_key_heads), in the FLOPs as
    in the parameters and activations.  So the row's figures are those of the row without
    full_attention_every, and a warning names the column.  Before, the FLOPs per token left out
    the attention scores of 27 of Qwen3-8B's 36 layers: 27 × 3 (forward and backward) × 2 · seq
    · q width (the causal half of QK^T and AV) = 27 × 6 × 4096 × 4096 = 2,717,908,992 fewer, and
    a step predicted faster, with no warning."""
    from ledger_report.render.document import warnings

    base = {"name": "d", "model": "Qwen3-8B", "seq_len": 4096, "tokens": "10B", "days": 30}
    plain = compute(config_from_mapping(base))
    hybrid = compute(config_from_mapping({**base, "full_attention_every": 4}))
    [text] = warnings(hybrid)
    assert "full_attention_every = 4 with linear_key_heads empty" in text
    for key in ("flops_per_token", "peak_bytes_per_rank", "step_time_s", "params_total"):
        assert hybrid[key] == plain[key], key
    assert warnings(plain) == []
    # with the linear-attention columns (Qwen3-Next's) 9 layers keep softmax attention
    gdn = {"linear_key_heads": 16, "linear_value_heads": 32, "linear_key_head_dim": 128}
    gdn |= {"linear_value_head_dim": 128, "linear_conv_kernel": 4}
    real = compute(config_from_mapping({**base, "full_attention_every": 4, **gdn}))
    assert warnings(real) == [] and real["attention_layers"] == 9


def test_a_hybrid_without_its_linear_columns_keeps_a_given_params_total_as_a_warning():
    """The 35B MoE of inputs/examples.csv as it was shipped before its Gated DeltaNet columns:
    full_attention_every = 4 declares a hybrid, whose given params_total (35B) is the better count
    than the architecture's (40,359,389,184 with every layer counted as softmax attention), so the
    13 % difference is a warning, as it always was, not a refusal; the missing columns are the
    second warning."""
    from ledger_report.render.document import warnings

    row = next(c for c in read_configs(ROOT / "inputs" / "examples.csv") if "moe35b" in c.name)
    gdn = ("linear_key_heads", "linear_value_heads", "linear_key_head_dim")
    gdn += ("linear_value_head_dim", "linear_conv_kernel")
    old = {k: v for k, v in row.values.items() if k not in gdn and v is not None}
    lg = compute(config_from_mapping(old))
    texts = warnings(lg)
    assert len(texts) == 2
    assert "architecture's count 40,359,389,184" in texts[0] and "(-13 % off)" in texts[0]
    assert "full_attention_every = 4 with linear_key_heads empty" in texts[1]
