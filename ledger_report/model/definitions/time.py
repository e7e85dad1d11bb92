"""The step-time model: how long one optimizer step takes on this layout, term by term (the prose:
docs/definitions.md#step-time):

    step = m·(compute + TP + CP + EP + PP) + bubble + DP + optimizer + offload

Each term is one quantity (``time_<term>_s``), so the workbook carries it as a live formula and the
handout prints its formula text; each definition's source names what it follows (NCCL's tuning
model for every collective, the catalogue's matmul efficiency by GEMM shape, the framework's
overlap as its convention (data/conventions.csv) or a column says).
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial

from ..expr import (
    IsBlank,
    Lookup,
    Ref,
    all_of,
    any_of,
    ceil,
    concat,
    default,
    floor,
    if_,
    lift,
    maximum,
    minimum,
    negate,
    sig_text,
    total_of,
)
from ..registry import (
    BOOL,
    BYTES,
    COUNT,
    FLOPS,
    GBPS,
    PARAMS,
    RATIO,
    SECONDS,
    TB,
    TEXT,
    TFLOPS,
    TOKENS_PER_S,
    Registry,
)
from .common import (
    BYTES_PER_GB,
    CATALOGUE,
    COLUMN,
    FLOPS_PER_TFLOP,
    KORTH,
    TRAIN_FLOPS_PER_PARAM_TOKEN,
    Ctx,
    catalogue_definer,
    column_definer,
    conv,
    definer,
    doc,
    joined,
    of_kinds,
    or0,
)
from .stages import STAGES, by_stage, stage_definer

# Named coefficients, each with the source it follows ------------------------------------------------
NVLINK_EFFICIENCY = 0.8  # NVIDIA/nccl-tests issue #212 (sjeaugey): ring collectives reach ~370 of 450 GB/s per direction on 8x H100
NETWORK_EFFICIENCY = 0.9  # NVIDIA/nccl-tests issue #290: 46-48 GB/s per 400 Gb/s NIC; Calculon systems/a100_80g.json IB efficiency 0.9
# NCCL's own cost model (ncclTunerConstantsDefaults and ncclTopoTuneModel), µs, per protocol:
NCCL = "NVIDIA/nccl src/graph/tuning.cc @5067397c (NCCL 2.30.7) ncclTopoTuneModel"
PROTOCOLS = ("ll", "ll128", "simple")
NCCL_RING_BASE_US = {"ll": 6.6, "ll128": 14.0, "simple": 8.4}  # baseLatencies, Ring
NCCL_RING_NVLINK_US = {"ll": 0.6, "ll128": 1.9, "simple": 3.4}  # hwLatencies NVLINK, Ring: per step
NCCL_RING_NET_US = {"ll": 2.7, "ll128": 4.0, "simple": 14.0}  # hwLatencies NET, Ring: per step
# getNetOverhead (x86 Intel 1.0; Simple x3)
NCCL_NET_OVERHEAD_US = {"ll": 1.0, "ll128": 1.0, "simple": 3.0}
NCCL_TREE_BASE_US = {"ll": 6.8, "ll128": 14.0, "simple": 8.4}  # baseLatencies, Tree
NCCL_TREE_NVLINK_US = {"ll": 0.6, "ll128": 1.25, "simple": 4.0}  # hwLatencies NVLINK, Tree
NCCL_TREE_NET_US = {"ll": 5.0, "ll128": 8.5, "simple": 14.0}  # hwLatencies NET, Tree
# busBw refinements: Ring LL x.5, LL128 x.92
NCCL_PROTOCOL_BW = {"ll": 0.5, "ll128": 0.92, "simple": 1.0}
# llMaxBws, GB/s: one node by GPU generation (Hopper 141.0, Ampere 87.7), across nodes by host CPU
# (Intel: 2 nodes 39.0, more 20.4)
NCCL_LL_MAX_BW = {"hopper": 141.0, "ampere": 87.7, "2 nodes": 39.0, "more nodes": 20.4}
# tree all-reduce: busBw × .92, LL ÷ 3.8, LL128 × 7/9 in one node, 120/128 across nodes
NCCL_TREE_BW = {"simple": 0.92, "ll": 1 / 3.8, "ll128 node": 7 / 9, "ll128 nodes": 120 / 128}
NCCL_PAT_BASE_US = 8.0  # baseLatencies, PAT
NCCL_PAT_BW = 0.75  # PAT: busBw × .75
OVERLAP_PROCESSOR_USAGE = 0.15  # Calculon systems/h100_80g_nvl8.json networks[0].processor_usage: compute slows by 0.15 of the communication it hides (calculon/llm/llm.py, "compute slowdown due part of compute resources orchestrating comm")
# one point-to-point transfer inside a node (base + one step, Simple), and across nodes
NVLINK_LATENCY_S = (NCCL_RING_BASE_US["simple"] + NCCL_RING_NVLINK_US["simple"]) * 1e-6
NETWORK_LATENCY_S = (NCCL_RING_BASE_US["simple"] + NCCL_RING_NET_US["simple"]) * 1e-6
# Calculon systems/a100_80g.json mem1 MB_efficiency: 0.90 for transfers of 100 MB and more
HBM_EFFICIENCY = 0.9
# PCIe payload after encoding and packet headers (assumed; README "Step time")
HOST_LINK_EFFICIENCY = 0.8
GEMM_RAMP_S = 2e-6  # Calculon systems/a100_80g.json matrix efficiency by size: 1 GFLOP at 0.6 of the 0.95 plateau → F½ = 0.58 GFLOP = 1.9 µs at 312 TFLOP/s
GEMMS_PER_LAYER = 4  # Megatron-LM / Transformer Engine: fused QKV, output projection, fc1 (gate and up fused), fc2
GEMMS_PER_EXPERT = 2  # grouped GEMMs over the rank's experts: fc1 (gate and up) and fc2 (Megatron-LM megatron/core/transformer/moe/experts.py GroupedMLP)
GROUPED_GEMM_RELATIVE = 0.6  # grouped expert GEMMs against dense ones, beyond their tile and wave quantization and memory bound: the second constant the published runs set, refitted with SUSTAINED_FRACTION and EXPERT_GEMM_LAUNCH_S leave-one-source-out (tests/support/fit.py; fitted on all runs 0.6, grid 0.4-1.0)
# cuBLAS picks the tile per shape: taken as the one of these that fills its waves best (WAVE_SOURCE)
GEMM_TILES = ((128, 256), (256, 128), (128, 128))
WAVE_SOURCE = (
    "tile and wave quantization: C = ⌈M/Tm⌉·⌈N/Tn⌉ tiles (× the GEMMs that run at once), "
    "W = ⌈C/SMs⌉ waves, efficiency C/(W·SMs), the best of the tiles 128×256, 256×128, 128×128 "
    "(NVIDIA Deep Learning Performance Documentation, 'Matrix Multiplication Background User's "
    "Guide', tile and wave quantization; stas00/ml-engineering @744d01e1 "
    "training/performance/README.md 'Do more SMs give more TFLOPS?', C, W and the 128 × 256 tile); "
    "1 where the catalogue has no SM count"
)
# Fused attention kernels, fraction of the dense BF16 peak they reach forward and backward (head dim
# 128, causal, sequences of 2K-16K), (A100 class, Hopper and later):
ATTENTION_KERNEL_EFFICIENCY = {
    # Dao 2023 arXiv 2307.08691: forward 50-73 % of the A100 peak, backward lower; Shah et al. 2024
    # arXiv 2407.08608: "FlashAttention-2 achieving only 35% utilization on H100"
    "fa2": (0.55, 0.35),
    # Shah et al. 2024: FP16 up to 740 TFLOP/s forward (75 %), backward 1.5-1.75x FlashAttention-2;
    # Hopper only (FlashAttention-2 on A100)
    "fa3": (0.55, 0.60),
    # Shah et al. 2024 §4.1: cuDNN 9 fused attention between FlashAttention-2 and -3 on H100 (close
    # to -3 at long sequences)
    "cudnn": (0.50, 0.55),
    # torch.nn.functional.scaled_dot_product_attention dispatches to its FlashAttention-2 backend
    # (torch/nn/attention, SDPBackend.FLASH_ATTENTION)
    "sdpa": (0.55, 0.35),
}
ATTENTION_SOURCE = (
    "attention_kernel: FlashAttention-2 (Dao 2023, arXiv 2307.08691) and FlashAttention-3 (Shah et al. 2024, arXiv 2407.08608; cuDNN 9 compared there); "
    + ", ".join(
        f"{k} {a} on A100-class / {b} on Hopper and later"
        for k, (a, b) in ATTENTION_KERNEL_EFFICIENCY.items()
    )
)
SCORE_BYTES_MOVED = 30  # unfused attention: the 5 bytes per score element Korthikanti et al. 2022 store, written and read in forward and backward
ELEMENTWISE_BYTES_PER_H = 108  # norms, rotary, residual adds, dropout, layout copies: ~36 bytes per token per hidden element forward (read + write, bf16), twice that backward
ELEMENTWISE_BYTES_PER_F = 27  # the activation: read gate and up, write the product, the fc1 output's copies (9 bytes forward), 18 backward
FP8_CAST_BYTES_PER_H = 18  # FP8: each GEMM input cast (read 2, write 1) forward and backward, and the transposes for wgrad
FP8_CAST_BYTES_PER_F = 9
ACTIVATION_BYTES = 2  # activations and their gradients travel in 16 bits
ETP_COMBINE_BYTES = 4  # Megatron-LM token_dispatcher.py combine_preprocess: the expert-TP reduce-scatter runs on hidden_states.to(self.probs.dtype), fp32 router probabilities
# Rotary embedding and repeat_kv run as eager PyTorch ops (the convention's eager_rotary, and on the
# heads another rank owns with tp_qk_norm_gather): the HBM traffic per element of q and k (a·hd + g·hd
# per token), eager bf16, counted by hand from pytorch/torchtitan @d66b72a6
# torchtitan/experiments/qwen3/model/model.py: apply_rotary_emb forward (−x2 1, cat 2, x·cos 2,
# rotate_half·sin 2, add 3 elements read or written: 10 × 2 bytes) and repeat_kv's expand-and-reshape
# copy of k to every head (1 element: 2 bytes) per forward pass; the backward of both (the two
# products' gradients 4, neg 1, the slices' zero-filled gradients 3, their sum 4 elements: 12 × 2
# bytes, and repeat_kv's sum over the repeats 1 element: 2 bytes).
QK_EAGER_BYTES_FWD = 22
QK_EAGER_BYTES_BWD = 26

# The third constant the published runs set (tests/support/fit.py, grid 0, 20, 40 µs): the GPU time
# an expert GEMM launched from the host with no lead costs beyond its FLOPs (source: expert_launch_s)
EXPERT_GEMM_LAUNCH_S = 20e-6
EXPERT_GEMMS_FWD = 2  # fc1 and fc2 per expert per forward pass
EXPERT_GEMMS_BWD = 4  # their data and weight gradients
MOE_ROUTING_BYTES = 16  # per routed token copy and hidden element: permute and unpermute (read + write, bf16) forward and backward
# torch.compile fuses the pointwise chains (torch/_inductor): about half the traffic
COMPILED_ELEMENTWISE = 0.5
LOSS_BYTES_PER_LOGIT = 16  # fp32 logits written, softmax read and written, their gradient written
# the optimizer step reads every state on the rank and writes most of them back
OPTIMIZER_PASSES = 2
CPU_ADAM_HOST_BYTES_PER_PARAM = 154  # DeepSpeed docs/_tutorials/zero-offload.md log: optimizer_step 6.2 s for 10.3B parameters on a DGX-2 (2x Xeon 8168, 12 ch DDR4-2666 = 256 GB/s): 256e9 × 6.2 / 10.3e9

RECOMPUTE_SOURCE = (
    "the layers' FLOPs (flops_per_token − attention − the output head 6·vocab·h) × "
    "recompute_linear_fraction + attention FLOPs × recompute_attention_fraction, as the step time "
    "runs them; the output head and the embedding sit outside what either framework recomputes: "
    "Megatron-LM @d98e8a64 megatron/core/transformer/transformer_block.py (recompute_granularity "
    "'full' checkpoints the block's layers; megatron/core/models/gpt/gpt_model.py runs "
    "output_layer after the block), megatron/core/transformer/transformer_config.py (selective: "
    "recompute_modules ['core_attn']); pytorch/torchtitan @b5bcd76c "
    "torchtitan/distributed/activation_checkpoint.py (ActivationCheckpointing.apply wraps "
    "model.layers only; SelectiveAC saves the attention ops and 'all compute/comm ops, except "
    "every second mm/linear'); MTP modules and linear attention counted with the layers; without "
    "the vocabulary, the head counted with them too"
)

# The first constant the published runs set: the share of the kernel benchmark's matmul FLOP/s a
# training step sustains beyond the GEMMs' shapes, by class of GPU (source: sustained_fraction)
SUSTAINED_FRACTION = {"no_fp8": 0.86, "fp8": 0.662}


TIME = doc("step-time")
PLACEMENT = (
    TIME + ": ranks are placed tp innermost, then cp, ep, dp, pp, filling nodes of gpus_per_node"
)
TERMS = (
    # key (its short English name), English, Chinese, short Chinese name
    ("compute", "compute (forward, backward, recompute)", "计算（前向、反向、重计算）", "计算"),
    ("tp", "tensor-parallel communication (exposed)", "张量并行通信（未被掩盖）", "tp"),
    ("cp", "context-parallel K/V exchange (exposed)", "上下文并行 K/V 交换（未被掩盖）", "cp"),
    ("ep", "expert all-to-all (exposed)", "专家 all-to-all（未被掩盖）", "ep"),
    ("pp", "pipeline point-to-point", "流水线点对点通信", "pp"),
    ("bubble", "pipeline bubble", "流水线气泡", "气泡"),
    (
        "dp",
        "data-parallel / ZeRO communication (exposed)",
        "数据并行 / ZeRO 通信（未被掩盖）",
        "dp",
    ),
    ("optimizer", "optimizer step on the GPU", "GPU 上的优化器 step", "优化器"),
    (
        "offload",
        "offload: host and NVMe streams, CPU optimizer",
        "卸载：主机与 NVMe 传输、CPU 优化器",
        "卸载",
    ),
)
TERM_KEYS = tuple(k for k, *_ in TERMS)
DIMS = ("tp", "cp", "ep", "dp", "pp")


def define(reg: Registry, r: Ctx) -> None:
    _hardware(reg, r)
    _placement(reg, r)
    _efficiency(reg, r)
    _tp_collectives(reg, r)
    r.stage_time = {}
    for stage in STAGES:
        _stage(reg, r, stage)
    _step(reg, r)
    _offload(reg, r)
    _latency_and_bound(reg, r)
    _total(reg, r)


# ---- inputs: the precision of the matmuls and the topology ------------------------------------------
def _hardware(reg: Registry, r: Ctx) -> None:
    reg.section = "hardware"
    d = definer(reg, GBPS, CATALOGUE)
    ratio, given = partial(d, unit=RATIO), column_definer(reg, TEXT)
    flops = partial(d, unit=FLOPS)
    gpu = r.gpu_profile
    listed = catalogue_definer(reg, gpu, GBPS)
    r.compute_dtype = given("compute_dtype", "bf16", "matmul precision", "矩阵乘精度")
    r.fp8_tflops = listed(
        "fp8_tflops",
        "dense FP8 peak",
        "FP8 稠密峰值",
        unit=TFLOPS,
        source=CATALOGUE + " (0: no FP8)",
    )
    r.fp8 = d(
        "fp8_compute",
        all_of(r.compute_dtype.eq("fp8"), r.fp8_tflops.gt(0)),
        "GEMMs in FP8",
        "GEMM 使用 FP8",
        unit=BOOL,
        source=COLUMN
        + ": FP8 runs the layers' GEMMs at the FP8 peak; attention and the output layer stay bf16 (Transformer Engine fp8_autocast covers Linear layers; DeepSeek-V3 arXiv 2412.19437 §3.3 keeps the output head, attention and norms in BF16)",
    )
    r.hbm_bw = d(
        "hbm_gb_s",
        default("hbm_gb_s", Lookup("gpu", gpu, "hbm_tb_s") * 1000),
        "HBM bandwidth per GPU",
        "每卡显存带宽",
    )
    r.nvlink = listed(
        "nvlink_gb_s",
        "intra-node bandwidth per GPU (both directions)",
        "节点内每卡带宽（双向）",
        field="interconnect_gb_s",
        source=CATALOGUE + " (interconnect_gb_s)",
    )
    r.network = listed(
        "network_gb_s", "scale-out network per GPU (per direction)", "跨节点网络每卡带宽（单向）"
    )
    r.nvme_bw = listed("nvme_gb_s", "NVMe bandwidth per node", "每节点 NVMe 带宽")
    r.nvme_tb = d(
        "nvme_tb",
        Lookup("gpu", gpu, "nvme_tb"),
        "NVMe capacity per node",
        "每节点 NVMe 容量",
        unit=TB,
    )
    r.host_mem_bw = listed("host_mem_gb_s", "host memory bandwidth per node", "每节点主机内存带宽")
    r.eff_scale = given(
        "efficiency_scale",
        1,
        "scale on the achievable matmul efficiency",
        "可达矩阵乘效率的缩放",
        " (the planner sets it from a measured mfu)",
        unit=RATIO,
    )
    r.fp8_part = Lookup("gpu", gpu, "fp8_tflops", default=0).gt(0)
    r.sustained = ratio(
        "sustained_fraction",
        if_(
            r.gpu_known,
            if_(r.fp8_part, SUSTAINED_FRACTION["fp8"], SUSTAINED_FRACTION["no_fp8"]),
            1,
        ),
        "share of the kernel benchmark's matmul efficiency training sustains",
        "训练中可维持的矩阵乘基准效率占比",
        source="SUSTAINED_FRACTION (definitions/time.py): "
        + f"{SUSTAINED_FRACTION['no_fp8']} for parts without FP8 (A100 class), {SUSTAINED_FRACTION['fp8']} with, beyond the GEMMs' shapes; fitted to published runs with the grouped expert factor, refitted leave-one-source-out in tests/support/fit.py (bench/bench_throughput.py); 1 for a GPU the row describes",
    )
    measured = " (measured maximum achievable matmul FLOP/s ÷ peak)"
    r.bf16_eff, fp8_eff = (
        ratio(
            f"{pre}gemm_efficiency",
            Lookup("gpu", gpu, f"{pre}gemm_efficiency") * r.sustained * r.eff_scale,
            f"achievable {p} matmul efficiency (largest GEMMs)",
            f"可达 {p} 矩阵乘效率（大 GEMM）",
            source=f"{CATALOGUE}{how} × sustained_fraction × efficiency_scale",
        )
        for pre, p, how in (("", "BF16", measured), ("fp8_", "FP8", ""))
    )
    r.bf16_flops = flops(
        "bf16_peak_flops",
        r.peak_tflops * FLOPS_PER_TFLOP,
        "BF16 peak FLOP/s",
        "BF16 峰值 FLOP/s",
    )
    r.gemm_flops = flops(
        "gemm_peak_flops",
        if_(r.fp8, r.fp8_tflops, r.peak_tflops) * FLOPS_PER_TFLOP,
        "peak FLOP/s of the layers' GEMMs",
        "各层 GEMM 的峰值 FLOP/s",
        source="compute_dtype: the FP8 peak with fp8, else BF16",
    )
    r.gemm_eff = ratio(
        "layer_gemm_efficiency",
        if_(r.fp8, fp8_eff, r.bf16_eff),
        "achievable efficiency of the layers' GEMMs",
        "各层 GEMM 的可达效率",
        source="compute_dtype",
    )


# ---- placement: which groups cross nodes -----------------------------------------------------------
def _placement(reg: Registry, r: Ctx) -> None:
    reg.section = "placement"
    d = definer(reg, GBPS, PLACEMENT)
    count = partial(d, unit=COUNT)
    flag = partial(d, unit=BOOL)
    gpn = r.gpus_per_node
    nv_bus = d(
        "nvlink_bus_gb_s",
        r.nvlink / 2 * NVLINK_EFFICIENCY,
        "NVLink bandwidth a collective sees per GPU",
        "集合通信可用的 NVLink 带宽",
        source=f"interconnect per direction × {NVLINK_EFFICIENCY} (NVIDIA/nccl-tests issue #212)",
    )
    net = d(
        "network_bus_gb_s",
        r.network * NETWORK_EFFICIENCY,
        "network bandwidth a collective sees per NIC",
        "集合通信可用的网络带宽",
        source=f"network_gb_s × {NETWORK_EFFICIENCY} (NVIDIA/nccl-tests issue #290)",
    )
    groups = (
        # group, the stride between its ranks, its size, its name
        ("tp", 1, r.tp, "tensor-parallel"),
        ("cp", r.tp, r.cp, "context-parallel"),
        ("ep", r.etp, r.ep, "expert-parallel"),
        ("dp", r.tp * r.cp, r.dp, "data-parallel"),
        ("pp", r.tp * r.cp * r.dp, r.pp, "pipeline"),
        ("grad", r.tp, r.dp_shard * r.cp, "gradient-reduction (dp·cp)"),
        ("egrad", r.etp * r.ep, r.group["expert"], "expert gradient-reduction (expert-DP)"),
        ("rep", r.tp * r.cp * r.dp_shard, r.dp / r.dp_shard, "replica (HSDP: dp/dp_shard)"),
        ("etp", 1, r.etp, "expert tensor-parallel"),
    )
    r.crosses, r.local, r.bus, r.p2p, r.alpha = {}, {}, {}, {}, {}
    r.size, r.nodes, r.tree_depth = {}, {}, {}
    for g, stride, n, name in groups:
        r.size[g] = n
        r.crosses[g] = cross = flag(
            f"{g}_crosses_nodes",
            all_of(n.gt(1), (stride * n).gt(gpn)),
            f"the {name} group crosses nodes",
            f"{name} 组跨节点",
        )
        r.local[g] = local = count(
            f"{g}_ranks_per_node",
            maximum(1, minimum(n, floor(gpn / stride))),
            f"{name} ranks on one node",
            f"{name} 组每节点成员数",
        )
        r.bus[g] = d(
            f"{g}_bus_gb_s",
            if_(cross, minimum(nv_bus, local * net), nv_bus),
            f"{name} collective bandwidth per GPU",
            f"{name} 集合通信带宽",
            source=PLACEMENT
            + "; across nodes the ranks of a node drive one NIC each (rail-optimised), so min(NVLink, ranks per node × NIC); expert groups as Megatron-LM megatron/core/parallel_state.py @d98e8a64 builds them (RankGenerator(tp=expert_tensor_parallel_size, ep, dp=expert-DP), order tp-ep-dp: ep ranks etp apart, expert-DP ranks etp·ep apart)",
        )
        r.p2p[g] = if_(cross, net, nv_bus)
        r.alpha[g] = if_(cross, NETWORK_LATENCY_S, NVLINK_LATENCY_S)
        r.nodes[g] = count(
            f"{g}_nodes",
            if_(cross, ceil(n / local), 1),
            f"nodes the {name} group spans",
            f"{name} 组跨越的节点数",
        )
        r.tree_depth[g] = count(
            f"{g}_tree_depth",
            total_of([if_(r.nodes[g].ge(2**k), 1, 0) for k in range(1, 21)]),
            f"levels of NCCL's tree over the {name} group's nodes (⌊log2 nodes⌋)",
            f"{name} 组节点上 NCCL 树的层数（⌊log2 节点数⌋）",
            source=NCCL + ": log2i(nNodes) inter-node tree steps (log2i rounds down)",
        )
    r.any_cross = flag(
        "any_group_crosses_nodes",
        any_of(*(r.crosses[g] for g in DIMS)),
        "some group crosses nodes",
        "有跨节点的组",
    )
    r.placement_text = {}
    for suffix, sep, across, within, none in (
        ("", "; ", " across nodes", " within a node", "no group crosses a node"),
        ("_zh", "；", " 跨节点", " 在节点内", "没有跨节点的组"),
    ):
        parts = ((r.size[g].gt(1), (g, if_(r.crosses[g], across, within))) for g in DIMS)
        r.placement_text[suffix] = d(
            "placement_summary" + suffix,
            if_(r.any_cross, joined(parts, sep), none),
            "which groups cross nodes",
            "哪些组跨节点",
            unit=TEXT,
        )


# ---- one NCCL collective, as NCCL's tuning model costs it ---------------------------------------
# each kind of collective, as its key ends, and how many times (n − 1)/n of its bytes a ring sends
_RING_SENDS = {"all_reduce": 2, "reduce_scatter": 1, "all_gather": 1}


def _options(r: Ctx, g: str, k: int):
    """NCCL's (algorithm, protocol) choices for a collective over group ``g`` whose ring sends
    ``k`` times (n − 1)/n of its bytes (2: an all-reduce): ring with each protocol, then tree
    (all-reduce) or PAT (one rank per node), each as (latency in µs, bus-bandwidth efficiency, the
    bandwidth cap in GB/s or None, bytes factor), from ncclTopoTuneModel (NCCL constant)."""
    n, nodes, local = r.size[g], r.nodes[g], r.local[g]
    cross = r.crosses[g]
    alone = all_of(cross, local.eq(1))
    inter = if_(cross, k * (nodes - 1), 0)
    ll_cap = if_(
        cross,
        if_(nodes.le(2), NCCL_LL_MAX_BW["2 nodes"], NCCL_LL_MAX_BW["more nodes"]),
        if_(r.fp8_tflops.gt(0), NCCL_LL_MAX_BW["hopper"], NCCL_LL_MAX_BW["ampere"]),
    )
    cap = {"ll": ll_cap}
    tree_bw = {
        "ll": NCCL_TREE_BW["ll"],
        "ll128": if_(cross, NCCL_TREE_BW["ll128 nodes"], NCCL_TREE_BW["ll128 node"]),
        "simple": 1,
    }
    out = []
    for p in PROTOCOLS:
        intra = if_(
            cross, max(NCCL_RING_NVLINK_US[p], NCCL_NET_OVERHEAD_US[p]), NCCL_RING_NVLINK_US[p]
        )
        net = if_(alone, NCCL_TREE_NET_US[p], NCCL_RING_NET_US[p])
        lat = NCCL_RING_BASE_US[p] + (k * (n - 1) - inter) * intra + inter * net
        out.append((lat, NCCL_PROTOCOL_BW[p], cap.get(p), k * (n - 1) / n))
    if k == 2:
        for p in PROTOCOLS:
            lat = NCCL_TREE_BASE_US[p] + 2 * (
                (local - 1) * NCCL_TREE_NVLINK_US[p] + r.tree_depth[g] * NCCL_TREE_NET_US[p]
            )
            out.append((lat, NCCL_TREE_BW["simple"] * tree_bw[p], cap.get(p), 2))
    else:
        pat = NCCL_PAT_BASE_US + r.tree_depth[g] * NCCL_TREE_NET_US["simple"] / 3.5 + n * 2.8
        out.append((if_(alone, pat, 1e9), NCCL_PAT_BW, None, 1))
    return out


def _collective(reg: Registry, r: Ctx, key: str, g: str, nbytes, what: str, zh: str):
    """One collective call, of the kind ``key`` ends with: (its time, its latency).  Time = the
    least over NCCL's algorithms and protocols of latency + bytes × factor ÷ (bus bandwidth ×
    efficiency, at most its cap), as NCCL's own tuning model chooses; its latency that of the
    choice."""
    d = definer(reg, SECONDS)
    n = r.size[g]
    kind = next(s for s in _RING_SENDS if key.endswith(s))
    name, k = kind.replace("_", "-"), _RING_SENDS[kind]
    bw = r.bus[g]
    opts = _options(r, g, k)
    times = []
    for lat, eff, cap, factor in opts:
        b = bw * eff if cap is None else minimum(bw * eff, cap)
        times.append(lat * 1e-6 + factor * nbytes / (b * BYTES_PER_GB))
    algos = "ring (LL, LL128, Simple)" + (
        ", tree (LL, LL128, Simple)" if k == 2 else ", PAT with one rank per node"
    )
    t = d(
        key + "_s",
        if_(n.gt(1), minimum(*times), 0),
        f"one {name} of {what}",
        f"一次{zh} {name}",
        source=f"{NCCL}: the least over {algos} of latency + bytes × "
        + ("2(n−1)/n (tree: 2)" if k == 2 else "(n−1)/n (PAT: 1)")
        + " ÷ (bus bandwidth × the protocol's efficiency, LL at most llMaxBw)",
    )
    chosen = opts[-1][0]  # the time quantity t is the least of the times where n > 1
    for (o_lat, *_rest), o_t in reversed(list(zip(opts[:-1], times[:-1]))):
        chosen = if_(o_t.le(t), o_lat, chosen)
    lat = d(
        key + "_latency_s",
        if_(n.gt(1), chosen * 1e-6, 0),
        f"latency of one {name} of {what}",
        f"一次{zh} {name}的延迟",
        source=NCCL
        + ": the latency of the algorithm and protocol NCCL's model chooses: ring base + steps × per-step latency (NVLink inside a node, the network between nodes)"
        + ("; the tree's" if k == 2 else "; PAT's (one rank per node)"),
    )
    return t, lat


# ---- matmul efficiency by GEMM size ---------------------------------------------------------------
def _gemm_eff(reg: Registry, key: str, flops, peak, eff, en: str, zh: str):
    """The achievable efficiency of a GEMM of ``flops``: eff × F / (F + peak · GEMM_RAMP_S)."""
    return reg.define(
        key,
        eff * flops / (flops + peak * GEMM_RAMP_S),
        RATIO,
        en,
        zh,
        f"{CATALOGUE} × F/(F + peak·{GEMM_RAMP_S:g} s) (Calculon systems/a100_80g.json: efficiency by op size)",
    )


def _wave(reg: Registry, r: Ctx, key: str, rows, cols, together, en: str, zh: str):
    """The share of its waves a GEMM of ``rows`` × ``cols`` outputs fills (``together`` such GEMMs
    at once): tiles / (waves × SMs), for the tile of GEMM_TILES that fills them best."""
    sms = maximum(r.sms, 1)
    fills = []
    for tm, tn in GEMM_TILES:
        tiles = ceil(maximum(rows, 1) / tm) * ceil(maximum(cols, 1) / tn) * together
        fills.append(tiles / (ceil(tiles / sms) * sms))
    return reg.define(key, if_(r.sms.gt(0), maximum(*fills), 1), RATIO, en, zh, WAVE_SOURCE)


def _efficiency(reg: Registry, r: Ctx) -> None:
    reg.section = "time"
    d = definer(reg, RATIO)
    count = partial(d, unit=COUNT)
    flops = partial(d, unit=FLOPS)
    tok = r.tokens_mb
    r.act_bytes = count(
        "activation_element_bytes",
        ACTIVATION_BYTES,
        "bytes per activation element sent",
        "每个激活元素的通信字节",
        source="bf16 activations (Megatron-LM sends them in the parameters' 16-bit dtype)",
    )
    r.hbm_eff_bw = d(
        "hbm_stream_gb_s",
        r.hbm_bw * HBM_EFFICIENCY,
        "HBM bandwidth a memory-bound kernel reaches",
        "访存受限内核可达的显存带宽",
        unit=GBPS,
        source=f"hbm_gb_s × {HBM_EFFICIENCY} (Calculon mem1 MB_efficiency)",
    )
    r.sms = count(
        "gemm_sm_count",
        Lookup("gpu", r.gpu_profile, "sms", default=0),
        "streaming multiprocessors the GEMM tiles are scheduled on",
        "GEMM 分块调度所用的 SM 数",
        source=CATALOGUE + " (sms; 0: no published count, no wave quantization)",
    )
    tok_expert = count(
        "tokens_per_local_expert",
        if_(r.E.gt(0), r.expert_copies * r.ep / maximum(r.E, 1), 0),
        "tokens a local expert receives per micro-batch",
        "每个本地专家每个 micro-batch 收到的 token",
        source=TIME + ": the rank's routed token copies ÷ its E/ep experts (balanced routing)",
    )
    arch = definer(reg, PARAMS, doc("parameters"))
    moe_active_layer_p = arch(
        "moe_layer_active_params",
        r.moe_layer_dense_p + r.topk * r.expert_mlp_p,
        "active parameters per MoE layer",
        "每个 MoE 层的激活参数",
    )
    lin_arch = arch(
        "layer_linear_params_active",
        r.n_dense * r.dense_layer_p + r.n_moe * moe_active_layer_p,
        "the layers' active matmul parameters (architecture)",
        "各层激活的矩阵参数（由结构）",
    )
    r.head_fpt = flops(
        "head_flops_per_token",
        TRAIN_FLOPS_PER_PARAM_TOKEN * r.V * r.h,
        "output layer FLOPs per token 6·vocab·h",
        "每 token 输出层 FLOPs 6·vocab·h",
        source=doc("compute-floor"),
    )
    r.lin_scale = d(
        "layer_flops_scale",
        (r.fpt - r.attn_flops - r.head_fpt) / (TRAIN_FLOPS_PER_PARAM_TOKEN * lin_arch),
        "layer FLOPs of flops_per_token over the architecture's",
        "flops_per_token 的层 FLOPs ÷ 结构计数",
        source=doc("compute-floor")
        + " (1 unless params_total or params_active is given apart from the architecture)",
    )
    mode = r.recompute_mode
    r.rc_lin = d(
        "recompute_linear_fraction",
        if_(mode.eq("full"), 1 / 3, if_(mode.eq("selective_op"), 1 / 6, 0)),
        "extra matmul FLOPs recompute adds (of forward + backward)",
        "重计算额外的矩阵乘 FLOPs（占前向+反向）",
        source=KORTH
        + ": full recompute runs the layers' forward again (1/3); op-level selective recomputes every second matmul (torchtitan activation_checkpoint.py)",
    )
    r.rc_attn = d(
        "recompute_attention_fraction",
        if_(any_of(mode.eq("full"), mode.eq("core_attn")), 1 / 3, 0),
        "extra attention FLOPs recompute adds",
        "重计算额外的注意力 FLOPs",
        source=KORTH + ": full and core-attention recompute run the attention forward again",
    )
    rc_fpt = flops(
        "recompute_flops_per_token",
        (r.fpt - r.attn_flops - or0(r.head_fpt)) * r.rc_lin + r.attn_flops * r.rc_attn,
        "FLOPs recompute adds per token (hardware FLOPs, not model FLOPs)",
        "每 token 重计算额外的 FLOPs（硬件 FLOPs，不计入模型 FLOPs）",
        source=RECOMPUTE_SOURCE,
    )
    r.hfu_per_mfu = d(
        "hfu_per_mfu",
        1 + rc_fpt / r.fpt,
        "hardware FLOPs per model FLOP (recompute counted): HFU ÷ MFU",
        "每个模型 FLOP 的硬件 FLOPs（含重计算）：HFU ÷ MFU",
        source="1 + recompute_flops_per_token ÷ flops_per_token",
    )
    peak, eff = r.gemm_flops, r.gemm_eff
    wave, gemm_eff = partial(_wave, reg, r), partial(_gemm_eff, reg)

    def layer_gemms(kind: str, params, wave_en: str, wave_zh: str, en: str, zh: str):
        """The efficiency of a ``kind`` layer's GEMMs of ``params`` (GEMMS_PER_LAYER of them)."""
        waves = wave(
            f"{kind}_layer_gemm_wave_efficiency",
            tok,
            params / (r.tp * r.h * GEMMS_PER_LAYER),
            1,
            wave_en,
            wave_zh,
        )
        flops = 2 * tok * params / r.tp / GEMMS_PER_LAYER
        return gemm_eff(f"{kind}_layer_gemm_efficiency", flops, peak, eff * waves, en, zh)

    r.eff_dense = layer_gemms(
        "dense",
        r.dense_layer_p,
        "wave quantization of a dense layer's GEMMs (tokens × their mean width on the rank)",
        "稠密层 GEMM 的波量化效率",
        "efficiency of a dense layer's GEMMs",
        "稠密层 GEMM 效率",
    )
    r.eff_moe = layer_gemms(
        "moe",
        r.moe_layer_dense_p,
        "wave quantization of an MoE layer's attention GEMMs",
        "MoE 层注意力 GEMM 的波量化效率",
        "efficiency of an MoE layer's attention GEMMs",
        "MoE 层注意力 GEMM 效率",
    )
    r.local_experts = local_experts = maximum(r.E / r.ep, 1)
    streams = conv(r, "expert_gemm_streams")
    together = count(
        "expert_gemms_at_once",
        if_(streams.eq(0), local_experts, minimum(streams, local_experts)),
        "local experts whose GEMMs run at once (sharing the SMs)",
        "同时运行（共享 SM）的本地专家 GEMM 数",
        source="the convention's expert_gemm_streams (the conventions table: Transformer Engine GroupedLinear 4 cuBLAS streams, torch._grouped_mm all, a loop 1), at most the rank's E/ep experts",
    )
    m_e, n_e = maximum(tok_expert, 1), r.expert_mlp_p / (r.etp * r.h * GEMMS_PER_EXPERT)
    wave_expert = wave(
        "expert_gemm_wave_efficiency",
        tok_expert,
        n_e,
        together,
        "wave quantization of the expert GEMMs (tokens per expert × their mean width, the GEMMs that run at once)",
        "专家 GEMM 的波量化效率",
    )
    intensity = 2 * m_e * n_e * r.h / (r.act_bytes * (m_e * r.h + r.h * n_e + m_e * n_e))
    roof = d(
        "expert_gemm_memory_bound_efficiency",
        intensity * r.hbm_eff_bw * BYTES_PER_GB / peak,
        "the most an expert GEMM reaches at its arithmetic intensity (HBM-bound below it)",
        "专家 GEMM 在其算术强度下可达的上限（低于此为显存受限）",
        source="roofline: FLOPs ÷ bytes of A, B and C (2·M·N·K ÷ 2-byte elements of M·K + K·N + M·N; M the tokens per expert, N the mean width, K = h) × HBM bandwidth ÷ peak (NVIDIA 'Matrix Multiplication Background User's Guide', math and memory bounds: arithmetic intensity against the GPU's ops:byte ratio)",
    )
    r.eff_expert = gemm_eff(
        "expert_gemm_efficiency",
        maximum(2 * tok_expert * r.expert_mlp_p / r.etp / GEMMS_PER_EXPERT, 1),
        peak,
        minimum(eff * wave_expert, roof) * GROUPED_GEMM_RELATIVE,
        "efficiency of the grouped expert GEMMs",
        "分组专家 GEMM 效率",
    )
    wave_head = wave(
        "head_gemm_wave_efficiency",
        tok,
        r.V / r.tp,
        1,
        "wave quantization of the output layer's GEMM",
        "输出层 GEMM 的波量化效率",
    )
    r.eff_head = gemm_eff(
        "head_gemm_efficiency",
        2 * tok * r.V * r.h / r.tp,
        r.bf16_flops,
        r.bf16_eff * wave_head,
        "efficiency of the output layer (bf16)",
        "输出层 GEMM 效率（bf16）",
    )
    kernel_frac = lift(0)
    for k, (ampere, later) in ATTENTION_KERNEL_EFFICIENCY.items():
        kernel_frac = kernel_frac + if_(r.attention_kernel.eq(k), if_(r.fp8_part, later, ampere), 0)
    attn_kernel_eff = d(
        "attention_kernel_efficiency",
        kernel_frac,
        "the attention kernel's fraction of the BF16 peak (forward and backward)",
        "注意力内核达到的 BF16 峰值占比（前向与反向）",
        source=ATTENTION_SOURCE,
    )
    r.eff_attn = d(
        "attention_efficiency",
        if_(r.flash, attn_kernel_eff * r.sustained * r.eff_scale, r.bf16_eff),
        "efficiency of the attention core (bf16)",
        "注意力核心效率（bf16）",
        source="flash attention: attention_kernel_efficiency × sustained_fraction × efficiency_scale; unfused: batched GEMMs at the GEMM efficiency plus the score traffic",
    )


