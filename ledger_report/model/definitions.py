"""Every number of the ledger, defined once (CONTRACT section 3).

Read top to bottom: resolved inputs (defaults), parameters from the architecture, the split into
parts and pipeline stages, the state ledger, the items outside it, the peak, and the compute
floor.  Each ``define`` names its key, unit, English and Chinese labels and its source.  The
engine evaluates this registry on a row; the workbook turns each entry into a live formula;
the handout prints the formula text with the numbers filled in.
"""

from __future__ import annotations

from .expr import (
    Col,
    IsBlank,
    Lookup,
    all_of,
    any_of,
    ceil,
    default,
    floor,
    if_,
    maximum,
    minimum,
    nearest,
    negate,
    total_of,
)
from .registry import (
    BOOL,
    BPP,
    BYTES,
    COUNT,
    DAYS,
    FLOPS,
    GB,
    GBPS,
    HOURS,
    MONEY,
    PARAMS,
    RATIO,
    SECONDS,
    TEXT,
    TFLOPS,
    TOKENS,
    TOKENS_PER_S,
    Registry,
)

# Named coefficients -------------------------------------------------------------------------
SECONDS_PER_DAY = 86400
BYTES_PER_GB = 10**9
FLOPS_PER_TFLOP = 10**12
TRAIN_FLOPS_PER_PARAM_TOKEN = 6  # 2 forward + 4 backward (Kaplan et al. 2020; seed 004 6N)
FULL_RECOMPUTE_HW_FACTOR = 8 / 6  # forward recomputed once more (seed 000 section 6)
KORTHIKANTI_REPLICATED_SBH = 10  # Korthikanti et al. 2022, Table 2: the 10·sbh not split by TP
FULL_RECOMPUTE_SBH_BYTES = 2  # a layer's 16-bit input, 2·s·b·h bytes (Korthikanti Table 2)
ATTN_SCORE_BYTES_PER_ELEM = 5  # softmax out 2 + dropout mask 1 + dropout out 2 (Korthikanti)
LOSS_WORKING_BYTES = 4  # fp32 softmax / gradient of the logits in cross-entropy
CUDA_CONTEXT_BYTES = 500_000_000  # 300-500 MB per process (Fujii et al. 2024, arXiv 2411.06465)
NCCL_BYTES_PER_GROUP = 500_000_000  # ~0.5 GB per NCCL communicator (Fujii et al. 2024)
ALLOCATOR_FRACTION = 0.05  # fragmentation, as Megatron-LM's 1.05 overhead factor
DEEPSPEED_BUCKET_ELEMS = 500_000_000  # reduce_bucket_size = allgather_bucket_size = 5e8 (DeepSpeed ZeRO config defaults)
TORCH_DDP_BUCKET_BYTES = 25 * 2**20  # DDP bucket_cap_mb = 25 (PyTorch DistributedDataParallel)

STATES = (
    # key, location column, English, Chinese
    ("weights", "weights_at", "compute weights", "计算权重"),
    ("grads", "grads_at", "model gradients", "模型梯度"),
    ("main_grads", "grads_at", "main gradients", "主梯度"),
    ("master", "master_at", "master weights", "主权重"),
    ("m", "optimizer_at", "optimizer first moment m", "一阶矩 m"),
    ("v", "optimizer_at", "optimizer second moment v", "二阶矩 v"),
)
PARTS = (("dense", "dense", "非专家"), ("expert", "expert", "专家"))
# the resolved input that names each state's dtype
STATE_DTYPE = {"weights": "weight_dtype", "grads": "grad_dtype", "main_grads": "main_grad_dtype", "master": "master_dtype", "m": "m_dtype", "v": "v_dtype"}

SEED000 = "seed 000 (35B MoE memory ledger)"
SEED002 = "seed 002 (model-state theory)"
SEED004 = "seed 004 (Qwen3-8B capacity and time)"
KORTH = "Korthikanti et al. 2022, Table 2"
MEGATRON_PARAMS = "Megatron-LM theoretical_memory_usage (no biases, unpadded vocab)"


