"""Memory over one training step, phase by phase, on every pipeline stage (the prose:
docs/definitions.md#phases).  ``PHASES`` says which item lives in which phase; it is the one rule,
read by the definitions below and by the reports.  The peak is the largest phase of the heaviest
stage, on three counters: allocated, reserved and the device (what must fit in HBM).
"""

from __future__ import annotations

from functools import partial

from ..expr import IsBlank, all_of, any_of, gb_text, if_, maximum, minimum, negate, total_of
from ..registry import BOOL, BYTES, COUNT, PARAMS, RATIO, TEXT, Registry
from .common import (
    BYTES_PER_GB,
    CUDA_CONTEXT_BYTES,
    FUJII,
    MOE35,
    NCCL_BYTES_PER_GROUP,
    PARTS,
    STATES,
    Ctx,
    conv,
    definer,
    doc,
    joined,
)
from .stages import SCHEDULE_SOURCE, STAGE_ZH, STAGES, by_stage, stage_definer

# The items of a stage's memory: key, English, Chinese.  Some items have a second form for one
# moment of the backward: the gradients already accumulated when it starts, the activations still
# in flight when it ends, and at its start the larger of the loss's backward and the recompute.
ITEMS = (
    ("state", "states allocated at setup", "启动时分配的状态"),
    ("moments", "optimizer moments (from the first optimizer step)", "优化器动量（首次 step 起）"),
    ("buckets", "gradient buckets", "梯度通信桶"),
    ("activations", "activations in flight", "在途激活"),
    (
        "activations_rest",
        "activations of the other micro-batches in flight",
        "其余在途 micro-batch 的激活",
    ),
    ("gathers_fwd", "parameters gathered in forward", "前向聚合的参数"),
    (
        "weights_kept",
        "gathered weights kept by autograd until their backward",
        "autograd 保留至反向的聚合权重",
    ),
    (
        "autocast_cache",
        "bf16 copies of fp32 weights cached by autocast in forward",
        "autocast 在前向缓存的权重 bf16 副本",
    ),
    ("gathers_bwd", "parameters and gradients gathered in backward", "反向聚合的参数与梯度"),
    ("logits", "logits", "logits"),
    ("loss_fwd", "cross-entropy forward working set", "交叉熵前向工作区"),
    ("loss_bwd", "cross-entropy backward working set", "交叉熵反向工作区"),
    (
        "loss_or_recompute",
        "cross-entropy backward or recompute working set",
        "交叉熵反向或重计算工作区",
    ),
    ("recompute", "recompute working set", "重计算工作区"),
    (
        "gradients_early",
        "gradients accumulated from earlier micro-batches",
        "前序 micro-batch 累积的梯度",
    ),
    ("gradients", "gradients", "梯度"),
    ("optimizer_temp", "optimizer-step temporaries", "优化器 step 临时量"),
)

