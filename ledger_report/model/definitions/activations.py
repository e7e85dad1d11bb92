"""Activations, logits and the loss: what a micro-batch keeps for backward on each stage, by
recompute mode, as the row's framework convention implements it."""

from __future__ import annotations

from ..expr import IsBlank, Lookup, all_of, if_, maximum, minimum, negate
from ..registry import BOOL, BYTES, COUNT, TEXT, TOKENS, Registry
from .common import (
    ATTN_SCORE_BYTES_PER_ELEM,
    FULL_RECOMPUTE_SBH_BYTES,
    KORTH,
    MOE35,
    Ctx,
    conv,
    definer,
    doc,
    of_kinds,
    or0,
    switch,
)
from .stages import STAGE_ZH, STAGES

TORCHTITAN_SAC = "torchtitan torchtitan/distributed/activation_checkpoint.py (op-level policy: saves matmul and attention outputs, every second mm recomputed)"
DROPOUT_MASKS_SBH = 2  # Korthikanti's attention and MLP dropout masks, one byte each per s·b·h
SOFTMAX_BYTES_PER_ELEM = 2  # without dropout only the softmax output is kept
# torch.compile: a norm's input and its output (the next matmul's input) stay saved
COMPILED_NORM_BYTES = 4
# the MTP module's [normed embedding, normed hidden] concatenation, 2·h in 16 bits
MTP_CONCAT_BYTES = 4
DISPATCHED_BYTES_PER_H = 2  # a dispatched token copy in the activations' 16-bit dtype
COMPILE_SOURCE = "torch.compile's min-cut partitioner (torch/_functorch/partitioners.py) saves matmul inputs and recomputes fused elementwise outputs"


def _by_mode(mode, full, op, plain):
    """What a layer keeps under full recompute, op-level selective checkpointing, or otherwise."""
    return if_(mode.eq("full"), full, if_(mode.eq("selective_op"), op, plain))


def define(reg: Registry, r: Ctx) -> None:
    """Activations per layer and per stage, the logits and the loss working sets."""
    reg.section = "activations"
    _tokens(reg, r)
    _layers(reg, r)
    _moe(reg, r)
    _recompute(reg, r)
    _stages(reg, r)
    reg.section = "loss"
    _loss(reg, r)


def _tokens(reg: Registry, r: Ctx) -> None:
    """The tokens of a micro-batch on the rank, and the bytes per element each kind of tensor keeps."""
    d = definer(reg, COUNT, KORTH)
    r.s_loc = s_loc = d(
        "seq_per_rank",
        r.seq_len / r.cp,
        "tokens per sequence on the rank s = seq/cp",
        "每卡序列长度 s = seq/cp",
        unit=TOKENS,
        source=doc("activations"),
    )
    r.tokens_mb = sb = d(
        "tokens_per_micro_batch_rank",
        s_loc * r.micro_batch,
        "tokens of a micro-batch on the rank s·b (the GEMMs' rows)",
        "每卡一个 micro-batch 的 token 数 s·b（GEMM 行数）",
        source=doc("activations") + ": seq/cp × micro_batch",
    )
    r.sbh = d("sbh", sb * r.h, "s·b·h", "s·b·h")
    r.sp_div = d(
        "sp_divisor",
        if_(r.seq_par, r.tp, 1),
        "sequence-parallel divisor: tp with sequence parallelism, else 1",
        "序列并行除数：序列并行时为 tp，否则为 1",
    )
    comp = r.compile
    r.mlp_act_w = d(
        "mlp_act_factor",
        if_(r.glu, if_(comp, 6, conv(r, "glu_saved_bytes")), 4),
        "MLP activation bytes per s·b·ffn",
        "MLP 激活系数",
        source=f"{KORTH} (plain MLP: 4); a gated MLP keeps gate, up and their product (6, fused as "
        "Megatron-LM does), and eager PyTorch silu(gate) too (8, measured: "
        "bench/measure_torch.md); compiled: 6",
    )
    r.norms = d(
        "norm_saved_bytes",
        if_(comp, COMPILED_NORM_BYTES, conv(r, "norm_saved_bytes")),
        "bytes per h kept by each norm",
        "每个 norm 为反向保留的字节（每 h）",
        source=f"{KORTH}: a norm's input and output, 2 + 2 (fused); eager PyTorch also keeps the "
        "fp32 upcast: 8 (bench/measure_torch.md)",
    )


