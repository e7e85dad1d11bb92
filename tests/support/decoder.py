"""A small decoder-only transformer in plain torch (random weights), for the probe's tests and
bench/bench_probe.py: pre-norm blocks of causal self-attention and a gated MLP, an untied output
head, cross-entropy over the vocabulary.  Its shapes are a ledger row (``ROW``), so the same run
can be reconciled against the ledger's estimate."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

LAYERS, HIDDEN, HEADS, FFN, VOCAB, SEQ, BATCH = 2, 128, 4, 352, 1024, 64, 4

# the ledger row of this model and run (fp32 weights and gradients, torch AdamW, one process)
ROW = {
    "name": "tiny-decoder",
    "layers": LAYERS,
    "hidden": HIDDEN,
    "heads": HEADS,
    "ffn_hidden": FFN,
    "vocab": VOCAB,
    "seq_len": SEQ,
    "micro_batch": BATCH,
    "global_batch": BATCH,
    "weight_dtype": "fp32",
    "grad_dtype": "fp32",
    "master_dtype": "none",
    "optimizer": "adamw",
    "gpu": "H100-SXM",
    "tokens": "1M",
}


class RMSNorm(nn.Module):
    """x / rms(x) × weight (torch's own nn.RMSNorm is 2.4's; the probe supports 2.1 on)."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(dim)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self, hidden=HIDDEN, heads=HEADS, ffn=FFN):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = RMSNorm(hidden), RMSNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.proj = nn.Linear(hidden, hidden, bias=False)
        self.gate_up = nn.Linear(hidden, 2 * ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, h // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Decoder(nn.Module):
    def __init__(
        self, layers=LAYERS, hidden=HIDDEN, heads=HEADS, ffn=FFN, vocab=VOCAB, recompute=False
    ):
        super().__init__()
        self.recompute = recompute  # full recompute: each block's activations rebuilt in backward
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def hidden_states(self, ids):
        from torch.utils.checkpoint import checkpoint

        x = self.embed(ids)
        for blk in self.blocks:
            if self.recompute and torch.is_grad_enabled():
                x = checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return self.norm(x)

    def forward(self, ids):
        return self.head(self.hidden_states(ids))


def build(seed: int = 0, batch_size: int = BATCH, seq: int = SEQ, **sizes):
    """The model, its AdamW and a batch generator (the same for the same seed); ``sizes``:
    layers, hidden, heads, ffn, vocab (default: this file's constants)."""
    torch.manual_seed(seed)
    model = Decoder(**sizes)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    gen = torch.Generator().manual_seed(seed)
    vocab = model.head.out_features

    def batch():
        ids = torch.randint(0, vocab, (batch_size, seq + 1), generator=gen)
        return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    return model, opt, batch


def train_step(model, opt, ids, labels, probe=None, mark=None, hold=None):
    """One step of the loop a user writes; ``probe.loss`` marks the loss when a probe is given,
    ``mark(name)`` is called at each phase boundary (for the tests' own profiler).  ``hold``: a
    list that keeps the step's logits alive until the next step's forward has run (as a loop
    variable ``logits = model(ids)`` does)."""
    mark = mark or (lambda name: None)
    mark("forward")
    logits = model(ids)
    if hold is not None:
        hold[:] = [logits]
    loss = F.cross_entropy(logits.flatten(0, 1), labels.view(-1))
    mark("backward")
    (probe.loss(loss) if probe else loss).backward()
    mark("optimizer")
    opt.step()
    mark("end")
    opt.zero_grad(set_to_none=True)
    return loss.item()
