"""Resolved inputs: each column of the row with its default filled in, as a live formula."""

from __future__ import annotations

from ...catalogue import USER_DESCRIBED
from ..expr import Lookup, all_of, default, if_
from ..registry import BOOL, COUNT, DAYS, GB, GBPS, MONEY, RATIO, TEXT, TFLOPS, TOKENS, Registry
from .common import (
    CATALOGUE,
    COLUMN,
    COUNTER_ZH,
    Ctx,
    catalogue_definer,
    column_definer,
    conv,
    definer,
    switch,
)


def define(reg: Registry, r: Ctx) -> None:
    reg.section = "inputs"
    d = definer(reg, BOOL, COLUMN)
    # the input columns with their defaults: flags, named choices, counts (else unit= says)
    given, choice, count = (column_definer(reg, u) for u in (BOOL, TEXT, COUNT))
    r.framework = choice("framework", "generic", "framework convention", "框架口径")
    r.weight_dtype = choice("weight_dtype", "bf16", "weight dtype", "权重精度")
    grad_dtype = choice(
        "grad_dtype",
        conv(r, "grad_dtype_default"),
        "gradient dtype",
        "梯度精度",
        "; the convention's default",
    )
    choice(
        "main_grad_dtype",
        conv(r, "main_grad_default"),
        "main-gradient dtype",
        "主梯度精度",
        "; the convention's default (fp32 gradient partitions under DeepSpeed)",
    )
    choice(
        "master_dtype",
        if_(r.weight_dtype.eq("fp32"), "none", "fp32"),
        "master dtype",
        "主权重精度",
        " (none when weights are fp32)",
    )
    r.wbytes, r.gbytes = (Lookup("dtype", t, "bytes") for t in (r.weight_dtype, grad_dtype))
    r.optimizer = choice("optimizer", "adam", "optimizer", "优化器")
    moment = Lookup("optimizer", r.optimizer, "moment_dtype")
    r.m_dtype, r.v_dtype = (
        choice(f"{s}_dtype", moment, f"{s} dtype", zh, "; the optimizer's default")
        for s, zh in (("m", "一阶矩精度"), ("v", "二阶矩精度"))
    )
    for key, en, zh in (
        ("dp", "data parallel", "数据并行"),
        ("tp", "tensor parallel", "张量并行"),
        ("pp", "pipeline parallel", "流水线并行"),
        ("cp", "context parallel", "上下文并行"),
        ("ep", "expert parallel", "专家并行"),
    ):
        setattr(r, key, count(key, 1, en, zh))
    r.dp_shard = count(
        "dp_shard",
        r.dp,
        "data-parallel ranks per shard group",
        "每个分片组的数据并行 rank 数",
        " (dp when empty: one shard group; FSDP2 HSDP shards over dp_shard·cp and all-reduces across the dp/dp_shard replicas, torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py)",
    )
    r.etp = count("etp", r.tp, "expert tensor parallel", "专家张量并行", " (tp when empty)")
    r.zero = count("zero", 0, "ZeRO stage", "ZeRO 阶段")
    r.at = {}
    for col, en, zh in (
        ("weights_at", "weights location", "权重位置"),
        ("grads_at", "gradients location", "梯度位置"),
        ("master_at", "master location", "主权重位置"),
        ("optimizer_at", "optimizer location", "优化器状态位置"),
    ):
        r.at[col] = choice(col, "hbm", en, zh)
    r.seq_len = given("seq_len", None, "sequence length", "序列长度", unit=TOKENS)
    r.micro_batch = count("micro_batch", 1, "micro-batch", "micro-batch")
    r.global_batch = count("global_batch", None, "global batch", "全局 batch")
    r.recompute = choice("recompute", "none", "recompute", "重计算")
    r.dropout = given("dropout", False, "dropout in attention and MLP", "注意力与 MLP 的 dropout")
    r.compile = given("compile", False, "torch.compile", "torch.compile")
    r.virtual = count("virtual_stages", 1, "virtual pipeline stages per rank", "每卡虚拟流水段数")
    conv_at = (
        " (conventions table: Megatron-LM @d98e8a64 megatron/training/arguments.py and"
        " core/distributed/distributed_data_parallel_config.py default off; DeepSpeed"
        " deepspeed/runtime/zero/config.py overlap_comm on for ZeRO-3 only; torch DDP and FSDP2"
        " overlap the reduction and prefetch gathers; async TP off everywhere)"
    )
    r.overlap_grad = given(
        "overlap_grad_reduce",
        r.zero.ge(conv(r, "overlap_grad_reduce_from_zero")),
        "gradient reduction overlapped with the backward",
        "梯度归约与反向重叠",
        conv_at,
    )
    r.overlap_param = given(
        "overlap_param_gather",
        r.zero.ge(conv(r, "overlap_param_gather_from_zero")),
        "parameter all-gathers overlapped with compute (prefetched)",
        "参数 all-gather 与计算重叠（预取）",
        conv_at,
    )
    r.tp_overlap = given(
        "tp_comm_overlap",
        conv(r, "tp_comm_overlap_default").eq(1),
        "tensor-parallel communication overlapped with the GEMMs",
        "张量并行通信与 GEMM 重叠",
        conv_at,
    )
    r.tp_qk_gather = given(
        "tp_qk_norm_gather",
        False,
        "q and k all-gathered over tp at the q/k norms",
        "q、k 在 q/k 归一化处沿 tp all-gather",
        " (pytorch/torchtitan @d66b72a6 torchtitan/experiments/qwen3/infra/parallelize.py wraps attention.q_norm and attention.k_norm in NoParallel, whose output hook redistributes the head-sharded q and k to Replicate; pytorch/torchtitan issue #1867, fixed by PR #1870 (SequenceParallel(sequence_dim=2)))",
    )
    r.attention_kernel = choice(
        "attention_kernel",
        conv(r, "attention_kernel_default"),
        "fused attention kernel",
        "融合注意力内核",
        " (conventions table: Megatron-LM with Transformer Engine runs cuDNN fused attention on Hopper (transformer_engine/pytorch/attention, NVTE_FUSED_ATTN), DeepSpeed flash-attn 2, torchtitan / PyTorch scaled_dot_product_attention)",
    )
    r.overlap_p2p = given(
        "overlap_p2p_comm",
        conv(r, "overlap_p2p_comm_default").eq(1),
        "pipeline sends and receives overlapped with compute",
        "流水线收发与计算重叠",
        " (conventions table: Megatron-LM @d98e8a64 megatron/training/arguments.py --no-overlap-p2p-communication, on by default and switched off without the interleaved schedule)",
    )
    r.a2a_overlap = given(
        "moe_a2a_overlap",
        False,
        "expert all-to-alls overlapped with another micro-batch's compute",
        "专家 all-to-all 与另一 micro-batch 的计算重叠",
        " (Megatron-LM @d98e8a64 megatron/core/model_parallel_config.py overlap_moe_expert_parallel_comm = False)",
    )
    r.ep_dispatch = choice(
        "ep_dispatch",
        "all_to_all",
        "expert dispatch",
        "专家分发方式",
        " (Megatron-LM transformer_config.py moe_token_dispatcher_type 'alltoall'; 'flex' with DeepEP / HybridEP sends a token to a node once)",
    )
    r.moe_imbalance = given(
        "moe_imbalance",
        1,
        "busiest expert-parallel rank's load over the mean",
        "最忙专家并行 rank 的负载与平均之比",
        " (1: balanced, as the published benchmarks run with --moe-router-force-load-balancing or capacity factor 1; dropless routing ran 1.09-1.25x slower end to end in yanring/Megatron-MoE-ModelZoo best_practice/qwen3/readme.md (Qwen3-235B-A22B, 32 H100 nodes, forced balance vs dropless))",
        unit=RATIO,
    )
    r.seq_par = given("sequence_parallel", False, "sequence parallel", "序列并行")
    r.flash = given("flash_attention", True, "flash attention", "FlashAttention")
    r.logits_dtype = choice(
        "logits_dtype",
        conv(r, "logits_dtype_default"),
        "logits dtype",
        "logits 精度",
        "; the convention's default (bf16 where the output layer runs in bf16)",
    )
    r.loss_fp32 = given(
        "loss_fp32",
        conv(r, "loss_fp32_default").eq(1),
        "the loss upcasts the logits to fp32",
        "损失把 logits 升到 fp32",
        "; the convention's default",
    )
    r.loss_impl = choice(
        "loss_impl",
        if_(r.tp.gt(1), conv(r, "loss_impl_tp_default"), conv(r, "loss_impl_default")),
        "cross-entropy implementation",
        "交叉熵实现",
        "; the convention's default (with tp > 1 its tensor-parallel one)",
    )
    r.loss_chunks = count("loss_chunks", 1, "loss chunks", "loss 分块数")
    r.loss_compiled = given(
        "loss_compiled", r.compile, "the loss is compiled", "损失已编译", " (compile when empty)"
    )
    r.weights_kept = given(
        "gathered_weights_kept",
        False,
        "ZeRO-3 gathered weights kept until their backward",
        "ZeRO-3 聚合权重保留至反向",
    )
    r.weights_kept_apply = d(
        "gathered_weights_kept_apply",
        all_of(r.weights_kept, r.zero.ge(3)),
        "gathered weights kept, under ZeRO-3 (below it the weights are whole anyway)",
        "ZeRO-3 下保留聚合权重（其下权重本就完整）",
    )
    r.expandable = given(
        "expandable_segments",
        False,
        "the allocator's expandable segments",
        "分配器可扩展段",
        "; PyTorch's default is off (c10/cuda/CUDAAllocatorConfig.h)",
    )
    r.bucket_in_elements = d(
        "bucket_in_elements",
        conv(r, "bucket_elems").gt(0),
        "the framework sizes its gradient bucket in elements",
        "框架按元素数确定梯度桶",
        source="conventions table (DeepSpeed's reduce_bucket_size)",
    )
    r.bucket_elems = d(
        "reduce_bucket_elems",
        if_(r.bucket_in_elements, default("reduce_bucket_elems", conv(r, "bucket_elems")), 0),
        "gradient reduce bucket (elements)",
        "梯度规约桶（元素）",
        unit=COUNT,
        source=f"{COLUMN}; the convention's default; 0 where the framework sizes its bucket "
        "otherwise",
    )

    reg.section = "hardware"
    r.gpu = choice("gpu", "H100-SXM", "GPU", "GPU 型号")
    r.gpu_known = d(
        "gpu_in_catalogue",
        Lookup("gpu", r.gpu, "gpus_per_node", default=0).gt(0),
        "the GPU is in the catalogue",
        "GPU 在目录中",
        source=CATALOGUE + "; a GPU outside it is described by the row (hbm_gb, peak_tflops)",
    )
    r.gpu_profile = d(
        "gpu_profile",
        if_(r.gpu_known, r.gpu, USER_DESCRIBED.name),
        "catalogue entry the figures come from",
        "取值的目录条目",
        unit=TEXT,
        source=CATALOGUE + "; user-described: " + USER_DESCRIBED.source,
    )

    listed = catalogue_definer(reg, r.gpu_profile, GB)
    r.hbm_gb = listed("hbm_gb", "HBM per GPU", "每卡显存")
    r.peak_tflops = listed("peak_tflops", "dense BF16 peak", "BF16 稠密峰值", unit=TFLOPS)
    r.gpus_per_node = listed("gpus_per_node", "GPUs per node", "每节点 GPU 数", unit=COUNT)
    r.whole_nodes = given("whole_nodes", False, "gates count whole nodes", "门按整节点计")
    r.host_gb = listed("host_gb", "host memory per node", "每节点主机内存")
    r.host_link = listed(
        "host_link_gb_s", "host link per GPU, per direction", "主机链路每卡单向带宽", unit=GBPS
    )

    reg.section = "job"
    r.tokens = given("tokens", None, "training tokens", "训练 token 数", unit=TOKENS)
    r.days = given("days", None, "deadline", "期限", unit=DAYS)
    r.reserve = given("reserve_days", 0, "reserve", "预留天数", unit=DAYS)
    r.price = given("price_per_gpu_hour", None, "price per GPU-hour", "每 GPU 小时价格", unit=MONEY)
    r.measured_gb = given("measured_peak_gb", None, "measured peak", "实测峰值", unit=GB)
    r.counter = choice(
        "measured_counter", "device", "what the measured peak counts", "实测峰值的计数口径"
    )
    r.counter_zh = d(
        "measured_counter_zh",
        switch(r.counter, COUNTER_ZH),
        "what the measured peak counts (zh)",
        "实测峰值的计数口径",
        unit=TEXT,
    )
