"""The rules a row must meet, each defined once: input validation, the workbook's check cells and the
planner's masks all read them.  A rule's quantity is true when it holds and blank when it does not
apply (an input it reads is empty); its message says what was expected and what was found, with the
row's numbers.  Warnings are stated on the page; errors refuse the row.
"""

from __future__ import annotations

from functools import partial

from ...config import together
from ..expr import (
    MINDIV_MAX,
    Col,
    IsBlank,
    Lookup,
    Ref,
    all_of,
    any_of,
    concat,
    divides,
    grouped,
    if_,
    maximum,
    negate,
)
from ..registry import ERROR, WARNING, Registry
from ..units import GB, GIB
from .common import Ctx, conv, doc, joined, sentence, switch

PARAMS_TOLERANCE = 0.01  # a given params_total may differ from the architecture's count by 1 %


def _given(col: str):
    return negate(IsBlank(Col(col)))


def _blank(col: str):
    return IsBlank(Col(col))


def _listed(cols):
    """Each of ``cols`` with its value, or "empty", as text for a message."""
    parts = []
    for i, col in enumerate(cols):
        parts += [", " if i else "", col, " = ", if_(_blank(col), "empty", Col(col))]
    return concat(*parts)


def _at_most(c, key: str, col: str, bound: str) -> None:
    """The rule that the input column ``col`` is at most the input column ``bound``."""
    rule, ok = f"{col} ≤ {bound}", Col(col).le(Col(bound))
    expected, found = concat(f"{rule} = ", Col(bound)), concat(f"{col} = ", Col(col))
    c(key, ok, col, expected, found, en=rule, zh=rule)


# the columns that describe experts: without ``experts`` none of them is read
MOE_ONLY_COLUMNS = (
    "moe_ffn_hidden",
    "shared_experts",
    "shared_expert_ffn",
    "shared_expert_gate",
    "moe_every",
    "first_dense_layers",
)


def _only_with(c, key: str, col: str, other: str, why="", what="", what_zh=""):
    """The rule that the input column ``col`` is given only with ``other`` (``what`` in words)."""
    ok = negate(all_of(_given(col), _blank(other)))
    found = sentence(f"{col} = {{}} with {other} empty", Col(col))
    en, zh = f"{col} is given with {what or other}", f"{col} 需与 {what_zh or other + ' '}同时给出"
    c(key, ok, col, f"{col} only with {other}{why}", found, en=en, zh=zh)


def _divides(c, key: str, col: str, n, of: str, m, source: str, what="", what_zh="", big=False):
    """The rule that ``col`` (``n``) divides ``of`` (``m``, with thousands separators if ``big``),
    worded "``col`` divides ``what``" (else ``of``)."""
    expected = concat(f"{col} to divide {of} = ", grouped(m) if big else m)
    en, zh = f"{col} divides {what or of}", f"{col} 整除{what_zh or ' ' + of}"
    c(key, divides(n, m), col, expected, concat(f"{col} = ", n), en=en, zh=zh, source=source)


