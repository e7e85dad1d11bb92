"""Reconcile a row's ledger with what a run measured: a probe file (``ledger_report.probe``) or the
memory and throughput lines a framework prints (Megatron-LM, torchtitan, DeepSpeed).

Reading (``reconcile_read.py``) turns each file into samples (one rank's figures at one step, on
named counters); the reconciliation sets each against the ledger's own quantities on the same
counter and computes only the differences.  The counters: ``allocated`` (torch's
max_memory_allocated), ``reserved`` (max_memory_reserved), ``device`` (what the GPU holds).  Steps
count from 0.
"""

from __future__ import annotations

from statistics import median
from typing import Any, Iterable, Mapping, Sequence

from .errors import InputError, Problem
from .model.definitions.phases import ITEMS, PEAK_KEYS, PHASES
from .probe import WINDOWS, phase_estimate
from .reconcile_read import COUNTERS, GIB, Run, Sample, read_run

__all__ = ["read_run", "reconcile", "render_text", "updated_csv", "pick_row", "phase_estimate"]

SCHEMA = "ledger-report-reconcile/1"


# ---- reconciling ----------------------------------------------------------------------------
def pick_row(ledgers: Sequence[Any], runs: Sequence[Run], row: str | None, source: str):
    names = ", ".join(lg.name for lg in ledgers)
    wanted = row or next((r.row for r in runs if r.row), None)
    if wanted is None and len(ledgers) == 1:
        return ledgers[0]
    if wanted is None:
        raise InputError(Problem(source, None, "name", "--row NAME (the run names none)", names))
    for lg in ledgers:
        if lg.name == wanted:
            return lg
    raise InputError(Problem(source, None, "name", f"a row named {wanted!r}", names or "no rows"))


def reconcile(ledger: Any, runs: Sequence[Run]) -> dict:
    """The reconciliation document of one row against the samples of ``runs``."""
    samples = [s for r in runs for s in r.samples]
    mem = [s for s in samples if s.peak]
    mine = _worst_rank_samples(samples)
    counter = _reference_counter(mem)
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "row": ledger.name,
        "runs": [{"path": r.path, "format": r.format, "samples": len(r.samples)} for r in runs],
        "counter": counter,
        "hbm_bytes": _int(ledger.get("hbm_bytes")),
    }
    doc["peak"] = _peak(ledger, mem, counter)
    doc["phases"] = _phases(ledger, mine)
    doc["first_step"] = _first_step(ledger, mem)
    doc["ranks"] = _ranks(mem, counter, doc["hbm_bytes"])
    doc["throughput"] = _throughput(ledger, samples)
    doc["items"] = _items(ledger, mine)
    doc["largest_unexplained"] = _largest(doc)
    doc["update"] = {
        "measured_peak_gb": (doc["peak"]["measured_bytes"] / 1e9) if doc["peak"] else None,
        "measured_counter": counter,
        "mfu": doc["throughput"]["measured_mfu"],
    }
    return doc


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def _reference_counter(mem: list[Sample]) -> str | None:
    """The counter nearest the device that every memory sample has (else that any has)."""
    for every_or_any in (all, any):
        for c in ("device", "reserved", "allocated"):
            if mem and every_or_any(c in s.peak for s in mem):
                return c
    return None


def _peak(ledger: Any, mem: list[Sample], counter: str | None) -> dict | None:
    have = [s for s in mem if counter in s.peak]
    if not have:
        return None
    worst = max(have, key=lambda s: s.peak[counter])
    est = _int(ledger.get(PEAK_KEYS[counter]))
    meas = worst.peak[counter]
    return {
        "counter": counter,
        "estimate_bytes": est,
        "measured_bytes": meas,
        "unexplained_bytes": None if est is None else meas - est,
        "rank": worst.rank,
        "step": worst.step,
        "by_counter": {
            c: {
                "estimate_bytes": _int(ledger.get(PEAK_KEYS[c])),
                "measured_bytes": max(s.peak[c] for s in mem if c in s.peak),
            }
            for c in COUNTERS
            if any(c in s.peak for s in mem)
        },
    }


