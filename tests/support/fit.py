"""The constants that published runs set in the step-time model, and their refit without the source a
run comes from (leave-one-source-out), for bench/bench_throughput.py and tests/test_throughput.py.

The step-time model has three fitted constants (definitions/time.py): per class of GPU, the share
of the maximum achievable matmul FLOP/s (gpus.csv ``gemm_efficiency``, a kernel benchmark) that
training sustains beyond what each GEMM's shape explains (``SUSTAINED_FRACTION``); the grouped
expert GEMMs' efficiency against dense ones beyond the same (``GROUPED_GEMM_RELATIVE``); and the GPU
time an expert GEMM launched from a host with no lead adds (``EXPERT_GEMM_LAUNCH_S``).  The first
multiplies every matmul and attention efficiency, exactly as the row column ``efficiency_scale``
does, so a value v is evaluated as ``efficiency_scale = v / current``; the other two only move MoE
runs, and are evaluated with the registry rebuilt at each (launch, grouped) pair of a grid.

A fit takes, for each pair, each class's constant so that the median log(predicted / measured) of
that class's runs is 0 (a class without runs takes the one of all the runs), and keeps the pair
whose runs' median |log ratio| is least.  Every figure is the model run at the constants in
question, none interpolated, so the fit does not depend on the constants the product holds: fitted
again with its own result, it gives that result.
Leave-one-source-out: each source is predicted with the constants fitted on every other source.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from statistics import median

from ledger_report.catalogue import find_gpu
from ledger_report.config import COLUMN_NAMES, Config
from ledger_report.engine import compute_many, config_from_mapping
from ledger_report.model import definitions
from ledger_report.model.definitions import time as time_defs
from ledger_report.model.definitions.time import SUSTAINED_FRACTION
from ledger_report.report import DEFAULT

GROUPED = time_defs.GROUPED_GEMM_RELATIVE
GROUPED_GRID = (0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
LAUNCH = time_defs.EXPERT_GEMM_LAUNCH_S
LAUNCH_GRID = (0.0, 20e-6, 40e-6)
PAIRS = tuple((launch, g) for launch in LAUNCH_GRID for g in GROUPED_GRID)
PRODUCT = {**SUSTAINED_FRACTION, "grouped": GROUPED, "launch": LAUNCH}
TOLERANCE = 1e-12  # a class's log scale is found when a step would move it less than this


@dataclass(frozen=True)
class Record:
    run: str  # unique: it keys the predictions kept
    source_id: str
    cls: str  # the fitted constant's class (sustained_class)
    measured: float  # tokens/s per GPU
    config: Config
    moe: bool = False


def sustained_class(gpu: str) -> str:
    """The SUSTAINED_FRACTION class of a catalogue GPU: whether it has an FP8 peak."""
    g = find_gpu(gpu)
    return "fp8" if g is None or g.fp8_tflops else "no_fp8"


def config_of(row: dict[str, str]) -> Config:
    """The run's configuration: its non-empty product columns, ``mfu`` left empty."""
    return config_from_mapping(
        {k: v for k, v in row.items() if k in COLUMN_NAMES and v != "" and k != "mfu"}
    )


def records(rows: list[dict[str, str]]) -> list[Record]:
    """Every run with a measured figure."""
    return [
        Record(
            r["run"],
            r["source_id"],
            sustained_class(r["gpu"]),
            float(r["measured_tokens_per_s_per_gpu"]),
            config_of(r),
            moe=bool(r.get("experts")),
        )
        for r in rows
        if r["measured_tokens_per_s_per_gpu"]
    ]


@functools.cache
def model_with(launch: float, grouped: float):
    """The default model with EXPERT_GEMM_LAUNCH_S = ``launch`` and GROUPED_GEMM_RELATIVE =
    ``grouped`` (the registry rebuilt)."""
    old = time_defs.EXPERT_GEMM_LAUNCH_S, time_defs.GROUPED_GEMM_RELATIVE
    time_defs.EXPERT_GEMM_LAUNCH_S, time_defs.GROUPED_GEMM_RELATIVE = launch, grouped
    try:
        return replace(DEFAULT, registry=definitions.build())
    finally:
        time_defs.EXPERT_GEMM_LAUNCH_S, time_defs.GROUPED_GEMM_RELATIVE = old


_PREDICTED: dict[tuple, float] = {}  # (run, scale, launch, grouped) -> tokens/s per GPU