def _layers(reg: Registry, r: Ctx) -> None:
    """What one layer keeps for backward, nothing recomputed: norms, attention, dense MLP, scores."""
    d = definer(reg, BYTES, KORTH)
    a, g, hd, tp = r.a, r.g, r.hd, r.tp
    sb, sbh, sp_div, s_loc = r.tokens_mb, r.sbh, r.sp_div, r.s_loc
    b, drop = r.micro_batch, r.dropout
    repl_w = d(
        "act_replicated_factor",
        2 * r.norms + if_(drop, DROPOUT_MASKS_SBH, 0),
        "replicated activation bytes per s·b·h",
        "不随 TP 切分的激活系数",
        unit=COUNT,
        source=f"{KORTH}: 10·sbh = two norms' inputs and outputs (4 each) + two 1-byte dropout "
        "masks",
    )
    r.repl = d(
        "act_replicated_per_layer",
        repl_w * sbh / sp_div,
        "norm inputs, block inputs, dropout masks",
        "norm 输入、块输入、dropout 掩码",
        source=KORTH + ": ÷ tp with sequence parallel",
    )
    dq, dv = r.dq, r.dv
    r.attn_lin = attn_lin = d(
        "act_attention_per_layer",
        if_(
            r.mla,
            sb * (4 * a * dq + 4 * a * dv) / tp
            + sb * 2 * (2 * or0(r.qr) + 2 * r.kvr + r.rope) / sp_div,
            sb * (4 * a * hd + 4 * g * hd) / tp + if_(r.gate, sb * 2 * a * hd / tp, 0),
        ),
        "Q, K, V and projection input",
        "Q、K、V 与投影输入",
        source=f"{KORTH} (GQA: K and V use kv_heads; gated attention: the gate too); MLA: Q and K "
        "of heads·(nope+rope), V and the projection input of heads·v_head_dim, and the compressed "
        "q and kv before and after their norms, not split by tp (Megatron-LM "
        "megatron/core/transformer/multi_latent_attention.py)",
    )
    nk, nv, dk, dvl = r.lin_dims
    lin_act = d(
        "act_linear_attention_per_layer",
        if_(r.gdn, sb * 2 * (4 * nk * dk + 5 * nv * dvl + 2 * nv) / tp, attn_lin),
        "linear-attention block: projections, convolution outputs, core and gated-norm outputs",
        "线性注意力块激活：投影、卷积输出、核心与门控 norm 输出",
        source="Gated DeltaNet (huggingface/transformers "
        "src/transformers/models/qwen3_next/modeling_qwen3_next.py Qwen3NextGatedDeltaNet): q, "
        "k, v, z, b, a projections 2·(2·key_dim + 2·value_dim + 2·v_heads), conv outputs "
        "2·(2·key_dim + value_dim), core and norm outputs 2·2·value_dim bytes per token",
    )
    r.lin_delta = d(
        "act_linear_attention_delta",
        lin_act - attn_lin,
        "a linear-attention layer less a softmax-attention layer",
        "线性注意力层与 softmax 注意力层之差",
    )
    r.mlp_dense_act = d(
        "act_dense_mlp_per_layer",
        sb * r.f * r.mlp_act_w / tp,
        "dense MLP activations",
        "稠密 MLP 激活",
    )
    score_w = if_(drop, ATTN_SCORE_BYTES_PER_ELEM, SOFTMAX_BYTES_PER_ELEM)
    r.s2 = d(
        "act_scores_per_attention_layer",
        score_w * a * s_loc * s_loc * b / tp,
        "attention scores heads·s²·b (5 bytes each with dropout, 2 without)",
        "注意力分数 heads·s²·b（有 dropout 每元素 5 字节，无则 2）",
        source=f"{KORTH} (only without flash attention and recompute: softmax output 2, dropout "
        "mask 1, dropout output 2)",
    )
    r.s2_local = d(
        "act_scores_per_local_layer",
        score_w * a * s_loc * minimum(r.window, s_loc) * b / tp,
        "attention scores of a sliding-window layer heads·s·min(window, s)·b",
        "滑动窗口层注意力分数 heads·s·min(window, s)·b",
        source=f"{KORTH}; a sliding-window layer scores each query against at most the window "
        "(banded attention, Beltagy et al. 2020, Longformer)",
    )


