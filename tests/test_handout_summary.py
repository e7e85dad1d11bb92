"""What the summaries and the terminal say, with the reasons: costs with
their currency and never ranked across currencies, the rules a row breaks in words, the deadline
column net of the reserve the verdict uses, no expert tensor parallel size for a dense model, no
holding cost under a late run, the plan handout's layouts and its Pareto front, and each page's
headline strip.  The handout is read as HTML (``render_html``: the same template and view as the
PDF) so that these tests need no WeasyPrint layout."""

from __future__ import annotations

import html as htmllib
import re
from dataclasses import replace
from pathlib import Path

from ledger_report import api
from ledger_report.engine import compute, compute_many, config_from_mapping
from ledger_report.render import handout, view
from ledger_report.render import page as pg
from ledger_report.render.table import render_plans, render_table
from ledger_report.report import DEFAULT

# Qwen3-8B (docs/scenarios.md) for 100B tokens, ZeRO-1 on 4 H100 at 40 % MFU: 5.266e21 FLOPs ÷ (4 ×
# 989e12 FLOP/s × 0.4) ÷ 86,400 = 38.5 days needed against a 30-day deadline with 5 days in
# reserve, so late; 4 × 38.52 days × 24 h × 2.5 = 9,244 in cost.
QWEN3_8B = {
    "name": "qwen3-8b",
    "layers": 36,
    "hidden": 4096,
    "heads": 32,
    "kv_heads": 8,
    "head_dim": 128,
    "ffn_hidden": 12288,
    "vocab": 151936,
    "qk_norm": True,
    "seq_len": 8192,
    "global_batch": 384,
    "tokens": 10**11,
    "days": 30,
    "reserve_days": 5,
    "dp": 4,
    "zero": 1,
    "gpu": "H100-SXM",
    "price_per_gpu_hour": 2.5,
    "mfu": 0.4,
}
H100_BF16_FLOPS = 989e12  # dense BF16 peak of an H100 SXM (ledger-report gpus)


def _text(html: str) -> str:
    """The HTML's text, tags dropped and whitespace collapsed."""
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", " ", html)))