# Which items live in which phase (steady state: the second step on).  The first step is the same
# without the moments until its optimizer step creates them.  "loss" applies to the stage that
# holds the output head.  This table is the one rule: the phase totals, the report's items per
# phase and each item's "in the peak" all read it.
STANDING = ("state", "moments", "buckets")  # held through the step (the moments once created)
FORWARD = (*STANDING, "activations", "gathers_fwd", "weights_kept", "autocast_cache")
PHASES = (
    ("setup", "after setup", "启动后", ("state", "buckets")),
    ("forward", "forward", "前向", FORWARD),
    ("loss", "loss", "损失", (*FORWARD, "logits", "loss_fwd")),
    (
        "backward",
        "backward (its start)",
        "反向（开始）",
        (*STANDING, "gathers_fwd", "gradients_early", "activations")
        + ("weights_kept", "loss_or_recompute"),
    ),
    (
        "backward_end",
        "backward (its end)",
        "反向（结束）",
        (*STANDING, "gathers_bwd", "gradients", "activations_rest", "recompute"),
    ),
    ("optimizer", "optimizer step", "优化器 step", (*STANDING, "gradients", "optimizer_temp")),
)
PHASE_NAMES = tuple(p for p, *_ in PHASES)
# each counter a run measures (max_memory_allocated, max_memory_reserved, what the device holds):
# its peak's quantity, read by the estimate on a row's measured counter, the probe and reconcile
PEAK_KEYS = {
    "allocated": "peak_allocated_bytes_per_rank",
    "reserved": "peak_reserved_bytes_per_rank",
    "device": "peak_bytes_per_rank",
}
SETUP_STATES = ("weights", "main_grads", "master")
FSDP_SOURCE = "PyTorch torch/distributed/fsdp/_fully_shard (unsharded bf16 units, fp32 reduce-scatter); torch/distributed/pipelining/stage.py (no resharding or gradient sync between micro-batches)"
WEIGHTS_KEPT_SOURCE = (
    "DeepSpeed deepspeed/runtime/zero/linear.py (LinearFunctionForZeroStage3 saves the weight, not its transposed view); before 0.19.4 "
    "it was installed only inside zero.Init, so a model passed built to deepspeed.initialize kept the gathered storage through the view "
    "autograd saves until backward (DeepSpeed PR 8189)"
)
LAZY_SOURCE = "torch.optim.Adam(W), Transformer Engine and apex FusedAdam create exp_avg and exp_avg_sq at the first step() (Megatron-LM megatron/core/optimizer; DeepSpeed stage_1_and_2.py initialize_optimizer_states)"


def define(reg: Registry, r: Ctx) -> None:
    reg.section = "phases"
    shared = _shared(reg, r)
    r.stage_peak, r.stage_phase, r.stage_items, r.stage_first_step = {}, {}, {}, {}
    r.stage_load = {}
    for stage in STAGES:
        _stage(reg, r, stage, shared)
    reg.section = "peak"
    _reported(reg, r)
    _counters(reg, r)


def _shared(reg: Registry, r: Ctx) -> Ctx:
    """What every stage's items read: the largest layer and the head on the rank, the buckets, ZeRO-3's gathers."""
    d = definer(reg, PARAMS, doc("phases"))
    zero3, c = r.zero.ge(3), Ctx()
    layer_rank = d(
        "layer_params_on_rank",
        maximum(
            if_(r.n_dense.gt(0), r.dense_layer_p / r.tp, 0),
            if_(
                r.n_moe.gt(0), r.moe_layer_dense_p / r.tp + r.moe_layer_expert_p / (r.ep * r.etp), 0
            ),
        ),
        "largest layer's parameters on the rank",
        "每卡最大一层的参数",
    )
    c.buckets = d(
        "bucket_bytes",
        if_((r.dp * r.cp).gt(1), conv(r, "bucket_fixed_bytes") + r.bucket_elems * r.gbytes, 0),
        "gradient buckets",
        "梯度通信桶",
        unit=BYTES,
        source="conventions table (DDP 2 × 25 MiB; DeepSpeed 2 × 5e8 elements; Megatron and FSDP: views of their buffers)",
    )
    c.head_rank = d(
        "head_params_on_rank",
        r.V * r.h / r.tp,
        "output head's parameters on the rank",
        "每卡输出头参数",
    )
    c.head_unit = if_(all_of(zero3, conv(r, "z3_head_kept").eq(1)), c.head_rank * r.wbytes, 0)
    c.fsdp_pp = fsdp_pp = all_of(r.pp.gt(1), r.zero.ge(2), conv(r, "pp_unsharded_grads").eq(1))
    # under FSDP with pipeline stages the whole stage stays gathered (no resharding between
    # micro-batches), so no per-layer gather comes on top of it
    c.z3_fwd = if_(
        all_of(zero3, negate(fsdp_pp)),
        conv(r, "z3_layers_gathered") * layer_rank * r.wbytes
        + conv(r, "z3_largest_factor") * r.largest / r.tp,
        0,
    )
    c.z3_bwd = c.z3_fwd + if_(
        all_of(zero3, negate(fsdp_pp), conv(r, "z3_layers_gathered").gt(0)),
        layer_rank * (r.gbytes + 4),
        0,
    )
    return c


