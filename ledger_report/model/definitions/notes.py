"""The sentences a report states as its assumptions, with the row's numbers, in English and Chinese.

Each note is three quantities: ``note_<x>`` (English), ``note_<x>_zh`` and ``note_<x>_shown``
(whether it applies to the row).  The report lists the notes that apply, in this order.
"""

from __future__ import annotations

from functools import partial

from ..expr import Col, IsBlank, Ref, all_of, any_of, concat, floor, gb_text, grouped, if_, negate
from ..registry import BOOL, TEXT, Registry
from .common import Ctx, conv, definer, doc, sentence


def _note(reg: Registry, key: str, shown, en, zh, source: str, *values) -> None:
    """The note ``key`` in English and Chinese (with ``values``: two templates they fill in the
    same order), and whether it is shown."""
    d = definer(reg, TEXT, source)
    if values:
        en, zh = sentence(en, *values), sentence(zh, *values)
    for suffix, text, en_label, zh_label in (
        ("", en, f"note: {key}", f"说明：{key}"),
        ("_zh", zh, f"note: {key} (zh)", f"说明：{key}（中文）"),
    ):
        d(f"note_{key}{suffix}", text, en_label, zh_label)
    d(f"note_{key}_shown", shown, f"note shown: {key}", f"显示说明：{key}", unit=BOOL)


