"""What lives outside the state ledger: activations, logits and the loss, the recompute working
set, parameter gathers and communication buffers; and the choice of the reported stage."""

from __future__ import annotations

from ..expr import IsBlank, Lookup, all_of, any_of, if_, maximum, minimum, negate
from ..registry import BOOL, BYTES, COUNT, TEXT, TOKENS, Registry
from .common import (
    ATTN_SCORE_BYTES_PER_ELEM,
    FULL_RECOMPUTE_SBH_BYTES,
    FUJII,
    KORTH,
    KORTHIKANTI_REPLICATED_SBH,
    LOSS_WORKING_BYTES,
    MOE35,
    NCCL_BYTES_PER_GROUP,
    Ctx,
    conv,
    doc,
    or0,
)
from .stages import STAGE_ZH


def per_stage(reg: Registry, r: Ctx) -> None:
    """Activations per layer and per stage, logits and the loss working set."""
    reg.section = "activations"
    d = reg.define
    h, a, g, hd, tp = r.h, r.a, r.g, r.hd, r.tp
    s_loc = d("seq_per_rank", r.seq_len / r.cp, TOKENS, "tokens per sequence on the rank s = seq/cp", "每卡序列长度 s = seq/cp", doc("activations"))
    b = r.micro_batch
    sbh = d("sbh", s_loc * b * h, COUNT, "s·b·h", "s·b·h", KORTH)
    sp_div = d("sp_divisor", if_(r.seq_par, tp, 1), COUNT, "sequence-parallel divisor", "序列并行除数", KORTH)
    mlp_act_w = d("mlp_act_factor", if_(r.glu, 6, 4), COUNT, "MLP activation bytes per s·b·ffn", "MLP 激活系数", KORTH + " (a gated MLP stores gate, up and their product: 6 instead of 4)")
    repl = d("act_replicated_per_layer", KORTHIKANTI_REPLICATED_SBH * sbh / sp_div, BYTES, "norm inputs, block inputs, dropout masks", "norm 输入、块输入、dropout 掩码", KORTH + ": 10·sbh, ÷ tp with sequence parallel")
    attn_lin = d("act_attention_per_layer", s_loc * b * (4 * a * hd + 4 * g * hd) / tp, BYTES, "Q, K, V and projection input", "Q、K、V 与投影输入", KORTH + " (GQA: K and V use kv_heads)")
    mlp_dense_act = d("act_dense_mlp_per_layer", s_loc * b * r.f * mlp_act_w / tp, BYTES, "dense MLP activations", "稠密 MLP 激活", KORTH)
    mlp_moe_act = d("act_moe_mlp_per_layer", s_loc * b * (r.topk * r.f_moe * mlp_act_w / r.etp + r.f_sh * mlp_act_w / tp), BYTES, "MoE MLP activations (top-k experts + shared)", "MoE MLP 激活（top-k 专家 + 共享专家）", KORTH + " (each token visits top-k experts)")
    r.s2 = s2 = d("act_scores_per_attention_layer", ATTN_SCORE_BYTES_PER_ELEM * a * s_loc * s_loc * b / tp, BYTES, "attention scores 5·heads·s²·b", "注意力分数 5·heads·s²·b", KORTH + " (only without flash attention and recompute)")
    r.per_dense = per_dense = d("act_dense_layer", repl + attn_lin + mlp_dense_act, BYTES, "activations per dense layer", "每个稠密层激活", KORTH)
    r.per_moe = per_moe = d("act_moe_layer", repl + attn_lin + mlp_moe_act, BYTES, "activations per MoE layer", "每个 MoE 层激活", KORTH)
    per_full = d("act_full_recompute_layer", FULL_RECOMPUTE_SBH_BYTES * sbh / sp_div, BYTES, "full recompute: the layer input 2·s·b·h", "全重计算：层输入 2·s·b·h", KORTH + "; " + MOE35)
    keep_s2 = d("keeps_scores", all_of(r.recompute.eq("none"), negate(r.flash)), BOOL, "attention scores stored", "保存注意力分数", KORTH)
    n_micro = d("micro_batches_per_step", if_(IsBlank(r.global_batch), r.pp, r.global_batch / (r.micro_batch * r.dp)), COUNT, "micro-batches per step per data-parallel rank", "每步 micro-batch 数", "global_batch / (micro_batch·dp)")
    r.in_flight = in_flight = d("first_stage_in_flight", minimum(r.pp, n_micro), COUNT, "micro-batches in flight on the first stage", "首段在途 micro-batch", doc("activations") + " (1F1B: the first stage holds pp micro-batches)")
    r.act = {}
    for stage, infl in (("first", in_flight), ("last", 1)):
        dl, ml, al = r.layers_of[stage]
        r.act[stage] = d(
            f"{stage}_stage_activation_bytes",
            infl * if_(
                r.recompute.eq("full"),
                (dl + ml) * per_full,
                dl * per_dense + ml * per_moe + if_(keep_s2, al * s2, 0),
            ),
            BYTES, f"{stage}-stage activations", f"{STAGE_ZH[stage]}激活", KORTH,
        )
    r.logits = d("logits_full_bytes", s_loc * b * (r.V / tp) * Lookup("dtype", r.logits_dtype, "bytes") / r.loss_chunks, BYTES, "logits s·b·(vocab/tp)·bytes ÷ loss_chunks", "logits s·b·(vocab/tp)·字节 ÷ 分块", doc("logits-and-loss") + "; " + MOE35)
    r.loss_ws = d("loss_working_full_bytes", s_loc * b * (r.V / tp) * LOSS_WORKING_BYTES / r.loss_chunks, BYTES, "cross-entropy fp32 working set", "交叉熵 fp32 工作区", doc("logits-and-loss") + " (fp32 softmax and its gradient)")


