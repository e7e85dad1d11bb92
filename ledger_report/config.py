"""The input schema (the columns of docs/columns.md) and the frozen row type.

One table, ``COLUMNS``, drives the reader, the workbook's Inputs sheet (header, help text,
dropdowns), the template command and the README's column table.  A ``Config`` holds what the
user gave, typed, with ``None`` for an empty cell: defaults are not filled in here but by the
model's resolution definitions, so that the workbook resolves them with live formulas too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .model.conventions import convention_names

# Kinds of column.  Each reader turns a cell into the Python type named here.
TEXT = "text"  # str, kept verbatim
COUNT = "count"  # int; accepts 8,190,735,360 / 8.19e9 / 35B / 5T / 350M / 7K
INT = "int"  # int, plain
FLOAT = "float"  # float
BOOL = "bool"  # True/False; accepts true/false/yes/no/1/0
ENUM = "enum"  # one of ``choices`` (canonical lower-case spelling)

DTYPES_WEIGHT = ("fp32", "bf16", "fp16", "fp8")
DTYPES_GRAD = ("fp32", "bf16", "fp16", "fp8")
DTYPES_MAIN_GRAD = ("none", "fp32", "bf16")
DTYPES_MASTER = ("none", "fp32", "bf16")
DTYPES_MOMENT = ("fp32", "bf16", "fp8", "int8")
DTYPES_LOGITS = ("fp32", "bf16")

FRAMEWORKS = convention_names()
OPTIMIZERS = ("adam", "adamw", "sgd", "momentum", "lion", "adafactor", "adam8bit")
LOCATIONS = ("hbm", "host", "nvme")
RECOMPUTE = ("none", "selective", "selective_op", "full")
LOSS_IMPLS = ("eager_fp32", "loss_parallel", "chunked_output", "fused_linear_ce", "megatron_fused")
COUNTERS = ("allocated", "reserved", "device")
NORMS = ("rmsnorm", "layernorm")
COMPUTE_DTYPES = ("bf16", "fp16", "fp8")

# Spellings people type for the canonical names (matched after lower-casing and stripping).
ALIASES = {
    "bfloat16": "bf16",
    "float32": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "float": "fp32",
    "fp8_e4m3": "fp8",
    "float8_e4m3fn": "fp8",
    "e4m3": "fp8",
    "uint8": "int8",
    "8bit": "int8",
    "": "",
    "adam-8bit": "adam8bit",
    "adam_8bit": "adam8bit",
    "paged_adamw_8bit": "adam8bit",
    "adamw8bit": "adam8bit",
    "sgd-momentum": "momentum",
    "cpu": "host",
    "gpu": "hbm",
    "dram": "host",
    "rms": "rmsnorm",
    "ln": "layernorm",
    "fsdp": "generic",
    "megatron-lm": "megatron",
    "megatron-core": "megatron",
    "mcore": "megatron",
    "ds": "deepspeed",
}


MAX_TEXT_CHARS = 32_767  # a spreadsheet cell's limit (Excel; openpyxl and XlsxWriter keep to it)


@dataclass(frozen=True)
class Column:
    name: str
    kind: str
    help_en: str
    help_zh: str
    default: str = ""  # how the default is described to people (the model computes it)
    unit: str = ""
    choices: tuple[str, ...] = ()
    minimum: float | None = None  # inclusive unless ``min_exclusive``
    min_exclusive: bool = False
    maximum: float | None = None
    required: bool = False
    group: str = ""  # section of the template / handout
    # A fraction that may be typed as a percent ("40%"); 1 < x <= 100 typed bare gets "did you
    # mean x%?".
    percent: bool = False
    # Where an ENUM column's names come from instead of ``choices``: "gpus", the accelerator
    # catalogue (``ledger-report gpus``), matched by its loose name rules.
    catalogue: str = ""
    # The longest text a TEXT column takes, in UTF-16 code units as Excel counts them (an emoji
    # is two): a cell's limit, or less where a page shows the text whole.
    max_chars: int = MAX_TEXT_CHARS


# Layers in a model, and in a stage: ten times the deepest model published (DeepSeek-V3 has 61,
# Llama-3.1-405B 126); the stage splits walk the layers.
MAX_LAYERS = 10_000


def _c(*args, **kw) -> Column:
    return Column(*args, **kw)


# How a default described in words reads in Chinese (a default that is a value stays as typed).
DEFAULT_ZH = {
    "1 when shared_expert_ffn > 0, else 0": "shared_expert_ffn > 0 时为 1，否则为 0",
    "catalogue": "目录中的值",
    "compile": "同 compile",
    "even split": "均分",
    "every layer local": "每层都是局部注意力",
    "fp32 (int8 for adam8bit)": "fp32（adam8bit 时为 int8）",
    "fp32 (none when weights are fp32)": "fp32（权重为 fp32 时为 none）",
    "from the architecture": "由结构计算",
    "from the architecture, else 0": "由结构计算，否则为 0",
    "none (all layers global)": "none（所有层为全局注意力）",
    "none (fp32 under deepspeed)": "none（deepspeed 下为 fp32）",
    "none (no MLA)": "none（无 MLA）",
    "none (those layers counted as softmax attention)": "none（这些层按 softmax 注意力计）",
    "none (unpadded)": "none（不填充）",
    "predicted": "预测值",
    "the convention's (5e8)": "框架口径的值（5e8）",
    "the convention's (fp32 generic, deepspeed; bf16 megatron, fsdp2)": "框架口径的值（generic、deepspeed 为 fp32；megatron、fsdp2 为 bf16）",
    "the convention's (true)": "框架口径的值（true）",
    "the convention's (false)": "框架口径的值（false）",
    "dp (one shard group)": "dp（一个分片组）",
    "the convention's (cudnn megatron; fa2 deepspeed; sdpa generic, fsdp2)": "框架口径的值（megatron 为 cudnn；deepspeed 为 fa2；generic、fsdp2 为 sdpa）",
    "the convention's (bf16; fp32 under fsdp2)": "框架口径的值（bf16；fsdp2 下为 fp32）",
    "moe_ffn_hidden when shared_experts is given, else 0": "给出 shared_experts 时为 moe_ffn_hidden，否则为 0",
    "the convention's (on megatron, else off)": "框架口径的值（megatron 开，其余关）",
    "the convention's (off megatron; ZeRO-3 only deepspeed; on generic, fsdp2)": "框架口径的值（megatron 关；deepspeed 仅 ZeRO-3；generic、fsdp2 开）",
    "the convention's (megatron: megatron_fused; fsdp2 with tp > 1: loss_parallel; else eager_fp32)": "框架口径的值（megatron：megatron_fused；fsdp2 且 tp > 1：loss_parallel；否则 eager_fp32）",
}


def default_text(col: Column, lang: str) -> str:
    """A column's default as the reader's language says it."""
    return DEFAULT_ZH.get(col.default, col.default) if lang == "zh" else col.default


COLUMNS: tuple[Column, ...] = (
    _c(
        "name",
        TEXT,
        "Label of the configuration, unique in the file",
        "配置名称，文件内唯一",
        required=True,
        group="label",
        max_chars=256,
    ),
    _c("notes", TEXT, "Free text shown on the handout", "备注，显示在讲义上", group="label"),
    # parameters
    _c(
        "params_total",
        COUNT,
        "Unique trainable parameters (tied weights once, all experts)",
        "唯一可训练参数总数（共享权重只计一次，含全部专家）",
        "from the architecture",
        "params",
        minimum=1,
        group="params",
    ),
    _c(
        "params_expert",
        COUNT,
        "Of those, routed-expert parameters",
        "其中路由专家参数",
        "from the architecture, else 0",
        "params",
        minimum=0,
        group="params",
    ),
    _c(
        "params_per_rank",
        COUNT,
        "Observed parameters per rank; with ep > 1 solves the expert split",
        "实测每卡参数量；ep > 1 时用于反推专家拆分",
        "",
        "params",
        minimum=1,
        group="params",
    ),
    _c(
        "params_active",
        COUNT,
        "Parameters a token passes through (MoE top-k)",
        "每个 token 经过的参数（MoE top-k）",
        "from the architecture",
        "params",
        minimum=1,
        group="params",
    ),
    _c(
        "model",
        TEXT,
        "A model of the catalogue (ledger-report models) or a path to a Hugging Face config.json (relative to this file's folder); it fills the architecture columns the row leaves empty",
        "模型目录中的名称（见 ledger-report models）或 Hugging Face config.json 的路径（相对输入文件所在目录）；填入本行留空的结构列",
        "",
        group="arch",
    ),
    _c(
        "layers",
        INT,
        "Transformer layers",
        "层数",
        "",
        "",
        minimum=1,
        maximum=MAX_LAYERS,
        group="arch",
    ),
    _c("hidden", INT, "Hidden size h", "隐藏维度 h", "", "", minimum=1, group="arch"),
    _c("heads", INT, "Attention (query) heads", "注意力头数", "", "", minimum=1, group="arch"),
    _c(
        "kv_heads",
        INT,
        "Key/value heads (GQA)",
        "KV 头数（GQA）",
        "heads",
        "",
        minimum=1,
        group="arch",
    ),
    _c(
        "head_dim",
        INT,
        "Dimension per head",
        "每头维度",
        "hidden / heads",
        "",
        minimum=1,
        group="arch",
    ),
    _c("ffn_hidden", INT, "MLP intermediate size", "MLP 中间维度", "", "", minimum=1, group="arch"),
    _c(
        "vocab",
        INT,
        "Vocabulary size (unpadded)",
        "词表大小（不含填充）",
        "",
        "",
        minimum=1,
        group="arch",
    ),
    _c(
        "vocab_multiple",
        INT,
        "Pad the vocabulary to a multiple of vocab_multiple × tp (Megatron-LM make-vocab-size-divisible-by)",
        "词表填充到 vocab_multiple × tp 的整数倍（Megatron-LM make-vocab-size-divisible-by）",
        "none (unpadded)",
        "",
        minimum=1,
        group="arch",
    ),
    _c(
        "glu",
        BOOL,
        "Gated MLP (SwiGLU: three matrices)",
        "门控 MLP（SwiGLU：三个矩阵）",
        "true",
        group="arch",
    ),
    _c(
        "tied_embeddings",
        BOOL,
        "Input embedding shared with the output head",
        "输入嵌入与输出头共享",
        "false",
        group="arch",
    ),
    _c(
        "norm",
        ENUM,
        "rmsnorm or layernorm",
        "rmsnorm 或 layernorm",
        "rmsnorm",
        choices=NORMS,
        group="arch",
    ),
    _c("qk_norm", BOOL, "Per-head query/key norm", "每头 query/key 归一化", "false", group="arch"),
    _c(
        "norms_per_layer",
        INT,
        "Norms per layer, h each (Gemma 2/3: 4, before and after attention and MLP)",
        "每层 norm 个数（每个 h 维；Gemma 2/3：4 个）",
        "2",
        "",
        minimum=1,
        group="arch",
    ),
    _c(
        "qkv_bias",
        BOOL,
        "Biases on the query, key and value projections (Qwen2)",
        "query/key/value 投影带偏置（Qwen2）",
        "false",
        group="arch",
    ),
    _c(
        "linear_bias",
        BOOL,
        "Biases on every linear layer: q, k, v, output projection, MLP and expert matrices (gpt-oss)",
        "所有线性层带偏置：q、k、v、输出投影、MLP 与专家矩阵（gpt-oss）",
        "false",
        group="arch",
    ),
    _c(
        "attention_sinks",
        BOOL,
        "One learned sink logit per head and attention layer (gpt-oss)",
        "每个注意力层每头一个可学习的 sink logit（gpt-oss）",
        "false",
        group="arch",
    ),
    _c(
        "gated_attention",
        BOOL,
        "Output gate on softmax attention: the query projection is twice as wide (Qwen3-Next)",
        "softmax 注意力输出门：query 投影宽度加倍（Qwen3-Next）",
        "false",
        group="arch",
    ),
    _c(
        "sliding_window",
        INT,
        "Sliding-window attention: tokens a local layer attends to",
        "滑动窗口注意力：局部层关注的 token 数",
        "none (all layers global)",
        "tokens",
        minimum=1,
        group="arch",
    ),
    _c(
        "sliding_every",
        INT,
        "With sliding_window: one layer in k is global (layer i global iff i mod k = k − 1), the others local (Gemma 3: 6, gpt-oss: 2)",
        "给出 sliding_window 时：每 k 层一层全局（i mod k = k − 1），其余为局部（Gemma 3：6，gpt-oss：2）",
        "every layer local",
        "",
        minimum=1,
        group="arch",
    ),
    _c(
        "q_lora_rank",
        INT,
        "MLA: query compression rank (empty: no query compression)",
        "MLA：query 压缩秩（空：不压缩 query）",
        "none",
        "",
        minimum=1,
        group="mla",
    ),
    _c(
        "kv_lora_rank",
        INT,
        "MLA: key/value compression rank; given, attention is multi-head latent attention",
        "MLA：key/value 压缩秩；给出即为多头潜在注意力",
        "none (no MLA)",
        "",
        minimum=1,
        group="mla",
    ),
    _c(
        "qk_rope_head_dim",
        INT,
        "MLA: rotary part of each query/key head (shared key)",
        "MLA：每个 query/key 头的旋转位置部分（共享 key）",
        "",
        "",
        minimum=1,
        group="mla",
    ),
    _c(
        "qk_nope_head_dim",
        INT,
        "MLA: non-rotary part of each query/key head",
        "MLA：每个 query/key 头的非旋转部分",
        "",
        "",
        minimum=1,
        group="mla",
    ),
    _c(
        "v_head_dim",
        INT,
        "MLA: value head dimension",
        "MLA：value 头维度",
        "",
        "",
        minimum=1,
        group="mla",
    ),
    _c(
        "experts",
        INT,
        "MoE: routed experts per MoE layer",
        "MoE：每个 MoE 层的路由专家数",
        "none",
        "",
        minimum=1,
        group="moe",
    ),
    _c(
        "topk",
        INT,
        "MoE: experts per token",
        "MoE：每 token 激活专家数",
        "none",
        "",
        minimum=1,
        group="moe",
    ),
    _c(
        "moe_ffn_hidden",
        INT,
        "MoE: expert MLP width",
        "MoE：专家 MLP 宽度",
        "ffn_hidden",
        "",
        minimum=1,
        group="moe",
    ),
    _c(
        "shared_expert_ffn",
        INT,
        "MoE: shared-expert MLP width",
        "MoE：共享专家 MLP 宽度",
        "moe_ffn_hidden when shared_experts is given, else 0",
        "",
        minimum=0,
        group="moe",
    ),
    _c(
        "shared_experts",
        INT,
        "MoE: shared experts per MoE layer, each shared_expert_ffn wide",
        "MoE：每个 MoE 层的共享专家数，每个宽 shared_expert_ffn",
        "1 when shared_expert_ffn > 0, else 0",
        "",
        minimum=0,
        group="moe",
    ),
    _c(
        "shared_expert_gate",
        BOOL,
        "MoE: a sigmoid gate on the shared experts, one h-vector per layer (Qwen2-MoE, Qwen3-Next)",
        "MoE：共享专家的 sigmoid 门，每层一个 h 维向量（Qwen2-MoE、Qwen3-Next）",
        "false",
        group="moe",
    ),
    _c(
        "router_bias",
        BOOL,
        "MoE: a bias per routed expert in the router (gpt-oss; DeepSeek-V3's e_score_correction_bias)",
        "MoE：路由器中每个专家一个偏置（gpt-oss；DeepSeek-V3 的 e_score_correction_bias）",
        "false",
        group="moe",
    ),
    _c(
        "moe_every",
        INT,
        "MoE: every k-th layer is MoE (layer i is MoE iff i mod k = 0)",
        "MoE：每 k 层一个 MoE 层（i mod k = 0）",
        "1",
        "",
        minimum=1,
        group="moe",
    ),
    _c(
        "first_dense_layers",
        INT,
        "MoE: the first k layers are dense (DeepSeek first_k_dense_replace)",
        "MoE：前 k 层为稠密层（DeepSeek first_k_dense_replace）",
        "0",
        "",
        minimum=0,
        maximum=MAX_LAYERS,
        group="moe",
    ),
    _c(
        "mtp_layers",
        INT,
        "Multi-token prediction modules after the last layer, each one more transformer layer (DeepSeek-V3: 1)",
        "最后一层之后的多 token 预测（MTP）模块数，每个含一层 Transformer（DeepSeek-V3：1）",
        "0",
        "",
        minimum=0,
        maximum=MAX_LAYERS,
        group="arch",
    ),
    _c(
        "full_attention_every",
        INT,
        "Hybrid models: one layer in k has softmax attention",
        "混合结构：每 k 层一层全注意力",
        "1",
        "",
        minimum=1,
        group="arch",
    ),
    _c(
        "linear_key_heads",
        INT,
        "Hybrid: key (and query) heads of the Gated DeltaNet layers, the layers without softmax attention",
        "混合结构：Gated DeltaNet 层（非 softmax 注意力层）的 key/query 头数",
        "none (those layers counted as softmax attention)",
        "",
        minimum=1,
        group="hybrid",
    ),
    _c(
        "linear_value_heads",
        INT,
        "Hybrid: value heads of the Gated DeltaNet layers",
        "混合结构：Gated DeltaNet 层的 value 头数",
        "",
        "",
        minimum=1,
        group="hybrid",
    ),
    _c(
        "linear_key_head_dim",
        INT,
        "Hybrid: key head dimension of the Gated DeltaNet layers",
        "混合结构：Gated DeltaNet 层 key 头维度",
        "",
        "",
        minimum=1,
        group="hybrid",
    ),
    _c(
        "linear_value_head_dim",
        INT,
        "Hybrid: value head dimension of the Gated DeltaNet layers",
        "混合结构：Gated DeltaNet 层 value 头维度",
        "",
        "",
        minimum=1,
        group="hybrid",
    ),
    _c(
        "linear_conv_kernel",
        INT,
        "Hybrid: depthwise convolution kernel of the Gated DeltaNet layers",
        "混合结构：Gated DeltaNet 层的深度卷积核长度",
        "",
        "",
        minimum=1,
        group="hybrid",
    ),
    # precision and optimizer
    _c(
        "framework",
        ENUM,
        "Framework convention: how it stores states, keeps the loss and recomputes ("
        + ", ".join(FRAMEWORKS)
        + ")",
        "框架口径：状态如何存放、损失与重计算如何实现（" + "、".join(FRAMEWORKS) + "）",
        "generic",
        choices=FRAMEWORKS,
        group="state",
    ),
    _c(
        "weight_dtype",
        ENUM,
        "Compute weights",
        "计算权重精度",
        "bf16",
        choices=DTYPES_WEIGHT,
        group="state",
    ),
    _c(
        "grad_dtype",
        ENUM,
        "Model gradients (megatron: the grad buffer)",
        "模型梯度（megatron：梯度 buffer）",
        "the convention's (bf16; fp32 under fsdp2)",
        choices=DTYPES_GRAD,
        group="state",
    ),
    _c(
        "main_grad_dtype",
        ENUM,
        "Separate main-gradient buffer",
        "独立主梯度 buffer",
        "none (fp32 under deepspeed)",
        choices=DTYPES_MAIN_GRAD,
        group="state",
    ),
    _c(
        "master_dtype",
        ENUM,
        "Master weights",
        "主权重",
        "fp32 (none when weights are fp32)",
        choices=DTYPES_MASTER,
        group="state",
    ),
    _c(
        "optimizer",
        ENUM,
        "adam, adamw, sgd, momentum, lion, adafactor, adam8bit",
        "优化器",
        "adam",
        choices=OPTIMIZERS,
        group="state",
    ),
    _c(
        "m_dtype",
        ENUM,
        "First moment",
        "一阶矩精度",
        "fp32 (int8 for adam8bit)",
        choices=DTYPES_MOMENT,
        group="state",
    ),
    _c(
        "v_dtype",
        ENUM,
        "Second moment",
        "二阶矩精度",
        "fp32 (int8 for adam8bit)",
        choices=DTYPES_MOMENT,
        group="state",
    ),
    # parallelism
    _c("dp", INT, "Data-parallel size", "数据并行度", "1", "", minimum=1, group="parallel"),
    _c("tp", INT, "Tensor-parallel size", "张量并行度", "1", "", minimum=1, group="parallel"),
    _c("pp", INT, "Pipeline-parallel size", "流水线并行度", "1", "", minimum=1, group="parallel"),
    _c("cp", INT, "Context-parallel size", "上下文并行度", "1", "", minimum=1, group="parallel"),
    _c(
        "dp_shard",
        INT,
        "Data-parallel ranks each ZeRO/FSDP shard group spans; the rest replicate it (FSDP2 HSDP dp_shard, Megatron --num-distributed-optimizer-instances = dp/dp_shard)",
        "每个 ZeRO/FSDP 分片组覆盖的数据并行 rank 数，其余为副本（FSDP2 HSDP 的 dp_shard；Megatron --num-distributed-optimizer-instances = dp/dp_shard）",
        "dp (one shard group)",
        "",
        minimum=1,
        group="parallel",
    ),
    _c(
        "ep",
        INT,
        "Expert-parallel size; divides dp·cp·tp/etp",
        "专家并行度；须整除 dp·cp·tp/etp",
        "1",
        "",
        minimum=1,
        group="parallel",
    ),
    _c(
        "etp",
        INT,
        "Expert tensor-parallel size",
        "专家张量并行度",
        "tp",
        "",
        minimum=1,
        group="parallel",
    ),
    _c(
        "zero",
        INT,
        "0-3 (1 = distributed optimizer, 3 = FSDP full shard)",
        "0-3（1 = 分布式优化器，3 = FSDP 全分片）",
        "0",
        "",
        minimum=0,
        maximum=3,
        group="parallel",
    ),
    _c(
        "weights_at",
        ENUM,
        "Where compute weights live",
        "计算权重存放位置",
        "hbm",
        choices=LOCATIONS,
        group="place",
    ),
    _c(
        "grads_at",
        ENUM,
        "Where gradients live",
        "梯度存放位置",
        "hbm",
        choices=LOCATIONS,
        group="place",
    ),
    _c(
        "master_at",
        ENUM,
        "Where master weights live",
        "主权重存放位置",
        "hbm",
        choices=LOCATIONS,
        group="place",
    ),
    _c(
        "optimizer_at",
        ENUM,
        "Where optimizer moments live",
        "优化器状态存放位置",
        "hbm",
        choices=LOCATIONS,
        group="place",
    ),
    # batch and activations
    _c(
        "seq_len",
        INT,
        "Tokens per sequence",
        "序列长度（token）",
        "",
        "tokens",
        minimum=1,
        group="batch",
    ),
    _c(
        "micro_batch",
        INT,
        "Sequences per micro-batch",
        "每个 micro-batch 的序列数",
        "1",
        "sequences",
        minimum=1,
        group="batch",
    ),
    _c(
        "global_batch",
        INT,
        "Sequences per optimizer step",
        "每步全局序列数",
        "",
        "sequences",
        minimum=1,
        group="batch",
    ),
    _c(
        "recompute",
        ENUM,
        "Activation recompute: none, selective (the framework's own), selective_op (save by operator), full",
        "重计算：none、selective（框架自身的）、selective_op（按算子保存）、full",
        "none",
        choices=RECOMPUTE,
        group="batch",
    ),
    _c(
        "dropout",
        BOOL,
        "Dropout in attention and MLP (its masks and outputs are kept for backward)",
        "注意力与 MLP 中的 dropout（其掩码与输出为反向保留）",
        "false",
        group="batch",
    ),
    _c(
        "compile",
        BOOL,
        "torch.compile on (fused elementwise intermediates are not saved)",
        "开启 torch.compile（融合的逐元素中间量不保存）",
        "false",
        group="batch",
    ),
    _c(
        "virtual_stages",
        INT,
        "Interleaved pipeline: model chunks per pipeline rank",
        "交错流水：每个流水 rank 的模型块数",
        "1",
        "",
        minimum=1,
        group="parallel",
    ),
    _c(
        "pp_first_layers",
        INT,
        "Uneven pipeline: layers on the first stage (Megatron-LM --decoder-first-pipeline-num-layers)",
        "不均匀流水：首段层数（Megatron-LM --decoder-first-pipeline-num-layers）",
        "even split",
        "",
        minimum=0,
        maximum=MAX_LAYERS,
        group="parallel",
    ),
    _c(
        "pp_last_layers",
        INT,
        "Uneven pipeline: layers on the last stage (Megatron-LM --decoder-last-pipeline-num-layers)",
        "不均匀流水：末段层数（Megatron-LM --decoder-last-pipeline-num-layers）",
        "even split",
        "",
        minimum=0,
        maximum=MAX_LAYERS,
        group="parallel",
    ),
    _c(
        "sequence_parallel",
        BOOL,
        "Megatron sequence parallelism",
        "序列并行（Megatron SP）",
        "false",
        group="batch",
    ),
    _c(
        "overlap_grad_reduce",
        BOOL,
        "Gradient reduction overlapped with the backward (Megatron --overlap-grad-reduce, DeepSpeed overlap_comm, torch DDP/FSDP2 always)",
        "梯度归约与反向重叠（Megatron --overlap-grad-reduce、DeepSpeed overlap_comm；torch DDP/FSDP2 总是重叠）",
        "the convention's (off megatron; ZeRO-3 only deepspeed; on generic, fsdp2)",
        group="batch",
    ),
    _c(
        "overlap_param_gather",
        BOOL,
        "Parameter all-gathers overlapped with compute (Megatron --overlap-param-gather, ZeRO-3/FSDP prefetch)",
        "参数 all-gather 与计算重叠（Megatron --overlap-param-gather、ZeRO-3/FSDP 预取）",
        "the convention's (off megatron; ZeRO-3 only deepspeed; on generic, fsdp2)",
        group="batch",
    ),
    _c(
        "attention_kernel",
        ENUM,
        "Fused attention kernel: fa2 (FlashAttention-2), fa3 (FlashAttention-3, Hopper), cudnn (cuDNN / Transformer Engine fused attention), sdpa (PyTorch scaled_dot_product_attention)",
        "融合注意力内核：fa2（FlashAttention-2）、fa3（FlashAttention-3，Hopper）、cudnn（cuDNN / Transformer Engine 融合注意力）、sdpa（PyTorch scaled_dot_product_attention）",
        "the convention's (cudnn megatron; fa2 deepspeed; sdpa generic, fsdp2)",
        choices=("fa2", "fa3", "cudnn", "sdpa"),
        group="batch",
    ),
    _c(
        "overlap_p2p_comm",
        BOOL,
        "Pipeline sends and receives overlapped with compute (Megatron --overlap-p2p-communication; interleaved schedule only)",
        "流水线收发与计算重叠（Megatron --overlap-p2p-communication；仅交错调度）",
        "the convention's (on megatron, else off)",
        group="batch",
    ),
    _c(
        "moe_a2a_overlap",
        BOOL,
        "Expert all-to-alls overlapped with another micro-batch's compute (Megatron --overlap-moe-expert-parallel-comm)",
        "专家 all-to-all 与另一 micro-batch 的计算重叠（Megatron --overlap-moe-expert-parallel-comm）",
        "false",
        group="batch",
    ),
    _c(
        "ep_dispatch",
        ENUM,
        "Expert dispatch: all_to_all (one copy per routed expert) or node_dedup (one copy per destination node, DeepEP / HybridEP)",
        "专家分发：all_to_all（每个路由专家一份）或 node_dedup（每个目标节点一份，DeepEP / HybridEP）",
        "all_to_all",
        choices=("all_to_all", "node_dedup"),
        group="batch",
    ),
    _c(
        "moe_imbalance",
        FLOAT,
        "Busiest expert-parallel rank's routed tokens over the mean (1 = balanced, as forced balancing or capacity factor 1)",
        "最忙的专家并行 rank 的路由 token 数与平均之比（1 = 均衡，如强制均衡或容量因子 1）",
        "1",
        minimum=1,
        group="batch",
    ),
    _c(
        "tp_comm_overlap",
        BOOL,
        "Tensor-parallel communication overlapped with the GEMMs (Megatron --tp-comm-overlap, async TP)",
        "张量并行通信与 GEMM 重叠（Megatron --tp-comm-overlap、async TP）",
        "the convention's (false)",
        group="batch",
    ),
    _c(
        "tp_qk_norm_gather",
        BOOL,
        "q and k all-gathered over tp at the q/k norms (torchtitan's Qwen3 tensor-parallel plan before PR #1870, 2025-10-14)",
        "q、k 在 q/k 归一化处沿 tp all-gather（torchtitan Qwen3 张量并行方案，PR #1870（2025-10-14）之前）",
        "false",
        group="batch",
    ),
    _c(
        "flash_attention",
        BOOL,
        "Flash attention (no s² scores stored)",
        "FlashAttention（不保存 s² 注意力矩阵）",
        "true",
        group="batch",
    ),
    _c(
        "logits_dtype",
        ENUM,
        "Logits tensor precision",
        "logits 精度",
        "the convention's (fp32 generic, deepspeed; bf16 megatron, fsdp2)",
        choices=DTYPES_LOGITS,
        group="batch",
    ),
    _c(
        "loss_fp32",
        BOOL,
        "The cross-entropy upcasts 16-bit logits to fp32 (as PyTorch's usual logits.float() does)",
        "交叉熵把 16 位 logits 升为 fp32（常见的 logits.float()）",
        "the convention's (true)",
        group="batch",
    ),
    _c(
        "loss_chunks",
        INT,
        "1 = full logits at once; k = chunked/fused cross-entropy",
        "1 = 整块 logits；k = 分块/融合交叉熵",
        "1",
        "",
        minimum=1,
        group="batch",
    ),
    _c(
        "loss_impl",
        ENUM,
        "The cross-entropy's implementation: eager_fp32 (cross_entropy(logits.float())), loss_parallel (PyTorch's vocab-sharded DTensor loss), chunked_output (torchtune: every chunk of the logits built before the chunked loss), fused_linear_ce (Liger, cut cross-entropy: the logits never built whole), megatron_fused (Megatron-LM's vocab-parallel loss in place on one fp32 copy)",
        "交叉熵的实现：eager_fp32（cross_entropy(logits.float())）、loss_parallel（PyTorch 按词表切分的 DTensor 损失）、chunked_output（torchtune：先建出所有 logits 分块再算分块损失）、fused_linear_ce（Liger、cut cross-entropy：不建出完整 logits）、megatron_fused（Megatron-LM 词表并行损失，在一份 fp32 副本上原地计算）",
        "the convention's (megatron: megatron_fused; fsdp2 with tp > 1: loss_parallel; else eager_fp32)",
        choices=LOSS_IMPLS,
        group="batch",
    ),
    _c(
        "loss_compiled",
        BOOL,
        "The loss is compiled with the model (torchtitan compiles it since April 2025: compile.components model and loss)",
        "损失随模型一起编译（torchtitan 自 2025 年 4 月起：compile.components 含 model 与 loss）",
        "compile",
        group="batch",
    ),
    _c(
        "gathered_weights_kept",
        BOOL,
        "ZeRO-3: autograd keeps each Linear's gathered weight until its backward (DeepSpeed before 0.19.4 with a model built outside zero.Init)",
        "ZeRO-3：autograd 保留每个 Linear 聚合后的权重直到其反向（DeepSpeed 0.19.4 之前、模型不在 zero.Init 中构建时）",
        "false",
        group="batch",
    ),
    _c(
        "expandable_segments",
        BOOL,
        "PyTorch's allocator grows one segment per stream (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): a freed block at the segment's end is extended rather than left beside a new segment",
        "PyTorch 分配器每个 stream 一个可扩展段（PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True）：段末空闲块被延伸，而不是另开新段",
        "false",
        group="batch",
    ),
    _c(
        "reduce_bucket_elems",
        INT,
        "DeepSpeed's gradient reduce bucket in elements (reduce_bucket_size)",
        "DeepSpeed 梯度规约桶的元素数（reduce_bucket_size）",
        "the convention's (5e8)",
        "elements",
        minimum=1,
        group="batch",
    ),
    # hardware
    _c(
        "gpu",
        ENUM,
        "Accelerator from the catalogue (ledger-report gpus)",
        "加速卡型号（见 ledger-report gpus）",
        "H100-SXM",
        group="hw",
        catalogue="gpus",
    ),
    _c(
        "hbm_gb",
        FLOAT,
        "HBM per GPU, GB = 10^9 bytes",
        "每卡显存，GB = 10^9 字节",
        "catalogue",
        "GB",
        minimum=0,
        min_exclusive=True,
        group="hw",
    ),
    _c(
        "peak_tflops",
        FLOAT,
        "Dense BF16 peak, TFLOP/s",
        "BF16 稠密峰值 TFLOP/s",
        "catalogue",
        "TFLOP/s",
        minimum=0,
        min_exclusive=True,
        group="hw",
    ),
    _c(
        "gpus_per_node",
        INT,
        "GPUs per node",
        "每节点 GPU 数",
        "catalogue",
        "",
        minimum=1,
        group="hw",
    ),
    _c(
        "whole_nodes",
        BOOL,
        "The gates count whole nodes only (GPU counts a multiple of gpus_per_node)",
        "门只按整节点计（GPU 数为每节点 GPU 数的倍数）",
        "false",
        group="hw",
    ),
    _c(
        "host_gb",
        FLOAT,
        "Host memory per node, GB",
        "每节点主机内存 GB",
        "catalogue",
        "GB",
        minimum=0,
        min_exclusive=True,
        group="hw",
    ),
    # job
    _c(
        "mfu",
        FLOAT,
        "Measured model FLOPs utilisation, 0 < mfu <= 1: decides days and cost (empty: the step-time model's prediction decides)",
        "实测模型算力利用率 MFU，0 < mfu ≤ 1：决定天数与成本（留空：由步时模型的预测决定）",
        "predicted",
        "",
        minimum=0,
        min_exclusive=True,
        maximum=1,
        group="job",
        percent=True,
    ),
    _c("tokens", COUNT, "Training tokens", "训练 token 数", "", "tokens", minimum=1, group="job"),
    _c(
        "days",
        FLOAT,
        "Calendar deadline",
        "日历期限（天）",
        "",
        "days",
        minimum=0,
        min_exclusive=True,
        group="job",
    ),
    _c(
        "reserve_days",
        FLOAT,
        "Days of the deadline kept for checkpoints and failures",
        "期限中预留给 checkpoint 与故障的天数",
        "0",
        "days",
        minimum=0,
        group="job",
    ),
    _c(
        "price_per_gpu_hour",
        FLOAT,
        "Price per GPU-hour, any currency",
        "每 GPU 小时价格（任意货币）",
        "",
        "",
        minimum=0,
        group="job",
    ),
    _c(
        "currency",
        TEXT,
        "Currency of price_per_gpu_hour, shown beside every cost (e.g. USD, CNY)",
        "price_per_gpu_hour 的货币，显示在每个成本旁（如 USD、CNY）",
        "",
        group="job",
        max_chars=16,  # ISO 4217 codes are 3 letters; room for "CNY (元)" or "USD/h"
    ),
    _c(
        "measured_peak_gb",
        FLOAT,
        "Measured per-rank peak, GB, reconciled against the estimate on the same counter",
        "实测每卡峰值 GB，与同口径估算对账",
        "",
        "GB",
        minimum=0,
        min_exclusive=True,
        group="job",
    ),
    _c(
        "measured_counter",
        ENUM,
        "What measured_peak_gb counts: allocated (max_memory_allocated), reserved (max_memory_reserved), device (nvidia-smi)",
        "实测峰值的口径：allocated、reserved、device（nvidia-smi）",
        "device",
        choices=COUNTERS,
        group="job",
    ),
    # step time: precision of the matmuls and the topology (catalogue overrides)
    _c(
        "compute_dtype",
        ENUM,
        "Precision of the matmuls: bf16, fp16 (both at the BF16 peak) or fp8 (the GEMMs at the FP8 peak; attention and the output layer stay bf16)",
        "矩阵乘精度：bf16、fp16（均按 BF16 峰值）或 fp8（GEMM 按 FP8 峰值；注意力与输出层仍为 bf16）",
        "bf16",
        choices=COMPUTE_DTYPES,
        group="time",
    ),
    _c(
        "efficiency_scale",
        FLOAT,
        "Scales the achievable matmul efficiency of the catalogue (the planner sets it from a measured mfu)",
        "缩放目录中的可达矩阵乘效率（规划器由实测 mfu 设定）",
        "1",
        "",
        minimum=0,
        min_exclusive=True,
        group="time",
    ),
    _c(
        "fp8_tflops",
        FLOAT,
        "Dense FP8 peak, TFLOP/s",
        "FP8 稠密峰值 TFLOP/s",
        "catalogue",
        "TFLOP/s",
        minimum=0,
        min_exclusive=True,
        group="time",
    ),
    _c(
        "hbm_gb_s",
        FLOAT,
        "Device-memory bandwidth per GPU, GB/s",
        "每卡显存带宽 GB/s",
        "catalogue",
        "GB/s",
        minimum=0,
        min_exclusive=True,
        group="time",
    ),
    _c(
        "nvlink_gb_s",
        FLOAT,
        "Intra-node (NVLink) bandwidth per GPU, GB/s, both directions as vendors quote it",
        "节点内（NVLink）每卡带宽 GB/s，按厂商口径为双向合计",
        "catalogue",
        "GB/s",
        minimum=0,
        min_exclusive=True,
        group="time",
    ),
    _c(
        "network_gb_s",
        FLOAT,
        "Scale-out network bandwidth per GPU, GB/s per direction (400 Gb/s = 50)",
        "跨节点网络每卡带宽 GB/s，单向（400 Gb/s = 50）",
        "catalogue",
        "GB/s",
        minimum=0,
        min_exclusive=True,
        group="time",
    ),
    _c(
        "host_link_gb_s",
        FLOAT,
        "CPU-GPU link per GPU, GB/s per direction (PCIe Gen5 x16 = 64)",
        "CPU-GPU 链路每卡带宽 GB/s，单向（PCIe Gen5 x16 = 64）",
        "catalogue",
        "GB/s",
        minimum=0,
        min_exclusive=True,
        group="time",
    ),
    _c(
        "nvme_gb_s",
        FLOAT,
        "NVMe bandwidth per node, GB/s, reading and writing the same bytes",
        "每节点 NVMe 带宽 GB/s（读写相同字节）",
        "catalogue",
        "GB/s",
        minimum=0,
        min_exclusive=True,
        group="time",
    ),
    _c(
        "host_mem_gb_s",
        FLOAT,
        "Host memory bandwidth per node, GB/s (sets the CPU optimizer's speed)",
        "每节点主机内存带宽 GB/s（决定 CPU 优化器速度）",
        "catalogue",
        "GB/s",
        minimum=0,
        min_exclusive=True,
        group="time",
    ),
)

COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
# The columns the reader treats apart: the label every row needs, unique in a file, and the
# model whose architecture fills the columns a row leaves empty.
NAME_COLUMN = "name"
MODEL_COLUMN = "model"
COLUMN_BY_NAME: Mapping[str, Column] = {c.name: c for c in COLUMNS}
_COLUMN_SET = frozenset(COLUMN_NAMES)
_NO_VALUES = dict.fromkeys(
    COLUMN_NAMES
)  # every column empty, in schema order (copied for each Config)

# ---------------------------------------------------------------------------------------------
# The names the ecosystem writes for the columns.  A header cell that is no column's name is
# looked up here (case-insensitive, "-" read as "_", a leading "--" dropped, and where a name
# has a section, also written "section.name" as in a TOML table or a JSON object).  Each entry:
# (name, column, where the name is defined).  Only names that mean exactly the column are here;
# names near a column that mean something else are in ``NOT_COLUMNS`` with the reason.

_MEGATRON = "NVIDIA/Megatron-LM@d98e8a6"
_MG_PARALLEL = _MEGATRON + " megatron/core/model_parallel_config.py (ModelParallelConfig)"
_MG_MODEL = _MEGATRON + " megatron/core/transformer/transformer_config.py (TransformerConfig)"
_MG_TRAIN = _MEGATRON + " megatron/training/config/training_config.py (TrainingConfig)"
_MG_ARGS = _MEGATRON + " megatron/training/arguments.py"
_DEEPSPEED = "deepspeedai/DeepSpeed@edaa722"
_DS_BATCH = _DEEPSPEED + " deepspeed/runtime/constants.py"
_DS_ZERO = _DEEPSPEED + " deepspeed/runtime/zero/config.py (DeepSpeedZeroConfig)"
_TITAN = "pytorch/torchtitan@238fa99 torchtitan/config/job_config.py"
_HF = "huggingface/transformers configuration_<family>.py, as ledger_report/hf_config.py reads them"
_COMMON = "common shorthand"


@dataclass(frozen=True)
class Alias:
    name: str  # as the framework spells it (Megatron-LM: its --argument without the dashes)
    column: str
    source: str
    section: str = ""  # the table / object the name sits in ("parallelism", "zero_optimization")
    bare: bool = True  # also read without its section (False for words as plain as "mode")
    note: str = ""  # where the name means the column only in part of its uses


def _a(name: str, column: str, source: str, section: str = "", **kw: Any) -> Alias:
    return Alias(name, column, source, section, **kw)


ALIAS_TABLE: tuple[Alias, ...] = (
    # Megatron-LM: --dashed-arguments generated from the config dataclasses' fields
    _a("tensor-model-parallel-size", "tp", _MG_PARALLEL),
    _a("pipeline-model-parallel-size", "pp", _MG_PARALLEL),
    _a("context-parallel-size", "cp", _MG_PARALLEL),
    _a("expert-model-parallel-size", "ep", _MG_PARALLEL),
    _a("expert-tensor-parallel-size", "etp", _MG_PARALLEL),
    _a("num-layers", "layers", _MG_MODEL),
    _a("hidden-size", "hidden", _MG_MODEL),
    _a("ffn-hidden-size", "ffn_hidden", _MG_MODEL),
    _a("num-attention-heads", "heads", _MG_MODEL),
    _a("num-query-groups", "kv_heads", _MG_MODEL),
    _a("kv-channels", "head_dim", _MG_MODEL),
    _a("normalization", "norm", _MG_MODEL),
    _a("qk-layernorm", "qk_norm", _MG_MODEL),
    _a("add-qkv-bias", "qkv_bias", _MG_MODEL),
    _a("moe-router-topk", "topk", _MG_MODEL),
    _a("moe-ffn-hidden-size", "moe_ffn_hidden", _MG_MODEL),
    _a(
        "moe-shared-expert-intermediate-size",
        "shared_expert_ffn",
        _MG_MODEL,
        note="all shared experts together: one shared expert that wide has the same parameters",
    ),
    _a("moe-layer-freq", "moe_every", _MG_MODEL, note="its integer form (one MoE layer in N)"),
    _a("mtp-num-layers", "mtp_layers", _MG_MODEL),
    _a("recompute-granularity", "recompute", _MG_MODEL),
    _a("overlap-moe-expert-parallel-comm", "moe_a2a_overlap", _MG_PARALLEL),
    _a("num-experts", "experts", _MG_ARGS),
    _a("swiglu", "glu", _MG_ARGS),
    _a("make-vocab-size-divisible-by", "vocab_multiple", _MG_ARGS),
    _a("seq-length", "seq_len", _MG_ARGS),
    _a("qk-head-dim", "qk_nope_head_dim", _MG_ARGS),
    _a("qk-pos-emb-head-dim", "qk_rope_head_dim", _MG_ARGS),
    _a("num-virtual-stages-per-pipeline-rank", "virtual_stages", _MG_ARGS),
    _a("decoder-first-pipeline-num-layers", "pp_first_layers", _MG_ARGS),
    _a("decoder-last-pipeline-num-layers", "pp_last_layers", _MG_ARGS),
    _a("micro-batch-size", "micro_batch", _MG_TRAIN),
    _a("global-batch-size", "global_batch", _MG_TRAIN),
    # DeepSpeed: the keys of its JSON config
    _a("train_micro_batch_size_per_gpu", "micro_batch", _DS_BATCH),
    _a("train_batch_size", "global_batch", _DS_BATCH),
    _a("stage", "zero", _DS_ZERO, "zero_optimization", bare=False),
    _a("reduce_bucket_size", "reduce_bucket_elems", _DS_ZERO, "zero_optimization"),
    _a("overlap_comm", "overlap_grad_reduce", _DS_ZERO, "zero_optimization"),
    # torchtitan: the keys of its TOML job config ([training], [parallelism], ...)
    _a(
        "local_batch_size",
        "micro_batch",
        _TITAN,
        "training",
        note="without pipeline parallelism; with it, pipeline_parallel_microbatch_size is",
    ),
    _a("pipeline_parallel_microbatch_size", "micro_batch", _TITAN, "parallelism"),
    _a("seq_len", "seq_len", _TITAN, "training"),
    _a("global_batch_size", "global_batch", _TITAN, "training"),
    _a(
        "data_parallel_shard_degree",
        "dp",
        _TITAN,
        "parallelism",
        note="with data_parallel_replicate_degree 1 (HSDP: dp is their product)",
    ),
    _a("tensor_parallel_degree", "tp", _TITAN, "parallelism"),
    _a("pipeline_parallel_degree", "pp", _TITAN, "parallelism"),
    _a("context_parallel_degree", "cp", _TITAN, "parallelism"),
    _a("expert_parallel_degree", "ep", _TITAN, "parallelism"),
    _a("expert_tensor_parallel_degree", "etp", _TITAN, "parallelism"),
    _a("mode", "recompute", _TITAN, "activation_checkpoint", bare=False),
    _a("enable", "compile", _TITAN, "compile", bare=False),
    # Hugging Face config.json keys
    _a("num_hidden_layers", "layers", _HF),
    _a("hidden_size", "hidden", _HF),
    _a("intermediate_size", "ffn_hidden", _HF),
    _a("num_attention_heads", "heads", _HF),
    _a("num_key_value_heads", "kv_heads", _HF),
    _a("vocab_size", "vocab", _HF),
    _a("tie_word_embeddings", "tied_embeddings", _HF),
    _a("num_experts", "experts", _HF),
    _a("num_local_experts", "experts", _HF),
    _a("n_routed_experts", "experts", _HF),
    _a("num_experts_per_tok", "topk", _HF),
    _a("moe_intermediate_size", "moe_ffn_hidden", _HF),
    _a("shared_expert_intermediate_size", "shared_expert_ffn", _HF),
    _a("n_shared_experts", "shared_experts", _HF),
    _a("first_k_dense_replace", "first_dense_layers", _HF),
    _a("num_nextn_predict_layers", "mtp_layers", _HF),
    _a("full_attention_interval", "full_attention_every", _HF),
    _a("linear_num_key_heads", "linear_key_heads", _HF),
    _a("linear_num_value_heads", "linear_value_heads", _HF),
    _a("linear_conv_kernel_dim", "linear_conv_kernel", _HF),
    # shorthand people write
    _a("zero_stage", "zero", _COMMON),
    _a("gbs", "global_batch", _COMMON),
    _a("mbs", "micro_batch", _COMMON),
    _a("dp_size", "dp", _COMMON),
    _a("tp_size", "tp", _COMMON),
    _a("pp_size", "pp", _COMMON),
    _a("cp_size", "cp", _COMMON),
    _a("ep_size", "ep", _COMMON),
    _a("data_parallel_size", "dp", _COMMON),
    _a("seq_length", "seq_len", _COMMON),
    _a("sequence_length", "seq_len", _COMMON),
    _a("deadline_days", "days", _COMMON),
)

# Names people write that no column means, with what to give instead (shown with the error).
NOT_COLUMNS: Mapping[str, str] = {
    "num_gpus": "the GPU count is dp × tp × pp × cp: give those",
    "world_size": "the GPU count is dp × tp × pp × cp: give those",
    "gpus": "the GPU count is dp × tp × pp × cp: give those; the accelerator is gpu",
    "nodes": "the GPU count is dp × tp × pp × cp and a node holds gpus_per_node of them",
    "num_nodes": "the GPU count is dp × tp × pp × cp and a node holds gpus_per_node of them",
    "batch_size": "give micro_batch (sequences a GPU runs at once) and global_batch (a step's)",
    "gradient_accumulation_steps": "give global_batch = micro_batch × dp × the accumulation steps",
    "data_parallel_replicate_degree": "dp is the replicate degree × the shard degree: give it",
    "padded_vocab_size": "give the tokenizer's vocab and the padding multiple in vocab_multiple",
    "train_iters": "give tokens = steps × global_batch × seq_len",
    "steps": "give tokens = steps × global_batch × seq_len",
    "use_distributed_optimizer": "Megatron-LM's distributed optimizer is zero = 1",
    "untie_embeddings_and_output_weights": "give tied_embeddings (false when untied)",
}


def header_key(text: str) -> str:
    """A header name as names are compared: case folded, "-" as "_", a leading "--" dropped."""
    return text.casefold().lstrip("-").replace("-", "_")


def _alias_keys() -> dict[str, Alias]:
    keys: dict[str, Alias] = {}
    for alias in ALIAS_TABLE:
        bare = alias.name if alias.bare else ""
        for name in (bare, f"{alias.section}.{alias.name}" if alias.section else ""):
            key = header_key(name)
            if key and key not in COLUMN_BY_NAME:
                keys[key] = alias
    return keys


ALIAS_BY_KEY: Mapping[str, Alias] = _alias_keys()


# Every float a row may hold, whatever its column: zero, or a magnitude within FLOAT_RANGE, so
# that every figure computed from the row stays a finite number that JSON, a workbook cell and the
# handout can hold (tests/test_columns.py evaluates rows at the corners).  Whole numbers are
# bounded by each column's maximum, else by 10^16 (inputs/cells.py MAX_NUMBER).
FLOAT_RANGE = (1e-6, 1e12)

# The architecture columns that count the parameters when params_total is empty (all of them or none).
ARCH_REQUIRED = ("layers", "hidden", "heads", "ffn_hidden", "vocab")
# Multi-head latent attention: kv_lora_rank and these together (q_lora_rank optional).
MLA_COLUMNS = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
# Gated DeltaNet (the linear-attention layers of a hybrid model): all of them or none.
LINEAR_ATTENTION_COLUMNS = (
    "linear_key_heads",
    "linear_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel",
)


@dataclass(frozen=True)
class Config:
    """One input row as the user gave it: typed values, ``None`` for an empty cell."""

    values: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""  # "inputs.csv line 4" / "inputs.xlsx Inputs!row 4", for messages
    # Columns filled from the row's ``model`` rather than typed in the row: column -> where from
    # ("model Qwen3-8B", "config.json configs/x.json").  A column not named here came from the row.
    origins: Mapping[str, str] = field(default_factory=dict)
    # What the reader warns of on this row ("layers: expected 32, as model Llama-3.1-8B has it;
    # found 80 ..."), each a sentence with its rule; the row is read all the same.
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        full = _FrozenDict(_NO_VALUES)  # every column, in schema order
        dict.update(full, self.values)
        if len(full) != len(COLUMN_NAMES):  # a key that is no column
            raise KeyError(f"unknown columns: {sorted(self.values.keys() - _COLUMN_SET)}")
        object.__setattr__(self, "values", full)
        origins = {k: v for k, v in self.origins.items() if full.get(k) is not None}
        object.__setattr__(self, "origins", _FrozenDict(origins) if origins else _NO_ORIGINS)

    @classmethod
    def rebuilt(cls, values: Sequence[Any], source: str, origins: Mapping[str, str]) -> "Config":
        """A config again from what one held: ``values`` every column's value in schema order
        (``tuple(config.values.values())``), its source and origins (so nothing to check again)."""
        config = object.__new__(cls)
        object.__setattr__(config, "values", _FrozenDict(zip(COLUMN_NAMES, values)))
        object.__setattr__(config, "source", source)
        object.__setattr__(config, "origins", _FrozenDict(origins))
        object.__setattr__(config, "warnings", ())
        return config

    @property
    def name(self) -> str:
        return str(self.values["name"])

    def get(self, column: str) -> Any:
        return self.values[column]

    def replace(self, **changes: Any) -> "Config":
        new = dict(self.values)
        new.update(changes)
        kept = {k: v for k, v in self.origins.items() if k not in changes}
        return Config(new, self.source, kept, self.warnings)

    def given(self) -> dict[str, Any]:
        """The non-empty cells, in column order."""
        return {k: v for k, v in self.values.items() if v is not None}

    def origin(self, column: str) -> str:
        """Where a non-empty column's value came from: "row", or the model that filled it."""
        return self.origins.get(column, "row")

    def typed(self) -> dict[str, Any]:
        """The non-empty cells the row itself gave (not those its model filled), in column order."""
        return {k: v for k, v in self.given().items() if k not in self.origins}


class _FrozenDict(dict):
    """A dict that refuses changes once built (keeps ``Config`` hashable in spirit)."""

    def _refuse(self, *a, **k):  # pragma: no cover - trivial
        raise TypeError("Config values are frozen")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted((k, repr(v)) for k, v in self.items())))


_NO_ORIGINS = _FrozenDict()  # one, shared by the rows whose model filled nothing