def define(reg: Registry, r: Ctx) -> None:
    reg.section = "notes"
    d, note = definer(reg, BOOL), partial(_note, reg)
    r.has_offload = d(
        "has_offload",
        (r.state_host + r.state_nvme).gt(0),
        "some state is offloaded",
        "有卸载的状态",
        source=doc("state-ledger"),
    )
    d(
        "has_measured_peak",
        negate(IsBlank(r.measured_gb)),
        "a measured peak is given",
        "给出实测峰值",
        source=doc("peak"),
    )

    note(
        "units",
        True,
        "GB = 10^9 bytes and GiB = 2^30 bytes; state lines are per rank on the reported pipeline stage.",
        "GB = 10^9 字节，GiB = 2^30 字节；状态行均为报告流水段上的每卡数值。",
        doc("units"),
    )
    conv_en, conv_zh = concat(conv(r, "en"), "."), concat(conv(r, "zh"), "。")
    note("convention", True, conv_en, conv_zh, doc("conventions"))
    biased = any_of(
        *(Ref(k) for k in ("qkv_bias", "linear_bias", "router_bias", "attention_sinks"))
    )
    padded = negate(IsBlank(Col("vocab_multiple")))
    note(
        "counted",
        r.has_arch,
        sentence(
            "Parameters counted from the architecture layer by layer as the reference code builds "
            "it: {}, no position embeddings, vocabulary {}{}.",
            if_(biased, "biases and sinks as the row gives them", "no linear biases"),
            if_(padded, concat("padded to ", grouped(r.V)), "unpadded"),
            if_(
                r.has_mtp,
                sentence(
                    "; the total includes {} parameters of MTP modules, the active count leaves "
                    "them out",
                    grouped(r.params_mtp),
                ),
                "",
            ),
        ),
        sentence(
            "参数按参考实现逐层由结构计算：{}、无位置嵌入、词表{}{}。",
            if_(biased, "偏置与 sink 按本行给出", "无线性层偏置"),
            if_(padded, concat("填充到 ", grouped(r.V)), "不填充"),
            if_(
                r.has_mtp,
                sentence("；总数含 MTP 模块 {} 参数，激活参数不含", grouped(r.params_mtp)),
                "",
            ),
        ),
        doc("parameters"),
    )
    note(
        "model",
        negate(IsBlank(Col("model"))),
        "Architecture columns the row leaves empty come from {}; the columns the row gives win.",
        "本行留空的结构列取自 {}；本行给出的列优先。",
        doc("parameters"),
        Col("model"),
    )
    note(
        "given",
        negate(r.has_arch),
        "Parameter counts given directly: figures that need architecture columns the row does not give are blank.",
        "直接给出参数量：需要而未给出结构列的数值留空。",
        doc("partial-architectures"),
    )
    note(
        "solved",
        all_of(IsBlank(Col("params_expert")), negate(IsBlank(Col("params_per_rank"))), r.ep.gt(1)),
        "Expert split solved from params_per_rank: expert {} params, non-expert {} params.",
        "专家拆分由每卡参数反推：专家 {} 参数，非专家 {} 参数。",
        doc("parts-and-groups"),
        grouped(r.expert),
        grouped(r.dense),
    )
    note(
        "expert_dp",
        r.has_experts,
        "Expert states shard over expert-DP = dp·cp·tp/(ep·etp) = {}, not over dp·cp = {}.",
        "专家状态沿专家 DP 组 dp·cp·tp/(ep·etp) = {} 分片，而不是 dp·cp = {}。",
        doc("parts-and-groups"),
        r.group["expert"],
        r.group["dense"],
    )
    note(
        "balance",
        r.has_experts,
        "Every rank of the expert-parallel group is assumed to hold an equal share of experts and routed tokens (no routing imbalance).",
        "假设专家并行组内各卡的专家与路由 token 均匀（不建模路由不均）。",
        doc("parts-and-groups"),
    )
    stage_zh = if_(r.pick_first, "首", "末")
    note(
        "pipeline",
        r.pp.gt(1),
        sentence(
            "Pipeline: the {} stage is reported (the more loaded); the first stage holds the "
            "embedding, the last the output head and final norm.",
            if_(r.pick_first, "first", "last"),
        ),
        sentence(
            "流水线：报告负载更大的{}段；首段持有输入嵌入，末段持有输出头与末层 norm。", stage_zh
        ),
        doc("pipeline-stages"),
    )
    unpredicted = IsBlank(r.predicted_mfu)
    mfu_t, predicted_t = _round(r.mfu, 3), _round(r.predicted_mfu, 3)
    step_t = _round(r.step_time, 2)
    note(
        "mfu",
        r.mfu_given,
        sentence(
            "Days and cost from the measured MFU {}{}. FLOPs per token: 6 × (active parameters − "
            "untied input embedding) + causal attention.",
            mfu_t,
            if_(
                unpredicted,
                "; the step-time model needs the architecture and the batch to predict one",
                sentence("; the step-time model predicts {} (a step of {} s)", predicted_t, step_t),
            ),
        ),
        sentence(
            "天数与成本按实测 MFU {}{}。每 token FLOPs：6 × (激活参数 − 不共享的输入嵌入) + "
            "因果注意力。",
            mfu_t,
            if_(
                unpredicted,
                "；步时模型需要结构与 batch 才能预测",
                sentence("；步时模型预测 {}（每步 {} 秒）", predicted_t, step_t),
            ),
        ),
        doc("step-time"),
    )
    note(
        "predicted",
        all_of(negate(r.mfu_given), negate(IsBlank(r.step_time))),
        "Days and cost from the predicted step time ({} s, MFU {}): compute at the catalogue's "
        "sustained GEMM efficiency, the exposed communication of each parallel group, the "
        "pipeline bubble, the optimizer step and offload traffic.",
        "天数与成本按预测步时（{} 秒，MFU {}）：按目录中的持续 GEMM 效率计算，"
        "加上各并行组未被掩盖的通信、流水气泡、优化器 step 与卸载传输。",
        doc("step-time"),
        step_t,
        predicted_t,
    )
    note(
        "fp8",
        r.fp8,
        "FP8: the layers' GEMMs run at the FP8 peak; attention, the output layer, norms and the optimizer stay in bf16/fp32.",
        "FP8：各层 GEMM 按 FP8 峰值计算；注意力、输出层、归一化与优化器仍为 bf16/fp32。",
        doc("step-time"),
    )
    note(
        "placement",
        r.any_cross,
        sentence(
            "Placement tp innermost, then cp, ep, dp, pp, in nodes of {} GPUs: {}; a group across "
            "nodes runs at the network's bandwidth.",
            r.gpus_per_node,
            r.placement_text[""],
        ),
        sentence(
            "放置顺序 tp 最内，其次 cp、ep、dp、pp，每节点 {} 卡：{}；跨节点的组按网络带宽计。",
            r.gpus_per_node,
            r.placement_text["_zh"],
        ),
        doc("step-time"),
    )
    note(
        "full_recompute",
        r.recompute.eq("full"),
        "Full recompute runs the layers' forward twice and the output head's once: hardware FLOPs "
        "are the model FLOPs plus the layers' forward, so HFU is at most 4/3 × MFU.",
        "全重计算把各层前向算两遍、输出头只算一遍：硬件 FLOPs 为模型 FLOPs 加上各层前向，"
        "HFU 至多为 4/3 × MFU。",
        doc("compute-floor"),
    )
    note(
        "offload",
        r.has_offload,
        "Offloaded states leave the HBM sum; each step streams them over the host link (host memory) or at the NVMe's bandwidth (NVMe), and a CPU optimizer runs at the host's memory bandwidth; the bandwidth gate asks that this fits the step budget.",
        "卸载的状态不计入显存；每步经主机链路（主机内存）或按 NVMe 带宽（NVMe）传输，CPU 优化器按主机内存带宽计时；带宽门要求其不超过每步预算。",
        doc("state-ledger"),
    )
    lazy = r.steady_minus_first
    peak_t, lazy_t, first_t = gb_text(r.allocated), gb_text(lazy), gb_text(r.first_step)
    note(
        "first_step",
        lazy.gt(0),
        sentence(
            "Optimizer states are allocated at the first step: the peak of step 1 is {}, {} above "
            "what step 0 shows ({}), so a run that survives its first forward and backward can "
            "still run out of memory at its first optimizer step.",
            peak_t,
            lazy_t,
            first_t,
        ),
        sentence(
            "优化器状态在第一次 step 才分配：第 1 步的峰值为 {}，比第 0 步看到的（{}）高 {}；"
            "前向与反向顺利并不代表第一次 optimizer step 不会显存溢出。",
            peak_t,
            first_t,
            lazy_t,
        ),
        doc("phases"),
    )
    note(
        "counter",
        negate(IsBlank(r.measured_gb)),
        sentence(
            "The measured peak counts {}; it is compared with the estimate on the same counter.",
            r.counter,
        ),
        sentence("实测峰值的口径为{}，与同口径的估算对账。", r.counter_zh),
        doc("counters"),
    )
    note(
        "user_gpu",
        negate(r.gpu_known),
        "User-described accelerator {}: {} of HBM and {} dense TFLOP/s as the row gives them; "
        "bandwidths, node size and matmul efficiency the row leaves empty are a plain 8-GPU PCIe "
        "server's.",
        "用户描述的加速卡 {}：显存 {}、稠密算力 {} TFLOP/s 取自该行；该行未给出的带宽、"
        "节点规模与矩阵乘效率按普通 8 卡 PCIe 服务器计。",
        doc("gates"),
        r.gpu,
        gb_text(r.hbm_bytes),
        r.peak_tflops,
    )
    note(
        "no_tokens",
        IsBlank(r.tokens),
        "No tokens given: the compute floor is blank.",
        "未给出训练 token 数：算力下界留空。",
        doc("compute-floor"),
    )


def _round(x, digits: int):
    """``x`` rounded to ``digits`` decimals, for a sentence (FLOOR(x·10^d + 0.5) / 10^d)."""
    return floor(x * 10**digits + 0.5) / 10**digits