def define(reg: Registry, r: Ctx) -> None:
    reg.section = "constraints"
    c = partial(reg.constraint, source=doc("parameters"))  # else the rule names its source
    c_groups = partial(reg.constraint, source=doc("parts-and-groups"))
    c_stages = partial(reg.constraint, source=doc("pipeline-stages"))
    dp, tp, pp, cp, ep, etp = r.dp, r.tp, r.pp, r.cp, r.ep, r.etp

    # the accelerator: one of the catalogue, or one the row describes --------------------------------
    c(
        "gpu_described",
        any_of(r.gpu_known, all_of(_given("hbm_gb"), _given("peak_tflops"))),
        "gpu",
        "a GPU of the catalogue (ledger-report gpus), or hbm_gb and peak_tflops to describe it",
        sentence("{} is not in the catalogue and {}", r.gpu, _listed(("hbm_gb", "peak_tflops"))),
        en="a GPU outside the catalogue needs hbm_gb and peak_tflops",
        zh="目录外的 GPU 需要给出 hbm_gb 与 peak_tflops",
        source=doc("gates"),
    )

    # 80 typed for an "80 GB" H100 is its nominal 80 GiB, less than the catalogue's usable
    # 84.94 GB (CUDA's 79.11 GiB): a figure below the catalogue's that, read as GiB, reaches it
    catalogue_hbm = Lookup("gpu", r.gpu_profile, "hbm_gb")
    hbm_given = Col("hbm_gb")
    c(
        "hbm_gb_as_catalogue",
        any_of(
            _blank("hbm_gb"),
            negate(r.gpu_known),
            hbm_given.ge(catalogue_hbm),
            (hbm_given * (GIB / GB)).lt(catalogue_hbm),
        ),
        "hbm_gb",
        sentence(
            "the usable memory of {}, {} GB (GB = 10^9 bytes), which the catalogue uses when "
            "hbm_gb is empty",
            r.gpu,
            catalogue_hbm,
        ),
        sentence(
            "hbm_gb = {} GB, the nominal capacity in GiB written as GB? (the row's value is used)",
            hbm_given,
        ),
        severity=WARNING,
        en="hbm_gb below the catalogue's usable memory by the GiB/GB difference",
        zh="hbm_gb 比目录中的可用显存小约 GiB 与 GB 之差",
        source=doc("gates"),
    )

    # parameters: a count, or an architecture to count from -------------------------------------
    arch_required = together("arch")  # the columns that count the parameters
    no_arch = all_of(*(_blank(col) for col in arch_required))
    c(
        "params_or_architecture",
        negate(all_of(_blank("params_total"), no_arch)),
        "params_total",
        concat("params_total, or the architecture columns ", ", ".join(arch_required)),
        "params_total and all the architecture columns empty",
        en="a row gives params_total or the architecture",
        zh="给出 params_total 或结构列",
    )
    for col in arch_required:
        c(
            f"architecture_{col}",
            negate(all_of(_blank("params_total"), negate(no_arch), _blank(col))),
            col,
            concat(col, " (the architecture counts the parameters when params_total is empty)"),
            concat(col, " empty, params_total empty"),
            en=f"without params_total, {col} is needed to count the parameters",
            zh=f"未给出 params_total 时需要 {col}",
            source=doc("partial-architectures"),
        )
    off = (r.total - r.arch_total) / r.arch_total
    within = all_of(off.le(PARAMS_TOLERANCE), off.ge(-PARAMS_TOLERANCE))
    compare = any_of(_blank("params_total"), negate(r.has_arch))
    # in a hybrid layout (full_attention_every > 1, as the row gives it) a given params_total is
    # the better count (without the linear-attention columns those layers are counted as softmax
    # attention): a difference is stated, not refused
    exact = r.fae_given.le(1)
    for key, applies, severity in (
        ("params_total_matches", exact, ERROR),
        ("params_total_matches_hybrid", negate(exact), WARNING),
    ):
        c(
            key,
            if_(compare, True, if_(applies, within, True)),
            "params_total",
            concat("params_total within 1 % of the architecture's count ", grouped(r.arch_total)),
            sentence("params_total = {} ({} % off)", grouped(r.total), grouped(off * 100)),
            severity=severity,
            en="a given params_total agrees with the architecture within 1 %",
            zh="给定 params_total 与结构计数相差不超过 1 %",
            row_only=True,
        )

    # the architecture's optional blocks: each set of columns complete or empty ----------------------
    for key, cols, what, zh in (
        # (q_lora_rank is optional: it is read only with kv_lora_rank, below)
        ("mla_columns", together("mla"), "multi-head latent attention", "多头潜在注意力"),
        (
            "linear_attention_columns",
            together("hybrid"),
            "Gated DeltaNet linear attention",
            "Gated DeltaNet 线性注意力",
        ),
    ):
        all_given = all_of(*(_given(col) for col in cols))
        none_given = all_of(*(_blank(col) for col in cols))
        c(
            key,
            any_of(all_given, none_given),
            cols[0],
            sentence("all of {} ({}) or none of them", ", ".join(cols), what),
            _listed(cols),
            en=f"the {what} columns are complete or empty",
            zh=f"{zh}的列要么全给要么全空",
        )
    mla = " (multi-head latent attention)", "the MLA columns", "MLA 列"
    _only_with(c, "q_lora_with_mla", "q_lora_rank", "kv_lora_rank", *mla)
    c(
        "linear_attention_needs_hybrid",
        negate(
            all_of(
                _given("linear_key_heads"),
                if_(_blank("full_attention_every"), True, Col("full_attention_every").le(1)),
            )
        ),
        "full_attention_every",
        "full_attention_every > 1 with the linear-attention columns (the layers without softmax attention are the Gated DeltaNet ones)",
        concat(
            "full_attention_every = ",
            if_(_blank("full_attention_every"), "1 (empty)", Col("full_attention_every")),
        ),
        en="Gated DeltaNet columns need a hybrid layout",
        zh="给出 Gated DeltaNet 列时需要混合结构",
    )
    c(
        "hybrid_with_linear_attention",
        # the declared layout against has_linear_attention, which decides softmax_attention_every
        negate(all_of(r.fae_given.gt(1), negate(r.gdn))),
        "full_attention_every",
        "the linear-attention columns with full_attention_every > 1 (without them every layer is"
        " counted as softmax attention)",
        sentence(
            "full_attention_every = {} with linear_key_heads empty", Col("full_attention_every")
        ),
        en="a hybrid layout is given with its linear-attention columns",
        zh="混合结构需给出线性注意力列",
        severity=WARNING,
    )
    _only_with(c, "sliding_every_needs_window", "sliding_every", "sliding_window")
    c(
        "sliding_window_not_hybrid",
        negate(all_of(_given("sliding_window"), Col("full_attention_every").gt(1))),
        "sliding_window",
        "sliding_window only with full_attention_every = 1 (sliding windows in a hybrid layout are not modelled)",
        sentence(
            "sliding_window = {} with full_attention_every = {}",
            grouped(Col("sliding_window")),
            Col("full_attention_every"),
        ),
        en="sliding windows are modelled without linear-attention layers",
        zh="滑动窗口仅在无线性注意力层时建模",
    )
    _at_most(c, "first_dense_le_layers", "first_dense_layers", "layers")
    _divides(c, "dp_shard_divides", "dp_shard", r.dp_shard, "dp", dp, doc("parts-and-groups"))
    # expert parallelism --------------------------------------------------------------------------
    world = dp * cp * tp
    c_groups(
        "etp_divides",
        divides(etp, world),
        "etp",
        sentence("etp to divide dp·cp·tp = {}·{}·{} = {}", dp, cp, tp, grouped(world)),
        concat("etp = ", etp),
        en="etp divides dp·cp·tp",
        zh="etp 整除 dp·cp·tp",
    )
    c_groups(
        "ep_divides",
        if_(divides(etp, world), divides(ep, world / etp), True),
        "ep",
        sentence(
            "ep to divide dp·cp·tp/etp = {}·{}·{}/{} = {}", dp, cp, tp, etp, grouped(world / etp)
        ),
        concat("ep = ", ep),
        en="ep divides dp·cp·tp/etp",
        zh="ep 整除 dp·cp·tp/etp",
    )
    moe_given = any_of(_given("experts"), _given("params_expert"), _given("params_per_rank"))
    c_groups(
        "ep_needs_experts",
        any_of(ep.le(1), moe_given),
        "ep",
        "ep = 1 on a dense model (no experts, params_expert or params_per_rank given)",
        concat("ep = ", ep),
        en="expert parallelism needs experts",
        zh="专家并行需要专家",
    )
    experts = Col("experts")
    c_groups(
        "experts_by_ep",
        if_(_blank("experts"), True, divides(ep, experts)),
        "experts",
        concat("experts divisible by ep = ", ep),
        concat("experts = ", experts),
        en="ep divides the experts",
        zh="ep 整除专家数",
    )
    c(
        "topk_with_experts",
        negate(all_of(_given("experts"), _blank("topk"))),
        "topk",
        sentence("topk (experts per token) when experts is given (experts = {})", experts),
        "topk empty",
        en="topk is given with experts",
        zh="给出 experts 时需要 topk",
    )
    c(
        "experts_with_topk",
        negate(all_of(_blank("experts"), _given("topk"))),
        "topk",
        "experts (routed experts) when topk is given",
        sentence("topk = {} with experts empty", Col("topk")),
        en="experts is given with topk",
        zh="给出 topk 时需要 experts",
    )
    _at_most(c, "topk_le_experts", "topk", "experts")
    given_moe = [(_given(k), (f"{k} = ", Col(k))) for k in MOE_ONLY_COLUMNS]
    c(
        "moe_columns_with_experts",
        negate(all_of(_blank("experts"), any_of(*(g for g, _ in given_moe)))),
        "experts",
        "experts (routed experts) where a mixture-of-experts column is given (without them it is"
        " not used)",
        concat("experts empty with ", joined(given_moe, ", ")),
        en="the mixture-of-experts columns are given with experts",
        zh="给出 MoE 列时需要 experts",
        severity=WARNING,
    )

    c_stages(
        "virtual_stages_with_pipeline",
        if_(_blank("virtual_stages"), True, any_of(Col("virtual_stages").le(1), pp.gt(1))),
        "virtual_stages",
        "virtual_stages > 1 only with pp > 1 (no pipeline, nothing to interleave: not used)",
        sentence("virtual_stages = {} with pp = {}", Col("virtual_stages"), pp),
        en="virtual pipeline stages are given with a pipeline",
        zh="给出虚拟流水段时需要流水并行",
        severity=WARNING,
    )

    # attention and the MLP over tensor parallelism ----------------------------------------------
    heads, kv = Col("heads"), Col("kv_heads")
    layout = doc("parallel-layout")
    for col, n, en, zh in (
        ("heads", heads, "the attention heads", "注意力头数"),
        ("kv_heads", kv, "the key/value heads", " KV 头数"),
    ):
        _divides(c, f"tp_divides_{col}", "tp", tp, col, n, layout, en, zh)
    _divides(c, "kv_divides_heads", "kv_heads", kv, "heads", heads, doc("parameters"))
    c(
        "hidden_by_heads",
        if_(_given("head_dim"), True, divides(heads, Col("hidden"))),
        "hidden",
        sentence("hidden divisible by heads = {} (or give head_dim)", heads),
        concat("hidden = ", grouped(Col("hidden"))),
        en="heads divides hidden when head_dim is empty",
        zh="未给出 head_dim 时 heads 整除 hidden",
    )
    for key, col, of, en, zh in (
        ("tp_divides_ffn", "tp", "ffn_hidden", "the MLP width", " MLP 宽度"),
        ("etp_divides_moe_ffn", "etp", "moe_ffn_hidden", "the expert MLP width", "专家 MLP 宽度"),
    ):
        _divides(c, key, col, getattr(r, col), of, Col(of), layout, en, zh, big=True)

    # pipeline ----------------------------------------------------------------------------------
    layers = Col("layers")
    c_stages(
        "pp_le_layers",
        pp.le(layers),
        "pp",
        sentence("pp ≤ layers = {} (every pipeline stage needs a layer)", layers),
        concat("pp = ", pp),
        en="every pipeline stage has a layer",
        zh="每个流水段至少一层",
    )
    fixed_given = any_of(_given("pp_first_layers"), _given("pp_last_layers"))
    c_stages(
        "pp_fixed_needs_pp",
        any_of(negate(fixed_given), pp.gt(1)),
        "pp",
        "pp > 1 with pp_first_layers or pp_last_layers",
        concat("pp = ", pp),
        en="a stage's layers are given only with pipeline parallelism",
        zh="仅在流水并行时给出段层数",
    )
    even_stages, even_layers = Ref("pp_even_stages"), Ref("pp_even_layers")
    c_stages(
        "pp_fixed_layers_fit",
        any_of(
            negate(fixed_given),
            pp.le(1),
            if_(even_stages.gt(0), even_layers.ge(even_stages), even_layers.eq(0)),
        ),
        "pp_first_layers",
        sentence(
            "pp_first_layers + pp_last_layers leaving a layer for each of the other {} stages "
            "(layers = {})",
            even_stages,
            layers,
        ),
        sentence("{}, {} layers left", _listed(("pp_first_layers", "pp_last_layers")), even_layers),
        en="the given stages' layers leave a layer for every other stage",
        zh="给定段层数后其余各段至少一层",
    )
    c_stages(
        "layers_by_pp",
        if_(
            pp.gt(layers),
            True,
            if_(fixed_given, divides(maximum(even_stages, 1), even_layers), divides(pp, layers)),
        ),
        "pp",
        if_(
            fixed_given,
            sentence(
                "the other {} stages to share their {} layers evenly", even_stages, even_layers
            ),
            sentence(
                "pp to divide layers = {} (an uneven split gives the first stages one layer more)",
                layers,
            ),
        ),
        concat("pp = ", pp),
        severity=WARNING,
        en="pp divides the layers (else the split is uneven)",
        zh="pp 整除层数（否则各段层数不均）",
    )
    # memory settings that belong to one framework or stage ----------------------------------------
    c_memory = partial(reg.constraint, severity=WARNING, source=doc("phases"))
    c_memory(
        "weights_kept_needs_zero3",
        any_of(negate(r.weights_kept), r.weights_kept_apply),
        "gathered_weights_kept",
        "zero = 3 with gathered_weights_kept (below ZeRO-3 the weights are whole anyway)",
        concat("zero = ", r.zero),
        en="gathered weights are kept only under ZeRO-3",
        zh="仅 ZeRO-3 下保留聚合权重",
    )
    c_memory(
        "bucket_elems_deepspeed",
        any_of(_blank("reduce_bucket_elems"), r.bucket_in_elements),
        "reduce_bucket_elems",
        "reduce_bucket_elems with framework = deepspeed (the others size their buckets their own way)",
        concat("framework = ", r.framework),
        en="reduce_bucket_elems applies to DeepSpeed",
        zh="reduce_bucket_elems 仅适用于 DeepSpeed",
    )
    c_table = partial(reg.constraint, source="conventions table (" + doc("conventions") + ")")
    zero_ok = switch(r.zero, {stage: conv(r, f"zero{stage}") for stage in range(4)})
    c_table(
        "zero_stage_exists",
        zero_ok.eq(1),
        "zero",
        sentence("a ZeRO stage that framework {} has", r.framework),
        concat("zero = ", r.zero),
        en="the framework has the ZeRO stage",
        zh="框架支持该 ZeRO 阶段",
    )
    c_table(
        "zero_with_pp",
        any_of(pp.le(1), r.zero.le(conv(r, "pp_zero_max"))),
        "zero",
        sentence(
            "zero ≤ {} with pipeline parallelism under framework {}",
            conv(r, "pp_zero_max"),
            r.framework,
        ),
        sentence("zero = {} with pp = {}", r.zero, pp),
        en="the framework runs the ZeRO stage with pipeline parallelism",
        zh="框架支持该 ZeRO 阶段与流水并行同用",
    )

    # batch and sequence ------------------------------------------------------------------------
    seq = Col("seq_len")
    what, zh = "the sequence", "序列长度"
    _divides(c, "cp_divides_seq", "cp", cp, "seq_len", seq, doc("activations"), what, zh, big=True)
    c_batch = partial(reg.constraint, source=doc("activations"))
    c_batch(
        "seq_by_tp_cp",
        if_(r.seq_par, divides(tp * cp, seq), True),
        "seq_len",
        sentence("seq_len divisible by tp·cp = {}·{} = {} with sequence_parallel", tp, cp, tp * cp),
        concat("seq_len = ", grouped(seq)),
        en="tp·cp divides the sequence with sequence parallelism",
        zh="序列并行时 tp·cp 整除序列长度",
    )
    gb, mb = Col("global_batch"), r.micro_batch
    c_batch(
        "global_batch_multiple",
        divides(mb * dp, gb),
        "global_batch",
        sentence("a multiple of micro_batch × dp = {} × {} = {}", mb, dp, grouped(mb * dp)),
        concat("global_batch = ", grouped(gb)),
        en="global_batch is a multiple of micro_batch × dp",
        zh="global_batch 是 micro_batch × dp 的整数倍",
    )
    c(
        "batch_slots_bounded",
        (gb / mb).le(MINDIV_MAX),
        "global_batch",
        sentence(
            "at most {} micro-batches in the global batch (global_batch ÷ micro_batch), where the "
            "minimum GPUs are found exactly",
            grouped(MINDIV_MAX),
        ),
        concat("global_batch ÷ micro_batch = ", grouped(gb / mb)),
        en=f"at most {MINDIV_MAX:,} micro-batches in the global batch",
        zh=f"全局 batch 至多 {MINDIV_MAX:,} 个 micro-batch",
        source=f"{doc('gates')}; the smallest buildable dp walks the divisor pairs (k, n/k) with "
        "k ≤ √n, and a sheet counts at most 1,048,576 rows",
    )

    # parameter parts ---------------------------------------------------------------------------
    total = Col("params_total")
    for part in ("params_expert", "params_active"):
        c_groups(
            f"{part}_le_total",
            Col(part).le(total),
            part,
            sentence("{} ≤ params_total = {}", part, grouped(total)),
            sentence("{} = {}", part, grouped(Col(part))),
            en=f"{part} ≤ params_total",
            zh=f"{part} ≤ params_total",
        )
    solving = all_of(
        _given("params_per_rank"), ep.gt(1), _blank("params_expert"), negate(r.has_arch)
    )
    c_groups(
        "per_rank_needs_total",
        negate(all_of(solving, _blank("params_total"))),
        "params_per_rank",
        "params_total (or params_expert) to solve the expert split from params_per_rank when ep > 1",
        sentence("ep = {} with params_total empty", ep),
        en="the expert split from params_per_rank needs params_total",
        zh="由每卡参数反推专家拆分需要 params_total",
        row_only=True,
    )
    c_groups(
        "per_rank_solvable",
        negate(all_of(solving, _given("params_total"), (ep * etp).eq(tp))),
        "params_per_rank",
        "ep·etp ≠ tp to solve the expert split from params_per_rank (or give params_expert)",
        sentence("ep·etp = {}·{} = {} = tp", ep, etp, ep * etp),
        en="the expert split from params_per_rank needs ep·etp ≠ tp",
        zh="反推专家拆分需要 ep·etp ≠ tp",
        row_only=True,
    )

    # the deadline ------------------------------------------------------------------------------
    c(
        "reserve_below_days",
        Col("reserve_days").lt(Col("days")),
        "reserve_days",
        concat("reserve_days < days = ", Col("days")),
        concat("reserve_days = ", Col("reserve_days")),
        en="the reserve is shorter than the deadline",
        zh="预留天数少于期限",
        source=doc("compute-floor"),
    )

    # the precision of the matmuls ---------------------------------------------------------------
    c(
        "fp8_needs_a_peak",
        if_(r.compute_dtype.eq("fp8"), r.fp8_tflops.gt(0), True),
        "compute_dtype",
        concat("a GPU with a dense FP8 peak for compute_dtype fp8 (or give fp8_tflops)"),
        concat("compute_dtype = fp8 on ", r.gpu),
        en="FP8 matmuls need a GPU with FP8 tensor cores",
        zh="FP8 矩阵乘需要支持 FP8 的 GPU",
        source=doc("step-time"),
    )
