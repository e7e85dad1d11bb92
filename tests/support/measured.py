"""Published measured runs (tests/data/measured_runs.csv) read as input rows, with the measurement
each one states, for the fidelity test and bench/bench_fidelity.py.

Each CSV row holds its evidence (source, quote, the counter it measured and the value in its true
unit) beside the product's input columns.  A row that uses a column the product does not have yet
is kept out, with the reason, rather than computed without it.

**Constants the data set.**  ``FITTED`` names every constant of the model whose value is chosen
by looking at measured peaks (today two: ``reserved_fraction`` and ``reserved_fraction_expandable``,
the allocator's reserve that the allocator model does not explain, with cudaMalloc'd segments and
with expandable segments).  Each is a field of the conventions table; a run's estimate moves with
at most one of them (its counter and its ``expandable_segments``), affinely, so a run is computed
twice (the constants at 0 and at 1) and any value is a line between the two.  ``fit`` chooses each
value that makes the median log(estimate / measured) zero over the runs it moves, and ``loso``
refits them without each source in turn and predicts that source: the leave-one-source-out figures.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import median

from ledger_report.config import COLUMN_NAMES
from ledger_report.engine import compute
from ledger_report.inputs import config_from_mapping
from ledger_report.model.conventions import CONVENTIONS, FITTED_CONSTANTS
from ledger_report.report import DEFAULT, Model

SHIPPED = {name: CONVENTIONS["generic"][name] for name in FITTED_CONSTANTS}

DATA = Path(__file__).resolve().parents[1] / "data" / "measured_runs.csv"
META = (
    "run",
    "source_kind",
    "source",
    "quote",
    "counter",
    "measured_value",
    "measured_unit",
    "ran_ok",
    "config_notes",
)
UNIT_BYTES = {"GB": 10**9, "GiB": 2**30, "MB": 10**6, "MiB": 2**20}
ESTIMATE_KEY = {
    "allocated": "peak_allocated_bytes_per_rank",
    "reserved": "peak_reserved_bytes_per_rank",
    "device": "peak_bytes_per_rank",
}
COUNTERS = ("allocated", "reserved", "device")
# the counters the fitted constants move (allocated never carries the allocator's reserve), and
# which constant moves a run on them: with expandable segments or without
MOVED = ("reserved", "device")
# the counter the constants are fitted on: the device counter also holds the CUDA context and NCCL's
# buffers, which the allocator's reserve must not absorb
FIT_ON = "reserved"
FITTED = FITTED_CONSTANTS


@dataclass
class Run:
    run: str
    source: str
    counter: str
    measured_bytes: float
    estimate_bytes: float | None
    device_bytes: float | None
    hbm_bytes: float | None
    ran_ok: bool
    framework: str
    # what the fitted constants act on (the engine's reserved_explained_bytes, HBM less the device
    # overhead, device_overhead_bytes, peak_allocated_bytes_per_rank)
    explained: float = 0.0
    capacity: float = 0.0
    extra: float = 0.0
    allocated: float = 0.0
    expandable: bool = False
    config_key: tuple = ()  # the input row without its name: runs of one configuration share it

    @property
    def ratio(self) -> float:
        return self.estimate_bytes / self.measured_bytes

    @property
    def said_not_to_fit(self) -> bool:
        return (
            self.ran_ok
            and self.device_bytes is not None
            and self.hbm_bytes is not None
            and self.device_bytes > self.hbm_bytes
        )

    @property
    def source_key(self) -> str:
        return source_key(self.source)

    def at(self, values: dict[str, float]) -> Run:
        """The run with the fitted constants at ``values``: the engine's peak_reserved_bytes_per_rank
        = min(reserved_explained × (1 + f), max(HBM − context − NCCL, allocated × (1 + f, or 1 with
        expandable segments))), and the device counter that plus the context and NCCL
        (tests/test_fidelity.py checks this against the engine)."""
        name = constant_of("reserved", self.expandable)
        f = values[name]
        floor = self.allocated * (1 + (0.0 if self.expandable else f))
        reserved = min(self.explained * (1 + f), max(self.capacity, floor))
        device = reserved + self.extra
        est = {"allocated": self.allocated, "reserved": reserved, "device": device}[self.counter]
        return replace(self, estimate_bytes=est, device_bytes=device)

    @property
    def constant(self) -> str | None:
        """The fitted constant that moves this run's estimate (None on the allocated counter)."""
        return constant_of(self.counter, self.expandable)


def source_key(source: str) -> str:
    """A source without its section or comment: the unit left out together."""
    return source.split(" ")[0].split("#")[0]


def input_row(rec: dict[str, str]) -> dict[str, str]:
    """A measured run's input columns (the ones it gives), without its evidence."""
    return {k: v for k, v in rec.items() if k in COLUMN_NAMES and v}