def _steady(samples: list[Sample]) -> list[Sample]:
    """Samples of the steady state: step 1 on (step 0 where nothing later was recorded)."""
    return [s for s in samples if s.step is not None and s.step >= 1] or samples


def _worst_rank_samples(samples: list[Sample]) -> list[Sample]:
    """The phased samples of the rank with the largest allocated peak."""
    phased = [s for s in samples if s.phases]
    if not phased:
        return []
    worst = max(phased, key=lambda s: s.peak.get("allocated", 0)).rank
    return [s for s in phased if s.rank == worst]


def _allocated(s: Sample, window: str) -> int | None:
    """A probe sample's allocated figure in a window (None where the file gives none)."""
    return s.phases.get(window, {}).get("allocated")


def _phases(ledger: Any, mine: list[Sample]) -> list[dict]:
    """Each measured window (worst rank, steady steps; setup from step 0) against its estimate,
    on the allocated counter (the ledger's phases count what max_memory_allocated sees)."""
    first = [s for s in mine if s.step == 0] or mine
    steady = _steady(mine)
    out = []
    for window in WINDOWS:
        pool = first if window == "setup" else steady
        vals = [v for v in (_allocated(s, window) for s in pool) if v is not None]
        if not vals:
            continue
        meas, est = max(vals), phase_estimate(ledger, window)
        out.append(
            {
                "phase": window,
                "ledger_phases": list(WINDOWS[window]),
                "counter": "allocated",
                "rank": pool[0].rank,
                "steps": sorted({s.step for s in pool}),
                "estimate_bytes": est,
                "measured_bytes": meas,
                "difference_bytes": None if est is None else meas - est,
                "loss_marked": all(s.loss_marked for s in pool),
            }
        )
    return out


def _first_step(ledger: Any, mem: list[Sample]) -> dict | None:
    """Step 0 against the steady steps: the optimizer's lazily allocated state shows as the jump."""
    counter = "allocated" if any("allocated" in s.peak for s in mem) else _reference_counter(mem)
    have = [s for s in mem if counter in s.peak and s.step is not None]
    step0 = [s for s in have if s.step == 0]
    later = [s for s in have if s.step >= 1]
    if not step0 or not later:
        return None

    def before_optimizer(s: Sample) -> int:
        vals = [p[counter] for w, p in s.phases.items() if w != "optimizer" and p.get(counter)]
        return max(vals) if vals else s.peak[counter]

    m0 = max(before_optimizer(s) for s in step0)
    phased = all(s.phases for s in step0)
    m1 = max(s.peak[counter] for s in later)
    # the ledger's first step ends before its optimizer step: a log's step 0 holds it all
    comparable = counter == "allocated" and phased
    return {
        "counter": counter,
        "step0_before_optimizer_bytes": m0,
        "step0_phased": phased,
        "steady_bytes": m1,
        "jump_bytes": m1 - m0,
        "estimate_step0_bytes": _int(ledger.get("first_step_peak_bytes")) if comparable else None,
        "estimate_jump_bytes": _int(ledger.get("lazy_state_bytes")) if comparable else None,
    }


def _ranks(mem: list[Sample], counter: str | None, hbm: int | None) -> dict | None:
    per: dict[int, int] = {}
    for s in mem:
        if s.rank is not None and counter in s.peak:
            per[s.rank] = max(per.get(s.rank, 0), s.peak[counter])
    if not per:
        return None
    worst = max(per, key=per.get)
    return {
        "counter": counter,
        "per_rank": [
            {"rank": r, "peak_bytes": b, "exceeds_hbm": None if hbm is None else b > hbm}
            for r, b in sorted(per.items())
        ],
        "worst_rank": worst,
        "worst_bytes": per[worst],
        "spread_bytes": per[worst] - min(per.values()),
        "exceeding": [r for r, b in sorted(per.items()) if hbm is not None and b > hbm],
    }