def _stage(reg: Registry, r: Ctx, stage: str, c: Ctx) -> None:
    """A stage's items, its phases (each the sum of the items alive then), its peak and its first step's."""
    d = definer(reg, BYTES, doc("phases"))
    zh = STAGE_ZH[stage]
    sb = {}  # each state's bytes in HBM on the stage's rank (the sum of its parts)
    for s, *_ in STATES:
        total = total_of([r.rank_part[(stage, p)] * r.bpp[s] / r.shard[(s, p)] for p, *_ in PARTS])
        in_hbm = stage_definer(reg, stage, s, BYTES, doc("state-ledger"))
        sb[s] = in_hbm("hbm_bytes", if_(r.in_hbm[s], total, 0), f"{s} in HBM", f"显存中的 {s}")
    r.stage_items[stage] = items = _items(reg, r, stage, c, sb)
    head = r.holds_head[stage]
    r.stage_phase[stage] = phases = {}
    first_step = []
    for p, en, pzh, names in PHASES:
        expr = total_of([items[n] for n in names])
        if p == "loss":
            expr = if_(head, expr, 0)
        phases[p] = d(f"{stage}_phase_{p}_bytes", expr, f"{stage} stage, {en}", f"{zh}，{pzh}")
        if p in ("forward", "loss", "backward", "backward_end"):
            first_step.append(phases[p] - items["moments"])
    lazy = conv(r, "moments_lazy").eq(1)
    r.stage_first_step[stage] = d(
        f"{stage}_first_step_bytes",
        if_(lazy, maximum(*first_step), maximum(*first_step) + items["moments"]),
        f"{stage} stage: the first step's peak before its optimizer step",
        f"{zh}：首步 step 前的峰值",
        source=LAZY_SOURCE,
    )
    r.stage_peak[stage] = peak = d(
        f"{stage}_stage_peak_allocated_bytes",
        maximum(*phases.values()),
        f"{stage} stage: peak allocated",
        f"{zh}：分配峰值",
    )
    r.stage_load[stage] = d(
        f"{stage}_stage_load_bytes",
        if_(IsBlank(peak), total_of(list(sb.values())), peak),
        f"{stage} stage: its peak, or its state where the peak is unknown",
        f"{zh}：峰值（未知时取状态）",
        source=doc("pipeline-stages"),
    )