def _moe(reg: Registry, r: Ctx) -> None:
    """What an MoE layer's MLP keeps: the dispatched tokens, the experts' and shared experts' tensors, the combine."""
    d = definer(reg, BYTES, KORTH)
    h, tp, sb, sbh, sp_div, mlp_act_w = r.h, r.tp, r.tokens_mb, r.sbh, r.sp_div, r.mlp_act_w
    r.expert_copies = copies = d(
        "moe_expert_token_copies",
        sb * r.topk * minimum(r.etp, sp_div) / sp_div,
        "routed token copies the rank's experts process per micro-batch (balanced routing)",
        "本卡专家每个 micro-batch 处理的路由 token 份数（均衡路由）",
        unit=COUNT,
        source="Megatron-LM megatron/core/transformer/moe/token_dispatcher.py MoEAlltoAllTokenDispatcher: each rank dispatches its sequence-parallel shard "
        "over the expert-parallel group, then gathers the shards of its expert-tensor-parallel group (s·b·topk·min(etp, tp)/tp with sequence parallelism)",
    )
    routed = d(
        "act_moe_routed_input_per_layer",
        DISPATCHED_BYTES_PER_H * copies * h,
        "the dispatched tokens the experts' first matmul keeps (top-k copies of each token, h wide)",
        "专家第一个矩阵乘保留的分发后 token（每个 token top-k 份，宽 h）",
        source="Megatron-LM megatron/core/transformer/moe/experts.py TEGroupedMLP.forward: linear_fc1 keeps permuted_local_hidden_states for its weight gradient; "
        "every framework's grouped or per-expert matmul keeps its gathered input the same way",
    )
    comb_w = d(
        "moe_combine_saved_factor",
        if_(
            r.compile,
            minimum(conv(r, "moe_combine_saved_bytes"), DISPATCHED_BYTES_PER_H),
            conv(r, "moe_combine_saved_bytes"),
        ),
        "bytes per h of each routed token the combine keeps for the routing weights' gradient",
        "合并时为路由权重梯度保留的字节（每个路由 token 每 h）",
        unit=COUNT,
        source="conventions table; compiled, the partitioner keeps at most the 16-bit expert "
        f"output ({COMPILE_SOURCE})",
    )
    combine = d(
        "act_moe_combine_per_layer",
        comb_w * r.topk * sbh / sp_div,
        "the expert outputs the combine keeps for the routing weights",
        "合并时为路由权重保留的专家输出",
        source="conventions table (the framework's MoE combine)",
    )
    mlp_moe_act = d(
        "act_moe_mlp_per_layer",
        routed + combine + copies * r.f_moe * mlp_act_w / r.etp + sb * r.f_sh * mlp_act_w / tp,
        "MoE MLP activations (dispatched tokens, top-k experts + shared)",
        "MoE MLP 激活（分发 token、top-k 专家 + 共享专家）",
        source=f"{KORTH} (each token visits top-k experts), with the dispatched copies the "
        "experts keep and what the combine keeps",
    )
    r.per_dense = d(
        "act_dense_layer",
        r.repl + r.attn_lin + r.mlp_dense_act,
        "activations per dense layer, nothing recomputed",
        "每个稠密层激活（不重计算）",
    )
    r.per_moe = d(
        "act_moe_layer",
        r.repl + r.attn_lin + mlp_moe_act,
        "activations per MoE layer, nothing recomputed",
        "每个 MoE 层激活（不重计算）",
    )