def _throughput(ledger: Any, samples: list[Sample]) -> dict:
    """Measured tokens/s per GPU and MFU (the ledger's FLOPs per token over the row's GPU peak)
    beside the prediction; the framework's own figures beside them."""
    steady = _steady(
        [s for s in samples if s.step_time_s or s.tokens_per_s_per_gpu or s.samples_per_s]
    )
    tps = _tokens_per_s(ledger, steady)
    fpt, peak = ledger.get("flops_per_token"), ledger.get("bf16_peak_flops")
    # a CPU run's throughput says nothing of the row's GPU
    on_cpu = any(s.device and not s.device.startswith("cuda") for s in steady)
    mfu = tps * fpt / peak if tps and fpt and peak and not on_cpu else None
    times = [s.step_time_s for s in steady if s.step_time_s]
    fw_mfu = [s.framework_mfu for s in steady if s.framework_mfu is not None]
    fw_tflops = [s.tflops_per_gpu for s in steady if s.tflops_per_gpu is not None]
    return {
        "measured_tokens_per_s_per_gpu": tps,
        "predicted_tokens_per_s_per_gpu": ledger.get("predicted_tokens_per_s_per_gpu"),
        "measured_mfu": mfu if mfu is None or 0 < mfu <= 1 else None,
        "mfu_note": "measured on the CPU: no MFU of the row's GPU" if on_cpu else None,
        "predicted_mfu": ledger.get("predicted_mfu"),
        "framework_mfu": _median(fw_mfu),
        "framework_tflops_per_gpu": _median(fw_tflops),
        "measured_step_time_s": _median(times),
        "predicted_step_time_s": ledger.get("step_time_s"),
    }


def _tokens_per_s(ledger: Any, steady: list[Sample]) -> float | None:
    direct = [s.tokens_per_s_per_gpu for s in steady if s.tokens_per_s_per_gpu]
    if direct:
        return _median(direct)
    seq, gpus = ledger.get("seq_len"), ledger.get("gpus")
    if not seq or not gpus:
        return None
    rates = [
        s.global_batch * seq / s.step_time_s / gpus
        for s in steady
        if s.global_batch and s.step_time_s
    ]
    rates += [s.samples_per_s * seq / gpus for s in steady if s.samples_per_s]
    return _median(rates)


def _median(vals: list[float]) -> float | None:
    return median(vals) if vals else None


def _item_labels(ledger: Any) -> dict[str, str]:
    """What enters the step in each window, named from the ledger's phase table (phases.py): the
    items the row has (not zero)."""
    label = {k: en for k, en, _zh in ITEMS if ledger.get(f"mem_{k}_bytes") or k == "moments"}
    held = {p: set(names) for p, _en, _zh, names in PHASES}
    win = {w: set().union(*(held[p] for p in WINDOWS[w])) for w in WINDOWS}
    out, prev = {"moments": label["moments"]}, set()
    for w in WINDOWS:  # the moments enter from step 0 to step 1, not in a window
        out[w] = ", ".join(en for k, en in label.items() if k in win[w] - prev) or "—"
        prev = win[w] | {"moments"}
    out["optimizer"] = "the whole optimizer phase (" + out["optimizer"] + ")"
    return out


