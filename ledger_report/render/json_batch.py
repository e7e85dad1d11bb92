"""The JSON document of many rows at once: for each row, ``json.dumps(config_document(ledger))``
(compact, ``ensure_ascii`` off) byte for byte, built a column at a time.

The document's keys come from the report spec exactly as ``config_document`` walks it:
``_skeleton`` makes the same dict operations, so keys come in the same order and a key a later
section repeats keeps its first place and its last value.  Each leaf is a slot that writes its JSON
on every row of the batch at once (bytes and counts rounded as ``plain`` rounds them, numbers as
``json`` writes them); fixed texts (labels, sources, the keys) are written into a row template
once, and a row is the template filled with its slots' texts.

The texts are held as their UTF-8 bytes, one character a byte (``str.encode("utf-8")`` then
``decode("latin-1")``): joining them copies one byte a character, as ASCII numbers are held, rather
than widening everything a line with a Chinese label touches, and a chunk's bytes are its
``encode("latin-1")``.

Where a value does not fit (a float that is not finite, a type ``json`` would write otherwise, a
message that fails on some row) the chunk goes row by row through ``config_document`` instead,
so output and errors are what they always were.
"""

from __future__ import annotations

import json
import math
from itertools import repeat
from typing import Any, Callable, Sequence

from ..engine import Batch
from ..model.registry import BOOL, BYTES, FLOAT_UNITS, INT_UNITS, TEXT, WARNING
from ..model.rows import evaluate_rows
from ..report import Model, Table
from .document import config_document

_JSON = json.JSONEncoder(ensure_ascii=False).encode  # a str as json.dumps writes it in a document
_STRINGS: dict[str, str] = {}  # JSON of texts seen (gpu names, dtypes, origins...), bounded
_MAX_STRINGS = 50_000


class _Unusual(Exception):
    """A value the column writer does not write as json.dumps would: the chunk goes row by row."""


def _STRING(s: str) -> str:
    """``s`` as json.dumps writes it, held as its UTF-8 bytes (one character a byte)."""
    text = _JSON(s)
    return text if text.isascii() else text.encode("utf-8").decode("latin-1")


CHUNK_ROWS = 1024  # rows written at once: bounds the texts held (a batch is evaluated 4,096 rows at a time)