def model_with(constants: dict[str, float]) -> Model:
    """The product's model with the fitted constants set (in every convention)."""
    if not constants:
        return DEFAULT
    tables = dict(DEFAULT.tables)
    conv = {name: dict(row) for name, row in tables["convention"].items()}
    for row in conv.values():
        row.update(constants)
    tables["convention"] = conv
    return Model(DEFAULT.registry, DEFAULT.spec, tables)


def _records(path: Path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def load(path: Path = DATA) -> tuple[list[Run], list[tuple[str, str]]]:
    """The runs the product can express (at the shipped constants), and (run, reason) for those it
    cannot yet."""
    runs, skipped = [], []
    for rec in _records(path):
        extra = [k for k, v in rec.items() if k not in META and k not in COLUMN_NAMES and v]
        if extra:
            skipped.append((rec["run"], "needs columns " + ", ".join(extra)))
            continue
        config = config_from_mapping(input_row(rec), source=f"{path.name} run {rec['run']}")
        led = compute(config)
        run = Run(
            rec["run"],
            rec["source"],
            rec["counter"],
            float(rec["measured_value"]) * UNIT_BYTES[rec["measured_unit"]],
            None,
            None,
            led["hbm_bytes"],
            rec["ran_ok"].lower() == "true",
            led["framework"],
            led["reserved_explained_bytes"],
            led["hbm_bytes"] - led["device_overhead_bytes"],
            led["device_overhead_bytes"],
            led["peak_allocated_bytes_per_rank"],
            bool(led["expandable_segments"]),
            tuple(sorted((k, v) for k, v in input_row(rec).items() if k != "name")),
        )
        runs.append(run.at(SHIPPED))
    return runs, skipped


def constant_of(counter: str, expandable: bool) -> str | None:
    """The fitted constant a run's estimate moves with (None on the allocated counter)."""
    if counter not in MOVED:
        return None
    return "reserved_fraction_expandable" if expandable else "reserved_fraction"


def errors(runs: list[Run]) -> tuple[float, float]:
    """Median and largest |estimate / measured − 1|."""
    e = [abs(r.ratio - 1) for r in runs]
    return median(e), max(e)


def bias(runs: list[Run]) -> float:
    """The median estimate / measured (exp of the median log ratio)."""
    return math.exp(median(math.log(r.ratio) for r in runs))


def fit(runs: list[Run], defaults: dict[str, float]) -> dict[str, float]:
    """The fitted constants: each the value that makes the median log(estimate / measured) zero over
    the reserved-counter runs it moves, within [0, 1].  Where the same configuration also measured
    the allocated counter, the run counts by its gap instead (estimated reserved / allocated against
    measured reserved / allocated), so the constant holds only what the allocator adds, not what the
    allocated estimate misses.  A constant no run moves takes the others' fitted value (never its
    shipped value, which the left-out source may have set), and only with no run at all its default."""
    allocated = {r.config_key: r.measured_bytes for r in runs if r.counter == "allocated"}
    moved = {n: [r for r in runs if r.constant == n and r.counter == FIT_ON] for n in FITTED}
    fitted = {n: _fit_one(rs, allocated) for n, rs in moved.items() if rs}
    if not fitted:
        return dict(defaults)
    other = median(fitted.values())
    return {n: fitted.get(n, other) for n in FITTED}


def _fit_one(moved: list[Run], allocated: dict[tuple, float]) -> float:
    def miss(r: Run, v: float) -> float:
        est = r.at(dict.fromkeys(FITTED, v)).estimate_bytes
        if r.config_key in allocated:  # the allocator's own gap, measured on the same run
            return math.log((est / r.allocated) / (r.measured_bytes / allocated[r.config_key]))
        return math.log(est / r.measured_bytes)

    def med(v):
        return median(miss(r, v) for r in moved)

    lo, hi = 0.0, 1.0
    if med(lo) >= 0:
        return lo
    if med(hi) <= 0:
        return hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if med(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def in_sample(runs: list[Run]) -> tuple[list[Run], dict[str, float]]:
    """Every run at the constants fitted on all runs."""
    values = fit(runs, SHIPPED)
    return [r.at(values) for r in runs], values


def loso(runs: list[Run]) -> tuple[list[Run], dict[str, dict[str, float]]]:
    """Each source predicted with the constants fitted on the other sources."""
    out, values = [], {}
    for src in sorted({r.source_key for r in runs}):
        rest = [r for r in runs if r.source_key != src]
        values[src] = v = fit(rest, SHIPPED)
        out += [r.at(v) for r in runs if r.source_key == src]
    return out, values


def by_counter(runs: list[Run]) -> dict[str, list[Run]]:
    """The runs on each counter that has any."""
    return {
        c: [r for r in runs if r.counter == c]
        for c in COUNTERS
        if any(r.counter == c for r in runs)
    }