def _recompute(reg: Registry, r: Ctx) -> None:
    """What each recompute mode keeps of a layer, the MTP modules, and the working set rebuilt in backward."""
    d = definer(reg, BYTES)
    h, a, g, tp, sb, sbh, sp_div = r.h, r.a, r.g, r.tp, r.tokens_mb, r.sbh, r.sp_div
    dq, dv, per_dense, per_moe, s2 = r.dq, r.dv, r.per_dense, r.per_moe, r.s2
    resid = d(
        "residual_bytes",
        if_(r.weight_dtype.eq("fp32"), 4, FULL_RECOMPUTE_SBH_BYTES),
        "bytes per element of the residual stream",
        "残差流每元素字节",
        unit=COUNT,
        source=KORTH + "; torch.autocast keeps fp32 where fp32 weights add into the residual",
    )
    r.per_full = per_full = d(
        "act_full_recompute_layer",
        resid * sbh / sp_div,
        "full recompute: the layer input 2·s·b·h",
        "全重计算：层输入 2·s·b·h",
        source=KORTH + "; " + MOE35,
    )
    op_attn = sb * 2 * (a * dq + if_(r.mla, a, g) * dv) / tp + sb * 2 * a * dv / tp
    r.op_dense = op_dense = d(
        "act_op_dense_layer",
        per_full + op_attn + sb * 2 * (r.f + h) / tp,
        "op-level selective: per dense layer",
        "算子级选择性重计算：每稠密层",
        source=f"{TORCHTITAN_SAC}: q and v, up-projection and down-projection outputs, attention "
        "output, block input",
    )
    r.op_moe = op_moe = d(
        "act_op_moe_layer",
        per_full + op_attn + sb * 2 * (r.topk * r.f_moe / r.etp + r.f_sh / tp + h / tp),
        "op-level selective: per MoE layer",
        "算子级选择性重计算：每 MoE 层",
        source=TORCHTITAN_SAC,
    )
    r.recompute_mode = mode = d(
        "recompute_mode",
        if_(r.recompute.eq("selective"), conv(r, "selective_mode"), r.recompute),
        "what recompute keeps, as the convention implements it",
        "框架实际的重计算方式",
        unit=TEXT,
        source=f"{doc('activations')}; selective: Megatron-LM recomputes core attention only "
        "(transformer_config.py recompute_modules = [core_attn]); torchtitan saves by operator",
    )
    mtp_layer = _by_mode(
        mode,
        2 * per_full,
        if_(r.E.gt(0), op_moe, op_dense),
        if_(r.E.gt(0), per_moe, per_dense) + (2 * r.norms + MTP_CONCAT_BYTES) * sbh / sp_div,
    )
    r.mtp_act = d(
        "act_mtp_per_micro_batch",
        r.mtp * mtp_layer,
        "MTP modules' activations of one micro-batch (last stage)",
        "MTP 模块一个 micro-batch 的激活（末段）",
        source="Megatron-LM megatron/core/transformer/multi_token_prediction.py MultiTokenPredictionLayer: enorm and hnorm (each its input and output), "
        "the concatenation eh_proj reads (2·h), and one transformer layer (MoE in an MoE model); under full recompute its two inputs",
    )
    r.keep_s2 = d(
        "keeps_scores",
        all_of(mode.eq("none"), negate(r.flash)),
        "attention scores stored",
        "保存注意力分数",
        unit=BOOL,
        source=KORTH,
    )
    layer_max = of_kinds(r.n_dense, r.n_moe, per_dense, per_moe)
    op_max = of_kinds(r.n_dense, r.n_moe, per_dense - op_dense, per_moe - op_moe)
    r.recompute_ws = d(
        "recompute_working_bytes",
        _by_mode(
            mode,
            layer_max + if_(r.flash, 0, s2),
            maximum(op_max, 0),
            if_(all_of(mode.eq("core_attn"), negate(r.flash)), s2, 0),
        ),
        "recompute working set: a layer's activations rebuilt in backward",
        "重计算工作区：反向时重建的一层激活",
        source=KORTH + " (one layer, rebuilt)",
    )


