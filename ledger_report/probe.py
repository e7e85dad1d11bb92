"""Measure a training step phase by phase, on the counters the ledger models.

    from ledger_report.probe import Probe
    probe = Probe("run.jsonl", row="llama-1b").attach(model, optimizer)
    ...  # the training loop as it was; optionally ``probe.loss(loss).backward()``

Per rank and per recorded step (step 0, step 1, then every ``every``-th) one JSON line holds the peak
of each phase the ledger models (setup, forward, loss, backward, optimizer step) on three counters
(allocated, reserved, device), the step time and the tokens: ``ledger-report reconcile INPUT
run.jsonl`` reads it.  docs/probe.md gives the windows (hooks of PyTorch's public API only) and
the counters (CUDA's allocator statistics; on the CPU, torch.profiler's memory events).

torch is imported when a Probe is attached, never by the rest of ledger_report.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

from .model.definitions.phases import PEAK_KEYS

SCHEMA = "ledger-report-probe/1"
PHASES = ("setup", "forward", "loss", "backward", "optimizer")
COUNTERS = tuple(PEAK_KEYS)  # allocated, reserved, device
# a probe's measured window -> the ledger phases it spans (their largest)
WINDOWS = {p: (p,) for p in PHASES} | {"backward": ("backward", "backward_end")}
EVERY = 100  # after steps 0 and 1, every EVERY-th step is recorded
MARK = "ledger-probe::"


class PreflightError(RuntimeError):
    """The preflight step's peak passes the budget (or the step ran out of memory)."""

    def __init__(self, message: str, *, phase: str, rank: int, peak_bytes: int | None):
        super().__init__(message)
        self.phase, self.rank, self.peak_bytes = phase, rank, peak_bytes


def _torch():
    import torch

    return torch


class _CudaCounter:
    """Peaks per phase from the caching allocator's statistics, reset at each boundary."""

    source = "torch.cuda.memory_stats"

    def __init__(self, device):
        self.torch = _torch()
        self.device = device
        self.capacity = self.torch.cuda.mem_get_info(device)[1]

    def _boundary(self, kind: str) -> dict:
        """The counters' ``peak`` since the last boundary or their ``current`` figure; the peaks
        then start again."""
        cuda = self.torch.cuda
        cuda.synchronize(self.device)
        stats = cuda.memory_stats(self.device)
        free, total = cuda.mem_get_info(self.device)
        cuda.reset_peak_memory_stats(self.device)
        reserved = stats.get(f"reserved_bytes.all.{kind}", 0)
        outside = (total - free) - stats.get("reserved_bytes.all.current", 0)
        return {
            "allocated": stats.get(f"allocated_bytes.all.{kind}", 0),
            "reserved": reserved,
            "device": reserved + outside,
        }

    def start(self) -> dict:
        self.windows: list[tuple[str, dict]] = []
        return self._boundary("current")

    def mark(self, phase: str) -> None:
        """The window of ``phase`` ends now."""
        self.windows.append((phase, self._boundary("peak")))

    def finish(self) -> list[tuple[str, dict]]:
        return self.windows


