"""Parameters: the architecture's count, layer by layer, and the expert split.

A layer is an attention block (softmax attention: standard or multi-head latent; or, in a hybrid
model, a Gated DeltaNet linear-attention block), its norms, and an MLP block (dense, or MoE: routed
experts, shared experts and the router).  The model adds the embeddings, the final norm and the
multi-token prediction (MTP) modules.  Every term below names the reference code it counts.
"""

from __future__ import annotations

from ..expr import Col, IsBlank, all_of, any_of, ceil, default, floor, if_, maximum, negate
from ..registry import BOOL, COUNT, PARAMS, TEXT, Registry
from .common import COLUMN, MEGATRON_PARAMS, MOE35, Ctx, column_definer, definer, doc, or0

HF = "huggingface/transformers src/transformers/models/"
DEEPSEEK_MLA = (
    "DeepSeek-V2/V3 multi-head latent attention (deepseek-ai/DeepSeek-V3 inference/model.py "
    f"class MLA; {HF}deepseek_v3/modeling_deepseek_v3.py DeepseekV3Attention)"
)
GDN = (
    f"Gated DeltaNet (Yang et al. 2024, arXiv 2412.06464) as in {HF}"
    "qwen3_next/modeling_qwen3_next.py Qwen3NextGatedDeltaNet"
)
MTP_SOURCE = (
    "multi-token prediction (DeepSeek-V3 technical report arXiv 2412.19437 §2.2; deepseek-ai/DeepSeek-V3 README_WEIGHTS.md; "
    "Megatron-LM megatron/core/transformer/multi_token_prediction.py MultiTokenPredictionLayer: enorm, hnorm, eh_proj, one transformer layer, final norm; "
    "vLLM vllm/model_executor/models/qwen3_next_mtp.py); the embedding and output head are shared with the main model"
)
VOCAB_PADDING = "Megatron-LM megatron/training/tokenizer/tokenizer.py _vocab_size_with_padding: ceil(vocab / (divisible_by × tp)) × divisible_by × tp"
GPT_OSS = (
    f"{HF}gpt_oss/modeling_gpt_oss.py (GptOssAttention sinks; GptOssTopKRouter bias; "
    "GptOssExperts gate_up_proj_bias, down_proj_bias)"
)


def define(reg: Registry, r: Ctx) -> None:
    _columns(reg, r)
    reg.section = "parameters"
    _attention(reg, r)
    _mlp(reg, r)
    _layer_kinds(reg, r)
    _model(reg, r)
    _optimizer_shapes(reg, r)
    _expert_split(reg, r)


