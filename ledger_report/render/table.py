"""Plain-text renderers for the terminal: the ``calc`` table, the GPU catalogue, ranked plans.

They only display what the engine computed; units are labelled (GB = 10^9, GiB = 2^30).
"""

from __future__ import annotations

from typing import Any, Iterable

from ..model import units
from ..model.text import fmt_value


def _table(headers: list[str], rows: list[list[str]], align: str) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        out = []
        for c, w, a in zip(cells, widths, align):
            out.append(c.rjust(w) if a == "r" else c.ljust(w))
        return "  ".join(out).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return [line(headers), sep] + [line(r) for r in rows]


def render_table(ledgers: Iterable[Any]) -> str:
    blocks = []
    for lg in ledgers:
        d = lg.to_dict()
        c = d["compute"]
        out = [f"== {d['name']} ==  ({lg['framework']}, ZeRO-{lg['zero']}, dp {lg['dp']} tp {lg['tp']} pp {lg['pp']} cp {lg['cp']} ep {lg['ep']}, "
               f"{lg['gpu']} {units.num(lg['hbm_gb'])} GB, stage reported: {d['reported_stage']})"]
        p = d["params"]
        out.append(f"parameters: total {units.params(p['total'])}, expert {units.params(p['expert'])}, "
                   f"non-expert {units.params(p['dense'])}, active {units.params(p['active'])}, per rank {units.params(p['per_rank'])}")
        rows = []
        for s in d["states"]:
            rows.append([
                s["state"], s["part"], s["dtype"], units.num(s["bytes_per_param"]),
                "sharded" if s["sharded"] else "whole", units.num(s["shard_group"]),
                units.params(s["params_on_rank"]).replace(" params", ""), units.gb(s["bytes_per_rank"]), units.gib(s["bytes_per_rank"]), s["location"],
            ])
        rows.append(["state in HBM", "", "", units.num(d["state_bytes_per_param"]), "", "", "",
                     units.gb(d["state_bytes_per_rank"]), units.gib(d["state_bytes_per_rank"]), "hbm"])
        out += _table(["state", "part", "dtype", "B/param", "stored", "group", "params/rank", "GB", "GiB", "where"], rows, "lllrlrrrrl")
        out.append(f"logical state, all ranks: {units.gb(d['state_bytes_logical_total'])} = {units.gib(d['state_bytes_logical_total'])}")
        off = d["offload"]
        if (off["host_state_bytes_per_rank"] or 0) + (off["nvme_state_bytes_per_rank"] or 0):
            out.append(f"offloaded per node: host {units.gb(off['host_bytes_per_node'])} (fits: {off['host_fits']}), "
                       f"NVMe {units.gb(off['nvme_bytes_per_node'])}; streaming {units.num(off['stream_s'])} s per step")
        out.append("")
        urows = [[u["item"], units.gb(u["bytes_per_rank"]), units.gib(u["bytes_per_rank"]), "yes" if u["in_peak"] else "no (already in state)"] for u in d["uncounted"]]
        out += _table(["not in the state ledger", "GB", "GiB", "in peak"], urows, "lrrl")
        fits = {True: "fits", False: "DOES NOT FIT", None: "—"}[d["fits"]]
        out.append(f"peak per rank {units.gb(d['peak_bytes_per_rank'])} = {units.gib(d['peak_bytes_per_rank'])} of HBM {units.gb(d['hbm_bytes'])}: {fits}"
                   + (f", headroom {units.gb(d['headroom_bytes'])}" if d["headroom_bytes"] is not None else ""))
        if d["measured"]:
            m = d["measured"]
            out.append(f"measured peak {units.gb(m['measured_peak_bytes'])}: minus state {units.gb(m['measured_minus_state_bytes'])}; "
                       f"minus estimated peak {units.gb(m['unexplained_bytes'])}")
        out.append("")
        out.append(f"compute: {fmt_value(c['flops_per_token'], 'flops')}/token, total {fmt_value(c['total_flops'], 'flops')}, "
                   f"{units.num(c['steps'])} steps of {units.num(c['tokens_per_step'])} tokens, {units.num(c['step_budget_s'])} s per step allowed")
        out.append(f"         needs {units.num(c['required_tokens_per_s'])} tokens/s; {units.num(c['tokens_per_s_per_gpu'])} tokens/s per GPU at MFU {units.num(c['mfu'])} (HFU {units.num(c['hfu'])})")
        out.append(f"         {units.num(c['days'])} days on {units.num(c['gpus'])} GPUs; minimum GPUs: {units.num(c['min_gpus_compute'])} for the deadline (compute gate), "
                   f"{units.num(c['min_gpus_memory'])} to hold the state (capacity gate); binding: {c['binding_gate'] or '—'}")
        out.append(f"         {units.num(c['gpu_hours'])} GPU-hours, cost {units.num(c['cost'])}")
        blocks.append("\n".join(out))
    return "\n\n".join(blocks)


def render_gpus(gpus: dict) -> str:
    rows = [[g.name, units.num(g.hbm_gb), units.num(g.peak_tflops), units.num(g.hbm_tb_s), units.num(g.host_link_gb_s),
             f"{g.interconnect} {units.num(g.interconnect_gb_s)}", units.num(g.gpus_per_node), units.num(g.host_gb)] for g in gpus.values()]
    lines = _table(["name", "HBM GB", "BF16 TFLOP/s", "HBM TB/s", "host GB/s", "interconnect GB/s", "GPUs/node", "host GB/node"], rows, "lrrrrlrr")
    lines.append("")
    lines.append("GB = 10^9 bytes; TFLOP/s dense (no sparsity). Sources: ledger-report gpus --json.")
    return "\n".join(lines)


def render_plans(doc: dict) -> str:
    head = (f"{units.num(doc['candidates_evaluated'])} candidates evaluated, {units.num(doc['feasible'])} feasible, "
            f"{units.num(doc['seconds'])} s")
    rows = []
    for p in doc["plans"]:
        r = p["row"]
        rows.append([str(p["rank"]), str(r.get("name", "")), str(r.get("gpu", "")), units.num(p["gpus"]),
                     f"dp{r.get('dp', 1)} tp{r.get('tp', 1)} pp{r.get('pp', 1)} cp{r.get('cp', 1)} ep{r.get('ep', 1)}",
                     f"z{r.get('zero', 0)} {r.get('recompute', 'none')}" + (" sp" if r.get("sequence_parallel") else ""),
                     f"mb{r.get('micro_batch', 1)} chunks{r.get('loss_chunks', 1)}" + (" opt@host" if r.get("optimizer_at") == "host" else ""),
                     units.gb(p["peak_bytes_per_rank"]), units.num(p["days"]), units.num(p["gpu_hours"]), units.num(p["cost"])])
    return "\n".join([head, ""] + _table(["#", "name", "gpu", "GPUs", "layout", "zero/recompute", "batch/memory", "peak", "days", "GPU-h", "cost"], rows, "rllrlllrrrr"))
