"""Plain-text renderers for the terminal: the ``calc`` report, the GPU catalogue, ranked plans.

The ``calc`` report walks the report spec's sections (``view.sections``): figures as labelled
lines, tables as aligned columns; bytes in GB (10^9) and GiB (2^30), both labelled.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..model import units
from ..planner import MARGIN, gate_text
from .view import ViewSection, assumptions, sections


def _columns(columns: tuple, items: Iterable[Any]) -> list[str]:
    """Aligned text columns of (heading, alignment "l" or "r", cell of an item), a row per item."""
    headers = [h for h, _a, _c in columns]
    align = "".join(a for _h, a, _c in columns)
    rows = [[cell(x) for _h, _a, cell in columns] for x in items]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        padded = (c.rjust(w) if a == "r" else c.ljust(w) for c, w, a in zip(cells, widths, align))
        return "  ".join(padded).rstrip()

    return [line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]


_RIGHT = {"bytes_per_param", "shard_group", "params_on_rank"}
_BYTES_COLUMNS = (  # a state's bytes per rank in GB and in GiB
    ("GB", "r", lambda ln: units.gb(ln.values["bytes_per_rank"])),
    ("GiB", "r", lambda ln: units.gib(ln.values["bytes_per_rank"])),
)


def _section(s: ViewSection) -> list[str]:
    out = [f"-- {s.title} --"]
    if s.kind == "table":
        named = next(iter(s.fixed)) if len(s.fixed) == 1 else None  # the line's label names it
        cols: list[tuple] = []
        for name, head in s.columns:
            if name == "bytes_per_rank":
                cols += _BYTES_COLUMNS
                continue
            cell = (lambda ln: ln.label) if name == named else (lambda ln, n=name: ln.cells[n])
            cols.append((head, "r" if name in _RIGHT else "l", cell))
        out += _columns(tuple(cols), s.lines)
    return out + [f"{r.label}: {r.text}" + (f" = {r.gib}" if r.gib else "") for r in s.rows]


def render_table(ledgers: Iterable[Any]) -> str:
    blocks = []
    for lg in ledgers:
        out = [f"== {lg.name} =="]
        filled: dict[str, list[str]] = {}
        for col, origin in lg.config.origins.items():
            filled.setdefault(origin, []).append(col)
        out += [f"from {origin}: {', '.join(cols)}" for origin, cols in filled.items()]
        # the reader's warnings (a column that contradicts the row's named model)
        out += [f"warning: {w}" for w in lg.config.warnings]
        for s in sections(lg, "en", formulas=False):
            out += _section(s)
        if notes := assumptions(lg, "en"):
            out.append("-- Assumptions --")
            out += [f"* {n}" for n in notes]
        blocks.append("\n".join(out))
    return "\n\n".join(blocks)


_GPU_COLUMNS = (
    ("name", "l", lambda g: g.name),
    ("sold as GB", "r", lambda g: units.num(g.hbm_nominal_gb)),
    ("usable GB", "r", lambda g: f"{g.hbm_gb:.2f}"),
    ("BF16 TFLOP/s", "r", lambda g: units.num(g.peak_tflops)),
    ("FP8 TFLOP/s", "r", lambda g: "—" if g.fp8_tflops is None else units.num(g.fp8_tflops)),
    ("HBM TB/s", "r", lambda g: units.num(g.hbm_tb_s)),
    ("host GB/s", "r", lambda g: units.num(g.host_link_gb_s)),
    ("interconnect GB/s", "l", lambda g: f"{g.interconnect} {units.num(g.interconnect_gb_s)}"),
    ("network GB/s", "r", lambda g: units.num(g.network_gb_s)),
    ("GPUs/node", "r", lambda g: units.num(g.gpus_per_node)),
    ("host GB/node", "r", lambda g: units.num(g.host_gb)),
    ("NVMe GB/s", "r", lambda g: units.num(g.nvme_gb_s)),
    ("GEMM eff.", "r", lambda g: f"{g.gemm_efficiency:.2f}"),
)


def render_gpus(gpus: dict) -> str:
    notes = [
        "",
        'GB = 10^9 bytes. usable: the device total CUDA reports (an "80 GB" part is 80 GiB, 79.11 GiB of it usable = 84.94 GB); fits compares the peak with it.',
        "TFLOP/s dense (no sparsity). Sources: ledger-report gpus --json.",
    ]
    return "\n".join(_columns(_GPU_COLUMNS, gpus.values()) + notes)


_MODEL_COLUMNS = (
    ("name", "l", lambda m: m["name"]),
    ("model_type", "l", lambda m: m["model_type"]),
    ("layers", "r", lambda m: units.num(m["layers"])),
    ("hidden", "r", lambda m: units.num(m["hidden"])),
    ("experts", "l", lambda m: f"{m['experts']}/{m['topk']}" if m["experts"] else "dense"),
    ("total params", "r", lambda m: f"{m['params_total']:,}"),
    ("of which MTP", "r", lambda m: f"{m['params_mtp']:,}" if m["params_mtp"] else ""),
    ("active params", "r", lambda m: f"{m['params_active_card']:,}"),
    ("note", "l", lambda m: m["note"]),
)


def render_models(rows: list[dict]) -> str:
    """The model catalogue: one line per model with its counted parameters (``ledger-report models``)."""
    note = (
        "total: every parameter the state counts (MTP modules included); active: per token, without "
        "MTP and without the input embedding, as model cards count them (params_active_card). "
        "Sources: ledger-report models --json."
    )
    return "\n".join([*_columns(_MODEL_COLUMNS, rows), "", note])


def render_plans(doc: dict) -> str:
    out = [
        f"{units.num(doc['candidates_evaluated'])} candidates evaluated, {units.num(doc['feasible'])} feasible, "
        f"{units.num(doc['seconds'])} s"
    ]
    for inp in doc.get("inputs", []):
        if c := inp.get("calibration"):
            out.append(
                f"{inp['name']}: measured mfu {units.num(c['mfu'])} calibrates the model (matmul efficiency × {c['efficiency_scale']:.3f})"
            )
        if not inp["plans"]:
            out.append(f"{inp['name']}: no plan: {inp['reason']}")
            out.append("  candidates each gate or rule excluded:")
            out += [
                f"    {units.num(v)}: {gate_text(k, doc.get('margin', MARGIN))}"
                for k, v in inp.get("excluded_by", {}).items()
            ]
    if not doc["plans"]:  # nothing feasible: the reasons above, no empty table
        return "\n".join(out)
    out += ["", *_columns((("#", "r", lambda p: str(p["rank"])), *_PLAN_COLUMNS), doc["plans"])]
    if doc.get("pareto"):
        out += ["", "Pareto front (days against cost, fastest first):"]
        out += _columns((("", "r", lambda p: ""), *_PLAN_COLUMNS), doc["pareto"])
    return "\n".join(out)


def _money(value: Any, currency: Any) -> str:
    """A cost with its row's currency beside it (as the reports show every cost)."""
    text = units.num(value)
    return f"{text} {currency}" if currency and value is not None else text