def _columns(reg: Registry, r: Ctx) -> None:
    """The architecture's input columns, each with its default."""
    reg.section = "architecture"
    d = definer(reg, COUNT)
    given, flag = column_definer(reg, COUNT), column_definer(reg, BOOL)
    r.L = given("layers", None, "layers", "层数")
    r.h = h = given("hidden", None, "hidden", "隐藏维度")
    r.a = a = given("heads", None, "heads", "头数")
    r.g = given("kv_heads", a, "kv heads", "KV 头数", " (heads when empty)")
    r.hd = hd = given("head_dim", h / a, "head dim", "每头维度", " (hidden / heads when empty)")
    r.f = f = given("ffn_hidden", None, "ffn hidden", "MLP 宽度")
    vocab = given("vocab", None, "vocab", "词表")
    vm = given(
        "vocab_multiple", None, "vocab padded to a multiple of (× tp)", "词表填充倍数（× tp）"
    )
    r.V = d(
        "padded_vocab",
        if_(IsBlank(vm), vocab, ceil(vocab / (vm * r.tp)) * vm * r.tp),
        "vocabulary with padding",
        "填充后的词表",
        source=VOCAB_PADDING + "; unpadded when vocab_multiple is empty",
    )
    d(
        "vocab_padded",
        negate(IsBlank(vm)),
        "the vocabulary is padded",
        "词表有填充",
        unit=BOOL,
        source=VOCAB_PADDING,
    )
    r.glu = flag("glu", True, "gated MLP", "门控 MLP")
    r.tied = flag("tied_embeddings", False, "tied embeddings", "共享嵌入")
    r.norm = given("norm", "rmsnorm", "norm", "归一化", unit=TEXT)
    r.qk_norm = flag("qk_norm", False, "qk norm", "qk 归一化")
    r.npl = given(
        "norms_per_layer",
        2,
        "norms per layer",
        "每层 norm 个数",
        " (two: before attention and before the MLP)",
    )
    r.qkv_bias = flag("qkv_bias", False, "q, k, v biases", "q、k、v 偏置")
    r.lbias = flag("linear_bias", False, "biases on every linear layer", "所有线性层带偏置")
    r.sinks = flag("attention_sinks", False, "attention sinks", "注意力 sink")
    r.gate = flag("gated_attention", False, "gated attention", "门控注意力")
    r.window = given("sliding_window", None, "sliding window", "滑动窗口")
    r.sliding_every = given(
        "sliding_every",
        None,
        "one layer in k global",
        "每 k 层一层全局",
        " (empty: every layer local)",
    )
    # multi-head latent attention
    r.qr = given("q_lora_rank", None, "MLA query rank", "MLA query 秩")
    r.kvr = kvr = given("kv_lora_rank", None, "MLA key/value rank", "MLA key/value 秩")
    r.rope = rope = given("qk_rope_head_dim", None, "MLA rotary head dim", "MLA 旋转头维度")
    r.nope = nope = given("qk_nope_head_dim", None, "MLA non-rotary head dim", "MLA 非旋转头维度")
    r.vhd = vhd = given("v_head_dim", None, "MLA value head dim", "MLA value 头维度")
    r.mla = mla = d(
        "is_mla",
        negate(IsBlank(kvr)),
        "multi-head latent attention",
        "多头潜在注意力",
        unit=BOOL,
        source=DEEPSEEK_MLA,
    )
    r.dq = d(
        "qk_head_dim",
        if_(mla, nope + rope, hd),
        "query/key head dim",
        "query/key 头维度",
        source=DEEPSEEK_MLA + ": nope + rope; else head_dim",
    )
    r.dv = d(
        "v_head_dim_used",
        if_(mla, vhd, hd),
        "value head dim",
        "value 头维度",
        source=DEEPSEEK_MLA + ": v_head_dim; else head_dim",
    )
    # MoE
    r.E = given("experts", 0, "routed experts", "路由专家数")
    r.topk = given("topk", 0, "top-k", "top-k")
    r.f_moe = f_moe = given(
        "moe_ffn_hidden", f, "expert ffn", "专家 MLP 宽度", " (ffn_hidden when empty)"
    )
    r.f_sh = f_sh = given(
        "shared_expert_ffn",
        if_(IsBlank(Col("shared_experts")), 0, f_moe),
        "shared expert ffn",
        "共享专家宽度",
        " (moe_ffn_hidden when shared_experts is given, else 0)",
    )
    r.n_sh = given(
        "shared_experts",
        if_(f_sh.gt(0), 1, 0),
        "shared experts",
        "共享专家数",
        " (1 when shared_expert_ffn > 0)",
    )
    r.sh_gate = flag("shared_expert_gate", False, "shared-expert gate", "共享专家门")
    r.router_bias = flag("router_bias", False, "router bias", "路由偏置")
    r.moe_every = given("moe_every", 1, "MoE every", "MoE 间隔")
    r.k_dense = given("first_dense_layers", 0, "first dense layers", "前置稠密层数")
    r.mtp = given("mtp_layers", 0, "MTP modules", "MTP 模块数")
    r.fae_given = given("full_attention_every", 1, "full attention every", "全注意力间隔")
    # Gated DeltaNet (the linear-attention layers of a hybrid model)
    nk, nv, dk, dvl, r.kconv = (
        given(f"linear_{key}", None, f"linear-attention {en}", f"线性注意力{zh}")
        for key, en, zh in (
            ("key_heads", "key heads", " key 头数"),
            ("value_heads", "value heads", " value 头数"),
            ("key_head_dim", "key head dim", " key 头维度"),
            ("value_head_dim", "value head dim", " value 头维度"),
            ("conv_kernel", "conv kernel", "卷积核"),
        )
    )
    r.gdn = d(
        "has_linear_attention",
        negate(IsBlank(nk)),
        "Gated DeltaNet layers",
        "Gated DeltaNet 层",
        unit=BOOL,
        source=GDN,
    )
    r.lin_dims = (nk, nv, dk, dvl)
    r.fae = d(
        "softmax_attention_every",
        if_(r.gdn, r.fae_given, 1),
        "one layer in k has softmax attention",
        "每 k 层一层 softmax 注意力",
        source=doc("parameters") + ": full_attention_every with the linear-attention columns; "
        "without them every layer is counted as softmax attention",
    )


