"""The jobs several tests and bench scripts run (tests/support is on their path)."""

# docs/scenarios.md's job (Qwen3-8B on H100, seq 8192, global batch 384), as the red-team pass ran it.
QWEN3_8B_JOB = dict(
    name="qwen3-8b",
    layers=36,
    hidden=4096,
    heads=32,
    kv_heads=8,
    head_dim=128,
    ffn_hidden=12288,
    vocab=151936,
    qk_norm=True,
    seq_len=8192,
    global_batch=384,
    tokens=100_000_000_000,
    days=30.0,
    reserve_days=5.0,
    gpu="H100-SXM",
    mfu=0.4,
    price_per_gpu_hour=2.0,
)
# The layout fixed but for dp, micro_batch and loss_chunks: a small search that reaches the same
# arrays path (the step count is one value for every candidate).
NARROW = dict(tp=1, pp=1, cp=1, zero=3, recompute="full", master_at="hbm", optimizer_at="hbm")
