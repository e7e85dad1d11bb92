"""The model-state ledger: each state's width, whether and over which group it is sharded, where it
lives, and its bytes on the rank."""

from __future__ import annotations

from functools import partial

from ..expr import Lookup, Ref, all_of, ceil, concat, if_, maximum, nearest, total_of
from ..registry import BOOL, BPP, BYTES, COUNT, PARAMS, TEXT, Registry
from .common import (
    BYTES_PER_GB,
    MOE5T,
    MOE35,
    PARTS,
    STATES,
    ZERO_PAPER,
    Ctx,
    conv,
    definer,
    doc,
)

# the resolved input that names each state's dtype
STATE_DTYPE = {
    "weights": "weight_dtype",
    "grads": "grad_dtype",
    "main_grads": "main_grad_dtype",
    "master": "master_dtype",
    "m": "m_dtype",
    "v": "v_dtype",
}
# the states a ZeRO-3 convention may not keep between layers, and why
Z3_TRANSIENT = {
    "weights": "; a convention whose ZeRO-3 keeps only the sharded fp32 parameter gathers compute "
    "weights per layer",
    "grads": "; DeepSpeed ZeRO-3: 16-bit gradients do not persist "
    "(estimate_zero3_model_states_mem_needs)",
}


def widths(reg: Registry, r: Ctx) -> None:
    """Bytes per parameter, sharding and placement of each state (before the stage is chosen)."""
    reg.section = "state"
    d = definer(reg, BOOL, doc("zero-stages"))
    per_param, count = partial(d, unit=BPP), partial(d, unit=COUNT)
    zero = r.zero
    z3 = zero.ge(3)
    factored = Lookup("optimizer", r.optimizer, "factored_v").gt(0)  # Adafactor's second moment
    r.bpp = {}
    for s, _col, en, zh in STATES[:4]:
        width = Lookup("dtype", Ref(STATE_DTYPE[s]), "bytes")
        if s in Z3_TRANSIENT:
            width = if_(all_of(z3, conv(r, f"{s}_persist_z3").eq(0)), 0, width)
        r.bpp[s] = per_param(
            f"{s}_bytes_per_param",
            width,
            f"{en}, bytes per parameter",
            f"{zh}字节/参数",
            source=ZERO_PAPER + Z3_TRANSIENT.get(s, ""),
        )
    r.bpp |= {
        "m": per_param(
            "m_bytes_per_param",
            Lookup("optimizer", r.optimizer, "has_m") * Lookup("moment", r.m_dtype, "bytes"),
            "first moment, bytes per parameter",
            "一阶矩字节/参数",
            source="optimizer table; 8-bit moments: Dettmers et al. 2022",
        ),
        "v": per_param(
            "v_bytes_per_param",
            Lookup("optimizer", r.optimizer, "has_v")
            * Lookup("moment", r.v_dtype, "bytes")
            * if_(factored, if_(r.has_arch, r.factored / r.arch_total, 1), 1),
            "second moment, bytes per parameter",
            "二阶矩字节/参数",
            source="optimizer table; Adafactor factored (Shazeer & Stern 2018)",
        ),
    }
    sharded_state = {
        "weights": d("weights_sharded", z3, "weights sharded", "权重分片"),
        "grads": d(
            "grads_sharded",
            zero.ge(conv(r, "grads_shard_stage")),
            "gradients sharded",
            "梯度分片",
            source=doc("zero-stages") + " (Megatron keeps its grad buffer whole)",
        ),
    }
    opt_sharded = d(
        "optimizer_sharded",
        zero.ge(1),
        "master, moments and main gradients sharded",
        "主权重、动量、主梯度分片",
    )
    sharded_state |= dict.fromkeys(("main_grads", "master", "m", "v"), opt_sharded)
    r.group = {
        "dense": count(
            "dense_shard_group",
            r.dp_shard * r.cp,
            "non-expert shard group dp_shard·cp",
            "非专家分片组 dp_shard·cp",
            source=f"{doc('parts-and-groups')}; Megatron-LM PR #6048; dp_shard = dp unless the row "
            "shards over part of it (HSDP)",
        ),
        "expert": count(
            "expert_shard_group",
            maximum(r.dp_shard * r.cp * r.tp / (r.ep * r.etp), 1),
            "expert-DP dp_shard·cp·tp/(ep·etp)",
            "专家数据并行组 dp_shard·cp·tp/(ep·etp)",
            source=doc("parts-and-groups") + "; " + MOE35,
        ),
    }
    r.location = {s: r.at[col] for s, col, _en, _zh in STATES}
    r.in_hbm = {}
    for s, _col, en, zh in STATES:
        r.in_hbm[s] = d(
            f"{s}_in_hbm",
            r.location[s].eq("hbm"),
            f"{en} count in HBM",
            f"{zh}计入显存",
            source=doc("state-ledger"),
        )
        dt = Ref(STATE_DTYPE[s])
        if s == "v":
            dt = if_(factored, concat(dt, " (factored)"), dt)
        d(
            f"{s}_dtype_label",
            dt,
            f"{en}: dtype",
            f"{zh}：精度",
            unit=TEXT,
            source=doc("state-ledger"),
        )
    r.shard = {}
    for s, _col, en, zh in STATES:
        for p, pen, pzh in PARTS:
            r.shard[(s, p)] = count(
                f"{s}_{p}_shard_group",
                if_(sharded_state[s], r.group[p], 1),
                f"{en} ({pen}): shard group",
                f"{zh}（{pzh}）分片组",
                source=doc("parts-and-groups"),
            )
    for p, pen, pzh in PARTS:
        acc = total_of([if_(r.in_hbm[s], r.bpp[s] / r.shard[(s, p)], 0) for s, *_ in STATES])
        per_param(
            f"{p}_hbm_bytes_per_param_on_rank",
            acc,
            f"HBM state bytes per {pen} parameter on the rank",
            f"每个{pzh}参数的显存状态字节",
            source="the sum of the state lines",
        )