# ---- one micro-batch on one pipeline stage ----------------------------------------------------------
def _stage(reg: Registry, r: Ctx, stage: str) -> None:
    reg.section = "time"
    d = stage_definer(reg, stage, "stage", SECONDS, TIME)
    flops, traffic = partial(d, unit=FLOPS), partial(d, unit=BYTES)
    dl, ml, al = r.layers_of[stage]
    head = r.holds_head[stage]
    tok, tp = r.tokens_mb, r.tp
    six = TRAIN_FLOPS_PER_PARAM_TOKEN
    full = r.recompute_mode.eq("full")
    compiled = if_(r.compile, COMPILED_ELEMENTWISE, 1)
    hbm = r.hbm_eff_bw * BYTES_PER_GB
    layer_p = dl * r.dense_layer_p + ml * r.moe_layer_dense_p  # the stage's non-expert parameters
    dense_f = flops(
        "dense_gemm_flops",
        six * tok * layer_p / tp * r.lin_scale * (1 + r.rc_lin),
        "non-expert GEMM FLOPs per micro-batch (with recompute)",
        "每 micro-batch 非专家 GEMM FLOPs（含重计算）",
        source=doc("compute-floor") + ": 6 × tokens × parameters ÷ tp",
    )
    expert_f = flops(
        "expert_gemm_flops",
        six * r.expert_copies * ml * r.expert_mlp_p / r.etp * r.lin_scale * (1 + r.rc_lin),
        "expert GEMM FLOPs per micro-batch",
        "每 micro-batch 专家 GEMM FLOPs",
        source=TIME
        + ": 6 × the rank's routed token copies × expert parameters ÷ etp (balanced routing)",
    )
    attn_f = flops(
        "attention_flops",
        six * tok * al * r.seq_len * r.a * r.hd / tp * (1 + r.rc_attn),
        "attention-core FLOPs per micro-batch",
        "每 micro-batch 注意力核心 FLOPs",
        source=doc("compute-floor") + " (causal)",
    )
    head_f = flops(
        "head_flops",
        if_(head, tok * r.head_fpt / tp, 0),
        "output-layer FLOPs per micro-batch",
        "每 micro-batch 输出层 FLOPs",
        source=doc("compute-floor"),
    )
    d_moe = ml * (r.expert_copies * r.f_moe / r.etp + tok * r.f_sh / tp)
    h_elems, f_elems = (dl + ml) * tok * r.h / r.sp_div, dl * tok * r.f / tp + d_moe
    elem_bytes = (
        h_elems * (ELEMENTWISE_BYTES_PER_H + if_(r.fp8, FP8_CAST_BYTES_PER_H, 0))
        + f_elems * (ELEMENTWISE_BYTES_PER_F + if_(r.fp8, FP8_CAST_BYTES_PER_F, 0))
        + ml * tok * r.topk * r.h / r.sp_div * MOE_ROUTING_BYTES
    )
    elem = traffic(
        "elementwise_bytes",
        elem_bytes * compiled * (1 + if_(full, 1 / 3, 0)),
        "bytes the norms, activations and casts move per micro-batch",
        "每 micro-batch 归一化、激活与类型转换的访存字节",
        source=f"{ELEMENTWISE_BYTES_PER_H}·tokens·h (÷ tp with sequence parallelism) + {ELEMENTWISE_BYTES_PER_F}·tokens·ffn/tp per layer, FP8 casts on top, {MOE_ROUTING_BYTES}·tokens·top-k·h for the MoE permutation (docs/definitions.md#step-time)",
    )
    scores = traffic(
        "score_bytes",
        if_(
            r.flash, 0, al * SCORE_BYTES_MOVED * r.a / tp * tok * r.seq_len / r.cp * (1 + r.rc_attn)
        ),
        "attention-score traffic without flash attention",
        "无 FlashAttention 时的注意力分数访存",
        source=KORTH + " (5 bytes per score element, read and written forward and backward)",
    )
    loss = traffic(
        "loss_bytes",
        if_(head, tok * r.V / tp * LOSS_BYTES_PER_LOGIT, 0),
        "cross-entropy traffic",
        "交叉熵访存",
        source=doc("logits-and-loss"),
    )
    fwd_passes = 1 + if_(full, 1, 0)
    passes = 2 + if_(full, 1, 0)  # forward, backward, and the forward again under full recompute
    qk_elem_bytes = QK_EAGER_BYTES_FWD * fwd_passes + QK_EAGER_BYTES_BWD
    qk_own = traffic(
        "qk_eager_bytes",
        if_(
            conv(r, "eager_rotary").eq(1),
            al * tok * (r.a + r.g) * r.hd / tp * qk_elem_bytes * compiled,
            0,
        ),
        "bytes eager rotary embedding and repeat_kv move on the rank's heads per micro-batch",
        "每 micro-batch 本 rank 注意力头上 eager 旋转位置编码与 repeat_kv 的访存字节",
        source="the convention's eager_rotary (torchtitan: apply_rotary_emb and repeat_kv as eager ops on "
        "every head, pytorch/torchtitan @d66b72a6 torchtitan/experiments/qwen3/model/model.py): "
        "attention layers × tokens × (heads + kv heads) × head_dim ÷ tp × "
        + f"({QK_EAGER_BYTES_FWD} per forward pass (twice under full recompute) + {QK_EAGER_BYTES_BWD} backward) bytes, × {COMPILED_ELEMENTWISE} compiled; "
        "0 where the framework fuses them (Megatron-LM: Transformer Engine's fused RoPE, the "
        "attention kernel reads grouped keys and values without a copy)",
    )
    t_attn = attn_f / (r.bf16_flops * r.eff_attn)
    t_c = d(
        "compute_s",
        dense_f / (r.gemm_flops * of_kinds(dl, ml, r.eff_dense, r.eff_moe, minimum))
        + expert_f * r.moe_imbalance / (r.gemm_flops * r.eff_expert)
        + t_attn
        + head_f / (r.bf16_flops * r.eff_head)
        + (elem + scores + loss + qk_own) / hbm,
        "compute of one micro-batch",
        "一个 micro-batch 的计算",
        source=TIME + ": FLOPs ÷ (peak × efficiency) + bytes ÷ HBM bandwidth",
    )
    moe_mlp_tp = if_(any_of(conv(r, "moe_block_tp_collectives").eq(1), r.f_sh.gt(0)), 1, 0)
    n_ar = (
        passes * (2 * dl + ml * (1 + moe_mlp_tp))
        + if_(r.holds_embed[stage], 1, 0)
        + if_(head, 1, 0)
    )
    t_tp = d(
        "tp_comm_s",
        n_ar * if_(r.seq_par, r.tp_rs + r.tp_ag, r.tp_ar),
        "tensor-parallel communication per micro-batch",
        "每 micro-batch 张量并行通信",
        source=KORTH
        + ": 2 all-reduces of s·b·h forward and 2 backward per layer, 2 more under full recompute (a reduce-scatter and an all-gather each with sequence parallelism), each costed as NCCL runs it; an MoE layer has the attention's only where the convention's moe_block_tp_collectives is 0 and it has no shared expert (Megatron-LM @6a6cd478 megatron/core/transformer/moe/token_dispatcher.py: the dispatchers take expt_tp as their tp group, so the routed tokens stay in their sequence-parallel shard and only the expert-TP group gathers them; SharedExpertMLP is a tensor-parallel MLP with its own gather and reduce-scatter); on the stages that hold them, one for the embedding's output (Megatron-LM VocabParallelEmbedding all-reduce, or reduce-scatter to the sequence-parallel region; torchtitan RowwiseParallel output Shard(1)) and one for the output layer's input (its backward all-reduce, or the sequence-parallel gather)",
    )
    tp_lat = n_ar * if_(r.seq_par, r.tp_rs_lat + r.tp_ag_lat, r.tp_ar_lat)
    gemm_s = dense_f / (r.gemm_flops * r.eff_dense)
    tp_hideable = t_tp * (tp - 1) / tp
    t_tp_exp = d(
        "tp_exposed_s",
        if_(
            r.tp_overlap,
            t_tp / tp
            + maximum(tp_hideable - gemm_s, 0)
            + OVERLAP_PROCESSOR_USAGE * minimum(tp_hideable, gemm_s),
            t_tp,
        ),
        "tensor-parallel communication per micro-batch (exposed)",
        "每 micro-batch 张量并行通信（未掩盖）",
        source="tp_comm_overlap: Transformer Engine splits each collective into tp chunks pipelined with the GEMM's (the first chunk exposed), hiding at most the GEMMs' time, and the GEMMs slow by "
        + f"{OVERLAP_PROCESSOR_USAGE} of what they hide (Calculon processor_usage); off: all of it",
    )
    t_sp_copy = d(
        "tp_layout_copy_s",
        if_(
            all_of(r.seq_par, tp.gt(1), conv(r, "sp_layout_copy").eq(1)),
            2 * n_ar * 2 * tok * r.h * r.act_bytes / hbm,
            0,
        ),
        "copies of the sequence-parallel collectives per micro-batch",
        "每 micro-batch 序列并行集合通信的拷贝",
        source="conventions table sp_layout_copy (torchtitan's batch-first activations): each sequence-parallel all-gather and reduce-scatter on dimension 1 reads and writes the whole unsharded activation once more (torch/distributed/_functional_collectives.py all_gather_tensor / reduce_scatter_tensor: torch.cat of torch.chunk when the dimension is not 0), at HBM bandwidth",
    )
    qk_on = all_of(r.tp_qk_gather, r.qk_norm, tp.gt(1))
    qk_bytes = tok * (r.a + r.g) * r.hd * (tp - 1) / tp * qk_elem_bytes * compiled
    qk_calls_q, qk_calls_k = fwd_passes + 2, fwd_passes
    t_qk = d(
        "tp_qk_gather_s",
        if_(qk_on, al * (qk_calls_q * r.tp_q_ag + qk_calls_k * r.tp_k_ag) + al * qk_bytes / hbm, 0),
        "q and k gathered over tp at the q/k norms, per micro-batch",
        "每 micro-batch 在 q/k 归一化处沿 tp 聚合 q、k",
        source="tp_qk_norm_gather (pytorch/torchtitan @d66b72a6 torchtitan/experiments/qwen3/infra/parallelize.py: NoParallel on q_norm and k_norm redistributes q and k to Replicate; issue #1867, PR #1870): per attention layer an all-gather of q (a·hd per token) and of k (g·hd) in each forward pass (twice under full recompute), and in backward the all-gathers of the gradients of q and of the keys repeated to every head (a·hd each, DTensor's redistribute back to the heads sdpa shards); the rotary and repeat_kv work then repeated on the (tp − 1)/tp of the heads another rank owns: "
        + f"{QK_EAGER_BYTES_FWD} bytes per element per forward pass, {QK_EAGER_BYTES_BWD} backward (eager bf16, apply_rotary_emb and repeat_kv in torchtitan/experiments/qwen3/model/model.py), at HBM bandwidth (× {COMPILED_ELEMENTWISE} compiled)",
    )
    qk_lat = if_(qk_on, al * (qk_calls_q * r.tp_q_ag_lat + qk_calls_k * r.tp_k_ag_lat), 0)
    kv = tok * 2 * r.g * r.hd / tp * r.act_bytes
    cp_sends = al * 3 * (r.cp - 1)
    t_cp_raw = if_(r.cp.gt(1), cp_sends * (r.alpha["cp"] + kv / (r.p2p["cp"] * BYTES_PER_GB)), 0)
    t_cp = d(
        "cp_comm_s",
        t_cp_raw - conv(r, "cp_overlap") * minimum(t_cp_raw, t_attn),
        "context-parallel K/V exchange per micro-batch (exposed)",
        "每 micro-batch 上下文并行 K/V 交换（未掩盖）",
        source="Megatron-LM / Transformer Engine context parallelism (attention.py AttnFuncWithCPAndKVP2P): cp − 1 ring steps of K and V forward, K, V, dK, dV backward, the convention's share of it hidden behind the attention chunks",
    )
    act = tok * r.h * r.act_bytes / r.sp_div  # a layer's activation on the rank
    a2a = r.topk * tok * r.h * r.act_bytes / r.sp_div
    off = (r.ep - r.local["ep"]) / r.ep
    on = (r.local["ep"] - 1) / r.ep
    off_bytes = if_(
        r.ep_dispatch.eq("node_dedup"), minimum(act * r.remote_nodes, a2a * off), a2a * off
    )
    one_a2a = r.alpha["ep"] + maximum(
        a2a * on / (r.bus["ep"] * BYTES_PER_GB), off_bytes / (r.p2p["ep"] * BYTES_PER_GB)
    )
    etp_calls = ml * passes
    n_a2a = 2 * etp_calls  # dispatch and combine in each pass
    t_etp = d(
        "etp_gather_s",
        if_(r.etp.gt(1), etp_calls * (r.etp_ag + r.etp_rs) * r.moe_imbalance, 0),
        "expert-TP gathers of the routed tokens per micro-batch",
        "每 micro-batch 专家 tp 的路由 token 聚合",
        source="Megatron-LM @d98e8a64 megatron/core/transformer/moe/token_dispatcher.py MoEAlltoAllTokenDispatcher: after the dispatch all-to-all, gather_from_sequence_parallel_region over the expert-TP group (bf16 tokens), before the combine, reduce_scatter_to_sequence_parallel_region of hidden_states.to(probs.dtype) (fp32); their backward a reduce-scatter and an all-gather of the same sizes: per MoE layer (forward passes: 2 under full recompute) × (all-gather + reduce-scatter) + one of each backward, × moe_imbalance",
    )
    etp_lat = if_(r.etp.gt(1), etp_calls * (r.etp_ag_lat + r.etp_rs_lat), 0)
    t_ep_raw = d(
        "ep_all_to_all_s",
        if_(r.ep.gt(1), n_a2a * one_a2a * r.moe_imbalance, 0) + t_etp,
        "expert all-to-alls per micro-batch (before overlap)",
        "每 micro-batch 专家 all-to-all（掩盖前）",
        source=TIME
        + ": MoE layers × (4 + 2 under full recompute) × (latency + the larger of the NVLink and the network share) × moe_imbalance, and the expert-TP gathers",
    )
    t_ep = d(
        "ep_comm_s",
        if_(
            r.a2a_overlap,
            maximum(t_ep_raw - t_c, 0) + OVERLAP_PROCESSOR_USAGE * minimum(t_ep_raw, t_c),
            t_ep_raw,
        ),
        "expert all-to-all per micro-batch (exposed)",
        "每 micro-batch 专家 all-to-all（未掩盖）",
        source=TIME
        + ": top_k·s·b·h bytes each way per MoE layer, dispatch and combine forward and backward, again under full recompute (Megatron-LM recomputes the whole layer, token_dispatcher.py included); the share leaving the node crosses the network, once per destination node with node_dedup; × moe_imbalance (the busiest rank sets the pace); moe_a2a_overlap hides it behind another micro-batch's compute (Megatron-LM overlap_moe_expert_parallel_comm), the compute slowed by "
        + f"{OVERLAP_PROCESSOR_USAGE} of what it hides",
    )
    launches = d(
        "expert_gemm_launches",
        if_(
            all_of(r.E.gt(0), conv(r, "expert_gemm_streams").gt(0), conv(r, "moe_host_sync").eq(1)),
            ml * r.local_experts * (EXPERT_GEMMS_FWD * fwd_passes + EXPERT_GEMMS_BWD),
            0,
        ),
        "expert GEMMs the host launches one by one with no lead, per micro-batch",
        "每 micro-batch 主机无提前量地逐个发射的专家 GEMM 数",
        unit=COUNT,
        source=f"MoE layers × the rank's E/ep experts × ({EXPERT_GEMMS_FWD} per forward pass (twice under full recompute) + {EXPERT_GEMMS_BWD} backward), where the convention launches one GEMM per expert (expert_gemm_streams > 0: Transformer Engine GroupedLinear, TransformerEngine @d0067d0d transformer_engine/common/gemm/cublaslt_gemm.cu multi_stream_cublas_gemm, one cublasLt call per expert) after a host synchronization in the layer's dispatch (moe_host_sync: Megatron-LM @6a6cd478 megatron/core/transformer/moe/token_dispatcher.py MoEAlltoAllTokenDispatcher._maybe_dtoh_and_synchronize: the tokens per expert copied to the host and d2h_event.synchronize() before the all-to-all, every forward pass, so the GPU has no queued work when the expert GEMMs are launched)",
    )
    t_launch = d(
        "expert_launch_s",
        launches * EXPERT_GEMM_LAUNCH_S,
        "GPU time the expert GEMMs' host launches add, per micro-batch",
        "每 micro-batch 专家 GEMM 主机发射增加的 GPU 时间",
        source=f"expert GEMM launches × EXPERT_GEMM_LAUNCH_S = {EXPERT_GEMM_LAUNCH_S * 1e6:g} µs (fitted on the published runs with SUSTAINED_FRACTION and GROUPED_GEMM_RELATIVE, tests/support/fit.py: 20 µs in 7 of the 8 leave-one-source-out folds; a framework-launched CUDA kernel costs 5-20 µs of host time)",
    )
    p2p_source = "Megatron-LM megatron/core/pipeline_parallel/p2p_communication.py: the activation forward and its gradient backward, per model chunk"
    t_pp_raw = d(
        "pp_sends_s",
        if_(r.pp.gt(1), 2 * r.virtual * (r.alpha["pp"] + act / (r.p2p["pp"] * BYTES_PER_GB)), 0),
        "pipeline sends and receives per micro-batch (before overlap)",
        "每 micro-batch 流水线收发（掩盖前）",
        source=p2p_source,
    )
    t_pp = d(
        "pp_comm_s",
        if_(all_of(r.overlap_p2p, r.virtual.gt(1)), OVERLAP_PROCESSOR_USAGE * t_pp_raw, t_pp_raw),
        "pipeline point-to-point per micro-batch (exposed)",
        "每 micro-batch 流水线点对点（未掩盖）",
        source=p2p_source
        + "; overlap_p2p_comm with the interleaved schedule sends while the next chunk computes (megatron/training/arguments.py @d98e8a64 turns it off without it), leaving the compute slowdown "
        + f"({OVERLAP_PROCESSOR_USAGE} of it)",
    )
    a2a_lat = if_(r.ep.gt(1), n_a2a * r.alpha["ep"], 0)
    lat = d(
        "comm_latency_s",
        if_(t_tp.gt(0), t_tp_exp * tp_lat / t_tp, 0)
        + qk_lat
        + if_(t_cp_raw.gt(0), t_cp * cp_sends * r.alpha["cp"] / t_cp_raw, 0)
        + if_(t_ep_raw.gt(0), t_ep * (a2a_lat + etp_lat) / t_ep_raw, 0)
        + if_(t_pp_raw.gt(0), t_pp * 2 * r.virtual * r.alpha["pp"] / t_pp_raw, 0),
        "the latency in the exposed communication of one micro-batch",
        "每 micro-batch 未掩盖通信中的延迟",
        source=NCCL
        + ": each exposed term × its collectives' latency ÷ their time (TP, CP, EP, PP)",
    )
    r.stage_time[stage] = {
        "compute": t_c + t_launch,
        "tp": t_tp_exp + t_sp_copy + t_qk,
        "cp": t_cp,
        "ep": t_ep,
        "pp": t_pp,
        "latency": lat,
        "nic_hidden": d(
            "nic_hidden_s",
            if_(r.crosses["cp"], t_cp_raw - t_cp, 0)
            + if_(r.crosses["ep"], maximum(t_ep_raw - t_ep, 0), 0)
            + if_(r.crosses["pp"], t_pp_raw - t_pp, 0),
            "cross-node traffic hidden behind the compute of one micro-batch",
            "每 micro-batch 被计算掩盖的跨节点通信",
            source="the share of the context-parallel ring, the expert all-to-alls and the pipeline sends that overlaps compute, where their group crosses nodes: it holds the GPU's NIC (one per GPU, rail-optimised) while the compute runs",
        ),
        "raw_latency": tp_lat
        + qk_lat
        + if_(r.cp.gt(1), cp_sends * r.alpha["cp"], 0)
        + a2a_lat
        + etp_lat
        + if_(r.pp.gt(1), 2 * r.virtual * r.alpha["pp"], 0),
        "micro": d(
            "micro_batch_s",
            t_c + t_launch + t_tp_exp + t_sp_copy + t_qk + t_cp + t_ep + t_pp,
            "one micro-batch, forward and backward",
            "一个 micro-batch 的前向与反向",
        ),
    }