def _stages(reg: Registry, r: Ctx) -> None:
    """Each stage's activations: one micro-batch's, times the micro-batches the schedule keeps in flight."""
    d = definer(reg, BYTES)
    mode, s2, s2_local = r.recompute_mode, r.s2, r.s2_local
    head_in = d(
        "act_output_layer_input",
        2 * r.sbh / if_(conv(r, "head_input_sharded").eq(1), r.sp_div, 1),
        "the output layer's saved input (16-bit s·b·h, gathered over tp under sequence parallelism)",
        "输出层保存的输入（16 位 s·b·h，序列并行时沿 tp 聚合）",
        source="torchtitan torchtitan/models/llama3/infra/parallelize.py (output: ColwiseParallel(input_layouts=Shard(1)) "
        "all-gathers the sequence before the matmul, which saves the gathered input); Megatron-LM "
        "megatron/core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication (saves the "
        "sequence-parallel shard and gathers it again in backward)",
    )
    act_head_extra = d(
        "act_outside_last",
        r.norms * r.sbh / r.sp_div + head_in,
        "the final norm's saved tensors and the output layer's input (stage with the head)",
        "末层 norm 保存的张量与输出层输入（持有输出头的段）",
        source=KORTH + " (a norm keeps its input and output); " + doc("activations"),
    )
    act_embed_extra = d(
        "act_outside_first",
        2 * r.sbh / r.sp_div,
        "the embedding's output, alive through the forward (stage with the embedding)",
        "嵌入层输出，在前向中一直存在（持有嵌入的段）",
        source="bench/measure_torch.md (the first layer carries 2·s·b·h more: the model keeps its inputs_embeds); "
        "Megatron-LM megatron/core/models/gpt/gpt_model.py (decoder_input kept for the first layer)",
    )
    r.act = {}
    for stage in STAGES:
        dl, ml, al = r.layers_of[stage]
        glob = r.global_of[stage]  # its attention layers over the whole sequence; the rest slide
        scores = if_(IsBlank(r.window), al * s2, glob * s2 + (al - glob) * s2_local)
        per_mb = d(
            f"{stage}_stage_activation_per_micro_batch",
            _by_mode(
                mode,
                (dl + ml) * r.per_full,
                dl * r.op_dense + ml * r.op_moe,
                dl * r.per_dense
                + ml * r.per_moe
                + (dl + ml - al) * r.lin_delta
                + if_(r.keep_s2, scores, 0),
            )
            + if_(r.holds_head[stage], r.mtp_act + act_head_extra, 0)
            + if_(r.holds_embed[stage], act_embed_extra, 0),
            f"{stage}-stage activations of one micro-batch",
            f"{STAGE_ZH[stage]}一个 micro-batch 的激活",
            source=KORTH + "; " + doc("activations"),
        )
        sends = all_of(r.pp.gt(1), negate(r.holds_head[stage]))
        pp_buf = d(
            f"{stage}_stage_pipeline_buffers",
            if_(
                sends,
                if_(conv(r, "pp_keeps_outputs").eq(1), r.in_flight[stage], 0) * 2 * r.sbh / r.sp_div
                + 2 * r.sbh / r.sp_div,
                0,
            ),
            f"{stage} stage: outputs kept per micro-batch in flight and the gradient receive buffer",
            f"{STAGE_ZH[stage]}：每个在途 micro-batch 保留的输出与梯度接收缓冲",
            source="PyTorch torch/distributed/pipelining/stage.py @ 88fa1e71 (forward_one_chunk keeps each chunk's output in "
            "fwd_cache until its backward; the gradient arrives in a receive buffer of the output's shape); "
            "DeepSpeed deepspeed/runtime/pipe/engine.py (pipe_buffers['outputs'] per buffer); Megatron-LM "
            "megatron/core/pipeline_parallel/schedules.py deallocate_output_tensor frees the output's data once sent",
        )
        r.act[stage] = d(
            f"{stage}_stage_activation_bytes",
            pp_buf + r.in_flight[stage] * per_mb,
            f"{stage}-stage activations",
            f"{STAGE_ZH[stage]}激活",
            source=KORTH + "; micro-batches in flight by the schedule",
        )


