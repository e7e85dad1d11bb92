"""The JSON document: every figure of the report spec, one object per configuration.

A peer of the other reporters: it walks the spec and looks values up; it decides nothing.  Bytes
are whole bytes, counts whole numbers, other quantities floats, and a value that cannot be computed
from the row is ``null``.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO, Callable, Iterable

from ..engine import Ledger, plainers, resolved_inputs
from ..model.registry import WARNING
from ..report import Table
from .view import assumptions

SCHEMA = "ledger-report/1"


def config_document(lg: Ledger) -> dict[str, Any]:
    v = lg.values
    out: dict[str, Any] = {
        "name": lg.name,
        "notes": lg.config.get("notes"),
        "inputs": resolved_inputs(lg),
        # where each column the row has came from: "row", or the model that filled it ("model
        # Qwen3-8B", "config.json configs/qwen3-30b-a3b.json")
        "inputs_from": {col: lg.config.origin(col) for col in lg.config.given()},
    }
    for sec, lines, figures in _layout(lg.model):
        if lines is not None:
            out[sec.json] = [
                {n: get(v) for n, get in ln} for show, ln in lines if not show or v[show]
            ]
        elif sec.json_null_unless_shown and not (sec.show and v[sec.show]):
            out[sec.json] = None
            continue
        obj = {n: get(v) for n, get in figures}
        if sec.json is None or lines is not None:
            out.update(obj)  # a table's totals, or a section of the configuration itself
        else:
            out[sec.json] = obj
    out["assumptions"] = assumptions(lg, "en")
    out["assumptions_zh"] = assumptions(lg, "zh")
    out["warnings"] = warnings(lg)
    return out


_Getters = list[tuple[str, Callable[[Any], Any]]]  # (JSON name, its value from a row's values)
_LAYOUT: tuple = (None, None, None)  # the last model's spec and registry, and their layout


def _layout(model) -> list[tuple[Any, list[tuple[str, _Getters]] | None, _Getters]]:
    """The model's spec as the document walks it, read once (for the last model asked: holding
    it, so that ``is`` cannot match another): each section with its table's lines (each with its
    registry BOOL key and its cells, then its basis and label) or None, and its figures."""
    global _LAYOUT
    spec, reg, out = _LAYOUT  # read once: another thread may replace it (never change it)
    if spec is not model.spec or reg is not model.registry:
        reg, out = model.registry, []
        plain_of = plainers(reg)  # once per model, not per figure

        def getters(figures) -> _Getters:
            return [(f.name, _getter(plain_of, f.items, f.key)) for f in figures]

        for sec in model.spec.sections:
            if not isinstance(sec, Table):
                out.append((sec, None, getters(sec.figures)))
                continue
            lines = []
            for ln in sec.lines:
                cells = [(c.name, ln.cells[c.name]) for c in sec.columns]
                got = [(n, _getter(plain_of, x.items, x.key, x.value)) for n, x in cells]
                if ln.formula:
                    got.append(("basis", _getter(plain_of, (), "", reg[ln.formula].source)))
                got.append(("label", _label(ln.en, ln.zh)))
                lines.append((ln.show, got))
            out.append((sec, lines, getters(sec.total)))
        _LAYOUT = model.spec, model.registry, out
    return out


def _getter(plain_of, items: tuple, key: str, value: Any = None) -> Callable[[Any], Any]:
    """A figure's value from a row's values: its breakdown (an object of figures), the figure
    (``plain``, of ``plainers``), or the spec's fixed value."""
    if items:
        parts = [(n, k, plain_of[k]) for n, k in items]
        return lambda v: {n: plain(v[k]) for n, k, plain in parts}
    if key:
        plain = plain_of[key]
        return lambda v: plain(v[key])
    return lambda v: value


def _label(en: str, zh: str) -> Callable[[Any], dict[str, str]]:
    return lambda v: {"en": en, "zh": zh}  # a new object each time: a caller may change its copy


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


def json_lines(ledgers: list[Ledger]) -> tuple[int, bytes]:
    """A chunk of configurations as ``calc --json`` prints them (compact, one a line), with their
    count."""
    return len(ledgers), ",\n".join(map(_COMPACT, map(config_document, ledgers))).encode()


def write_lines(
    parts: Iterable[tuple[int, bytes]],
    out: BinaryIO,
    done: Callable[[int], None] = lambda n: None,
    opening: bool = True,
    closing: bool = True,
) -> None:
    """The document as ``calc --json`` prints it, written a chunk (``json_lines``) at a time as
    they are computed (memory bounded by a chunk, not the file); ``done`` is told how many
    configurations each write carried.  The head is written with the first chunk, so a row
    refused there (the engine's rule on figures no output can hold) leaves nothing on ``out``.
    Not ``opening``: the chunks go on a list already begun (no head); not ``closing``: no end."""
    head = b'{\n  "schema": "' + SCHEMA.encode() + b'",\n  "configs": [\n' if opening else b""
    lead = b"" if opening else b",\n"
    for n, text in parts:
        out.write(head + lead + text)
        head, lead = b"", b",\n"
        done(n)
    if closing:
        out.write(head + b"\n  ]\n}\n")


# json.dumps' compact form (a document holds no cycle, so none is looked for: the same text)
_COMPACT = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
).encode
