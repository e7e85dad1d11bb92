"""The constants that published runs set in the step-time model, and their refit without the source a
run comes from (leave-one-source-out), for bench/bench_throughput.py and tests/test_throughput.py.

The step-time model has three fitted constants: per class of GPU, the share of the maximum
achievable matmul FLOP/s (gpus.csv ``gemm_efficiency``, a kernel benchmark) that training sustains
beyond what each GEMM's shape explains (tile and wave quantization, the memory bound:
definitions/time.py, from kernel evidence, fitted on nothing)
(``ledger_report.model.definitions.time.SUSTAINED_FRACTION``), and the grouped expert GEMMs'
efficiency against dense ones beyond the same (``GROUPED_GEMM_RELATIVE``), and the GPU time an expert
GEMM launched from a host with no lead adds (``EXPERT_GEMM_LAUNCH_S``).  The first multiplies every matmul and
attention efficiency, exactly as the row column ``efficiency_scale`` does, so a refitted value v is
evaluated as ``efficiency_scale = v / current``: each run is computed once on a grid of scales and
its log(predicted / measured) interpolated between them (piecewise linear in log scale).  The
other two only move MoE runs: they are computed again on a grid of their value pairs (the registry
rebuilt with each).

A fit takes, for each (launch, grouped) pair of the grid, each class's constant so that the median
log(predicted / measured) of that class's runs is 0 (a class without runs takes the fit over all of
them), and keeps the pair whose runs' median |log ratio| is least.
Leave-one-source-out: each source is predicted with the constants fitted on every other source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import median

from ledger_report.config import COLUMN_NAMES
from ledger_report.engine import compute_many, config_from_mapping
from ledger_report.model import definitions
from ledger_report.model.definitions import time as time_defs
from ledger_report.model.definitions.time import SUSTAINED_FRACTION, sustained_class
from ledger_report.report import DEFAULT

STEP = 1.05
GRID = tuple(0.4 * STEP**k for k in range(50))  # efficiency_scale 0.40 ... 4.3


GROUPED = time_defs.GROUPED_GEMM_RELATIVE
GROUPED_GRID = (0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
LAUNCH = time_defs.EXPERT_GEMM_LAUNCH_S
LAUNCH_GRID = (0.0, 20e-6, 40e-6)
PAIRS = tuple((launch, g) for launch in LAUNCH_GRID for g in GROUPED_GRID)
PRODUCT = {**SUSTAINED_FRACTION, "grouped": GROUPED, "launch": LAUNCH}


@dataclass
class Record:
    run: str
    source_id: str
    cls: str  # the fitted constant's class (time.sustained_class)
    measured: float
    log_ratio: tuple[float, ...]  # log(predicted / measured) at each scale of GRID
    moe: bool = False
    by_pair: dict | None = None  # (launch, grouped) -> log ratios at each scale (MoE runs)

    def at(self, scale: float, grouped: float = GROUPED, launch: float = LAUNCH) -> float:
        """log(predicted / measured) at ``scale`` (linear in log scale between grid points)."""
        curve = self.log_ratio
        if self.moe and self.by_pair is not None and (launch, grouped) != (LAUNCH, GROUPED):
            curve = self.by_pair[(launch, grouped)]
        x = math.log(scale / GRID[0]) / math.log(STEP)
        k = min(max(int(math.floor(x)), 0), len(GRID) - 2)
        w = x - k
        return (1 - w) * curve[k] + w * curve[k + 1]


def _model_with_grouped(value: float, launch: float = LAUNCH):
    """The default model with GROUPED_GEMM_RELATIVE set to ``value`` and EXPERT_GEMM_LAUNCH_S to
    ``launch`` (the registry rebuilt)."""
    old = time_defs.GROUPED_GEMM_RELATIVE, time_defs.EXPERT_GEMM_LAUNCH_S
    time_defs.GROUPED_GEMM_RELATIVE, time_defs.EXPERT_GEMM_LAUNCH_S = value, launch
    try:
        return replace(DEFAULT, registry=definitions.build())
    finally:
        time_defs.GROUPED_GEMM_RELATIVE, time_defs.EXPERT_GEMM_LAUNCH_S = old


def _curves(rows: list[dict[str, str]], model=None) -> list[tuple[float, ...]]:
    configs = [_config(r, s) for r in rows for s in GRID]
    tps = [ledger["predicted_tokens_per_s_per_gpu"] for ledger in compute_many(configs, model)]
    out = []
    for i, r in enumerate(rows):
        measured = float(r["measured_tokens_per_s_per_gpu"])
        out.append(tuple(math.log(t / measured) for t in tps[i * len(GRID) : (i + 1) * len(GRID)]))
    return out


def _config(row: dict[str, str], scale: float):
    cells = {k: v for k, v in row.items() if k in COLUMN_NAMES and v != "" and k != "mfu"}
    return config_from_mapping({**cells, "efficiency_scale": scale})


def records(rows: list[dict[str, str]], grouped: bool = True) -> list[Record]:
    """Every run with a measured figure, predicted at each scale of GRID (and MoE runs at each pair of
    LAUNCH_GRID × GROUPED_GRID when ``grouped``)."""
    rows = [r for r in rows if r["measured_tokens_per_s_per_gpu"]]
    out = [
        Record(
            r["run"],
            r["source_id"],
            sustained_class(r["gpu"]),
            float(r["measured_tokens_per_s_per_gpu"]),
            curve,
            moe=bool(r.get("experts")),
        )
        for r, curve in zip(rows, _curves(rows))
    ]
    moe = [(rec, r) for rec, r in zip(out, rows) if rec.moe]
    if grouped and moe:
        for rec, _ in moe:
            rec.by_pair = {(LAUNCH, GROUPED): rec.log_ratio}
        for pair in PAIRS:
            if pair == (LAUNCH, GROUPED):
                continue
            model = _model_with_grouped(pair[1], pair[0])
            for (rec, _), curve in zip(moe, _curves([r for _, r in moe], model)):
                rec.by_pair[pair] = curve
    return out


def _scale_for(recs: list[Record], grouped: float = GROUPED, launch: float = LAUNCH) -> float:
    """The scale at which the median log ratio of ``recs`` is 0 (bisection; it rises with scale)."""
    lo, hi = GRID[0], GRID[-1]
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        below = median(r.at(mid, grouped, launch) for r in recs) < 0
        lo, hi = (mid, hi) if below else (lo, mid)
    return math.sqrt(lo * hi)


def _fit_at(recs: list[Record], grouped: float, launch: float = LAUNCH) -> dict[str, float]:
    overall = _scale_for(recs, grouped, launch)
    out = {}
    for cls, current in SUSTAINED_FRACTION.items():
        mine = [r for r in recs if r.cls == cls]
        out[cls] = current * (_scale_for(mine, grouped, launch) if mine else overall)
    out["grouped"] = grouped
    out["launch"] = launch
    return out


def fit(recs: list[Record]) -> dict[str, float]:
    """The constants fitted on ``recs``: class -> SUSTAINED_FRACTION value, "grouped" ->
    GROUPED_GEMM_RELATIVE and "launch" -> EXPERT_GEMM_LAUNCH_S (kept as they stand where no MoE run
    has a grid)."""
    moe = [r for r in recs if r.moe and r.by_pair]
    if not moe:
        return _fit_at(recs, GROUPED)
    best = None
    for launch, g in PAIRS:
        c = _fit_at(recs, g, launch)
        err = median(abs(predicted_log(r, c)) for r in recs)
        if best is None or err < best[0]:
            best = (err, c)
    return best[1]


def predicted_log(rec: Record, constants: dict[str, float]) -> float:
    g, launch = constants.get("grouped", GROUPED), constants.get("launch", LAUNCH)
    return rec.at(constants[rec.cls] / SUSTAINED_FRACTION[rec.cls], g, launch)


def predicted_ratio(rec: Record, constants: dict[str, float]) -> float:
    return math.exp(predicted_log(rec, constants))


def in_sample(recs: list[Record]) -> dict[str, float]:
    """predicted / measured of each run with the product's constants as they stand."""
    return {r.run: predicted_ratio(r, PRODUCT) for r in recs}


