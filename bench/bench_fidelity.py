"""How close the peak is to published measured runs (tests/data/measured_runs.csv).

Prints each run's estimate on the counter it measured (allocated, reserved or device) against the
measurement, the ratio, and the median and largest error; runs the product cannot express yet are
listed with the reason.  The goal: median |estimate / measured − 1| ≤ 10 %, largest ≤ 25 %, and no
run that ran said not to fit.

    python bench/bench_fidelity.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.measured import errors, load  # noqa: E402


def main() -> None:
    runs, skipped = load()
    print(
        f"{'run':48s} {'framework':9s} {'counter':9s} {'measured GB':>11s} {'estimate GB':>11s} {'ratio':>6s}"
    )
    for r in sorted(runs, key=lambda r: r.ratio):
        flag = "  said not to fit" if r.said_not_to_fit else ""
        print(
            f"{r.run:48s} {r.framework:9s} {r.counter:9s} {r.measured_bytes / 1e9:11.2f} {r.estimate_bytes / 1e9:11.2f} {r.ratio:6.3f}{flag}"
        )
    med, worst = errors(runs)
    print(
        f"\n{len(runs)} runs from {len({r.source.split(' ')[0] for r in runs})} sources: median error {med:.1%}, largest {worst:.1%}; "
        f"said not to fit though they ran: {sum(r.said_not_to_fit for r in runs)}"
    )
    for run, why in skipped:
        print(f"not expressible yet: {run} ({why})")


if __name__ == "__main__":
    main()
