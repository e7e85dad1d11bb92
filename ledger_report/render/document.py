"""The JSON document: every figure of the report spec, one object per configuration.

A peer of the other reporters: it walks the spec and looks values up; it decides nothing.  Bytes
are whole bytes, counts whole numbers, other quantities floats, and a value that cannot be computed
from the row is ``null``.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO, Callable, Iterable

from ..engine import CHUNK_ROWS, Ledger, chunks, plainers, resolved_inputs
from ..model.registry import WARNING
from ..report import Table
from .view import assumption_items

SCHEMA = "ledger-report/1"


def config_document(lg: Ledger) -> dict[str, Any]:
    v = lg.values
    plain_of = plainers(lg.model.registry)
    out: dict[str, Any] = {
        "name": lg.name,
        "notes": lg.config.get("notes"),
        "inputs": resolved_inputs(lg),
        "inputs_from": inputs_from(lg),
    }
    for sec, parts in _layout(lg.model):
        if isinstance(sec, Table):
            out[sec.json] = [
                _line(plain_of, v, ln, cells, basis)
                for ln, cells, basis in parts
                if not ln.show or v[ln.show]
            ]
            out.update({f.name: plain_of[f.key](v[f.key]) for f in sec.total})
            continue
        if sec.json_null_unless_shown and not (sec.show and v[sec.show]):
            out[sec.json] = None
            continue
        obj = {
            name: ({n: plain_of[k](v[k]) for n, k in items} if items else plain_of[key](v[key]))
            for name, items, key in parts
        }
        if sec.json is None:
            out.update(obj)
        else:
            out[sec.json] = obj
    out["assumptions"] = [text for _, text in assumption_items(lg, "en")]
    out["assumptions_zh"] = [text for _, text in assumption_items(lg, "zh")]
    out["warnings"] = warnings(lg)
    return out


_LAYOUTS: dict[int, tuple[Any, list]] = {}


def _layout(model) -> list[tuple[Any, list]]:
    """The model's spec's sections as the document walks them, read once per model: a table's
    lines, each with its cells (column, breakdown, key, fixed value) and its basis (the source
    of its formula, or None), or a section's figures (name, breakdown, key)."""
    hit = _LAYOUTS.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    out: list[tuple[Any, list]] = []
    for sec in model.spec.sections:
        if isinstance(sec, Table):
            lines = []
            for ln in sec.lines:
                cells = [(c.name, ln.cells[c.name]) for c in sec.columns]
                basis = model.registry[ln.formula].source if ln.formula else None
                lines.append((ln, [(n, x.items, x.key, x.value) for n, x in cells], basis))
            out.append((sec, lines))

        else:
            out.append((sec, [(f.name, f.items, f.key) for f in sec.figures]))
    _LAYOUTS[id(model)] = (model, out)  # keeps ``model`` alive, so its id is not reused
    return out


def inputs_from(lg: Ledger) -> dict[str, str]:
    """Where each column the row has came from: "row", or the model that filled it
    ("model Qwen3-8B", "config.json configs/qwen3-30b-a3b.json")."""
    return {col: lg.config.origin(col) for col in lg.config.given()}


def _line(
    plain_of, v, ln, cells: list[tuple[str, Any, str, Any]], basis: str | None
) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for name, items, key, value in cells:
        if items:
            row[name] = {n: plain_of[k](v[k]) for n, k in items}
        else:
            row[name] = value if not key else plain_of[key](v[key])
    if ln.formula:
        row["basis"] = basis
    row["label"] = {"en": ln.en, "zh": ln.zh}
    return row


def warnings(lg: Ledger) -> list[str]:
    """The row's warnings: the reader's (a column contradicting the row's model), then each
    warning constraint that does not hold, as its message."""
    return list(lg.config.warnings) + [
        lg.values[c.message]
        for c in lg.model.registry.constraints
        if c.severity == WARNING and lg.values[c.ok] is False
    ]


def document(ledgers: Iterable[Ledger]) -> dict[str, Any]:
    return {"schema": SCHEMA, "configs": [config_document(lg) for lg in ledgers]}


def json_bytes(doc: Any) -> bytes:
    """A document as ``build`` (``document``) and ``plan --json`` write it: indented, UTF-8."""
    return (json.dumps(doc, ensure_ascii=False, indent=2, allow_nan=False) + "\n").encode("utf-8")


def write_lines(
    ledgers: Iterable[Ledger],
    out: BinaryIO,
    done: Callable[[int], None] = lambda n: None,
    rows: int = CHUNK_ROWS,
) -> None:
    """The document as ``calc --json`` prints it: compact, one configuration a line, written
    ``rows`` configurations at a time as they are computed (memory bounded by a chunk, not the
    file); ``done`` is told how many configurations each write carried.  The head is written with
    the first chunk, so a row refused there (the engine's rule on figures no output can hold)
    leaves nothing on ``out``."""
    head = b'{\n  "schema": "' + SCHEMA.encode() + b'",\n  "configs": [\n'
    lead = ""
    for chunk in chunks(ledgers, rows):
        docs = map(_COMPACT, map(config_document, chunk))  # lazy: the text made once, in the join
        out.write((head if not lead else b"") + (lead + ",\n".join(docs)).encode())

        lead = ",\n"
        done(len(chunk))
    out.write((head if not lead else b"") + b"\n  ]\n}\n")


# json.dumps' compact form (a document holds no cycle, so none is looked for: the same text)

_COMPACT = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
).encode