def _items(ledger: Any, mine: list[Sample]) -> list[dict]:
    """What each window adds (measured increment against the estimate's), so that a difference
    is named by the items that enter there; the optimizer's moments from step 0 to step 1."""
    steady = [s for s in mine if s.step is not None and s.step >= 1]
    est = {w: phase_estimate(ledger, w) for w in WINDOWS}
    moments = _int(ledger.get("mem_moments_bytes"))
    m0 = next((_allocated(s, "setup") for s in mine if s.step == 0), None)
    # each steady step, each window, on the allocated counter
    every = all(_allocated(s, w) is not None for s in steady for w in WINDOWS)
    if not (steady and every) or m0 is None or None in est.values() or moments is None:
        return []
    m1 = {w: max(_allocated(s, w) for s in steady) for w in WINDOWS}
    labels = _item_labels(ledger)
    rows = [("setup", m0, est["setup"]), ("moments", m1["setup"] - m0, moments)]
    prev_m, prev_e = m1["setup"], est["setup"] + moments
    for w in ("forward", "loss", "backward"):  # memory grows through these: increments
        rows.append((w, m1[w] - prev_m, est[w] - prev_e))
        prev_m, prev_e = m1[w], est[w]
    rows.append(("optimizer", m1["optimizer"], est["optimizer"]))  # after frees: the level
    return [
        {
            "window": w,
            "items": labels[w],
            "measured_bytes": m,
            "estimate_bytes": e,
            "difference_bytes": m - e,
        }
        for w, m, e in rows
    ]


def _largest(doc: dict) -> dict | None:
    if doc["items"]:
        return {"by": "item", **max(doc["items"], key=lambda r: abs(r["difference_bytes"]))}
    if doc["peak"] and doc["peak"]["unexplained_bytes"] is not None:
        return {
            "by": "peak",
            "items": "the whole peak (the log gives no phases)",
            "difference_bytes": doc["peak"]["unexplained_bytes"],
        }
    return None


# ---- the text report ------------------------------------------------------------------------
def _gb(n: float | None, sign: str = "") -> str:
    return "—" if n is None else f"{sign}{n / 1e9:,.4g} GB ({sign}{n / GIB:,.4g} GiB)"


def _signed(n: float | None) -> str:
    """A difference, its sign on both units: "−30.69 GB (−28.58 GiB)"."""
    return "—" if n is None else _gb(abs(n), "+" if n >= 0 else "−")


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def render_text(doc: Mapping[str, Any]) -> str:
    """The reconciliation as the terminal shows it (GB = 10^9 bytes, GiB = 2^30 bytes)."""
    out = [
        f"Reconcile {doc['row']} with "
        + ", ".join(f"{r['path']} ({r['format']}, {r['samples']} samples)" for r in doc["runs"])
    ]
    out += _text_peak(doc) + _text_phases(doc) + _text_first(doc)
    out += _text_ranks(doc) + _text_throughput(doc) + _text_largest(doc)
    return "\n".join(out) + "\n"


def _text_peak(doc) -> list[str]:
    p = doc["peak"]
    if not p:
        return ["Peak: no memory figure in the run"]
    where = ", ".join(f"{k} {p[k]}" for k in ("rank", "step") if p[k] is not None)
    return [
        f"Peak on the {p['counter']} counter"
        + (f" ({where})" if where else "")
        + f": measured {_gb(p['measured_bytes'])}, "
        f"estimated {_gb(p['estimate_bytes'])}, unexplained {_signed(p['unexplained_bytes'])}"
    ] + [
        f"  {c}: measured {_gb(v['measured_bytes'])}, estimated {_gb(v['estimate_bytes'])}"
        for c, v in p["by_counter"].items()
        if c != p["counter"]
    ]


def _text_phases(doc) -> list[str]:
    if not doc["phases"]:
        return ["Phases: the run gives none (a framework log holds peaks only)"]
    out = [
        f"Phases (allocated counter, rank {doc['phases'][0]['rank']}; setup at step 0, the others from step 1 on):",
        f"  {'phase':<10} {'estimate':>30} {'measured':>30} {'difference':>31}",
    ]
    for p in doc["phases"]:
        out.append(
            f"  {p['phase']:<10} {_gb(p['estimate_bytes']):>30} "
            f"{_gb(p['measured_bytes']):>30} {_signed(p['difference_bytes']):>31}"
        )
    if any(p["phase"] == "loss" and not p["loss_marked"] for p in doc["phases"]):
        out.append("  (no probe.loss marker: the loss window holds the loss's backward too)")
    return out