def choose_stage(reg: Registry, r: Ctx) -> None:
    """The reported stage: the first or the last, whichever carries more."""
    reg.section = "stages"
    d = reg.define
    approx = {}
    for stage in ("first", "last"):
        state = r.rank_part[(stage, "dense")] * r.eff["dense"] + r.rank_part[(stage, "expert")] * r.eff["expert"]
        tail = if_(r.single, or0(r.logits) + or0(r.loss_ws), 0) if stage == "first" else or0(r.logits) + or0(r.loss_ws)
        approx[stage] = d(f"{stage}_stage_load_bytes", state + or0(r.act[stage]) + tail, BYTES, f"{stage}-stage state + activations + logits", f"{STAGE_ZH[stage]}负载", doc("pipeline-stages") + ": the more loaded stage is reported")
    r.pick_first = d("report_first_stage", any_of(r.single, approx["first"].ge(approx["last"])), BOOL, "reported stage is the first", "报告首段", doc("pipeline-stages"))
    d("reported_stage", if_(r.single, "only", if_(r.pick_first, "first", "last")), TEXT, "reported pipeline stage", "报告的流水段", doc("pipeline-stages"))


def items(reg: Registry, r: Ctx) -> None:
    """The items outside the ledger on the reported stage."""
    reg.section = "outside"
    d = reg.define
    is_last = d("reported_stage_holds_head", any_of(r.single, negate(r.pick_first)), BOOL, "reported stage holds the output head", "报告段持有输出头", doc("pipeline-stages"))
    r.activation = d("activation_bytes_per_rank", if_(r.pick_first, r.act["first"], r.act["last"]), BYTES, "activations", "激活", KORTH + "; " + doc("activations"))
    r.logits_r = d("logits_bytes_per_rank", if_(is_last, r.logits, 0), BYTES, "logits", "logits", doc("logits-and-loss"))
    r.loss_r = d("loss_working_bytes_per_rank", if_(is_last, r.loss_ws, 0), BYTES, "cross-entropy working set (fp32)", "交叉熵工作区（fp32）", doc("logits-and-loss"))
    r.recompute_ws = d(
        "recompute_working_bytes_per_rank",
        if_(r.recompute.eq("full"),
            if_(r.n_moe.gt(0), if_(r.n_dense.gt(0), maximum(r.per_dense, r.per_moe), r.per_moe), r.per_dense)
            + if_(r.flash, 0, r.s2), 0),
        BYTES, "full recompute: one layer's activations rebuilt in backward", "全重计算：反向时重建的一层激活", KORTH + " (one layer, no recompute)",
    )
    r.gather = d(
        "zero3_gather_bytes_per_rank",
        if_(r.zero.eq(3), r.largest / r.tp * (Lookup("dtype", r.weight_dtype, "bytes") + Lookup("dtype", r.grad_dtype, "bytes")), 0),
        BYTES, "ZeRO-3 gather of the largest layer (16-bit params + grads)", "ZeRO-3 聚合最大层（16 位参数 + 梯度）",
        "DeepSpeed estimate_zero3_model_states_mem_needs: 4 × largest layer",
    )
    dp, cp, tp, pp, ep = r.dp, r.cp, r.tp, r.pp, r.ep
    n_groups = d(
        "nccl_groups",
        if_((dp * cp).gt(1), 1, 0) + if_(tp.gt(1), 1, 0) + if_(pp.gt(1), 1, 0) + if_(ep.gt(1), 1, 0),
        COUNT, "NCCL communicators", "NCCL 通信组数", "one per parallel dimension larger than 1",
    )
    r.comm = d(
        "comm_buffer_bytes_per_rank",
        n_groups * NCCL_BYTES_PER_GROUP
        + if_((dp * cp).gt(1), conv(r, "bucket_fixed_bytes") + conv(r, "bucket_elems") * Lookup("dtype", r.grad_dtype, "bytes"), 0),
        BYTES, "communication buffers", "通信缓冲区",
        f"NCCL about 0.5 GB per communicator ({FUJII}); the convention's gradient buckets (conventions table)",
    )