def _items(reg: Registry, r: Ctx, stage: str, c: Ctx, sb: dict) -> dict:
    """What a stage's rank can hold, item by item (the phases sum the ones alive at each moment)."""
    d = stage_definer(reg, stage, "mem", BYTES, doc("logits-and-loss"))
    stage_rank_params = r.rank_part[(stage, "dense")] + r.rank_part[(stage, "expert")]
    grads_setup = conv(r, "grads_at_setup").eq(1)
    head = r.holds_head[stage]
    # a Linear's saved transposed weight keeps its gathered storage; the input embedding saves only
    # its indices (its weight is kept where the head shares it); under full recompute only the
    # head, outside the recomputed layers, saves its weight in forward
    embed_rank = if_(
        all_of(r.holds_embed[stage], negate(all_of(r.tied, head))), r.embed_p / r.tp, 0
    )
    kept_params = if_(
        r.recompute_mode.eq("full"), if_(head, c.head_rank, 0), stage_rank_params - embed_rank
    )
    whole_stage = if_(c.fsdp_pp, stage_rank_params * r.wbytes, 0)
    items = {
        "state": d(
            "state",
            total_of([sb[s] for s in SETUP_STATES]) + if_(grads_setup, sb["grads"], 0),
            "states allocated at setup",
            "启动时分配的状态",
            f"{doc('phases')}; Megatron-LM allocates its gradient buffer when DDP is built "
            "(param_and_grad_buffer.py)",
        ),
        "moments": d("moments", sb["m"] + sb["v"], "optimizer moments", "优化器动量", LAZY_SOURCE),
        "buckets": c.buckets,
        "activations": r.act[stage],
        "gathers_fwd": d(
            "gathers_forward",
            c.z3_fwd + if_(head, c.head_unit, 0) + whole_stage,
            "gathered parameters in forward",
            "前向聚合的参数",
            FSDP_SOURCE + "; DeepSpeed estimate_zero3_model_states_mem_needs (4 × largest layer)",
        ),
        "gathers_bwd": d(
            "gathers_backward",
            c.z3_bwd + if_(head, c.head_unit, 0) + whole_stage,
            "gathered parameters and gradients in backward",
            "反向聚合的参数与梯度",
            FSDP_SOURCE,
        ),
        "weights_kept": d(
            "weights_kept",
            if_(r.weights_kept_apply, kept_params * r.wbytes, 0),
            "gathered weights kept until their backward",
            "保留至反向的聚合权重",
            WEIGHTS_KEPT_SOURCE,
        ),
        "autocast_cache": d(
            "autocast_cache",
            if_(
                all_of(r.weight_dtype.eq("fp32"), conv(r, "autocast_cache").eq(1)),
                stage_rank_params * 2,
                0,
            ),
            "autocast's bf16 weight copies",
            "autocast 的 bf16 权重副本",
            "torch.autocast(cache_enabled=True) keeps the 16-bit cast of each fp32 leaf weight until the autocast region ends (torch/amp/autocast_mode.py)",
        ),
        "logits": d("logits", if_(head, r.logits, 0), "logits", "logits"),
        "loss_fwd": d(
            "loss_forward",
            if_(head, r.ce_fwd + r.mtp_loss_kept, 0),
            "loss forward working set",
            "损失前向工作区",
        ),
        "recompute": r.recompute_ws,
        "gradients": d(
            "gradients",
            if_(c.fsdp_pp, stage_rank_params * 4, if_(grads_setup, 0, sb["grads"])),
            "gradients created in backward",
            "反向时产生的梯度",
            f"{doc('phases')}; {FSDP_SOURCE}: under FSDP with pipeline stages only the unsharded "
            "fp32 gradients exist until the last micro-batch's reduce-scatter",
        ),
        "optimizer_temp": d(
            "optimizer_temp",
            conv(r, "optimizer_temp_bytes")
            * total_of([r.rank_part[(stage, p)] / r.shard[("master", p)] for p, *_ in PARTS]),
            "optimizer-step temporaries",
            "优化器 step 临时量",
            "torch/optim/adam.py _multi_tensor_adam (foreach: about one parameter-sized list); fused kernels: none",
        ),
    }
    items["loss_bwd"] = loss_bwd = d(
        "loss_backward",
        if_(head, r.ce_bwd + r.logits_kept + r.mtp_loss_kept, 0),
        "loss backward working set",
        "损失反向工作区",
    )
    # the loss backward runs before any layer's: no layer's gradient buffers exist yet then; a
    # layer's recompute runs beside its own gathered gradients
    items["loss_or_recompute"] = d(
        "loss_or_recompute",
        maximum(loss_bwd, r.recompute_ws + items["gathers_bwd"] - items["gathers_fwd"]),
        "loss backward, or a layer's recompute with its gathered gradients",
        "损失反向，或一层的重计算及其聚合梯度",
        f"{doc('phases')}; {FSDP_SOURCE}: at the loss backward no layer has run backward, so no "
        "layer's unsharded gradient or reduce-scatter buffer exists yet",
    )
    # gradients accumulate over micro-batches; the oldest micro-batch's activations go as its gradients come
    items["gradients_early"] = d(
        "gradients_early",
        if_(r.n_micro.gt(r.in_flight[stage]), items["gradients"], 0),
        "gradients accumulated before a backward",
        "反向开始前已累积的梯度",
        f"{doc('phases')}; {SCHEDULE_SOURCE}: only a backward after a steady-state forward holds "
        "both every in-flight micro-batch and earlier gradients; with no more micro-batches than "
        "in flight the first backward has no gradients yet and the later ones fewer activations "
        "(backward_end)",
    )
    items["activations_rest"] = d(
        "activations_rest",
        r.act[stage] * (r.in_flight[stage] - 1) / maximum(r.in_flight[stage], 1),
        "activations of the other micro-batches in flight",
        "其余在途激活",
        doc("phases"),
    )
    return items


