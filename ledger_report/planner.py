"""The planner (`ledger-report plan`): from a model and a deadline to the cheapest plans that fit.

Each input row describes a model and a job.  The parallel and memory-saving columns it leaves
empty are searched, and every candidate is evaluated through the one registry of definitions
(``model.evaluate.evaluate_arrays``), never through a formula of its own.  Python loops only over
the categorical choices (GPU type × ZeRO stage × recompute mode × where the optimizer lives);
inside each, the numeric ``LAYOUT`` columns are numpy arrays evaluated in chunks.

What it decides and why (feasibility and its margin's source, throughput and the calibration a
measured mfu asks for, cost, ranking, the Pareto front, the search space): docs/planner.md.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from .catalogue import GPU_NAMES
from .config import COLUMN_BY_NAME, COLUMN_NAMES, Config
from .engine import compute, config_from_mapping
from .errors import InputError, Problem, row_problem
from .model.definitions import REGISTRY
from .model.definitions.time import DIMS, TERM_KEYS
from .model.divisors import divisors
from .model.evaluate import columns_read, evaluate_arrays, evaluate_row
from .model.tables import tables
from .progress import Progress, counter

TOP_PLANS = 5  # plans kept per input row unless the caller says (`ledger-report plan --top`)
MAX_TOP = 1000  # the most plans a row may keep (--top, lr.plan's top)

SCHEMA = "ledger-report-plan/1"

# peak ≤ MARGIN × HBM (docs/planner.md: Fujii et al. 2024's < 80 % rule, our fuller peak)
MARGIN = 0.85
LOSS_CHUNK_CHOICES = (1, 2, 4, 8, 16, 32)  # chunked / fused cross-entropy splits
MIN_TOKENS_PER_CP_RANK = 1024  # context parallel stops at ~1K tokens per rank (planner bound)
ZERO_STAGES = (0, 1, 2, 3)
RECOMPUTE_MODES = ("none", "selective", "full")
OFFLOAD_COLUMNS = ("master_at", "optimizer_at")
OPTIMIZER_PLACES = COLUMN_BY_NAME["optimizer_at"].choices
GPU_OVERRIDES = ("hbm_gb", "peak_tflops", "gpus_per_node")
# observations of the row's own layout (a measured mfu calibrates instead); and the row's model,
# whose columns the row already holds (a config.json path would not resolve from the plans' folder)
DROPPED_COLUMNS = ("params_per_rank", "measured_peak_gb", "mfu", "model")
NEEDED = ("tokens", "days", "seq_len", "global_batch", "layers")
# The most candidates one row's search may hold (--max-candidates): about 40 s at ~0.5 M/s.
MAX_CANDIDATES = 20_000_000
PAIR_BLOCK = 1_048_576  # (dp, micro_batch) pairs checked at once while they are counted
CHUNK = 131_072  # candidates per evaluate_arrays call (bounds memory: a few hundred arrays of this size)
PARETO_POINTS = 12
# the front shown runs from the cheapest plan to plans costing at most twice as much
PARETO_COST_CAP = 2.0
COST_TOLERANCE = 0.01  # costs are compared in steps of 1 % (log buckets): within a step fewer GPUs and the simpler layout go first
SCALE_BOUNDS = (0.05, 4.0)  # efficiency_scale searched when a measured mfu calibrates the model

# The gates a feasible plan passes, besides the model's constraints: name -> registry key.
GATES = (
    ("memory", "peak_bytes_per_rank"),
    ("deadline", "meets_deadline"),
    ("bandwidth", "bandwidth_gate"),
    ("host_memory", "host_fits"),
    ("nvme_capacity", "nvme_fits"),
)
LAYOUT = ("dp", "tp", "pp", "cp", "ep", "micro_batch", "loss_chunks")
SEARCHED_COLUMNS = LAYOUT + ("zero", "recompute", "sequence_parallel", *OFFLOAD_COLUMNS, "gpu")


# The constraints that depend on the layout (a rule about the row alone, such as params_total agreeing
# with the architecture, is the input's to meet, not the planner's to search around).
CONSTRAINT_KEYS = tuple(
    c.ok
    for c in REGISTRY.constraints
    if not c.row_only and columns_read(REGISTRY, (c.ok,)) & set(SEARCHED_COLUMNS)
)
FIGURES = (
    "hbm_bytes",
    "days_on_config",
    "gpu_hours",
    "cost",
    "gpus",
    "step_time_s",
    "predicted_mfu",
)
KEYS = tuple(dict.fromkeys(FIGURES + tuple(k for _n, k in GATES) + CONSTRAINT_KEYS))


# ---- small helpers ---------------------------------------------------------------------------
def _py(v: Any) -> Any:
    """numpy scalars to Python numbers (rows and JSON hold plain values)."""
    return v.item() if isinstance(v, (np.bool_, np.number)) else v


def _holds(v: Any, n: int, blank: bool = True) -> np.ndarray:
    """A constraint's value over n candidates: true where it holds, ``blank`` where it does not
    apply (a blank)."""
    if v is None:
        return np.full(n, blank)
    return np.broadcast_to(np.ma.filled(v, blank).astype(bool), (n,))


def _figure(v: Any, n: int) -> np.ndarray:
    """A figure over n candidates as floats, a blank (None or masked) as NaN."""
    return np.broadcast_to(np.ma.filled(np.ma.asarray(v, dtype=float), np.nan), (n,))


def _checks(v: Mapping[str, Any], n: int, margin: float) -> dict[str, np.ndarray]:
    """The rule a feasible plan meets, over n candidates (``v``: their registry values, arrays or
    the engine's scalars): each gate and constraint, true where it holds.  The peak is within
    ``margin`` of HBM; a blank deadline fails; any other blank gate or constraint does not apply."""
    ok = {"memory": _figure(v["peak_bytes_per_rank"], n) <= margin * _figure(v["hbm_bytes"], n)}
    for name, key in GATES[1:]:
        ok[name] = _holds(v[key], n, blank=key != "meets_deadline")
    for key in CONSTRAINT_KEYS:
        ok[key] = _holds(v[key], n)
    return ok


# ---- the search space ---------------------------------------------------------------------------
@dataclass
class _Batch:
    """One categorical combination and its numeric layout arrays."""

    gpu: str | None  # None: as the row gives it
    zero: int
    recompute: str
    optimizer: str | None  # where master weights and moments live; None: as the row gives it
    price: float | None  # None: the row's price_per_gpu_hour (or none)
    layout: dict[str, np.ndarray]  # LAYOUT column -> int array, all the same length
    search: "_Search"

    @property
    def size(self) -> int:
        return len(self.layout["dp"])

    def cols(self, sl: slice | np.ndarray = slice(None)) -> dict[str, Any]:
        """The ``evaluate_arrays`` input for candidates ``sl`` of this batch: the row's own
        columns with this batch's categorical choices, and the candidates' layouts."""
        s = self.search
        cols = {**s.base, "zero": self.zero, "recompute": self.recompute}
        if self.gpu is not None:
            cols["gpu"] = self.gpu
        if self.optimizer not in (None, "hbm"):
            cols.update(dict.fromkeys(OFFLOAD_COLUMNS, self.optimizer))
        if self.price is not None:
            cols["price_per_gpu_hour"] = self.price
        if s.scale != 1.0:
            cols["efficiency_scale"] = s.scale
        cols |= {c: self.layout[c][sl] for c in LAYOUT}
        if s.set_sequence_parallel:  # wherever tp > 1 and the sequence splits evenly over tp·cp
            tp, cp = cols["tp"], cols["cp"]
            cols["sequence_parallel"] = (tp > 1) & (s.seq_len % (tp * cp) == 0)
        return cols

    def row(self, i: int) -> dict[str, Any]:
        """Candidate ``i`` as a complete input row (only non-empty values: no sequence_parallel
        the planner would set false)."""
        row = {k: _py(v) for k, v in self.cols(i).items()}
        if self.search.set_sequence_parallel and not row["sequence_parallel"]:
            del row["sequence_parallel"]
        return row


@dataclass
class _Search:
    config: Config
    base: dict[str, Any]  # the row's given values, less the dropped observations
    searched: list[str]
    set_sequence_parallel: bool
    seq_len: int
    target_mfu: float | None  # a measured mfu that calibrates the model
    priced: bool
    window_days: float = 0.0  # the days the job may take (the row's train_window_days)
    scale: float = 1.0  # efficiency_scale the plans carry
    variants: int = 1  # candidates one listed layout can stand for (see ``_Pool``)
    batches: list[_Batch] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(b.size for b in self.batches)


def _problem(config: Config, column: str | None, expected: str, found: str) -> Problem:
    return row_problem(config.source or "input", column, expected, f"{found} (row {config.name!r})")


def _allowed(base: Mapping[str, Any], col: str, values: Iterable[int]) -> list[int]:
    """The values of one layout column that every model constraint reading it alone accepts
    (the ``ok_*`` quantities evaluated over the values, the other layout columns at their defaults)."""
    vals = np.asarray(list(values), dtype=np.int64)
    keys = _ONE_COLUMN.get(col, ())
    if len(vals) == 0 or not keys:
        return [int(x) for x in vals]
    env = evaluate_arrays(REGISTRY, {**base, col: vals}, tables(), keys)
    keep = np.logical_and.reduce([_holds(env[k], len(vals)) for k in keys])
    return [int(x) for x in vals[keep]]


def _one_column_constraints() -> dict[str, list[str]]:
    """For each layout column, the constraints whose rule reads no other layout column."""
    out: dict[str, list[str]] = {}
    for ok in CONSTRAINT_KEYS:
        used = columns_read(REGISTRY, (ok,)) & {*LAYOUT, "zero"}
        if len(used) == 1:
            out.setdefault(next(iter(used)), []).append(ok)
    return out


_ONE_COLUMN = _one_column_constraints()


def _prepare(
    config: Config,
    prices: Mapping[str, float] | None = None,
    max_candidates: int | None = None,
) -> _Search:
    """Resolve the row, choose the searched columns, count the candidates (refusing a search of
    more than ``max_candidates``) and enumerate them."""
    cap = MAX_CANDIDATES if max_candidates is None else int(max_candidates)
    T = tables()
    given, base, v0 = _resolve(config, T)
    ch, searched = _choices(base, v0, prices)
    zero_searched = "zero" in searched
    per_gpu = []  # (gpu, its tp choices, its price)
    for g in ch["gpu"]:
        row_g = base if g is None else {**base, "gpu": g}
        gpn = int((v0 if g is None else evaluate_row(REGISTRY, row_g, T))["gpus_per_node"])
        tps = [base["tp"]] if "tp" in base else _allowed(row_g, "tp", range(1, gpn + 1))
        per_gpu.append((g, tps, prices.get(g or str(v0["gpu"])) if prices else None))
    least = min((_count(ch, tps) for _g, tps, _p in per_gpu), default=0)
    D, M = _batch_pairs(base, ch["dp"], ch["micro_batch"], T, cap // max(least, 1))
    gpus = len(ch["gpu"])
    if D is None:  # M: the pairs accepted before the count stopped
        raise InputError(_too_many(config, f"at least {M * least:,}", cap, searched, gpus))
    total = sum(_count(ch, tps, D, zero_searched) for _g, tps, _p in per_gpu)
    if total > cap:
        raise InputError(_too_many(config, f"{total:,}", cap, searched, gpus))

    search = _Search(
        config,
        base,
        searched,
        "sequence_parallel" in searched,
        int(v0["seq_len"]),
        None if given.get("mfu") is None else float(given["mfu"]),
        bool(prices) or "price_per_gpu_hour" in base,
        float(v0["train_window_days"]),
        variants=len(ch["micro_batch"]) * len(ch["loss_chunks"]) * max(1, len(ch["zero"])),
    )
    # by the tp choices: every layout, and those a sharded ZeRO stage is tried on where the
    # stage is searched (``_sharded``)
    layouts: dict[tuple, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = {}
    for g, tps, price in per_gpu:
        if tuple(tps) not in layouts:
            every = _cross(D, M, ch, tps)
            many = _sharded(every["dp"], every["cp"]) if zero_searched else slice(None)
            layouts[tuple(tps)] = every, {c: a[many] for c, a in every.items()}
        every, sharded = layouts[tuple(tps)]
        for z, r, place in itertools.product(ch["zero"], ch["recompute"], ch["place"]):
            lay = sharded if z and zero_searched else every
            search.batches.append(_Batch(g, int(z), r, place, price, lay, search))
    return search


def _count(
    ch: Mapping[str, list], tps: list[int], D: Any = None, zero_searched: bool = False
) -> int:
    """The candidates of one GPU type (``tps``: its tp choices), counted before any is built: its
    layouts for each ZeRO stage, recompute mode and optimizer place (a sharded stage, where the
    ZeRO stage is searched, only where ``_sharded``); without the (dp, micro_batch) pairs ``D``,
    the candidates per pair at the least (every stage sharded nowhere)."""
    cols = (ch["pp"], tps, ch["ep"], ch["loss_chunks"], ch["recompute"], ch["place"])
    rest = math.prod(map(len, cols))
    if D is None:
        return rest if ch["zero"] else 0
    every = len(D) * len(ch["cp"])
    many = int(np.count_nonzero(_sharded(D[:, None], np.asarray(ch["cp"], np.int64))))
    return rest * sum(many if z and zero_searched else every for z in ch["zero"])


def _batch_pairs(
    base: dict, dps: list[int], mbs: list[int], T, most: int
) -> tuple[np.ndarray, np.ndarray] | tuple[None, int]:
    """The (dp, micro_batch) pairs the batch constraint accepts, tried a block of dp values at a
    time (the grid of every divisor pair of a global_batch rich in divisors would not fit in
    memory); (None, pairs accepted so far) as soon as more than ``most`` are accepted."""
    block = max(1, PAIR_BLOCK // max(len(mbs), 1))
    kept_d, kept_m, n = [np.empty(0, np.int64)], [np.empty(0, np.int64)], 0
    mb = np.asarray(mbs, dtype=np.int64)
    for start in range(0, len(dps), block):
        dp = np.asarray(dps[start : start + block], np.int64)
        D, M = (a.ravel() for a in np.meshgrid(dp, mb, indexing="ij"))
        env = evaluate_arrays(
            REGISTRY, {**base, "dp": D, "micro_batch": M}, T, ["ok_global_batch_multiple"]
        )
        keep = _holds(env["ok_global_batch_multiple"], len(D))
        kept_d.append(D[keep])
        kept_m.append(M[keep])
        n += int(keep.sum())
        if n > most:
            return None, n
    return np.concatenate(kept_d), np.concatenate(kept_m)


def _too_many(config: Config, total: str, cap: int, searched: list[str], gpus: int) -> Problem:
    """The refusal of a search too large to run, naming the row and the ways to narrow it."""
    narrow = [c for c in "gpu dp tp pp cp micro_batch zero recompute".split() if c in searched]
    return _problem(
        config,
        None,  # the row's search as a whole, no one column
        f"a search of at most {cap:,} candidates (--max-candidates); give "
        + (", ".join(narrow) if narrow else "fewer searched columns")
        + " in the row to narrow it, or raise --max-candidates",
        f"{total} candidates over {gpus} GPU type{'s' if gpus != 1 else ''} (searched: {', '.join(searched)})",
    )


def _resolve(config: Config, T) -> tuple[dict, dict, Mapping[str, Any]]:
    """The row's given values, the base the candidates vary (its expert split solved once), and the
    row evaluated as given; an InputError where the planner cannot start."""
    given = config.given()
    needed = "a value (the planner needs tokens, days, seq_len, global_batch and the architecture)"
    problems = [_problem(config, c, needed, "an empty cell") for c in NEEDED if c not in given]
    if problems:
        raise InputError(problems)
    compute(config)  # a row whose figures overflow is refused as calc and build refuse it
    base = {k: v for k, v in given.items() if k not in DROPPED_COLUMNS}
    if "params_per_rank" in given:
        # The observation solves the expert split at the row's own layout; plans carry the result.
        v = evaluate_row(REGISTRY, config.values, T)
        base["params_total"] = int(round(v["params_total"]))
        base["params_expert"] = int(round(v["params_expert"]))
    v0 = evaluate_row(REGISTRY, base, T)
    if v0["step_time_s"] is None or v0["peak_bytes_per_rank"] is None:
        evaluable = "a row the ledger can evaluate (architecture, tokens, days)"
        raise InputError(_problem(config, "layers", evaluable, "a blank peak or step time"))
    if not v0["train_window_days"] > 0:
        found = f"{v0['reserve_days']} of {v0['days']}"
        raise InputError(_problem(config, "reserve_days", "fewer reserve days than days", found))
    return given, base, v0


def _choices(
    base: dict, v0: Mapping[str, Any], prices: Mapping[str, float] | None
) -> tuple[dict[str, list], list[str]]:
    """The values to try of each column but tp (whose choices depend on the GPU type): GPU types,
    ZeRO stages, recompute modes, optimizer places ("place"), data-parallel sizes, micro-batches,
    pipeline, context and expert sizes and loss chunks; and the columns searched, in column order
    (sequence_parallel among them where the planner sets it)."""
    searched = [c for c in ("tp", "sequence_parallel") if c not in base]

    def opts(col: str, default: Iterable[Any]) -> list[Any]:
        if col in base:
            return [base[col]]
        searched.append(col)
        return list(default)

    if "gpu" in base or any(c in base for c in GPU_OVERRIDES):
        gpus: list[str | None] = [None]
    else:
        searched.append("gpu")
        gpus = [g for g in GPU_NAMES if not prices or g in prices]
    zeros = [base["zero"]] if "zero" in base else _allowed(base, "zero", opts("zero", ZERO_STAGES))
    if any(c in base for c in OFFLOAD_COLUMNS):
        places: list[str | None] = [None]
    else:
        places = list(OPTIMIZER_PLACES)
        searched.extend(OFFLOAD_COLUMNS)
    gb, seq, experts = int(v0["global_batch"]), int(v0["seq_len"]), int(v0["experts"] or 0)
    numeric = {
        "dp": divisors(gb),
        "micro_batch": divisors(gb),
        "pp": range(1, int(v0["layers"]) + 1),
        "cp": [c for c in divisors(seq) if c == 1 or seq // c >= MIN_TOKENS_PER_CP_RANK],
        "ep": divisors(experts) if experts else [1],
    }
    ch = {"gpu": gpus, "zero": zeros, "recompute": opts("recompute", RECOMPUTE_MODES)}
    ch |= {"place": places} | {c: _allowed(base, c, opts(c, d)) for c, d in numeric.items()}
    ch["loss_chunks"] = opts("loss_chunks", LOSS_CHUNK_CHOICES)
    return ch, [c for c in COLUMN_NAMES if c in searched]


def _sharded(dp: Any, cp: Any) -> Any:
    """Where the planner, searching ZeRO, tries a sharded stage: dp·cp > 1 (with one
    data-parallel rank there is nothing to shard: it only adds overhead)."""
    return dp * cp > 1


def _cross(D, M, ch: Mapping[str, list], tps: list[int]) -> dict[str, np.ndarray]:
    """Every ((dp, micro_batch), pp, tp, cp, ep, loss_chunks) combination."""
    grid = (np.arange(len(D)), ch["pp"], tps, ch["cp"], ch["ep"], ch["loss_chunks"])
    t_i, pp, tp, cp, ep, lc = (a.ravel() for a in np.meshgrid(*grid, indexing="ij"))
    columns = (D[t_i], tp, pp, cp, ep, M[t_i], lc)  # in LAYOUT's order
    return {k: np.ascontiguousarray(v, dtype=np.int64) for k, v in zip(LAYOUT, columns)}


# ---- evaluation ---------------------------------------------------------------------------------
def _evaluate(batch: _Batch, sl: slice | np.ndarray, margin: float) -> dict[str, np.ndarray]:
    """Registry figures, gates and constraints for candidates ``sl`` of ``batch``."""
    env = evaluate_arrays(REGISTRY, batch.cols(sl), tables(), list(KEYS))
    n = sl.stop - sl.start if isinstance(sl, slice) else len(sl)
    full: dict[str, Any] = {k: _figure(env[k], n) for k in FIGURES + ("peak_bytes_per_rank",)}
    full["ok"] = ok = _checks(env, n, margin)
    full["feasible"] = np.logical_and.reduce(list(ok.values()))
    full["rank_cost"] = full["cost"] if batch.search.priced else full["gpu_hours"]
    full["rank_bucket"] = np.floor(
        np.log(np.maximum(full["rank_cost"], 1e-300)) / math.log1p(COST_TOLERANCE)
    )
    return full


def _rank_keys(batch: _Batch, idx: np.ndarray, f: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Sort keys of candidates ``idx`` of one batch, most significant first (docs/planner.md: ranking)."""
    lay = {c: batch.layout[c][idx] for c in LAYOUT}
    n = len(idx)
    return [
        np.asarray(f["rank_bucket"]),
        np.asarray(f["gpus"]),
        np.full(n, OPTIMIZER_PLACES.index(batch.optimizer) if batch.optimizer else 0),
        lay["tp"] * lay["pp"] * lay["cp"],
        np.full(n, batch.zero),
        lay["pp"],
        lay["cp"],
        lay["tp"],
        lay["ep"],
        lay["loss_chunks"],
        -lay["micro_batch"],
        np.asarray(f["peak_bytes_per_rank"]),
        np.asarray(f["rank_cost"]),
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
        if len(idx) > self.size:  # keep the cheapest first: only they can enter the pool
            kth = np.partition(f["rank_bucket"], self.size - 1)[self.size - 1]
            sel = f["rank_bucket"] <= kth
            idx, f = idx[sel], {k: v[sel] for k, v in f.items()}
        keys = _rank_keys(batch, idx, f)
        b = np.full(len(idx), b_no)
        if self.keys is not None:
            keys = [np.concatenate([a, c]) for a, c in zip(self.keys, keys)]
            b = np.concatenate([self.batch, b])
            idx = np.concatenate([self.idx, idx])
        order = np.lexsort(keys[::-1])[: self.size]
        self.keys = [k[order] for k in keys]
        self.batch, self.idx = b[order], idx[order]


class _Front:
    """The Pareto front of days against cost over the feasible candidates seen so far."""

    def __init__(self) -> None:
        self.days = np.empty(0)
        self.cost = np.empty(0)
        self.batch = np.empty(0, np.int64)
        self.idx = np.empty(0, np.int64)

    def add(self, b_no: int, idx: np.ndarray, days: np.ndarray, cost: np.ndarray) -> None:
        d = np.concatenate([self.days, days])
        c = np.concatenate([self.cost, cost])
        b = np.concatenate([self.batch, np.full(len(idx), b_no)])
        i = np.concatenate([self.idx, idx])
        order = np.lexsort((c, d))
        d, c, b, i = d[order], c[order], b[order], i[order]
        keep = np.r_[True, c[1:] < np.minimum.accumulate(c)[:-1]]  # cheaper than each faster one
        self.days, self.cost, self.batch, self.idx = d[keep], c[keep], b[keep], i[keep]


def _scan(
    search: _Search, top: int, tick: Callable[[int], None], structural: bool = False
) -> tuple[dict[str, int], dict[str, int], _Pool, _Front, float]:
    """One pass over every candidate: counts, what excludes, the pool of the best, the front, and
    the fewest days of a candidate that passes every gate but the deadline.

    ``structural``: the calibration pass: only the candidates with the most loss chunks (the
    lightest; chunking costs no time), feasible when they fit and hold the constraints, whatever
    the deadline and the bandwidth gate say."""
    counts = {"evaluated": 0, "feasible": 0}
    excluded: dict[str, int] = {}
    fastest = math.inf
    pool = _Pool((top + 8) * search.variants)
    front = _Front()
    for b_no, batch in enumerate(search.batches):
        size = batch.size
        chunks: Iterable[Any] = (slice(k, min(size, k + CHUNK)) for k in range(0, size, CHUNK))
        if structural:
            lc = batch.layout["loss_chunks"]
            sel = np.flatnonzero(lc == lc.max()) if len(lc) else np.empty(0, np.int64)
            chunks = (sel[k : k + CHUNK] for k in range(0, len(sel), CHUNK))
        for sl in chunks:
            f = _evaluate(batch, sl, MARGIN)
            n = len(f["feasible"])
            counts["evaluated"] += n
            for name, a in f["ok"].items():
                bad = n - int(a.sum())
                if bad:
                    excluded[name] = excluded.get(name, 0) + bad
            but_deadline = np.logical_and.reduce([a for k, a in f["ok"].items() if k != "deadline"])
            if but_deadline.any():
                fastest = min(fastest, float(np.nanmin(f["days_on_config"][but_deadline])))
            feasible = f["feasible"]
            if structural:
                skip = ("deadline", "bandwidth")
                feasible = np.logical_and.reduce([a for k, a in f["ok"].items() if k not in skip])
            ok = np.flatnonzero(feasible)
            counts["feasible"] += len(ok)
            if len(ok):
                at = ok + sl.start if isinstance(sl, slice) else sl[ok]
                figs = {
                    k: f[k][ok] for k in ("rank_cost", "rank_bucket", "gpus", "peak_bytes_per_rank")
                }
                pool.add(b_no, batch, at, figs)
                if not structural:
                    front.add(b_no, at, f["days_on_config"][ok], f["rank_cost"][ok])
            tick(n)
    return counts, excluded, pool, front, fastest


def _calibrate(search: _Search) -> dict[str, Any] | None:
    """Scale the matmul efficiency so that the predicted MFU of the first layout of the
    calibration pass (``_scan``'s ``structural``) is the row's measured one."""
    if search.target_mfu is None:
        return None
    pool = _scan(search, 1, lambda n: None, structural=True)[2]
    if not len(pool.idx):
        return None
    b_no, i = int(pool.batch[0]), int(pool.idx[0])
    row = {k: v for k, v in search.batches[b_no].row(i).items() if k != "efficiency_scale"}
    T = tables()

    def mfu_at(k: float) -> float:
        return float(evaluate_row(REGISTRY, {**row, "efficiency_scale": k}, T)["predicted_mfu"])

    lo, hi = SCALE_BOUNDS
    target = search.target_mfu
    if mfu_at(hi) < target:
        k = hi
    elif mfu_at(lo) > target:
        k = lo
    else:
        for _ in range(40):  # the predicted MFU grows with the scale: bisect
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mfu_at(mid) < target else (lo, mid)
        k = (lo + hi) / 2
    shown = ("gpu", "dp", "tp", "pp", "cp", "ep", "zero", "recompute", "micro_batch")
    return {
        "mfu": target,
        "efficiency_scale": k,
        "predicted_mfu": mfu_at(k),
        "layout": {c: _py(row[c]) for c in shown if row.get(c) is not None},
    }


def _run(search: _Search, top: int, tick: Callable[[int], None]) -> dict[str, Any]:
    t0 = time.perf_counter()
    calibration = _calibrate(search)
    throughput = "predicted by the step-time model for each layout (docs/definitions.md#step-time)"
    if calibration is not None:
        search.scale = calibration["efficiency_scale"]
        throughput = (
            f"predicted by the step-time model, its matmul efficiency scaled by {search.scale:.4g} so that the cheapest "
            f"layout reaches the measured mfu {calibration['mfu']:.4g}"
        )
    counts, excluded, pool, front, fastest = _scan(search, top, tick)
    plans = _top_plans(search, pool, top)  # both empty where nothing is feasible
    pareto = _pareto(search, front)
    ranked = sorted(excluded.items(), key=lambda kv: -kv[1])
    if plans:
        reason = None
    elif not counts["evaluated"]:
        reason = "no candidate satisfies the layout rules with the given columns"
    else:
        name, n = ranked[0]
        reason = f"no feasible candidate: {gate_text(name, MARGIN)} excluded the most ({n:,} of {counts['evaluated']:,})"
        if name == "deadline" and not math.isfinite(fastest):
            reason += "; no candidate passes the other gates either"
        elif name == "deadline":  # what the deadline would have to be
            reason += (
                f"; the fastest candidate that passes the other gates needs {fastest:,.1f} days against "
                f"{search.window_days:,.1f} available: more days, fewer tokens, or a larger global_batch so that more GPUs share the step"
            )
    return {
        "name": search.config.name,
        "candidates_evaluated": counts["evaluated"],
        "feasible": counts["feasible"],
        "fits_memory": counts["evaluated"] - excluded.get("memory", 0),
        "meets_deadline": counts["evaluated"] - excluded.get("deadline", 0),
        "excluded_by": dict(ranked),
        "seconds": time.perf_counter() - t0,
        "margin": MARGIN,
        "searched": list(search.searched),
        "throughput": throughput,
        "calibration": calibration,
        "ranked_by": "cost" if search.priced else "gpu_hours",
        "reason": reason,
        "plans": plans,
        "pareto": pareto,
    }


def gate_text(name: str, margin: float) -> str:
    """What a gate or a layout rule of ``excluded_by`` asks, in words (never its internal key)."""
    texts = {
        "memory": f"the memory gate (peak ≤ {margin:g} × HBM)",
        "deadline": "the deadline gate",
        "bandwidth": "the bandwidth gate (offloaded states stream within the step budget)",
        "host_memory": "host memory",
        "nvme_capacity": "NVMe capacity",
    }
    if name in texts:
        return texts[name]
    c = next((c for c in REGISTRY.constraints if c.ok == name), None)
    return f"the rule on {c.column}: {c.en}" if c else name


def _plan_figures(search: _Search, rank: int, row: dict[str, Any], v: Mapping[str, Any]) -> dict:
    peak, hbm = v["peak_bytes_per_rank"], v["hbm_bytes"]
    terms = {k: float(v[f"time_{k}_s"]) for k in TERM_KEYS}
    shown = {k: t for k, t in terms.items() if k != "compute" and t > 0.0005 * v["step_time_s"]}
    return {
        "input": search.config.name,
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
        "price_per_gpu_hour": v["price_per_gpu_hour"],
        "step_time_s": float(v["step_time_s"]),
        "step_time_breakdown": terms,
        "predicted_mfu": float(v["predicted_mfu"]),
        "mfu": float(v["mfu"]),
        "hfu": float(v["predicted_hfu"]),
        "tokens_per_s_per_gpu": float(v["tokens_per_s_per_gpu"]),
        "bubble_fraction": float(v["bubble_fraction"]),
        "step_bound": v["step_bound"],
        "comm_latency_s": float(v["time_comm_latency_s"]),
        "comm_bandwidth_s": float(v["time_comm_bandwidth_s"]),
        "crosses_nodes": {g: bool(v[f"{g}_crosses_nodes"]) for g in DIMS},
        "why": ", ".join(f"{k} {t:.3g} s" for k, t in sorted(shown.items(), key=lambda kv: -kv[1]))
        or "compute only",
        "throughput": f"step {v['step_time_s']:.4g} s, predicted MFU {v['predicted_mfu']:.4g}",
    }


def _through_engine(search: _Search, b_no: Any, i: Any) -> tuple:
    """Candidate ``i`` of batch ``b_no`` re-run through the engine: (row, figures), or Nones where
    the scalar engine disagrees at a boundary (never report a plan it rejects: ``_checks``)."""
    row = search.batches[int(b_no)].row(int(i))
    v = compute(config_from_mapping(row)).values
    return (row, v) if all(a[0] for a in _checks(v, 1, MARGIN).values()) else (None, None)


def _top_plans(search: _Search, pool: _Pool, top: int) -> list[dict[str, Any]]:
    """The first ``top`` distinct layouts, each re-run through the engine for its reported figures."""
    seen: set = set()
    plans: list[dict[str, Any]] = []
    for b_no, i in zip(pool.batch, pool.idx):
        if len(plans) >= top:
            break
        batch = search.batches[int(b_no)]
        sizes = tuple(int(batch.layout[c][i]) for c in ("dp", "tp", "pp", "cp", "ep"))
        layout = (batch.gpu, batch.recompute, batch.optimizer, sizes)
        if (layout, batch.zero) in seen:
            continue  # a micro-batch / loss-chunk variant of a listed layout
        row, v = _through_engine(search, b_no, i)
        if row is None:
            continue
        seen.add((layout, batch.zero))
        same = (layout, "same", v["peak_bytes_per_rank"], v["step_time_s"])
        if same in seen:
            continue  # a ZeRO stage that changes nothing here
        seen.add(same)
        rank = len(plans) + 1
        row["name"] = f"{search.config.name}-p{rank}"
        note = f"plan {rank} for {search.config.name}: peak ≤ {MARGIN:g} × HBM; predicted step {v['step_time_s']:.4g} s"
        row["notes"] = f"{search.base['notes']} | {note}" if search.base.get("notes") else note
        plans.append(_plan_figures(search, rank, row, v))
    return plans


def _pareto(search: _Search, front: _Front) -> list[dict[str, Any]]:
    """The front of days against cost, as distinct layouts through the engine, fastest first."""
    cheap = np.flatnonzero(front.cost <= PARETO_COST_CAP * front.cost.min(initial=np.inf))
    n = len(cheap)
    picks = (
        range(n)
        if n <= PARETO_POINTS
        else sorted({round(k * (n - 1) / (PARETO_POINTS - 1)) for k in range(PARETO_POINTS)})
    )
    out: list[dict[str, Any]] = []
    for j in (cheap[k] for k in picks):
        row, v = _through_engine(search, front.batch[j], front.idx[j])
        if row is None:
            continue
        row["name"] = f"{search.config.name}-front{len(out) + 1}"
        p = _plan_figures(search, len(out) + 1, row, v)
        p.pop("rank")
        out.append(p)
    return out


# ---- public -------------------------------------------------------------------------------------
def plan(
    config: Config,
    *,
    top: int = TOP_PLANS,
    progress: Progress | None = None,
    prices: Mapping[str, float] | None = None,
    max_candidates: int | None = None,
) -> dict[str, Any]:
    """The ``top`` cheapest feasible plans for one input row (docs/planner.md): the
    counts, what excluded the rest, the plans and the Pareto front (``_run``), each plan's figures
    the engine's for its row (``_plan_figures``).  ``progress(done, total)`` is called after every
    chunk; a search larger than ``max_candidates`` (default ``MAX_CANDIDATES``) is refused with an
    ``InputError`` naming the row and the columns that would narrow it."""
    search = _prepare(config, prices, max_candidates)
    return _run(search, top, counter(progress, search.size))


def plan_document(
    configs: Iterable[Config],
    top: int = TOP_PLANS,
    progress: Progress | None = None,
    prices: Mapping[str, float] | None = None,
    max_candidates: int | None = None,
) -> dict[str, Any]:
    """The planner's document for every row: plans per input row, concatenated in input order."""
    searches, problems = [], []
    for c in configs:
        try:
            searches.append(_prepare(c, prices, max_candidates))
        except InputError as e:
            problems.extend(e.problems)
    if problems:
        raise InputError(problems)
    t0 = time.perf_counter()
    tick = counter(progress, sum(s.size for s in searches))
    results = [_run(s, top, tick) for s in searches]
    return {
        "schema": SCHEMA,
        "candidates_evaluated": sum(r["candidates_evaluated"] for r in results),
        "feasible": sum(r["feasible"] for r in results),
        "seconds": time.perf_counter() - t0,
        "margin": MARGIN,
        "plans": [p for r in results for p in r["plans"]],
        "pareto": [p for r in results for p in r["pareto"]],
        "inputs": [
            {k: v for k, v in r.items() if k not in ("plans", "pareto")}
            | {"plans": len(r["plans"])}
            for r in results
        ],
    }
