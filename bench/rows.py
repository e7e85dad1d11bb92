"""Varied, valid configuration rows for the benchmarks (one generator, so benches compare alike).

Four model shapes (8B-like, 70B-like, an MoE, parameter counts only) crossed with parallel
layouts, ZeRO stages, frameworks, optimizers, recompute modes and GPUs.
"""

from __future__ import annotations

ARCHS = (
    dict(layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, vocab=128256),  # 8B-like
    dict(layers=80, hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672, vocab=128256),  # 70B-like
    dict(
        layers=48,
        hidden=4096,
        heads=32,
        kv_heads=4,
        ffn_hidden=12288,
        vocab=151936,
        experts=128,
        topk=8,
        moe_ffn_hidden=1536,
    ),  # MoE: expert and dense state lines
    dict(
        params_total=35_000_000_000, params_per_rank=8_000_000_000, params_active=3_000_000_000
    ),  # counts only
)
NOTES = (
    "",
    "Baseline from the capacity review.",
    "Candidate for the March run; the measured peak is from a 200-step smoke test on one node. "
    * 3,
)


def configs(
    n: int,
    *,
    frameworks: tuple[str, ...] = ("generic", "megatron", "deepspeed"),
    handout: bool = False,
) -> list[dict]:
    """n rows; ``handout`` adds what a handout page shows besides the numbers (notes, a reserve,
    a measured peak)."""
    out = []
    for i in range(n):
        arch = dict(ARCHS[i % len(ARCHS)])
        moe = "experts" in arch or "params_per_rank" in arch
        dp = (8, 16, 32, 64)[(i // 4) % 4]
        row = dict(
            arch,
            name=f"cfg-{i:04d}",
            dp=dp,
            tp=(1, 2, 4)[(i // 16) % 3] if "layers" in arch else 1,
            pp=(1, 2, 4)[(i // 48) % 3] if "layers" in arch else 1,
            zero=(0, 1, 3)[(i // 3) % 3],
            framework=frameworks[(i // 7) % len(frameworks)],
            optimizer=("adam", "adamw", "adam8bit", "adafactor", "lion")[(i // 5) % 5],
            recompute=("none", "selective", "full")[(i // 11) % 3],
            gpu=("H100-SXM", "H200", "B200", "MI300X")[(i // 13) % 4],
            seq_len=(4096, 8192)[i % 2],
            global_batch=dp * 8,
            mfu=0.3 + 0.01 * (i % 20),
            tokens=(10**12, 15 * 10**12, None)[(i // 17) % 3],
            days=(30, 60, 90)[i % 3],
            price_per_gpu_hour=2.5,
        )
        if row["pp"] > 1 and row["framework"] == "deepspeed":
            row["zero"] = min(
                row["zero"], 1
            )  # DeepSpeed: ZeRO-2/3 do not run with pipeline parallelism
        if handout:
            row.update(
                notes=NOTES[i % len(NOTES)],
                reserve_days=3,
                measured_peak_gb=(None, 70.0)[(i // 9) % 2],
            )
        if moe:
            row["ep"] = 8
        out.append({k: v for k, v in row.items() if v is not None and v != ""})
    return out
