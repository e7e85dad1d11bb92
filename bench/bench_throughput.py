"""The step-time model against published measured throughput (tests/data/measured_throughput.csv).

Each row of the data file is one published run: its source and quote, the figure it measured
(step time, tokens/s per GPU, TFLOP/s per GPU...) converted to tokens/s per GPU, and its
configuration in the product's input columns.  The model predicts tokens/s per GPU with ``mfu``
left empty; this prints predicted ÷ measured for every run, and the median and largest
|predicted/measured − 1| over the runs whose configuration is complete (``complete = yes``) two ways: in-sample (the product's
constants as they stand) and leave-one-source-out (the constants the runs set, tests/support/fit.py,
refitted without the source of the run predicted), with the bias (median predicted / measured).
Runs whose configuration the source leaves incomplete are printed for reference, with the
assumption the product makes (its defaults), and are not counted.

    python bench/bench_throughput.py            # the table and the summary
    python bench/bench_throughput.py --json     # the same as JSON

Exit status 1 when the leave-one-source-out median error exceeds 10 %, the largest 25 %, or the
bias leaves 0.95-1.05.

Where it stands (51 complete runs, 8 sources; the product's constants SUSTAINED_FRACTION 0.86 /
0.662, GROUPED_GEMM_RELATIVE 0.6, EXPERT_GEMM_LAUNCH_S 20 µs): in-sample median 5.6 %, largest
28.9 %, bias 1.000; leave-one-source-out median 8.9 %, largest 23.8 %, bias 1.001.  The largest are
xtuner's Qwen3-235B runs at pp 32 (with full recompute and 4 or 8 sequences per micro-batch
predicted slow; its pp 8 runs predicted fast), then torchtitan PR #1690's TP runs (predicted fast).
The fit on all the runs gives the product's constants (0.860 / 0.662, 0.6, 20 µs: median |log
ratio| 0.057, the next pair 0.065), as 7 of the 8 leave-one-source-out folds do for the launch time
(torchtitan's picks 0 µs).  Two folds choose between near-tied pairs: xtuner's (20 µs, 0.8) at
0.0535 against (0 µs, 0.5) at 0.0559, which puts that fold's largest at 34 %, and flagperf's
(20 µs, 0.8) at 0.0711 against (0 µs, 0.4) at 0.0735 (its largest 25 %).
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
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from support import fit  # noqa: E402

from ledger_report.engine import compute  # noqa: E402
from ledger_report.errors import InputError  # noqa: E402

config_of = fit.config_of
DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "measured_throughput.csv"
MEDIAN_TARGET = 0.10
LARGEST_TARGET = 0.25
BIAS_RANGE = (0.95, 1.05)
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


def validation(rows: list[dict[str, str]]) -> dict:
    """In-sample and leave-one-source-out ratios of the complete runs (tests/support/fit.py)."""
    recs = fit.records([r for r in rows if r["complete"] == "yes"])
    loso = fit.leave_one_source_out(recs)
    ins = fit.in_sample(recs)
    return {
        "constants": dict(fit.PRODUCT),
        "refitted_on_all": fit.fit(recs),
        "in_sample": fit.figures(list(ins.values())),
        "leave_one_source_out": fit.figures([q for q, _ in loso.values()]),
        "runs": {
            r.run: {"source_id": r.source_id, "in_sample": ins[r.run], "loso": loso[r.run][0]}
            for r in recs
        },
    }


def per_source(val: dict) -> dict[str, dict]:
    """Per source: its runs' in-sample and leave-one-source-out figures (tests/support/fit.py)."""
    by: dict[str, list] = {}
    for r in val["runs"].values():
        by.setdefault(r["source_id"], []).append(r)
    return {
        s: {
            "in_sample": fit.figures([r["in_sample"] for r in rs]),
            "leave_one_source_out": fit.figures([r["loso"] for r in rs]),
        }
        for s, rs in sorted(by.items())
    }


def _line(name: str, f: dict) -> str:
    return (
        f"{name:22} median |p/m - 1| {f['median_error']:6.1%}  largest {f['largest_error']:6.1%}  "
        f"bias (median p/m) {f['bias']:.3f}  optimistic {f['optimistic']}/{f['runs']}"
    )


def _constant(name: str, value: float) -> str:
    return f"{name} {value * 1e6:g} µs" if name == "launch" else f"{name} {value:.4f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--terms", action="store_true", help="print each run's step-time terms")
    args = ap.parse_args(argv)
    rows = load()
    results = [predict(r) for r in rows]
    val = validation(rows)
    lo = val["leave_one_source_out"]
    ok = (
        lo["median_error"] <= MEDIAN_TARGET
        and lo["largest_error"] <= LARGEST_TARGET
        and BIAS_RANGE[0] <= lo["bias"] <= BIAS_RANGE[1]
    )
    if args.json:
        out = {
            "summary": summary(results),
            "validation": val,
            "per_source": per_source(val),
            "results": results,
        }
        print(json.dumps({**out, "meets_target": ok}, indent=2, default=str))
        return 0 if ok else 1
    print("-- complete configurations (counted) --")
    print(f"{'run':52} {'source':18} {'measured':>9} {'predicted':>9} {'in-sample':>9} {'LOSO':>6}")
    for r in results:
        if not r["complete"]:
            continue
        v = val["runs"][r["run"]]
        print(
            f"{r['run'][:52]:52} {v['source_id'][:18]:18} {r['measured']:9,.0f} {r['predicted']:9,.0f} "
            f"{v['in_sample']:9.3f} {v['loso']:6.3f}"
        )
        if args.terms and r.get("terms"):
            print("      " + ", ".join(f"{k} {t:.3g}" for k, t in r["terms"].items() if t))
    print("-- incomplete configurations (reference only, not counted) --")
    for r in results:
        if r["complete"]:
            continue
        m = f"{r['measured']:,.0f}" if r["measured"] else "-"
        p = f"{r['predicted']:,.0f}" if r["predicted"] else "-"
        q = f"{r['ratio']:.3f}" if r["ratio"] else "-"
        print(f"{r['run'][:52]:52} {m:>9} {p:>9} {q:>7}  ({r['note']})")
    print(
        f"fitted constants (SUSTAINED_FRACTION, GROUPED_GEMM_RELATIVE, EXPERT_GEMM_LAUNCH_S): {val['constants']}; refitted on all runs: "
        + ", ".join(_constant(k, x) for k, x in val["refitted_on_all"].items())
    )
    print("-- per source (complete runs) --")
    for src, f in per_source(val).items():
        i, lo_s = f["in_sample"], f["leave_one_source_out"]
        print(
            f"{src[:26]:26} runs {i['runs']:3d}  in-sample median {i['median_error']:6.1%}  "
            f"leave-one-source-out median {lo_s['median_error']:6.1%} largest "
            f"{lo_s['largest_error']:6.1%} bias {lo_s['bias']:.3f}"
        )
    print(_line("in-sample", val["in_sample"]))
    print(_line("leave-one-source-out", lo))
    print(
        f"target (leave-one-source-out): median <= {MEDIAN_TARGET:.0%}, largest <= {LARGEST_TARGET:.0%}, "
        f"bias in {BIAS_RANGE[0]}-{BIAS_RANGE[1]}: {'met' if ok else 'NOT met'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