def refitted_in_sample(recs: list[Record]) -> dict[str, float]:
    """predicted / measured with the constants refitted on all the runs (the fit's own error)."""
    c = fit(recs)
    return {r.run: predicted_ratio(r, c) for r in recs}


def leave_one_source_out(recs: list[Record]) -> dict[str, tuple[float, dict[str, float]]]:
    """predicted / measured of each run with the constants fitted without its source, and those
    constants."""
    out = {}
    for source in sorted({r.source_id for r in recs}):
        c = fit([r for r in recs if r.source_id != source])
        for r in recs:
            if r.source_id == source:
                out[r.run] = (predicted_ratio(r, c), c)
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


def _single_scale(recs: list[Record]) -> float:
    """One constant c for every class (each run evaluated at c ÷ its class's current constant) at
    which the median log ratio is 0."""
    lo, hi = 0.2, 2.0
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        below = median(r.at(mid / SUSTAINED_FRACTION[r.cls]) for r in recs) < 0
        lo, hi = (mid, hi) if below else (lo, mid)
    return math.sqrt(lo * hi)


def leave_one_source_out_single(recs: list[Record]) -> dict[str, float]:
    """As leave_one_source_out with one sustained fraction for every GPU (no split by class): the
    check that the split earns its place."""
    out = {}
    for source in sorted({r.source_id for r in recs}):
        c = _single_scale([r for r in recs if r.source_id != source])
        for r in recs:
            if r.source_id == source:
                out[r.run] = math.exp(r.at(c / SUSTAINED_FRACTION[r.cls]))
    return out
