"""Parameters: the architecture's count (as Megatron-LM counts it) and the expert split."""

from __future__ import annotations

from ..expr import Col, IsBlank, all_of, any_of, ceil, default, if_, maximum, negate
from ..registry import BOOL, COUNT, PARAMS, TEXT, Registry
from .common import MEGATRON_PARAMS, MOE35, COLUMN, Ctx, doc


def define(reg: Registry, r: Ctx) -> None:
    reg.section = "architecture"
    d = reg.define
    r.L = d("layers", Col("layers"), COUNT, "layers", "层数", COLUMN)
    r.h = h = d("hidden", Col("hidden"), COUNT, "hidden", "隐藏维度", COLUMN)
    r.a = a = d("heads", Col("heads"), COUNT, "heads", "头数", COLUMN)
    r.g = g = d("kv_heads", default("kv_heads", a), COUNT, "kv heads", "KV 头数", COLUMN + " (heads when empty)")
    r.hd = hd = d("head_dim", default("head_dim", h / a), COUNT, "head dim", "每头维度", COLUMN + " (hidden / heads when empty)")
    r.f = f = d("ffn_hidden", Col("ffn_hidden"), COUNT, "ffn hidden", "MLP 宽度", COLUMN)
    r.V = V = d("vocab", Col("vocab"), COUNT, "vocab", "词表", COLUMN)
    r.glu = d("glu", default("glu", True), BOOL, "gated MLP", "门控 MLP", COLUMN)
    r.tied = tied = d("tied_embeddings", default("tied_embeddings", False), BOOL, "tied embeddings", "共享嵌入", COLUMN)
    r.norm = d("norm", default("norm", "rmsnorm"), TEXT, "norm", "归一化", COLUMN)
    r.qk_norm = qk_norm = d("qk_norm", default("qk_norm", False), BOOL, "qk norm", "qk 归一化", COLUMN)
    r.E = E = d("experts", default("experts", 0), COUNT, "routed experts", "路由专家数", COLUMN)
    r.topk = d("topk", default("topk", 0), COUNT, "top-k", "top-k", COLUMN)
    r.f_moe = f_moe = d("moe_ffn_hidden", default("moe_ffn_hidden", f), COUNT, "expert ffn", "专家 MLP 宽度", COLUMN + " (ffn_hidden when empty)")
    r.f_sh = f_sh = d("shared_expert_ffn", default("shared_expert_ffn", 0), COUNT, "shared expert ffn", "共享专家宽度", COLUMN)
    r.moe_every = d("moe_every", default("moe_every", 1), COUNT, "MoE every", "MoE 间隔", COLUMN)
    r.fae = d("full_attention_every", default("full_attention_every", 1), COUNT, "full attention every", "全注意力间隔", COLUMN)

    reg.section = "parameters"
    r.norm_w = norm_w = d("norm_params_per_h", if_(r.norm.eq("layernorm"), 2, 1), COUNT, "norm vectors per norm", "每个 norm 的向量数", MEGATRON_PARAMS + ": rmsnorm has a scale, layernorm a scale and a bias")
    r.mats = mats = d("mlp_matrices", if_(r.glu, 3, 2), COUNT, "MLP matrices", "MLP 矩阵数", MEGATRON_PARAMS + ": gate, up and down with a gated MLP")
    attn_p = d("attn_params_per_layer", 2 * h * hd * (a + g), PARAMS, "attention parameters per layer", "每层注意力参数", MEGATRON_PARAMS + ": q, o = h·heads·d; k, v = h·kv·d")
    layer_norm_p = d("norm_params_per_layer", 2 * h * norm_w, PARAMS, "norm parameters per layer", "每层 norm 参数", MEGATRON_PARAMS)
    qk_p = d("qk_norm_params_per_layer", if_(qk_norm, 2 * hd * norm_w, 0), PARAMS, "qk-norm parameters per layer", "每层 qk-norm 参数", "Qwen3 q_norm and k_norm: one head_dim vector each, shared by the heads (transformers modeling_qwen3.py)")
    dense_mlp_p = d("dense_mlp_params", mats * h * f, PARAMS, "dense MLP parameters per layer", "每层稠密 MLP 参数", MEGATRON_PARAMS)
    r.expert_mlp_p = expert_mlp_p = d("expert_mlp_params", mats * h * f_moe, PARAMS, "parameters per expert", "每个专家参数", MEGATRON_PARAMS)
    shared_p = d("shared_expert_params", mats * h * f_sh, PARAMS, "shared-expert parameters per layer", "每层共享专家参数", MEGATRON_PARAMS)
    router_p = d("router_params", h * E, PARAMS, "router parameters per MoE layer", "每个 MoE 层路由参数", MEGATRON_PARAMS)
    r.dense_layer_p = d("dense_layer_params", attn_p + layer_norm_p + qk_p + dense_mlp_p, PARAMS, "parameters per dense layer", "每个稠密层参数", MEGATRON_PARAMS)
    r.moe_layer_dense_p = d("moe_layer_dense_params", attn_p + layer_norm_p + qk_p + router_p + shared_p, PARAMS, "non-expert parameters per MoE layer", "每个 MoE 层非专家参数", MEGATRON_PARAMS)
    r.moe_layer_expert_p = d("moe_layer_expert_params", E * expert_mlp_p, PARAMS, "expert parameters per MoE layer", "每个 MoE 层专家参数", MEGATRON_PARAMS)
    r.n_moe = n_moe = d("moe_layers", if_(E.gt(0), ceil(r.L / r.moe_every), 0), COUNT, "MoE layers", "MoE 层数", doc("parameters") + ": layer i is MoE when i mod moe_every = 0")
    r.n_dense = n_dense = d("dense_layers", r.L - n_moe, COUNT, "dense layers", "稠密层数", doc("parameters"))
    r.embed_p = d("embedding_params", V * h, PARAMS, "input embedding", "输入嵌入", MEGATRON_PARAMS)
    r.head_p = d("output_head_params", if_(tied, 0, V * h), PARAMS, "output head (untied)", "输出头（不共享时）", MEGATRON_PARAMS)
    r.final_norm_p = d("final_norm_params", h * norm_w, PARAMS, "final norm", "末层 norm", MEGATRON_PARAMS)
    r.arch_dense = d("arch_dense_params", n_dense * r.dense_layer_p + n_moe * r.moe_layer_dense_p + r.embed_p + r.head_p + r.final_norm_p, PARAMS, "non-expert parameters (architecture)", "非专家参数（由结构）", MEGATRON_PARAMS)
    r.arch_expert = d("arch_expert_params", n_moe * r.moe_layer_expert_p, PARAMS, "expert parameters (architecture)", "专家参数（由结构）", MEGATRON_PARAMS)
    r.arch_total = d("arch_total_params", r.arch_dense + r.arch_expert, PARAMS, "parameters (architecture)", "参数总数（由结构）", MEGATRON_PARAMS)
    r.has_arch = d("has_arch", negate(IsBlank(r.arch_total)), BOOL, "the architecture is complete enough to count", "结构足以计数", doc("partial-architectures"))
    r.largest = d(
        "largest_matrix_params",
        maximum(V * h, h * a * hd, h * g * hd, if_(n_dense.gt(0), h * f, 0), if_(E.gt(0), h * f_moe, 0), h * f_sh),
        PARAMS, "largest single weight matrix", "最大单个权重矩阵", "DeepSpeed estimate_zero3_model_states_mem_needs (largest layer; gate and up counted separately)",
    )
    # Adafactor keeps, per matrix, one row and one column statistic; vectors keep a full v.
    r.factored = d(
        "adafactor_v_elems",
        (n_dense + n_moe) * (2 * h * norm_w + if_(qk_norm, 2 * hd * norm_w, 0)
                             + (h + a * hd) * 2 + (h + g * hd) * 2)
        + n_dense * mats * (h + f)
        + n_moe * (E * mats * (h + f_moe) + (h + E) + if_(f_sh.gt(0), mats * (h + f_sh), 0))
        + (V + h) + if_(tied, 0, V + h) + h * norm_w,
        PARAMS, "Adafactor second-moment elements", "Adafactor 二阶矩元素数", "Shazeer & Stern 2018 (factored second moment)",
    )

    # the expert split ---------------------------------------------------------------------------
    ppr = Col("params_per_rank")
    pp, tp, ep, etp = r.pp, r.tp, r.ep, r.etp
    r.total = total = d("params_total", default("params_total", r.arch_total), PARAMS, "parameters", "参数总数", COLUMN + "; else counted from the architecture (" + doc("parameters") + ")")
    solved = d(
        "params_expert_solved",
        if_(any_of(IsBlank(ppr), ep.le(1)), 0, (pp * ppr - total / tp) / (1 / (ep * etp) - 1 / tp)),
        PARAMS, "expert parameters solved from params_per_rank", "由每卡参数反推的专家参数",
        MOE35 + ": X + E = total and X + E/8 = per rank",
    )
    r.expert = d(
        "params_expert",
        default("params_expert", if_(all_of(negate(IsBlank(ppr)), ep.gt(1)), solved, if_(r.has_arch, r.arch_expert, 0))),
        PARAMS, "expert parameters", "专家参数", doc("parts-and-groups"),
    )
    r.dense = d("params_dense", total - r.expert, PARAMS, "non-expert parameters", "非专家参数", doc("parts-and-groups"))
    r.active = d(
        "params_active",
        default("params_active", r.dense + if_(E.gt(0), r.expert * r.topk / E, 0)),
        PARAMS, "active parameters per token", "每 token 激活参数", doc("parameters") + ": non-expert + expert × topk / experts",
    )
    r.has_experts = d("has_experts", r.expert.gt(0), BOOL, "the model has routed experts", "含路由专家", doc("parts-and-groups"))