def _attention(reg: Registry, r: Ctx) -> None:
    """One layer's attention block: softmax (standard or latent) or Gated DeltaNet, and its norms."""
    d = definer(reg, PARAMS)
    h, a, g, hd, dq = r.h, r.a, r.g, r.hd, r.dq
    qr, kvr, rope, nope, vhd = r.qr, r.kvr, r.rope, r.nope, r.vhd
    mla, gate, lbias = r.mla, r.gate, r.lbias
    r.norm_w = norm_w = d(
        "norm_params_per_h",
        if_(r.norm.eq("layernorm"), 2, 1),
        "norm vectors per norm",
        "每个 norm 的向量数",
        unit=COUNT,
        source=MEGATRON_PARAMS + ": rmsnorm has a scale, layernorm a scale and a bias",
    )
    qkvb = any_of(r.qkv_bias, lbias)
    # softmax attention
    std_proj = d(
        "attn_gqa_projection_params",
        2 * h * hd * (a + g) + if_(gate, h * a * hd, 0),
        "q, k, v, o projections",
        "q、k、v、o 投影",
        source=f"{MEGATRON_PARAMS}: q, o = h·heads·d; k, v = h·kv·d; gated attention: q twice as "
        f"wide ({HF}qwen3_next/modeling_qwen3_next.py Qwen3NextAttention)",
    )
    q_part = if_(IsBlank(qr), h * a * dq, h * qr + qr * norm_w + qr * a * dq)
    mla_proj = d(
        "attn_mla_projection_params",
        q_part + h * (kvr + rope) + kvr * norm_w + kvr * a * (nope + vhd) + a * vhd * h,
        "MLA: q (down, norm, up), kv (down with the shared rotary key, norm, up), o",
        "MLA：q（降维、norm、升维），kv（降维含共享旋转 key、norm、升维），o",
        source=f"{DEEPSEEK_MLA}: q_a_proj h·q_rank, q_a_layernorm, q_b_proj "
        "q_rank·heads·(nope+rope); kv_a_proj_with_mqa h·(kv_rank+rope), kv_a_layernorm, kv_b_proj "
        "kv_rank·heads·(nope+v); o_proj heads·v·h",
    )
    attn_bias = d(
        "attn_bias_params",
        if_(
            mla,
            if_(qkvb, if_(IsBlank(qr), 0, qr) + kvr + rope, 0),
            if_(qkvb, (a * if_(gate, 2, 1) + 2 * g) * hd, 0),
        )
        + if_(lbias, h, 0),
        "attention biases per layer",
        "每层注意力偏置",
        source=f"{HF}qwen2/modeling_qwen2.py Qwen2Attention (q, k, v biases); {GPT_OSS} (o too); "
        "MLA: q_a_proj, kv_a_proj_with_mqa (and o_proj)",
    )
    qk_p = d(
        "qk_norm_params_per_layer",
        if_(all_of(r.qk_norm, negate(mla)), 2 * hd * norm_w, 0),
        "qk-norm parameters per layer",
        "每层 qk-norm 参数",
        source="Qwen3 q_norm and k_norm: one head_dim vector each, shared by the heads (transformers modeling_qwen3.py)",
    )
    sink_p = d(
        "attn_sink_params",
        if_(r.sinks, a, 0),
        "attention sinks per layer",
        "每层注意力 sink",
        source=GPT_OSS + ": one logit per head",
    )
    r.attn_p = attn_p = d(
        "attn_params_per_layer",
        if_(mla, mla_proj, std_proj) + attn_bias + qk_p + sink_p,
        "parameters per softmax-attention block",
        "每个 softmax 注意力块参数",
        source=MEGATRON_PARAMS + "; " + DEEPSEEK_MLA,
    )
    # linear attention (Gated DeltaNet)
    nk, nv, dk, dvl = r.lin_dims
    key_dim, value_dim = nk * dk, nv * dvl
    r.qkvz_p = h * (2 * key_dim + 2 * value_dim)  # in_proj_qkvz (the largest matrix reads it)
    in_proj = r.qkvz_p + h * 2 * nv  # and in_proj_ba
    gdn_p = d(
        "gated_deltanet_params",
        in_proj + (2 * key_dim + value_dim) * r.kconv + 2 * nv + dvl * norm_w + value_dim * h,
        "Gated DeltaNet block: in_proj_qkvz, in_proj_ba, conv1d, dt_bias, A_log, gated norm, out_proj",
        "Gated DeltaNet 块参数",
        source=f"{GDN}: in_proj_qkvz h·(2·key_dim + 2·value_dim), in_proj_ba h·2·v_heads, "
        "depthwise conv1d (2·key_dim + value_dim)·kernel, dt_bias and A_log v_heads each, "
        "RMSNormGated(v_head_dim), out_proj value_dim·h",
    )
    r.lin_attn_p = d(
        "linear_attn_params_per_layer",
        if_(r.gdn, gdn_p, attn_p),
        "parameters per layer without softmax attention",
        "每个非 softmax 注意力层的注意力参数",
        source=f"{GDN}; without the Gated DeltaNet columns such a layer is counted like a "
        "softmax-attention layer",
    )
    r.layer_norm_p = d(
        "norm_params_per_layer",
        r.npl * h * norm_w,
        "norm parameters per layer",
        "每层 norm 参数",
        source=f"{MEGATRON_PARAMS}; Gemma 3: four norms ({HF}gemma3/modeling_gemma3.py "
        "Gemma3DecoderLayer)",
    )


