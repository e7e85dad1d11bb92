"""The planner (`ledger-report plan`): plans that the engine confirms, and none cheaper missed."""

from __future__ import annotations

import csv
import itertools
import math
import pathlib
import re
from importlib import resources

import numpy as np
import pytest
from support import jobs

from ledger_report.engine import compute, config_from_mapping
from ledger_report.errors import InputError
from ledger_report.planner import (
    CHUNK,
    CONSTRAINT_KEYS,
    COST_TOLERANCE,
    MARGIN,
    MIN_TOKENS_PER_CP_RANK,
    SCHEMA,
    _checks,
    _evaluate,
    _prepare,
    plan,
    plan_document,
)
from ledger_report.progress import counter

# docs/scenarios.md: Qwen3-8B, 100B tokens in 30 days, H100 at 40 % MFU (no days in reserve here).
QWEN3_8B_JOB = {k: v for k, v in jobs.QWEN3_8B_JOB.items() if k != "reserve_days"}

# docs/scenarios.md: the 35B MoE on H20 (seq 49,152, micro-batch 1, global batch 80, full recompute, Megatron).
# Parameter counts from docs/scenarios.md (35B total, 32.114B routed experts); the architecture columns are
# a Qwen3.5-35B-A3B-like guess (40 layers × 256 experts × 3·2048·512 = 32.2B), needed for the
# activations; tokens, days, mfu and price are invented for the test.
MOE_35B_JOB = dict(
    name="moe-35b",
    layers=40,
    hidden=2048,
    heads=16,
    kv_heads=2,
    head_dim=256,
    ffn_hidden=512,
    vocab=151936,
    experts=256,
    topk=8,
    moe_ffn_hidden=512,
    shared_expert_ffn=512,
    full_attention_every=4,
    linear_key_heads=16,
    linear_value_heads=32,
    linear_key_head_dim=128,
    linear_value_head_dim=128,
    linear_conv_kernel=4,
    params_total=35_000_000_000,
    params_expert=32_114_000_000,
    params_active=3_000_000_000,
    framework="megatron",
    gpu="H20",
    seq_len=49152,
    micro_batch=1,
    global_batch=80,
    recompute="full",
    tokens=100_000_000_000,
    days=30.0,
    reserve_days=3.0,
    mfu=0.3,
    price_per_gpu_hour=1.0,
)

