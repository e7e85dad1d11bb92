"""Verdicts a review acts on, each with its reason in words and numbers: memory (fits, does not fit,
cannot tell; a measured peak is a fact), the deadline (meets, late by N days) and bandwidth
(offloaded states keep up with the step or not); the row's check text; and the budget figures."""

from __future__ import annotations

from ..expr import (
    Col,
    IsBlank,
    Ref,
    all_of,
    any_of,
    concat,
    drop_first,
    gb_text,
    grouped,
    if_,
    negate,
)
from ..registry import BOOL, DAYS, ERROR, MONEY, NODE_HOURS, TEXT, Registry
from .common import COLUMN, Ctx, definer, doc, joined, sentence, switch

CHECK_RULES_PER_PART = 8

# Each outcome's words: English, Chinese and the tone
MEMORY_WORDS = {
    "measured_fits": ("measured: fits", "实测：放得下", "good"),
    "measured_over": ("measured: does not fit", "实测：放不下", "bad"),
    "fits": ("fits", "放得下", "good"),
    "over": ("does not fit", "放不下", "bad"),
}
BANDWIDTH_WORDS = {
    "none": ("nothing offloaded", "无卸载", "good"),
    "keeps_up": ("keeps up", "跟得上", "good"),
    "too_slow": ("too slow", "太慢", "bad"),
}

# The inputs the memory estimate needs beyond the parameters: named when they are missing.
PEAK_NEEDS = ("seq_len", "layers", "hidden", "heads", "ffn_hidden", "vocab")


def _missing(cols) -> object:
    """The names of the empty columns among ``cols``, comma separated."""
    return joined(((IsBlank(Col(c)), (c,)) for c in cols), ", ")


def define(reg: Registry, r: Ctx) -> None:
    reg.section = "verdicts"
    tones = [_memory(reg, r), _deadline(reg, r), _bandwidth(reg, r)]
    reg.define(
        "verdicts_bad",
        any_of(*(t.eq("bad") for t in tones)),
        BOOL,
        "a verdict says no",
        "有否定结论",
        doc("verdicts"),
    )
    _budget(reg, r)
    _layout_text(reg, r)
    _check(reg, r)


def _verdict(reg: Registry, key: str, zh: str, outcome, words: dict, why, why_zh):
    """A verdict's words in English and Chinese and its tone, each from the one outcome ("cannot
    tell" where it is none of ``words``), and why (in English and Chinese), labelled by its key
    and ``zh``; the tone."""
    d = definer(reg, TEXT, doc("verdicts"))
    words = {**words, "unknown": ("cannot tell", "无法判断", "unknown")}
    labels = (
        ("", f"{key} verdict", f"{zh}结论"),
        ("_zh", f"{key} verdict (zh)", f"{zh}结论"),
        ("_tone", f"{key} verdict: good, bad or unknown", f"{zh}结论：好、坏或未知"),
    )
    for i, (suffix, en_label, zh_label) in enumerate(labels):
        said = switch(outcome, {v: w[i] for v, w in words.items()})
        tone = d(f"verdict_{key}{suffix}", said, en_label, zh_label)
    for suffix, text in (("", why), ("_zh", why_zh)):
        en_label = f"why ({key})" + (suffix and " (zh)")
        d(f"verdict_{key}_reason{suffix}", text, en_label, f"原因（{zh}）")
    return tone


def _memory(reg: Registry, r: Ctx):
    d = definer(reg, TEXT, doc("verdicts"))
    hbm, peak, state = r.hbm_bytes, r.peak, r.state_hbm
    measured = r.measured_bytes
    over_state = state.gt(hbm)
    known = negate(IsBlank(peak))
    given = negate(IsBlank(measured))
    missing = d(
        "peak_needs",
        _missing(PEAK_NEEDS),
        "the columns the peak needs and the row leaves empty",
        "峰值所需而未给出的列",
    )
    outcome = d(
        "memory_outcome",
        if_(
            given,
            if_(measured.le(hbm), "measured_fits", "measured_over"),
            if_(known, if_(peak.le(hbm), "fits", "over"), if_(over_state, "over", "unknown")),
        ),
        "memory: measured_fits, measured_over, fits, over or unknown",
        "显存：实测放得下、实测放不下、放得下、放不下或未知",
    )
    over = peak - hbm
    m_t, hbm_t, peak_t, state_t = (gb_text(x) for x in (measured, hbm, peak, state))
    over_t, spare_t = gb_text(over), gb_text(hbm - peak)
    diff = (
        if_(peak.ge(measured), "+", "−"),
        gb_text(if_(peak.ge(measured), peak - measured, measured - peak)),
    )

    def why(measured_text, peak_text, state_text, missing_text):
        """The reason, with each outcome's text."""
        unmeasured = if_(over_state, state_text, missing_text)
        return if_(given, measured_text, if_(known, peak_text, unmeasured))

    why_en = why(
        sentence(
            "measured {} of {} HBM; the estimate on the device is {}{}",
            m_t,
            hbm_t,
            peak_t,
            if_(known, sentence(" ({}{})", *diff), ""),
        ),
        sentence(
            "peak {} on the device against {} of HBM ({})",
            peak_t,
            hbm_t,
            if_(over.gt(0), concat(over_t, " over"), concat(spare_t, " to spare")),
        ),
        sentence("the state alone, {}, is above {} of HBM", state_t, hbm_t),
        sentence("the peak needs {}, which the row leaves empty", missing),
    )
    why_zh = why(
        sentence("实测 {}，显存 {}；设备口径估算 {}", m_t, hbm_t, peak_t),
        sentence(
            "设备峰值 {}，显存 {}{}",
            peak_t,
            hbm_t,
            if_(over.gt(0), concat("，超出 ", over_t), concat("，余 ", spare_t)),
        ),
        sentence("仅模型状态 {} 已超过显存 {}", state_t, hbm_t),
        sentence("峰值需要 {}，而该行未给出", missing),
    )
    return _verdict(reg, "memory", "显存", outcome, MEMORY_WORDS, why_en, why_zh)


