#!/usr/bin/env python3
"""Measure per-phase memory of real PyTorch training steps (CPU), for ledger-report's tests.

Runs two AdamW training steps of small, randomly initialised transformers ``LlamaForCausalLM`` and
``Qwen3ForCausalLM`` models over a grid of variants (recompute, loss, precision, optimizer
implementation, attention kernel, torch.compile) and records, for each phase of each step, the bytes
alive at the end of the phase and the most bytes alive at any moment during it.

Two independent counters (column ``method``):

* ``dispatch``  -- a TorchDispatchMode of this file that registers the storage of every tensor any
  aten op returns (weak reference, freed when the storage is freed) and keeps a running sum of
  ``UntypedStorage.nbytes()``.  Eager only.  It also gives the category breakdown at each phase
  peak (params, grads, optimizer state, activations, temporaries) and live bytes at each decoder
  layer boundary.
* ``allocator`` -- the bytes that c10's CPU allocator holds, from the profiler's memory events
  (``torch.profiler.profile(profile_memory=True)``, started before the model is built so that every
  free matches an allocation).  This is the CPU analogue of ``torch.cuda.memory_allocated`` and the
  only counter that sees inside torch.compile'd (inductor) code.

Needs torch (CPU build) and transformers, which are NOT dependencies of ledger-report; run it from
the separate environment described in bench/measure_torch.md:

    /work/torchvenv/bin/python bench/measure_torch.py --out bench/measure_torch.csv

Writes OUT and OUT's sibling ``measure_torch_categories.csv`` (category breakdown at every phase
peak), and prints a summary of the derived numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import functools
import gc
import os
import pickle
import platform
import re
import subprocess
import sys
import time
import warnings
import weakref
from collections import Counter, defaultdict

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# Each case runs in its own interpreter with a fresh inductor cache (run_case_in_child), so that
# step 1 of a compiled case always includes a real (cold) compilation.
import shutil  # noqa: E402
import tempfile  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import transformers  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402
from torch.utils.weak import WeakIdKeyDictionary  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()

PHASES = ("setup", "forward", "loss", "backward", "optimizer", "after_step")
COLUMNS = [
    "case",
    "model_family",
    "phase",
    "step",
    "live_bytes",
    "peak_bytes",
    "method",
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "ffn_hidden",
    "vocab",
    "tied_embeddings",
    "weight_dtype",
    "grad_dtype",
    "m_dtype",
    "v_dtype",
    "master_dtype",
    "optimizer",
    "seq_len",
    "micro_batch",
    "recompute",
    "loss",
    "loss_chunks",
    "compile",
    "torch_version",
    "transformers_version",
    "notes",
]
CAT_KEYS = [
    "param",
    "buffer",
    "master",
    "grad",
    "opt_state",
    "weight_copy",
    "act",
    "loss_tmp",
    "bwd_tmp",
    "opt_tmp",
    "other",
]
CAT_COLUMNS = (
    ["case", "step", "phase", "method", "peak_bytes"]
    + CAT_KEYS
    + ["logit_bytes", "logit_elems", "layer_act_bytes", "layer_act_per_sbh", "notes"]
)
DTYPE_NAME = {torch.bfloat16: "bf16", torch.float32: "fp32", torch.float16: "fp16"}


# --------------------------------------------------------------------------------------------------
# counter 1: a dispatch-mode storage tracker
# --------------------------------------------------------------------------------------------------
class _Rec:
    __slots__ = (
        "nbytes",
        "born",
        "died",
        "phase",
        "step",
        "op",
        "shape",
        "dtype",
        "role",
        "__weakref__",
    )

    def __init__(self, nbytes, born, phase, step, op, shape, dtype):
        self.nbytes = nbytes
        self.born = born
        self.died = None
        self.phase = phase
        self.step = step
        self.op = op
        self.shape = shape
        self.dtype = dtype
        self.role = None


def tensor_leaves(out):
    """The tensors in an aten op's output: a tensor, or (nested) tuples/lists of them and non-tensors."""
    if isinstance(out, torch.Tensor):
        yield out
    elif isinstance(out, (tuple, list)):
        for x in out:
            yield from tensor_leaves(x)
    elif isinstance(out, dict):
        for x in out.values():
            yield from tensor_leaves(x)