LOSS_PARALLEL_SRC = (
    "PyTorch torch/distributed/tensor/parallel/loss.py @ 02eef6b8: _log_softmax keeps x in fp32, "
    "x − max and exp() of it (12 bytes a logit at its peak, 8 when the logits are already fp32) and "
    "saves the result (4); _nll_loss_and_log_softmax_backward holds that result, zeros_like(x), "
    "exp(x) and their sum: 16 bytes a logit"
)
CHUNKED_SRC = (
    "torchtune torchtune/modules/transformer.py @ 3e5b0408 (TransformerDecoder.chunked_output: every chunk of "
    "the logits is built before the loss) and torchtune/modules/loss/ce_chunked_output_loss.py @ 10ff7cd2 "
    "(cross_entropy(chunk.float()) per chunk: each chunk's fp32 log-softmax is saved, one chunk's fp32 "
    "copy at a time; measured on a CPU, bench/measure_torch.md: 6.5 bytes a logit at the loss with 8 chunks)"
)
MEGATRON_CE_SRC = (
    "Megatron-LM megatron/core/tensor_parallel/cross_entropy.py @ 00611e6e (VocabParallelCrossEntropy, "
    "'used in both fused and unfused cross entropy implementations': one "
    "fp32 copy of the logits, max subtracted, exp and division in place and saved; its backward works "
    "in place and autograd casts the gradient to the 16-bit logits: 4 bytes a logit forward, 6 backward)"
)
FLCE_SRC = (
    "Liger-Kernel src/liger_kernel/ops/fused_linear_cross_entropy.py @ 00eba634 (fused_linear_cross_entropy_forward: "
    "the logits of one chunk, next_power_of_2(s·b/⌈vocab/h⌉) × vocab ≤ 2·s·b·h elements in the input's dtype, "
    "grad_input = zeros_like(input) and grad_weight = zeros_like(weight), computed in forward and kept for backward)"
)


def _by_impl(impl, **figures):
    """A cross-entropy figure by implementation, ``figures`` keyed by its name (0 for the others:
    fused_linear_ce's buffers are counted apart)."""
    return switch(impl, {**figures, "fused_linear_ce": 0})


