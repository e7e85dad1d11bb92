"""Pipeline stages: which layers, embeddings and heads each stage holds, and its parameters per rank."""

from __future__ import annotations

from ..expr import ceil, floor, if_
from ..registry import BOOL, COUNT, PARAMS, Registry
from .common import Ctx, doc

STAGE_ZH = {"first": "首段", "last": "末段"}


def define(reg: Registry, r: Ctx) -> None:
    reg.section = "stages"
    d = reg.define
    L, pp, fae, moe_every, E = r.L, r.pp, r.fae, r.moe_every, r.E
    src = doc("pipeline-stages")
    base_layers = d("stage_layers_base", floor(L / pp), COUNT, "layers per stage (floor)", "每段层数（下取整）", src)
    first_layers = d("first_stage_layers", base_layers + if_((L - base_layers * pp).gt(0), 1, 0), COUNT, "first-stage layers", "首段层数", src + ": remainder layers go to the first stages")
    last_start = d("last_stage_first_layer", L - base_layers, COUNT, "last stage's first layer", "末段起始层", src)
    moe_first = d("first_stage_moe_layers", if_(E.gt(0), ceil(first_layers / moe_every), 0), COUNT, "first-stage MoE layers", "首段 MoE 层数", doc("parameters"))
    moe_last = d("last_stage_moe_layers", if_(E.gt(0), ceil(L / moe_every) - ceil(last_start / moe_every), 0), COUNT, "last-stage MoE layers", "末段 MoE 层数", doc("parameters"))
    dense_l_first = d("first_stage_dense_layers", first_layers - moe_first, COUNT, "first-stage dense layers", "首段稠密层数", src)
    dense_l_last = d("last_stage_dense_layers", base_layers - moe_last, COUNT, "last-stage dense layers", "末段稠密层数", src)
    attn_first = d("first_stage_attention_layers", floor(first_layers / fae), COUNT, "first-stage softmax-attention layers", "首段全注意力层数", doc("parameters") + ": layer i has softmax attention when i mod k = k − 1")
    attn_last = d("last_stage_attention_layers", floor(L / fae) - floor(last_start / fae), COUNT, "last-stage softmax-attention layers", "末段全注意力层数", doc("parameters"))
    r.single = single = d("single_stage", pp.eq(1), BOOL, "one pipeline stage", "单段流水", src)
    arch_first_dense = d(
        "arch_first_stage_dense",
        dense_l_first * r.dense_layer_p + moe_first * r.moe_layer_dense_p + r.embed_p + if_(single, r.head_p + r.final_norm_p, 0),
        PARAMS, "first-stage non-expert parameters", "首段非专家参数", src + ": the input embedding on the first stage",
    )
    arch_last_dense = d(
        "arch_last_stage_dense",
        dense_l_last * r.dense_layer_p + moe_last * r.moe_layer_dense_p + r.embed_p + r.final_norm_p,
        PARAMS, "last-stage non-expert parameters", "末段非专家参数", src + ": the output head (a real copy even when tied) and the final norm on the last stage",
    )
    r.layers_of = {"first": (dense_l_first, moe_first, attn_first), "last": (dense_l_last, moe_last, attn_last)}
    part_stage = {}
    for stage, arch_d, n_moe_s in (("first", arch_first_dense, moe_first), ("last", arch_last_dense, moe_last)):
        zh = STAGE_ZH[stage]
        part_stage[(stage, "dense")] = d(
            f"{stage}_stage_dense_params",
            if_(r.has_arch, r.dense * (arch_d / r.arch_dense), r.dense / pp),
            PARAMS, f"{stage}-stage non-expert parameters", f"{zh}非专家参数",
            src + " (scaled to params_total; without a countable architecture, total / pp)",
        )
        part_stage[(stage, "expert")] = d(
            f"{stage}_stage_expert_params",
            if_(r.has_arch, if_(r.arch_expert.gt(0), r.expert * (n_moe_s * r.moe_layer_expert_p / r.arch_expert), r.expert / pp), r.expert / pp),
            PARAMS, f"{stage}-stage expert parameters", f"{zh}专家参数", src,
        )
    r.rank_part = {}
    for stage in ("first", "last"):
        zh = STAGE_ZH[stage]
        r.rank_part[(stage, "dense")] = d(f"{stage}_rank_dense_params", part_stage[(stage, "dense")] / r.tp, PARAMS, f"{stage}-stage non-expert parameters per rank", f"{zh}每卡非专家参数", doc("parts-and-groups") + ": non-expert / tp")
        r.rank_part[(stage, "expert")] = d(f"{stage}_rank_expert_params", part_stage[(stage, "expert")] / (r.ep * r.etp), PARAMS, f"{stage}-stage expert parameters per rank", f"{zh}每卡专家参数", doc("parts-and-groups") + ": expert / (ep·etp)")