def _reported(reg: Registry, r: Ctx) -> None:
    """The heaviest stage is reported: its phases, items, first step and peak."""
    d, on_stage = definer(reg, BOOL, doc("phases")), definer(reg, BOOL, doc("pipeline-stages"))
    in_bytes = definer(reg, BYTES, doc("phases"))
    fp, mp, lp = (r.stage_load[s] for s in STAGES)
    r.pick_first = d(
        "report_first_stage",
        if_(r.single, True, all_of(fp.ge(lp), fp.ge(if_(r.has_middle, mp, 0)))),
        "reported stage is the first",
        "报告首段",
        source=doc("pipeline-stages") + ": the stage with the largest peak",
    )
    pick_middle = on_stage(
        "report_middle_stage",
        if_(r.pick_first, False, all_of(r.has_middle, mp.ge(lp))),
        "reported stage is the middle one",
        "报告中间段",
    )
    r.pick = pick = partial(by_stage, r.pick_first, pick_middle)
    on_stage(
        "reported_stage",
        if_(r.single, "only", pick(str)),
        "reported pipeline stage",
        "报告的流水段",
        unit=TEXT,
    )
    on_stage(
        "reported_stage_holds_head",
        pick(lambda s: r.holds_head[s]),
        "reported stage holds the output head",
        "报告段持有输出头",
    )
    phase_bytes = {}
    for p, en, pzh, _items in PHASES:
        phase_bytes[p] = in_bytes(
            f"phase_{p}_bytes",
            pick(lambda s: r.stage_phase[s][p]),
            f"{en} (reported stage)",
            f"{pzh}（报告段）",
        )
    r.item_bytes = {
        key: in_bytes(f"mem_{key}_bytes", pick(lambda s, k=key: r.stage_items[s][k]), en, zh)
        for key, en, zh in ITEMS
    }
    _phase_items(reg, r)
    r.first_step = first_step = in_bytes(
        "first_step_peak_bytes",
        pick(lambda s: r.stage_first_step[s]),
        "first step's peak before its optimizer step (allocated)",
        "首步 step 前的峰值（已分配）",
        source=LAZY_SOURCE,
    )
    r.allocated = in_bytes(
        PEAK_KEYS["allocated"],
        pick(lambda s: r.stage_peak[s]),
        "peak allocated per rank (torch max_memory_allocated)",
        "每卡分配峰值（max_memory_allocated）",
        source=doc("counters"),
    )
    steady = maximum(*phase_bytes.values())
    peak_phase = d(
        "peak_phase",
        _argmax([(p, phase_bytes[p]) for p in PHASE_NAMES]),
        "phase of the peak",
        "峰值所在阶段",
        unit=TEXT,
    )
    in_peak = {}
    for key, _en, _zh in ITEMS:
        holders = [p for p, *_x, names in PHASES if key in names]
        in_peak[key] = d(
            f"mem_{key}_in_peak",
            any_of(*(peak_phase.eq(p) for p in holders)) if holders else False,
            f"{key} lives in the peak phase",
            f"{key} 在峰值阶段",
        )
    for key, a, b, what, zh in (
        ("loss", "loss_fwd", "loss_or_recompute", "the loss's working set lives", "交叉熵工作区"),
        (
            "recompute",
            "recompute",
            "loss_or_recompute",
            "the recompute working set lives",
            "重计算工作区",
        ),
        ("gathers", "gathers_fwd", "gathers_bwd", "gathered parameters live", "聚合参数"),
    ):
        en = f"{what} in the peak phase"
        d(f"{key}_in_peak", any_of(in_peak[a], in_peak[b]), en, f"{zh}在峰值阶段")
    d(
        "always_in_peak",
        True,
        "counted on the device at every phase",
        "各阶段都计入设备显存",
        source=doc("counters"),
    )
    on_stage("multi_stage", r.pp.gt(1), "more than one pipeline stage", "多于一个流水段")
    r.steady_minus_first = in_bytes(
        "lazy_state_bytes",
        steady - first_step,
        "the steady peak above the first step's (optimizer moments allocated at the first step)",
        "稳态峰值高出首步的部分（首步才分配的动量）",
        source=MOE35 + "; " + LAZY_SOURCE,
    )


