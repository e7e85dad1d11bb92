"""The peak per rank, the headroom against HBM, and the reconciliation with a measured peak."""

from __future__ import annotations

from ..expr import ceil, if_, total_of
from ..registry import BOOL, BYTES, Registry
from .common import ALLOCATOR_FRACTION, BYTES_PER_GB, CATALOGUE, CUDA_CONTEXT_BYTES, FUJII, MOE35, PARTS, Ctx, doc


def define(reg: Registry, r: Ctx) -> None:
    reg.section = "peak"
    d = reg.define
    before_reserve = d("peak_before_reserve_bytes", r.state_hbm + r.activation + r.logits_r + r.loss_r + r.recompute_ws + r.gather + r.comm, BYTES, "peak before the runtime reserve", "运行时余量前的峰值", doc("peak"))
    reserve_b = d("runtime_reserve_bytes_per_rank", CUDA_CONTEXT_BYTES + ALLOCATOR_FRACTION * before_reserve, BYTES, "CUDA context and allocator reserve", "CUDA 上下文与分配器余量", f"0.5 GB context ({FUJII}) + 5 % fragmentation (Megatron-LM's 1.05 factor)")
    lazy = total_of([if_(r.in_hbm[s], r.line_bytes[(s, p)], 0) for s in ("master", "m", "v", "main_grads") for p, *_ in PARTS])
    d("first_step_optimizer_bytes", lazy, BYTES, "optimizer state allocated at the first step (already in the state)", "首步才分配的优化器状态（已计入状态）", MOE35 + ": fused optimizers allocate their states at the first step")
    r.peak = peak = d("peak_bytes_per_rank", ceil(before_reserve + reserve_b), BYTES, "peak per rank", "每卡峰值", doc("peak"))
    r.hbm_bytes = hbm_bytes = d("hbm_bytes", r.hbm_gb * BYTES_PER_GB, BYTES, "HBM per GPU", "每卡显存", CATALOGUE + "; GB = 10^9 bytes")
    d("headroom_bytes", hbm_bytes - peak, BYTES, "headroom", "余量", "HBM − peak")
    r.fits = d("fits", peak.le(hbm_bytes), BOOL, "fits in HBM", "显存放得下", "peak ≤ HBM")
    meas = d("measured_peak_bytes", r.measured_gb * BYTES_PER_GB, BYTES, "measured peak", "实测峰值", "measured_peak_gb")
    d("measured_minus_state_bytes", meas - r.state_hbm, BYTES, "measured peak less the state ledger", "实测峰值减模型状态", MOE35 + ": 85.6 − 38.1 = 47.5 GB")
    d("unexplained_bytes", meas - peak, BYTES, "measured peak less the estimated peak", "实测峰值减估算峰值", "negative: the estimate is above what was measured")
