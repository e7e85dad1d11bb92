"""The planner (CONTRACT section 7): from a model and a deadline to the cheapest plans that fit.

Each input row describes a model and a job.  The parallel and memory-saving columns it leaves
empty are searched; every candidate is evaluated through the one registry of definitions
(``model.evaluate.evaluate_arrays``), never through a formula of its own.  The search loops in
Python only over the few categorical choices (GPU type × ZeRO stage × recompute mode × optimizer
offload); inside each, the numeric layout columns (dp, tp, pp, cp, ep, micro_batch, loss_chunks)
are numpy arrays evaluated in chunks.

What the planner decides, and why
---------------------------------
* **Memory margin** ``MARGIN`` = 0.85: a plan fits when ``peak_bytes_per_rank ≤ 0.85 × HBM``.
  Fujii et al. 2024 (arXiv 2411.06465) saw no OOM in 454 runs whenever their estimate stayed
  below 80 % of HBM; their estimate leaves out the CUDA context, allocator fragmentation and NCCL
  buffers, which our peak includes (0.5 GB + 5 % + 0.5 GB per communicator).  On an 80 GB card
  80 % of their estimate is 64 GB ≈ 64 × 1.05 + 0.5 + 0.5 ≈ 68 GB of ours = 0.85 × 80 GB.  Seed 000
  ran at 85.6 / 96 = 89 % and calls that "already quite full"; its first-step OOM came from
  uneven ranks the ledger does not model.
* **Throughput**: hardware FLOPs utilisation (HFU) is held at the row's (its ``mfu`` and
  ``recompute``, registry key ``hfu``).  A candidate with recompute mode r carries
  ``mfu = hfu / ratio(r)`` in its row, where ``ratio`` is the registry's ``hfu / mfu`` for r
  (full: 8/6; selective: (F + attention/3) / F).  Candidates whose mfu would exceed 1 are skipped.
  Pipeline bubbles, TP/CP/EP communication and offload traffic do not change the MFU; the layout
  rules below keep the choices where that is a fair approximation.
* **Ranking**: GPU-hours (= cost / price, the same order as cost), then GPU count, then the
  simpler layout: no offload, the fewest model-parallel ranks tp·pp·cp, the lowest ZeRO stage,
  then smaller pp, cp, tp, ep, fewer loss chunks, the largest micro-batch (larger GEMMs; the
  fixed MFU does not reward it, the rank does), lower peak.  The listed plans are distinct
  layouts: candidates that differ only in ``micro_batch`` or ``loss_chunks`` are collapsed to the
  best of them, and a ZeRO stage that leaves the ledger unchanged is not listed twice.
* **Several input rows**: each row is planned on its own; the document lists every row's plans,
  each carrying ``input`` (the row's name) and ``rank`` within that row, and its ``row`` is named
  ``<input name>-p<rank>``.  Totals (candidates, feasible, seconds) cover all rows; ``inputs``
  gives them per row.

Layout rules (applied to the columns the planner searches; given values are taken as given)
------------------------------------------------------------------------------------------
* ``dp`` divides ``global_batch``; ``micro_batch`` divides ``global_batch / dp``.
* ``tp`` ≤ GPUs per node, divides ``heads``, ``kv_heads``, ``ffn_hidden`` and (MoE)
  ``moe_ffn_hidden`` and ``shared_expert_ffn`` (Megatron's column-parallel split asserts it).
* ``pp`` ≤ ``layers`` and ≤ micro-batches per step (1F1B needs at least pp micro-batches in
  flight; fewer would leave most of the pipeline idle, which the fixed MFU does not see).
* ``cp`` divides ``seq_len`` and leaves at least ``MIN_TOKENS_PER_CP_RANK`` tokens per rank.
* ``ep`` divides ``experts`` and ``dp·cp·tp/etp`` (CONTRACT §2; always checked); 1 for dense models.
* ``zero``: 0-3; ``framework=megatron`` has no ZeRO-2 (CONTRACT §3.4); a stage above 0 only
  where dp·cp > 1 (with one data-parallel rank there is nothing to shard over).
* ``recompute``: none, selective, full.  ``loss_chunks``: ``LOSS_CHUNK_CHOICES``.
* Optimizer offload (when ``master_at`` and ``optimizer_at`` are both empty): master weights and
  moments together on the host (as DeepSpeed ZeRO-Offload and Megatron's optimizer CPU offload
  do); such a plan must also hold the offloaded state in host memory (``host_fits``) and stream
  it within the step budget (``offload_stream_s ≤ step_budget_s``).
* ``sequence_parallel``, when empty, is set wherever tp > 1 and tp·cp divides ``seq_len`` (it
  only removes memory; the ledger charges it no time).
* ``gpu``: the catalogue, unless the row names one or overrides ``hbm_gb``, ``peak_tflops`` or
  ``gpus_per_node``.  One ``price_per_gpu_hour`` then prices every GPU type.

A row that gives ``params_per_rank`` (observed at its own layout) has its expert split solved
once, at that layout; the plans carry the resolved ``params_total`` and ``params_expert``
instead.  ``measured_peak_gb`` belongs to the measured layout and is dropped from plan rows.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np

from .catalogue import GPU_NAMES
from .config import COLUMN_NAMES, Config
from .engine import compute, config_from_mapping
from .errors import InputError, Problem
from .model.definitions import REGISTRY
from .model.evaluate import evaluate_arrays, evaluate_row
from .model.tables import tables

SCHEMA = "ledger-report-plan/1"

MARGIN = 0.85  # peak ≤ MARGIN × HBM (module docstring: Fujii et al. 2024's < 80 % rule, our fuller peak)
LOSS_CHUNK_CHOICES = (1, 2, 4, 8, 16, 32)  # chunked / fused cross-entropy splits
MIN_TOKENS_PER_CP_RANK = 1024  # context parallel stops at ~1K tokens per rank (planner bound)
ZERO_STAGES = {"generic": (0, 1, 2, 3), "deepspeed": (0, 1, 2, 3), "megatron": (0, 1, 3)}
RECOMPUTE_MODES = ("none", "selective", "full")
OFFLOAD_COLUMNS = ("master_at", "optimizer_at")
GPU_OVERRIDES = ("hbm_gb", "peak_tflops", "gpus_per_node")
# observations of the row's own layout; and the row's model, whose columns the row already holds
# (a config.json path would not resolve from the plans' own folder)
DROPPED_COLUMNS = ("params_per_rank", "measured_peak_gb", "model")
NEEDED = ("tokens", "days", "seq_len", "global_batch", "layers")
CHUNK = 131_072  # candidates per evaluate_arrays call (bounds memory: ~200 arrays of this size)

# Registry keys a candidate needs.
KEYS = (
    "peak_bytes_per_rank",
    "hbm_bytes",
    "days_on_config",
    "gpu_hours",
    "cost",
    "gpus",
    "host_fits",
    "offload_stream_s",
    "step_budget_s",
    "days",
    "reserve_days",
)
LAYOUT = ("dp", "tp", "pp", "cp", "ep", "micro_batch", "loss_chunks")

Progress = Callable[[int, int], None]


# ---- small helpers ---------------------------------------------------------------------------
def _divisors(n: int) -> list[int]:
    n = int(n)
    small = [d for d in range(1, int(math.isqrt(n)) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _py(v: Any) -> Any:
    """numpy scalars to Python numbers (rows and JSON hold plain values)."""
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def _fmt(x: float) -> str:
    return f"{x:.4g}"


# ---- the search space ---------------------------------------------------------------------------
@dataclass
class _Batch:
    """One categorical combination and its numeric layout arrays."""

    gpu: str | None  # None: as the row gives it
    zero: int
    recompute: str
    offload: bool
    mfu: float
    layout: dict[str, np.ndarray]  # LAYOUT column -> int array, all the same length
    search: "_Search"

    @property
    def size(self) -> int:
        return len(self.layout["dp"])

    def _fixed(self) -> dict[str, Any]:
        """The row's own columns with this batch's categorical choices (shared by all its candidates)."""
        out: dict[str, Any] = dict(self.search.base)
        if self.gpu is not None:
            out["gpu"] = self.gpu
        out["zero"] = self.zero
        out["recompute"] = self.recompute
        out["mfu"] = self.mfu
        if self.offload:
            for c in OFFLOAD_COLUMNS:
                out[c] = "host"
        return out

    def cols(self, sl: slice | np.ndarray = slice(None)) -> dict[str, Any]:
        """The ``evaluate_arrays`` input for candidates ``sl`` of this batch."""
        s = self.search
        cols = self._fixed()
        for c in LAYOUT:
            cols[c] = self.layout[c][sl]
        if s.set_sequence_parallel:
            cols["sequence_parallel"] = _sequence_parallel(cols["tp"], cols["cp"], s.seq_len)
        return cols

    def row(self, i: int) -> dict[str, Any]:
        """Candidate ``i`` as a complete input row (only non-empty values)."""
        s = self.search
        row = self._fixed()
        for c in LAYOUT:
            row[c] = int(self.layout[c][i])
        if s.set_sequence_parallel and _sequence_parallel(row["tp"], row["cp"], s.seq_len):
            row["sequence_parallel"] = True
        return row


def _sequence_parallel(tp: Any, cp: Any, seq_len: int) -> Any:
    """Sequence parallelism wherever tp > 1 and the sequence splits evenly over tp·cp."""
    return (tp > 1) & (seq_len % (tp * cp) == 0)


@dataclass
class _Search:
    config: Config
    base: dict[str, Any]  # the row's given values, less the dropped observations
    searched: list[str]
    hfu: float
    ratio: dict[str, float]  # recompute mode -> hfu / mfu
    set_sequence_parallel: bool
    seq_len: int
    variants: int = 1  # candidates one listed layout can stand for (see ``_Pool``)
    batches: list[_Batch] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def size(self) -> int:
        return sum(b.size for b in self.batches)

    def throughput(self) -> str:
        parts = [f"{m} {_fmt(self.hfu / self.ratio[m])}" for m in RECOMPUTE_MODES if m in self.ratio]
        return (
            f"hardware FLOPs utilisation held at {_fmt(self.hfu)} (the row's mfu and recompute); "
            f"mfu by recompute mode: {', '.join(parts)} (full recompute costs 8/6 in hardware FLOPs; "
            "selective recomputes the attention core forward)"
        )


def _problem(config: Config, column: str, expected: str, found: str) -> Problem:
    return Problem(file=config.source or "input", row=None, column=column, expected=expected,
                   found=f"{found} (row {config.name!r})")


def _prepare(config: Config) -> _Search:
    """Resolve the row, choose the searched columns and enumerate the candidates."""
    given = config.given()
    problems = [
        _problem(config, c, "a value (the planner needs tokens, days, seq_len, global_batch and the architecture)", "an empty cell")
        for c in NEEDED if c not in given
    ]
    if problems:
        raise InputError(problems)
    T = tables()
    base = {k: v for k, v in given.items() if k not in DROPPED_COLUMNS}
    if "params_per_rank" in given:
        # The observation solves the expert split at the row's own layout; plans carry the result.
        v = evaluate_row(REGISTRY, config.values, T)
        base["params_total"] = int(round(v["params_total"]))
        base["params_expert"] = int(round(v["params_expert"]))
    v0 = evaluate_row(REGISTRY, base, T)
    if v0["days_on_config"] is None or v0["peak_bytes_per_rank"] is None:
        raise InputError(_problem(config, "layers", "a row the ledger can evaluate (architecture, tokens, days)", "a blank peak or deadline"))
    window = v0["days"] - v0["reserve_days"]
    if not window > 0:
        raise InputError(_problem(config, "reserve_days", "fewer reserve days than days", f"{v0['reserve_days']} of {v0['days']}"))

    searched: list[str] = []

    def opts(col: str, default: Iterable[Any]) -> list[Any]:
        if col in base:
            return [base[col]]
        searched.append(col)
        return list(default)

    # categorical -----------------------------------------------------------------------------
    gpu_fixed = "gpu" in base or any(c in base for c in GPU_OVERRIDES)
    gpus = [None] if gpu_fixed else list(GPU_NAMES)
    if not gpu_fixed:
        searched.append("gpu")
    framework = str(v0["framework"]).lower()
    zeros = opts("zero", ZERO_STAGES.get(framework, (0, 1, 2, 3)))
    modes = opts("recompute", RECOMPUTE_MODES)
    if any(c in base for c in OFFLOAD_COLUMNS):
        offloads = [False]
    else:
        offloads = [False, True]
        searched.extend(OFFLOAD_COLUMNS)
    set_sp = "sequence_parallel" not in base
    if set_sp:
        searched.append("sequence_parallel")

    # HFU held fixed: ratio(r) = the registry's hfu / mfu with recompute r.
    ratio = {}
    for m in RECOMPUTE_MODES:
        ratio[m] = float(evaluate_arrays(REGISTRY, {**base, "mfu": 1.0, "recompute": m}, T, ["hfu"])["hfu"])
    hfu = float(v0["hfu"])

    # numeric ----------------------------------------------------------------------------------
    gb = int(v0["global_batch"])
    L = int(v0["layers"])
    seq = int(v0["seq_len"])
    heads, kv = int(v0["heads"]), int(v0["kv_heads"])
    experts = int(v0["experts"] or 0)
    widths = [int(v0["ffn_hidden"])]
    if experts:
        widths.append(int(v0["moe_ffn_hidden"]))
        if v0["shared_expert_ffn"]:
            widths.append(int(v0["shared_expert_ffn"]))
    dps = opts("dp", _divisors(gb))
    mbs = opts("micro_batch", _divisors(gb))
    pps = opts("pp", range(1, L + 1))
    cps = opts("cp", [c for c in _divisors(seq) if c == 1 or seq // c >= MIN_TOKENS_PER_CP_RANK])
    eps = opts("ep", _divisors(experts) if experts else [1])
    lcs = opts("loss_chunks", LOSS_CHUNK_CHOICES)
    tp_given = "tp" in base
    if not tp_given:
        searched.append("tp")
    etp = base.get("etp")

    # (dp, micro_batch, pp) triples: the batch rules
    D, M, P = (a.ravel() for a in np.meshgrid(dps, mbs, pps, indexing="ij"))
    keep = np.ones(D.shape, bool)
    if "dp" in searched or "micro_batch" in searched:
        keep &= gb % (D * M) == 0
    if "pp" in searched:
        keep &= P * D * M <= gb
    D, M, P = D[keep], M[keep], P[keep]

    searched = [c for c in COLUMN_NAMES if c in searched]
    search = _Search(config, base, searched, hfu, ratio, set_sp, seq, len(mbs) * len(lcs) * len(zeros))
    layouts: dict[Any, dict[str, np.ndarray]] = {}
    for g in gpus:
        vg = v0 if g is None else evaluate_row(REGISTRY, {**base, "gpu": g}, T)
        gpn = int(vg["gpus_per_node"])
        if tp_given:
            tps = [base["tp"]]
        else:
            tps = [t for t in _divisors(math.gcd(heads, kv)) if t <= gpn and all(w % t == 0 for w in widths)]
        if gpn not in layouts:
            layouts[gpn] = _cross(D, M, P, tps, cps, eps, lcs, etp)
        for z in zeros:
            lay = layouts[gpn]
            if z and "zero" in searched:  # ZeRO shards over dp·cp: with one rank it only adds overhead
                key = (gpn, "sharded")
                if key not in layouts:
                    many = lay["dp"] * lay["cp"] > 1
                    layouts[key] = {c: a[many] for c, a in lay.items()}
                lay = layouts[key]
            for r in modes:
                mfu = float(v0["mfu"]) if r == v0["recompute"] else hfu / ratio[r]
                if mfu > 1:
                    continue  # the row's HFU cannot be reached with less recomputation
                for off in offloads:
                    search.batches.append(_Batch(g, int(z), r, off, mfu, lay, search))
    return search


def _cross(D, M, P, tps, cps, eps, lcs, etp) -> dict[str, np.ndarray]:
    """Every (triple, tp, cp, ep, loss_chunks) that keeps ep dividing dp·cp·tp/etp."""
    t_i, tp, cp, ep, lc = (a.ravel() for a in np.meshgrid(np.arange(len(D)), tps, cps, eps, lcs, indexing="ij"))
    dp, mb, pp = D[t_i], M[t_i], P[t_i]
    e_tp = tp if etp is None else etp
    keep = (dp * cp * tp) % (ep * e_tp) == 0
    out = {"dp": dp, "tp": tp, "pp": pp, "cp": cp, "ep": ep, "micro_batch": mb, "loss_chunks": lc}
    return {k: np.ascontiguousarray(v[keep], dtype=np.int64) for k, v in out.items()}


# ---- evaluation ---------------------------------------------------------------------------------
def _chunks(n: int) -> Iterator[slice]:
    for start in range(0, n, CHUNK):
        yield slice(start, min(n, start + CHUNK))


def _evaluate(batch: _Batch, sl: slice, margin: float) -> dict[str, np.ndarray]:
    """Registry figures and feasibility for candidates ``sl`` of ``batch``."""
    env = evaluate_arrays(REGISTRY, batch.cols(sl), tables(), list(KEYS))
    n = sl.stop - sl.start
    full = {k: np.broadcast_to(np.asarray(env[k]), (n,)) for k in KEYS}
    fits = full["peak_bytes_per_rank"] <= margin * full["hbm_bytes"]
    on_time = full["days_on_config"] <= full["days"] - full["reserve_days"]
    ok = fits & on_time
    if batch.offload:
        ok &= full["host_fits"].astype(bool) & (full["offload_stream_s"] <= full["step_budget_s"])
    full["fits"], full["on_time"], full["feasible"] = fits, on_time, ok
    return full


def _rank_keys(batch: _Batch, idx: np.ndarray, f: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Sort keys of candidates ``idx`` of one batch, most significant first (docstring: ranking)."""
    lay = {c: batch.layout[c][idx] for c in LAYOUT}
    n = len(idx)
    return [
        np.broadcast_to(f["gpu_hours"], (n,)),
        np.broadcast_to(f["gpus"], (n,)),
        np.full(n, int(batch.offload)),
        lay["tp"] * lay["pp"] * lay["cp"],
        np.full(n, batch.zero),
        lay["pp"],
        lay["cp"],
        lay["tp"],
        lay["ep"],
        lay["loss_chunks"],
        -lay["micro_batch"],  # the largest micro-batch that fits: larger GEMMs, same fixed MFU
        np.broadcast_to(f["peak_bytes_per_rank"], (n,)),
    ]