def _phase_items(reg: Registry, r: Ctx) -> None:
    """Each phase's items as a sentence ("label 1.2 GB, label 0.5 GB", the items not zero), in
    English and Chinese: what the pages and the workbook show beside the phase."""
    label = {key: (en, zh) for key, en, zh in ITEMS}
    for p, en, pzh, names in PHASES:
        for suffix, lang, sep in (("", 0, ", "), ("_zh", 1, "，")):
            parts = (
                (r.item_bytes[n].gt(0), (label[n][lang], " ", gb_text(r.item_bytes[n])))
                for n in names
            )
            reg.define(
                f"phase_{p}_items{suffix}",
                joined(parts, sep),
                TEXT,
                f"{en}: what lives then",
                f"{pzh}：此时存在的项",
                doc("phases"),
            )


ALLOCATOR_SOURCE = (
    "PyTorch c10/cuda/CUDACachingAllocator.cpp @ 001074d2 (best-fit reuse of cached blocks, large "
    "blocks split, no merging across segments, a new segment when no cached block fits, cached blocks "
    "released and the request retried when cudaMalloc fails; expandable segments map pages at the "
    "segment's end)"
)


def _counters(reg: Registry, r: Ctx) -> None:
    """The peak on each counter: allocated, reserved (the allocator model), the device (context and NCCL)."""
    d = definer(reg, BYTES)
    dp, cp, tp, pp, ep = r.dp, r.cp, r.tp, r.pp, r.ep
    n_groups = d(
        "nccl_groups",
        if_((dp * cp).gt(1), 1, 0)
        + if_(tp.gt(1), 1, 0)
        + if_(pp.gt(1), 2, 0)
        + if_(ep.gt(1), 1, 0)
        + if_(all_of(ep.gt(1), r.group["expert"].gt(1)), 1, 0),
        "NCCL communicators",
        "NCCL 通信组数",
        unit=COUNT,
        source="one per parallel dimension larger than 1 (pipeline: its point-to-point group and the embedding group; experts: their data-parallel group too)",
    )
    r.nccl = d(
        "nccl_bytes",
        n_groups * NCCL_BYTES_PER_GROUP,
        "NCCL communicator buffers",
        "NCCL 通信缓冲",
        source=f"about 0.5 GB per communicator ({FUJII})",
    )
    r.device_extra = d(
        "device_overhead_bytes",
        CUDA_CONTEXT_BYTES + r.nccl,
        "CUDA context and NCCL buffers (outside the allocator)",
        "CUDA 上下文与 NCCL 缓冲（分配器之外）",
        source=f"0.5 GB context and 0.5 GB per communicator ({FUJII})",
    )
    _allocator(reg, r)
    r.peak = d(
        PEAK_KEYS["device"],
        r.reserved + r.device_extra,
        "peak per rank on the device",
        "每卡设备峰值",
        source=doc("counters") + ": reserved + CUDA context + NCCL",
    )