def _loss(reg: Registry, r: Ctx) -> None:
    """The logits, and what the cross-entropy keeps in its forward and its backward, by implementation."""
    d = definer(reg, BYTES)
    sb, tp, impl = r.tokens_mb, r.tp, r.loss_impl
    logit_elems = d(
        "logit_elements",
        if_(
            impl.eq("fused_linear_ce"),
            0,
            sb * r.V / tp / if_(impl.eq("chunked_output"), 1, r.loss_chunks),
        ),
        "logit elements alive at once: s·b·vocab/tp ÷ loss_chunks (all of them for chunked_output; none built whole by fused_linear_ce)",
        "同时存在的 logits 元素数：s·b·vocab/tp ÷ 分块（chunked_output 全部；fused_linear_ce 不建出）",
        unit=COUNT,
        source=doc("logits-and-loss") + "; " + CHUNKED_SRC,
    )
    r.logits = d(
        "logits_full_bytes",
        logit_elems * Lookup("dtype", r.logits_dtype, "bytes"),
        "logits s·b·(vocab/tp)·bytes ÷ loss_chunks (not for chunked_output)",
        "logits s·b·(vocab/tp)·字节 ÷ 分块（chunked_output 除外）",
        source=doc("logits-and-loss") + "; " + MOE35,
    )
    fp32_logits = r.logits_dtype.eq("fp32")
    k = r.loss_chunks

    # eager: without the fp32 upcast the loss works in the logits' own 16-bit dtype: its log-softmax
    # in forward, and three tensors of that width in backward
    def eager(way, fp32_less, bf16):
        bytes_ = if_(
            r.loss_compiled, conv(r, f"ce_{way}_bytes_compiled"), conv(r, f"ce_{way}_bytes")
        )
        return if_(r.loss_fp32, bytes_ - if_(fp32_logits, fp32_less, 0), bf16)

    fwd = d(
        "loss_forward_bytes_per_logit",
        _by_impl(
            impl,
            eager_fp32=eager("fwd", 4, 2),
            loss_parallel=if_(fp32_logits, 8, 12),
            megatron_fused=if_(fp32_logits, 0, 4),
            chunked_output=4 + if_(fp32_logits, 0, 4) / k,
        ),
        "cross-entropy forward bytes per logit beside the logits",
        "交叉熵前向每个 logit 的额外字节",
        source="conventions table for eager_fp32 (PyTorch aten log_softmax + nll_loss: fp32 copy "
        f"and log-softmax, 8); {LOSS_PARALLEL_SRC}; {MEGATRON_CE_SRC}; {CHUNKED_SRC}",
    )
    bwd = d(
        "loss_backward_bytes_per_logit",
        _by_impl(
            impl,
            eager_fp32=eager("bwd", 2, 6),
            loss_parallel=16,
            megatron_fused=if_(fp32_logits, 4, 6),
            chunked_output=4 + 8 / k,
        ),
        "cross-entropy backward bytes per logit",
        "交叉熵反向每个 logit 的字节",
        source="conventions table for eager_fp32 (log-softmax output, nll_loss_backward's and "
        f"_log_softmax_backward_data's gradients: 12); {LOSS_PARALLEL_SRC}; {MEGATRON_CE_SRC}; "
        f"{CHUNKED_SRC}: every chunk's log-softmax and one chunk's two gradients",
    )
    flce = d(
        "fused_linear_ce_bytes",
        if_(
            impl.eq("fused_linear_ce"),
            2 * 2 * r.sbh + 2 * r.sbh + r.V * r.h / tp * r.wbytes,
            0,
        ),
        "fused linear cross-entropy: one chunk's logits, the input's and the head's gradients",
        "融合线性交叉熵：一块 logits、输入梯度与输出头梯度",
        source=FLCE_SRC,
    )
    r.ce_fwd = d(
        "loss_forward_bytes",
        logit_elems * maximum(fwd, 0) + flce,
        "cross-entropy working set at the loss forward",
        "交叉熵前向工作区",
        source="bytes per logit × logit elements (+ the fused kernel's buffers); "
        f"{doc('logits-and-loss')}",
    )
    r.ce_bwd = d(
        "loss_backward_bytes",
        logit_elems * maximum(bwd, 0) + flce - if_(impl.eq("fused_linear_ce"), 2 * 2 * r.sbh, 0),
        "cross-entropy working set at the loss backward",
        "交叉熵反向工作区",
        source="bytes per logit × logit elements (fused: the gradients it kept); "
        f"{doc('logits-and-loss')}",
    )
    r.logits_kept = d(
        "logits_kept_in_backward",
        if_(conv(r, "logits_kept").eq(1), r.logits, 0),
        "logits still referenced during backward",
        "反向时仍被引用的 logits",
        source="conventions table; " + doc("logits-and-loss"),
    )
    r.mtp_loss_kept = d(
        "mtp_loss_kept_bytes",
        r.mtp * (r.ce_fwd + r.logits_kept),
        "what the MTP heads' losses keep until backward",
        "MTP 头的损失保留至反向的内容",
        source="Megatron-LM megatron/core/transformer/multi_token_prediction.py process_mtp_loss: each MTP head's logits and loss are computed in forward, "
        "before the main head's, and attached to the hidden states (MTPLossAutoScaler) until backward",
    )
    d(
        "loss_working_full_bytes",
        maximum(r.ce_fwd, r.ce_bwd),
        "cross-entropy working set (the larger of forward and backward)",
        "交叉熵工作区（前向与反向取大）",
        source=doc("logits-and-loss"),
    )