def _tp_collectives(reg: Registry, r: Ctx) -> None:
    """One tensor-parallel collective of a layer's activations (the same on every stage), and the
    nodes a routed token travels to."""
    nodes = r.nodes["ep"]
    stay = lift(1)
    for i in range(1, 17):
        stay = stay * if_(r.topk.ge(i), 1 - 1 / nodes, 1)
    r.remote_nodes = reg.define(
        "ep_remote_nodes_per_token",
        if_(nodes.gt(1), (nodes - 1) * (1 - stay), 0),
        RATIO,
        "other nodes a token's top-k experts sit on (expected, uniform routing)",
        "一个 token 的 top-k 专家所在的其他节点数（期望，均匀路由）",
        "(N − 1)·(1 − (1 − 1/N)^top_k) for N nodes of the expert-parallel group: DeepEP / HybridEP (node_dedup) send a token once to each such node and forward it over NVLink there (DeepSeek-V3 arXiv 2412.19437 §3.2.2)",
    )
    coll = partial(_collective, reg, r)
    act = r.tokens_mb * r.h * r.act_bytes
    what, zh = "a layer's activations over tp", "层激活（tp）"
    r.tp_ar, r.tp_ar_lat = coll("tp_all_reduce", "tp", act, what, zh)
    r.tp_rs, r.tp_rs_lat = coll("tp_reduce_scatter", "tp", act, what, zh)
    r.tp_ag, r.tp_ag_lat = coll("tp_all_gather", "tp", act, what, zh)
    routed = r.expert_copies * r.h
    what, zh = "the routed tokens over the expert-TP group", "路由 token（专家 tp）"
    r.etp_ag, r.etp_ag_lat = coll("etp_tokens_all_gather", "etp", routed * r.act_bytes, what, zh)
    what, zh = "the experts' fp32 outputs over the expert-TP group", "专家 fp32 输出（专家 tp）"
    r.etp_rs, r.etp_rs_lat = coll(
        "etp_tokens_reduce_scatter", "etp", routed * ETP_COMBINE_BYTES, what, zh
    )
    qk = r.tokens_mb * r.hd * r.act_bytes
    what, zh = "a layer's queries over tp", "层 query（tp）"
    r.tp_q_ag, r.tp_q_ag_lat = coll("tp_q_all_gather", "tp", qk * r.a, what, zh)
    what, zh = "a layer's keys over tp", "层 key（tp）"
    r.tp_k_ag, r.tp_k_ag_lat = coll("tp_k_all_gather", "tp", qk * r.g, what, zh)