def _deadline(reg: Registry, r: Ctx):
    d = definer(reg, DAYS, doc("verdicts"))
    window_days = d(
        "train_window_days",
        r.days - r.reserve,
        "days available for training (deadline less reserve)",
        "可用于训练的天数（期限减预留）",
        source=doc("compute-floor"),
    )
    late = d(
        "days_over_deadline",
        r.days_on_config - window_days,
        "days beyond the deadline (negative: days to spare)",
        "超出期限的天数（负值为余量）",
    )
    meets = d(
        "meets_deadline",
        late.le(0),
        "meets the deadline on this configuration's GPUs",
        "本配置能否按期完成",
        unit=BOOL,
    )
    outcome = d(
        "deadline_outcome",
        if_(IsBlank(meets), "unknown", if_(meets, "meets", "late")),
        "deadline: meets, late or unknown",
        "期限：按期、延期或未知",
        unit=TEXT,
    )
    needs = _missing(("tokens", "days", "seq_len", "global_batch"))
    days_t, window_t = grouped(r.days_on_config, 1), grouped(window_days, 1)
    gpus_t = grouped(r.gpus, 0)
    days = (
        sentence(
            "{} days on {} GPUs against {} days ({} less {} in reserve)",
            days_t,
            gpus_t,
            window_t,
            r.days,
            r.reserve,
        ),
        sentence(
            "{} 卡需 {} 天，可用 {} 天（期限 {} 天，预留 {} 天）",
            gpus_t,
            days_t,
            window_t,
            r.days,
            r.reserve,
        ),
    )
    missing = (
        sentence("needs {}, which the row leaves empty", needs),
        sentence("需要 {}，而该行未给出", needs),
    )
    why, why_zh = (if_(IsBlank(meets), m, t) for m, t in zip(missing, days))
    late_t = grouped(late, 1)
    late_words = sentence("late by {} days", late_t), sentence("延期 {} 天", late_t)
    words = {"meets": ("meets", "按期", "good"), "late": (*late_words, "bad")}
    return _verdict(reg, "deadline", "期限", outcome, words, why, why_zh)


def _bandwidth(reg: Registry, r: Ctx):
    """Offloaded states must stream in and out within the step."""
    d = definer(reg, TEXT, doc("verdicts"))
    stream, budget = r.offload_s, r.step_budget
    outcome = d(
        "bandwidth_outcome",
        if_(
            negate(r.has_offload),
            "none",
            if_(
                any_of(IsBlank(stream), IsBlank(budget)),
                "unknown",
                if_(stream.le(budget), "keeps_up", "too_slow"),
            ),
        ),
        "bandwidth: none offloaded, keeps_up, too_slow or unknown",
        "带宽：无卸载、跟得上、太慢或未知",
    )
    stream_t, budget_t = grouped(stream, 1), grouped(budget, 1)
    takes = (
        sentence(
            "offload (the streams and the CPU optimizer) takes {} s of a {} s step",
            stream_t,
            budget_t,
        ),
        sentence("卸载（传输与 CPU 优化器）需 {} 秒，每步预算 {} 秒", stream_t, budget_t),
    )
    in_hbm = "every state is in HBM", "所有状态都在显存中"
    why, why_zh = (if_(negate(r.has_offload), h, t) for h, t in zip(in_hbm, takes))
    return _verdict(reg, "bandwidth", "带宽", outcome, BANDWIDTH_WORDS, why, why_zh)


