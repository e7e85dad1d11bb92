"""Pipeline stages: which layers, embeddings and heads each stage holds, its parameters per rank,
and how many micro-batches it holds in flight under the schedule (the prose:
docs/definitions.md#pipeline-stages).  The first, a middle (rank ⌊pp/2⌋) and the last stage are
computed; ``pp_first_layers`` and ``pp_last_layers`` fix the first and last stages' layers as
Megatron-LM's --decoder-first/last-pipeline-num-layers do, and the other stages share the rest.
"""

from __future__ import annotations

from ..expr import Col, IsBlank, all_of, ceil, floor, if_, maximum, minimum, negate
from ..registry import BOOL, COUNT, PARAMS, Registry
from .common import Ctx, definer, doc

STAGES = ("first", "middle", "last")
STAGE_ZH = {"first": "首段", "middle": "中间段", "last": "末段", "only": "唯一段"}


def stage_definer(reg, stage: str, infix: str, unit: str, source: str):
    """Quantities of one pipeline stage, keyed ``<stage>_<infix>_<name>`` and labelled
    "<stage> stage: …" ("首段：…")."""

    def define(name: str, expr, en: str, zh: str, source: str = source, *, unit: str = unit):
        en, zh = f"{stage} stage: {en}", f"{STAGE_ZH[stage]}：{zh}"
        return reg.define(f"{stage}_{infix}_{name}", expr, unit, en, zh, source)

    return define


def by_stage(first, middle, of):
    """``of`` the first stage where ``first``, else of the middle one where ``middle``, else of the
    last (``of(stage)`` for each stage's figure)."""
    return if_(first, of("first"), if_(middle, of("middle"), of("last")))


SCHEDULE_SOURCE = "Megatron-LM megatron/core/pipeline_parallel/schedules.py (1F1B: rank r holds pp − r micro-batches; interleaved: (pp − r − 1)·2 + (v − 1)·pp warm-up chunks + 1)"


def define(reg: Registry, r: Ctx) -> None:
    reg.section = "stages"
    src = doc("pipeline-stages")
    d = definer(reg, COUNT, src)
    L, pp = r.L, r.pp
    fixed = {
        end: d(
            f"pp_{end}_fixed",
            all_of(pp.gt(1), negate(IsBlank(Col(f"pp_{end}_layers")))),
            f"the {end} stage's layers are given",
            f"{STAGE_ZH[end]}层数已给出",
            unit=BOOL,
        )
        for end in ("first", "last")
    }
    first_n, last_n = (if_(fixed[end], Col(f"pp_{end}_layers"), 0) for end in ("first", "last"))
    even_stages = d(
        "pp_even_stages",
        pp - if_(fixed["first"], 1, 0) - if_(fixed["last"], 1, 0),
        "stages that share the layers evenly",
        "均分层数的段数",
    )
    even_layers = d("pp_even_layers", L - first_n - last_n, "layers shared evenly", "均分的层数")
    base = d(
        "stage_layers_base",
        floor(even_layers / maximum(even_stages, 1)),
        "layers per evenly split stage (floor)",
        "均分段每段层数（下取整）",
    )
    rem = d(
        "stage_layers_remainder",
        even_layers - base * even_stages,
        "evenly split stages with one layer more",
        "多一层的均分段数",
        source=src + ": remainder layers go to the earlier stages",
    )
    r.single = d("single_stage", pp.eq(1), "one pipeline stage", "单段流水", unit=BOOL)
    r.stage_index = {}
    for stage, rank, which in (
        ("first", 0, ""),
        ("middle", floor(pp / 2), " ⌊pp/2⌋"),
        ("last", pp - 1, " pp − 1"),
    ):
        en, zh = f"{stage} stage: pipeline rank{which}", f"{STAGE_ZH[stage]}：流水 rank{which}"
        r.stage_index[stage] = d(f"{stage}_stage_rank", rank, en, zh)
    r.has_middle = d(
        "has_middle_stage",
        pp.gt(2),
        "a middle stage apart from the first and last",
        "有中间段",
        unit=BOOL,
    )
    r.n_micro = d(
        "micro_batches_per_step",
        if_(IsBlank(r.global_batch), pp, r.global_batch / (r.micro_batch * r.dp)),
        "micro-batches per step per data-parallel rank",
        "每步 micro-batch 数",
        source="global_batch / (micro_batch·dp)",
    )
    r.layers_of, r.in_flight, r.holds_embed, r.holds_head, r.global_of = {}, {}, {}, {}, {}
    r.part_stage, r.rank_part, r.stage_layers = {}, {}, {}
    split = Ctx(fixed=fixed, first_n=first_n, last_n=last_n, base=base, rem=rem)
    for stage in STAGES:
        _stage_layers(reg, r, stage, split)
        _stage_params(reg, r, stage)