# ---- the step ------------------------------------------------------------------------------------
def _step(reg: Registry, r: Ctx) -> None:
    reg.section = "time"
    d = definer(reg, SECONDS, TIME)
    m = r.n_micro
    t = {s: r.stage_time[s]["micro"] for s in STAGES}
    is_first = t["first"].ge(maximum(t["middle"], t["last"]))
    is_middle = all_of(r.has_middle, t["middle"].ge(t["last"]))
    d(
        "slowest_stage",
        if_(r.single, "only", by_stage(is_first, is_middle, str)),
        "the slowest pipeline stage (it sets the pace)",
        "最慢的流水段（决定节奏）",
        unit=TEXT,
    )

    def pick_slowest(key: str):
        """The slowest stage's term ``key`` (blank where a stage's micro-batch time is)."""
        return by_stage(is_first, is_middle, lambda s: r.stage_time[s][key])

    r.pick_slowest = pick_slowest
    t_micro = d(
        "micro_batch_s",
        pick_slowest("micro"),
        "one micro-batch on the slowest stage",
        "最慢段的一个 micro-batch",
    )
    r.t_compute_mb = d(
        "micro_batch_compute_s",
        pick_slowest("compute"),
        "compute of one micro-batch on the slowest stage",
        "最慢段一个 micro-batch 的计算",
    )
    r.term = {}
    for key, en, zh, _short in TERMS[:5]:
        r.term[key] = d(
            f"time_{key}_s",
            m * pick_slowest(key),
            en + " per step",
            zh + "（每步）",
            source=TIME + ": micro-batches × the slowest stage's term",
        )
    p, v = r.pp, r.virtual
    r.term["bubble"] = d(
        "time_bubble_s",
        t_micro * (maximum(m + (p - 1) / v, p + (m - 1) / v) - m),
        "pipeline bubble per step",
        "每步流水线气泡",
        source="the schedule's critical path: with m ≥ p micro-batches 1F1B idles (p − 1)·t and the interleaved schedule (p − 1)·t/v (Narayanan et al. 2021 §2.2); with m < p each micro-batch still crosses all p stages, so the step is at least (p + (m − 1)/v)·t: bubble = t·max(m + (p − 1)/v, p + (m − 1)/v) − m·t",
    )
    d(
        "bubble_fraction",
        r.term["bubble"] / (m * t_micro + r.term["bubble"]),
        "share of the pipeline time idle in the bubble",
        "流水线时间中气泡的占比",
        unit=RATIO,
        source="(p − 1)/(v·m + p − 1) with m ≥ p; 1 − m/(p + (m − 1)/v) with m < p",
    )
    _data_parallel(reg, r)
    opt_bytes = d(
        "optimizer_step_bytes",
        OPTIMIZER_PASSES * if_(r.in_hbm["m"], r.state_hbm, 0),
        "bytes the GPU optimizer step reads and writes",
        "GPU 优化器 step 读写的字节",
        unit=BYTES,
        source="every state on the rank read and written back once (a memory-bound multi-tensor Adam)",
    )
    r.term["optimizer"] = d(
        "time_optimizer_s",
        opt_bytes / (r.hbm_eff_bw * BYTES_PER_GB),
        "optimizer step on the GPU",
        "GPU 上的优化器 step",
        source="optimizer_step_bytes ÷ HBM bandwidth",
    )


