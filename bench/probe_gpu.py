#!/usr/bin/env python3
"""Measured runs for the ledger: a Llama-style decoder of about 1B parameters (random weights) on
one GPU, three steps of AdamW under ledger_report.probe, for the recompute and loss variants the
ledger models; each variant's probe file, its ledger row and the reconciliation land in OUT.

    python bench/probe_gpu.py --out runs/h200               # on a machine with a GPU
    python bench/probe_gpu.py --out /tmp/x --device cpu --tiny   # the same code, small, on a CPU

Variants (``--variants``, comma-separated; default all four):

* ``plain``: no recompute, the whole logits tensor, cross-entropy in fp32 over it;
* ``recompute``: full recompute (each block under ``torch.utils.checkpoint``);
* ``chunked``: the loss over 8 chunks of the sequence, each chunk's head and cross-entropy
  recomputed in backward, so no whole logits tensor lives (the ledger's ``loss_chunks=8``);
* ``recompute-chunked``: both.

Precision: fp32 weights, gradients and AdamW state, the forward under ``torch.autocast(bf16)``
(weight_dtype fp32, grad_dtype fp32, master none, compute bf16); ``--bf16`` keeps the weights,
gradients and AdamW state in bf16 instead.  Writes OUT/inputs.csv (one row per variant),
OUT/<variant>.jsonl and OUT/<variant>-reconcile.json, and prints each reconciliation.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.decoder import build  # noqa: E402

import ledger_report as lr  # noqa: E402
from ledger_report.probe import Probe  # noqa: E402
from ledger_report.reconciler import read_run, reconcile, render_text  # noqa: E402

SIZES = {  # ~0.95 B parameters: 16 × (4h² + 3hf) + 2 × V × h
    "full": dict(layers=16, hidden=2048, heads=16, ffn=5632, vocab=32000, seq=2048, batch=4),
    "tiny": dict(layers=2, hidden=128, heads=4, ffn=352, vocab=1024, seq=64, batch=2),
}
CHUNKS = 8
VARIANTS = ("plain", "recompute", "chunked", "recompute-chunked")


def row(name: str, size: dict, variant: str, bf16: bool, gpu: str) -> dict:
    return {
        "name": name,
        "layers": size["layers"],
        "hidden": size["hidden"],
        "heads": size["heads"],
        "ffn_hidden": size["ffn"],
        "vocab": size["vocab"],
        "seq_len": size["seq"],
        "micro_batch": size["batch"],
        "global_batch": size["batch"],
        "weight_dtype": "bf16" if bf16 else "fp32",
        "grad_dtype": "bf16" if bf16 else "fp32",
        "master_dtype": "none",
        "m_dtype": "bf16" if bf16 else "fp32",
        "v_dtype": "bf16" if bf16 else "fp32",
        "optimizer": "adamw",
        "recompute": "full" if "recompute" in variant else "none",
        "loss_chunks": CHUNKS if "chunked" in variant else 1,
        # the chunks' head and loss rebuilt in backward: the logits never live whole
        "loss_impl": "fused_linear_ce" if "chunked" in variant else "eager_fp32",
        "logits_dtype": "bf16",
        "gpu": gpu,
        "tokens": "1B",
    }


def loss_of(model, ids, labels, chunked: bool):
    """Cross-entropy in fp32: over the whole logits, or over CHUNKS checkpointed chunks."""
    if not chunked:
        logits = model(ids)
        return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten())
    from torch.utils.checkpoint import checkpoint

    h = model.hidden_states(ids)

    def chunk_loss(hc, lc):
        return F.cross_entropy(model.head(hc).float().flatten(0, 1), lc.flatten(), reduction="sum")

    total = sum(
        checkpoint(chunk_loss, hc, lc, use_reentrant=False)
        for hc, lc in zip(h.chunk(CHUNKS, dim=1), labels.chunk(CHUNKS, dim=1))
    )
    return total / labels.numel()


def run_variant(variant: str, size: dict, args, out: Path) -> dict:
    dev = torch.device(args.device)
    sizes = {k: size[k] for k in ("layers", "hidden", "heads", "ffn", "vocab")}
    model, _, batch = build(batch_size=size["batch"], seq=size["seq"], **sizes)
    model.recompute = "recompute" in variant
    model.to(dev, dtype=torch.bfloat16 if args.bf16 else torch.float32)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    probe = Probe(out / f"{variant}.jsonl", row=variant, every=1).attach(model, opt)
    autocast = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=not args.bf16)
    for _ in range(args.steps):
        ids, labels = (t.to(dev) for t in batch())
        with autocast:
            loss = loss_of(model, ids, labels, "chunked" in variant)
        probe.loss(loss).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    probe.close()
    del model, opt
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return row(variant, size, variant, args.bf16, args.gpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--gpu", default="H200", help="the rows' gpu column (ledger-report gpus)")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    size = SIZES["tiny" if args.tiny else "full"]
    rows = [run_variant(v, size, args, args.out) for v in args.variants.split(",")]
    inputs = args.out / "inputs.csv"
    with inputs.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    ledgers = {lg.name: lg for lg in lr.compute(str(inputs))}
    for r in rows:
        doc = reconcile(ledgers[r["name"]], [read_run(args.out / f"{r['name']}.jsonl")])
        (args.out / f"{r['name']}-reconcile.json").write_text(json.dumps(doc, indent=2) + "\n")
        print(render_text(doc))


if __name__ == "__main__":
    main()