class LiveTracker(TorchDispatchMode):
    """Running sum of the bytes of every CPU storage returned by an aten op while the mode is on.

    A storage is counted once (views share it) from the op that first returned it until CPython
    frees it (weakref callback).  Every change is an event with a sequence number, so the set of
    storages alive at any earlier moment (a phase peak) can be reconstructed and categorised after
    the fact, when it is known which storages became gradients or optimizer state.
    """

    def __init__(self):
        super().__init__()
        self._by_st = WeakIdKeyDictionary()
        self.recs: list[_Rec] = []
        self.cur = 0
        self.t = 0
        self.phase = "setup"
        self.step = 0
        self.phase_peak = 0
        self.phase_peak_t = 0
        self.ops = Counter()

    # -- bookkeeping
    def _free(self, rec, _wr):
        self.cur -= rec.nbytes
        self.t += 1
        rec.died = self.t

    def track(self, t, op="external"):
        if not isinstance(t, torch.Tensor) or t.device.type != "cpu" or t.is_sparse:
            return None
        try:
            st = t.untyped_storage()
        except Exception:  # noqa: BLE001 - tensors without a storage
            return None
        ent = self._by_st.get(st)
        n = st.nbytes()
        if ent is not None:
            rec = ent[0]
            if n != rec.nbytes:  # resize_
                self.cur += n - rec.nbytes
                rec.nbytes = n
                self.t += 1
                self._peak()
            return rec
        if n == 0:
            return None
        self.t += 1
        rec = _Rec(n, self.t, self.phase, self.step, op, tuple(t.shape), t.dtype)
        self._by_st[st] = (rec, weakref.ref(st, functools.partial(self._free, rec)))
        self.recs.append(rec)
        self.cur += n
        self._peak()
        return rec

    def _peak(self):
        if self.cur > self.phase_peak:
            self.phase_peak = self.cur
            self.phase_peak_t = self.t

    def rec_of(self, t):
        ent = self._by_st.get(t.untyped_storage())
        return ent[0] if ent is not None else None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = str(func)
        self.ops[name] += 1
        for leaf in tensor_leaves(out):
            self.track(leaf, name)
        return out

    # -- phases
    def begin(self, step, phase):
        self.step, self.phase = step, phase
        self.phase_peak, self.phase_peak_t = self.cur, self.t

    def end(self):
        return {
            "live": self.cur,
            "peak": self.phase_peak,
            "t_peak": self.phase_peak_t,
            "t_end": self.t,
        }

    def alive_at(self, t):
        return [r for r in self.recs if r.born <= t and (r.died is None or r.died > t)]

    def prune(self):
        self.recs = [r for r in self.recs if r.died is None]


def categorise(recs, weight_shapes=frozenset()):
    out = dict.fromkeys(CAT_KEYS, 0)
    for r in recs:
        if r.role is not None:
            key = r.role
        elif r.op == "aten._to_copy.default" and len(r.shape) == 2 and r.shape in weight_shapes:
            key = (
                "weight_copy"  # autocast's bf16 cast of an fp32 weight (cached, saved for backward)
            )
        elif r.phase == "forward":
            key = "act"
        elif r.phase == "loss":
            key = "loss_tmp"
        elif r.phase == "backward":
            key = "bwd_tmp"
        elif r.phase == "optimizer":
            key = "opt_tmp"
        else:
            key = "other"
        out[key] += r.nbytes
    return out


# --------------------------------------------------------------------------------------------------
# counter 2: c10 CPU allocator bytes, from the profiler's memory events
# --------------------------------------------------------------------------------------------------
class AllocTrace:
    def __init__(self):
        self.prof = profile(
            activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False
        )

    def __enter__(self):
        self.prof.__enter__()
        return self

    def __exit__(self, *exc):
        self.prof.__exit__(*exc)
        evs = self.prof.profiler.kineto_results.events()
        mem, marks = [], {}
        for e in evs:
            name = e.name()
            if name == "[memory]":
                if str(e.device_type()).endswith("CPU"):
                    mem.append((e.start_ns(), e.nbytes()))
            elif name.startswith("mt::"):
                marks[name] = (e.start_ns(), e.end_ns())
        mem.sort(key=lambda x: x[0])
        self.times = [m[0] for m in mem]
        cum, c = [], 0
        for _, nb in mem:
            c += nb
            cum.append(c)
        self.cum = cum
        self.marks = marks
        self.n_events = len(mem)
        return False

    def _idx_le(self, ts):
        import bisect

        return bisect.bisect_right(self.times, ts) - 1

    def at(self, ts):
        i = self._idx_le(ts)
        return self.cum[i] if i >= 0 else 0

    def phase(self, step, phase):
        s, e = self.marks[f"mt::{step}::{phase}"]
        i0 = self._idx_le(s)
        i1 = self._idx_le(e)
        live0 = self.cum[i0] if i0 >= 0 else 0
        peak = max([live0] + self.cum[i0 + 1 : i1 + 1])
        live1 = self.cum[i1] if i1 >= 0 else 0
        return {"live": live1, "peak": peak, "start": live0}

    def probe(self, name):
        s, _ = self.marks[name]
        return self.at(s)


# --------------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------------
FAMILIES = {
    "llama": dict(
        cls=LlamaForCausalLM,
        cfg=LlamaConfig,
        hidden=1024,
        layers=4,
        heads=8,
        kv_heads=2,
        head_dim=128,
        ffn=2816,
        vocab=32000,
        tied=False,
    ),
    "qwen3": dict(
        cls=Qwen3ForCausalLM,
        cfg=Qwen3Config,
        hidden=1024,
        layers=4,
        heads=8,
        kv_heads=4,
        head_dim=128,
        ffn=3072,
        vocab=151936,
        tied=True,
    ),
}


