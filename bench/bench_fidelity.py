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
    python bench/bench_fidelity.py --explain RUN [RUN ...]   # a run's peak phase, its largest
                                                            # items, and the reserved gap
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


def explain(names: list[str]) -> None:
    """Each named run: the phase of the peak on the reported stage, its largest items, and the gap
    the allocator model puts between the reserved and the allocated peak."""
    import csv

    from support.measured import DATA, input_row

    from ledger_report.engine import compute
    from ledger_report.inputs import config_from_mapping
    from ledger_report.model.definitions.phases import PHASES

    recs = {r["run"]: r for r in csv.DictReader(open(DATA, newline="", encoding="utf-8"))}
    for name in names:
        rec = recs[name]
        lg = compute(config_from_mapping(input_row(rec)))
        phase = lg["peak_phase"]
        names_ = next(items for p, _en, _zh, items in PHASES if p == phase)
        items = sorted(((lg[f"mem_{n}_bytes"], n) for n in names_), reverse=True)
        alloc, res = lg["peak_allocated_bytes_per_rank"], lg["peak_reserved_bytes_per_rank"]
        print(f"{name} ({lg['framework']}, stage {lg['reported_stage']}): peak phase {phase}")
        print("  largest: " + ", ".join(f"{n} {b / 1e9:.2f} GB" for b, n in items[:4] if b))
        print(
            f"  allocated {alloc / 1e9:.2f} GB, reserved {res / 1e9:.2f} GB: gap {res / alloc - 1:+.1%} "
            f"(stranded loss block {lg['allocator_stranded_bytes'] / 1e9:.2f} GB, residual "
            f"{lg['reserved_fraction']:.0%}); measured {rec['counter']} {rec['measured_value']} "
            f"{rec['measured_unit']}"
        )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--explain":
        explain(sys.argv[2:])
        return
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