class _CpuCounter:
    """Peaks per phase from the profiler's memory events (c10's CPU allocator), one session a step."""

    source = "torch.profiler (profile_memory=True)"
    capacity = None

    def __init__(self, model, optimizer):
        self.torch = _torch()
        self.model, self.optimizer = model, optimizer

    def _live_bytes(self) -> tuple[int, frozenset]:
        """Bytes of the tensors the model and optimizer hold (each storage once), and where."""
        tensors = [*self.model.parameters(), *self.model.buffers()]
        tensors += [p.grad for p in self.model.parameters() if p.grad is not None]
        for state in self.optimizer.state.values():
            tensors += [v for v in state.values() if isinstance(v, self.torch.Tensor)]
        sizes = {s.data_ptr(): s.nbytes() for s in (t.untyped_storage() for t in tensors)}
        return sum(sizes.values()), frozenset(sizes)

    def start(self) -> dict:
        from torch.profiler import ProfilerActivity, profile

        self.base, self.tracked = self._live_bytes()
        self.prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
        self.prof.__enter__()
        self.phases: list[str] = []
        return {"allocated": self.base, "reserved": None, "device": None}

    def mark(self, phase: str) -> None:
        from torch.profiler import record_function

        with record_function(f"{MARK}{len(self.phases)}"):
            pass
        self.phases.append(phase)

    def finish(self) -> list[tuple[str, dict]]:
        self.prof.__exit__(None, None, None)
        with tempfile.TemporaryDirectory(prefix="ledger-probe-") as folder:
            trace = Path(folder, "trace.json")
            self.prof.export_chrome_trace(str(trace))
            events = json.loads(trace.read_text(encoding="utf-8"))["traceEvents"]
        del self.prof
        return _windows_from_trace(events, self.phases, self.base, self.tracked)


def _windows_from_trace(
    events: list, phases: list[str], base: int, tracked: frozenset = frozenset()
) -> list[tuple[str, dict]]:
    """Each marked window's peak: the bytes alive at the start plus the running sum of the CPU
    memory events.  Alive at the start: ``base`` (the tensors at the ``tracked`` addresses) and
    every other block the window frees without having allocated it (the last step's logits that
    a loop variable still holds, say): it was there from the start."""
    marks, mem = {}, []
    for e in events:
        name = e.get("name", "")
        if name == "[memory]" and e.get("args", {}).get("Device Type") == 0:
            args = e["args"]
            mem.append((float(e["ts"]), int(args["Bytes"]), args.get("Addr")))
        elif name.startswith(MARK):
            marks[int(name[len(MARK) :])] = float(e["ts"])
    mem.sort(key=lambda m: m[0])
    seen: set = set()
    for _ts, nbytes, addr in mem:
        if nbytes > 0:
            seen.add(addr)
        elif addr not in seen and addr not in tracked:
            base -= nbytes  # freed here, allocated before: alive at the start
        else:
            seen.discard(addr)
    windows, live, peak, i = [], base, base, 0
    for k, phase in enumerate(phases):
        end = marks.get(k, float("inf"))
        while i < len(mem) and mem[i][0] <= end:
            live += mem[i][1]
            peak = max(peak, live)
            i += 1
        windows.append((phase, {"allocated": peak, "reserved": None, "device": None}))
        peak = live
    return windows


def peaks(phases: Mapping[str, Mapping[str, int | None]]) -> dict[str, int | None]:
    """Each counter's largest figure over the phases (None where no phase has one): a record's
    ``peak``, as the probe writes it and as ``reconcile`` reads it back."""
    return {
        c: max((p[c] for p in phases.values() if p.get(c) is not None), default=None)
        for c in COUNTERS
    }


def _tokens(args: tuple, kwargs: Mapping) -> int:
    """Tokens in a forward's input: the first integer tensor (``input_ids`` by keyword first)."""
    torch = _torch()
    for t in (kwargs.get("input_ids"), *args, *kwargs.values()):
        if isinstance(t, torch.Tensor) and not t.is_floating_point() and not t.is_complex():
            return t.numel()
    return 0