def ledger(reg: Registry, r: Ctx) -> None:
    """The state lines of the reported stage, their totals, and offloaded state."""
    reg.section = "state"
    d = definer(reg, BYTES, doc("parts-and-groups"))
    params, flag = partial(d, unit=PARAMS), partial(d, unit=BOOL)
    rank_params = {}
    for p, pen, pzh in PARTS:
        rank_params[p] = params(
            f"{p}_params_on_rank",
            r.pick(lambda s, p=p: r.rank_part[(s, p)]),
            f"{pen} parameters on the rank (before sharding)",
            f"每卡{pzh}参数（分片前）",
        )
    params(
        "params_per_rank",
        nearest(rank_params["dense"] + rank_params["expert"]),
        "parameters per rank",
        "每卡参数",
    )
    r.line_bytes = {}
    for s, _col, en, zh in STATES:
        for p, pen, pzh in PARTS:
            lp = params(
                f"{s}_{p}_params_on_rank",
                nearest(rank_params[p] / r.shard[(s, p)]),
                f"{en} ({pen}): parameters on the rank",
                f"{zh}（{pzh}）每卡参数",
            )
            r.line_bytes[(s, p)] = d(
                f"{s}_{p}_bytes",
                ceil(lp * r.bpp[s]),
                f"{en} ({pen})",
                f"{zh}（{pzh}）",
                source=doc("state-ledger"),
            )
            flag(
                f"{s}_{p}_sharded",
                r.shard[(s, p)].ne(1),
                f"{en} ({pen}): sharded",
                f"{zh}（{pzh}）分片",
                source=doc("state-ledger") + ": a group of one is the whole state",
            )
            flag(
                f"{s}_{p}_shown",
                all_of(r.bpp[s].gt(0), rank_params[p].gt(0)),
                f"{en} ({pen}): exists on the rank",
                f"{zh}（{pzh}）存在",
                source=f"{doc('state-ledger')}: a state of zero width, or a part without "
                "parameters, has no line",
            )

    for where, key, place, zh in (
        ("hbm", "state_bytes_per_rank", "in HBM", "每卡显存中的模型状态"),
        ("host", "host_state_bytes_per_rank", "on the host", "每卡主机内存中的模型状态"),
        ("nvme", "nvme_state_bytes_per_rank", "on NVMe", "每卡 NVMe 上的模型状态"),
    ):
        en, source = f"model state {place} per rank", f"the sum of the state lines located {place}"
        lines = [if_(r.location[s].eq(where), lb, 0) for (s, p), lb in r.line_bytes.items()]
        setattr(r, f"state_{where}", d(key, total_of(lines), en, zh, source=source))
    for s, _col, en, zh in STATES:
        d(
            f"{s}_hbm_bytes",
            total_of([if_(r.in_hbm[s], r.line_bytes[(s, p)], 0) for p, *_ in PARTS]),
            f"{en} in HBM per rank",
            f"每卡显存中的{zh}",
            source="the state's lines located in HBM",
        )
    d(
        "outside_state_bytes_per_rank",
        r.peak - r.state_hbm,
        "on the device outside the state ledger per rank",
        "每卡状态账本之外的设备占用",
        source="peak on the device − model state in HBM",
    )
    bpp_sum = total_of([r.bpp[s] for s, *_ in STATES])
    bpp_hbm = total_of([if_(r.in_hbm[s], r.bpp[s], 0) for s, *_ in STATES])
    state_bpp = d(
        "state_bytes_per_param",
        bpp_sum,
        "model-state bytes per parameter",
        "每参数模型状态字节",
        unit=BPP,
        source=ZERO_PAPER,
    )
    d(
        "state_bytes_logical_total",
        r.total * state_bpp,
        "whole model state, all ranks",
        "全模型状态（所有卡合计）",
        source=MOE5T + ": 5T × 18 B = 90 TB",
    )
    r.logical_hbm = d(
        "state_bytes_logical_hbm",
        r.total * bpp_hbm,
        "whole model state placed in HBM",
        "放在显存中的全模型状态",
        source=doc("gates"),
    )
    host_node = d(
        "host_bytes_per_node",
        r.state_host * r.gpus_per_node,
        "offloaded state per node (host memory)",
        "每节点主机内存中的状态",
        source="host-located lines × GPUs per node",
    )
    r.nvme_node = d(
        "nvme_bytes_per_node",
        r.state_nvme * r.gpus_per_node,
        "offloaded state per node (NVMe)",
        "每节点 NVMe 上的状态",
        source="NVMe-located lines × GPUs per node",
    )
    flag(
        "host_fits",
        host_node.le(r.host_gb * BYTES_PER_GB),
        "host memory holds the offloaded state",
        "主机内存放得下",
        source="host_bytes_per_node ≤ host_gb",
    )