@dataclasses.dataclass
class Case:
    name: str
    family: str = "llama"
    layers: int | None = None
    seq: int = 1024
    mb: int = 1
    recompute: str = "none"  # none | full
    loss: str = "plain"  # plain | hf | chunked_tt | chunked_ckpt
    chunks: int = 8
    precision: str = "bf16"  # bf16 | bf16_master | fp32_amp
    opt: str = "default"  # default (for-loop on CPU) | foreach | fused
    attn: str = "sdpa"  # sdpa | eager | sdpa_math
    compile: bool = False
    methods: tuple = ("dispatch", "allocator")


def grid(quick=False):
    cases = []
    # main grid, Llama, eager: recompute x loss x precision
    for rc in ("none", "full"):
        for loss in ("plain", "chunked_ckpt"):
            for prec in ("bf16", "bf16_master"):
                cases.append(
                    Case(f"llama-{rc}-{loss}-{prec}", recompute=rc, loss=loss, precision=prec)
                )
    cases += [
        Case("llama-none-hf-bf16", loss="hf"),
        Case("llama-none-chunked_tt-bf16", loss="chunked_tt"),
        Case("llama-none-plain-fp32_amp", precision="fp32_amp"),
        Case("llama-none-plain-bf16-foreach", opt="foreach"),
        Case("llama-none-plain-bf16-fused", opt="fused"),
        Case("llama-none-plain-bf16_master-foreach", precision="bf16_master", opt="foreach"),
        Case("llama-none-plain-bf16-attn_eager", attn="eager"),
        Case("llama-none-plain-bf16-attn_math", attn="sdpa_math"),
        Case("llama-full-plain-bf16-attn_eager", recompute="full", attn="eager"),
        Case("llama-none-plain-bf16-s2048", seq=2048),
        Case("llama-none-plain-bf16-mb2s512", seq=512, mb=2),
        Case("llama-none-plain-bf16-L2", layers=2),
        Case("llama-full-plain-bf16-L2", recompute="full", layers=2),
        # Qwen3 (tied embeddings, q/k norms, vocab 151936)
        Case("qwen3-none-plain-bf16", family="qwen3"),
        Case("qwen3-none-chunked_ckpt-bf16", family="qwen3", loss="chunked_ckpt"),
        Case("qwen3-full-plain-bf16", family="qwen3", recompute="full"),
        # torch.compile (inductor, CPU): only the allocator counter sees inside compiled code
        Case("llama-none-plain-bf16-compile", compile=True, methods=("allocator",)),
        Case(
            "llama-full-plain-bf16-compile", recompute="full", compile=True, methods=("allocator",)
        ),
        Case("llama-none-plain-bf16-compile-L2", layers=2, compile=True, methods=("allocator",)),
        Case(
            "llama-full-plain-bf16-compile-L2",
            recompute="full",
            layers=2,
            compile=True,
            methods=("allocator",),
        ),
        Case(
            "llama-none-chunked_ckpt-bf16-compile",
            loss="chunked_ckpt",
            compile=True,
            methods=("allocator",),
        ),
        Case("qwen3-none-plain-bf16-compile", family="qwen3", compile=True, methods=("allocator",)),
    ]
    if quick:
        keep = {
            "llama-none-plain-bf16",
            "llama-full-chunked_ckpt-bf16",
            "llama-none-plain-bf16-L2",
            "llama-none-plain-bf16-compile-L2",
        }
        cases = [c for c in cases if c.name in keep]
    return cases


def dtypes_of(case):
    if case.precision == "bf16":
        return dict(
            weight_dtype="bf16",
            grad_dtype="bf16",
            m_dtype="bf16",
            v_dtype="bf16",
            master_dtype="none",
        )
    if case.precision == "bf16_master":
        return dict(
            weight_dtype="bf16",
            grad_dtype="bf16",
            m_dtype="fp32",
            v_dtype="fp32",
            master_dtype="fp32",
        )
    if case.precision == "fp32_amp":
        return dict(
            weight_dtype="fp32",
            grad_dtype="fp32",
            m_dtype="fp32",
            v_dtype="fp32",
            master_dtype="none",
        )
    raise ValueError(case.precision)


