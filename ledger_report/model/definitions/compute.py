"""The compute floor: FLOPs, steps, the time each step may take, and the gates on GPU count."""

from __future__ import annotations

from ..expr import (
    Col,
    IsBlank,
    Ref,
    all_of,
    any_of,
    ceil,
    floor,
    gb_text,
    gcd,
    grouped,
    if_,
    negate,
    smallest_divisor,
    total_of,
)
from ..registry import (
    BOOL,
    BYTES,
    COUNT,
    DAYS,
    FLOPS,
    HOURS,
    MONEY,
    PARAMS,
    RATIO,
    SECONDS,
    TEXT,
    TOKENS,
    TOKENS_PER_S,
    Registry,
)
from .common import (
    COLUMN,
    FLOPS_PER_TFLOP,
    QWEN8B,
    SECONDS_PER_DAY,
    TRAIN_FLOPS_PER_PARAM_TOKEN,
    Ctx,
    column_definer,
    definer,
    doc,
    sentence,
)

FLOOR_DOC = doc("compute-floor")
GATE_DOC = doc("gates")


def define(reg: Registry, r: Ctx) -> None:
    reg.section = "compute"
    count = definer(reg, COUNT, FLOOR_DOC)
    params = definer(reg, PARAMS, FLOOR_DOC)
    flops = definer(reg, FLOPS, FLOOR_DOC)
    r.gpus = count(
        "gpus",
        r.dp * r.tp * r.pp * r.cp,
        "GPUs of this configuration dp·tp·pp·cp",
        "本配置 GPU 数 dp·tp·pp·cp",
    )
    emb_sub = params(
        "flops_embedding_params",
        if_(any_of(IsBlank(r.V), IsBlank(r.h)), 0, if_(r.tied, 0, r.V * r.h)),
        "input embedding (no matmul FLOPs)",
        "输入嵌入（无矩阵乘 FLOPs）",
    )
    active_card = params(
        "params_active_card",
        r.active - emb_sub,
        "active parameters per token, as model cards count them (without the input embedding)",
        "每 token 激活参数，按模型卡口径（不含输入嵌入）",
        source='gpt-oss model card (arXiv 2508.10925) Table 1: "Unembedding parameters are counted '
        'towards active, but not embeddings" (gpt-oss-120b 5.13B active; counting the embedding '
        "5.71 B); Kimi K2 (github.com/MoonshotAI/Kimi-K2 README): 32B activated (31.7 B without "
        "the embedding, 32.9 B with it); DeepSeek-V3 README_WEIGHTS.md: 36.7B activated (36.6 B "
        "without, 37.6 B with); a tied embedding is the output head's matrix and stays counted; "
        "the matmul parameters of the FLOPs per token (" + FLOOR_DOC + ")",
    )
    n_attn = count(
        "attention_layers",
        if_(IsBlank(r.L), 0, floor(r.L / r.fae)),
        "softmax-attention layers",
        "全注意力层数",
        source=doc("parameters"),
    )
    s = r.seq_len
    per_key = flops(
        "attention_flops_per_key",
        if_(r.mla, 3 * r.a * (r.dq + r.dv), TRAIN_FLOPS_PER_PARAM_TOKEN * r.a * r.hd),
        "attention FLOPs per token, layer and key pair",
        "每 token 每层每个 key 的注意力 FLOPs",
        source=FLOOR_DOC
        + ": 3 × (2·heads·d for Q·Kᵀ + 2·heads·d for softmax·V), forward and backward; MLA: d = nope + rope for Q·Kᵀ, v_head_dim for V",
    )
    local_keys = flops(
        "local_keys_per_token",
        if_(s.le(r.window), s / 2, r.window - r.window * r.window / (2 * s)),
        "keys a sliding-window layer attends to, averaged over the sequence",
        "滑动窗口层每 token 平均关注的 key 数",
        unit=TOKENS,
        source=FLOOR_DOC
        + ": min(window, position) averaged over a causal sequence: s/2 when s ≤ window, else window − window²/(2s) (about the window)",
    )
    r.attn_flops = attn_flops = flops(
        "attention_flops_per_token",
        if_(
            any_of(IsBlank(r.L), IsBlank(r.a), IsBlank(r.h)),
            0,
            if_(
                IsBlank(r.window),
                per_key * n_attn * s,
                per_key * (r.n_global * s + r.n_local * 2 * local_keys),
            ),
        ),
        "attention FLOPs per token 6·layers·seq·heads·d",
        "每 token 注意力 FLOPs",
        source=FLOOR_DOC
        + " (causal: half of 12·L·s·d; a sliding-window layer attends to about the window instead of s/2)",
    )
    _, nv, dk, dvl = r.lin_dims
    lin_flops = flops(
        "linear_attention_flops_per_token",
        if_(all_of(r.has_arch, r.gdn), 3 * 6 * r.n_lin * nv * dk * dvl, 0),
        "linear-attention FLOPs per token (constant in the sequence)",
        "每 token 线性注意力 FLOPs（与序列长度无关）",
        source="Gated DeltaNet recurrence (Yang et al. 2024, arXiv 2412.06464): per value head and token the state read S·k, the rank-one delta update and the read-out S·q, "
        "2·dk·dv each, forward; × 3 for training; chunked kernels add a small intra-chunk term",
    )
    mtp_layer_p = r.mtp_layer_dense_p + if_(r.E.gt(0), r.mtp_layer_expert_p * r.topk / r.E, 0)
    mtp_flops = flops(
        "mtp_flops_per_token",
        if_(
            r.has_mtp,
            r.mtp * (TRAIN_FLOPS_PER_PARAM_TOKEN * (mtp_layer_p + r.V * r.h) + per_key * s),
            0,
        ),
        "MTP-module FLOPs per token (its layer, eh_proj and the shared output head)",
        "每 token MTP 模块 FLOPs（其一层、eh_proj 与共享输出头）",
        source="DeepSeek-V3 technical report arXiv 2412.19437 §2.2: each MTP module runs one more transformer layer and the shared output head on every token; "
        "Megatron-LM megatron/training/training.py num_floating_point_operations (mtp_num_layers)",
    )
    r.fpt = fpt = flops(
        "flops_per_token",
        TRAIN_FLOPS_PER_PARAM_TOKEN * active_card + attn_flops + lin_flops + mtp_flops,
        "FLOPs per token",
        "每 token FLOPs",
        source=FLOOR_DOC + "; " + QWEN8B + ": 52.7 GFLOPs",
    )
    r.total_flops = flops(
        "total_flops", fpt * r.tokens, "training FLOPs", "训练总 FLOPs", source=QWEN8B + ": 5.27e21"
    )
    d = reg.define
    r.tokens_per_step = tps = d(
        "tokens_per_step",
        r.global_batch * s,
        TOKENS,
        "tokens per step",
        "每步 token",
        QWEN8B + ": 384 × 8192",
    )
    steps = d("steps", ceil(r.tokens / tps), COUNT, "steps", "步数", QWEN8B + ": 31,790")
    r.train_s = train_s = d(
        "train_window_s",
        (r.days - r.reserve) * SECONDS_PER_DAY,
        SECONDS,
        "training window",
        "训练窗口",
        "(days − reserve_days) × 86400",
    )
    r.step_budget = d(
        "step_budget_s",
        train_s / steps,
        SECONDS,
        "seconds per step allowed",
        "每步时间预算",
        QWEN8B + ": 67.9 s",
    )
    d(
        "required_tokens_per_s",
        r.tokens / train_s,
        TOKENS_PER_S,
        "tokens/s needed",
        "所需吞吐",
        QWEN8B + ": 46,300 tokens/s",
    )