class _Pool:
    """The best ``size`` feasible candidates so far, in rank order (bounded memory).

    The listed plans are the first ``top`` distinct layouts; a layout has at most ``variants``
    candidates (micro-batch × loss-chunk choices, times the ZeRO stages that can coincide when
    nothing is sharded), so the first ``top × variants`` candidates in rank order contain them.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.keys: list[np.ndarray] | None = None
        self.batch = np.empty(0, np.int64)
        self.idx = np.empty(0, np.int64)

    def add(self, b_no: int, batch: _Batch, idx: np.ndarray, f: Mapping[str, np.ndarray]) -> None:
        if len(idx) > self.size:  # inside a batch GPU-hours are equal: keep the fewest GPUs first
            g = f["gpus"] if np.ndim(f["gpus"]) else np.full(len(idx), f["gpus"])
            kth = np.partition(g, self.size - 1)[self.size - 1]
            sel = g <= kth
            idx, f = idx[sel], {k: (v[sel] if np.ndim(v) else v) for k, v in f.items()}
        keys = _rank_keys(batch, idx, f)
        b = np.full(len(idx), b_no)
        if self.keys is not None:
            keys = [np.concatenate([a, c]) for a, c in zip(self.keys, keys)]
            b = np.concatenate([self.batch, b])
            idx = np.concatenate([self.idx, idx])
        order = np.lexsort(keys[::-1])[: self.size]
        self.keys = [k[order] for k in keys]
        self.batch, self.idx = b[order], idx[order]


def _run(search: _Search, top: int, margin: float, tick: Callable[[int], None]) -> dict[str, Any]:
    t0 = time.perf_counter()
    evaluated = n_fits = n_on_time = feasible = 0
    pool = _Pool((top + 8) * search.variants)
    for b_no, batch in enumerate(search.batches):
        for sl in _chunks(batch.size):
            f = _evaluate(batch, sl, margin)
            evaluated += sl.stop - sl.start
            n_fits += int(f["fits"].sum())
            n_on_time += int(f["on_time"].sum())
            ok = np.flatnonzero(f["feasible"])
            feasible += len(ok)
            if len(ok):
                figs = {k: f[k][ok] for k in ("gpu_hours", "gpus", "peak_bytes_per_rank")}
                pool.add(b_no, batch, ok + sl.start, figs)
            tick(sl.stop - sl.start)
    plans = _top_plans(search, pool.batch, pool.idx, top, margin) if feasible else []
    if plans:
        reason = None
    elif not evaluated:
        reason = "no candidate satisfies the layout rules with the given columns"
    elif not n_fits:
        reason = f"no candidate fits {margin:g} × HBM"
    elif not n_on_time:
        reason = "no candidate meets the deadline"
    else:
        reason = f"no candidate both fits {margin:g} × HBM and meets the deadline"
    return {
        "name": search.name,
        "candidates_evaluated": evaluated,
        "feasible": feasible,
        "fits_memory": n_fits,
        "meets_deadline": n_on_time,
        "seconds": time.perf_counter() - t0,
        "margin": margin,
        "searched": list(search.searched),
        "throughput": search.throughput(),
        "reason": reason,
        "plans": plans,
    }


def _top_plans(search: _Search, b_sorted: np.ndarray, i_sorted: np.ndarray, top: int, margin: float) -> list[dict[str, Any]]:
    """The first ``top`` distinct layouts, each re-run through the engine for its reported figures."""
    seen: set = set()
    plans: list[dict[str, Any]] = []
    for j in range(len(b_sorted)):
        if len(plans) >= top:
            break
        batch = search.batches[int(b_sorted[j])]
        row = batch.row(int(i_sorted[j]))
        layout = (batch.gpu, batch.recompute, batch.offload, *(row[c] for c in ("dp", "tp", "pp", "cp", "ep")))
        if (layout, batch.zero) in seen:
            continue  # a micro-batch / loss-chunk variant of a listed layout
        v = compute(config_from_mapping(row)).values
        peak, hbm = v["peak_bytes_per_rank"], v["hbm_bytes"]
        if not (peak <= margin * hbm and v["days_on_config"] <= v["days"] - v["reserve_days"]):
            continue  # the scalar engine disagrees at a boundary: never report a plan it rejects
        seen.add((layout, batch.zero))
        if (layout, "peak", peak) in seen:
            continue  # a ZeRO stage that changes nothing here
        seen.add((layout, "peak", peak))
        rank = len(plans) + 1
        row["name"] = f"{search.name}-p{rank}"
        note = (f"plan {rank} for {search.name}: peak ≤ {margin:g} × HBM; "
                f"HFU {_fmt(search.hfu)} held fixed, so mfu {_fmt(batch.mfu)} with recompute {batch.recompute}")
        row["notes"] = f"{search.base['notes']} | {note}" if search.base.get("notes") else note
        plans.append({
            "input": search.name,
            "rank": rank,
            "row": {k: _py(row[k]) for k in COLUMN_NAMES if row.get(k) is not None},
            "gpu": v["gpu"],
            "gpus": int(v["gpus"]),
            "days": float(v["days_on_config"]),
            "peak_bytes_per_rank": int(math.ceil(peak)),
            "hbm_bytes": int(round(hbm)),
            "peak_fraction": float(peak / hbm),
            "gpu_hours": float(v["gpu_hours"]),
            "cost": None if v["cost"] is None else float(v["cost"]),
            "mfu": float(batch.mfu),
            "hfu": float(v["hfu"]),
            "throughput": f"mfu {_fmt(batch.mfu)} (recompute {batch.recompute}) at HFU {_fmt(search.hfu)} held fixed",
        })
    return plans


# ---- public -------------------------------------------------------------------------------------
def plan(config: Config, *, top: int = 10, progress: Progress | None = None, margin: float = MARGIN) -> dict[str, Any]:
    """The ``top`` cheapest feasible plans for one input row (see the module docstring).

    Returns ``{"name", "candidates_evaluated", "feasible", "fits_memory", "meets_deadline",
    "seconds", "margin", "searched", "throughput", "plans": [...]}``; each plan has ``input``,
    ``rank``, ``row`` (a complete input row), ``gpu``, ``gpus``, ``days``,
    ``peak_bytes_per_rank``, ``hbm_bytes``, ``peak_fraction``, ``gpu_hours``, ``cost``, ``mfu``,
    ``hfu`` and ``throughput``; the figures are the engine's for that row.  ``progress(done,
    total)`` is called after every chunk of candidates.
    """
    search = _prepare(config)
    return _run(search, top, margin, _ticker(search.size, progress))


def plan_document(configs: Iterable[Config], top: int = 10, progress: Progress | None = None,
                  margin: float = MARGIN) -> dict[str, Any]:
    """The CONTRACT §7 document for every row: plans per input row, concatenated in input order."""
    configs = list(configs)
    searches, problems = [], []
    for c in configs:
        try:
            searches.append(_prepare(c))
        except InputError as e:
            problems.extend(e.problems)
    if problems:
        raise InputError(problems)
    t0 = time.perf_counter()
    tick = _ticker(sum(s.size for s in searches), progress)
    results = [_run(s, top, margin, tick) for s in searches]
    return {
        "schema": SCHEMA,
        "candidates_evaluated": sum(r["candidates_evaluated"] for r in results),
        "feasible": sum(r["feasible"] for r in results),
        "seconds": time.perf_counter() - t0,
        "margin": margin,
        "plans": [p for r in results for p in r["plans"]],
        "inputs": [{k: v for k, v in r.items() if k != "plans"} | {"plans": len(r["plans"])} for r in results],
    }


def plan_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The plans' input rows in document order (for ``plans.csv`` and ``build``)."""
    return [dict(p["row"]) for p in document["plans"]]


def _ticker(total: int, progress: Progress | None) -> Callable[[int], None]:
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    return tick
