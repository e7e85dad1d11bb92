"""Reading a run: a probe file (``ledger_report.probe``) or a framework's training log, as
samples: one rank's figures at one step, on named counters (``allocated``, ``reserved``,
``device``).  Steps count from 0.  Files are read a line at a time.

What each framework line measures, read from the frameworks' code (docs/probe.md shows the lines):
Megatron-LM's ``report_memory`` (megatron/training/utils.py: MB = 2^20 bytes, peaks since the job
started) and ``training_log`` (megatron/training/training.py); torchtitan's metrics line
(torchtitan/components/metrics.py: ``max_reserved_gib``, reset after each line); DeepSpeed's
``see_memory_usage`` (deepspeed/runtime/utils.py: GB = 2^30 bytes, Max_CA rounded to whole GiB,
peaks reset after each call) and ``ThroughputTimer`` (deepspeed/utils/timer.py: samples per second
of the global batch).
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from .errors import InputError, Problem
from .inputs.files import open_regular
from .model.conventions import MIB
from .model.units import GIB
from .probe import COUNTERS, SCHEMA, WINDOWS, peaks

EXPECTED = (
    "a probe file (ledger-report-probe/1 JSON lines) or a training log with Megatron-LM, "
    "torchtitan or DeepSpeed memory or iteration lines"
)


@dataclass(frozen=True)
class Sample:
    """One rank's figures at one step (``rank`` None: the job's, as an iteration line gives them)."""

    line: int
    rank: int | None
    step: int | None
    peak: Mapping[str, int] = field(default_factory=dict)  # counter -> bytes
    phases: Mapping[str, Mapping[str, int | None]] = field(default_factory=dict)
    step_time_s: float | None = None
    tokens_per_s_per_gpu: float | None = None
    framework_mfu: float | None = None  # the framework's own MFU figure
    tflops_per_gpu: float | None = None
    global_batch: int | None = None
    samples_per_s: float | None = None  # whole job (DeepSpeed)
    capacity_bytes: int | None = None
    device: str | None = None
    loss_marked: bool = True


@dataclass(frozen=True)
class Run:
    path: str
    format: str  # probe, megatron, torchtitan, deepspeed
    samples: tuple[Sample, ...]
    row: str | None = None


def read_run(path: str | Path) -> Run:
    """A probe file or a framework log, as samples, read a line at a time (a log of any size);
    a file that is neither is an InputError naming the file and its first line."""
    name = str(path)
    with open_regular(Path(path), name) as f:
        lines = _text_lines(name, f)
        first = next(((i, t) for i, t in lines if t.strip()), None)
        if first is None:
            raise InputError(Problem(name, None, None, EXPECTED, "an empty file"))
        rest = itertools.chain([first], lines)
        if first[1].lstrip().startswith("{"):
            return _read_probe(name, rest)
        parsers = (_Megatron(), _Torchtitan(), _DeepSpeed())
        for i, text in rest:
            for parser in parsers:
                parser.feed(i, text)
    for parser in parsers:
        if parser.samples:
            return Run(name, parser.format, tuple(parser.samples))
    raise _at_line(name, first[0], None, EXPECTED, _quote(first[1].strip()))


def _text_lines(name: str, f) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 file (a BOM allowed), a line at a time."""
    for i, raw in enumerate(f, 1):
        try:
            text = raw.decode("utf-8-sig" if i == 1 else "utf-8")
        except UnicodeDecodeError:
            raise _at_line(name, i, None, "UTF-8 text", "bytes that are not text") from None
        yield i, text.rstrip("\r\n")


def _at_line(name: str, line: int, column: str | None, expected: str, found: str) -> InputError:
    return InputError(Problem(name, line, column, expected, found, row_label="line"))


def _quote(s: str) -> str:
    return repr(s if len(s) <= 60 else s[:57] + "...")