def _two_currencies(tmp_path: Path) -> list:
    """One CSV file, rows in two currencies: a CNY row first, then a USD row, then a cheaper CNY
    row (prices per GPU-hour: 14 and 10 CNY, 2.5 USD)."""
    cols = [*QWEN3_8B, "currency"]
    rows = [
        {**QWEN3_8B, "name": "cny-a", "price_per_gpu_hour": 14, "currency": "CNY"},
        {**QWEN3_8B, "name": "usd-b", "price_per_gpu_hour": 2.5, "currency": "USD"},
        {**QWEN3_8B, "name": "cny-c", "price_per_gpu_hour": 10, "currency": "CNY"},
    ]
    path = tmp_path / "two-currencies.csv"
    lines = [",".join(cols)] + [
        ",".join(str(r[c]).lower() if r[c] is True else str(r[c]) for c in cols) for r in rows
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return api.compute(path)


def test_two_currencies_are_ranked_each_within_its_own(tmp_path):
    """One cost figure in CNY and one in USD are not one scale: by number the USD row (9,244 USD:
    4 GPUs × 38.52 days × 24 h × 2.5) would rank first among rows equally late; the summary instead
    groups the rows by currency in the order the file names them (CNY first) and ranks within
    each group by cost (10 CNY per GPU-hour before 14)."""
    lgs = _two_currencies(tmp_path)
    assert [lg["currency"] for lg in lgs] == ["CNY", "USD", "CNY"]
    assert {bool(lg["verdicts_bad"]) for lg in lgs} == {True}  # all late: only cost decides
    assert lgs[1]["cost"] < lgs[2]["cost"] < lgs[0]["cost"]  # by number alone: usd-b first
    assert [lgs[i].name for i in pg.rank_order(lgs)] == ["cny-c", "cny-a", "usd-b"]
    html = handout.render_html(lgs, "en")
    text = _text(html)
    assert "costs in different currencies are never compared" in text
    # each group headed by its currency, the rows under it in rank order
    order = [text.index(t) for t in ("costs in: CNY", "cny-c", "cny-a", "costs in: USD", "usd-b")]
    assert order == sorted(order)


def test_ledgers_not_ranked_keep_the_order_given(tmp_path):
    """Plans (a spec that ranks nothing) are listed as given, even in two currencies: grouped by
    currency the USD row would move last."""
    unranked = replace(DEFAULT, spec=replace(DEFAULT.spec, rank=()))
    rows = [lg.config for lg in _two_currencies(tmp_path)]
    lgs = list(compute_many(rows, unranked))
    assert [lg["currency"] for lg in lgs] == ["CNY", "USD", "CNY"]
    assert pg.rank_order(lgs) == [0, 1, 2]


def test_costs_carry_their_currency_on_the_pages_and_in_the_terminal(tmp_path):
    """Every cost shown (the summary's cell, the page's budget and headline, the terminal's
    report) says its currency: 4 × 38.516 days × 24 × 2.5 = 9,243.7 USD, shown as 9,244 USD."""
    lgs = _two_currencies(tmp_path)
    usd = lgs[1]
    days = usd["total_flops"] / (4 * H100_BF16_FLOPS * 0.4) / 86400
    assert abs(usd["days_on_config"] - days) < 1e-9 * days
    assert abs(usd["cost"] - 4 * days * 24 * 2.5) < 1e-6
    assert round(usd["cost"]) == 9244
    assert "cost: 9,244 USD" in render_table([usd])
    text = _text(handout.render_html([usd], "en"))
    assert text.count("9,244 USD") >= 3  # the summary, the headline strip, the budget
    assert not re.search(r"9,244(?! USD)", text)


def test_plan_table_cost_has_its_currency_and_no_plan_prints_the_reason():
    """``plan``'s table: a plan's cost with its row's currency; an input with no feasible plan
    prints its reason and what excluded the candidates, and no empty table under it."""
    plan = {
        "rank": 1,
        "row": {"name": "p1", "gpu": "H20", "dp": 8, "currency": "CNY"},
        "gpus": 8,
        "peak_bytes_per_rank": 70 * 10**9,
        "step_time_s": 2.0,
        "days": 3.5,
        "gpu_hours": 672.0,
        "cost": 9408.0,
    }
    doc = {"candidates_evaluated": 10, "feasible": 1, "seconds": 0.5, "inputs": [], "plans": [plan]}
    assert "9,408 CNY" in render_plans(doc)
    none = {
        "candidates_evaluated": 10,
        "feasible": 0,
        "seconds": 0.5,
        "inputs": [
            {
                "name": "x",
                "plans": [],
                "reason": "nothing fits in 80 GB",
                "excluded_by": {"memory": 10, "ok_ep_divides": 4},
            }
        ],
        "plans": [],
    }
    out = render_plans(none)
    assert "x: no plan: nothing fits in 80 GB" in out
    # each gate and rule in words, never its internal key (the walkthrough saw "ok_ep_divides")
    assert "10: the memory gate (peak ≤ 0.85 × HBM)" in out
    assert "4: the rule on ep: ep divides dp·cp·tp/etp" in out and "ok_" not in out
    assert "beside compute" not in out  # no table header


def test_a_warning_prints_its_rule_in_the_terminal_and_on_the_page():
    """params_total 35B against the architecture's count (the 35B MoE of test_handout): the
    terminal and the page give the rule (expected within 1 %, found 35,000,000,000, -14 %), not
    only the column it flags.  The count by hand: 40,359,389,184 with softmax attention in all
    48 layers, plus 36 layers × (33,718,464 parameters of a Gated DeltaNet block − 18,874,880 of
    the attention with its q/k norms) = 40,893,758,208 (the blocks as Hugging Face's
    qwen3_next/modeling_qwen3_next.py Qwen3NextGatedDeltaNet holds them: in_proj_qkvz 2048 ×
    12288, in_proj_ba 2048 × 64, conv1d 8192 × 4, dt_bias and A_log 32 each, the gated norm
    128, out_proj 4096 × 2048)."""
    from test_handout import MOE_35B

    lg = compute(config_from_mapping(dict(MOE_35B, name="flagged")))
    assert lg["check_columns"] == "params_total"
    rule = "expected params_total within 1 % of the architecture's count 40,893,758,208"
    assert rule in render_table([lg])
    assert rule in _text(handout.render_html([lg], "en"))


def test_the_deadline_column_is_net_of_the_reserve():
    """The summary's deadline column is the days the deadline verdict measures against: 30 − 5
    reserve = 25 days (verdict: 38.5 days needed, late by 13.5 = 38.5 − 25)."""
    lg = compute(config_from_mapping(QWEN3_8B))
    col = next(
        r for r in view.short_rows(lg, lg.model.spec.summary, "en") if r.key == "train_window_days"
    )
    assert col.value == 30 - 5 and col.label == "days available"
    assert "days" not in [r.key for r in view.short_rows(lg, lg.model.spec.summary, "en")]
    late = lg["days_on_config"] - col.value
    assert lg["verdict_deadline"] == f"late by {late:.1f} days" == "late by 13.5 days"


def test_expert_tensor_parallel_only_for_a_model_with_experts():
    """The layout line names etp only where there are experts to split (the 35B MoE), never for a
    dense model (Qwen3-8B)."""
    from test_handout import MOE_35B

    dense, moe = compute_many([config_from_mapping(QWEN3_8B), config_from_mapping(MOE_35B)])

    def layout_keys(lg):
        return [r.key for s in view.sections(lg, "en") if s.key == "layout" for r in s.rows]

    assert "etp" not in layout_keys(dense) and "etp" in layout_keys(moe)


def test_holding_cost_only_under_a_run_that_meets_the_deadline():
    """Holding 4 GPUs for the 30-day deadline costs 4 × 30 × 24 × 2.5 = 7,200, below the late
    run's 9,244: shown under it, it would read as a saving, so the budget leaves it out for a
    late run and shows it for one that meets its deadline (dp 8: 19.3 days)."""
    late, meets = compute_many(
        [config_from_mapping(QWEN3_8B), config_from_mapping(dict(QWEN3_8B, dp=8))]
    )
    assert late["cost_deadline_hold"] == 4 * 30 * 24 * 2.5 and not late["meets_deadline"]
    assert meets["meets_deadline"]

    def budget(lg):
        return [r.key for s in view.sections(lg, "en") if s.key == "budget" for r in s.rows]

    assert "cost_deadline_hold" not in budget(late) and "cost_deadline_hold" in budget(meets)
    for key in ("gpu_hours", "cost", "cost_with_reserve"):  # the budget box whole
        assert key in budget(late)
    # on the page, GPU-hours and the cost sit in the budget box (not in the compute floor)
    d = pg.page_data(late, "en")
    homes = {it["label"]: d.sections[it["sec"]]["key"] for it in d.items if it["kind"] == "row"}
    assert homes["GPU-hours"] == "budget" and homes["cost"] == "budget"


def test_verdict_reason_groups_thousands():
    """2,048 GPUs, not 2048, in the deadline verdict's reason (dp 512 × tp 4)."""
    lg = compute(config_from_mapping(dict(QWEN3_8B, dp=512, tp=4, global_batch=4096)))
    assert lg["gpus"] == 2048
    assert " on 2,048 GPUs " in lg["verdict_deadline_reason"]
    assert "2,048 卡" in lg["verdict_deadline_reason_zh"]


def test_each_page_leads_with_its_headline_strip():
    """Under the verdicts, before the state ledger: the spec's eight headline figures, each with
    its short label and its value as the view shows it."""
    lg = compute(config_from_mapping(QWEN3_8B))
    rows = view.short_rows(lg, lg.model.spec.headline, "en")
    assert len(rows) == 8
    html = handout.render_html([lg], "en")
    page = html[html.index('<section class="page config">') :]
    strip = page[page.index('<table class="headline') : page.index("Model-state ledger")]
    for r in rows:
        assert f'<p class="hl">{r.label}</p><p class="hv">{htmllib.escape(r.text)}</p>' in strip
    assert "9,244" in strip and "25 days" in strip  # cost; 30 − 5 days available


def test_plan_handout_shows_each_layout_and_the_pareto_front():
    """The plan handout's summary gives each plan's layout (dp × tp × pp × cp = GPUs, ep, ZeRO,
    recompute), and the first summary page draws the front of days against cost: one row per
    front plan in the order given, its days and cost as texts and as bars in per cent of the
    front's largest (dp 4 needs twice the days of dp 8 at about the same cost)."""
    plans = list(compute_many([config_from_mapping(dict(QWEN3_8B, name="p1", dp=8))]))
    front = list(
        compute_many(
            [
                config_from_mapping(dict(QWEN3_8B, name="f1", dp=8)),
                config_from_mapping(dict(QWEN3_8B, name="f2", dp=4)),
            ]
        )
    )
    html = handout.render_html(plans, "en", pareto=front)
    text = _text(html)
    assert "dp8×tp1×pp1×cp1 = 8 GPUs; ep1; ZeRO-1; recompute none" in text
    chart = pg.pareto(front, "en")
    assert [c["name"] for c in chart] == ["f1", "f2"]
    assert chart[1]["days_w"] == 100.0
    assert (
        abs(chart[0]["days_w"] - 100 * front[0]["days_on_config"] / front[1]["days_on_config"])
        < 0.01
    )
    assert 45 < chart[0]["days_w"] < 55  # twice the GPUs: about half the days
    assert "Pareto front: days against cost" in text
    body = html[html.index('<table class="pareto') :]
    assert body.index("f1") < body.index("f2")
    assert f'style="width: {chart[0]["days_w"]}%"' in body
    assert handout.render_html(plans, "en").count('class="pareto') == 0  # no front, no chart


def test_the_budget_box_is_whole_and_opens_the_page():
    """On every page of inputs/examples.csv, as first cut: the budget is one piece (never split
    over two columns) at the top of the first column, and the least read sections
    (page.FLOW_LAST: the parameters, the items outside the ledger, the assumptions) come last, in
    that order, on the same page (one page per configuration)."""
    from ledger_report.inputs import read_configs

    root = Path(__file__).resolve().parents[1]
    lgs = list(compute_many(read_configs(root / "inputs" / "examples.csv")))
    book = handout._Book(lgs, "en")
    for i, lg in enumerate(lgs):
        d = book.data(i)
        cols = handout._columns(d, handout._first_fit(d))
        assert len(cols) == pg.COLUMNS == 3
        budget = [
            (c, j)
            for c, col in enumerate(cols)
            for j, pc in enumerate(col)
            if pc["title"] == "Budget"
        ]
        assert budget == [(0, 0)], lg.name
        titles = [pc["title"] for col in cols for pc in col if not pc["cont"]]
        assert titles[-3:] == ["Parameters", "Not in the state ledger", ""], lg.name