def case_notes(case, fam):
    """Short key=value notes; bench/measure_torch.md explains each value."""
    n = ["device=cpu"]
    n.append(
        "attn="
        + {
            "sdpa": "sdpa(flash_cpu kernel, no s^2 tensor)",
            "eager": "eager(HF matmul+softmax, s^2 probs saved)",
            "sdpa_math": "sdpa(SDPBackend.MATH, s^2 probs saved)",
        }[case.attn]
    )
    n.append(
        "precision="
        + {
            "bf16": "pure_bf16(AdamW states follow param dtype)",
            "bf16_master": "bf16_weights+fp32_master(fp32 main grads cast from bf16 grads in the optimizer phase)",
            "fp32_amp": "fp32_weights+autocast_bf16(forward+loss)",
        }[case.precision]
    )
    n.append(
        "opt_impl="
        + {
            "default": "forloop(AdamW default on CPU)",
            "foreach": "foreach(foreach=True, the default on CUDA)",
            "fused": "fused(fused=True)",
        }[case.opt]
    )
    n.append(
        "loss_impl="
        + {
            "plain": "model(ids).logits then F.cross_entropy(logits.float()), logits ref dropped before backward",
            "hf": "model(ids, labels=labels) (HF ForCausalLMLoss inside forward, loss phase empty), output kept through backward",
            "chunked_tt": "forward=model.model; loss=lm_head per chunk (all kept) then .float()+CE per chunk (torchtune CEWithChunkedOutputLoss, eager)",
            "chunked_ckpt": "forward=model.model; loss=per-chunk lm_head+.float()+CE under checkpoint(use_reentrant=False)",
        }[case.loss]
    )
    if case.recompute == "full":
        n.append(
            "recompute_impl=HF activation_checkpointing_enable(use_reentrant=False), every decoder layer"
        )
    if case.compile:
        n.append(
            "compile_impl=torch.compile(model) inductor, cold cache, step 1 includes compilation"
        )
    return n


def build_model(case):
    fam = FAMILIES[case.family]
    layers = case.layers or fam["layers"]
    cfg = fam["cfg"](
        hidden_size=fam["hidden"],
        num_hidden_layers=layers,
        num_attention_heads=fam["heads"],
        num_key_value_heads=fam["kv_heads"],
        head_dim=fam["head_dim"],
        intermediate_size=fam["ffn"],
        vocab_size=fam["vocab"],
        max_position_embeddings=4096,
        tie_word_embeddings=fam["tied"],
        use_cache=False,
    )
    dtype = torch.float32 if case.precision == "fp32_amp" else torch.bfloat16
    # built directly in `dtype` (no fp32 transient), with the attention implementation the case asks for
    model = AutoModelForCausalLM.from_config(
        cfg, dtype=dtype, attn_implementation="eager" if case.attn == "eager" else "sdpa"
    )
    assert type(model) is fam["cls"], type(model)
    model.train()
    if case.recompute == "full":
        model.activation_checkpointing_enable({"use_reentrant": False})
    return model, layers


def make_optimizer(case, params):
    kw = {}
    if case.opt == "foreach":
        kw["foreach"] = True
    elif case.opt == "fused":
        kw["fused"] = True
    return torch.optim.AdamW(params, lr=1e-4, **kw)


def chunk_ce(lm_head, h, y):
    return F.cross_entropy(
        lm_head(h).float().reshape(-1, lm_head.out_features), y.reshape(-1), reduction="sum"
    )


