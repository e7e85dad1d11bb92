"""The JSON document: every figure of the report spec, one object per configuration.

A peer of the other reporters: it walks the spec and looks values up; it decides nothing.  Bytes
are whole bytes, counts whole numbers, other quantities floats, and a value that cannot be computed
from the row is ``null``.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..engine import Ledger, plain, resolved_inputs
from ..report import Table

SCHEMA = "ledger-report/1"


def config_document(lg: Ledger) -> dict[str, Any]:
    reg = lg.model.registry
    v = lg.values

    def value(key: str) -> Any:
        return plain(v[key], reg[key].unit)

    out: dict[str, Any] = {
        "name": lg.name,
        "notes": lg.config.get("notes"),
        "inputs": resolved_inputs(lg),
        "inputs_from": inputs_from(lg),
    }
    for sec in lg.model.spec.sections:
        if isinstance(sec, Table):
            out[sec.json] = [_line(lg, sec, ln) for ln in sec.lines if not ln.show or v[ln.show]]
            out.update({f.name: value(f.key) for f in sec.total})
            continue
        obj = {
            f.name: ({n: value(k) for n, k in f.items} if f.items else value(f.key))
            for f in sec.figures
        }
        if sec.json is None:
            out.update(obj)
        elif sec.json_null_unless_shown and not (sec.show and v[sec.show]):
            out[sec.json] = None
        else:
            out[sec.json] = obj
    notes = [k for k in lg.model.spec.assumptions if v[k + "_shown"]]
    out["assumptions"] = [v[k] for k in notes]
    out["assumptions_zh"] = [v[k + "_zh"] for k in notes]
    out["warnings"] = [w for w in warnings(lg)]
    return out


def inputs_from(lg: Ledger) -> dict[str, str]:
    """Where each column the row has came from: "row", or the model that filled it
    ("model Qwen3-8B", "config.json configs/qwen3-30b-a3b.json")."""
    return {col: lg.config.origin(col) for col in lg.config.given()}


def _line(lg: Ledger, table: Table, ln) -> dict[str, Any]:
    reg = lg.model.registry
    row: dict[str, Any] = {}
    for col in table.columns:
        cell = ln.cells[col.name]
        if cell.items:
            row[col.name] = {n: plain(lg.values[k], reg[k].unit) for n, k in cell.items}
        else:
            row[col.name] = (
                cell.value if not cell.key else plain(lg.values[cell.key], reg[cell.key].unit)
            )
    if ln.formula:
        row["basis"] = reg[ln.formula].source
    row["label"] = {"en": ln.en, "zh": ln.zh}
    return row


def warnings(lg: Ledger) -> list[str]:
    """The row's warnings: the reader's (a column contradicting the row's model), then each
    warning constraint that does not hold, as its message."""
    from ..model.registry import WARNING

    return list(lg.config.warnings) + [
        lg.values[c.message]
        for c in lg.model.registry.constraints
        if c.severity == WARNING and lg.values[c.ok] is False
    ]


def document(ledgers: Iterable[Ledger]) -> dict[str, Any]:
    return {"schema": SCHEMA, "configs": [config_document(lg) for lg in ledgers]}
