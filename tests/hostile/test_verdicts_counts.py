"""The red-team pass's verdict and count cases: a row with only params_total on an 80 GB GPU, whose
state alone cannot fit; and "active parameters" as model cards count them (without the input
embedding), beside the count that includes it, with the FLOPs per token unchanged."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ledger_report.cli import main
from ledger_report.engine import compute, config_from_mapping

B = 10**9


def test_bare_params_total_over_hbm_does_not_fit(tmp_path):
    """5T parameters and nothing else on an 80 GB GPU (hbm_gb 80): the state alone, by hand 5 × 10^12
    × 16 bytes (bf16 weights and grads 2 + 2, fp32 master, m and v 4 + 4 + 4, mixed-precision Adam:
    Rajbhandari et al. 2020, ZeRO, §3.1) = 80 TB, is over 80 GB whatever the activations, so the
    verdict is "does not fit" with that reason, not "cannot tell"; in the terminal table and the
    JSON document alike."""
    path = tmp_path / "bare.csv"
    path.write_text("name,params_total,hbm_gb\nbig,5T,80\n", encoding="utf-8")
    lg = compute(config_from_mapping({"name": "big", "params_total": 5 * 10**12, "hbm_gb": 80}))
    assert lg["state_bytes_per_rank"] == 5 * 10**12 * 16
    assert lg["verdict_memory"] == "does not fit" and lg["verdict_memory_tone"] == "bad"
    assert lg["verdict_memory_reason"] == "the state alone, 80.0 TB, is above 80.0 GB of HBM"
    table = CliRunner().invoke(main, ["calc", str(path)])
    assert table.exit_code == 0 and "memory verdict: does not fit" in table.output
    doc = json.loads(CliRunner().invoke(main, ["calc", str(path), "--json"]).stdout)
    assert doc["configs"][0]["verdicts"]["memory"] == "does not fit"


def _model(name: str):
    return compute(config_from_mapping({"name": name, "model": name, "seq_len": 4096}))


def test_active_parameters_as_the_cards_count_them():
    """gpt-oss model card (arXiv 2508.10925) Table 1: gpt-oss-120b 5.13B active, gpt-oss-20b 3.61B;
    "Unembedding parameters are counted towards active, but not embeddings" (the red-team pass saw
    5.71 B).  Kimi K2 README (github.com/MoonshotAI/Kimi-K2): "32 billion activated parameters"
    (the pass saw 32.9 B): 31.69 B without the 163,840 × 7,168 embedding.  The count with the
    embedding stays, as Qwen's cards use it: Qwen3-30B-A3B "3.3B activated" truncates 3.35 B (with
    the 151,936 × 2,048 embedding; 3.04 B without)."""
    oss = _model("gpt-oss-120b")
    assert round(oss["params_active_card"] / B, 2) == 5.13
    assert round(_model("gpt-oss-20b")["params_active_card"] / B, 2) == 3.61
    assert oss["params_active"] - oss["params_active_card"] == 201_088 * 2_880  # padded vocab × h
    kimi = _model("Kimi-K2")
    assert round(kimi["params_active_card"] / B) == 32
    assert kimi["params_active"] - kimi["params_active_card"] == 163_840 * 7_168
    q30 = _model("Qwen3-30B-A3B")
    assert int(q30["params_active"] / B * 10) / 10 == 3.3  # the count with the embedding
    assert round(q30["params_active_card"] / B, 2) == 3.04


def test_the_models_list_shows_the_card_figure():
    """`ledger-report models` lists gpt-oss-120b's active parameters as the card's 5.13B (5,132,…)."""
    r = CliRunner().invoke(main, ["models"])
    line = next(x for x in r.output.splitlines() if x.startswith("gpt-oss-120b "))
    assert "5,132,849,472" in line and "5,711,982,912" not in line


def test_flops_per_token_unchanged_by_the_relabelling():
    """docs/scenarios.md's Qwen3-8B at seq 8,192: 52.7 GFLOPs per token, by hand
    6 × (8,190,735,360 − 151,936 × 4,096) + 6 × 36 × 8,192 × 32 × 128 = 52,658,190,336: the
    matmul parameters are the card count (the input embedding left out, the head kept)."""
    lg = compute(config_from_mapping({"name": "q", "model": "Qwen3-8B", "seq_len": 8192}))
    assert lg["params_active_card"] == 8_190_735_360 - 151_936 * 4_096
    assert lg["flops_per_token"] == 52_658_190_336