def _mlp(reg: Registry, r: Ctx) -> None:
    """The MLP blocks: dense, one expert, shared experts and the router; the layers they make."""
    d = definer(reg, PARAMS, MEGATRON_PARAMS)
    h, f, f_moe, f_sh, E = r.h, r.f, r.f_moe, r.f_sh, r.E
    r.mats = mats = d(
        "mlp_matrices",
        if_(r.glu, 3, 2),
        "MLP matrices",
        "MLP 矩阵数",
        unit=COUNT,
        source=MEGATRON_PARAMS + ": gate, up and down with a gated MLP",
    )

    def mlp_bias(width):
        return if_(r.lbias, (mats - 1) * width + h, 0)

    bias_src = GPT_OSS + ": (matrices − 1)·width + h per MLP"
    r.dense_mlp_p = dense_mlp_p = d(
        "dense_mlp_params",
        mats * h * f + mlp_bias(f),
        "dense MLP parameters per layer",
        "每层稠密 MLP 参数",
        source=MEGATRON_PARAMS + "; " + bias_src,
    )
    r.expert_mlp_p = expert_mlp_p = d(
        "expert_mlp_params",
        mats * h * f_moe + mlp_bias(f_moe),
        "parameters per expert",
        "每个专家参数",
        source=MEGATRON_PARAMS + "; " + bias_src,
    )
    shared_p = d(
        "shared_expert_params",
        r.n_sh * (mats * h * f_sh + mlp_bias(f_sh)) + if_(r.sh_gate, h, 0),
        "shared-expert parameters per layer",
        "每层共享专家参数",
        source=f"{MEGATRON_PARAMS}; DeepSeek n_shared_experts; shared_expert_gate Linear(h, 1) "
        f"({HF}qwen3_next/modeling_qwen3_next.py Qwen3NextSparseMoeBlock)",
    )
    router_p = d(
        "router_params",
        h * E + if_(r.router_bias, E, 0),
        "router parameters per MoE layer",
        "每个 MoE 层路由参数",
        source=f"{MEGATRON_PARAMS}; router bias: {GPT_OSS}; DeepSeek-V3 e_score_correction_bias "
        "(inference/model.py Gate.bias)",
    )
    r.moe_mlp_dense_p = moe_mlp_dense_p = d(
        "moe_mlp_dense_params",
        router_p + shared_p,
        "non-expert MLP parameters per MoE layer (router, shared experts)",
        "每个 MoE 层非专家 MLP 参数（路由、共享专家）",
    )
    attn_p, layer_norm_p = r.attn_p, r.layer_norm_p
    r.dense_layer_p = d(
        "dense_layer_params",
        attn_p + layer_norm_p + dense_mlp_p,
        "parameters per dense layer",
        "每个稠密层参数",
    )
    r.moe_layer_dense_p = d(
        "moe_layer_dense_params",
        attn_p + layer_norm_p + moe_mlp_dense_p,
        "non-expert parameters per MoE layer",
        "每个 MoE 层非专家参数",
    )
    r.moe_layer_expert_p = d(
        "moe_layer_expert_params",
        E * expert_mlp_p,
        "expert parameters per MoE layer",
        "每个 MoE 层专家参数",
    )