class Probe:
    """Records each recorded step's phase peaks, step time and tokens as one JSON line per rank
    (docs/probe.md: ``path``'s ``{rank}``, ``every``, ``head`` and ``tokens``)."""

    def __init__(
        self,
        path: str | Path | None,
        row: str | None = None,
        *,
        every: int = EVERY,
        head: Any = None,
        tokens: Callable[[tuple, Mapping], int] | None = None,
    ):
        if every < 1:
            raise ValueError(f"every: expected a whole number of at least 1; found {every!r}")
        self.path, self.row, self.every, self.head = path, row, every, head
        self.tokens_of = tokens or _tokens
        self.records: list[dict] = []
        self.step = 0
        self._handles: list = []
        self._in_step = False
        self._fd: int | None = None

    # -- wiring ------------------------------------------------------------------------------
    def attach(self, model, optimizer) -> "Probe":
        torch = _torch()
        while isinstance(getattr(optimizer, "optimizer", None), torch.optim.Optimizer):
            optimizer = optimizer.optimizer  # accelerate / Lightning wrappers: the inner one
        self.model, self.optimizer, self._torch = model, optimizer, torch
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        else:
            self.rank = int(os.environ.get("RANK", 0))
            self.world_size = int(os.environ.get("WORLD_SIZE", 1))
        param = next(model.parameters(), None)
        dev = param.device if param is not None else torch.device("cpu")
        if dev.type == "cuda":
            self.counter = _CudaCounter(dev)
            self.device = f"{dev} {torch.cuda.get_device_name(dev)}"
        else:
            self.counter = _CpuCounter(model, optimizer)
            self.device = str(dev)
        modules = list(model.modules())
        linears = [m for m in modules if isinstance(m, torch.nn.Linear)]
        head = self.head or (linears[-1] if linears else None)
        h = self._handles
        # the step starts at the model's forward, or at its input embedding's where the loop
        # calls the model's parts (a chunked loss over the hidden states)
        embed = next((m for m in modules if isinstance(m, torch.nn.Embedding)), None)
        for m in (model,) if embed is None or embed is model else (model, embed):
            h.append(m.register_forward_pre_hook(self._on_forward, with_kwargs=True))
        if head is not None:
            h.append(head.register_forward_pre_hook(self._on_head))
            h.append(head.register_forward_hook(self._on_head_output))
        h.append(optimizer.register_step_pre_hook(self._on_step_pre))
        h.append(optimizer.register_step_post_hook(self._on_step_post))
        self._open()
        return self

    def detach(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if self._in_step and self._recording:
            self.counter.finish()  # a step cut short: its profiler session ends, nothing written
        self._in_step = False
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    close = detach

    def __enter__(self) -> "Probe":
        return self

    def __exit__(self, *exc) -> None:
        self.detach()

    def loss(self, loss):
        """Marks the end of the loss's forward (call it just before ``loss.backward()``); returns
        ``loss``, so ``probe.loss(loss).backward()`` works."""
        if self._in_step and self._phase in ("forward", "loss"):
            if self._phase == "forward":  # no head's forward seen: an empty loss window
                self._mark("loss")
            self._loss_marked = True
            self._mark("backward")
        return loss

    # -- hooks -------------------------------------------------------------------------------
    def _on_forward(self, module, args, kwargs):
        if not self._torch.is_grad_enabled():  # an evaluation's forward is no training step
            return
        if not self._in_step:
            self._begin()
        elif self._phase in ("loss", "backward"):  # the next micro-batch
            self._mark("forward")
        else:  # the input embedding after the model's own pre-hook: the same micro-batch
            return
        self._tokens += self.tokens_of(args, kwargs)
        self._micro += 1

    def _on_head(self, module, args):
        if self._in_step and self._phase == "forward" and self._torch.is_grad_enabled():
            self._mark("loss")

    def _on_head_output(self, module, args, output):
        out = output[0] if isinstance(output, (tuple, list)) else output
        if getattr(out, "requires_grad", False) and self._in_step:
            out.register_hook(self._on_output_grad)

    def _on_output_grad(self, grad):
        if self._in_step and self._phase == "loss":
            self._mark("backward")

    def _on_step_pre(self, optimizer, args, kwargs):
        if self._in_step:
            self._mark("optimizer")

    def _on_step_post(self, optimizer, args, kwargs):
        if self._in_step:
            self._end()

    # -- a step ------------------------------------------------------------------------------
    def _begin(self) -> None:
        self._in_step, self._phase = True, "forward"
        self._tokens, self._micro, self._loss_marked = 0, 0, False
        self._recording = self.step < 2 or self.step % self.every == 0
        if self._recording:
            try:
                self._setup = self.counter.start()
            except RuntimeError as err:  # on the CPU: another profiler session is running
                warnings.warn(f"ledger probe: step {self.step} not recorded ({err})", stacklevel=2)
                self._recording = False
        self._t0 = time.perf_counter()

    def _mark(self, next_phase: str) -> None:
        if self._recording:
            self.counter.mark(self._phase)
        self._phase = next_phase

    def _end(self) -> None:
        if self._recording:
            self.counter.mark("optimizer")
            record = self._record(self.counter.finish(), time.perf_counter() - self._t0)
            self.records.append(record)
            if self._fd is not None:  # one write per line: lines of ranks sharing a file stay whole
                os.write(self._fd, (json.dumps(record, allow_nan=False) + "\n").encode("utf-8"))
        self._in_step = False
        self.step += 1

    def _record(self, windows: list[tuple[str, dict]], seconds: float) -> dict:
        phases: dict[str, dict] = {"setup": dict(self._setup)}
        for phase, counts in windows:  # a phase of several micro-batches: its largest
            phases[phase] = peaks({"before": phases.get(phase, counts), "now": counts})
        return {
            "schema": SCHEMA,
            "row": self.row,
            "rank": self.rank,
            "world_size": self.world_size,
            "step": self.step,
            "device": self.device,
            "counters": self.counter.source,
            "capacity_bytes": self.counter.capacity,
            "phases": {p: phases[p] for p in PHASES if p in phases},
            "peak": peaks(phases),
            "step_time_s": seconds,
            "tokens": self._tokens,
            "micro_batches": self._micro,
            "loss_marked": self._loss_marked,  # False: the loss window holds the loss's backward
            "torch": _torch().__version__,
        }

    # -- output ------------------------------------------------------------------------------
    def _open(self) -> None:
        if self.path is None:
            return
        text = str(self.path)
        path = Path(text.replace("{rank}", str(self.rank)))
        path.parent.mkdir(parents=True, exist_ok=True)
        # a file of this rank's own starts afresh; one the ranks share is appended to
        truncate = os.O_TRUNC if "{rank}" in text or self.world_size == 1 else 0
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | truncate, 0o644)


