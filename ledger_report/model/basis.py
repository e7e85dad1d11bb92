"""The stated basis of each item outside the state ledger, in English and Chinese."""

from __future__ import annotations

from typing import Any, Callable, Mapping

V = Mapping[str, Any]


def _act_en(v: V) -> str:
    mode = v["recompute"]
    sp = " ÷ tp (sequence parallel)" if v["sequence_parallel"] else ""
    if mode == "full":
        body = f"full recompute keeps each layer's input, 2·s·b·h bytes{sp}"
    else:
        s2 = "" if v["flash_attention"] or mode == "selective" else " + 5·heads·s²·b/tp (no flash attention)"
        body = (f"Korthikanti et al. 2022 Table 2, {mode} recompute: per layer 10·s·b·h{sp} + "
                f"(4·heads·d + 4·kv·d)·s·b/tp + {'6' if v['glu'] else '4'}·s·b·ffn/tp{s2}")
    return (f"{body}; s = seq/cp; the {v['reported_stage']} stage holds "
            f"{v['first_stage_in_flight'] if v['report_first_stage'] else 1} micro-batch(es) in flight")


def _act_zh(v: V) -> str:
    mode = {"none": "不重计算", "selective": "选择性重计算", "full": "全重计算"}[v["recompute"]]
    sp = " ÷ tp（序列并行）" if v["sequence_parallel"] else ""
    if v["recompute"] == "full":
        body = f"全重计算只保留每层输入 2·s·b·h 字节{sp}"
    else:
        s2 = "" if v["flash_attention"] or v["recompute"] == "selective" else " + 5·heads·s²·b/tp（未用 FlashAttention）"
        body = (f"Korthikanti 等 2022 表 2，{mode}：每层 10·s·b·h{sp} + (4·heads·d + 4·kv·d)·s·b/tp + "
                f"{'6' if v['glu'] else '4'}·s·b·ffn/tp{s2}")
    n = v["first_stage_in_flight"] if v["report_first_stage"] else 1
    return f"{body}；s = seq/cp；报告段同时在途 {n} 个 micro-batch"


BASIS: dict[str, dict[str, Callable[[V], str]]] = {
    "activations": {"en": _act_en, "zh": _act_zh},
    "logits": {
        "en": lambda v: f"s·b·(vocab/tp)·{v['logits_dtype']} bytes ÷ loss_chunks ({v['loss_chunks']}), one tensor on the stage holding the output head",
        "zh": lambda v: f"s·b·(vocab/tp)·{v['logits_dtype']} 字节 ÷ loss 分块数（{v['loss_chunks']}），只在持有输出头的流水段",
    },
    "loss_working_set": {
        "en": lambda v: "cross-entropy in fp32: softmax and its gradient, s·b·(vocab/tp)·4 B ÷ loss_chunks",
        "zh": lambda v: "fp32 交叉熵：softmax 及其梯度，s·b·(vocab/tp)·4 B ÷ 分块数",
    },
    "recompute_working_set": {
        "en": lambda v: "full recompute rebuilds one layer's activations during backward" if v["recompute"] == "full" else "none without full recompute",
        "zh": lambda v: "全重计算在反向时重建一层的激活" if v["recompute"] == "full" else "未用全重计算，无此项",
    },
    "zero3_gather": {
        "en": lambda v: "ZeRO-3 gathers the largest weight matrix with its gradient, (weight + grad bytes) × largest/tp, as DeepSpeed's estimate_zero3_model_states_mem_needs (4 × largest layer)" if v["zero"] == 3 else "none below ZeRO-3",
        "zh": lambda v: "ZeRO-3 需聚合最大权重矩阵及其梯度：(权重 + 梯度字节) × 最大矩阵/tp，同 DeepSpeed 估算（4 × 最大层）" if v["zero"] == 3 else "ZeRO-3 以下无此项",
    },
    "comm_buffers": {
        "en": lambda v: "about 0.5 GB per NCCL communicator (Fujii et al. 2024)" + {
            "deepspeed": " + reduce and all-gather buckets of 5e8 elements (DeepSpeed defaults)",
            "megatron": "; Megatron's buckets are views of its grad buffer (no extra)",
            "generic": " + two 25 MiB DDP buckets (PyTorch default)",
        }[v["framework"]],
        "zh": lambda v: "每个 NCCL 通信组约 0.5 GB（Fujii 等 2024）" + {
            "deepspeed": " + 5e8 元素的 reduce 与 all-gather 桶（DeepSpeed 默认）",
            "megatron": "；Megatron 的桶是梯度 buffer 的视图（不另占）",
            "generic": " + 两个 25 MiB DDP 桶（PyTorch 默认）",
        }[v["framework"]],
    },
    "runtime_reserve": {
        "en": lambda v: "CUDA context 0.5 GB + 5 % allocator fragmentation of everything above (Megatron-LM's 1.05 factor)",
        "zh": lambda v: "CUDA 上下文 0.5 GB + 以上各项 5 % 的分配器碎片（同 Megatron-LM 的 1.05 系数）",
    },
    "first_step_optimizer": {
        "en": lambda v: "fused optimizers allocate master/m/v at the first step: the real peak is at step 1, not after backward (seed 000's incident); already in the state, adds nothing",
        "zh": lambda v: "融合优化器在第一次 step 才分配主权重与 m/v：真正峰值在第 1 步而不是反向结束时（种子 000 的事故）；已计入状态，不再重复相加",
    },
}