def _layer_kinds(reg: Registry, r: Ctx) -> None:
    """Which layers are MoE, which have softmax attention, which attend globally."""
    d = definer(reg, COUNT, doc("parameters"))
    r.n_moe = n_moe = d(
        "moe_layers",
        if_(r.E.gt(0), maximum(ceil(r.L / r.moe_every) - ceil(r.k_dense / r.moe_every), 0), 0),
        "MoE layers",
        "MoE 层数",
        source=f"{doc('parameters')}: layer i is MoE when i ≥ first_dense_layers and i mod "
        f"moe_every = 0 ({HF}deepseek_v3/modeling_deepseek_v3.py DeepseekV3DecoderLayer)",
    )
    r.n_dense = d("dense_layers", r.L - n_moe, "dense layers", "稠密层数")
    r.n_soft = n_soft = d(
        "softmax_attention_layers",
        floor(r.L / r.fae),
        "softmax-attention layers",
        "softmax 注意力层数",
        source=doc("parameters") + ": layer i has softmax attention when i mod k = k − 1",
    )
    r.n_lin = d(
        "linear_attention_layers",
        r.L - n_soft,
        "layers without softmax attention",
        "非 softmax 注意力层数",
    )
    r.n_global = d(
        "global_attention_layers",
        if_(
            IsBlank(r.window),
            n_soft,
            if_(IsBlank(r.sliding_every), 0, floor(r.L / r.sliding_every)),
        ),
        "softmax-attention layers over the whole sequence",
        "全局注意力层数",
        source=f"{doc('parameters')}: with sliding_window, layer i is global when i mod "
        f"sliding_every = sliding_every − 1 ({HF}gemma3/configuration_gemma3.py, "
        "gpt_oss/configuration_gpt_oss.py layer_types)",
    )
    r.n_local = d(
        "local_attention_layers",
        n_soft - r.n_global,
        "sliding-window attention layers",
        "滑动窗口注意力层数",
    )


