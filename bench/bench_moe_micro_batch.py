"""What two published MoE runs that differ only in micro-batch size say about a cost per micro-batch.

For every pair of runs in tests/data/measured_throughput.csv from the same source, on the same
layout (tp, cp, ep, etp, pp, virtual stages, dp, GPU) with different micro-batch sizes, this prints
the time of one micro-batch on the slowest stage, measured and predicted, and solves the two runs
for the split the model does not have:

    measured micro-batch time = F · f + w · (the model's micro-batch time)

F is a cost per micro-batch that does not grow with its tokens (host synchronizations and kernel
launches: Megatron-LM's all-to-all token dispatcher waits on the host once per MoE layer forward,
megatron/core/transformer/moe/token_dispatcher.py @6a6cd478 ``_maybe_dtoh_and_synchronize``), f is
4/3 under full recompute (the forward runs again) and 1 otherwise, and w is the share of the model's
own, token-proportional, micro-batch time that the runs bear out.  The measured micro-batch time is
the model's scaled by measured ÷ predicted step time.  Nothing here changes the model: it prints the
evidence for a mechanism (issue #24), fitted to nothing the product uses.

What it found (xtuner's Qwen3-235B runs on H800): the tp2 pair (mbs 1 without recompute, mbs 4 with
full recompute) solves to F ≈ 13 ms per micro-batch and w ≈ 0.58, but the tp1 pair (mbs 4 and 8,
both full recompute) to F ≈ −8 ms: no fixed cost per micro-batch once the micro-batch is large.
Tried as registry terms and refitted leave-one-source-out (issue #24): a fixed exposed time per host
synchronization (one per MoE layer forward pass) makes the largest error worse (28.5 % → 31-32 %);
the micro-batch bounded below by a host time per MoE layer does not move the full-recompute runs
(largest 25-38 % with the median over 10 %); what the product keeps is a GPU time per expert GEMM
launched after the dispatcher's synchronization (EXPERT_GEMM_LAUNCH_S, definitions/time.py), with
Megatron-LM's MoE layers running only the attention's tensor-parallel collectives.

    python bench/bench_moe_micro_batch.py                  # the product's model
    python bench/bench_moe_micro_batch.py --grouped 1.0     # GROUPED_GEMM_RELATIVE set to 1.0
"""

from __future__ import annotations

import argparse
import os
import sys
from itertools import combinations

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from bench_throughput import config_of, load  # noqa: E402
from support import fit  # noqa: E402

from ledger_report.engine import compute  # noqa: E402

LAYOUT = ("source_id", "tp", "cp", "ep", "etp", "pp", "virtual_stages", "dp", "gpu", "experts")
FULL_RECOMPUTE_FACTOR = 4 / 3  # forward + backward ≈ 3 forwards; full recompute adds a fourth


def run_figures(row: dict[str, str], model=None) -> dict:
    v = compute(config_of(row), model).values
    gpus = int(row["dp"]) * int(row["tp"]) * int(row["pp"]) * int(row["cp"] or 1)
    tokens = int(row["global_batch"]) * int(row["seq_len"])
    step_measured = tokens / (gpus * float(row["measured_tokens_per_s_per_gpu"]))
    mbs = int(row["micro_batch"])
    stage = v["slowest_stage"]
    return {
        "run": row["run"],
        "mbs": mbs,
        "f": FULL_RECOMPUTE_FACTOR if row["recompute"] == "full" else 1.0,
        "stage": stage,
        "moe_layers": v[f"{stage}_stage_moe_layers"],
        "predicted_s": v["micro_batch_s"],
        "measured_s": v["micro_batch_s"] * step_measured / v["step_time_s"],
    }


def solve(a: dict, b: dict) -> tuple[float, float]:
    """F (s per micro-batch) and w from the two runs' measured and predicted micro-batch times."""
    w = (b["measured_s"] * a["f"] - a["measured_s"] * b["f"]) / (
        b["predicted_s"] * a["f"] - a["predicted_s"] * b["f"]
    )
    return (a["measured_s"] - w * a["predicted_s"]) / a["f"], w


def pairs(rows: list[dict[str, str]]):
    moe = [r for r in rows if r["experts"] and r["measured_tokens_per_s_per_gpu"]]
    moe = [r for r in moe if r["complete"] == "yes"]
    for a, b in combinations(moe, 2):
        if all(a[k] == b[k] for k in LAYOUT) and a["micro_batch"] != b["micro_batch"]:
            yield (a, b) if int(a["micro_batch"]) < int(b["micro_batch"]) else (b, a)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--grouped", type=float, help="evaluate with GROUPED_GEMM_RELATIVE at this value"
    )
    args = ap.parse_args(argv)
    model = fit.model_with(fit.LAUNCH, args.grouped) if args.grouped is not None else None
    for ra, rb in pairs(load()):
        a, b = run_figures(ra, model), run_figures(rb, model)
        per_token_measured = (b["measured_s"] / b["mbs"]) / (a["measured_s"] / a["mbs"])
        per_token_predicted = (b["predicted_s"] / b["mbs"]) / (a["predicted_s"] / a["mbs"])
        fixed, w = solve(a, b)
        for x in (a, b):
            print(
                f"{x['run']:56} mbs {x['mbs']}  micro-batch measured {x['measured_s'] * 1e3:7.1f} ms"
                f"  predicted {x['predicted_s'] * 1e3:7.1f} ms"
            )
        print(
            f"  per token, larger ÷ smaller micro-batch: measured {per_token_measured:.3f}, "
            f"predicted {per_token_predicted:.3f}"
        )
        print(
            f"  solved: F {fixed * 1e3:.1f} ms per micro-batch = {fixed / a['moe_layers'] * 1e3:.2f} ms "
            f"for each of the {a['moe_layers']} MoE layers of the slowest ({a['stage']}) stage, forward "
            f"+ backward; w {w:.3f} of the model's token-proportional time\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
