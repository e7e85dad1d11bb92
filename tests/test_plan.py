"""The planner (CONTRACT section 7, issue 6): plans that the engine confirms, and none cheaper missed."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ledger_report.engine import compute, config_from_mapping
from ledger_report.errors import InputError
from ledger_report.model.definitions import REGISTRY
from ledger_report.model.evaluate import evaluate_row
from ledger_report.model.tables import tables
from ledger_report.plan import (
    CHUNK,
    LOSS_CHUNK_CHOICES,
    MARGIN,
    MIN_TOKENS_PER_CP_RANK,
    SCHEMA,
    _evaluate,
    _prepare,
    plan,
    plan_document,
    plan_rows,
)

# Seed 004: Qwen3-8B, 100B tokens, 30 days, H100 at 40 % MFU (section 2 and 4 of the seed).
QWEN3_8B_JOB = dict(
    name="qwen3-8b", layers=36, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn_hidden=12288,
    vocab=151936, qk_norm=True, seq_len=8192, global_batch=384, tokens=100_000_000_000, days=30.0,
    gpu="H100-SXM", mfu=0.4, price_per_gpu_hour=2.0,
)

# Seed 000's 35B MoE on H20 (seq 49,152, micro-batch 1, global batch 80, full recompute, Megatron).
# Parameter counts from the seed (35B total, 32.114B routed experts); the architecture columns are
# a Qwen3.5-35B-A3B-like guess (40 layers × 256 experts × 3·2048·512 = 32.2B), needed for the
# activations; tokens, days, mfu and price are invented for the test.
MOE_35B_JOB = dict(
    name="moe-35b", layers=40, hidden=2048, heads=16, kv_heads=2, head_dim=256, ffn_hidden=512,
    vocab=151936, experts=256, topk=8, moe_ffn_hidden=512, shared_expert_ffn=512, full_attention_every=4,
    params_total=35_000_000_000, params_expert=32_114_000_000, params_active=3_000_000_000,
    framework="megatron", gpu="H20", seq_len=49152, micro_batch=1, global_batch=80, recompute="full",
    tokens=100_000_000_000, days=30.0, reserve_days=3.0, mfu=0.3, price_per_gpu_hour=1.0,
)

# Small jobs for the exhaustive scalar search (a few hundred to a thousand candidates each).
TINY_DENSE = dict(
    name="tiny-dense", layers=2, hidden=1024, heads=8, kv_heads=4, ffn_hidden=4096, vocab=32000,
    seq_len=1024, global_batch=2, tokens=200_000_000_000, days=10.0, reserve_days=1.0,
    hbm_gb=3.0, peak_tflops=100.0, gpus_per_node=8, mfu=0.4, price_per_gpu_hour=1.5,
)
TINY_MOE = dict(
    name="tiny-moe", layers=2, hidden=1024, heads=8, kv_heads=2, ffn_hidden=2048, vocab=32000,
    experts=4, topk=2, moe_ffn_hidden=1024, framework="megatron", recompute="full", micro_batch=1,
    seq_len=1024, global_batch=4, tokens=300_000_000_000, days=10.0, hbm_gb=2.5, peak_tflops=100.0,
    gpus_per_node=8, mfu=0.3, price_per_gpu_hour=1.0,
)

FIGURES = ("peak_bytes_per_rank", "days_on_config", "gpu_hours", "cost")


def _cfg(row):
    return config_from_mapping({k: v for k, v in row.items() if v is not None})


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


@pytest.fixture(scope="module")
def qwen_plans():
    return {rd: plan(_cfg({**QWEN3_8B_JOB, "reserve_days": rd}), top=10) for rd in (0.0, 5.0)}


@pytest.fixture(scope="module")
def moe_plans():
    return plan(_cfg(MOE_35B_JOB), top=10)


# ---- every plan, through the engine -------------------------------------------------------------
@pytest.mark.parametrize("job", ["qwen-r0", "qwen-r5", "moe"])
def test_every_plan_row_fits_and_meets_its_deadline_in_the_engine(job, qwen_plans, moe_plans):
    """Each plan's row, run through compute, gives the planner's figures (rel 1e-9), fits the margin and the deadline."""
    result = {"qwen-r0": qwen_plans[0.0], "qwen-r5": qwen_plans[5.0], "moe": moe_plans}[job]
    assert result["plans"], result
    for p in result["plans"]:
        v = compute(config_from_mapping(p["row"])).values
        assert v["peak_bytes_per_rank"] <= result["margin"] * v["hbm_bytes"]
        assert v["days_on_config"] <= v["days"] - v["reserve_days"]
        assert p["peak_bytes_per_rank"] == pytest.approx(v["peak_bytes_per_rank"], rel=1e-9)
        assert p["hbm_bytes"] == pytest.approx(v["hbm_bytes"], rel=1e-12)
        assert p["days"] == pytest.approx(v["days_on_config"], rel=1e-9)
        assert p["gpu_hours"] == pytest.approx(v["gpu_hours"], rel=1e-9)
        assert p["cost"] == pytest.approx(v["cost"], rel=1e-9)
        assert p["gpus"] == v["gpus"]
        assert p["row"]["name"] == f"{result['name']}-p{p['rank']}"
        assert all(x is not None for x in p["row"].values())


@pytest.mark.parametrize("job", ["qwen-r0", "qwen-r5", "moe"])
def test_plans_are_ranked_by_cost_then_gpus(job, qwen_plans, moe_plans):
    """Ranks follow cost, then GPU count (CONTRACT §7); ranks count from 1."""
    result = {"qwen-r0": qwen_plans[0.0], "qwen-r5": qwen_plans[5.0], "moe": moe_plans}[job]
    keys = [(p["cost"], p["gpus"]) for p in result["plans"]]
    assert keys == sorted(keys)
    assert [p["rank"] for p in result["plans"]] == list(range(1, len(keys) + 1))


@pytest.mark.parametrize("job", ["qwen-r0", "moe"])
def test_hardware_flops_utilisation_is_held_fixed(job, qwen_plans, moe_plans):
    """Every plan's HFU equals the row's (mfu × the registry's recompute factor: full 8/6, seed 000 §6)."""
    result, row = {"qwen-r0": (qwen_plans[0.0], QWEN3_8B_JOB), "moe": (moe_plans, MOE_35B_JOB)}[job]
    hfu = compute(_cfg({**row, "reserve_days": row.get("reserve_days", 0.0)})).values["hfu"]
    for p in result["plans"]:
        v = compute(config_from_mapping(p["row"])).values
        assert v["hfu"] == pytest.approx(hfu, rel=1e-12)
        if p["row"]["recompute"] == "full":
            assert p["row"]["mfu"] == pytest.approx(hfu * 6 / 8, rel=1e-12)


def test_full_recompute_plan_carries_three_quarters_of_the_mfu():
    """Seed 000 §6: full recompute is 8/6 the hardware FLOPs, so at fixed HFU its mfu is 0.4 × 6/8 = 0.3."""
    job = {**QWEN3_8B_JOB, "tokens": 1_000_000_000, "reserve_days": 0.0}
    s = _prepare(_cfg(job))
    mfus = {b.recompute: b.mfu for b in s.batches}
    assert mfus["none"] == 0.4
    assert mfus["full"] == pytest.approx(0.3, rel=1e-12)
    assert 0.3 < mfus["selective"] < 0.4


# ---- seed 004 --------------------------------------------------------------------------------------
@pytest.mark.parametrize("reserve, gpus", [(0.0, 6), (5.0, 7)])
def test_seed_004_job_needs_at_least_six_h100(reserve, gpus, qwen_plans):
    """Seed 004 §4: 5.27e21 FLOPs at 989 TFLOP/s × 40 % needs 6 H100 for 30 days (25.7 days on 6),
    7 when 5 of the 30 days are reserved; memory is solved by layout, so the compute gate sets the count."""
    result = qwen_plans[reserve]
    best = result["plans"][0]
    assert best["gpus"] >= 6
    assert best["gpus"] == gpus
    v = compute(_cfg({**QWEN3_8B_JOB, "reserve_days": reserve})).values
    assert v["min_gpus_compute"] == gpus
    assert best["cost"] == pytest.approx(2.0 * 5.2658e21 / (989e12 * 0.4) / 3600, rel=1e-4)


# ---- exhaustive scalar search on small spaces ---------------------------------------------------
def _scalar_search(job, zeros, modes, offload):
    """Every layout by the planner's documented rules, each through compute; returns the feasible ones."""
    T = tables()
    v0 = evaluate_row(REGISTRY, job, T)
    hfu = v0["hfu"]
    gb, L, seq = job["global_batch"], job["layers"], job["seq_len"]
    experts = job.get("experts", 0)
    widths = [job["ffn_hidden"]] + ([job.get("moe_ffn_hidden", job["ffn_hidden"])] if experts else [])
    tps = [t for t in _divisors(math.gcd(job["heads"], job.get("kv_heads", job["heads"])))
           if t <= job["gpus_per_node"] and all(w % t == 0 for w in widths)]
    cps = [c for c in _divisors(seq) if c == 1 or seq // c >= MIN_TOKENS_PER_CP_RANK]
    eps = _divisors(experts) if experts else [1]
    mbs = [job["micro_batch"]] if "micro_batch" in job else _divisors(gb)
    evaluated, feasible = 0, []
    for mode in modes:
        ratio = evaluate_row(REGISTRY, {**job, "mfu": 1.0, "recompute": mode}, T)["hfu"]
        mfu = job["mfu"] if mode == v0["recompute"] else hfu / ratio
        if mfu > 1:
            continue
        for zero, off, dp, mb, tp, cp, ep, lc in itertools.product(
            zeros, offload, _divisors(gb), mbs, tps, cps, eps, LOSS_CHUNK_CHOICES
        ):
            if gb % (dp * mb):
                continue
            if (dp * cp * tp) % (ep * tp):
                continue
            if zero and dp * cp == 1:
                continue
            for pp in range(1, L + 1):
                if pp > gb // (dp * mb):
                    continue
                row = {**job, "dp": dp, "tp": tp, "pp": pp, "cp": cp, "ep": ep, "zero": zero,
                       "recompute": mode, "micro_batch": mb, "loss_chunks": lc, "mfu": mfu}
                if tp > 1 and seq % (tp * cp) == 0:
                    row["sequence_parallel"] = True
                if off:
                    row["master_at"] = row["optimizer_at"] = "host"
                v = compute(config_from_mapping(row)).values
                evaluated += 1
                ok = v["peak_bytes_per_rank"] <= MARGIN * v["hbm_bytes"] and v["days_on_config"] <= v["days"] - v["reserve_days"]
                if off:
                    ok = ok and v["host_fits"] and v["offload_stream_s"] <= v["step_budget_s"]
                if ok:
                    feasible.append((v["cost"], v["gpus"], row))
    return evaluated, feasible


@pytest.mark.parametrize(
    "job, zeros, modes",
    [
        (TINY_DENSE, (0, 1, 2, 3), ("none", "selective", "full")),
        (TINY_MOE, (0, 1, 3), ("full",)),  # megatron: no ZeRO-2; recompute given
    ],
    ids=["dense-generic", "moe-megatron"],
)
def test_exhaustive_scalar_search_finds_nothing_cheaper(job, zeros, modes):
    """A scalar search with compute over the same small space: same candidate and feasible counts,
    no feasible plan cheaper (cost, then GPUs) than the planner's first, and the first is feasible."""
    result = plan(_cfg(job), top=5)
    evaluated, feasible = _scalar_search(job, zeros, modes, (False, True))
    assert result["candidates_evaluated"] == evaluated
    assert result["feasible"] == len(feasible)
    assert feasible, "the small space should hold feasible plans"
    best_cost, best_gpus, _ = min(feasible, key=lambda t: (t[0], t[1]))
    top = result["plans"][0]
    assert (top["cost"], top["gpus"]) == (pytest.approx(best_cost, rel=1e-12), best_gpus)
    # the space has both memory-bound and deadline-bound candidates, so both gates were exercised
    assert 0 < result["fits_memory"] < evaluated
    assert 0 < result["meets_deadline"] < evaluated


# ---- vectorized figures equal scalar ones -------------------------------------------------------
@pytest.mark.parametrize("job", [QWEN3_8B_JOB, MOE_35B_JOB, TINY_DENSE], ids=["qwen3-8b", "moe-35b", "tiny"])
def test_vectorized_values_equal_scalar_compute_for_random_candidates(job):
    """For random candidates of every batch, the arrays the planner ranks equal compute's numbers."""
    s = _prepare(_cfg(job))
    rng = np.random.default_rng(4)
    for batch in s.batches:
        start = int(rng.integers(0, max(1, batch.size - 2000)))
        sl = slice(start, min(batch.size, start + 2000))
        f = _evaluate(batch, sl, MARGIN)
        for j in rng.choice(sl.stop - sl.start, size=min(3, sl.stop - sl.start), replace=False):
            v = compute(config_from_mapping(batch.row(start + int(j)))).values
            for k in FIGURES:
                assert float(f[k][j]) == pytest.approx(v[k], rel=1e-9), k
            assert bool(f["fits"][j]) == (v["peak_bytes_per_rank"] <= MARGIN * v["hbm_bytes"])


# ---- rows, documents, inputs ----------------------------------------------------------------------
def test_plan_document_has_the_contract_shape_and_one_block_per_row():
    """CONTRACT §7 keys; plans of each input row in input order, named <input>-p<rank>; progress reaches the total."""
    calls = []
    rows = [_cfg(TINY_DENSE), _cfg({**TINY_DENSE, "name": "tiny-2", "days": 20.0})]
    doc = plan_document(rows, top=3, progress=lambda done, total: calls.append((done, total)))
    assert doc["schema"] == SCHEMA
    assert set(doc) >= {"schema", "candidates_evaluated", "feasible", "seconds", "plans"}
    for p in doc["plans"]:
        assert set(p) >= {"rank", "row", "gpus", "days", "peak_bytes_per_rank", "hbm_bytes", "gpu_hours", "cost"}
    assert [p["row"]["name"] for p in doc["plans"]] == [f"{n}-p{i}" for n in ("tiny-dense", "tiny-2") for i in (1, 2, 3)]
    assert doc["candidates_evaluated"] == sum(i["candidates_evaluated"] for i in doc["inputs"])
    dones = [d for d, _ in calls]
    assert dones == sorted(dones) and calls[-1] == (doc["candidates_evaluated"], doc["candidates_evaluated"])
    assert len(plan_rows(doc)) == 6


@pytest.mark.parametrize("reserve", [0.0, 5.0])
def test_plans_are_distinct_layouts(reserve, qwen_plans):
    """Candidates differing only in micro-batch or loss chunks collapse to one listed plan."""
    result = qwen_plans[reserve]
    layouts = [tuple(p["row"].get(c) for c in ("gpu", "dp", "tp", "pp", "cp", "ep", "zero", "recompute", "optimizer_at"))
               for p in result["plans"]]
    assert len(layouts) == len(set(layouts)) == 10


def test_given_columns_are_kept_and_searched_ones_are_filled():
    """A column the row gives is not searched; micro-batch, zero and tp of the plan obey the rules."""
    job = {**QWEN3_8B_JOB, "tp": 2, "zero": 1, "reserve_days": 0.0}
    result = plan(_cfg(job), top=5)
    assert "tp" not in result["searched"] and "zero" not in result["searched"]
    for p in result["plans"]:
        r = p["row"]
        assert r["tp"] == 2 and r["zero"] == 1 and r["sequence_parallel"] is True
        assert job["global_batch"] % (r["dp"] * r["micro_batch"]) == 0
        assert r["pp"] <= job["global_batch"] // (r["dp"] * r["micro_batch"])


def test_megatron_never_gets_zero_2():
    """CONTRACT §3.4: zero=2 is an input error under framework=megatron, so the planner never proposes it."""
    s = _prepare(_cfg(TINY_MOE))
    assert {b.zero for b in s.batches} == {0, 1, 3}


def test_gpu_is_searched_over_the_catalogue_when_the_row_names_none():
    """Without gpu (or overrides) every catalogue GPU is a candidate; the plans name theirs."""
    job = {k: v for k, v in TINY_DENSE.items() if k not in ("hbm_gb", "peak_tflops", "gpus_per_node")}
    s = _prepare(_cfg(job))
    from ledger_report.catalogue import GPU_NAMES

    assert {b.gpu for b in s.batches} == set(GPU_NAMES)
    result = plan(_cfg(job), top=3)
    for p in result["plans"]:
        assert p["row"]["gpu"] in GPU_NAMES
        assert compute(config_from_mapping(p["row"])).values["gpu"] == p["gpu"]


def test_params_per_rank_is_resolved_once_and_not_carried():
    """Seed 000 §2: params_per_rank at ep 8 solves the expert split; plans carry params_expert instead."""
    job = {k: v for k, v in MOE_35B_JOB.items() if k != "params_expert"}
    job.update(params_per_rank=6_900_000_000, ep=8, dp=40, measured_peak_gb=85.6)
    s = _prepare(_cfg(job))
    assert "params_per_rank" not in s.base and "measured_peak_gb" not in s.base
    assert s.base["params_expert"] == pytest.approx(32.114e9, rel=1e-3)


@pytest.mark.parametrize("column", ["tokens", "days", "global_batch", "seq_len"])
def test_a_row_without_the_job_is_an_input_error(column):
    """The planner needs the job; a missing column is an InputError naming it (exit 1 at the CLI)."""
    job = {k: v for k, v in TINY_DENSE.items() if k != column}
    with pytest.raises(InputError) as e:
        plan(_cfg(job))
    assert column in str(e.value)


def test_an_impossible_job_reports_why():
    """No plan is a finding, not an error: the result says which gate nothing passes."""
    result = plan(_cfg({**TINY_DENSE, "hbm_gb": 0.5}), top=3)
    assert result["plans"] == [] and result["feasible"] == 0
    assert "HBM" in result["reason"]


def test_chunking_does_not_change_the_answer(monkeypatch):
    """Evaluating in smaller chunks gives the same counts and plans (the pool keeps the best)."""
    import ledger_report.plan as planner

    a = plan(_cfg(TINY_DENSE), top=5)
    monkeypatch.setattr(planner, "CHUNK", 97)
    b = plan(_cfg(TINY_DENSE), top=5)
    assert CHUNK != 97
    assert (a["candidates_evaluated"], a["feasible"]) == (b["candidates_evaluated"], b["feasible"])
    assert [p["row"] for p in a["plans"]] == [p["row"] for p in b["plans"]]


@pytest.mark.parametrize("job", ["qwen-r5", "moe"])
def test_plan_rows_survive_a_csv_round_trip_through_the_reader(job, tmp_path, qwen_plans, moe_plans):
    """CONTRACT §7: a plan's row is an input row ``calc`` and ``build`` accept; read back from CSV it gives the same figures."""
    result = {"qwen-r5": qwen_plans[5.0], "moe": moe_plans}[job]
    import csv

    from ledger_report.config import COLUMN_NAMES
    from ledger_report.inputs import read_configs

    path = tmp_path / "plans.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMN_NAMES))
        w.writeheader()
        for p in result["plans"]:
            w.writerow({k: ("true" if v is True else "false" if v is False else v) for k, v in p["row"].items()})
    configs = read_configs(path)
    assert [c.name for c in configs] == [p["row"]["name"] for p in result["plans"]]
    for c, p in zip(configs, result["plans"]):
        v = compute(c).values
        for k, key in (("peak_bytes_per_rank", "peak_bytes_per_rank"), ("days", "days_on_config"), ("gpu_hours", "gpu_hours"), ("cost", "cost")):
            assert p[k] == pytest.approx(v[key], rel=1e-9), k
