"""The compute floor: FLOPs, steps, the time each step may take, and the gates on GPU count."""

from __future__ import annotations

from ..expr import Col, IsBlank, all_of, any_of, ceil, default, floor, if_, negate
from ..registry import BOOL, COUNT, DAYS, FLOPS, HOURS, MONEY, PARAMS, RATIO, SECONDS, TEXT, TOKENS, TOKENS_PER_S, Registry
from .common import (
    COLUMN,
    FLOPS_PER_TFLOP,
    FULL_RECOMPUTE_HW_FACTOR,
    MOE35,
    QWEN8B,
    SECONDS_PER_DAY,
    TRAIN_FLOPS_PER_PARAM_TOKEN,
    Ctx,
    doc,
)


def define(reg: Registry, r: Ctx) -> None:
    reg.section = "compute"
    d = reg.define
    r.gpus = gpus = d("gpus", r.dp * r.tp * r.pp * r.cp, COUNT, "GPUs of this configuration dp·tp·pp·cp", "本配置 GPU 数 dp·tp·pp·cp", doc("compute-floor"))
    emb_sub = d("flops_embedding_params", if_(any_of(IsBlank(r.V), IsBlank(r.h)), 0, if_(r.tied, 0, r.V * r.h)), PARAMS, "input embedding (no matmul FLOPs)", "输入嵌入（无矩阵乘 FLOPs）", doc("compute-floor"))
    n_attn = d("attention_layers", if_(IsBlank(r.L), 0, floor(r.L / r.fae)), COUNT, "softmax-attention layers", "全注意力层数", doc("parameters"))
    s = r.seq_len
    # training FLOPs per token, per layer and per key attended: 3 × (2·heads·dq for Q·Kᵀ + 2·heads·dv for the values)
    per_key = d(
        "attention_flops_per_key", if_(r.mla, 3 * r.a * (r.dq + r.dv), TRAIN_FLOPS_PER_PARAM_TOKEN * r.a * r.hd), FLOPS,
        "attention FLOPs per token, layer and key pair", "每 token 每层每个 key 的注意力 FLOPs",
        doc("compute-floor") + ": 3 × (2·heads·d for Q·Kᵀ + 2·heads·d for softmax·V), forward and backward; MLA: d = nope + rope for Q·Kᵀ, v_head_dim for V",
    )
    local_keys = d(
        "local_keys_per_token", if_(s.le(r.window), s / 2, r.window - r.window * r.window / (2 * s)), TOKENS,
        "keys a sliding-window layer attends to, averaged over the sequence", "滑动窗口层每 token 平均关注的 key 数",
        doc("compute-floor") + ": min(window, position) averaged over a causal sequence: s/2 when s ≤ window, else window − window²/(2s) (about the window)",
    )
    r.attn_flops = attn_flops = d(
        "attention_flops_per_token",
        if_(any_of(IsBlank(r.L), IsBlank(r.a), IsBlank(r.h)), 0,
            if_(IsBlank(r.window), per_key * n_attn * s, per_key * (r.n_global * s + r.n_local * 2 * local_keys))),
        FLOPS, "attention FLOPs per token 6·layers·seq·heads·d", "每 token 注意力 FLOPs",
        doc("compute-floor") + " (causal: half of 12·L·s·d; a sliding-window layer attends to about the window instead of s/2)",
    )
    nk, nv, dk, dvl = r.lin_dims
    lin_flops = d(
        "linear_attention_flops_per_token",
        if_(all_of(r.has_arch, r.gdn), 3 * 6 * r.n_lin * nv * dk * dvl, 0),
        FLOPS, "linear-attention FLOPs per token (constant in the sequence)", "每 token 线性注意力 FLOPs（与序列长度无关）",
        "Gated DeltaNet recurrence (Yang et al. 2024, arXiv 2412.06464): per value head and token the state read S·k, the rank-one delta update and the read-out S·q, "
        "2·dk·dv each, forward; × 3 for training; chunked kernels add a small intra-chunk term",
    )
    mtp_flops = d(
        "mtp_flops_per_token",
        if_(r.has_mtp,
            r.mtp * (TRAIN_FLOPS_PER_PARAM_TOKEN * (r.mtp_layer_dense_p + if_(r.E.gt(0), r.mtp_layer_expert_p * r.topk / r.E, 0) + r.V * r.h) + per_key * s),
            0),
        FLOPS, "MTP-module FLOPs per token (its layer, eh_proj and the shared output head)", "每 token MTP 模块 FLOPs（其一层、eh_proj 与共享输出头）",
        "DeepSeek-V3 technical report arXiv 2412.19437 §2.2: each MTP module runs one more transformer layer and the shared output head on every token; "
        "Megatron-LM megatron/training/training.py num_floating_point_operations (mtp_num_layers)",
    )
    r.fpt = fpt = d(
        "flops_per_token",
        TRAIN_FLOPS_PER_PARAM_TOKEN * (r.active - emb_sub) + attn_flops + lin_flops + mtp_flops,
        FLOPS, "FLOPs per token", "每 token FLOPs", doc("compute-floor") + "; " + QWEN8B + ": 52.7 GFLOPs",
    )
    r.total_flops = total_flops = d("total_flops", fpt * r.tokens, FLOPS, "training FLOPs", "训练总 FLOPs", QWEN8B + ": 5.27e21")
    r.tokens_per_step = tps = d("tokens_per_step", r.global_batch * r.seq_len, TOKENS, "tokens per step", "每步 token", QWEN8B + ": 384 × 8192")
    r.steps = steps = d("steps", ceil(r.tokens / tps), COUNT, "steps", "步数", QWEN8B + ": 31,790")
    r.train_s = train_s = d("train_window_s", (r.days - r.reserve) * SECONDS_PER_DAY, SECONDS, "training window", "训练窗口", "(days − reserve_days) × 86400")
    r.step_budget = d("step_budget_s", train_s / steps, SECONDS, "seconds per step allowed", "每步时间预算", QWEN8B + ": 67.9 s")
    d("required_tokens_per_s", r.tokens / train_s, TOKENS_PER_S, "tokens/s needed", "所需吞吐", QWEN8B + ": 46,300 tokens/s")