def _read_probe(name: str, lines: Iterable[tuple[int, str]]) -> Run:
    samples, rows = [], set()
    for i, text in lines:
        if not text.strip():
            continue
        try:
            rec = json.loads(text)
        except (ValueError, RecursionError) as err:  # also too deep or too long a number for Python
            why = (
                err.msg if isinstance(err, json.JSONDecodeError) else f"{type(err).__name__}: {err}"
            )
            found = f"{why[:120]} ({_quote(text)})"
            raise _at_line(name, i, None, "a JSON object", found) from None
        if not isinstance(rec, dict) or rec.get("schema") != SCHEMA:
            found = rec.get("schema") if isinstance(rec, dict) else type(rec).__name__
            raise _at_line(name, i, "schema", f'"{SCHEMA}"', repr(found))
        samples.append(_probe_sample(name, i, rec))
        if rec.get("row"):
            rows.add(rec["row"])
    if len(rows) > 1:
        raise InputError(
            Problem(name, None, "row", "one row name per probe file", ", ".join(sorted(rows)))
        )
    return Run(name, "probe", tuple(samples), row=rows.pop() if rows else None)


def _probe_sample(name: str, i: int, rec: dict) -> Sample:
    def bad(key: str, expected: str):
        return _at_line(name, i, key, expected, _quote(repr(rec.get(key))))

    for key in ("rank", "step"):
        if not _whole(rec.get(key)):
            raise bad(key, "a whole number of at least 0")
    phases = rec.get("phases")
    if not isinstance(phases, dict) or "setup" not in phases:
        raise bad("phases", "an object of phases with their counters, setup among them")
    for phase, counts in phases.items():
        if phase not in WINDOWS or not isinstance(counts, dict):
            raise bad("phases", f"phases among {', '.join(WINDOWS)}")
        for c, v in counts.items():
            if c not in COUNTERS or not (v is None or _whole(v)):
                raise bad("phases", "counters allocated, reserved, device in whole bytes or null")
    time_s, tokens = rec.get("step_time_s"), rec.get("tokens")
    if isinstance(time_s, bool) or not isinstance(time_s, (int, float)) or time_s <= 0:
        raise bad("step_time_s", "a number of seconds above 0")
    if not _whole(tokens):
        raise bad("tokens", "a whole number of tokens")
    return Sample(
        line=i,
        rank=rec["rank"],
        step=rec["step"],
        peak={c: v for c, v in peaks(phases).items() if v is not None},
        phases=phases,
        step_time_s=float(time_s),
        tokens_per_s_per_gpu=tokens / time_s if tokens else None,
        capacity_bytes=rec.get("capacity_bytes"),
        device=rec.get("device"),
        loss_marked=rec.get("loss_marked") is not False,
    )


