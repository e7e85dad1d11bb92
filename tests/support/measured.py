"""Published measured runs (tests/data/measured_runs.csv) read as input rows, with the measurement
each one states, for the fidelity test and bench/bench_fidelity.py.

Each CSV row holds its evidence (source, quote, the counter it measured and the value in its true
unit) beside the product's input columns.  A row that uses a column the product does not have yet
is kept out, with the reason, rather than computed without it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from ledger_report.config import COLUMN_NAMES
from ledger_report.engine import compute
from ledger_report.inputs import config_from_mapping

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


def input_row(rec: dict[str, str]) -> dict[str, str]:
    """A measured run's input columns (the ones it gives), without its evidence."""
    return {k: v for k, v in rec.items() if k in COLUMN_NAMES and v}


def load(path: Path = DATA) -> tuple[list[Run], list[tuple[str, str]]]:
    """The runs the product can express, and (run, reason) for those it cannot yet."""
    runs, skipped = [], []
    with open(path, newline="", encoding="utf-8") as fh:
        for rec in csv.DictReader(fh):
            extra = [k for k, v in rec.items() if k not in META and k not in COLUMN_NAMES and v]
            if extra:
                skipped.append((rec["run"], "needs columns " + ", ".join(extra)))
                continue
            lg = compute(
                config_from_mapping(input_row(rec), source=f"{path.name} run {rec['run']}")
            )
            runs.append(
                Run(
                    rec["run"],
                    rec["source"],
                    rec["counter"],
                    float(rec["measured_value"]) * UNIT_BYTES[rec["measured_unit"]],
                    lg[ESTIMATE_KEY[rec["counter"]]],
                    lg["peak_bytes_per_rank"],
                    lg["hbm_bytes"],
                    rec["ran_ok"].lower() == "true",
                    lg["framework"],
                )
            )
    return runs, skipped


def errors(runs: list[Run]) -> tuple[float, float]:
    """Median and largest |estimate / measured − 1|."""
    e = [abs(r.ratio - 1) for r in runs]
    return median(e), max(e)