# -- preflight -------------------------------------------------------------------------------
def preflight(
    model,
    optimizer,
    batch,
    budget: float = 0.9,
    *,
    loss_fn: Callable | None = None,
    capacity_bytes: int | None = None,
    ledger: Any = None,
    head: Any = None,
) -> dict:
    """One full training step with the real batch, at learning rate 0, before training, so that
    lazily allocated optimizer states exist; returns the step's record (as a Probe writes it) or
    raises ``PreflightError`` (docs/probe.md#preflight: the budget, the capacity, what is reset)."""
    torch = _torch()
    probe = Probe(None, head=head).attach(model, optimizer)
    lrs = [g["lr"] for g in optimizer.param_groups]
    try:
        for g in optimizer.param_groups:
            g["lr"] = torch.zeros_like(g["lr"]) if isinstance(g["lr"], torch.Tensor) else 0.0
        _step(model, optimizer, batch, loss_fn, probe)
    except getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError) as err:
        phase = probe._phase if probe._in_step else "setup"
        raise PreflightError(
            f"preflight: rank {probe.rank}: out of memory in the {phase} phase"
            f"{_ledger_text(ledger, phase, 'allocated')} ({str(err).splitlines()[0]})",
            phase=phase,
            rank=probe.rank,
            peak_bytes=None,
        ) from None
    finally:
        for g, lr in zip(optimizer.param_groups, lrs):
            g["lr"] = lr
        probe.detach()
        for state in optimizer.state.values():  # zeroed as training starts it, still allocated
            for k, v in state.items():
                if isinstance(v, torch.Tensor):
                    v.zero_()
                elif k == "step":
                    state[k] = 0
        optimizer.zero_grad(set_to_none=True)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    record = probe.records[-1]
    _check(record, budget, capacity_bytes, ledger)
    return record