def _text_first(doc) -> list[str]:
    f = doc["first_step"]
    if not f:
        return ["Step 0 against step 1: the run has no step 0 and later step on one counter"]
    out = [
        f"Step 0 against step 1 ({f['counter']}): step 0 "
        + ("before its optimizer step " if f["step0_phased"] else "(the whole step) ")
        + f"{_gb(f['step0_before_optimizer_bytes'])}, steady {_gb(f['steady_bytes'])}: "
        f"a jump of {_signed(f['jump_bytes'])}"
    ]
    if f["estimate_jump_bytes"] is not None:
        out.append(
            f"  the ledger: step 0 {_gb(f['estimate_step0_bytes'])}, jump "
            f"{_signed(f['estimate_jump_bytes'])} (optimizer moments allocated at the "
            "first optimizer step): measure step 1, not step 0"
        )
    return out


def _text_ranks(doc) -> list[str]:
    r = doc["ranks"]
    if not r:
        return ["Ranks: the run names none"]
    out = [
        f"Ranks ({r['counter']}): {len(r['per_rank'])}, worst rank {r['worst_rank']} at "
        f"{_gb(r['worst_bytes'])}, spread {_gb(r['spread_bytes'])}"
    ]
    if r["exceeding"]:
        out.append(
            f"  ranks above HBM ({_gb(doc['hbm_bytes'])}): "
            + ", ".join(str(x) for x in r["exceeding"])
        )
    return out


def _text_throughput(doc) -> list[str]:
    t = doc["throughput"]

    def num(x, unit=""):
        return "—" if x is None else f"{x:,.1f}{unit}"

    out = [
        f"Tokens/s per GPU: measured {num(t['measured_tokens_per_s_per_gpu'])}, predicted "
        f"{num(t['predicted_tokens_per_s_per_gpu'])}; MFU: measured {_pct(t['measured_mfu'])}, "
        f"predicted {_pct(t['predicted_mfu'])}"
    ]
    extra = []
    if t["framework_mfu"] is not None:
        extra.append(f"the framework's MFU {_pct(t['framework_mfu'])}")
    if t["framework_tflops_per_gpu"] is not None:
        extra.append(f"its TFLOP/s per GPU {num(t['framework_tflops_per_gpu'])}")
    if t["measured_step_time_s"] is not None:
        extra.append(
            f"step {num(t['measured_step_time_s'], ' s')} measured, "
            f"{num(t['predicted_step_time_s'], ' s')} predicted"
        )
    if t["mfu_note"]:
        extra.append(t["mfu_note"])
    if extra:
        out.append("  " + "; ".join(extra))
    return out


def _text_largest(doc) -> list[str]:
    top = doc["largest_unexplained"]
    if not top:
        return []
    where = f"the {top['window']} window: " if top.get("window") else ""
    return [
        f"Largest unexplained difference: {where}{top['items']}, {_signed(top['difference_bytes'])}"
    ]


# ---- --update -------------------------------------------------------------------------------
def updated_csv(configs: Iterable[Any], name: str, update: Mapping[str, Any]) -> bytes:
    """The input rows as a CSV with the reconciled row's measured columns filled in (through the
    package's one CSV writer, so no text opens as a formula)."""
    from .config import COLUMN_NAMES
    from .render.output import csv_bytes

    rows = []
    for cfg in configs:
        # a column the row's model filled in stays empty: the model column fills it again
        vals = {k: None if k in cfg.origins else v for k, v in cfg.values.items()}
        if vals.get("name") == name:
            for k, v in update.items():
                if v is not None:
                    vals[k] = round(v, 6) if isinstance(v, float) else v
        rows.append({k: "" if v is None else v for k, v in vals.items()})
    return csv_bytes(list(COLUMN_NAMES), rows)