def _hidden(raw, exposed):
    """Exposed time of ``raw`` communication overlapped with compute: ``exposed`` (the pieces that
    never hide and what each window's compute cannot hide) plus the compute slowdown while the rest
    hides (OVERLAP_PROCESSOR_USAGE of it)."""
    return exposed + OVERLAP_PROCESSOR_USAGE * maximum(raw - exposed, 0)


def _data_parallel(reg: Registry, r: Ctx) -> None:
    d = definer(reg, SECONDS)
    count = partial(d, unit=COUNT)
    coll = partial(_collective, reg, r)
    m = r.n_micro
    gb, wb = r.gbytes, r.wbytes
    ls = count(
        "layers_per_stage",
        ceil(r.L / r.pp),
        "layers a pipeline stage holds (ZeRO-3 gathers and reduces one at a time)",
        "每个流水段的层数（ZeRO-3 逐层聚合与归约）",
        source=TIME,
    )
    z3 = r.zero.ge(3)
    z0 = r.zero.eq(0)
    reps = if_(r.zero.ge(conv(r, "reduce_every_micro_from")), m, 1)
    c = defaultdict(list)
    for g, pre, psi, what, zh in (
        ("grad", "dp", Ref("dense_params_on_rank"), "", ""),
        ("egrad", "edp", Ref("expert_params_on_rank"), "expert ", "专家"),
    ):
        n = r.size[g]
        bucket = d(
            f"{pre}_bucket_params",
            if_(
                conv(r, "dp_bucket_params").gt(0),
                minimum(
                    maximum(conv(r, "dp_bucket_params"), conv(r, "dp_bucket_params_per_dp") * r.dp),
                    psi,
                ),
                psi / ls,
            ),
            f"{what}parameters in one gradient bucket (one collective)",
            f"一个{zh}梯度桶的参数（一次集合通信）",
            unit=PARAMS,
            source="conventions table dp_bucket_params (torch DDP bucket_cap_mb 25; Megatron-LM distributed_data_parallel.py @d98e8a64 max(40,000,000, 1,000,000 × dp) (dp_bucket_params_per_dp); DeepSpeed reduce_bucket_size 5e8; FSDP2: one per layer); expert parameters in buckets of their own over the expert-DP group (Megatron-LM param_and_grad_buffer.py, expert_data_parallel_group)",
        )
        n_b = count(
            f"{pre}_buckets",
            if_(psi.gt(0), if_(r.overlap_grad, ceil(psi / maximum(bucket, 1)), 1), 0),
            f"{what}gradient collectives per reduction",
            f"每次归约的{zh}梯度集合通信次数",
            source="overlap_grad_reduce: one per bucket; off: the whole gradient in one (Megatron-LM sets bucket_size None without overlap_grad_reduce)",
        )
        nb1 = maximum(n_b, 1)

        def call(name: str, nbytes, en: str, zh_: str):
            """One collective of this group's ``nbytes``, keyed ``<pre>_<name>``."""
            return coll(f"{pre}_{name}", g, nbytes, en, zh_)

        grad_bucket, what_b = psi / nb1 * gb, f"an {what}gradient bucket"
        ar = call("all_reduce", grad_bucket, what_b, f"{zh}梯度桶")
        rs = call("reduce_scatter", grad_bucket, what_b, f"{zh}梯度桶")
        ag = call("all_gather", psi / nb1 * wb, f"an {what}parameter bucket", f"{zh}参数桶")
        layer_w, layer_g = psi / ls * wb, psi / ls * gb
        lag = call("layer_all_gather", layer_w, f"a layer's {what}parameters", f"一层{zh}参数")
        lrs = call("layer_reduce_scatter", layer_g, f"a layer's {what}gradients", f"一层{zh}梯度")
        active = all_of(n.gt(1), psi.gt(0))
        one_red = [if_(active, if_(z0, a, b), 0) for a, b in zip(ar, rs)]
        if g == "grad":
            # HSDP: the reduce-scattered shard is all-reduced across the dp/dp_shard replicas
            shard = psi / nb1 / n * gb, "a gradient shard", "梯度分片"
            rar = coll("rep_all_reduce", "rep", *shard)
            layer_shard = psi / ls / n * gb, "a layer's gradient shard", "一层梯度分片"
            lar = coll("rep_layer_all_reduce", "rep", *layer_shard)
            hsdp = all_of(negate(z0), r.size["rep"].gt(1))
            one_red = [x + if_(hsdp, y, 0) for x, y in zip(one_red, rar)]
            lrs = [x + if_(hsdp, y, 0) for x, y in zip(lrs, lar)]
        gathers = all_of(active, negate(z0))
        for i, lat in enumerate(("", "_lat")):
            c["red" + lat].append(n_b * one_red[i])
            c["gat" + lat].append(if_(gathers, n_b * ag[i], 0))
            c["lag" + lat].append(if_(active, lag[i], 0))
            c["lrs" + lat].append(if_(active, lrs[i], 0))
        c["one_red"].append(one_red[0])
        c["one_gat"].append(if_(gathers, ag[0], 0))
        c["layer_w"].append(if_(active, layer_w, 0))
    tot = {k: total_of(v) for k, v in c.items()}
    lag, lrs = tot["lag"], tot["lrs"]

    def per_step(x: str):
        """The step's data-parallel time (``x`` = "") or latency (``x`` = "_lat")."""
        z3_step = m * ls * (2 * tot["lag" + x] + tot["lrs" + x])
        return if_(z3, z3_step, reps * tot["red" + x] + tot["gat" + x])

    raw = d(
        "dp_comm_s",
        per_step(""),
        "data-parallel / ZeRO communication per step",
        "每步数据并行 / ZeRO 通信",
        source="ZeRO-0: an all-reduce per bucket; with dp_shard < dp (HSDP) each reduce-scatter within the shard group is followed by an all-reduce of the shard across the replicas; ZeRO-1/2: a reduce-scatter per bucket (every micro-batch where the convention reduces every micro-batch) and an all-gather per bucket; ZeRO-3: per micro-batch and layer two all-gathers and a reduce-scatter (Rajbhandari et al. 2020 §7; FSDP2 reshard_after_forward); dense parameters over dp·cp, expert parameters over the expert-DP group; each call costed as NCCL runs it",
    )
    raw_lat = per_step("_lat")
    shares = any_of(r.crosses["grad"], r.crosses["egrad"], r.crosses["rep"])
    window = d(
        "micro_batch_nic_free_compute_s",
        maximum(r.t_compute_mb - if_(shares, r.pick_slowest("nic_hidden"), 0), 0),
        "compute of one micro-batch while the NIC is free for the data-parallel collectives",
        "一个 micro-batch 中网卡可供数据并行通信使用的计算时间",
        source="micro_batch_compute_s − the cross-node traffic of other groups hidden behind it, where the data-parallel groups cross nodes too: groups that cross nodes at the same time share the GPU's NIC",
    )
    t_f = window / 3 / ls
    t_b = window * 2 / 3 / ls
    z3_mb = ls * (2 * lag + lrs)
    z3_exposed = if_(
        r.overlap_param,
        _hidden(
            z3_mb, lag + lrs + (ls - 1) * (maximum(lag - t_f, 0) + maximum(lag + lrs - t_b, 0))
        ),
        z3_mb,
    )
    may = all_of(r.overlap_grad, any_of(r.pp.eq(1), conv(r, "pp_dp_overlap").eq(1)))
    red, last = tot["red"], maximum(*c["one_red"])
    red_exposed = if_(may, _hidden(red, last + maximum(red - last - window * 2 / 3, 0)), red)
    gat, first = tot["gat"], maximum(*c["one_gat"])
    gat_exposed = if_(
        r.overlap_param, _hidden(gat, first + maximum(gat - first - window / 3, 0)), gat
    )
    copy_out = d(
        "zero3_gather_copy_s",
        if_(
            all_of(z3, conv(r, "z3_gather_copy_out").eq(1)),
            m * ls * 2 * tot["layer_w"] * 2 / (r.hbm_eff_bw * BYTES_PER_GB),
            0,
        ),
        "ZeRO-3: copying each gathered layer out of the all-gather buffer, per step",
        "ZeRO-3：每步把聚合后的层从 all-gather 缓冲区拷出",
        source="the convention's z3_gather_copy_out (FSDP2: torch/distributed/fsdp/_fully_shard/"
        "_fsdp_collectives.py @010ae4a8 foreach_all_gather_copy_out: the compute stream waits on "
        "the all-gather's event, then torch.split_with_sizes_copy reads and writes every gathered "
        "parameter into its own tensor): micro-batches × layers × 2 gathers (forward, backward) × "
        "the bytes of a layer's all-gather (dense and expert, each where its group has more than "
        "one rank: PyTorch skips the all-gather and its copy-out for a group of one, pull request "
        "160135) × 2 (read and write), at HBM bandwidth, on the "
        "compute stream (not hidden)",
    )
    comm_dp = if_(z3, m * z3_exposed, reps * red_exposed + gat_exposed)
    r.term["dp"] = d(
        "time_dp_s",
        comm_dp + copy_out,
        "data-parallel / ZeRO communication (exposed)",
        "数据并行 / ZeRO 通信（未掩盖）",
        source="overlap_grad_reduce: the reduction hides behind the backward of the micro-batch it follows, but its last bucket; overlap_param_gather: ZeRO-3's gathers prefetched behind the previous layer's forward / backward (the first gather and last reduce-scatter exposed), ZeRO-1/2's behind the forward (the first bucket exposed); the compute slows by "
        + f"{OVERLAP_PROCESSOR_USAGE} of what it hides (Calculon calculon/llm/llm.py, processor_usage); switches off: all of it; and ZeRO-3's copy out of the gather buffer",
    )
    r.dp_latency = d(
        "time_dp_latency_s",
        if_(raw.gt(0), comm_dp * raw_lat / raw, 0),
        "the latency in the exposed data-parallel communication",
        "未掩盖的数据并行通信中的延迟",
        source=NCCL + ": time_dp_s × the collectives' latency ÷ their time",
    )
    r.dp_raw_latency = raw_lat