def _recompute(r: dict) -> str:
    sp = " sp" if r.get("sequence_parallel") else ""
    return f"z{r.get('zero', 0)} {r.get('recompute', 'none')}{sp}"


def _batch(r: dict) -> str:
    opt = f" opt@{r['optimizer_at']}" if r.get("optimizer_at") else ""
    return f"mb{r.get('micro_batch', 1)} chunks{r.get('loss_chunks', 1)}{opt}"


_PLAN_COLUMNS = (  # after the rank (or blank) column
    ("name", "l", lambda p: str(p["row"].get("name", ""))),
    ("gpu", "l", lambda p: str(p["row"].get("gpu", ""))),
    ("GPUs", "r", lambda p: units.num(p["gpus"])),
    ("layout", "l", lambda p: " ".join(f"{k}{p['row'].get(k, 1)}" for k in _PARALLEL)),
    ("zero/recompute", "l", lambda p: _recompute(p["row"])),
    ("batch/memory", "l", lambda p: _batch(p["row"])),
    ("peak", "r", lambda p: units.gb(p["peak_bytes_per_rank"])),
    ("step s", "r", lambda p: f"{p['step_time_s']:.3g}"),
    ("days", "r", lambda p: units.num(p["days"])),
    ("GPU-h", "r", lambda p: units.num(p["gpu_hours"])),
    ("cost", "r", lambda p: _money(p["cost"], p["row"].get("currency"))),
    ("beside compute", "l", lambda p: p.get("why", "")),
)
_PARALLEL = ("dp", "tp", "pp", "cp", "ep")