def _allocator(reg: Registry, r: Ctx) -> None:
    """The reserved peak: the allocated peak, the cached blocks the loss region strands, the
    residual reserve the model does not explain, within what the device leaves the allocator."""
    d = definer(reg, BYTES, ALLOCATOR_SOURCE + "; " + doc("counters"))
    ratio = partial(d, unit=RATIO)
    stranded = d(
        "allocator_stranded_bytes",
        if_(
            all_of(
                r.pick(lambda s: r.holds_head[s]),
                r.logits_dtype.ne("fp32"),
                conv(r, "logits_kept").eq(0),
                any_of(
                    all_of(r.loss_impl.eq("eager_fp32"), r.loss_fp32, negate(r.loss_compiled)),
                    r.loss_impl.eq("loss_parallel"),
                    r.loss_impl.eq("chunked_output"),
                ),
            ),
            r.logits,
            0,
        ),
        "cached blocks the loss backward cannot reuse",
        "交叉熵反向无法复用的缓存块",
        source=f"{ALLOCATOR_SOURCE}: the 16-bit logits, freed after their fp32 copy, are too "
        "small for the backward's fp32 gradients (eager, loss parallel, torchtune's chunks), "
        "which take new memory while the logits' blocks stay cached between live blocks (with "
        "expandable segments too: the hole is not at the segment's end); Megatron's loss reuses "
        f"its own fp32 copy in place; {doc('counters')}",
    )
    explained = d(
        "reserved_explained_bytes",
        maximum(r.allocated, r.pick(lambda s: r.stage_phase[s]["backward"]) + stranded),
        "reserved by the allocator model (before the residual reserve)",
        "分配器模型给出的预留（不含剩余预留）",
    )
    frag = ratio(
        "reserved_fraction",
        if_(r.expandable, conv(r, "reserved_fraction_expandable"), conv(r, "reserved_fraction")),
        "residual allocator reserve over the modelled reserved (with or without expandable segments)",
        "模型之外的分配器预留比例（按是否可扩展段）",
        source="conventions table: fitted on tests/data/measured_runs.csv (bench/bench_fidelity.py "
        f"prints it in sample and leaving each source out); {doc('counters')}",
    )
    # what release-and-retry cannot give back: the fragmentation inside segments still in use (with
    # expandable segments the free pages are unmapped, so none)
    floor_frac = ratio(
        "reserved_floor_fraction",
        if_(r.expandable, 0, frag),
        "the residual reserve the allocator cannot release (none with expandable segments)",
        "分配器无法释放的剩余预留（可扩展段时为零）",
    )
    fit = d(
        "peak_fit_bytes_per_rank",
        r.allocated * (1 + floor_frac) + r.device_extra,
        "what must fit on the device: the allocated peak, the reserve the allocator cannot release, the context and NCCL",
        "设备上必须放下的：分配峰值、分配器无法释放的预留、上下文与 NCCL",
        source=f"{ALLOCATOR_SOURCE}: when new memory does not fit, cached free blocks are "
        f"released and the request retried; {doc('counters')}",
    )
    r.reserved = d(
        PEAK_KEYS["reserved"],
        minimum(
            explained * (1 + frag),
            maximum(r.hbm_gb * BYTES_PER_GB - r.device_extra, fit - r.device_extra),
        ),
        "peak reserved per rank (torch max_memory_reserved)",
        "每卡预留峰值（max_memory_reserved）",
        source=f"{doc('counters')}: the modelled reserve, within what the device leaves the "
        "allocator unless even the reserve it cannot release exceeds that",
    )


def _argmax(pairs):
    """The name of the largest value (the first on ties), as nested conditionals."""
    (name, val), rest = pairs[0], pairs[1:]
    if not rest:
        return name
    best_rest = maximum(*(v for _n, v in rest))
    return if_(val.ge(best_rest), name, _argmax(rest))
