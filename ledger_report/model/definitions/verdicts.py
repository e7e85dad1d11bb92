"""Verdicts a review acts on, each with its reason in words and numbers: memory (fits, does not fit,
cannot tell; a measured peak is a fact), the deadline (meets, late by N days) and bandwidth
(offloaded states keep up with the step or not); the row's check text; and the budget figures."""

from __future__ import annotations

from ..expr import Col, IsBlank, Ref, all_of, any_of, concat, drop_first, gb_text, grouped, if_, negate
from ..registry import BOOL, DAYS, ERROR, MONEY, NODE_HOURS, TEXT, Registry
from .common import Ctx, doc

CHECK_RULES_PER_PART = 8

# The inputs the memory estimate needs beyond the parameters: named when they are missing.
PEAK_NEEDS = ("seq_len", "layers", "hidden", "heads", "ffn_hidden", "vocab")


def _missing(cols) -> object:
    """The names of the empty columns among ``cols``, comma separated."""
    return drop_first(concat(*(if_(IsBlank(Col(c)), concat(", ", c), "") for c in cols)), 2)


def define(reg: Registry, r: Ctx) -> None:
    reg.section = "verdicts"
    d = reg.define
    hbm, peak, state = r.hbm_bytes, r.peak, r.state_hbm
    measured = r.measured_bytes
    over_state = state.gt(hbm)
    known = negate(IsBlank(peak))
    given = negate(IsBlank(measured))
    missing = d("peak_needs", _missing(PEAK_NEEDS), TEXT, "the columns the peak needs and the row leaves empty", "峰值所需而未给出的列", doc("verdicts"))
    r.memory_verdict = d(
        "verdict_memory",
        if_(given, if_(measured.le(hbm), "measured: fits", "measured: does not fit"),
            if_(known, if_(peak.le(hbm), "fits", "does not fit"),
                if_(over_state, "does not fit", "cannot tell"))),
        TEXT, "memory verdict", "显存结论", doc("verdicts"),
    )
    over = peak - hbm
    d("verdict_memory_reason", if_(
        given,
        concat("measured ", gb_text(measured), " of ", gb_text(hbm), " HBM; the estimate on the device is ", gb_text(peak), if_(known, concat(" (", if_(peak.ge(measured), "+", "−"), gb_text(if_(peak.ge(measured), peak - measured, measured - peak)), ")"), "")),
        if_(known,
            concat("peak ", gb_text(peak), " on the device against ", gb_text(hbm), " of HBM (", if_(over.gt(0), concat(gb_text(over), " over"), concat(gb_text(hbm - peak), " to spare")), ")"),
            if_(over_state,
                concat("the state alone, ", gb_text(state), ", is above ", gb_text(hbm), " of HBM"),
                concat("the peak needs ", missing, ", which the row leaves empty")))),
        TEXT, "why", "原因", doc("verdicts"),
    )
    d("verdict_memory_reason_zh", if_(
        given,
        concat("实测 ", gb_text(measured), "，显存 ", gb_text(hbm), "；设备口径估算 ", gb_text(peak)),
        if_(known,
            concat("设备峰值 ", gb_text(peak), "，显存 ", gb_text(hbm), if_(over.gt(0), concat("，超出 ", gb_text(over)), concat("，余 ", gb_text(hbm - peak)))),
            if_(over_state, concat("仅模型状态 ", gb_text(state), " 已超过显存 ", gb_text(hbm)), concat("峰值需要 ", missing, "，而该行未给出")))),
        TEXT, "why (zh)", "原因", doc("verdicts"),
    )

    # the deadline -----------------------------------------------------------------------------
    window_days = d("train_window_days", r.days - r.reserve, DAYS, "days available for training (deadline less reserve)", "可用于训练的天数（期限减预留）", doc("compute-floor"))
    late = d("days_over_deadline", r.days_on_config - window_days, DAYS, "days beyond the deadline (negative: days to spare)", "超出期限的天数（负值为余量）", doc("verdicts"))
    meets = d("meets_deadline", late.le(0), BOOL, "meets the deadline on this configuration's GPUs", "本配置能否按期完成", doc("verdicts"))
    d("verdict_deadline", if_(IsBlank(meets), "cannot tell", if_(meets, "meets", concat("late by ", grouped(late, 1), " days"))), TEXT, "deadline verdict", "期限结论", doc("verdicts"))
    d("verdict_deadline_reason", if_(IsBlank(meets), concat("needs ", _missing(("tokens", "days", "seq_len", "global_batch")), ", which the row leaves empty"),
                                     concat(grouped(r.days_on_config, 1), " days on ", r.gpus, " GPUs against ", grouped(window_days, 1), " days (", r.days, " less ", r.reserve, " in reserve)")),
      TEXT, "why", "原因", doc("verdicts"))
    d("verdict_deadline_reason_zh", if_(IsBlank(meets), concat("需要 ", _missing(("tokens", "days", "seq_len", "global_batch")), "，而该行未给出"),
                                        concat(r.gpus, " 卡需 ", grouped(r.days_on_config, 1), " 天，可用 ", grouped(window_days, 1), " 天（期限 ", r.days, " 天，预留 ", r.reserve, " 天）")),
      TEXT, "why (zh)", "原因", doc("verdicts"))
    d("verdict_deadline_zh", if_(IsBlank(meets), "无法判断", if_(meets, "按期", concat("延期 ", grouped(late, 1), " 天"))), TEXT, "deadline verdict (zh)", "期限结论", doc("verdicts"))

    # bandwidth: offloaded states must stream in and out within the step -----------------------
    stream, budget = r.offload_s, r.step_budget
    d("verdict_bandwidth", if_(negate(r.has_offload), "nothing offloaded",
                               if_(any_of(IsBlank(stream), IsBlank(budget)), "cannot tell", if_(stream.le(budget), "keeps up", "too slow"))),
      TEXT, "bandwidth verdict", "带宽结论", doc("verdicts"))
    d("verdict_bandwidth_reason", if_(negate(r.has_offload), "every state is in HBM",
                                      concat("streaming the offloaded states takes ", grouped(stream, 1), " s of a ", grouped(budget, 1), " s step")),
      TEXT, "why", "原因", doc("verdicts"))
    d("verdict_bandwidth_reason_zh", if_(negate(r.has_offload), "所有状态都在显存中",
                                         concat("换入换出卸载状态需 ", grouped(stream, 1), " 秒，每步预算 ", grouped(budget, 1), " 秒")),
      TEXT, "why (zh)", "原因", doc("verdicts"))
    d("verdict_memory_zh", if_(given, if_(measured.le(hbm), "实测：放得下", "实测：放不下"),
                               if_(known, if_(peak.le(hbm), "放得下", "放不下"), if_(over_state, "放不下", "无法判断"))),
      TEXT, "memory verdict (zh)", "显存结论", doc("verdicts"))
    d("verdict_bandwidth_zh", if_(negate(r.has_offload), "无卸载", if_(any_of(IsBlank(stream), IsBlank(budget)), "无法判断", if_(stream.le(budget), "跟得上", "太慢"))),
      TEXT, "bandwidth verdict (zh)", "带宽结论", doc("verdicts"))
    # each verdict's tone, for the reports to colour it by: "good", "bad" or "unknown" (never blank)
    tones = [
        d("verdict_memory_tone", if_(given, if_(measured.le(hbm), "good", "bad"),
                                     if_(known, if_(peak.le(hbm), "good", "bad"), if_(over_state, "bad", "unknown"))),
          TEXT, "memory verdict: good, bad or unknown", "显存结论：好、坏或未知", doc("verdicts")),
        d("verdict_deadline_tone", if_(IsBlank(meets), "unknown", if_(meets, "good", "bad")),
          TEXT, "deadline verdict: good, bad or unknown", "期限结论：好、坏或未知", doc("verdicts")),
        d("verdict_bandwidth_tone", if_(negate(r.has_offload), "good",
                                        if_(any_of(IsBlank(stream), IsBlank(budget)), "unknown", if_(stream.le(budget), "good", "bad"))),
          TEXT, "bandwidth verdict: good, bad or unknown", "带宽结论：好、坏或未知", doc("verdicts")),
    ]
    d("verdicts_bad", any_of(*(t.eq("bad") for t in tones)), BOOL, "a verdict says no", "有否定结论", doc("verdicts"))

    # figures the page states in other words (meets the deadline, days over it and the bandwidth gate
    # in the verdicts; the first step's peak in the note on the first step) are in the JSON and the
    # workbook's Ledgers, not repeated on the pages

    # budget ----------------------------------------------------------------------------------
    reg.section = "budget"
    price = r.price
    d("currency", Col("currency"), TEXT, "currency", "货币", "input column (docs/columns.md)")
    d("currency_given", negate(IsBlank(Col("currency"))), BOOL, "a currency is given", "给出货币", "input column (docs/columns.md)")
    d("node_hours", r.gpu_hours / r.gpus_per_node, NODE_HOURS, "node-hours", "节点小时", "GPU-hours ÷ GPUs per node")
    d("cost_with_reserve", r.gpus * (r.days_on_config + r.reserve) * 24 * price, MONEY, "cost including the reserved days", "含预留天数的成本", "GPUs × (days needed + reserve days) × 24 × price")
    d("cost_deadline_hold", r.gpus * r.days * 24 * price, MONEY, "cost of holding these GPUs for the whole deadline", "整个期限占用这些 GPU 的成本", "GPUs × deadline days × 24 × price")

    # the row's check: every rule it breaks, as the workbook's check cell shows it ---------------
    reg.section = "constraints"
    texts = []
    for c in reg.constraints:
        word = "" if c.severity == ERROR else "warning: "
        texts.append(if_(IsBlank(Ref(c.ok)), "", if_(Ref(c.ok), "", concat(word, c.column, ": expected ", c.expected, ", found ", c.found, "; "))))
    # in parts of a few rules each: a spreadsheet formula has at most 8,192 characters
    parts = [d(f"check_message_{i // CHECK_RULES_PER_PART + 1}", concat(*texts[i:i + CHECK_RULES_PER_PART]), TEXT,
               f"rules the row breaks ({i + 1}-{min(i + CHECK_RULES_PER_PART, len(texts))})", "该行违反的规则", doc("constraints"))
             for i in range(0, len(texts), CHECK_RULES_PER_PART)]
    d("check_message", concat(*parts), TEXT, "rules the row breaks", "该行违反的规则", doc("constraints"))
    d("check_ok", all_of(*(if_(IsBlank(Ref(c.ok)), True, Ref(c.ok)) for c in reg.constraints if c.severity == ERROR)), BOOL,
      "the row meets every rule", "该行满足全部规则", doc("constraints"))
