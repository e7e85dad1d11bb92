"""The step-time model against published measured throughput (tests/data/measured_throughput.csv).

Each row of the data file is one published run: its source and quote, the figure it measured
(step time, tokens/s per GPU, TFLOP/s per GPU...) converted to tokens/s per GPU, and its
configuration in the product's input columns.  The model predicts tokens/s per GPU with ``mfu``
left empty; this prints predicted ÷ measured for every run, and the median and largest
|predicted/measured − 1| over the runs whose configuration is complete (``complete = yes``).  Runs
whose configuration the source leaves incomplete are printed for reference, with the assumption
the product makes (its defaults), and are not counted.

    python bench/bench_throughput.py            # the table and the summary
    python bench/bench_throughput.py --json     # the same as JSON

Exit status 1 when the median error exceeds 10 % or the largest 25 %.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from ledger_report.config import COLUMN_NAMES  # noqa: E402
from ledger_report.engine import compute, config_from_mapping  # noqa: E402
from ledger_report.errors import InputError  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "measured_throughput.csv"
MEDIAN_TARGET = 0.10
LARGEST_TARGET = 0.25
SHOWN = (
    "time_compute_s",
    "time_tp_s",
    "time_cp_s",
    "time_ep_s",
    "time_pp_s",
    "time_bubble_s",
    "time_dp_s",
    "time_optimizer_s",
    "time_offload_s",
)


def load(path: Path = DATA) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def config_of(row: dict[str, str]):
    """The run's configuration: its non-empty product columns, ``mfu`` left empty."""
    return config_from_mapping(
        {k: v for k, v in row.items() if k in COLUMN_NAMES and v != "" and k != "mfu"}
    )


def predict(row: dict[str, str]) -> dict:
    """The prediction for one run: tokens/s per GPU, the ratio to the measured figure, the terms."""
    out = {
        "run": row["run"],
        "complete": row["complete"] == "yes",
        "measured": None,
        "predicted": None,
        "ratio": None,
        "note": row["excluded_because"],
    }
    if row["measured_tokens_per_s_per_gpu"]:
        out["measured"] = float(row["measured_tokens_per_s_per_gpu"])
    try:
        v = compute(config_of(row)).values
    except InputError as e:
        out["note"] = (
            (out["note"] + "; " if out["note"] else "")
            + "not a valid row: "
            + str(e).splitlines()[0]
        )
        return out
    p = v["predicted_tokens_per_s_per_gpu"]
    out["predicted"] = p
    if p is not None and out["measured"]:
        out["ratio"] = p / out["measured"]
    out["step_time_s"] = v["step_time_s"]
    out["terms"] = {k[5:-2]: v[k] for k in SHOWN}
    out["predicted_mfu"] = v["predicted_mfu"]
    return out


def summary(results: list[dict]) -> dict:
    errs = [abs(r["ratio"] - 1) for r in results if r["complete"] and r["ratio"] is not None]
    worst = sorted(
        (r for r in results if r["complete"] and r["ratio"] is not None),
        key=lambda r: -abs(r["ratio"] - 1),
    )
    return {
        "runs": len(errs),
        "median_error": statistics.median(errs) if errs else None,
        "largest_error": max(errs) if errs else None,
        "worst": [(r["run"], r["ratio"]) for r in worst[:5]],
        "target": f"median <= {MEDIAN_TARGET:.0%}, largest <= {LARGEST_TARGET:.0%}",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--terms", action="store_true", help="print each run's step-time terms")
    args = ap.parse_args(argv)
    results = [predict(r) for r in load()]
    s = summary(results)
    ok = (
        s["median_error"] is not None
        and s["median_error"] <= MEDIAN_TARGET
        and s["largest_error"] <= LARGEST_TARGET
    )
    if args.json:
        print(
            json.dumps(
                {"summary": s, "results": results, "meets_target": ok}, indent=2, default=str
            )
        )
        return 0 if ok else 1
    for part, title in (
        (True, "complete configurations (counted)"),
        (False, "incomplete configurations (reference only)"),
    ):
        print(f"-- {title} --")
        print(f"{'run':58} {'measured':>10} {'predicted':>10} {'ratio':>7}")
        for r in results:
            if r["complete"] != part:
                continue
            m = f"{r['measured']:,.0f}" if r["measured"] else "—"
            p = f"{r['predicted']:,.0f}" if r["predicted"] else "—"
            q = f"{r['ratio']:.3f}" if r["ratio"] else "—"
            line = f"{r['run'][:58]:58} {m:>10} {p:>10} {q:>7}"
            if not part and r["note"]:
                line += f"  ({r['note']})"
            print(line)
            if args.terms and r.get("terms"):
                print("      " + ", ".join(f"{k} {v:.3g}" for k, v in r["terms"].items() if v))
    print(
        f"median |predicted/measured - 1| = {s['median_error']:.1%}, largest = {s['largest_error']:.1%} over {s['runs']} runs "
        f"(target {s['target']}: {'met' if ok else 'NOT met'})"
    )
    print("worst: " + ", ".join(f"{n} {q:.3f}" for n, q in s["worst"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