def costs(reg: Registry, r: Ctx) -> None:
    """Days, GPU-hours and cost at the MFU that decides: the row's measured mfu where given, else the
    step-time model's prediction (definitions/time.py); the prediction stands beside a given mfu."""
    reg.section = "compute"
    d = definer(reg, RATIO, doc("step-time"))
    r.mfu_given = given = d(
        "mfu_given",
        negate(IsBlank(Col("mfu"))),
        "a measured mfu is given",
        "给出实测 MFU",
        unit=BOOL,
        source=COLUMN,
    )
    r.mfu = column_definer(reg, RATIO)(
        "mfu",
        r.predicted_mfu,
        "MFU that decides (measured, else predicted)",
        "决定天数的 MFU（实测，否则预测）",
        "; empty: predicted_mfu (" + doc("step-time") + ")",
    )
    d(
        "mfu_source",
        if_(given, "measured", "predicted"),
        "where the deciding MFU comes from",
        "MFU 的来源",
        unit=TEXT,
    )
    d(
        "mfu_difference",
        r.predicted_mfu - Col("mfu"),
        "predicted MFU − measured MFU",
        "预测 MFU − 实测 MFU",
    )
    d(
        "hfu",
        r.mfu * r.hfu_per_mfu,
        "hardware FLOPs utilisation",
        "硬件算力利用率 HFU",
        source="mfu × hfu_per_mfu: the recompute FLOPs predicted_hfu counts",
    )
    d = reg.define
    eff_flops = d(
        "effective_flops_per_gpu",
        r.peak_tflops * FLOPS_PER_TFLOP * r.mfu,
        FLOPS,
        "useful FLOP/s per GPU peak × mfu",
        "每卡有效 FLOP/s",
        "peak × mfu (the measured mfu, else the predicted one)",
    )
    d(
        "tokens_per_s_per_gpu",
        eff_flops / r.fpt,
        TOKENS_PER_S,
        "tokens/s per GPU",
        "每卡吞吐",
        QWEN8B + ": 7,507 tokens/s",
    )
    r.days_on_config = d(
        "days_on_config",
        r.total_flops / (r.gpus * eff_flops) / SECONDS_PER_DAY,
        DAYS,
        "days on this configuration's GPUs",
        "本配置所需天数",
        QWEN8B + ": 77 days on 2 GPUs",
    )
    gates(reg, r, ceil(r.total_flops / (eff_flops * r.train_s)))
    r.gpu_hours = gh = d(
        "gpu_hours", r.total_flops / eff_flops / 3600, HOURS, "GPU-hours", "GPU 小时", FLOOR_DOC
    )
    d("cost", gh * r.price, MONEY, "cost", "成本", "GPU-hours × price")


