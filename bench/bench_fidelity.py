"""How close the peak is to published measured runs (tests/data/measured_runs.csv).

Prints each run's estimate on the counter it measured (allocated, reserved or device) against the
measurement and the ratio, at the shipped constants; then per counter the error three ways:

- shipped: the constants as the product ships them;
- in-sample: every constant the data sets (tests/support/measured.py FITTED) fitted on all runs;
- leave-one-source-out (LOSO): each source predicted with the constants fitted without it;

each as the median and largest |estimate / measured − 1| and the bias (median estimate / measured).
Runs the product cannot express yet are listed with the reason.  The goal: LOSO median ≤ 10 %,
largest ≤ 25 %, bias within 0.95-1.05 on every counter, and no run that ran said not to fit.

    python bench/bench_fidelity.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.measured import (  # noqa: E402
    FITTED,
    SHIPPED,
    bias,
    by_counter,
    errors,
    in_sample,
    load,
    loso,
)


def _line(label: str, runs) -> str:
    med, worst = errors(runs)
    return f"  {label:10s} {len(runs):3d} runs  median {med:6.1%}  largest {worst:6.1%}  bias {bias(runs):.3f}"


def main() -> None:
    runs, skipped = load()
    print(
        f"{'run':48s} {'framework':9s} {'counter':9s} {'measured GB':>11s} {'estimate GB':>11s} {'ratio':>6s}"
    )
    for r in sorted(runs, key=lambda r: r.ratio):
        flag = "  said not to fit" if r.said_not_to_fit else ""
        print(
            f"{r.run:48s} {r.framework:9s} {r.counter:9s} {r.measured_bytes / 1e9:11.2f} "
            f"{r.estimate_bytes / 1e9:11.2f} {r.ratio:6.3f}{flag}"
        )
    fitted, value = in_sample(runs)
    held, values = loso(runs)
    print(f"\n{len(runs)} runs from {len({r.source_key for r in runs})} sources; fitted constants:")
    for name in FITTED:
        out = [v[name] for v in values.values()]
        moved = sum(r.constant == name for r in runs)
        print(
            f"  {name}: shipped {SHIPPED[name]:.4f}, in-sample {value[name]:.4f}, leaving each "
            f"source out {min(out):.4f}-{max(out):.4f} ({moved} runs move it)"
        )
    for label, rs in (("shipped", runs), ("in-sample", fitted), ("LOSO", held)):
        print(label)
        print(_line("all", rs))
        for counter, cr in by_counter(rs).items():
            print(_line(counter, cr))
    print(
        "said not to fit though they ran (LOSO): "
        f"{[r.run for r in held if r.said_not_to_fit] or 'none'}"
    )
    for run, why in skipped:
        print(f"not expressible yet: {run} ({why})")


if __name__ == "__main__":
    main()