def _latency_and_bound(reg: Registry, r: Ctx) -> None:
    """The step's communication split into latency and bandwidth, and what binds the step."""
    d = definer(reg, SECONDS)
    m = r.n_micro
    lat = d(
        "time_comm_latency_s",
        m * r.pick_slowest("latency") + r.dp_latency,
        "latency in the exposed communication per step",
        "每步未掩盖通信中的延迟",
        source=NCCL + ": micro-batches × the slowest stage's + the data-parallel's",
    )
    comm = r.term["tp"] + r.term["cp"] + r.term["ep"] + r.term["pp"] + r.term["dp"]
    bw = d(
        "time_comm_bandwidth_s",
        maximum(comm - lat, 0),
        "bandwidth in the exposed communication per step",
        "每步未掩盖通信中的带宽部分",
        source="time_tp_s + time_cp_s + time_ep_s + time_pp_s + time_dp_s − time_comm_latency_s",
    )
    d(
        "collectives_latency_s",
        m * r.pick_slowest("raw_latency") + r.dp_raw_latency,
        "latency of every collective the step runs, hidden or not",
        "每步全部集合通信的延迟（含被掩盖的）",
        source=NCCL + ": calls per layer, micro-batch and step × each call's latency",
    )
    work = r.term["compute"] + r.term["optimizer"] + r.term["offload"]
    top = maximum(work, bw, lat, r.term["bubble"])
    for suffix, names in (
        ("", ("compute", "communication", "latency", "bubble")),
        ("_zh", ("计算", "通信带宽", "通信延迟", "流水线气泡")),
    ):
        d(
            "step_bound" + suffix,
            if_(
                work.ge(top),
                names[0],
                if_(bw.ge(top), names[1], if_(lat.ge(top), names[2], names[3])),
            ),
            "what binds the step",
            "步时的瓶颈",
            unit=TEXT,
            source="the largest of compute (with the optimizer and offload), communication bandwidth, communication latency (time_comm_latency_s) and the pipeline bubble",
        )