def gates(reg: Registry, r: Ctx, gpus_for_deadline) -> None:
    """The two gates at the row's own layout: the fewest GPUs that meet the deadline and the fewest
    at which the row fits, both buildable (dp whole, dividing the global batch's micro-batches,
    in whole expert groups; GPUs = dp × tp·pp·cp), and the one that binds."""
    d = definer(reg, COUNT, GATE_DOC)
    model_gpus = d(
        "model_parallel_gpus",
        r.tp * r.pp * r.cp,
        "GPUs of one model replica tp·pp·cp",
        "一个模型副本的 GPU 数 tp·pp·cp",
    )
    slots = d(
        "batch_slots",
        r.global_batch / r.micro_batch,
        "micro-batches in the global batch (dp divides it)",
        "全局 batch 中的 micro-batch 数（dp 须整除）",
    )
    ept = r.ep * r.etp
    expert_step = ept / gcd(ept, r.cp * r.tp)
    node_step = if_(r.whole_nodes, r.gpus_per_node / gcd(r.gpus_per_node, model_gpus), 1)
    step = d(
        "dp_step",
        expert_step * node_step / gcd(expert_step, node_step),
        "dp grows in steps that keep expert groups (and, with whole_nodes, nodes) whole",
        "保持专家组（与整节点）完整的 dp 步长",
        source=GATE_DOC
        + ": dp·cp·tp divisible by ep·etp; with whole_nodes, dp·tp·pp·cp a multiple of gpus_per_node (the least common multiple of the two steps)",
    )
    needed = d(
        "gpus_needed_compute",
        gpus_for_deadline,
        "GPUs of compute the deadline needs (before rounding to a layout)",
        "期限所需算力折合的 GPU 数（未按布局取整）",
        source=FLOOR_DOC + "; " + QWEN8B + ": 5.27e21 / (989e12 × 0.4 × 25 × 86400) → 7",
    )
    dp_c = d(
        "dp_for_deadline",
        smallest_divisor(slots, ceil(needed / model_gpus), step),
        "smallest buildable dp that meets the deadline",
        "满足期限的最小可搭建 dp",
    )
    mgc = d(
        "min_gpus_compute",
        dp_c * model_gpus,
        "minimum GPUs for the deadline (buildable)",
        "满足期限的最少 GPU（可搭建）",
        source=GATE_DOC + " (deadline gate)",
    )
    fixed, dp_m, mgm, floor_gpus = _memory_gate(reg, r, slots, step, model_gpus)
    flag = definer(reg, BOOL, GATE_DOC)
    never = flag(
        "memory_gate_never",
        all_of(negate(IsBlank(r.peak)), IsBlank(mgm)),
        "no dp makes the row fit",
        "任何 dp 都装不下",
    )
    mem_cmp = if_(IsBlank(mgm), floor_gpus, mgm)
    d(
        "binding_gate",
        if_(
            needed.ge(0),
            if_(
                never,
                "memory",
                if_(IsBlank(mgc), "compute", if_(mem_cmp.gt(mgc), "memory", "compute")),
            ),
            "compute",
        ),
        "binding gate",
        "先撞的门",
        unit=TEXT,
        source=GATE_DOC + ": memory when no dp fits or it needs more GPUs than the deadline",
    )
    _gate_reasons(
        reg, r, (needed, mgc, dp_c), (mgm, dp_m, never, fixed, floor_gpus), slots, model_gpus
    )
    # the pages give a gate's reason in words where its number is blank; the floor where the peak is unknown
    flag(
        "min_gpus_compute_blank",
        all_of(needed.ge(0), IsBlank(mgc)),
        "the deadline gate has no buildable answer",
        "期限门无可搭建的答案",
    )
    flag("min_gpus_memory_blank", IsBlank(mgm), "the memory gate has no answer", "显存门无答案")
    flag("peak_unknown", IsBlank(r.peak), "the peak cannot be computed", "峰值无法计算")