def costs(reg: Registry, r: Ctx) -> None:
    """Days, GPU-hours and cost at the MFU that decides: the row's measured mfu where given, else the
    step-time model's prediction (definitions/time.py); the prediction stands beside a given mfu."""
    reg.section = "compute"
    d = reg.define
    fpt, attn_flops, total_flops, train_s, gpus = r.fpt, r.attn_flops, r.total_flops, r.train_s, r.gpus
    r.mfu_given = given = d("mfu_given", negate(IsBlank(Col("mfu"))), BOOL, "a measured mfu is given", "给出实测 MFU", COLUMN)
    r.mfu = d("mfu", default("mfu", r.predicted_mfu), RATIO, "MFU that decides (measured, else predicted)", "决定天数的 MFU（实测，否则预测）",
              COLUMN + "; empty: predicted_mfu (" + doc("step-time") + ")")
    d("mfu_source", if_(given, "measured", "predicted"), TEXT, "where the deciding MFU comes from", "MFU 的来源", doc("step-time"))
    d("mfu_difference", r.predicted_mfu - Col("mfu"), RATIO, "predicted MFU − measured MFU", "预测 MFU − 实测 MFU", doc("step-time"))
    d(
        "hfu",
        r.mfu * if_(r.recompute.eq("full"), FULL_RECOMPUTE_HW_FACTOR,
                    if_(r.recompute.eq("selective"), (fpt + attn_flops / 3) / fpt, 1)),
        RATIO, "hardware FLOPs utilisation", "硬件算力利用率 HFU",
        MOE35 + ": full recompute runs the forward again (8/6); selective recomputes the attention core forward",
    )
    eff_flops = d("effective_flops_per_gpu", r.peak_tflops * FLOPS_PER_TFLOP * r.mfu, FLOPS, "useful FLOP/s per GPU peak × mfu", "每卡有效 FLOP/s", "peak × mfu (the measured mfu, else the predicted one)")
    d("tokens_per_s_per_gpu", eff_flops / fpt, TOKENS_PER_S, "tokens/s per GPU", "每卡吞吐", QWEN8B + ": 7,507 tokens/s")
    r.days_on_config = days_on = d("days_on_config", total_flops / (gpus * eff_flops) / SECONDS_PER_DAY, DAYS, "days on this configuration's GPUs", "本配置所需天数", QWEN8B + ": 77 days on 2 GPUs")
    mgc = d("min_gpus_compute", ceil(total_flops / (eff_flops * train_s)), COUNT, "minimum GPUs for the deadline", "满足期限的最少 GPU", doc("gates") + " (deadline gate)")
    mgm = d("min_gpus_memory", ceil(r.logical_hbm / r.hbm_bytes), COUNT, "minimum GPUs to hold the state", "装下状态的最少 GPU", doc("gates") + " (memory gate); " + QWEN8B + ": 2 × 80 GB")
    d("binding_gate", if_(mgm.gt(mgc), "memory", "compute"), TEXT, "binding gate", "先撞的门", doc("gates"))
    r.gpu_hours = gh = d("gpu_hours", total_flops / eff_flops / 3600, HOURS, "GPU-hours", "GPU 小时", doc("compute-floor"))
    d("cost", gh * r.price, MONEY, "cost", "成本", "GPU-hours × price")