def _model(reg: Registry, r: Ctx) -> None:
    """The whole model: embeddings, head, final norm, MTP modules, and the totals by part."""
    d = definer(reg, PARAMS, MTP_SOURCE)
    h, V, E, mtp, norm_w = r.h, r.V, r.E, r.mtp, r.norm_w
    attn_p, lin_attn_p, layer_norm_p = r.attn_p, r.lin_attn_p, r.layer_norm_p
    dense_mlp_p, moe_mlp_dense_p = r.dense_mlp_p, r.moe_mlp_dense_p
    n_soft, n_lin, n_dense, n_moe = r.n_soft, r.n_lin, r.n_dense, r.n_moe
    r.embed_p = d(
        "embedding_params",
        V * h,
        "input embedding",
        "输入嵌入",
        source=MEGATRON_PARAMS + "; " + VOCAB_PADDING,
    )
    r.head_p = d(
        "output_head_params",
        if_(r.tied, 0, V * h),
        "output head (untied)",
        "输出头（不共享时）",
        source=MEGATRON_PARAMS,
    )
    r.final_norm_p = d(
        "final_norm_params", h * norm_w, "final norm", "末层 norm", source=MEGATRON_PARAMS
    )
    eh_proj_norms = 2 * h * h + 3 * h * norm_w
    r.mtp_layer_dense_p = mtp_layer_dense = d(
        "mtp_module_dense_params",
        eh_proj_norms + attn_p + layer_norm_p + if_(E.gt(0), moe_mlp_dense_p, dense_mlp_p),
        "non-expert parameters per MTP module (eh_proj 2h·h, three norms, one layer)",
        "每个 MTP 模块非专家参数（eh_proj 2h·h、三个 norm、一层）",
    )
    r.mtp_layer_expert_p = mtp_layer_expert = d(
        "mtp_module_expert_params",
        if_(E.gt(0), E * r.expert_mlp_p, 0),
        "expert parameters per MTP module",
        "每个 MTP 模块专家参数",
        source=MTP_SOURCE + " (its layer is an MoE layer in an MoE model)",
    )
    r.arch_mtp_dense = mtp_dense = d(
        "arch_mtp_dense_params",
        mtp * mtp_layer_dense,
        "MTP non-expert parameters",
        "MTP 非专家参数",
    )
    r.arch_mtp_expert = mtp_expert = d(
        "arch_mtp_expert_params", mtp * mtp_layer_expert, "MTP expert parameters", "MTP 专家参数"
    )
    r.arch_mtp = d("arch_mtp_params", mtp_dense + mtp_expert, "MTP modules", "MTP 模块参数")
    by_kind = definer(reg, PARAMS, doc("parameters"))
    attn_all = by_kind(
        "arch_attention_params",
        n_soft * attn_p + n_lin * lin_attn_p,
        "attention, all layers",
        "注意力（全部层）",
    )
    mlp_all = by_kind(
        "arch_mlp_params",
        n_dense * dense_mlp_p + n_moe * (moe_mlp_dense_p + E * r.expert_mlp_p),
        "MLP: dense, experts, shared experts, routers",
        "MLP：稠密、专家、共享专家、路由",
    )
    norms_all = by_kind(
        "arch_norm_params",
        r.L * layer_norm_p + r.final_norm_p,
        "norms, all layers and the final one",
        "norm（各层与末层）",
    )
    emb_all = by_kind(
        "arch_embedding_params", r.embed_p + r.head_p, "embedding and output head", "嵌入与输出头"
    )
    r.arch_dense = d(
        "arch_dense_params",
        r.L * layer_norm_p
        + n_soft * attn_p
        + n_lin * lin_attn_p
        + n_dense * dense_mlp_p
        + n_moe * moe_mlp_dense_p
        + r.embed_p
        + r.head_p
        + r.final_norm_p
        + mtp_dense,
        "non-expert parameters (architecture)",
        "非专家参数（由结构）",
        source=MEGATRON_PARAMS + "; " + doc("parameters"),
    )
    r.arch_expert = d(
        "arch_expert_params",
        n_moe * r.moe_layer_expert_p + mtp_expert,
        "expert parameters (architecture)",
        "专家参数（由结构）",
        source=MEGATRON_PARAMS,
    )
    r.arch_total = d(
        "arch_total_params",
        r.arch_dense + r.arch_expert,
        "parameters (architecture)",
        "参数总数（由结构）",
        source=MEGATRON_PARAMS + "; " + doc("parameters"),
    )
    r.has_arch = d(
        "has_arch",
        negate(IsBlank(r.arch_total)),
        "the architecture is complete enough to count",
        "结构足以计数",
        unit=BOOL,
        source=doc("partial-architectures"),
    )
    d(
        "arch_main_params",
        emb_all + attn_all + mlp_all + norms_all,
        "parameters without the MTP modules",
        "不含 MTP 模块的参数",
        source=doc("parameters") + ": embedding + attention + MLP + norms",
    )