def write_batch(batch: Batch, out: Any, first: bool, progress: Callable[[int], None]) -> None:
    """Write the batch's documents to ``out`` as ``calc --json`` does (",\\n" before each but the
    file's first), ``CHUNK_ROWS`` rows at a time; a chunk the column writer cannot write goes row
    by row, so a row that fails fails where it always did, after the rows before it."""
    shared: dict[str, Any] = {}
    for start in range(0, len(batch.configs), CHUNK_ROWS):
        rows = range(start, min(start + CHUNK_ROWS, len(batch.configs)))
        try:
            docs = _Writer(batch, rows, shared).documents()
        except Exception:  # _Unusual, or a message that raises on some row: the plain path meets it there
            docs = None
        if docs is None:
            for lg in batch.ledgers()[rows.start:rows.stop]:
                body = json.dumps(config_document(lg), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                out.write(("" if first else ",\n").encode() + body.encode("utf-8"))
                first = False
                progress(1)
            continue
        out.write((("" if first else ",\n") + ",\n".join(docs)).encode("latin-1"))
        first = False
        progress(len(docs))


def string_json(s: str) -> str:
    """A text as json.dumps writes it, as UTF-8 bytes (each text seen written once, up to ``_MAX_STRINGS``)."""
    hit = _STRINGS.get(s)
    if hit is None:
        hit = _STRING(s)
        if len(_STRINGS) >= _MAX_STRINGS:
            _STRINGS.clear()
        _STRINGS[s] = hit
    return hit


def raw_json(v: Any) -> str:
    """A value as json.dumps writes it, for the types config_document carries as they are."""
    if v is None:
        return "null"
    t = type(v)
    if t is str:
        return string_json(v)
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return int.__repr__(v)
    if t is float and math.isfinite(v):
        return float.__repr__(v)
    raise _Unusual(repr(v))


# -- the row template -------------------------------------------------------------------------------


class _Fixed:
    """A value the same on every row (a line's state name, its label): written into the template."""

    def __init__(self, value: Any) -> None:
        self.json = raw_json(value)


class _Slot:
    def texts(self, w: "_Writer", rows: Sequence[int]) -> list[str]:  # pragma: no cover - interface
        raise NotImplementedError


_SLOT = "\0slot\0"  # where a slot goes in a compiled template (JSON text never holds a raw NUL)


class _Template:
    """A JSON object as its fixed texts (``pieces``) with the slots between them."""

    def __init__(self, node: dict) -> None:
        self.slots: list[_Slot] = []
        self.pieces = self._compile(node).split(_SLOT)

    def _compile(self, node: Any) -> str:
        if isinstance(node, dict):
            return "{" + ",".join(self._key(k) + ":" + self._compile(v) for k, v in node.items()) + "}"
        if isinstance(node, _Fixed):
            return node.json
        self.slots.append(node)
        return _SLOT

    @staticmethod
    def _key(k: Any) -> str:
        if type(k) is not str:
            raise _Unusual(repr(k))
        return _STRING(k)

    def fill(self, w: "_Writer", rows: Sequence[int]) -> list[str]:
        n = len(rows)
        parts: list[Any] = [repeat(self.pieces[0], n)]
        for slot, piece in zip(self.slots, self.pieces[1:]):
            parts += [slot.texts(w, rows), repeat(piece, n)]
        return ["".join(t) for t in zip(*parts)]


class _Value(_Slot):
    """``plain(values[key], unit)`` as JSON."""

    def __init__(self, key: str) -> None:
        self.key = key

    def texts(self, w, rows):
        return w.pick(w.value(self.key), rows)


class _Input(_Slot):
    """An input column as the row gives it (``None`` for an empty cell)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def texts(self, w, rows):
        col = w.batch.inputs(self.name)
        return [raw_json(col[i]) for i in rows]


class _PerRank(_Slot):
    """``params_per_rank``: the row's own value where it gives one, else the computed one."""

    def texts(self, w, rows):
        col, computed = w.batch.inputs("params_per_rank"), w.pick(w.value("params_per_rank"), rows)
        return [c if col[i] is None else raw_json(col[i]) for c, i in zip(computed, rows)]


class _Name(_Slot):
    def texts(self, w, rows):
        col = w.batch.inputs("name")
        return [string_json(str(col[i])) for i in rows]


class _InputsFrom(_Slot):
    """``{column: origin}`` for the columns the row gives, in column order."""

    def texts(self, w, rows):
        from ..config import COLUMN_NAMES

        b = w.batch
        cols = [b.inputs(name) for name in COLUMN_NAMES]
        given = zip(*[[col[i] is not None for i in rows] for col in cols])  # per row: which columns it gives
        out = []
        for i, row_given in zip(rows, given):
            c = b.configs[i]
            key = (row_given, tuple(c.origins.items()))
            hit = w.origins.get(key)
            if hit is None:
                hit = w.origins[key] = "{" + ",".join(
                    _STRING(k) + ":" + raw_json(c.origin(k)) for k, g in zip(COLUMN_NAMES, row_given) if g) + "}"
            out.append(hit)
        return out


class _Lines(_Slot):
    """A table: the list of its lines that the row shows."""

    def __init__(self, lines: list[tuple[str, _Template]]) -> None:
        self.lines = lines

    def texts(self, w, rows):
        acc: list[list[str]] = [[] for _ in rows]
        for show, tmpl in self.lines:
            sh = w.shown(show) if show else None
            at = list(range(len(rows))) if sh is None else [p for p, i in enumerate(rows) if sh[i]]
            for p, text in zip(at, tmpl.fill(w, [rows[p] for p in at])):
                acc[p].append(text)
        return ["[" + ",".join(a) + "]" for a in acc]


class _NullUnless(_Slot):
    """A section's object, or null where the row does not show the section."""

    def __init__(self, show: str, obj: _Template) -> None:
        self.show, self.obj = show, obj

    def texts(self, w, rows):
        out = ["null"] * len(rows)
        if self.show:
            sh = w.shown(self.show)
            at = [p for p, i in enumerate(rows) if sh[i]]
            for p, text in zip(at, self.obj.fill(w, [rows[p] for p in at])):
                out[p] = text
        return out


class _Notes(_Slot):
    """The assumption sentences the row shows (``suffix`` "_zh": in Chinese), as they are."""

    def __init__(self, keys: tuple[str, ...], suffix: str) -> None:
        self.keys, self.suffix = keys, suffix

    def texts(self, w, rows):
        acc: list[list[str]] = [[] for _ in rows]
        for k in self.keys:
            sh = w.shown(k + "_shown")
            at = [p for p, i in enumerate(rows) if sh[i]]
            for p, v in zip(at, w.on_rows(k + self.suffix, [rows[p] for p in at])):
                acc[p].append(raw_json(v))
        return ["[" + ",".join(a) + "]" for a in acc]


class _Warnings(_Slot):
    """Each warning rule the row breaks, as ``document.warnings`` words it."""

    def texts(self, w, rows):
        acc: list[list[str]] = [[] for _ in rows]
        b = w.batch
        for c in w.model.registry.constraints:
            if c.severity != WARNING:
                continue
            ok = b.column(c.ok)
            at = [p for p, i in enumerate(rows) if ok[i] is False]
            on = [rows[p] for p in at]
            exp = evaluate_rows(c.expected, on, b.inputs, b.column, w.model.tables)
            found = evaluate_rows(c.found, on, b.inputs, b.column, w.model.tables)
            for p, e, f in zip(at, exp, found):
                acc[p].append(string_json(f"{c.column}: expected {e}, found {f}"))
        return ["[" + ",".join(a) + "]" for a in acc]


def _line(reg, table: Table, ln) -> _Template:
    """``document._line`` as a template."""
    row: dict[str, Any] = {}
    for col in table.columns:
        cell = ln.cells[col.name]
        if cell.items:
            row[col.name] = {n: _Value(k) for n, k in cell.items}
        else:
            row[col.name] = _Fixed(cell.value) if not cell.key else _Value(cell.key)
    if ln.formula:
        row["basis"] = _Fixed(reg[ln.formula].source)
    row["label"] = {"en": _Fixed(ln.en), "zh": _Fixed(ln.zh)}
    return _Template(row)


def _skeleton(model: Model) -> dict[str, Any]:
    """``config_document``'s dict, each value the slot (or nested dict of slots) that fills it."""
    from ..config import COLUMN_NAMES

    reg, spec = model.registry, model.spec
    inputs = {}
    for col in COLUMN_NAMES:
        inputs[col] = (_PerRank() if col == "params_per_rank" else _Value(col)) if col in reg else _Input(col)
    out: dict[str, Any] = {"name": _Name(), "notes": _Input("notes"), "inputs": inputs, "inputs_from": _InputsFrom()}
    for sec in spec.sections:
        if isinstance(sec, Table):
            out[sec.json] = _Lines([(ln.show, _line(reg, sec, ln)) for ln in sec.lines])
            out.update({f.name: _Value(f.key) for f in sec.total})
            continue
        obj = {f.name: ({n: _Value(k) for n, k in f.items} if f.items else _Value(f.key)) for f in sec.figures}
        if sec.json is None:
            out.update(obj)
        elif sec.json_null_unless_shown:
            out[sec.json] = _NullUnless(sec.show, _Template(obj))
        else:
            out[sec.json] = obj
    out["assumptions"] = _Notes(spec.assumptions, "")
    out["assumptions_zh"] = _Notes(spec.assumptions, "_zh")
    out["warnings"] = _Warnings()
    return out


_TEMPLATES: dict[int, tuple[Model, _Template]] = {}


def _template(model: Model) -> _Template:
    hit = _TEMPLATES.get(id(model))
    if hit is None or hit[0] is not model:
        hit = _TEMPLATES[id(model)] = (model, _Template(_skeleton(model)))
    return hit[1]


# -- the writer -------------------------------------------------------------------------------------


class _Writer:
    """The documents of some rows of a batch (a range of positions); ``shared`` holds what serves
    every chunk of the batch, each computed once (quantities' texts, which rows show what, origins)."""

    def __init__(self, batch: Batch, rows: range, shared: dict[str, Any]) -> None:
        self.batch, self.model, self.rows = batch, batch.model, rows
        self.origins: dict[tuple, str] = shared.setdefault("origins", {})
        self._shown: dict[str, list[bool]] = shared.setdefault("shown", {})
        self._values: dict[str, list[str]] = shared.setdefault("values", {})

    def documents(self) -> list[str]:
        """Each row's document, its UTF-8 bytes one character a byte."""
        return _template(self.model).fill(self, self.rows)

    def value(self, key: str) -> list[str]:
        """``plain`` of the quantity as JSON, on each row of the batch."""
        hit = self._values.get(key)
        if hit is None:
            every = range(len(self.batch.configs))
            hit = self._values[key] = _plain_json(self.batch, key, self.model.registry[key].unit, every)
        return hit

    @staticmethod
    def pick(texts: list[str], rows: Sequence[int]) -> list[str]:
        """Of texts on the batch's rows, those of ``rows`` (positions in the batch)."""
        if type(rows) is range:
            return texts[rows.start:rows.stop]
        return [texts[i] for i in rows]

    def shown(self, key: str) -> list[bool]:
        """Whether each row of the batch shows a line or a section (the key's truth)."""
        hit = self._shown.get(key)
        if hit is None:
            hit = self._shown[key] = [bool(v) for v in self.batch.column(key)]
        return hit

    def on_rows(self, key: str, rows: list[int]) -> list[Any]:
        """A quantity's values on some rows, computing a text quantity there only."""
        b = self.batch
        if key in b.text_keys:
            return b.text(key, rows)
        col = b.column(key)
        return [col[i] for i in rows]


def _plain_json(batch: Batch, key: str, unit: str, rows: range) -> list[str]:
    """``plain(value, unit)`` on each of the rows, as JSON."""
    if unit == BOOL:
        return ["null" if v is None else ("true" if v else "false") for v in batch.column(key)[rows.start:rows.stop]]
    if unit == TEXT:
        return ["null" if v is None else string_json(str(v)) for v in batch.column(key)[rows.start:rows.stop]]
    if unit not in INT_UNITS and unit not in FLOAT_UNITS:
        return [raw_json(v) for v in batch.column(key)[rows.start:rows.stop]]
    got = batch.floats(key)
    if got is None:
        return ["null"] * len(rows)
    x, blank = got
    return _numbers_json(x[rows.start:rows.stop], None if blank is None else blank[rows.start:rows.stop],
                         whole=unit in INT_UNITS, ceil=unit == BYTES)


def _numbers_json(x: Any, blank: Any, whole: bool, ceil: bool) -> list[str]:
    """Floats as json writes them, or (``whole``) rounded as ``plain`` rounds counts (bytes up,
    others to the nearest) and written as integers; blank and non-finite values null.  Each
    distinct value is written once (most columns hold few: a layout's constants, a GPU's figures)."""
    import numpy as np

    with np.errstate(all="ignore"):
        if whole:
            x = np.ceil(x) if ceil else np.floor(x + 0.5)
        bad = ~np.isfinite(x)
    if blank is not None:
        bad = bad | blank
    safe = np.where(bad, 0.0, x)
    if whole and np.abs(safe).max(initial=0.0) >= 2.0**62:
        texts = [int.__repr__(int(v)) for v in safe.tolist()]
    elif not whole and bool(np.any(np.signbit(safe) & (safe == 0))):
        texts = list(map(float.__repr__, safe.tolist()))  # -0.0 beside 0.0: one distinct value to numpy
    else:
        distinct, inverse = np.unique(safe.astype(np.int64) if whole else safe, return_inverse=True)
        written = list(map(int.__repr__ if whole else float.__repr__, distinct.tolist()))
        texts = np.array(written, dtype=object)[inverse.ravel()].tolist()
    for i in np.flatnonzero(bad).tolist():
        texts[i] = "null"
    return texts