def build() -> Registry:
    reg = Registry()
    d = reg.define

    # ---- resolved inputs: the row with its defaults --------------------------------------
    framework = d("framework", default("framework", "generic"), TEXT, "framework", "记账口径", "CONTRACT §2")
    weight_dtype = d("weight_dtype", default("weight_dtype", "bf16"), TEXT, "weight dtype", "权重精度", "CONTRACT §2")
    grad_dtype = d("grad_dtype", default("grad_dtype", "bf16"), TEXT, "gradient dtype", "梯度精度", "CONTRACT §2")
    main_grad_dtype = d(
        "main_grad_dtype",
        default("main_grad_dtype", if_(framework.eq("deepspeed"), "fp32", "none")),
        TEXT, "main-gradient dtype", "主梯度精度",
        "CONTRACT §2; fp32 under deepspeed, whose ZeRO keeps fp32 gradient partitions (2 + 18/N)",
    )
    master_dtype = d(
        "master_dtype",
        default("master_dtype", if_(weight_dtype.eq("fp32"), "none", "fp32")),
        TEXT, "master dtype", "主权重精度", "CONTRACT §2",
    )
    optimizer = d("optimizer", default("optimizer", "adam"), TEXT, "optimizer", "优化器", "CONTRACT §2")
    m_dtype = d("m_dtype", default("m_dtype", Lookup("optimizer", optimizer, "moment_dtype")), TEXT, "m dtype", "一阶矩精度", "CONTRACT §2")
    v_dtype = d("v_dtype", default("v_dtype", Lookup("optimizer", optimizer, "moment_dtype")), TEXT, "v dtype", "二阶矩精度", "CONTRACT §2")
    dp = d("dp", default("dp", 1), COUNT, "data parallel", "数据并行", "CONTRACT §2")
    tp = d("tp", default("tp", 1), COUNT, "tensor parallel", "张量并行", "CONTRACT §2")
    pp = d("pp", default("pp", 1), COUNT, "pipeline parallel", "流水线并行", "CONTRACT §2")
    cp = d("cp", default("cp", 1), COUNT, "context parallel", "上下文并行", "CONTRACT §2")
    ep = d("ep", default("ep", 1), COUNT, "expert parallel", "专家并行", "CONTRACT §2")
    etp = d("etp", default("etp", tp), COUNT, "expert tensor parallel", "专家张量并行", "CONTRACT §2")
    zero = d("zero", default("zero", 0), COUNT, "ZeRO stage", "ZeRO 阶段", "CONTRACT §2")
    at = {}
    for col, en, zh in (
        ("weights_at", "weights location", "权重位置"),
        ("grads_at", "gradients location", "梯度位置"),
        ("master_at", "master location", "主权重位置"),
        ("optimizer_at", "optimizer location", "优化器状态位置"),
    ):
        at[col] = d(col, default(col, "hbm"), TEXT, en, zh, "CONTRACT §2")
    seq_len = d("seq_len", Col("seq_len"), TOKENS, "sequence length", "序列长度", "CONTRACT §2")
    micro_batch = d("micro_batch", default("micro_batch", 1), COUNT, "micro-batch", "micro-batch", "CONTRACT §2 (empty = 1)")
    global_batch = d("global_batch", Col("global_batch"), COUNT, "global batch", "全局 batch", "CONTRACT §2")
    recompute = d("recompute", default("recompute", "none"), TEXT, "recompute", "重计算", "CONTRACT §2")
    seq_par = d("sequence_parallel", default("sequence_parallel", False), BOOL, "sequence parallel", "序列并行", "CONTRACT §2")
    flash = d("flash_attention", default("flash_attention", True), BOOL, "flash attention", "FlashAttention", "CONTRACT §2")
    logits_dtype = d("logits_dtype", default("logits_dtype", "fp32"), TEXT, "logits dtype", "logits 精度", "CONTRACT §2")
    loss_chunks = d("loss_chunks", default("loss_chunks", 1), COUNT, "loss chunks", "loss 分块数", "CONTRACT §2")
    gpu = d("gpu", default("gpu", "H100-SXM"), TEXT, "GPU", "GPU 型号", "CONTRACT §2")
    hbm_gb = d("hbm_gb", default("hbm_gb", Lookup("gpu", gpu, "hbm_gb")), GB, "HBM per GPU", "每卡显存", "GPU catalogue")
    peak_tflops = d("peak_tflops", default("peak_tflops", Lookup("gpu", gpu, "peak_tflops")), TFLOPS, "dense BF16 peak", "BF16 稠密峰值", "GPU catalogue")
    gpus_per_node = d("gpus_per_node", default("gpus_per_node", Lookup("gpu", gpu, "gpus_per_node")), COUNT, "GPUs per node", "每节点 GPU 数", "GPU catalogue")
    host_gb = d("host_gb", default("host_gb", Lookup("gpu", gpu, "host_gb")), GB, "host memory per node", "每节点主机内存", "GPU catalogue")
    host_link = d("host_link_gb_s", Lookup("gpu", gpu, "host_link_gb_s"), GBPS, "host link per GPU", "主机链路带宽", "GPU catalogue")
    mfu = d("mfu", default("mfu", 0.4), RATIO, "MFU", "MFU", "CONTRACT §2")
    tokens = d("tokens", Col("tokens"), TOKENS, "training tokens", "训练 token 数", "CONTRACT §2")
    days = d("days", Col("days"), DAYS, "deadline", "期限", "CONTRACT §2")
    reserve = d("reserve_days", default("reserve_days", 0), DAYS, "reserve", "预留天数", "CONTRACT §2")
    price = d("price_per_gpu_hour", Col("price_per_gpu_hour"), MONEY, "price per GPU-hour", "每 GPU 小时价格", "CONTRACT §2")
    measured_gb = d("measured_peak_gb", Col("measured_peak_gb"), GB, "measured peak", "实测峰值", "CONTRACT §2")

    # ---- architecture (blank when the row gives parameter counts only) -------------------
    has_arch = d("has_arch", negate(IsBlank(Col("layers"))), BOOL, "architecture given", "给出结构", "CONTRACT §2")
    L = d("layers", Col("layers"), COUNT, "layers", "层数", "CONTRACT §2")
    h = d("hidden", Col("hidden"), COUNT, "hidden", "隐藏维度", "CONTRACT §2")
    a = d("heads", Col("heads"), COUNT, "heads", "头数", "CONTRACT §2")
    g = d("kv_heads", default("kv_heads", a), COUNT, "kv heads", "KV 头数", "CONTRACT §2")
    hd = d("head_dim", default("head_dim", h / a), COUNT, "head dim", "每头维度", "CONTRACT §2")
    f = d("ffn_hidden", Col("ffn_hidden"), COUNT, "ffn hidden", "MLP 宽度", "CONTRACT §2")
    V = d("vocab", Col("vocab"), COUNT, "vocab", "词表", "CONTRACT §2")
    glu = d("glu", default("glu", True), BOOL, "gated MLP", "门控 MLP", "CONTRACT §2")
    tied = d("tied_embeddings", default("tied_embeddings", False), BOOL, "tied embeddings", "共享嵌入", "CONTRACT §2")
    norm = d("norm", default("norm", "rmsnorm"), TEXT, "norm", "归一化", "CONTRACT §2")
    qk_norm = d("qk_norm", default("qk_norm", False), BOOL, "qk norm", "qk 归一化", "CONTRACT §2")
    E = d("experts", default("experts", 0), COUNT, "routed experts", "路由专家数", "CONTRACT §2")
    topk = d("topk", default("topk", 0), COUNT, "top-k", "top-k", "CONTRACT §2")
    f_moe = d("moe_ffn_hidden", default("moe_ffn_hidden", f), COUNT, "expert ffn", "专家 MLP 宽度", "CONTRACT §2")
    f_sh = d("shared_expert_ffn", default("shared_expert_ffn", 0), COUNT, "shared expert ffn", "共享专家宽度", "CONTRACT §2")
    moe_every = d("moe_every", default("moe_every", 1), COUNT, "MoE every", "MoE 间隔", "CONTRACT §2")
    fae = d("full_attention_every", default("full_attention_every", 1), COUNT, "full attention every", "全注意力间隔", "CONTRACT §2")

    norm_w = d("norm_params_per_h", if_(norm.eq("layernorm"), 2, 1), COUNT, "norm vectors per norm", "每个 norm 的向量数", MEGATRON_PARAMS)
    mats = d("mlp_matrices", if_(glu, 3, 2), COUNT, "MLP matrices", "MLP 矩阵数", MEGATRON_PARAMS)
    attn_p = d("attn_params_per_layer", 2 * h * hd * (a + g), PARAMS, "attention parameters per layer", "每层注意力参数", MEGATRON_PARAMS + ": q, o = h·heads·d; k, v = h·kv·d")
    layer_norm_p = d("norm_params_per_layer", 2 * h * norm_w, PARAMS, "norm parameters per layer", "每层 norm 参数", MEGATRON_PARAMS)
    qk_p = d("qk_norm_params_per_layer", if_(qk_norm, 2 * hd * norm_w, 0), PARAMS, "qk-norm parameters per layer", "每层 qk-norm 参数", "CONTRACT §3.1")
    dense_mlp_p = d("dense_mlp_params", mats * h * f, PARAMS, "dense MLP parameters per layer", "每层稠密 MLP 参数", MEGATRON_PARAMS)
    expert_mlp_p = d("expert_mlp_params", mats * h * f_moe, PARAMS, "parameters per expert", "每个专家参数", MEGATRON_PARAMS)
    shared_p = d("shared_expert_params", mats * h * f_sh, PARAMS, "shared-expert parameters per layer", "每层共享专家参数", MEGATRON_PARAMS)
    router_p = d("router_params", h * E, PARAMS, "router parameters per MoE layer", "每个 MoE 层路由参数", MEGATRON_PARAMS)
    dense_layer_p = d("dense_layer_params", attn_p + layer_norm_p + qk_p + dense_mlp_p, PARAMS, "parameters per dense layer", "每个稠密层参数", MEGATRON_PARAMS)
    moe_layer_dense_p = d("moe_layer_dense_params", attn_p + layer_norm_p + qk_p + router_p + shared_p, PARAMS, "non-expert parameters per MoE layer", "每个 MoE 层非专家参数", MEGATRON_PARAMS)
    moe_layer_expert_p = d("moe_layer_expert_params", E * expert_mlp_p, PARAMS, "expert parameters per MoE layer", "每个 MoE 层专家参数", MEGATRON_PARAMS)
    n_moe = d("moe_layers", if_(E.gt(0), ceil(L / moe_every), 0), COUNT, "MoE layers", "MoE 层数", "CONTRACT §3.1: layer i is MoE iff i mod moe_every = 0")
    n_dense = d("dense_layers", L - n_moe, COUNT, "dense layers", "稠密层数", "CONTRACT §3.1")
    embed_p = d("embedding_params", V * h, PARAMS, "input embedding", "输入嵌入", MEGATRON_PARAMS)
    head_p = d("output_head_params", if_(tied, 0, V * h), PARAMS, "output head (untied)", "输出头（不共享时）", MEGATRON_PARAMS)
    final_norm_p = d("final_norm_params", h * norm_w, PARAMS, "final norm", "末层 norm", MEGATRON_PARAMS)
    arch_dense = d("arch_dense_params", n_dense * dense_layer_p + n_moe * moe_layer_dense_p + embed_p + head_p + final_norm_p, PARAMS, "non-expert parameters (architecture)", "非专家参数（由结构）", MEGATRON_PARAMS)
    arch_expert = d("arch_expert_params", n_moe * moe_layer_expert_p, PARAMS, "expert parameters (architecture)", "专家参数（由结构）", MEGATRON_PARAMS)
    arch_total = d("arch_total_params", arch_dense + arch_expert, PARAMS, "parameters (architecture)", "参数总数（由结构）", MEGATRON_PARAMS)
    largest = d(
        "largest_matrix_params",
        maximum(V * h, h * a * hd, h * g * hd, if_(n_dense.gt(0), h * f, 0), if_(E.gt(0), h * f_moe, 0), h * f_sh),
        PARAMS, "largest single weight matrix", "最大单个权重矩阵", "CONTRACT §3.5 (gate and up counted separately)",
    )
    # Adafactor keeps, per matrix, one row and one column statistic; vectors keep a full v.
    factored = d(
        "adafactor_v_elems",
        (n_dense + n_moe) * (2 * h * norm_w + if_(qk_norm, 2 * hd * norm_w, 0)
                             + (h + a * hd) * 2 + (h + g * hd) * 2)
        + n_dense * mats * (h + f)
        + n_moe * (E * mats * (h + f_moe) + (h + E) + if_(f_sh.gt(0), mats * (h + f_sh), 0))
        + (V + h) + if_(tied, 0, V + h) + h * norm_w,
        PARAMS, "Adafactor second-moment elements", "Adafactor 二阶矩元素数", "Shazeer & Stern 2018 (factored second moment)",
    )

    # ---- parameters and the expert split ---------------------------------------------------
    ppr = Col("params_per_rank")
    total = d("params_total", default("params_total", arch_total), PARAMS, "parameters", "参数总数", "CONTRACT §3.1")
    solved = d(
        "params_expert_solved",
        if_(any_of(IsBlank(ppr), ep.le(1)), 0, (pp * ppr - total / tp) / (1 / (ep * etp) - 1 / tp)),
        PARAMS, "expert parameters solved from params_per_rank", "由每卡参数反推的专家参数",
        SEED000 + " section 2: X + E = total, X + E/8 = per rank",
    )
    expert = d(
        "params_expert",
        default("params_expert", if_(all_of(negate(IsBlank(ppr)), ep.gt(1)), solved, if_(has_arch, arch_expert, 0))),
        PARAMS, "expert parameters", "专家参数", "CONTRACT §3.2",
    )
    dense = d("params_dense", total - expert, PARAMS, "non-expert parameters", "非专家参数", "CONTRACT §3.2")
    active = d(
        "params_active",
        default("params_active", dense + if_(E.gt(0), expert * topk / E, 0)),
        PARAMS, "active parameters per token", "每 token 激活参数", "CONTRACT §3.1",
    )

    # ---- pipeline stages -------------------------------------------------------------------
    base_layers = d("stage_layers_base", floor(L / pp), COUNT, "layers per stage (floor)", "每段层数（下取整）", "CONTRACT §3.6")
    first_layers = d("first_stage_layers", base_layers + if_((L - base_layers * pp).gt(0), 1, 0), COUNT, "first-stage layers", "首段层数", "CONTRACT §3.6: remainder layers go to the first stages")
    last_start = d("last_stage_first_layer", L - base_layers, COUNT, "last stage's first layer", "末段起始层", "CONTRACT §3.6")
    moe_first = d("first_stage_moe_layers", if_(E.gt(0), ceil(first_layers / moe_every), 0), COUNT, "first-stage MoE layers", "首段 MoE 层数", "CONTRACT §3.1")
    moe_last = d("last_stage_moe_layers", if_(E.gt(0), ceil(L / moe_every) - ceil(last_start / moe_every), 0), COUNT, "last-stage MoE layers", "末段 MoE 层数", "CONTRACT §3.1")
    dense_l_first = d("first_stage_dense_layers", first_layers - moe_first, COUNT, "first-stage dense layers", "首段稠密层数", "CONTRACT §3.6")
    dense_l_last = d("last_stage_dense_layers", base_layers - moe_last, COUNT, "last-stage dense layers", "末段稠密层数", "CONTRACT §3.6")
    attn_first = d("first_stage_attention_layers", floor(first_layers / fae), COUNT, "first-stage softmax-attention layers", "首段全注意力层数", "CONTRACT §3.1: layer i has attention iff i mod k = k-1")
    attn_last = d("last_stage_attention_layers", floor(L / fae) - floor(last_start / fae), COUNT, "last-stage softmax-attention layers", "末段全注意力层数", "CONTRACT §3.1")
    single = d("single_stage", pp.eq(1), BOOL, "one pipeline stage", "单段流水", "CONTRACT §3.6")
    arch_first_dense = d(
        "arch_first_stage_dense",
        dense_l_first * dense_layer_p + moe_first * moe_layer_dense_p + embed_p + if_(single, head_p + final_norm_p, 0),
        PARAMS, "first-stage non-expert parameters", "首段非专家参数", "CONTRACT §3.6: embedding on the first stage",
    )
    arch_last_dense = d(
        "arch_last_stage_dense",
        dense_l_last * dense_layer_p + moe_last * moe_layer_dense_p + embed_p + final_norm_p,
        PARAMS, "last-stage non-expert parameters", "末段非专家参数", "CONTRACT §3.6: output head (a real copy even when tied) and final norm on the last stage",
    )
    part_stage = {}
    for stage, arch_d, n_moe_s in (("first", arch_first_dense, moe_first), ("last", arch_last_dense, moe_last)):
        part_stage[(stage, "dense")] = d(
            f"{stage}_stage_dense_params",
            if_(has_arch, dense * (arch_d / arch_dense), dense / pp),
            PARAMS, f"{stage}-stage non-expert parameters", "首段非专家参数" if stage == "first" else "末段非专家参数",
            "CONTRACT §3.6 (scaled to params_total; without architecture, total / pp)",
        )
        part_stage[(stage, "expert")] = d(
            f"{stage}_stage_expert_params",
            if_(has_arch, if_(arch_expert.gt(0), expert * (n_moe_s * moe_layer_expert_p / arch_expert), expert / pp), expert / pp),
            PARAMS, f"{stage}-stage expert parameters", "首段专家参数" if stage == "first" else "末段专家参数",
            "CONTRACT §3.6",
        )
    rank_part = {}
    for stage in ("first", "last"):
        rank_part[(stage, "dense")] = d(f"{stage}_rank_dense_params", part_stage[(stage, "dense")] / tp, PARAMS, f"{stage}-stage non-expert parameters per rank", "每卡非专家参数", "CONTRACT §3.2: dense / tp")
        rank_part[(stage, "expert")] = d(f"{stage}_rank_expert_params", part_stage[(stage, "expert")] / (ep * etp), PARAMS, f"{stage}-stage expert parameters per rank", "每卡专家参数", "CONTRACT §3.2: expert / (ep·etp)")

    # ---- state widths, sharding and placement ----------------------------------------------
    ds_z3 = all_of(framework.eq("deepspeed"), zero.eq(3))
    bpp = {
        "weights": d("weights_bytes_per_param", Lookup("dtype", weight_dtype, "bytes"), BPP, "compute weights, bytes per parameter", "计算权重字节/参数", SEED002),
        "grads": d("grads_bytes_per_param", if_(ds_z3, 0, Lookup("dtype", grad_dtype, "bytes")), BPP, "model gradients, bytes per parameter", "模型梯度字节/参数", SEED002 + "; deepspeed ZeRO-3: 16-bit grads do not persist (CONTRACT §3.5)"),
        "main_grads": d("main_grads_bytes_per_param", Lookup("dtype", main_grad_dtype, "bytes"), BPP, "main gradients, bytes per parameter", "主梯度字节/参数", SEED002),
        "master": d("master_bytes_per_param", Lookup("dtype", master_dtype, "bytes"), BPP, "master weights, bytes per parameter", "主权重字节/参数", SEED002),
        "m": d("m_bytes_per_param", Lookup("optimizer", optimizer, "has_m") * Lookup("moment", m_dtype, "bytes"), BPP, "first moment, bytes per parameter", "一阶矩字节/参数", "optimizer table; 8-bit: Dettmers et al. 2022"),
        "v": d(
            "v_bytes_per_param",
            Lookup("optimizer", optimizer, "has_v") * Lookup("moment", v_dtype, "bytes")
            * if_(Lookup("optimizer", optimizer, "factored_v").gt(0), if_(has_arch, factored / arch_total, 1), 1),
            BPP, "second moment, bytes per parameter", "二阶矩字节/参数", "optimizer table; Adafactor factored (Shazeer & Stern 2018)",
        ),
    }
    sharded = {
        "weights": d("weights_sharded", zero.ge(3), BOOL, "weights sharded", "权重分片", "CONTRACT §3.3"),
        "grads": d("grads_sharded", zero.ge(if_(framework.eq("megatron"), 3, 2)), BOOL, "gradients sharded", "梯度分片", "CONTRACT §3.3-3.4 (megatron keeps its grad buffer whole)"),
    }
    opt_sharded = d("optimizer_sharded", zero.ge(1), BOOL, "master, moments and main gradients sharded", "主权重、动量、主梯度分片", "CONTRACT §3.3")
    for s in ("main_grads", "master", "m", "v"):
        sharded[s] = opt_sharded
    group = {
        "dense": d("dense_shard_group", dp * cp, COUNT, "non-expert shard group dp·cp", "非专家分片组 dp·cp", "CONTRACT §3.2; Megatron-LM PR #6048"),
        "expert": d("expert_shard_group", dp * cp * tp / (ep * etp), COUNT, "expert-DP dp·cp·tp/(ep·etp)", "专家数据并行组 dp·cp·tp/(ep·etp)", "CONTRACT §3.2; " + SEED000 + " section 4"),
    }
    location = {}
    for s, col, _en, _zh in STATES:
        location[s] = at[col]
    shard = {}
    for s, _col, en, zh in STATES:
        for p, pen, pzh in PARTS:
            shard[(s, p)] = d(f"{s}_{p}_shard_group", if_(sharded[s], group[p], 1), COUNT, f"{en} ({pen}): shard group", f"{zh}（{pzh}）分片组", "CONTRACT §3.2-3.3")

    # ---- the reported pipeline stage -------------------------------------------------------
    def hbm(s):
        return location[s].eq("hbm")

    eff = {}
    for p, pen, pzh in PARTS:
        acc = total_of([if_(hbm(s), bpp[s] / shard[(s, p)], 0) for s, *_ in STATES])
        eff[p] = d(f"{p}_hbm_bytes_per_param_on_rank", acc, BPP, f"HBM state bytes per {pen} parameter on the rank", f"每个{pzh}参数的显存状态字节", "sum of the state lines")

    # activations per layer (Korthikanti et al. 2022, adapted for GLU and GQA)
    s_loc = d("seq_per_rank", seq_len / cp, TOKENS, "tokens per sequence on the rank s = seq/cp", "每卡序列长度 s = seq/cp", "CONTRACT §3.7")
    b = micro_batch
    sbh = d("sbh", s_loc * b * h, COUNT, "s·b·h", "s·b·h", KORTH)
    sp_div = d("sp_divisor", if_(seq_par, tp, 1), COUNT, "sequence-parallel divisor", "序列并行除数", KORTH)
    mlp_act_w = d("mlp_act_factor", if_(glu, 6, 4), COUNT, "MLP activation bytes per s·b·ffn", "MLP 激活系数", KORTH + " (GLU stores gate, up and their product: 6 instead of 4)")
    repl = d("act_replicated_per_layer", KORTHIKANTI_REPLICATED_SBH * sbh / sp_div, BYTES, "norm inputs, block inputs, dropout masks", "norm 输入、块输入、dropout 掩码", KORTH + ": 10·sbh, ÷tp with sequence parallel")
    attn_lin = d("act_attention_per_layer", s_loc * b * (4 * a * hd + 4 * g * hd) / tp, BYTES, "Q, K, V and projection input", "Q、K、V 与投影输入", KORTH + " (GQA: K and V use kv_heads)")
    mlp_dense_act = d("act_dense_mlp_per_layer", s_loc * b * f * mlp_act_w / tp, BYTES, "dense MLP activations", "稠密 MLP 激活", KORTH)
    mlp_moe_act = d("act_moe_mlp_per_layer", s_loc * b * (topk * f_moe * mlp_act_w / etp + f_sh * mlp_act_w / tp), BYTES, "MoE MLP activations (top-k experts + shared)", "MoE MLP 激活（top-k 专家 + 共享专家）", KORTH + " (each token visits top-k experts)")
    s2 = d("act_scores_per_attention_layer", ATTN_SCORE_BYTES_PER_ELEM * a * s_loc * s_loc * b / tp, BYTES, "attention scores 5·heads·s²·b", "注意力分数 5·heads·s²·b", KORTH + " (only without flash attention and recompute)")
    per_dense = d("act_dense_layer", repl + attn_lin + mlp_dense_act, BYTES, "activations per dense layer", "每个稠密层激活", KORTH)
    per_moe = d("act_moe_layer", repl + attn_lin + mlp_moe_act, BYTES, "activations per MoE layer", "每个 MoE 层激活", KORTH)
    per_full = d("act_full_recompute_layer", FULL_RECOMPUTE_SBH_BYTES * sbh / sp_div, BYTES, "full recompute: the layer input 2·s·b·h", "全重计算：层输入 2·s·b·h", KORTH + "; " + SEED000 + " section 5")
    keep_s2 = d("keeps_scores", all_of(recompute.eq("none"), negate(flash)), BOOL, "attention scores stored", "保存注意力分数", KORTH)
    n_micro = d("micro_batches_per_step", if_(IsBlank(global_batch), pp, global_batch / (micro_batch * dp)), COUNT, "micro-batches per step per data-parallel rank", "每步 micro-batch 数", "global_batch / (micro_batch·dp)")
    in_flight = d("first_stage_in_flight", minimum(pp, n_micro), COUNT, "micro-batches in flight on the first stage", "首段在途 micro-batch", "CONTRACT §3.7 (1F1B)")
    act = {}
    for stage, dl, ml, al, infl in (
        ("first", dense_l_first, moe_first, attn_first, in_flight),
        ("last", dense_l_last, moe_last, attn_last, 1),
    ):
        act[stage] = d(
            f"{stage}_stage_activation_bytes",
            infl * if_(
                recompute.eq("full"),
                (dl + ml) * per_full,
                dl * per_dense + ml * per_moe + if_(keep_s2, al * s2, 0),
            ),
            BYTES, f"{stage}-stage activations", "首段激活" if stage == "first" else "末段激活", KORTH,
        )
    logits = d("logits_full_bytes", s_loc * b * (V / tp) * Lookup("dtype", logits_dtype, "bytes") / loss_chunks, BYTES, "logits s·b·(vocab/tp)·bytes ÷ loss_chunks", "logits s·b·(vocab/tp)·字节 ÷ 分块", "CONTRACT §3.8; " + SEED000 + " section 5")
    loss_ws = d("loss_working_full_bytes", s_loc * b * (V / tp) * LOSS_WORKING_BYTES / loss_chunks, BYTES, "cross-entropy fp32 working set", "交叉熵 fp32 工作区", "CONTRACT §3.8 (fp32 softmax and its gradient)")

    def or0(x):
        return if_(IsBlank(x), 0, x)

    approx = {}
    for stage in ("first", "last"):
        state = rank_part[(stage, "dense")] * eff["dense"] + rank_part[(stage, "expert")] * eff["expert"]
        tail = if_(single, or0(logits) + or0(loss_ws), 0) if stage == "first" else or0(logits) + or0(loss_ws)
        approx[stage] = d(f"{stage}_stage_load_bytes", state + or0(act[stage]) + tail, BYTES, f"{stage}-stage state + activations + logits", "段负载", "CONTRACT §3.6: the most loaded stage is reported")
    pick_first = d("report_first_stage", any_of(single, approx["first"].ge(approx["last"])), BOOL, "reported stage is the first", "报告首段", "CONTRACT §3.6")
    d("reported_stage", if_(single, "only", if_(pick_first, "first", "last")), TEXT, "reported pipeline stage", "报告的流水段", "CONTRACT §3.6")

    # ---- the state ledger --------------------------------------------------------------------
    rank_params = {}
    for p, pen, pzh in PARTS:
        rank_params[p] = d(f"{p}_params_on_rank", if_(pick_first, rank_part[("first", p)], rank_part[("last", p)]), PARAMS, f"{pen} parameters on the rank (before sharding)", f"每卡{pzh}参数（分片前）", "CONTRACT §3.2")
    d("params_per_rank", nearest(rank_params["dense"] + rank_params["expert"]), PARAMS, "parameters per rank", "每卡参数", "CONTRACT §3.2")
    line_bytes = {}
    for s, _col, en, zh in STATES:
        for p, pen, pzh in PARTS:
            lp = d(f"{s}_{p}_params_on_rank", nearest(rank_params[p] / shard[(s, p)]), PARAMS, f"{en} ({pen}): parameters on the rank", f"{zh}（{pzh}）每卡参数", "CONTRACT §3.2")
            line_bytes[(s, p)] = d(f"{s}_{p}_bytes", ceil(lp * bpp[s]), BYTES, f"{en} ({pen})", f"{zh}（{pzh}）", "CONTRACT §3")

    def loc_sum(where):
        return total_of([if_(location[s].eq(where), lb, 0) for (s, p), lb in line_bytes.items()])

    state_hbm = d("state_bytes_per_rank", loc_sum("hbm"), BYTES, "model state in HBM per rank", "每卡显存中的模型状态", "sum of the state lines located in HBM")
    state_host = d("host_state_bytes_per_rank", loc_sum("host"), BYTES, "model state on the host per rank", "每卡主机内存中的模型状态", "sum of the state lines located on the host")
    state_nvme = d("nvme_state_bytes_per_rank", loc_sum("nvme"), BYTES, "model state on NVMe per rank", "每卡 NVMe 上的模型状态", "sum of the state lines located on NVMe")
    bpp_sum = total_of([bpp[s] for s, *_ in STATES])
    bpp_hbm = total_of([if_(hbm(s), bpp[s], 0) for s, *_ in STATES])
    state_bpp = d("state_bytes_per_param", bpp_sum, BPP, "model-state bytes per parameter", "每参数模型状态字节", SEED002)
    d("state_bytes_logical_total", total * state_bpp, BYTES, "whole model state, all ranks", "全模型状态（所有卡合计）", SEED002 + ": 5T × 18 B = 90 TB")
    logical_hbm = d("state_bytes_logical_hbm", total * bpp_hbm, BYTES, "whole model state placed in HBM", "放在显存中的全模型状态", "CONTRACT §3.10 (capacity gate)")
    host_node = d("host_bytes_per_node", state_host * gpus_per_node, BYTES, "offloaded state per node (host memory)", "每节点主机内存中的状态", "host-located lines × GPUs per node")
    d("nvme_bytes_per_node", state_nvme * gpus_per_node, BYTES, "offloaded state per node (NVMe)", "每节点 NVMe 上的状态", "NVMe-located lines × GPUs per node")
    d("host_fits", host_node.le(host_gb * BYTES_PER_GB), BOOL, "host memory holds the offloaded state", "主机内存放得下", "host_bytes_per_node ≤ host_gb")
    d("offload_stream_s", 2 * (state_host + state_nvme) / (host_link * BYTES_PER_GB), SECONDS, "time to stream offloaded state in and out each step", "每步换入换出卸载状态的时间", "2 × offloaded bytes ÷ host link (read and write back; NVMe is slower still)")

    # ---- items outside the state ledger ----------------------------------------------------
    is_last = d("reported_stage_holds_head", any_of(single, negate(pick_first)), BOOL, "reported stage holds the output head", "报告段持有输出头", "CONTRACT §3.6")
    activation = d("activation_bytes_per_rank", if_(pick_first, act["first"], act["last"]), BYTES, "activations", "激活", KORTH + "; recompute mode " + "none/selective/full")
    logits_r = d("logits_bytes_per_rank", if_(is_last, logits, 0), BYTES, "logits", "logits", "CONTRACT §3.8")
    loss_r = d("loss_working_bytes_per_rank", if_(is_last, loss_ws, 0), BYTES, "cross-entropy working set (fp32)", "交叉熵工作区（fp32）", "CONTRACT §3.8")
    recompute_ws = d(
        "recompute_working_bytes_per_rank",
        if_(recompute.eq("full"),
            if_(n_moe.gt(0), if_(n_dense.gt(0), maximum(per_dense, per_moe), per_moe), per_dense)
            + if_(flash, 0, s2), 0),
        BYTES, "full recompute: one layer's activations rebuilt in backward", "全重计算：反向时重建的一层激活", KORTH + " (one layer, no recompute)",
    )
    gather = d(
        "zero3_gather_bytes_per_rank",
        if_(zero.eq(3), largest / tp * (bpp["weights"] + Lookup("dtype", grad_dtype, "bytes")), 0),
        BYTES, "ZeRO-3 gather of the largest layer (16-bit params + grads)", "ZeRO-3 聚合最大层（16 位参数 + 梯度）",
        "DeepSpeed estimate_zero3_model_states_mem_needs: 4 × largest layer",
    )
    n_groups = d(
        "nccl_groups",
        if_((dp * cp).gt(1), 1, 0) + if_(tp.gt(1), 1, 0) + if_(pp.gt(1), 1, 0) + if_(ep.gt(1), 1, 0),
        COUNT, "NCCL communicators", "NCCL 通信组数", "one per parallel dimension larger than 1",
    )
    comm = d(
        "comm_buffer_bytes_per_rank",
        n_groups * NCCL_BYTES_PER_GROUP
        + if_((dp * cp).gt(1),
              if_(framework.eq("deepspeed"), 2 * DEEPSPEED_BUCKET_ELEMS * Lookup("dtype", grad_dtype, "bytes"),
                  if_(framework.eq("megatron"), 0, 2 * TORCH_DDP_BUCKET_BYTES)), 0),
        BYTES, "communication buffers", "通信缓冲区",
        "NCCL ~0.5 GB per communicator (Fujii et al. 2024); DeepSpeed reduce + all-gather buckets 5e8 elements each; "
        "PyTorch DDP 25 MiB buckets ×2; Megatron buckets are views of its grad buffer",
    )
    before_reserve = d("peak_before_reserve_bytes", state_hbm + activation + logits_r + loss_r + recompute_ws + gather + comm, BYTES, "peak before the runtime reserve", "运行时余量前的峰值", "CONTRACT §3.9")
    reserve_b = d("runtime_reserve_bytes_per_rank", CUDA_CONTEXT_BYTES + ALLOCATOR_FRACTION * before_reserve, BYTES, "CUDA context and allocator reserve", "CUDA 上下文与分配器余量", "0.5 GB context (Fujii et al. 2024) + 5 % fragmentation (Megatron-LM's 1.05 factor)")
    lazy = total_of([if_(hbm(s), line_bytes[(s, p)], 0) for s in ("master", "m", "v", "main_grads") for p, *_ in PARTS])
    d("first_step_optimizer_bytes", lazy, BYTES, "optimizer state allocated at the first step (already in the state)", "首步才分配的优化器状态（已计入状态）", SEED000 + " section 8: FusedAdam allocates m, v lazily at step 1")

    peak = d("peak_bytes_per_rank", ceil(before_reserve + reserve_b), BYTES, "peak per rank", "每卡峰值", "CONTRACT §3.9")
    hbm_bytes = d("hbm_bytes", hbm_gb * BYTES_PER_GB, BYTES, "HBM per GPU", "每卡显存", "GPU catalogue; GB = 10^9 bytes")
    d("headroom_bytes", hbm_bytes - peak, BYTES, "headroom", "余量", "HBM − peak")
    d("fits", peak.le(hbm_bytes), BOOL, "fits in HBM", "显存放得下", "peak ≤ HBM")
    meas = d("measured_peak_bytes", measured_gb * BYTES_PER_GB, BYTES, "measured peak", "实测峰值", "measured_peak_gb")
    d("measured_minus_state_bytes", meas - state_hbm, BYTES, "measured peak less the state ledger", "实测峰值减模型状态", SEED000 + " section 4: 85.6 − 38.1 = 47.5 GB")
    d("unexplained_bytes", meas - peak, BYTES, "measured peak less the estimated peak", "实测峰值减估算峰值", "negative: the estimate is above what was measured")

    # ---- the compute floor -----------------------------------------------------------------
    gpus = d("gpus", dp * tp * pp * cp, COUNT, "GPUs of this configuration dp·tp·pp·cp", "本配置 GPU 数 dp·tp·pp·cp", "CONTRACT §3.10")
    emb_sub = d("flops_embedding_params", if_(has_arch, if_(tied, 0, V * h), 0), PARAMS, "input embedding (no matmul FLOPs)", "输入嵌入（无矩阵乘 FLOPs）", "CONTRACT §3.10")
    n_attn = d("attention_layers", if_(has_arch, floor(L / fae), 0), COUNT, "softmax-attention layers", "全注意力层数", "CONTRACT §3.1")
    attn_flops = d(
        "attention_flops_per_token",
        if_(has_arch, TRAIN_FLOPS_PER_PARAM_TOKEN * n_attn * seq_len * a * hd, 0),
        FLOPS, "attention FLOPs per token 6·layers·seq·heads·d", "每 token 注意力 FLOPs", "CONTRACT §3.10 (causal: half of 12·L·s·d)",
    )
    fpt = d(
        "flops_per_token",
        TRAIN_FLOPS_PER_PARAM_TOKEN * (active - emb_sub) + attn_flops,
        FLOPS, "FLOPs per token", "每 token FLOPs", "CONTRACT §3.10; " + SEED004 + " section 4: 52.7 GFLOPs",
    )
    d(
        "hfu",
        mfu * if_(recompute.eq("full"), FULL_RECOMPUTE_HW_FACTOR,
                  if_(recompute.eq("selective"), (fpt + attn_flops / 3) / fpt, 1)),
        RATIO, "hardware FLOPs utilisation", "硬件算力利用率 HFU",
        SEED000 + " section 6: full recompute 8/6; selective recomputes the attention core forward",
    )
    total_flops = d("total_flops", fpt * tokens, FLOPS, "training FLOPs", "训练总 FLOPs", SEED004 + ": 5.27e21")
    tps = d("tokens_per_step", global_batch * seq_len, TOKENS, "tokens per step", "每步 token", SEED004 + ": 384 × 8192")
    steps = d("steps", ceil(tokens / tps), COUNT, "steps", "步数", SEED004 + ": 31,790")
    train_s = d("train_window_s", (days - reserve) * SECONDS_PER_DAY, SECONDS, "training window", "训练窗口", "(days − reserve_days) × 86400")
    d("step_budget_s", train_s / steps, SECONDS, "seconds per step allowed", "每步时间预算", SEED004 + ": 67.9 s")
    d("required_tokens_per_s", tokens / train_s, TOKENS_PER_S, "tokens/s needed", "所需吞吐", SEED004 + ": 46,300 tokens/s")
    eff_flops = d("effective_flops_per_gpu", peak_tflops * FLOPS_PER_TFLOP * mfu, FLOPS, "useful FLOP/s per GPU peak × mfu", "每卡有效 FLOP/s", "peak × mfu")
    d("tokens_per_s_per_gpu", eff_flops / fpt, TOKENS_PER_S, "tokens/s per GPU", "每卡吞吐", SEED004 + ": 7,507 tokens/s")
    d("days_on_config", total_flops / (gpus * eff_flops) / SECONDS_PER_DAY, DAYS, "days on this configuration's GPUs", "本配置所需天数", SEED004 + ": 77 days on 2 GPUs")
    mgc = d("min_gpus_compute", ceil(total_flops / (eff_flops * train_s)), COUNT, "minimum GPUs for the deadline", "满足期限的最少 GPU", "CONTRACT §3.10 (compute gate)")
    mgm = d("min_gpus_memory", ceil(logical_hbm / hbm_bytes), COUNT, "minimum GPUs to hold the state", "装下状态的最少 GPU", "CONTRACT §3.10 (capacity gate); " + SEED004 + ": 2 × 80 GB")
    d("binding_gate", if_(mgm.gt(mgc), "memory", "compute"), TEXT, "binding gate", "先撞的门", "CONTRACT §3.10")
    gh = d("gpu_hours", total_flops / eff_flops / 3600, HOURS, "GPU-hours", "GPU 小时", "CONTRACT §3.10")
    d("cost", gh * price, MONEY, "cost", "成本", "GPU-hours × price")
    return reg


REGISTRY = build()