def _optimizer_shapes(reg: Registry, r: Ctx) -> None:
    """The matrix shapes the optimizers read: the largest matrix, Adafactor's factored elements."""
    d = definer(reg, PARAMS)
    h, a, g, hd, dq, V, E, mats, norm_w = r.h, r.a, r.g, r.hd, r.dq, r.V, r.E, r.mats, r.norm_w
    qr, kvr, nope, vhd, f, f_moe, f_sh = r.qr, r.kvr, r.nope, r.vhd, r.f, r.f_moe, r.f_sh
    n_dense, n_moe = r.n_dense, r.n_moe
    r.largest = d(
        "largest_matrix_params",
        maximum(
            V * h,
            if_(
                r.mla,
                maximum(
                    if_(IsBlank(qr), h * a * dq, qr * a * dq), kvr * a * (nope + vhd), a * vhd * h
                ),
                h * a * hd * if_(r.gate, 2, 1),
            ),
            h * g * hd,
            if_(n_dense.gt(0), h * f, 0),
            if_(E.gt(0), h * f_moe, 0),
            h * f_sh,
            if_(r.gdn, r.qkvz_p, 0),
        ),
        "largest single weight matrix",
        "最大单个权重矩阵",
        source="DeepSpeed estimate_zero3_model_states_mem_needs (largest layer; gate and up counted separately)",
    )
    # Adafactor keeps, per matrix, one row and one column statistic; vectors keep a full v.
    r.factored = d(
        "adafactor_v_elems",
        (n_dense + n_moe)
        * (
            r.npl * h * norm_w
            + if_(r.qk_norm, 2 * hd * norm_w, 0)
            + (h + a * hd) * 2
            + (h + g * hd) * 2
        )
        + n_dense * mats * (h + f)
        + n_moe * (E * mats * (h + f_moe) + (h + E) + if_(f_sh.gt(0), mats * (h + f_sh), 0))
        + (V + h)
        + if_(r.tied, 0, V + h)
        + h * norm_w,
        "Adafactor second-moment elements",
        "Adafactor 二阶矩元素数",
        source="Shazeer & Stern 2018 (factored second moment; attention counted as four "
        "h×(heads·d) matrices)",
    )


def _expert_split(reg: Registry, r: Ctx) -> None:
    """The total, and its expert and non-expert parts (given, solved from params_per_rank, or counted)."""
    d = definer(reg, PARAMS, doc("parts-and-groups"))
    mtp, E = r.mtp, r.E
    mtp_dense, mtp_expert = r.arch_mtp_dense, r.arch_mtp_expert
    ppr = Col("params_per_rank")
    pp, tp, ep, etp = r.pp, r.tp, r.ep, r.etp
    r.total = total = d(
        "params_total",
        default("params_total", r.arch_total),
        "parameters",
        "参数总数",
        source=f"{COLUMN}; else counted from the architecture ({doc('parameters')}), MTP modules "
        "included",
    )
    solved = d(
        "params_expert_solved",
        if_(any_of(IsBlank(ppr), ep.le(1)), 0, (pp * ppr - total / tp) / (1 / (ep * etp) - 1 / tp)),
        "expert parameters solved from params_per_rank",
        "由每卡参数反推的专家参数",
        source=MOE35 + ": X + E = total and X + E/8 = per rank",
    )
    r.expert = d(
        "params_expert",
        default(
            "params_expert",
            if_(all_of(negate(IsBlank(ppr)), ep.gt(1)), solved, if_(r.has_arch, r.arch_expert, 0)),
        ),
        "expert parameters",
        "专家参数",
    )
    r.dense = d("params_dense", total - r.expert, "non-expert parameters", "非专家参数")
    r.params_mtp = d(
        "params_mtp",
        if_(r.has_arch, r.arch_mtp, 0),
        "MTP-module parameters (in the total)",
        "MTP 模块参数（含在总数中）",
        source=MTP_SOURCE,
    )
    r.active = d(
        "params_active",
        default(
            "params_active",
            r.dense - or0(mtp_dense) + if_(E.gt(0), (r.expert - or0(mtp_expert)) * r.topk / E, 0),
        ),
        "parameters a token passes through, input embedding included (main model, without MTP)",
        "每 token 经过的参数，含输入嵌入（主模型，不含 MTP）",
        source=f"{doc('parameters')}: non-expert + expert × topk / experts, the MTP modules left "
        "out as DeepSeek-V3 states its 37B; the count Qwen's and Mistral's cards give as "
        "activated (Qwen3-30B-A3B huggingface.co/Qwen/Qwen3-30B-A3B: 3.3B activated = 3.35 B with "
        "the embedding, 3.04 B without; Mixtral mistral.ai/news/mixtral-of-experts: 12.9B per "
        "token = 12.88 B with it, 12.75 B without); the model-card count without it is "
        "params_active_card",
    )
    r.has_experts = d(
        "has_experts", r.expert.gt(0), "the model has routed experts", "含路由专家", unit=BOOL
    )
    r.has_mtp = d(
        "has_mtp",
        all_of(r.has_arch, mtp.gt(0)),
        "the model has MTP modules",
        "含 MTP 模块",
        unit=BOOL,
        source=MTP_SOURCE,
    )