def _memory_gate(reg: Registry, r: Ctx, slots, step, model_gpus):
    """The fewest GPUs at which the row's layout fits, and the floor any layout needs."""
    d = definer(reg, COUNT, GATE_DOC)
    # the peak at another dp: the sharded state shrinks (or grows) as dp/dp'; everything else stays
    # the row fits when what must fit on the device does (peak_fit_bytes_per_rank: the allocator
    # releases the rest of its reserve before it fails), so that is what the gate projects
    sharded = {
        line: if_(all_of(r.in_hbm[line[0]], r.shard[line].ne(1)), lb, 0)
        for line, lb in r.line_bytes.items()
    }
    grads = total_of([b for (s, _), b in sharded.items() if s == "grads"])
    grads_in_peak = any_of(r.fits, Ref("mem_gradients_in_peak"), Ref("mem_gradients_early_in_peak"))
    shrink = d(
        "dp_sharded_peak_bytes",
        (1 + Ref("reserved_floor_fraction"))
        * (
            total_of([b for (s, _), b in sharded.items() if s != "grads"])
            + if_(grads_in_peak, grads, 0)
        ),
        "the part of the peak sharded over dp (on the device)",
        "峰值中按 dp 分片的部分（设备口径）",
        unit=BYTES,
        source=GATE_DOC
        + ": the HBM state lines with a shard group, × (1 + the reserve the allocator cannot release); growing dp, only lines in every phase count",
    )
    fixed = d(
        "dp_fixed_peak_bytes",
        Ref("peak_fit_bytes_per_rank") - shrink,
        "the part of the peak no dp changes",
        "峰值中与 dp 无关的部分",
        unit=BYTES,
    )
    room = r.hbm_bytes - fixed
    dp_m = d(
        "dp_for_memory",
        smallest_divisor(slots, if_(room.gt(0), shrink * r.dp / room, slots + 1), step),
        "smallest buildable dp at which the row fits",
        "装得下的最小可搭建 dp",
    )
    mgm = d(
        "min_gpus_memory",
        dp_m * model_gpus,
        "minimum GPUs at which the row's layout fits",
        "本布局装得下的最少 GPU",
        source=GATE_DOC + " (memory gate); " + QWEN8B + ": ZeRO-3 on 2 × 80 GB",
    )
    floor_gpus = d(
        "state_floor_gpus",
        ceil(r.logical_hbm / r.hbm_bytes),
        "GPUs whose HBM holds the whole state (a floor for any layout)",
        "装下全部状态的 GPU 数（任何布局的下限）",
        source=GATE_DOC + "; " + QWEN8B + ": 131.1 GB on 2 × 80 GB",
    )
    return fixed, dp_m, mgm, floor_gpus