def _budget(reg: Registry, r: Ctx) -> None:
    reg.section = "budget"
    d = definer(reg, MONEY, COLUMN)
    d("currency", Col("currency"), "currency", "货币", unit=TEXT)
    d(
        "currency_given",
        negate(IsBlank(Col("currency"))),
        "a currency is given",
        "给出货币",
        unit=BOOL,
    )
    d(
        "node_hours",
        r.gpu_hours / r.gpus_per_node,
        "node-hours",
        "节点小时",
        unit=NODE_HOURS,
        source="GPU-hours ÷ GPUs per node",
    )
    d(
        "cost_with_reserve",
        r.gpus * (r.days_on_config + r.reserve) * 24 * r.price,
        "cost including the reserved days",
        "含预留天数的成本",
        source="GPUs × (days needed + reserve days) × 24 × price",
    )
    d(
        "cost_deadline_hold",
        r.gpus * r.days * 24 * r.price,
        "cost of holding these GPUs for the whole deadline",
        "整个期限占用这些 GPU 的成本",
        source="GPUs × deadline days × 24 × price",
    )


def _layout_text(reg: Registry, r: Ctx) -> None:
    """The layout in one phrase, as the summaries show each candidate or plan: the parallel
    sizes (dp × tp × pp × cp = GPUs; ep, which splits the data-parallel group, after them), the
    ZeRO stage and the recompute (documented with the budget: the summaries' columns)."""
    reg.section = "budget"
    d = definer(
        reg, TEXT, "input columns (docs/columns.md): dp × tp × pp × cp = GPUs; ep; zero; recompute"
    )
    for suffix, gpus, ep, zero, recompute in (
        ("", " GPUs", "; ep", "; ZeRO-", "; recompute "),
        ("_zh", " 卡", "；ep", "；ZeRO-", "；重计算 "),
    ):
        parts = ["dp", r.dp, "×tp", r.tp, "×pp", r.pp, "×cp", r.cp, " = ", grouped(r.gpus, 0), gpus]
        parts += [ep, r.ep, zero, r.zero, recompute, r.recompute]
        d("layout_text" + suffix, concat(*parts), "layout" + (suffix and " (zh)"), "布局")


def _if_broken(c, text):
    """``text`` where the row breaks the rule ``c``, else empty (also where the rule does not apply)."""
    return if_(IsBlank(Ref(c.ok)), "", if_(Ref(c.ok), "", text))


def _check(reg: Registry, r: Ctx) -> None:
    """The row's check: every rule it breaks, as the workbook's check cell shows it."""
    reg.section = "constraints"
    d = definer(reg, TEXT, doc("constraints"))
    texts, texts_zh = [], []
    for c in reg.constraints:
        word, word_zh = ("", "") if c.severity == ERROR else ("warning: ", "警告：")
        message = d(
            c.message,
            _if_broken(c, sentence("{}: expected {}, found {}", c.column, c.expected, c.found)),
            f"the rule {c.key}, where the row breaks it",
            f"规则 {c.key}（该行违反时）",
        )
        texts.append(_if_broken(c, sentence("{}{}; ", word, message)))
        texts_zh.append(
            _if_broken(c, sentence("{}{}：{}（{}）；", word_zh, c.column, c.zh, c.found))
        )
    for suffix, rules in (("", texts), ("_zh", texts_zh)):
        # in parts of a few rules each: a spreadsheet formula has at most 8,192 characters
        parts = [
            d(
                f"check_message{suffix}_{i // CHECK_RULES_PER_PART + 1}",
                concat(*rules[i : i + CHECK_RULES_PER_PART]),
                f"rules the row breaks ({i + 1}-{min(i + CHECK_RULES_PER_PART, len(rules))}){suffix and ' (zh)'}",
                "该行违反的规则",
            )
            for i in range(0, len(rules), CHECK_RULES_PER_PART)
        ]
        d(
            f"check_message{suffix}",
            concat(*parts),
            "rules the row breaks" + (suffix and " (zh)"),
            "该行违反的规则",
        )
    flagged = [_if_broken(c, concat(", ", c.column)) for c in reg.constraints]
    d(
        "check_columns",
        drop_first(concat(*flagged), 2),
        "columns a rule flags",
        "被规则标记的列",
        source=f"{doc('constraints')}; the rules in words: the workbook's check cell and the "
        "JSON's warnings",
    )
    broken = [if_(IsBlank(Ref(c.ok)), False, negate(Ref(c.ok))) for c in reg.constraints]
    d(
        "check_says_something",
        any_of(*broken),
        "the row breaks a rule (a warning: an error stops the row)",
        "该行违反规则（警告；错误会拒绝该行）",
        unit=BOOL,
    )
    errors = [c for c in reg.constraints if c.severity == ERROR]
    d(
        "check_ok",
        all_of(*(if_(IsBlank(Ref(c.ok)), True, Ref(c.ok)) for c in errors)),
        "the row meets every rule",
        "该行满足全部规则",
        unit=BOOL,
    )