# Small jobs for the exhaustive scalar search (a few hundred to a thousand candidates each).
TINY_DENSE = dict(
    name="tiny-dense",
    layers=2,
    hidden=1024,
    heads=8,
    kv_heads=4,
    ffn_hidden=4096,
    vocab=32000,
    seq_len=1024,
    global_batch=2,
    tokens=200_000_000_000,
    days=10.0,
    reserve_days=1.0,
    hbm_gb=3.0,
    peak_tflops=100.0,
    gpus_per_node=8,
    mfu=0.4,
    price_per_gpu_hour=1.5,
)
TINY_MOE = dict(
    name="tiny-moe",
    layers=2,
    hidden=1024,
    heads=8,
    kv_heads=2,
    ffn_hidden=2048,
    vocab=32000,
    experts=4,
    topk=2,
    moe_ffn_hidden=1024,
    framework="megatron",
    recompute="full",
    micro_batch=1,
    seq_len=1024,
    global_batch=4,
    tokens=300_000_000_000,
    days=10.0,
    hbm_gb=2.5,
    peak_tflops=100.0,
    gpus_per_node=8,
    mfu=0.3,
    price_per_gpu_hour=1.0,
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
@pytest.mark.slow
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
@pytest.mark.slow  # (the module's full searches: ~40 s of the quick loop)
def test_plans_are_ranked_by_cost_in_steps_then_gpus(job, qwen_plans, moe_plans):
    """Ranks follow the predicted cost in steps of COST_TOLERANCE (within a step, fewer GPUs first);
    ranks count from 1; no listed plan costs a step more than a later one."""
    result = {"qwen-r0": qwen_plans[0.0], "qwen-r5": qwen_plans[5.0], "moe": moe_plans}[job]
    steps = [math.floor(math.log(p["cost"]) / math.log1p(COST_TOLERANCE)) for p in result["plans"]]
    assert steps == sorted(steps)
    assert [p["rank"] for p in result["plans"]] == list(range(1, len(steps) + 1))


@pytest.mark.slow  # (the module's full searches: ~40 s of the quick loop)
@pytest.mark.parametrize("job", ["qwen-r0", "moe"])
def test_a_measured_mfu_calibrates_the_model_and_the_plans_keep_their_own_costs(
    job, qwen_plans, moe_plans
):
    """Issue: a row's mfu scales the matmul efficiency so the cheapest layout reaches it; the plans carry
    efficiency_scale, not mfu, so each layout's days and cost are its own prediction."""
    result, row = {"qwen-r0": (qwen_plans[0.0], QWEN3_8B_JOB), "moe": (moe_plans, MOE_35B_JOB)}[job]
    cal = result["calibration"]
    assert cal["mfu"] == row["mfu"] and cal["predicted_mfu"] == pytest.approx(row["mfu"], rel=1e-6)
    for p in result["plans"]:
        assert "mfu" not in p["row"] and p["row"]["efficiency_scale"] == pytest.approx(
            cal["efficiency_scale"]
        )
        v = compute(config_from_mapping(p["row"])).values
        assert v["mfu_source"] == "predicted" and p["predicted_mfu"] == pytest.approx(
            v["predicted_mfu"], rel=1e-9
        )
    assert len({round(p["cost"], 6) for p in result["plans"]}) > 1  # layouts differ in cost


def test_full_recompute_costs_its_recompute_flops():
    """Korthikanti et al. 2022: full recompute runs the layers' forward again, so the same layout with
    recompute=full costs more GPU-hours than with none, by about a third of the layers' compute."""
    base = {**QWEN3_8B_JOB, "dp": 8, "zero": 3, "micro_batch": 1, "mfu": None}
    none = compute(_cfg({**base, "recompute": "none"})).values
    full = compute(_cfg({**base, "recompute": "full"})).values
    assert full["time_compute_s"] / none["time_compute_s"] == pytest.approx(4 / 3, rel=0.05)
    assert full["gpu_hours"] > none["gpu_hours"]


# ---- docs/scenarios.md: Qwen3-8B --------------------------------------------------------------------------------------
@pytest.mark.parametrize("reserve", [0.0, 5.0])
@pytest.mark.slow  # (the module's full searches: ~40 s of the quick loop)
def test_seed_004_first_plan_is_a_layout_the_model_accepts(reserve, qwen_plans):
    """docs/scenarios.md, Qwen3-8B (compute): at 40 % MFU the job needs 6 H100 for 30 days (7 with 5 in reserve); the first plan
    meets the deadline on at least that many GPUs, holds every constraint (no uneven pipeline, tp
    dividing the heads) and, calibrated to the measured 40 %, costs about 2.0 × 5.2658e21 / (989e12 × 0.4) / 3600."""
    result = qwen_plans[reserve]
    best = result["plans"][0]
    assert best["gpus"] >= {0.0: 6, 5.0: 7}[reserve]
    v = compute(config_from_mapping(best["row"])).values
    assert all(v[k] is not False for k in CONSTRAINT_KEYS) and v["meets_deadline"]
    assert best["cost"] == pytest.approx(2.0 * 5.2658e21 / (989e12 * 0.4) / 3600, rel=0.02)


# ---- exhaustive scalar search on small spaces ---------------------------------------------------
def _scalar_search(job, zeros, modes, places, scale):
    """Every layout of the planner's documented search space, each through compute; the feasible ones
    by the documented gates and the model's constraints (an InputError is an infeasible row)."""
    gb, L, seq = job["global_batch"], job["layers"], job["seq_len"]
    experts = job.get("experts") or 0
    feasible = []

    def vals(col, space):
        return [job[col]] if col in job else list(space)

    for dp, mb, pp, tp, cp, ep, z, mode, place in itertools.product(
        vals("dp", _divisors(gb)),
        vals("micro_batch", _divisors(gb)),
        vals("pp", range(1, L + 1)),
        vals("tp", range(1, job["gpus_per_node"] + 1)),
        vals("cp", [c for c in _divisors(seq) if c == 1 or seq // c >= MIN_TOKENS_PER_CP_RANK]),
        vals("ep", _divisors(experts) if experts else [1]),
        zeros,
        modes,
        places,
    ):
        if z and dp * cp == 1:
            continue
        row = {
            **{k: v for k, v in job.items() if k != "mfu"},
            "dp": dp,
            "tp": tp,
            "pp": pp,
            "cp": cp,
            "ep": ep,
            "zero": z,
            "recompute": mode,
            "micro_batch": mb,
            "loss_chunks": 1,
            "efficiency_scale": scale,
        }
        if tp > 1 and seq % (tp * cp) == 0:
            row["sequence_parallel"] = True
        if place != "hbm":
            row["master_at"] = row["optimizer_at"] = place
        try:
            v = compute(config_from_mapping(row)).values
        except InputError:
            continue
        ok = (
            v["peak_bytes_per_rank"] <= MARGIN * v["hbm_bytes"]
            and v["meets_deadline"]
            and v["bandwidth_gate"] is not False
            and v["host_fits"] is not False
            and v["nvme_fits"] is not False
            and all(v[k] is not False for k in CONSTRAINT_KEYS)
        )
        if ok:
            feasible.append((v["cost"], v["gpus"], row))
    return feasible


@pytest.mark.parametrize(
    "job, zeros, modes",
    [
        (TINY_DENSE, (0, 1, 2, 3), ("none", "selective", "full")),
        (TINY_MOE, (0, 1, 3), ("full",)),  # megatron: no ZeRO-2; recompute given
    ],
    ids=["dense-generic", "moe-megatron"],
)
@pytest.mark.slow
def test_exhaustive_scalar_search_finds_nothing_cheaper(job, zeros, modes, monkeypatch):
    """A scalar search with compute over the same small space (one loss-chunk choice): the same feasible
    count, and no feasible plan cheaper by a cost step than the planner's first, which is feasible."""
    import ledger_report.planner as planner

    monkeypatch.setattr(planner, "LOSS_CHUNK_CHOICES", (1,))
    result = plan(_cfg(job), top=5)
    scale = result["calibration"]["efficiency_scale"]
    feasible = _scalar_search(job, zeros, modes, ("hbm", "host", "nvme"), scale)
    assert result["feasible"] == len(feasible)
    assert feasible, "the small space should hold feasible plans"
    best_cost = min(c for c, _g, _r in feasible)
    top = result["plans"][0]
    assert top["cost"] <= best_cost * (1 + COST_TOLERANCE) ** 2
    # the space has both memory-bound and deadline-bound candidates, so both gates were exercised
    assert 0 < result["fits_memory"] < result["candidates_evaluated"]
    assert 0 < result["meets_deadline"] < result["candidates_evaluated"]


# ---- vectorized figures equal scalar ones -------------------------------------------------------
@pytest.mark.parametrize(
    "job", [QWEN3_8B_JOB, MOE_35B_JOB, TINY_DENSE], ids=["qwen3-8b", "moe-35b", "tiny"]
)
@pytest.mark.slow
def test_vectorized_values_equal_scalar_compute_for_random_candidates(job):
    """For random candidates of every batch that hold the model's constraints, the arrays the planner ranks equal compute's numbers."""
    s = _prepare(_cfg(job))
    rng = np.random.default_rng(4)
    for batch in s.batches:
        start = int(rng.integers(0, max(1, batch.size - 2000)))
        sl = slice(start, min(batch.size, start + 2000))
        f = _evaluate(batch, sl, MARGIN)
        valid = np.flatnonzero(
            np.all([f["ok"][k] for k in CONSTRAINT_KEYS], axis=0)
        )  # rows the reader accepts
        for j in rng.choice(valid, size=min(3, len(valid)), replace=False) if len(valid) else ():
            v = compute(config_from_mapping(batch.row(start + int(j)))).values
            for k in FIGURES:
                assert float(f[k][j]) == pytest.approx(v[k], rel=1e-9), k
            assert bool(f["ok"]["memory"][j]) == (
                v["peak_bytes_per_rank"] <= MARGIN * v["hbm_bytes"]
            )
            # the engine's re-run of a plan reads the same verdicts off its own values
            scalar = {k: bool(a[0]) for k, a in _checks(v, 1, MARGIN).items()}
            assert scalar == {k: bool(a[j]) for k, a in f["ok"].items()}


def test_progress_is_told_at_each_multiple_passed_and_at_the_total():
    """``counter``: chunks of 1,024 of 2,500 rows, told every 1,000 (calc --json's chunks): the
    count after each chunk that passes a thousand, then the total (by hand: 1,024 passes 1,000,
    2,048 passes 2,000, 2,500 is the total); every step where ``every`` is 1 (the planner)."""
    calls = []
    tick = counter(lambda done, total: calls.append((done, total)), 2500, every=1000)
    for n in (1024, 1024, 452):
        tick(n)
    assert calls == [(1024, 2500), (2048, 2500), (2500, 2500)]
    calls.clear()
    tick = counter(lambda done, total: calls.append(done), 5)
    for n in (2, 0, 3):
        tick(n)
    assert calls == [2, 5]
    counter(None, 5)(5)  # no progress wanted: nothing to tell


# ---- rows, documents, inputs ----------------------------------------------------------------------
@pytest.mark.slow
def test_plan_document_has_the_documented_shape_and_one_block_per_row():
    """The keys docs/json.md lists (data/plan_keys.csv), no more, no fewer, each plan's figures
    the engine's values of the registry quantity the file names for its row (the keys scripts
    read among them); plans of each input row in input order, named <input>-p<rank>; progress
    reaches the total."""
    text = resources.files("ledger_report.data").joinpath("plan_keys.csv").read_text("utf-8")
    keys = {level: {} for level in ("document", "inputs", "plans")}
    for r in csv.DictReader(text.splitlines()):
        keys[r["level"]][r["key"]] = r["quantity"]
    calls = []
    rows = [_cfg(TINY_DENSE), _cfg({**TINY_DENSE, "name": "tiny-2", "days": 20.0})]
    doc = plan_document(rows, top=3, progress=lambda done, total: calls.append((done, total)))
    assert doc["schema"] == SCHEMA
    assert set(doc) == set(keys["document"])
    assert all(set(i) == set(keys["inputs"]) for i in doc["inputs"])
    read = {"rank", "row", "gpus", "days", "peak_bytes_per_rank", "hbm_bytes", "gpu_hours", "cost"}
    assert read <= set(keys["plans"])
    assert doc["pareto"]
    for p in doc["plans"] + doc["pareto"]:
        assert set(p) | {"rank"} == set(keys["plans"])
        v = compute(config_from_mapping(p["row"])).values
        for name, key in ((n, q) for n, q in keys["plans"].items() if q):
            if isinstance(p[name], float):
                assert p[name] == pytest.approx(v[key], rel=1e-12), name
            else:  # bytes whole in the plan (rounded), floats in the engine; text and counts
                assert p[name] == v[key] or abs(p[name] - v[key]) < 1, name
    assert [p["row"]["name"] for p in doc["plans"]] == [
        f"{n}-p{i}" for n in ("tiny-dense", "tiny-2") for i in (1, 2, 3)
    ]
    assert doc["candidates_evaluated"] == sum(i["candidates_evaluated"] for i in doc["inputs"])
    dones = [d for d, _ in calls]
    assert dones == sorted(dones) and calls[-1] == (
        doc["candidates_evaluated"],
        doc["candidates_evaluated"],
    )
    assert len(doc["plans"]) == 6


@pytest.mark.parametrize("reserve", [0.0, 5.0])
@pytest.mark.slow  # (the module's full searches: ~40 s of the quick loop)
def test_plans_are_distinct_layouts(reserve, qwen_plans):
    """Candidates differing only in micro-batch or loss chunks collapse to one listed plan."""
    result = qwen_plans[reserve]
    layouts = [
        tuple(
            p["row"].get(c)
            for c in ("gpu", "dp", "tp", "pp", "cp", "ep", "zero", "recompute", "optimizer_at")
        )
        for p in result["plans"]
    ]
    assert len(layouts) == len(set(layouts)) == 10


@pytest.mark.slow
def test_given_columns_are_kept_and_searched_ones_are_filled():
    """A column the row gives is not searched; micro-batch, zero and tp of the plan obey the rules."""
    job = {**QWEN3_8B_JOB, "tp": 2, "zero": 1, "reserve_days": 0.0}
    result = plan(_cfg(job), top=5)
    assert "tp" not in result["searched"] and "zero" not in result["searched"]
    for p in result["plans"]:
        r = p["row"]
        assert r["tp"] == 2 and r["zero"] == 1 and r["sequence_parallel"] is True
        assert job["global_batch"] % (r["dp"] * r["micro_batch"]) == 0


def test_megatron_never_gets_zero_2():
    """The megatron convention has no ZeRO-2: zero=2 is an input error under framework=megatron, so the planner never proposes it."""
    s = _prepare(_cfg(TINY_MOE))
    assert {b.zero for b in s.batches} == {0, 1, 3}


@pytest.mark.slow
def test_gpu_is_searched_over_the_catalogue_when_the_row_names_none():
    """Without gpu (or overrides) every catalogue GPU is a candidate; the plans name theirs."""
    job = {
        k: v for k, v in TINY_DENSE.items() if k not in ("hbm_gb", "peak_tflops", "gpus_per_node")
    }
    s = _prepare(_cfg(job))
    from ledger_report.catalogue import GPU_NAMES

    assert {b.gpu for b in s.batches} == set(GPU_NAMES)
    result = plan(_cfg(job), top=3)
    for p in result["plans"]:
        assert p["row"]["gpu"] in GPU_NAMES
        assert compute(config_from_mapping(p["row"])).values["gpu"] == p["gpu"]


def test_params_per_rank_is_resolved_once_and_not_carried():
    """docs/scenarios.md, 35B MoE (the expert split): params_per_rank at ep 8 solves the expert split; plans carry params_expert instead."""
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


@pytest.mark.slow
def test_chunking_does_not_change_the_answer(monkeypatch):
    """Evaluating in smaller chunks gives the same counts and plans (the pool keeps the best)."""
    import ledger_report.planner as planner

    a = plan(_cfg(TINY_DENSE), top=5)
    monkeypatch.setattr(planner, "CHUNK", 97)
    b = plan(_cfg(TINY_DENSE), top=5)
    assert CHUNK != 97
    assert (a["candidates_evaluated"], a["feasible"]) == (b["candidates_evaluated"], b["feasible"])
    assert [p["row"] for p in a["plans"]] == [p["row"] for p in b["plans"]]


@pytest.mark.slow  # (the module's full searches: ~40 s of the quick loop)
@pytest.mark.parametrize("job", ["qwen-r5", "moe"])
def test_plan_rows_survive_a_csv_round_trip_through_the_reader(
    job, tmp_path, qwen_plans, moe_plans
):
    """A plan's row is an input row ``calc`` and ``build`` accept; read back from CSV it gives the same figures."""
    result = {"qwen-r5": qwen_plans[5.0], "moe": moe_plans}[job]
    import csv

    from ledger_report.config import COLUMN_NAMES
    from ledger_report.inputs import read_configs

    path = tmp_path / "plans.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMN_NAMES))
        w.writeheader()
        for p in result["plans"]:
            w.writerow(
                {
                    k: ("true" if v is True else "false" if v is False else v)
                    for k, v in p["row"].items()
                }
            )
    configs = read_configs(path)
    assert [c.name for c in configs] == [p["row"]["name"] for p in result["plans"]]
    for c, p in zip(configs, result["plans"]):
        v = compute(c).values
        for k, key in (
            ("peak_bytes_per_rank", "peak_bytes_per_rank"),
            ("days", "days_on_config"),
            ("gpu_hours", "gpu_hours"),
            ("cost", "cost"),
        ):
            assert p[k] == pytest.approx(v[key], rel=1e-9), k


# ---- the issue: costs that differ by layout, gates from the model, the front -----------------------
@pytest.mark.slow
def test_nothing_feasible_names_what_excluded_the_most_and_the_cli_exits_1(tmp_path):
    """Issue: when nothing is feasible the result counts what excluded the candidates (excluded_by) and
    names the gate that excluded the most; ``ledger-report plan`` exits 1."""
    from click.testing import CliRunner

    from ledger_report.cli import main

    job = {**TINY_DENSE, "hbm_gb": 0.5}
    result = plan(_cfg(job), top=3)
    assert (
        result["plans"] == [] and result["excluded_by"]["memory"] == result["candidates_evaluated"]
    )
    assert result["reason"].startswith("no feasible candidate: the memory gate")
    path = tmp_path / "job.csv"
    path.write_text(
        ",".join(job) + "\n" + ",".join(str(v) for v in job.values()) + "\n", encoding="utf-8"
    )
    run = CliRunner().invoke(main, ["plan", str(path), "-q"])
    assert run.exit_code == 1 and "No plan for tiny-dense" in run.output


@pytest.mark.slow
def test_deepspeed_never_gets_zero_2_or_3_with_pipeline_parallelism():
    """DeepSpeed's pipeline engine refuses ZeRO-2/3 (deepspeed/runtime/pipe/engine.py): the convention's
    pp_zero_max, through the zero_with_pp constraint, keeps every plan to zero ≤ 1 wherever pp > 1."""
    job = {**TINY_DENSE, "framework": "deepspeed", "layers": 4, "global_batch": 8}
    result = plan(_cfg(job), top=20)
    assert result["excluded_by"].get("ok_zero_with_pp", 0) > 0
    for p in result["plans"] + result["pareto"]:
        assert p["row"]["pp"] == 1 or p["row"]["zero"] <= 1


@pytest.mark.slow  # (the module's full searches: ~40 s of the quick loop)
def test_plans_carry_their_step_time_and_the_front_is_not_dominated(qwen_plans):
    """Each plan and front point carries step_time_s and its breakdown (the sum); no front point is beaten on
    both days and cost by another; the front runs fastest first."""
    result = qwen_plans[5.0]
    for p in result["plans"] + result["pareto"]:
        assert p["step_time_s"] == pytest.approx(sum(p["step_time_breakdown"].values()), rel=1e-9)
    front = [(p["days"], p["cost"]) for p in result["pareto"]]
    assert front and [d for d, _ in front] == sorted(d for d, _ in front)
    for a in front:
        assert not any(b[0] < a[0] and b[1] < a[1] for b in front if b != a)


@pytest.mark.slow
def test_prices_file_prices_each_gpu_type_and_limits_the_search(tmp_path):
    """--prices: a CSV of gpu,price; when the row names no GPU only the priced types are searched, and each
    plan's cost is its predicted GPU-hours × its type's price."""
    from ledger_report.inputs.prices import read_prices

    path = tmp_path / "prices.csv"
    path.write_text("gpu,price\nH100-SXM,2.0\nA100-80GB,1.1\n", encoding="utf-8")
    prices = read_prices(path)
    assert prices == {"H100-SXM": 2.0, "A100-80GB": 1.1}
    job = {
        k: v
        for k, v in TINY_DENSE.items()
        if k not in ("hbm_gb", "peak_tflops", "gpus_per_node", "price_per_gpu_hour")
    }
    result = plan(_cfg(job), top=5, prices=prices)
    assert {b.gpu for b in _prepare(_cfg(job), prices).batches} == {"H100-SXM", "A100-80GB"}
    for p in result["plans"]:
        assert p["cost"] == pytest.approx(p["gpu_hours"] * prices[p["gpu"]], rel=1e-12)
    bad = tmp_path / "bad.csv"
    bad.write_text("gpu,price\nTPUv9,3\n", encoding="utf-8")
    with pytest.raises(InputError):
        read_prices(bad)


@pytest.mark.slow
def test_offload_to_nvme_is_never_planned_when_it_cannot_stream(monkeypatch):
    """Issue: offloading to NVMe is charged at NVMe speed, and a plan whose offloaded states cannot stream within
    the step is not feasible: with a slow NVMe no NVMe plan survives and the bandwidth gate says why."""
    job = {**TINY_DENSE, "nvme_gb_s": 0.01}
    result = plan(_cfg(job), top=50)
    assert result["excluded_by"].get("bandwidth", 0) > 0
    assert all(p["row"].get("optimizer_at") != "nvme" for p in result["plans"])


@pytest.mark.slow
def test_a_deadline_no_candidate_meets_says_how_fast_the_fastest_is():
    """When the deadline gate excludes the most, the reason says what the deadline would have to be:
    the fewest days of a candidate that passes every other gate, against the 10 − 1 days left.  Days
    grow with the tokens and nothing else changes, so twice the tokens needs twice the days."""

    def fastest(tokens):
        result = plan(_cfg({**TINY_DENSE, "tokens": tokens}), top=3)
        assert result["plans"] == [] and result["reason"].startswith(
            "no feasible candidate: the deadline gate"
        )
        m = re.search(r"needs ([\d,.]+) days against 9\.0 available", result["reason"])
        assert m, result["reason"]
        return float(m.group(1).replace(",", ""))

    one, two = fastest(10**15), fastest(2 * 10**15)
    assert one > 9.0 and two == pytest.approx(2 * one, rel=1e-3)


def test_a_search_too_large_is_refused_on_the_row_not_on_a_column(tmp_path):
    """inputs/plan-examples.csv's row leaves the layout to the planner; with --max-candidates 1
    its search is refused naming the row, the cap, the columns that would narrow it and the
    option, on no column (before, the message blamed global_batch, which the row gives and which
    narrows nothing), exit status 1 and no traceback."""
    from click.testing import CliRunner

    from ledger_report.cli import main

    root = pathlib.Path(__file__).resolve().parents[1]
    r = CliRunner().invoke(main, ["plan", str(root / "inputs" / "plan-examples.csv"), "-q",
                                  "--max-candidates", "1"])  # fmt: skip
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "plan-examples.csv, line 2: expected a search of at most 1 candidates" in r.output
    assert 'column "' not in r.output and "(row 'qwen3-8b-100b-30d')" in r.output