# --------------------------------------------------------------------------------------------------
# one case
# --------------------------------------------------------------------------------------------------
def run_case(case, log):
    torch.manual_seed(0)
    fam = FAMILIES[case.family]
    use_dispatch = "dispatch" in case.methods
    use_alloc = "allocator" in case.methods
    tracker = LiveTracker() if use_dispatch else None
    alloc = AllocTrace() if use_alloc else contextlib.nullcontext()
    res = {"dispatch": {}, "allocator": {}}
    cats = {"dispatch": {}}
    probes = defaultdict(dict)  # (method) -> {(step, i): live}
    extra = {}
    t0 = time.time()
    V = fam["vocab"]
    ctx_attn = contextlib.nullcontext()
    if case.attn == "sdpa_math":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        ctx_attn = sdpa_kernel(SDPBackend.MATH)

    with alloc, tracker if tracker is not None else contextlib.nullcontext(), ctx_attn:

        @contextlib.contextmanager
        def phase(step, name):
            if tracker is not None:
                tracker.begin(step, name)
            with record_function(f"mt::{step}::{name}"):
                yield
                # collect reference cycles inside the phase, so that "live at the end of the phase"
                # does not depend on when CPython's collector happens to run (compiled graphs make cycles)
                gc.collect()
            if tracker is not None:
                res["dispatch"][(step, name)] = tracker.end()

        # ---------------- setup
        if tracker is not None:
            tracker.begin(0, "setup")
        ctx = record_function("mt::0::setup")
        ctx.__enter__()
        model, layers = build_model(case)
        params = [p for p in model.parameters()]
        masters = None
        if case.precision == "bf16_master":
            masters = [p.detach().float().requires_grad_(True) for p in params]
            opt = make_optimizer(case, masters)
        else:
            opt = make_optimizer(case, params)
        ids = torch.randint(0, V, (case.mb, case.seq))
        labels = torch.randint(0, V, (case.mb, case.seq))
        run_model = torch.compile(model) if case.compile else model
        decoder_layers = model.model.layers
        weight_shapes = frozenset(tuple(p.shape) for p in params if p.dim() == 2)
        ctx.__exit__(None, None, None)
        if tracker is not None:
            res["dispatch"][(0, "setup")] = tracker.end()
        # roles of the storages the tracker knows
        if tracker is not None:
            for p in params:
                (tracker.rec_of(p) or tracker.track(p)).role = "param"
            for b in model.buffers():
                r = tracker.rec_of(b)
                if r is not None:
                    r.role = "buffer"
            if masters is not None:
                for m in masters:
                    (tracker.rec_of(m) or tracker.track(m)).role = "master"

        # ---------------- layer-boundary probes (eager only)
        hooks = []
        state = {"step": 0, "phase": None}
        if not case.compile:

            def mk(i):
                def hook(_m, _a):
                    if state["phase"] != "forward":
                        return
                    if tracker is not None:
                        probes["dispatch"][(state["step"], i)] = tracker.cur
                        probes["dispatch_t"][(state["step"], i)] = tracker.t
                    with record_function(f"mt::probe::{state['step']}::{i}"):
                        pass

                return hook

            for i, lyr in enumerate(decoder_layers):
                hooks.append(lyr.register_forward_pre_hook(mk(i)))
            hooks.append(model.model.norm.register_forward_pre_hook(mk(len(decoder_layers))))

        losses = []
        for step in (1, 2):
            amp = (
                torch.autocast("cpu", dtype=torch.bfloat16)
                if case.precision == "fp32_amp"
                else contextlib.nullcontext()
            )
            amp.__enter__()
            state.update(step=step, phase="forward")
            with phase(step, "forward"):
                if case.loss == "plain":
                    logits = run_model(ids).logits
                elif case.loss == "hf":
                    out = run_model(ids, labels=labels)
                else:
                    inner = run_model.model if not case.compile else None
                    if case.compile:
                        # compile the body only; the chunked loss stays eager
                        if "body" not in extra:
                            extra["body"] = torch.compile(model.model)
                        inner = extra["body"]
                    hidden = inner(ids).last_hidden_state
            state["phase"] = "loss"
            with phase(step, "loss"):
                if case.loss == "plain":
                    loss = F.cross_entropy(logits.float().view(-1, V), labels.view(-1))
                elif case.loss == "hf":
                    loss = out.loss
                elif case.loss == "chunked_tt":
                    chunks = [model.lm_head(c) for c in hidden.tensor_split(case.chunks, dim=1)]
                    ys = labels.tensor_split(case.chunks, dim=1)
                    total = 0.0
                    for lg, y in zip(chunks, ys):
                        total = total + F.cross_entropy(
                            lg.reshape(-1, V).float(), y.reshape(-1), reduction="sum"
                        )
                    loss = total / labels.numel()
                    del chunks, lg, y
                elif case.loss == "chunked_ckpt":
                    total = 0.0
                    for hc, y in zip(
                        hidden.tensor_split(case.chunks, dim=1),
                        labels.tensor_split(case.chunks, dim=1),
                    ):
                        total = total + checkpoint(
                            chunk_ce, model.lm_head, hc, y, use_reentrant=False
                        )
                    loss = total / labels.numel()
                    del hc, y  # the loop variable is a view that would keep all of `hidden` alive
            amp.__exit__(None, None, None)
            if case.loss == "plain":
                del logits
            if case.loss in ("chunked_tt", "chunked_ckpt"):
                del hidden, total
            state["phase"] = "backward"
            with phase(step, "backward"):
                loss.backward()
            losses.append(float(loss.detach()))
            del loss
            if tracker is not None:
                for p in params:
                    if p.grad is not None:
                        r = tracker.rec_of(p.grad)
                        if r is not None:
                            r.role = "grad"
            state["phase"] = "optimizer"
            with phase(step, "optimizer"):
                if masters is not None:
                    for p, m in zip(params, masters):
                        m.grad = p.grad.float()
                        p.grad = None
                opt.step()
                if masters is not None:
                    with torch.no_grad():
                        for p, m in zip(params, masters):
                            p.copy_(m)
            if tracker is not None:
                if masters is not None:
                    for m in masters:
                        tracker.rec_of(m.grad).role = "grad"
                for st in opt.state.values():
                    for v in st.values():
                        if isinstance(v, torch.Tensor):
                            r = tracker.rec_of(v)
                            if r is not None:
                                r.role = "opt_state"
            state["phase"] = "after_step"
            with phase(step, "after_step"):
                opt.zero_grad(set_to_none=True)
                model.zero_grad(set_to_none=True)
                if case.loss == "hf":
                    del out
            if tracker is not None:
                # category breakdown at each phase peak of this step (roles are now known)
                for ph in PHASES:
                    key = (step, ph)
                    if key not in res["dispatch"]:
                        continue
                    alive = tracker.alive_at(res["dispatch"][key]["t_peak"])
                    c = categorise(alive, weight_shapes)
                    lg = [
                        r
                        for r in alive
                        if len(r.shape) >= 1 and r.shape[-1] == V and r.role is None
                    ]
                    c["logit_bytes"] = sum(r.nbytes for r in lg)
                    cats["dispatch"][key] = c
                    if (
                        case.name == "llama-none-plain-bf16"
                        and step == 2
                        and ph in ("loss", "backward")
                    ):
                        extra.setdefault("logit_tensors", {})[ph] = [
                            (
                                r.op,
                                r.shape,
                                DTYPE_NAME.get(r.dtype, str(r.dtype)),
                                r.nbytes,
                                r.phase,
                            )
                            for r in lg
                        ]
                if step == 2 and (2, 1) in probes["dispatch_t"] and (2, 2) in probes["dispatch_t"]:
                    # what decoder layer 1 keeps for backward: storages it allocated that are alive at forward end
                    ta, tb = probes["dispatch_t"][(2, 1)], probes["dispatch_t"][(2, 2)]
                    tf = res["dispatch"][(2, "forward")]["t_end"]
                    kept = [r for r in tracker.alive_at(tf) if ta < r.born <= tb]
                    extra["layer1_saved"] = [
                        (r.op, r.shape, DTYPE_NAME.get(r.dtype, str(r.dtype)), r.nbytes)
                        for r in kept
                    ]
                if step == 1:
                    for ph in PHASES:
                        if (0, ph) in res["dispatch"] and ph == "setup":
                            alive = tracker.alive_at(res["dispatch"][(0, ph)]["t_peak"])
                            cats["dispatch"][(0, ph)] = categorise(alive, weight_shapes)
                tracker.prune()
        for h in hooks:
            h.remove()
        if tracker is not None:
            extra["ops"] = {
                k: v
                for k, v in tracker.ops.items()
                if "attention" in k or "softmax" in k or "_foreach" in k or "fused_adam" in k
            }
        extra["losses"] = losses
        del model, opt, params, masters, run_model, decoder_layers
        extra.pop("body", None)
        gc.collect()
    if use_alloc:
        for step in (0, 1, 2):
            for ph in PHASES:
                if f"mt::{step}::{ph}" in alloc.marks:
                    res["allocator"][(step, ph)] = alloc.phase(step, ph)
        for name in alloc.marks:
            if name.startswith("mt::probe::"):
                _, _, s, i = name.split("::")
                probes["allocator"][(int(s), int(i))] = alloc.probe(name)
        extra["alloc_events"] = alloc.n_events
    extra["wall_s"] = round(time.time() - t0, 1)
    return res, cats, probes, extra, layers