def _gate_reasons(reg, r, deadline, memory, slots, model_gpus) -> None:
    """Each gate's number in words, en and zh: why the deadline gate or the memory gate says it."""
    d = definer(reg, TEXT, GATE_DOC)
    needed, mgc, dp_c = deadline
    mgm, dp_m, never, fixed, floor_gpus = memory
    needed_t, slots_t, most_t = grouped(needed), grouped(slots), grouped(slots * model_gpus)
    fixed_t, hbm_t, zero0 = gb_text(fixed), gb_text(r.hbm_bytes), r.zero.eq(0)

    def layout(dp):
        return sentence(" (dp {} × tp·pp·cp {})", grouped(dp), grouped(model_gpus))

    def deadline_reason(capped, built):
        return if_(needed.ge(0), if_(IsBlank(mgc), capped, built), "")

    def memory_reason(never_fits, unknown, fits):
        return if_(never, never_fits, if_(IsBlank(mgm), unknown, fits))

    # in English and in Chinese: the deadline gate's capped and built, the memory gate's never fits,
    # unknown and fits
    texts = (
        (
            sentence(
                "needs {} GPUs; the batch's {} micro-batches cap this layout at {}",
                needed_t,
                slots_t,
                most_t,
            ),
            sentence("{} GPUs of compute, built as {}{}", needed_t, grouped(mgc), layout(dp_c)),
            sentence(
                "never: {} of the peak does not shrink with dp, above HBM {}{}",
                fixed_t,
                hbm_t,
                if_(zero0, " (ZeRO-0 shards nothing)", ""),
            ),
            sentence(
                "the peak is unknown; the whole state needs at least {}{}",
                grouped(floor_gpus),
                if_(floor_gpus.eq(1), " GPU", " GPUs"),
            ),
            sentence("fits from {} GPUs{}", grouped(mgm), layout(dp_m)),
        ),
        (
            sentence(
                "需要 {} 卡；全局 batch 的 {} 个 micro-batch 使本布局至多 {} 卡",
                needed_t,
                slots_t,
                most_t,
            ),
            sentence("算力需 {} 卡，按布局取 {} 卡", needed_t, grouped(mgc)),
            sentence(
                "任何 dp 都装不下：峰值中 {} 不随 dp 缩小，超过显存 {}{}",
                fixed_t,
                hbm_t,
                if_(zero0, "（ZeRO-0 不分片）", ""),
            ),
            sentence("峰值未知；全部状态至少需 {} 卡", grouped(floor_gpus)),
            sentence("从 {} 卡起装得下", grouped(mgm)),
        ),
    )
    for key, gate, gate_zh, reason, parts in (
        ("compute", "deadline gate", "期限门", deadline_reason, slice(0, 2)),
        ("memory", "memory gate", "显存门", memory_reason, slice(2, 5)),
    ):
        for suffix, text in zip(("", "_zh"), texts):
            label = f"why ({gate}{suffix and ', zh'})"
            d(f"min_gpus_{key}_reason{suffix}", reason(*text[parts]), label, f"原因（{gate_zh}）")
