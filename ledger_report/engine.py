"""The engine: a ``Config`` in, a frozen ``Ledger`` out (CONTRACT sections 3 and 4).

Pure: it imports no pandas, click, openpyxl, jinja2 or weasyprint (a test walks the imports).
Every number comes from evaluating ``model.definitions.REGISTRY`` on the row; this module only
arranges those numbers into the document's shape and states the assumptions in words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .config import COLUMN_NAMES, Config
# A Config from a mapping, checked like a file row (one path: the reader's cell conversion and
# cross-checks, raising the same InputError); re-exported for the library, tests and the planner.
from .inputs import config_from_mapping, configs_from_records  # noqa: F401
from .model import text as mtext
from .model.definitions import PARTS, REGISTRY, STATE_DTYPE, STATES
from .model.evaluate import evaluate_row
from .model.registry import BOOL, INT_UNITS, TEXT
from .model.tables import tables

SCHEMA = "ledger-report/1"

# (item key, registry key, in the peak?) for the items outside the state ledger, in print order.
UNCOUNTED = (
    ("activations", "activation_bytes_per_rank", True),
    ("logits", "logits_bytes_per_rank", True),
    ("loss_working_set", "loss_working_bytes_per_rank", True),
    ("recompute_working_set", "recompute_working_bytes_per_rank", True),
    ("zero3_gather", "zero3_gather_bytes_per_rank", True),
    ("comm_buffers", "comm_buffer_bytes_per_rank", True),
    ("runtime_reserve", "runtime_reserve_bytes_per_rank", True),
    ("first_step_optimizer", "first_step_optimizer_bytes", False),
)

# Headline figures whose formula text the handout prints, with the quantities expanded inline.
HEADLINES = (
    ("state_bytes_per_rank", ()),
    ("activation_bytes_per_rank", ("first_stage_activation_bytes", "last_stage_activation_bytes")),
    ("logits_bytes_per_rank", ("logits_full_bytes",)),
    ("peak_bytes_per_rank", ("peak_before_reserve_bytes",)),
    ("state_bytes_logical_total", ("state_bytes_per_param",)),
    ("flops_per_token", ()),
    ("total_flops", ()),
    ("step_budget_s", ("train_window_s",)),
    ("days_on_config", ("effective_flops_per_gpu",)),
    ("min_gpus_compute", ("effective_flops_per_gpu", "train_window_s")),
    ("min_gpus_memory", ()),
    ("gpu_hours", ("effective_flops_per_gpu",)),
    ("cost", ()),
)


def _json_value(v: Any, unit: str) -> Any:
    if v is None:
        return None
    if unit == BOOL:
        return bool(v)
    if unit == TEXT:
        return str(v)
    if unit in INT_UNITS and isinstance(v, (int, float)) and not isinstance(v, bool):
        # bytes round up (a partial byte still occupies memory); counts to the nearest integer
        return int(math.ceil(v)) if unit == "bytes" else int(round(v))
    return v


@dataclass(frozen=True)
class Ledger:
    """Every quantity of one configuration, plus its document form."""

    config: Config
    values: Mapping[str, Any]

    @property
    def name(self) -> str:
        return self.config.name

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    # ----------------------------------------------------------------------------------------
    def states(self) -> list[dict[str, Any]]:
        v = self.values
        out = []
        for s, location_col, en, zh in STATES:
            bpp = v[f"{s}_bytes_per_param"]
            dtype = v[STATE_DTYPE[s]] + (" (factored)" if s == "v" and v["optimizer"] == "adafactor" else "")
            for p, _pen, _pzh in PARTS:
                if not bpp or not v[f"{p}_params_on_rank"]:
                    continue  # the state does not exist, or the part has no parameters
                group = v[f"{s}_{p}_shard_group"]
                out.append(
                    {
                        "state": s,
                        "part": p,
                        "dtype": dtype,
                        "bytes_per_param": float(bpp),
                        "sharded": group != 1,  # a group of one is the whole state
                        "shard_group": _json_value(group, "count"),
                        "params_on_rank": _json_value(v[f"{s}_{p}_params_on_rank"], "params"),
                        "bytes_per_rank": _json_value(v[f"{s}_{p}_bytes"], "bytes"),
                        "location": v[location_col],
                        "label": {"en": en, "zh": zh},
                    }
                )
        return out

    def uncounted(self) -> list[dict[str, Any]]:
        from .model.basis import BASIS

        out = []
        for item, key, in_peak in UNCOUNTED:
            q = REGISTRY[key]
            b = BASIS[item]
            out.append(
                {
                    "item": item,
                    "bytes_per_rank": _json_value(self.values[key], "bytes"),
                    "basis": b["en"](self.values),
                    "basis_zh": b["zh"](self.values),
                    "label": {"en": q.en, "zh": q.zh},
                    "in_peak": in_peak,
                }
            )
        return out

    def formulas(self) -> list[dict[str, Any]]:
        out = []
        for key, expand in HEADLINES:
            q = REGISTRY[key]
            if self.values.get(key) is None:
                continue
            out.append(
                {
                    "key": key,
                    "label": {"en": q.en, "zh": q.zh},
                    "text": mtext.render(REGISTRY, key, self.values, "en", frozenset(expand)),
                    "text_zh": mtext.render(REGISTRY, key, self.values, "zh", frozenset(expand)),
                    "source": q.source,
                }
            )
        for line in self.states():
            key = f"{line['state']}_{line['part']}_bytes"
            q = REGISTRY[key]
            out.append(
                {
                    "key": key,
                    "label": {"en": q.en, "zh": q.zh},
                    "text": mtext.render(REGISTRY, key, self.values, "en", frozenset({f"{line['state']}_{line['part']}_params_on_rank"})),
                    "text_zh": mtext.render(REGISTRY, key, self.values, "zh", frozenset({f"{line['state']}_{line['part']}_params_on_rank"})),
                    "source": q.source,
                }
            )
        return out

    def inputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for col in COLUMN_NAMES:
            if col in REGISTRY and col not in ("params_per_rank",):
                out[col] = _json_value(self.values[col], REGISTRY[col].unit)
            elif col == "params_per_rank":
                out[col] = self.config.get(col) if self.config.get(col) is not None else _json_value(self.values["params_per_rank"], "params")
            else:
                out[col] = self.config.get(col)
        return out

    def to_dict(self) -> dict[str, Any]:
        from .assumptions import assumptions

        v = self.values
        j = lambda k: _json_value(v[k], REGISTRY[k].unit)  # noqa: E731
        en, zh = assumptions(self)
        measured = None
        if v["measured_peak_bytes"] is not None:
            measured = {
                "measured_peak_bytes": j("measured_peak_bytes"),
                "measured_minus_state_bytes": j("measured_minus_state_bytes"),
                "unexplained_bytes": j("unexplained_bytes"),
            }
        return {
            "name": self.name,
            "notes": self.config.get("notes"),
            "inputs": self.inputs(),
            "params": {
                "total": j("params_total"),
                "expert": j("params_expert"),
                "dense": j("params_dense"),
                "active": j("params_active"),
                "per_rank": j("params_per_rank"),
                "largest_matrix": j("largest_matrix_params"),
                "from_architecture": bool(v["has_arch"]),
            },
            "states": self.states(),
            "state_bytes_per_rank": j("state_bytes_per_rank"),
            "state_bytes_logical_total": j("state_bytes_logical_total"),
            "state_bytes_per_param": j("state_bytes_per_param"),
            "uncounted": self.uncounted(),
            "activation_bytes_per_rank": j("activation_bytes_per_rank"),
            "logits_bytes_per_rank": j("logits_bytes_per_rank"),
            "peak_bytes_per_rank": j("peak_bytes_per_rank"),
            "hbm_bytes": j("hbm_bytes"),
            "headroom_bytes": j("headroom_bytes"),
            "fits": j("fits"),
            "reported_stage": v["reported_stage"],
            "offload": {
                "host_state_bytes_per_rank": j("host_state_bytes_per_rank"),
                "nvme_state_bytes_per_rank": j("nvme_state_bytes_per_rank"),
                "host_bytes_per_node": j("host_bytes_per_node"),
                "nvme_bytes_per_node": j("nvme_bytes_per_node"),
                "host_fits": j("host_fits"),
                "stream_s": j("offload_stream_s"),
            },
            "measured": measured,
            "compute": {
                "flops_per_token": j("flops_per_token"),
                "total_flops": j("total_flops"),
                "tokens_per_step": j("tokens_per_step"),
                "steps": j("steps"),
                "step_budget_s": j("step_budget_s"),
                "required_tokens_per_s": j("required_tokens_per_s"),
                "tokens_per_s_per_gpu": j("tokens_per_s_per_gpu"),
                "days": j("days_on_config"),
                "gpus": j("gpus"),
                "min_gpus_compute": j("min_gpus_compute"),
                "min_gpus_memory": j("min_gpus_memory"),
                "binding_gate": v["binding_gate"] if v["min_gpus_compute"] is not None else None,
                "gpu_hours": j("gpu_hours"),
                "cost": j("cost"),
                "mfu": j("mfu"),
                "hfu": j("hfu"),
            },
            "formulas": self.formulas(),
            "assumptions": en,
            "assumptions_zh": zh,
        }


def compute(config: Config) -> Ledger:
    values = evaluate_row(REGISTRY, config.values, tables())
    return Ledger(config, values)


def document_of(ledgers: Iterable[Ledger]) -> dict[str, Any]:
    """The CONTRACT §4 document for ledgers already computed."""
    return {"schema": SCHEMA, "configs": [lg.to_dict() for lg in ledgers]}


def document(configs: Iterable[Config]) -> dict[str, Any]:
    return document_of(compute(c) for c in configs)