def run_case_in_child(idx, case, args, argv):
    """Each case runs in a fresh interpreter with its own inductor cache.

    The CPU allocator's profiler bookkeeping (a pointer -> size table) outlives a profiling session:
    a block allocated while one case was profiled and freed while profiling was off leaves a stale
    entry, and a later case's free at the same address is then reported with the stale size
    (seen as 5.5-62.5 MiB errors in the allocator counter when the cases shared one process).
    Compiled cases also picked up state from earlier cases.  One process per case avoids both.
    """
    fd, result = tempfile.mkstemp(prefix="measure_torch_case_", suffix=".pkl")
    os.close(fd)
    cache = tempfile.mkdtemp(prefix="measure_torch_inductor_")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--one",
        str(idx),
        "--result",
        result,
        "--threads",
        str(args.threads),
    ]
    if args.quick:
        cmd.append("--quick")
    if args.cases:
        cmd += ["--cases", args.cases]
    try:
        subprocess.run(cmd, env=env, check=True)
        with open(result, "rb") as f:
            return pickle.load(f)
    finally:
        os.unlink(result)
        shutil.rmtree(cache, ignore_errors=True)


def layer_act(probe, step, layers):
    """Mean increase of live bytes per decoder layer in the forward (pre-hook of layer i+1 minus i)."""
    vals = [
        probe[(step, i + 1)] - probe[(step, i)]
        for i in range(layers)
        if (step, i) in probe and (step, i + 1) in probe
    ]
    return (sum(vals) / len(vals), vals) if vals else (None, [])