def _stage_layers(reg: Registry, r: Ctx, stage: str, c: Ctx) -> None:
    """A stage's layers (how many of each kind) and the micro-batches it holds in flight."""
    d = definer(reg, COUNT, doc("pipeline-stages"))
    L, pp, moe_every, E, v = r.L, r.pp, r.moe_every, r.E, r.virtual
    k = r.stage_index[stage]
    zh = STAGE_ZH[stage]
    j = k - if_(c.fixed["first"], 1, 0)  # the stage's place among the evenly split ones

    def by_place(last, first, even):
        """The figure of a last or first stage whose layers are given, else of an evenly split one."""
        is_first = all_of(k.eq(0), c.fixed["first"])
        return if_(all_of(k.eq(pp - 1), c.fixed["last"]), last, if_(is_first, first, even))

    start = d(
        f"{stage}_stage_first_layer",
        by_place(L - c.last_n, 0, c.first_n + j * c.base + minimum(j, c.rem)),
        f"{stage} stage's first layer",
        f"{zh}起始层",
    )
    n = d(
        f"{stage}_stage_layers",
        by_place(c.last_n, c.first_n, c.base + if_(j.lt(c.rem), 1, 0)),
        f"{stage}-stage layers",
        f"{zh}层数",
    )

    def every(x):
        """The stage's layers i with i mod x = x − 1."""
        return floor((start + n) / x) - floor(start / x)

    moe = d(
        f"{stage}_stage_moe_layers",
        if_(
            E.gt(0),
            maximum(ceil((start + n) / moe_every) - ceil(maximum(start, r.k_dense) / moe_every), 0),
            0,
        ),
        f"{stage}-stage MoE layers",
        f"{zh} MoE 层数",
        source=f"{doc('parameters')}: layer i is MoE when i ≥ first_dense_layers and i mod "
        "moe_every = 0",
    )
    dense = d(
        f"{stage}_stage_dense_layers", n - moe, f"{stage}-stage dense layers", f"{zh}稠密层数"
    )
    attn = d(
        f"{stage}_stage_attention_layers",
        every(r.fae),
        f"{stage}-stage softmax-attention layers",
        f"{zh}全注意力层数",
        source=doc("parameters") + ": layer i has softmax attention when i mod k = k − 1",
    )
    r.global_of[stage] = d(
        f"{stage}_stage_global_attention_layers",
        if_(IsBlank(r.window), attn, if_(IsBlank(r.sliding_every), 0, every(r.sliding_every))),
        f"{stage}-stage global-attention layers",
        f"{zh}全局注意力层数",
        source=f"{doc('parameters')}: with sliding_window, layer i is global when i mod "
        "sliding_every = sliding_every − 1",
    )
    r.layers_of[stage], r.stage_layers[stage] = (dense, moe, attn), n
    r.holds_embed[stage] = k.eq(0)
    r.holds_head[stage] = k.eq(pp - 1)
    warm = if_(v.gt(1), (pp - k - 1) * 2 + (v - 1) * pp, pp - k - 1)
    r.in_flight[stage] = d(
        f"{stage}_stage_in_flight",
        minimum(warm + 1, r.n_micro * v) / v,
        f"{stage}-stage micro-batches in flight (stage-sized)",
        f"{zh}在途 micro-batch（整段计）",
        source=SCHEDULE_SOURCE,
    )


def _stage_params(reg: Registry, r: Ctx, stage: str) -> None:
    """A stage's parameters by part, counted from its layers and embeddings, and per rank."""
    src = doc("pipeline-stages")
    d = definer(reg, PARAMS, src)
    zh, single = STAGE_ZH[stage], r.single
    dense, moe, attn = r.layers_of[stage]
    n, pp = r.stage_layers[stage], r.pp
    arch_d = d(
        f"arch_{stage}_stage_dense",
        n * r.layer_norm_p
        + attn * r.attn_p
        + (n - attn) * r.lin_attn_p
        + dense * r.dense_mlp_p
        + moe * r.moe_mlp_dense_p
        + if_(r.holds_embed[stage], r.embed_p, 0)
        + if_(
            r.holds_head[stage],
            if_(single, r.head_p, r.embed_p)
            + r.final_norm_p
            + r.arch_mtp_dense
            + if_(all_of(r.mtp.gt(0), negate(single)), r.embed_p, 0),
            0,
        ),
        f"{stage}-stage non-expert parameters (architecture)",
        f"{zh}非专家参数（由结构）",
        source=f"{src}: layer by layer (norms, softmax or linear attention, dense or MoE MLP); the input embedding on the first stage; the output head "
        "(a real copy even when tied), the final norm and the MTP modules on the last, with their own copy of the embedding when pp > 1 "
        "(Megatron-LM megatron/core/models/gpt/gpt_model.py builds the embedding where mtp_process)",
    )
    r.part_stage[(stage, "dense")] = d(
        f"{stage}_stage_dense_params",
        if_(r.has_arch, r.dense * (arch_d / r.arch_dense), r.dense / pp),
        f"{stage}-stage non-expert parameters",
        f"{zh}非专家参数",
        source=src + " (scaled to params_total; without a countable architecture, total / pp)",
    )
    r.part_stage[(stage, "expert")] = d(
        f"{stage}_stage_expert_params",
        if_(
            r.has_arch,
            if_(
                r.arch_expert.gt(0),
                r.expert
                * (
                    (moe * r.moe_layer_expert_p + if_(r.holds_head[stage], r.arch_mtp_expert, 0))
                    / r.arch_expert
                ),
                r.expert / pp,
            ),
            r.expert / pp,
        ),
        f"{stage}-stage expert parameters",
        f"{zh}专家参数",
    )
    for p, en, pzh, div, how in (
        ("dense", "non-expert", "非专家", r.tp, "non-expert / tp"),
        ("expert", "expert", "专家", r.ep * r.etp, "expert / (ep·etp)"),
    ):
        r.rank_part[(stage, p)] = d(
            f"{stage}_rank_{p}_params",
            r.part_stage[(stage, p)] / div,
            f"{stage}-stage {en} parameters per rank",
            f"{zh}每卡{pzh}参数",
            source=f"{doc('parts-and-groups')}: {how}",
        )
