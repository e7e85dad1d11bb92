#!/usr/bin/env python3
"""What ledger_report.probe adds to a training step's time on the CPU.

A decoder in plain torch (tests/support/decoder.py; default 2 layers, hidden 256, vocabulary 4,096,
4 sequences of 128 tokens, AdamW: a step of tens of milliseconds, so that the probe's fixed cost
weighs more than on any real model) is trained step after step; each round times one step without
the probe, one with the probe attached on a step it does not record (its hooks only), and one it
records (the profiler session, the trace, the JSON line), in an order that rotates so that a
shared machine's drift falls on all three alike.  Times are CPU seconds of this process
(``time.process_time``), which other processes' load disturbs less than wall time.  It also times
the probe's hooks themselves (every call, summed per step), the cost that no noise hides.  Prints
the medians, each overhead, and the overhead averaged over a run that records steps 0 and 1 and
then every ``--every``-th step.

    .venv/bin/python bench/bench_probe.py [--rounds 15] [--every 100] [--threads 2]

Needs torch (``pip install -e '.[probe]'``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.decoder import build, train_step  # noqa: E402

from ledger_report.probe import Probe  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=256)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    sizes = dict(layers=args.layers, hidden=args.hidden, heads=4, ffn=704, vocab=4096)
    model, opt, batch = build(batch_size=4, seq=128, **sizes)
    hook_s = _time_hooks()
    for _ in range(3):  # warm up: AdamW's state exists, the allocator and kernels are warm
        train_step(model, opt, *batch())

    def timed(mode: str) -> float:
        probe = None
        if mode != "plain":
            probe = Probe(None, every=10**9 if mode == "hooks" else 1).attach(model, opt)
            probe.step = 2 if mode == "hooks" else 0  # not recorded / recorded
        ids, labels = batch()
        t0 = time.process_time()
        train_step(model, opt, ids, labels, probe=probe)
        seconds = time.process_time() - t0
        if probe:
            probe.detach()
        return seconds

    modes = ["plain", "hooks", "recorded"]
    times: dict[str, list[float]] = {m: [] for m in modes}
    in_hooks: list[float] = []
    for r in range(args.rounds):
        for m in modes[r % 3 :] + modes[: r % 3]:
            hook_s[0] = 0.0
            times[m].append(timed(m))
            if m == "hooks":
                in_hooks.append(hook_s[0])
    med = {m: statistics.median(v) for m, v in times.items()}
    hooks = med["hooks"] / med["plain"] - 1
    recorded = med["recorded"] / med["plain"] - 1
    params = sum(p.numel() for p in model.parameters())
    print(f"torch {torch.__version__}, {args.threads} threads, {params / 1e6:.1f} M parameters, "
          f"{args.rounds} rounds")  # fmt: skip
    for m in modes:
        spread = f"{min(times[m]):.3f}-{max(times[m]):.3f}"
        print(f"  {m:<9} median {med[m]:.3f} s per step ({spread})")
    inside = statistics.median(in_hooks)
    print(f"  inside the probe's hooks on a step not recorded: {1e6 * inside:.0f} µs, "
          f"{100 * inside / med['plain']:.3f} % of a step")  # fmt: skip
    print(f"  hooks only (a step not recorded): {100 * hooks:+.2f} %")
    print(f"  a recorded step (profiler on):   {100 * recorded:+.2f} %")
    k = args.every
    mean = (hooks * (k - 1) + recorded) / k
    direct = (inside / med["plain"] * (k - 1) + recorded) / k
    print(f"  over a run recording every {k}th step: {100 * mean:+.2f} % per step "
          f"({100 * direct:+.2f} % with the hooks' own time for the steps not recorded)")  # fmt: skip


def _time_hooks() -> list[float]:
    """Wraps the probe's hook methods so that the seconds spent in them add up in the list."""
    spent = [0.0]
    names = ("_on_forward", "_on_head", "_on_head_output", "_on_output_grad", "_on_step_pre",
             "_on_step_post", "loss")  # fmt: skip
    for name in names:
        fn = getattr(Probe, name)

        def wrapped(self, *a, _fn=fn, **kw):
            t0 = time.process_time()
            try:
                return _fn(self, *a, **kw)
            finally:
                spent[0] += time.process_time() - t0

        setattr(Probe, name, wrapped)
    return spent


if __name__ == "__main__":
    main()