def _log_ratios(points: list[tuple[Record, float]], launch: float, grouped: float) -> list[float]:
    """log(predicted / measured) of each (run, efficiency_scale) with the model at the pair."""
    todo = {
        (r.run, s, launch, grouped): replace(
            r.config, values={**r.config.values, "efficiency_scale": s}
        )
        for r, s in points
        if (r.run, s, launch, grouped) not in _PREDICTED
    }
    ledgers = compute_many(todo.values(), model_with(launch, grouped))
    _PREDICTED.update(zip(todo, (led["predicted_tokens_per_s_per_gpu"] for led in ledgers)))
    return [math.log(_PREDICTED[r.run, s, launch, grouped] / r.measured) for r, s in points]


def _step(tried: list[tuple[float, float]]) -> float | None:
    """The next log scale to try, from the (log scale, median log ratio) pairs tried (the ratio
    rises with the scale): a secant step, or halfway across the bracket where it would leave it;
    None once found."""
    u, f = tried[-1]
    if f == 0:
        return None
    if len(tried) == 1:
        return u - f  # as if the predicted tokens/s were proportional to the scale
    u0, f0 = tried[-2]
    nxt = u - f * (u - u0) / (f - f0) if f != f0 else u - f
    lo = max((v for v, g in tried if g < 0), default=-math.inf)
    hi = min((v for v, g in tried if g > 0), default=math.inf)
    if not lo < nxt < hi:
        nxt = (lo + hi) / 2 if math.isfinite(lo + hi) else u - 2 * f
    return None if abs(nxt - u) < TOLERANCE else nxt


def _roots(groups: dict[str, list[Record]], launch: float, grouped: float) -> dict[str, tuple]:
    """For each group of runs, the efficiency scale at which their median log ratio is 0 and their
    log ratios there; every group's runs computed together at each step."""
    tried: dict[str, list] = {g: [] for g in groups}
    todo = dict.fromkeys(groups, 0.0)
    out = {}
    while todo:
        points = [(r, math.exp(u)) for g, u in todo.items() for r in groups[g]]
        logs = iter(_log_ratios(points, launch, grouped))
        for g, u in list(todo.items()):
            got = [next(logs) for _ in groups[g]]
            tried[g].append((u, median(got)))
            todo[g] = _step(tried[g])
            if todo[g] is None:
                out[g] = (math.exp(u), got)
                del todo[g]
    return out


def _fit_at(recs: list[Record], launch: float, grouped: float) -> tuple[dict[str, float], float]:
    """The class constants fitted at the pair, and the median |log ratio| of the runs with them."""
    groups = {c: [r for r in recs if r.cls == c] for c in SUSTAINED_FRACTION}
    groups = {c: rs for c, rs in groups.items() if rs}
    if len(groups) < len(SUSTAINED_FRACTION):
        groups[""] = recs  # for a class without runs
    found = _roots(groups, launch, grouped)
    constants = {
        c: current * found[c if c in found else ""][0] for c, current in SUSTAINED_FRACTION.items()
    }
    err = median(abs(x) for c in SUSTAINED_FRACTION if c in found for x in found[c][1])
    return {**constants, "grouped": grouped, "launch": launch}, err


def fit(recs: list[Record]) -> dict[str, float]:
    """The constants fitted on ``recs``: class -> SUSTAINED_FRACTION value, "grouped" ->
    GROUPED_GEMM_RELATIVE and "launch" -> EXPERT_GEMM_LAUNCH_S (kept as they stand without an MoE
    run)."""
    pairs = PAIRS if any(r.moe for r in recs) else ((LAUNCH, GROUPED),)
    return min((_fit_at(recs, *pair) for pair in pairs), key=lambda fitted: fitted[1])[0]


def ratios(recs: list[Record], constants: dict[str, float]) -> list[float]:
    """predicted / measured of each run with the constants."""
    points = [(r, constants[r.cls] / SUSTAINED_FRACTION[r.cls]) for r in recs]
    return [math.exp(x) for x in _log_ratios(points, constants["launch"], constants["grouped"])]


def in_sample(recs: list[Record]) -> dict[str, float]:
    """predicted / measured of each run with the product's constants as they stand."""
    return dict(zip((r.run for r in recs), ratios(recs, PRODUCT)))


def leave_one_source_out(recs: list[Record]) -> dict[str, tuple[float, dict[str, float]]]:
    """predicted / measured of each run with the constants fitted without its source, and those
    constants."""
    out = {}
    for source in sorted({r.source_id for r in recs}):
        c = fit([r for r in recs if r.source_id != source])
        mine = [r for r in recs if r.source_id == source]
        out.update({r.run: (q, c) for r, q in zip(mine, ratios(mine, c))})
    return out


def figures(ratios: list[float]) -> dict[str, float]:
    """median and largest |ratio − 1| and the bias (median ratio)."""
    errs = [abs(q - 1) for q in ratios]
    return {
        "runs": len(ratios),
        "median_error": median(errs),
        "largest_error": max(errs),
        "bias": median(ratios),
        "optimistic": sum(q > 1 for q in ratios),
    }