# ---- offload -------------------------------------------------------------------------------------
def _offload(reg: Registry, r: Ctx) -> None:
    reg.section = "offload"
    d = definer(reg, SECONDS)
    traffic, flag = partial(d, unit=BYTES), partial(d, unit=BOOL)
    m = r.n_micro
    opt_off = flag(
        "optimizer_offloaded",
        negate(r.in_hbm["m"]),
        "the optimizer runs on the CPU (moments off the GPU)",
        "优化器在 CPU 上运行（动量不在 GPU）",
        source="DeepSpeed ZeRO-Offload / ZeRO-Infinity: the update runs where the moments live (DeepSpeedCPUAdam)",
    )
    opt_params = d(
        "offloaded_optimizer_params",
        if_(opt_off, Ref("master_dense_params_on_rank") + Ref("master_expert_params_on_rank"), 0),
        "parameters the CPU updates per rank",
        "每卡由 CPU 更新的参数",
        unit=PARAMS,
        source=doc("parts-and-groups"),
    )
    gb, wb = r.gbytes, r.wbytes
    weights = r.line_bytes[("weights", "dense")] + r.line_bytes[("weights", "expert")]
    grads = r.line_bytes[("grads", "dense")] + r.line_bytes[("grads", "expert")]
    host_bytes = traffic(
        "host_link_bytes_per_step",
        opt_params * (gb + wb)
        + if_(r.in_hbm["weights"], 0, 2 * m * weights)
        + if_(r.in_hbm["grads"], 0, m * grads),
        "bytes over the host link per step per GPU",
        "每步每卡经主机链路的字节",
        source="ZeRO-Offload (Ren et al. 2021 §4): gradients down and updated weights up; offloaded weights fetched forward and backward each micro-batch; offloaded gradients written each micro-batch",
    )
    host_s = d(
        "host_stream_s",
        host_bytes / (r.host_link * HOST_LINK_EFFICIENCY * BYTES_PER_GB),
        "host-link transfer time per step",
        "每步主机链路传输时间",
        source=f"host_link_bytes_per_step ÷ (host_link_gb_s × {HOST_LINK_EFFICIENCY})",
    )
    nvme_bytes = traffic(
        "nvme_bytes_per_step",
        2 * r.state_nvme + if_(r.location["weights"].eq("nvme"), 2 * (m - 1) * weights, 0),
        "NVMe reads and writes per step per GPU",
        "每步每卡 NVMe 读写字节",
        source="ZeRO-Infinity (Rajbhandari et al. 2021): NVMe-resident states are read and written back every step; NVMe-resident weights read each micro-batch",
    )
    nvme_s = d(
        "nvme_stream_s",
        nvme_bytes * r.gpus_per_node / (r.nvme_bw * BYTES_PER_GB),
        "NVMe transfer time per step (the node's GPUs share the drives)",
        "每步 NVMe 传输时间（节点内 GPU 共享）",
        source="nvme_bytes_per_step × gpus_per_node ÷ nvme_gb_s",
    )
    d(
        "offload_stream_s",
        host_s + nvme_s,
        "time to stream offloaded state each step",
        "每步传输卸载状态的时间",
        source="host link at its speed, NVMe at the NVMe's (host_stream_s + nvme_stream_s)",
    )
    host_bytes_node = opt_params * r.gpus_per_node * CPU_ADAM_HOST_BYTES_PER_PARAM
    cpu = d(
        "cpu_optimizer_s",
        host_bytes_node / (r.host_mem_bw * BYTES_PER_GB),
        "CPU Adam update per step (the node's ranks share the host)",
        "每步 CPU Adam 更新（节点内共享主机）",
        source=f"{CPU_ADAM_HOST_BYTES_PER_PARAM} bytes of host-memory bandwidth per parameter: DeepSpeed docs/_tutorials/zero-offload.md log (optimizer_step 6.2 s, 10.3B parameters, DGX-2 256 GB/s); DeepSpeed PR #735: CPU-Adam 8.2 s for 11.6B",
    )
    r.offload_s = r.term["offload"] = d(
        "time_offload_s",
        host_s + nvme_s + cpu,
        "offload per step",
        "每步卸载",
        source="host and NVMe streams and the CPU update, after the backward (ZeRO-Offload without delayed parameter update)",
    )
    flag(
        "nvme_fits",
        r.nvme_node.le(r.nvme_tb * 10**12),
        "NVMe holds the offloaded state",
        "NVMe 放得下",
        source="nvme_bytes_per_node ≤ nvme_tb",
    )