# --------------------------------------------------------------------------------------------------
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="bench/measure_torch.csv")
    ap.add_argument("--cases", default=None, help="regex: run only matching case names")
    ap.add_argument("--quick", action="store_true", help="a 4-case subset, for trying the script")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # child: run case #N
    ap.add_argument("--result", default=None, help=argparse.SUPPRESS)  # child: pickle here
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    cases = grid(args.quick)
    if args.cases:
        cases = [c for c in cases if re.search(args.cases, c.name)]
    if args.one is not None:
        with open(args.result, "wb") as f:
            pickle.dump(run_case(cases[args.one], print), f)
        return
    tv, hv = torch.__version__, transformers.__version__
    print(
        f"torch {tv}  transformers {hv}  python {platform.python_version()}  {platform.machine()}  "
        f"threads {torch.get_num_threads()}  cases {len(cases)}",
        flush=True,
    )
    rows, cat_rows, summary = [], [], {}
    T0 = time.time()
    for case in cases:
        fam = FAMILIES[case.family]
        res, cats, probes, extra, layers = run_case_in_child(cases.index(case), case, args, argv)
        d = dtypes_of(case)
        notes = case_notes(case, fam)
        sbh = case.seq * case.mb * fam["hidden"]
        base = dict(
            case=case.name,
            model_family=case.family,
            layers=layers,
            hidden=fam["hidden"],
            heads=fam["heads"],
            kv_heads=fam["kv_heads"],
            head_dim=fam["head_dim"],
            ffn_hidden=fam["ffn"],
            vocab=fam["vocab"],
            tied_embeddings=str(fam["tied"]).lower(),
            optimizer={"default": "adamw", "foreach": "adamw_foreach", "fused": "adamw_fused"}[
                case.opt
            ],
            seq_len=case.seq,
            micro_batch=case.mb,
            recompute=case.recompute,
            loss=case.loss,
            loss_chunks=case.chunks if case.loss.startswith("chunked") else 1,
            compile=str(case.compile).lower(),
            torch_version=tv,
            transformers_version=hv,
            **d,
        )
        for method in ("dispatch", "allocator"):
            if not res[method]:
                continue
            la = {s: layer_act(probes[method], s, layers) for s in (1, 2)}
            if method == "dispatch" and extra.get("layer1_saved"):
                n_saved = sum(x[3] for x in extra["layer1_saved"])
                print(f"    decoder layer 1 keeps {n_saved} B = {n_saved / sbh:.3f} B/(s*b*h):")
                for op, shape, dt, nb in extra["layer1_saved"]:
                    print(f"        {nb / sbh:7.3f}  {dt:5s} {str(shape):24s} {op}")
            for (step, ph), v in sorted(
                res[method].items(), key=lambda kv: (kv[0][0], PHASES.index(kv[0][1]))
            ):
                mnote = {
                    "dispatch": "method=dispatch(TorchDispatchMode storage bytes)",
                    "allocator": "method=allocator(c10 CPU allocator via profiler memory events)",
                }[method]
                rows.append(
                    dict(
                        base,
                        phase=ph,
                        step=step,
                        live_bytes=int(v["live"]),
                        peak_bytes=int(v["peak"]),
                        method=method,
                        notes="; ".join([mnote] + notes),
                    )
                )
                c = cats.get(method, {}).get((step, ph))
                cr = dict(
                    case=case.name, step=step, phase=ph, method=method, peak_bytes=int(v["peak"])
                )
                if method == "dispatch" and c is not None:
                    cr.update({k: c[k] for k in CAT_KEYS})
                    cr["logit_bytes"] = c.get("logit_bytes", "")
                    cr["logit_elems"] = case.seq * case.mb * fam["vocab"]
                    cr["notes"] = "dispatch categories at the phase peak"
                elif method == "allocator":
                    cr["notes"] = "no categories"
                if ph == "forward" and step in la and la[step][0] is not None:
                    cr["layer_act_bytes"] = int(round(la[step][0]))
                    cr["layer_act_per_sbh"] = round(la[step][0] / sbh, 4)
                    cr["notes"] = (cr.get("notes") or "") + f"; layer deltas {la[step][1]}"
                cat_rows.append(cr)
        summary[case.name] = dict(
            res=res,
            cats=cats,
            extra=extra,
            layers=layers,
            sbh=sbh,
            case=case,
            la={
                m: {s: layer_act(probes[m], s, layers) for s in (1, 2)}
                for m in probes
                if not m.endswith("_t")
            },
        )

        def fmt(m):
            r = res[m]
            return " ".join(
                f"{ph[:3]}{s}={r[(s, ph)]['peak'] / 2**20:.0f}"
                for s in (1, 2)
                for ph in PHASES[1:5]
                if (s, ph) in r
            )

        print(
            f"[{time.time() - T0:6.1f}s] {case.name:42s} {extra['wall_s']:6.1f}s  "
            + "  ".join(f"{m}: {fmt(m)}" for m in ("dispatch", "allocator") if res[m]),
            flush=True,
        )
        if extra.get("ops"):
            print("    ops:", dict(sorted(extra["ops"].items())), flush=True)
    out = args.out
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    cat_out = os.path.join(os.path.dirname(os.path.abspath(out)), "measure_torch_categories.csv")
    with open(cat_out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CAT_COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in cat_rows:
            w.writerow({k: r.get(k, "") for k in CAT_COLUMNS})
    print(
        f"wrote {out} ({len(rows)} rows) and {cat_out} ({len(cat_rows)} rows) in {time.time() - T0:.0f}s"
    )
    report(summary)


def report(S):
    """Print the derived numbers bench/measure_torch.md quotes."""
    MiB = 2**20
    print("\n==== derived ====")
    # 1. counters agree?
    for name in ("llama-none-plain-bf16", "llama-full-plain-bf16"):
        if name not in S:
            continue
        r = S[name]["res"]
        if not r.get("allocator") or not r.get("dispatch"):
            continue
        diffs = []
        for k, v in r["dispatch"].items():
            if k in r["allocator"] and k[1] != "setup":
                diffs.append(
                    (
                        k,
                        r["allocator"][k]["peak"] - v["peak"],
                        r["allocator"][k]["live"] - v["live"],
                    )
                )
        mx = max(abs(d[1]) for d in diffs) if diffs else None
        mxl = max(abs(d[2]) for d in diffs) if diffs else None
        print(
            f"{name}: allocator - dispatch: max |peak diff| {mx} B, max |live diff| {mxl} B over {len(diffs)} phases"
        )
    # 2. bytes per logit element at the loss and backward peaks
    for name, s in S.items():
        c = s["cats"].get("dispatch", {})
        case = s["case"]
        if (2, "loss") in c:
            n = case.seq * case.mb * FAMILIES[case.family]["vocab"]
            print(
                f"{name}: logit bytes/elem at loss peak {c[(2, 'loss')]['logit_bytes'] / n:.3f}, at backward peak {c[(2, 'backward')]['logit_bytes'] / n:.3f}; "
                f"loss peak - forward end = {(s['res']['dispatch'][(2, 'loss')]['peak'] - s['res']['dispatch'][(2, 'forward')]['live']) / n:.3f} B/elem"
            )
        lt = s["extra"].get("logit_tensors")
        if lt:
            for ph, lst in lt.items():
                print(f"   {ph} peak logit-sized tensors: {lst}")
    # 3. per-layer activations
    for name, s in S.items():
        for m, byst in s["la"].items():
            v, vals = byst.get(2, (None, []))
            if v is not None:
                print(
                    f"{name}: [{m}] layer act {v / MiB:.2f} MiB = {v / s['sbh']:.3f} B/(s*b*h)   deltas {[round(x / s['sbh'], 3) for x in vals]}"
                )

    # differencing L4 - L2 (forward-end live minus forward-start live, step 2)
    def fwd_act(name, m):
        r = S[name]["res"].get(m, {})
        if (2, "forward") not in r:
            return None
        start = r[(1, "after_step")]["live"]
        return r[(2, "forward")]["live"] - start, r[(2, "forward")]["peak"] - start

    for a, b, m in (
        ("llama-none-plain-bf16", "llama-none-plain-bf16-L2", "dispatch"),
        ("llama-full-plain-bf16", "llama-full-plain-bf16-L2", "dispatch"),
        ("llama-none-plain-bf16", "llama-none-plain-bf16-L2", "allocator"),
        ("llama-full-plain-bf16", "llama-full-plain-bf16-L2", "allocator"),
        ("llama-none-plain-bf16-compile", "llama-none-plain-bf16-compile-L2", "allocator"),
        ("llama-full-plain-bf16-compile", "llama-full-plain-bf16-compile-L2", "allocator"),
    ):
        if a in S and b in S and fwd_act(a, m) and fwd_act(b, m):
            (x4, _), (x2, _) = fwd_act(a, m), fwd_act(b, m)
            dl = S[a]["layers"] - S[b]["layers"]
            print(
                f"{a} vs {b} [{m}]: forward-end act per layer {(x4 - x2) / dl / S[a]['sbh']:.3f} B/(s*b*h); "
                f"whole forward-end act L{S[a]['layers']}: {x4 / MiB:.1f} MiB, L{S[b]['layers']}: {x2 / MiB:.1f} MiB"
            )
    # 4. optimizer: step 1 vs 2, temporaries
    for name, s in S.items():
        for m in ("dispatch", "allocator"):
            r = s["res"].get(m)
            if not r or (2, "optimizer") not in r:
                continue
            pb = None
            c = s["cats"].get("dispatch", {}).get((2, "after_step"))
            if c:
                pb = c["param"]
            o1, o2 = r[(1, "optimizer")], r[(2, "optimizer")]
            b1, b2 = r[(1, "backward")]["live"], r[(2, "backward")]["live"]
            tmp2 = o2["peak"] - max(b2, o2["live"])
            line = (
                f"{name} [{m}]: opt step1 peak-start {(o1['peak'] - b1) / MiB:.1f} MiB, live+ {(o1['live'] - b1) / MiB:.1f} MiB; "
                f"step2 peak-start {(o2['peak'] - b2) / MiB:.1f} MiB (temporaries {tmp2 / MiB:.1f} MiB)"
            )
            if pb:
                line += f"; temporaries/param bytes {tmp2 / pb:.3f}; after_step live step1 {r[(1, 'after_step')]['live'] / MiB:.1f} step2 {r[(2, 'after_step')]['live'] / MiB:.1f} MiB; params {pb / MiB:.1f} MiB"
            print(line)


if __name__ == "__main__":
    main()