def _step(model, optimizer, batch, loss_fn, probe: Probe) -> None:
    if isinstance(batch, Mapping):
        out = model(**batch)
    elif isinstance(batch, (tuple, list)):
        out = model(*batch)
    else:
        out = model(batch)
    if loss_fn is not None:
        loss = loss_fn(out, batch)
    elif getattr(out, "loss", None) is not None:
        loss = out.loss
    elif isinstance(out, Mapping) and out.get("loss") is not None:
        loss = out["loss"]
    else:
        loss = out
    if not hasattr(loss, "backward") or loss.numel() != 1:
        raise TypeError(
            "preflight: the model's output is no scalar loss; pass loss_fn=(output, batch) -> loss"
        )
    probe.loss(loss).backward()
    optimizer.step()


def _check(record: dict, budget: float, capacity: int | None, ledger: Any) -> None:
    capacity = capacity or record["capacity_bytes"] or (ledger and ledger.get("hbm_bytes"))
    if not capacity:
        return
    counter = "device" if record["peak"]["device"] is not None else "allocated"
    limit = budget * capacity
    phase, peak = max(
        ((p, v[counter]) for p, v in record["phases"].items()), key=lambda pv: pv[1] or 0
    )
    if peak is not None and peak > limit:
        raise PreflightError(
            f"preflight: rank {record['rank']}: the {phase} phase peaks at {peak / 1e9:.2f} GB "
            f"({counter}), above the budget {budget:g} × {capacity / 1e9:.2f} GB = "
            f"{limit / 1e9:.2f} GB{_ledger_text(ledger, phase, counter)}",
            phase=phase,
            rank=record["rank"],
            peak_bytes=peak,
        )


def _ledger_text(ledger: Any, phase: str, counter: str) -> str:
    """The ledger's figure beside a preflight failure: the phase's estimate and the peak."""
    if ledger is None:
        return ""
    peak = ledger.get(PEAK_KEYS[counter])
    est = phase_estimate(ledger, phase)
    est_text = f" {phase} {est / 1e9:.2f} GB (allocated)," if est is not None else ""
    peak_text = f" peak {peak / 1e9:.2f} GB ({counter})" if peak is not None else ""
    return f"; the ledger for {ledger.name}:{est_text}{peak_text}"


def phase_estimate(ledger: Any, window: str) -> int | None:
    """The ledger's figure for a measured window (allocated counter): its phases' largest."""
    vals = [ledger.get(f"phase_{p}_bytes") for p in WINDOWS.get(window, ())]
    return max((int(v) for v in vals if v is not None), default=None)


# -- Hugging Face Trainer ---------------------------------------------------------------------
class ProbeCallback:
    """The Trainer callback's logic: attaches a Probe at the start of training, detaches at the
    end (``trainer_callback`` mixes it into ``transformers.TrainerCallback``).  The Trainer never
    gives the loss tensor to callbacks, so the loss window ends when the head's output gradient
    arrives (it holds the loss's backward)."""

    def __init__(self, path: str | Path, row: str | None = None, **probe_args: Any):
        self.probe = Probe(path, row, **probe_args)

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        if model is None or optimizer is None:
            raise ValueError("ledger probe: the Trainer gave no model or optimizer to callbacks")
        self.probe.attach(model, optimizer)
        return control

    def on_train_end(self, args, state, control, **kwargs):
        self.probe.detach()
        return control


def trainer_callback(path: str | Path, row: str | None = None, **probe_args: Any):
    """A ``transformers.TrainerCallback`` that probes the Trainer's steps:
    ``Trainer(..., callbacks=[trainer_callback("run.jsonl", row="x")])``."""
    from transformers import TrainerCallback

    cls = type("LedgerProbeCallback", (ProbeCallback, TrainerCallback), {})
    return cls(path, row, **probe_args)