# ---- the total and what it predicts ----------------------------------------------------------------
def _total(reg: Registry, r: Ctx) -> None:
    reg.section = "time"
    d = definer(reg, RATIO)
    r.step_time = d(
        "step_time_s",
        total_of([r.term[k] for k in TERM_KEYS]),
        "predicted step time",
        "预测步时",
        unit=SECONDS,
        source=TIME + ": the sum of the terms",
    )
    for suffix, sep, names in (
        ("", ", ", {k: k for k in TERM_KEYS}),
        ("_zh", "，", {k: short for k, _en, _zh, short in TERMS}),
    ):
        parts = ((r.term[k].gt(0), (names[k], " ", sig_text(r.term[k]), " s")) for k in TERM_KEYS)
        d(
            "step_time_terms" + suffix,
            joined(parts, sep),
            "step time by term",
            "步时分项",
            unit=TEXT,
            source="the terms of step_time_s that are not zero",
        )
    # the terms with the exposed communication split into latency and bandwidth, and what binds
    lat, bw = Ref("time_comm_latency_s"), Ref("time_comm_bandwidth_s")
    for suffix, words in (
        ("", ("; communication: latency ", " s, bandwidth ", " s", "; bound: ")),
        ("_zh", ("；通信：延迟 ", " s，带宽 ", " s", "；瓶颈：")),
    ):
        split = concat(words[0], sig_text(lat), words[1], sig_text(bw), words[2])
        d(
            "step_time_terms_bound" + suffix,
            concat(
                Ref("step_time_terms" + suffix),
                if_((lat + bw).gt(0), split, ""),
                if_(IsBlank(Ref("step_bound")), "", concat(words[3], Ref("step_bound" + suffix))),
            ),
            "step time by term, and what binds",
            "步时分项与瓶颈",
            unit=TEXT,
            source="step_time_terms, the exposed communication as time_comm_latency_s and "
            "time_comm_bandwidth_s (where there is any), and step_bound",
        )
    tps = d(
        "predicted_tokens_per_s_per_gpu",
        r.tokens_per_step / (r.step_time * r.gpus),
        "predicted tokens/s per GPU",
        "预测每卡吞吐",
        unit=TOKENS_PER_S,
        source="tokens per step ÷ (step time × GPUs)",
    )
    r.predicted_mfu = d(
        "predicted_mfu",
        tps * r.fpt / r.bf16_flops,
        "predicted MFU (of the BF16 peak)",
        "预测 MFU（相对 BF16 峰值）",
        source="tokens/s per GPU × FLOPs per token ÷ BF16 peak",
    )
    d(
        "predicted_hfu",
        r.predicted_mfu * r.hfu_per_mfu,
        "predicted HFU (recompute counted)",
        "预测 HFU（含重计算）",
        source="predicted_mfu × hfu_per_mfu",
    )
    has_off = (r.state_host + r.state_nvme).gt(0)
    d(
        "bandwidth_gate",
        if_(has_off, r.offload_s.le(r.step_budget), True),
        "offloaded states stream and update within the step budget",
        "卸载状态可在每步预算内传输并更新",
        unit=BOOL,
        source=doc("gates") + " (bandwidth gate): offload per step ≤ seconds per step allowed",
    )
