"""What lives outside the state ledger on the reported stage: each item at its largest, the peak,
the verdict against HBM, and the reconciliation with a measured peak."""

from __future__ import annotations

from ..expr import Ref, maximum
from ..registry import BOOL, BYTES, RATIO, Registry
from .common import BYTES_PER_GB, CATALOGUE, MOE35, Ctx, definer, doc, switch
from .phases import LAZY_SOURCE, PEAK_KEYS


def items(reg: Registry, r: Ctx) -> None:
    reg.section = "outside"
    d = definer(reg, BYTES, doc("counters"))
    it = r.item_bytes
    d(
        "activation_bytes_per_rank",
        it["activations"],
        "activations",
        "激活",
        source=doc("activations") + "; micro-batches in flight by the schedule",
    )
    d("logits_bytes_per_rank", it["logits"], "logits", "logits", source=doc("logits-and-loss"))
    d(
        "loss_working_bytes_per_rank",
        maximum(it["loss_fwd"], it["loss_bwd"]),
        "cross-entropy working set",
        "交叉熵工作区",
        source=doc("logits-and-loss") + " (the convention's implementation)",
    )
    d(
        "recompute_working_bytes_per_rank",
        it["recompute"],
        "recompute working set",
        "重计算工作区",
        source=doc("activations"),
    )
    d(
        "zero3_gather_bytes_per_rank",
        it["gathers_bwd"],
        "gathered parameters and gradients",
        "聚合的参数与梯度",
        source=doc("phases"),
    )
    d(
        "comm_buffer_bytes_per_rank",
        it["buckets"] + r.nccl,
        "communication buffers",
        "通信缓冲区",
        source=doc("phases") + ": gradient buckets and NCCL communicators",
    )
    d(
        "runtime_reserve_bytes_per_rank",
        r.peak - r.allocated - r.nccl,
        "allocator reserve and CUDA context",
        "分配器预留与 CUDA 上下文",
    )
    d(
        "first_step_optimizer_bytes",
        it["moments"],
        "optimizer moments allocated at the first step",
        "首次 step 才分配的优化器动量",
        source=LAZY_SOURCE,
    )

    reg.section = "peak"
    r.hbm_bytes = hbm_bytes = d(
        "hbm_bytes",
        r.hbm_gb * BYTES_PER_GB,
        "HBM per GPU",
        "每卡显存",
        source=CATALOGUE + "; GB = 10^9 bytes",
    )
    d("headroom_bytes", hbm_bytes - r.peak, "headroom", "余量", source="HBM − peak on the device")
    r.fits = d(
        "fits",
        r.peak.le(hbm_bytes),
        "estimate fits",
        "估算放得下",
        unit=BOOL,
        source="peak on the device ≤ HBM",
    )
    r.measured_bytes = meas = d(
        "measured_peak_bytes",
        r.measured_gb * BYTES_PER_GB,
        "measured peak",
        "实测峰值",
        source="measured_peak_gb",
    )
    estimate = d(
        "estimate_on_measured_counter",
        switch(r.counter, {counter: Ref(key) for counter, key in PEAK_KEYS.items()}),
        "the estimate on the measured counter",
        "与实测同一计数口径的估算",
    )
    d(
        "measured_minus_state_bytes",
        meas - r.state_hbm,
        "measured peak less the state ledger",
        "实测峰值减模型状态",
        source=MOE35 + ": 85.6 − 38.1 = 47.5 GB",
    )
    d(
        "unexplained_bytes",
        meas - estimate,
        "measured peak less the estimate on the same counter",
        "实测峰值减同口径估算",
        source="negative: the estimate is above what was measured",
    )
    d("measured_ratio", estimate / meas, "estimate ÷ measured", "估算 ÷ 实测", unit=RATIO)