def _whole(v: object) -> bool:
    """A JSON whole number of at least 0 (true and false are no numbers, though Python's are)."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_MEG_MEM = re.compile(
    rf"(?:\[Rank (\d+)\] )?\(?after (\d+) iterations\)? memory \(MB\) \| allocated: {_NUM}"
    rf" \| max allocated: {_NUM} \| reserved: {_NUM} \| max reserved: {_NUM}"
)
_MEG_ITER = re.compile(r"iteration\s+(\d+)/\s*\d+ \|(.*)")
_TITAN = re.compile(
    rf"(?:\[rank(\d+)\]:)?.*?step:\s*(\d+)\s.*?memory:\s*{_NUM}\s*GiB\(\s*{_NUM}%\)\s+tps:\s*{_NUM}"
    rf"(?:\s+tflops:\s*{_NUM})?\s+mfu:\s*{_NUM}%"
)
_DS_MEM = re.compile(rf"MA {_NUM} GB\s+Max_MA {_NUM} GB\s+CA {_NUM} GB\s+Max_CA {_NUM} GB")
_DS_TIMER = re.compile(
    rf"(?:global_step=(\d+), |(\d+)/(\d+), )(?:RunningAvg)?SamplesPerSec={_NUM}"
    rf"(?:, CurrSamplesPerSec={_NUM})?, MemAllocated={_NUM}GB, MaxMemAllocated={_NUM}GB"
)
_DS_STEP = re.compile(r"\[Rank (\d+)\] step=(\d+),")


def _f(s: str) -> float:
    return float(s.replace(",", ""))


class _Log:
    """A framework log's reader (of its ``format``): ``feed`` it each line; ``samples`` holds what
    it recognised."""

    def __init__(self) -> None:
        self.samples: list[Sample] = []
        self.seen: dict[int, int] = {}  # torchtitan: step -> the last rank seen at it
        self.step: int | None = None  # DeepSpeed: the step and rank of the last step line
        self.rank: int | None = None


class _Megatron(_Log):
    format = "megatron"

    def feed(self, i: int, text: str) -> None:
        for m in _MEG_MEM.finditer(text):  # two reports can share a line (interleaved output)
            self.samples.append(
                Sample(
                    line=i,
                    rank=int(m.group(1)) if m.group(1) else None,
                    step=int(m.group(2)) - 1,
                    peak={
                        "allocated": round(_f(m.group(4)) * MIB),
                        "reserved": round(_f(m.group(6)) * MIB),
                    },
                )
            )
        m = _MEG_ITER.search(text)
        if m and "elapsed time per iteration (ms)" in text:
            fields = {
                k.strip(): v.strip()
                for k, _, v in (f.partition(":") for f in m.group(2).split("|"))
                if v.strip()
            }
            tflops = fields.get("throughput per GPU (TFLOP/s/GPU)")
            gbs = fields.get("global batch size")
            self.samples.append(
                Sample(
                    line=i,
                    rank=None,
                    step=int(m.group(1)) - 1,
                    step_time_s=_f(fields["elapsed time per iteration (ms)"]) / 1000,
                    tflops_per_gpu=_f(tflops) if tflops else None,
                    global_batch=int(_f(gbs)) if gbs else None,
                )
            )


class _Torchtitan(_Log):
    format = "torchtitan"

    def feed(self, i: int, text: str) -> None:
        m = _TITAN.search(_ANSI.sub("", text))
        if not m:
            return
        step = int(m.group(2)) - 1
        rank = int(m.group(1)) if m.group(1) else None
        if rank is None:  # lines without a rank prefix: ranks in order of appearance per step
            rank = self.seen[step] = self.seen.get(step, -1) + 1
        gib, pct = _f(m.group(3)), _f(m.group(4))
        self.samples.append(
            Sample(
                line=i,
                rank=rank,
                step=step,
                peak={"reserved": round(gib * GIB)},
                tokens_per_s_per_gpu=_f(m.group(5)),
                tflops_per_gpu=_f(m.group(6)) if m.group(6) else None,
                framework_mfu=_f(m.group(7)) / 100,
                capacity_bytes=round(gib * GIB * 100 / pct) if pct > 0 else None,
            )
        )


class _DeepSpeed(_Log):
    format = "deepspeed"

    def feed(self, i: int, text: str) -> None:
        if m := _DS_STEP.search(text):
            self.rank, self.step = int(m.group(1)), int(m.group(2)) - 1
        if m := _DS_MEM.search(text):
            # Max_CA is printed rounded to whole GiB: the current CA bounds it from below
            peak = {
                "allocated": round(max(_f(m.group(1)), _f(m.group(2))) * GIB),
                "reserved": round(max(_f(m.group(3)), _f(m.group(4))) * GIB),
            }
            self.samples.append(Sample(line=i, rank=self.rank, step=self.step, peak=peak))
        if m := _DS_TIMER.search(text):
            self.samples.append(
                Sample(
                    line=i,
                    rank=self.rank,
                    step=int(m.group(1) or m.group(3)) - 1,
                    peak={"allocated": round(_f(m.group(7)) * GIB)},
                    samples_per_s=_f(m.group(5) or m.group(4)),
                )
            )
