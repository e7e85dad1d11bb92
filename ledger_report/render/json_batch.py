"""The JSON document of many rows at once: for each row, ``json.dumps(config_document(ledger))``
(compact, ``ensure_ascii`` off) byte for byte, built a column at a time.

The document's keys come from the report spec exactly as ``config_document`` walks it:
``_skeleton`` makes the same dict operations, so keys come in the same order and a key a later
section repeats keeps its first place and its last value.  Fixed texts (labels, sources, the keys)
are compiled into pieces once; each leaf between them is a column of JSON texts over the batch's
rows, dictionary-encoded (``_Coded``: row i's text is ``texts[codes[i]]``), so a value is written
as JSON once per distinct value (bytes and counts rounded as ``plain`` rounds them, numbers as
``json`` writes them).

Rows repeat most of their parts (a layout's constants, a GPU's figures, a model's counts), so runs
of neighbouring leaves are encoded together too: their texts joined once per distinct combination
on the batch (``_collapsed``).  A list (the table lines a row shows, its notes, its warnings) is a
run like any other: an item is its text, preceded by a comma where an earlier item is shown, or
nothing where the row does not show it.  A row is then a few pieces and columns joined.

The texts are held as their UTF-8 bytes, one character a byte (``str.encode("utf-8")`` then
``decode("latin-1")``): joining them copies one byte a character, as ASCII numbers are held, rather
than widening everything a line with a Chinese label touches, and a chunk's bytes are its
``encode("latin-1")``.

Where a value does not fit (a float that is not finite, a type ``json`` would write otherwise, a
message that fails on some row) the batch goes row by row through ``config_document`` instead,
so output and errors are what they always were.
"""

from __future__ import annotations

import functools
import json
import math
import re
from itertools import repeat
from operator import is_not
from typing import Any, Callable, Sequence

import numpy as np

from ..engine import TABLE_SPAN, Batch, combined_codes, first_seen_codes, tabled_codes
from ..model.registry import BOOL, BYTES, FLOAT_UNITS, INT_UNITS, TEXT, WARNING
from ..report import Model, Table
from .document import config_document

_JSON = json.JSONEncoder(ensure_ascii=False).encode  # a str as json.dumps writes it in a document


class _Unusual(Exception):
    """A value the column writer does not write as json.dumps would: the batch goes row by row."""


_ESCAPED = re.compile(r'[\x00-\x1f"\\]')  # what json.dumps (ensure_ascii off) escapes


def _STRING(s: str) -> str:
    """``s`` as json.dumps writes it, held as its UTF-8 bytes (one character a byte): plain
    ASCII quoted as it is."""
    if s.isascii() and not _ESCAPED.search(s):
        return '"' + s + '"'
    text = _JSON(s)
    return text if text.isascii() else text.encode("utf-8").decode("latin-1")


CHUNK_ROWS = 32  # rows joined into one text at once: ~400 KB, then as many bytes, within a core's L2 cache (64 rows: ~5 % slower)


def write_batch(batch: Batch, out: Any, first: bool, progress: Callable[[int], None]) -> None:
    """Write the batch's documents to ``out`` as ``calc --json`` does (",\\n" before each but the
    file's first), ``CHUNK_ROWS`` rows at a time; a batch the column writer cannot write goes row
    by row, so a row that fails fails where it always did, after the rows before it."""
    try:
        parts = _Writer(batch).parts()
    except (
        Exception
    ):  # _Unusual, or a message that raises on some row: the plain path meets it there
        parts = None
    if parts is None:
        for lg in batch.ledgers():
            body = json.dumps(
                config_document(lg), ensure_ascii=False, separators=(",", ":"), allow_nan=False
            )
            out.write(("" if first else ",\n").encode() + body.encode("utf-8"))
            first = False
            progress(1)
        return
    n = len(batch.configs)
    cells, width = _cells(parts, n, "" if first else ",\n")
    for start in range(0, n, CHUNK_ROWS):
        stop = min(start + CHUNK_ROWS, n)
        out.write("".join(cells[start * width : stop * width].tolist()).encode("latin-1"))
        progress(stop - start)


def _cells(parts: list, n: int, lead: str) -> tuple[Any, int]:
    """Every text of the rows' documents in order, row after row, as one object array, and how
    many a row: ",\n" (``lead`` on the first row) joined to the first piece, then each piece or
    column's text on the row."""
    if not parts or type(parts[0]) is not str:
        parts = [""] + parts
    grid = np.empty((n, len(parts)), dtype=object)
    grid[:, 0] = ",\n" + parts[0]
    grid[0, 0] = lead + parts[0]
    for j, p in enumerate(parts[1:], 1):
        grid[:, j] = p if type(p) is str else p.objects()[p.codes]
    return grid.reshape(-1), len(parts)


@functools.lru_cache(
    maxsize=50_000
)  # texts seen again and again (gpu names, dtypes, origins...), bounded
def string_json(s: str) -> str:
    """A text as json.dumps writes it, as UTF-8 bytes."""
    return _STRING(s)


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


# -- columns of texts, dictionary-encoded -------------------------------------------------------------


class _Coded:
    """JSON texts over the batch's rows: row i's is ``texts[codes[i]]``."""

    __slots__ = ("codes", "texts")

    def __init__(self, codes: Any, texts: list[str]) -> None:
        self.codes, self.texts = codes, texts

    def on(self, rows: Any) -> list[str]:
        """The texts of some rows (a slice or an index array)."""
        return list(map(self.texts.__getitem__, self.codes[rows].tolist()))

    def objects(self) -> Any:
        """The texts as an object array (to be taken by the codes at once)."""
        out = np.empty(len(self.texts), dtype=object)
        out[:] = self.texts
        return out

    def hidden_unless(self, shown: Any, text: str = "") -> "_Coded":
        """These texts where ``shown``, ``text`` on the other rows."""
        return _Coded(np.where(shown, self.codes, len(self.texts)), self.texts + [text])


def _constant(text: str, n: int) -> _Coded:
    return _Coded(np.zeros(n, dtype=np.intp), [text])


def _factorized(keys: Sequence[Any], text_of: Callable[[Any], str]) -> _Coded:
    """``text_of`` of each key, written once per distinct key (keys equal as dict keys must
    have the same text: the caller makes sure of it)."""
    codes, distinct = first_seen_codes(np, keys)
    return _Coded(codes, [text_of(k) for k in distinct])


def _texts_coded(texts: Sequence[str]) -> _Coded:
    return _factorized(texts, str)


def _values_coded(vals: Sequence[Any]) -> _Coded:
    """``raw_json`` of each value: texts (and blanks) by value, anything else written on each row
    first (1, 1.0 and True are one dict key but three texts)."""
    if set(map(type, vals)) <= {str, type(None)}:
        return _strings_coded(vals)
    return _texts_coded([raw_json(v) for v in vals])


def _strings_coded(vals: Sequence[str | None]) -> _Coded:
    """Texts (and blanks, null) as JSON, each distinct text written once."""
    codes, distinct = first_seen_codes(np, vals)
    return _Coded(codes, _nullable_json(distinct))


def _nullable_json(vals: list[str | None]) -> list[str]:
    """``strings_json`` of texts among which some are blank (null)."""
    if None not in vals:
        return strings_json(vals)
    texts = iter(strings_json([v for v in vals if v is not None]))
    return ["null" if v is None else next(texts) for v in vals]


_SEP = "\x7f"  # DEL: JSON leaves it as it is, and texts seldom hold it


def strings_json(texts: list[str]) -> list[str]:
    """Each text as ``_STRING`` writes it, all at once: escaping and encoding go character by
    character, so the texts joined by a character that none holds are escaped as one, then split."""
    joined = _SEP.join(texts)
    if len(texts) < 4 or joined.count(_SEP) != len(texts) - 1:
        return list(map(_STRING, texts))
    return ('"' + _STRING(joined)[1:-1].replace(_SEP, '"' + _SEP + '"') + '"').split(_SEP)


_RUN = 8  # leaves encoded together at most


def _collapsed(parts: list, n: int, most: float | None) -> _Coded | None:
    """The parts (pieces and columns) joined, as one column: each distinct combination of the
    columns' texts joined once.  ``None`` (nothing joined) where there would be more than ``most``."""
    first, inverse = combined_codes(
        np, ((p.codes, len(p.texts)) for p in parts if type(p) is not str), n
    )
    if most is not None and len(first) > most:
        return None
    return _Coded(inverse, _documents_at(parts, first))


def _documents_at(parts: list, rows: Any) -> list[str]:
    """Each row's document: the pieces and the columns' texts on those rows (indices), joined."""
    k = len(rows)
    return [
        "".join(t) for t in zip(*[repeat(p, k) if type(p) is str else p.on(rows) for p in parts])
    ]


def _one(parts: list, n: int) -> _Coded:
    """The parts as one column (a list's item, a section that may be null)."""
    parts = _merged(parts)
    columns = [p for p in parts if type(p) is not str]
    if len(columns) == 1:  # its texts between the pieces around it: no combination to look for
        at = next(i for i, p in enumerate(parts) if p is columns[0])
        before, after = "".join(parts[:at]), "".join(parts[at + 1 :])
        return (
            _Coded(columns[0].codes, [before + t + after for t in columns[0].texts])
            if before or after
            else columns[0]
        )
    return _collapsed(parts, n, None)  # type: ignore[return-value]


def _merged(parts: list) -> list:
    """Neighbouring pieces joined into one."""
    out: list = []
    for p in parts:
        if type(p) is str and out and type(out[-1]) is str:
            out[-1] += p
        elif not (type(p) is str and not p and out):
            out.append(p)
    return out


def _runs(parts: list, n: int) -> list:
    """The parts, each run of neighbouring columns with few texts (at most ``_RUN``) joined into
    one column where it then has at most half as many texts as rows; a column with many texts
    stays alone."""
    out: list = []
    run: list = []

    def close() -> None:
        k = len(run)
        while k and type(run[k - 1]) is str:  # pieces after the run's last column stay outside it
            k -= 1
        body, tail = run[:k], run[k:]
        joined = _collapsed(body, n, n / 2) if sum(type(p) is not str for p in body) > 1 else None
        out.extend(body if joined is None else [joined])
        out.extend(tail)
        run.clear()

    for p in _merged(parts):
        if type(p) is str:
            (run if run else out).append(p)
        elif len(p.texts) > n / 4:
            close()
            out.append(p)
        else:
            run.append(p)
            if sum(type(q) is not str for q in run) >= _RUN:
                close()
    close()
    return _merged(out)


def _absorbed(parts: list, n: int) -> list:
    """The parts with each piece joined to the texts of a column beside it (the one before, else
    the one after) that has at most half as many texts as rows: a row's document then has a
    text less to join, for a copy of the piece a text."""
    out: list = []
    for p in parts:
        if type(p) is str and out and type(out[-1]) is not str and len(out[-1].texts) <= n / 2:
            out[-1] = _Coded(out[-1].codes, [t + p for t in out[-1].texts])
        elif type(p) is not str and out and type(out[-1]) is str and len(p.texts) <= n / 2:
            out[-1] = _Coded(p.codes, [out[-1] + t for t in p.texts])
        else:
            out.append(p)
    return out


# -- the document's skeleton ------------------------------------------------------------------------


class _Fixed:
    """A value the same on every row (a line's state name, its label): written into the pieces."""

    def __init__(self, value: Any) -> None:
        self.json = raw_json(value)


class _Leaf:
    def coded(self, w: "_Writer") -> _Coded:  # pragma: no cover - interface
        raise NotImplementedError

    def parts(self, w: "_Writer") -> list:
        return [self.coded(w)]


_SLOT = "\0slot\0"  # where a slot goes in a compiled template (JSON text never holds a raw NUL)


class _Template:
    """A JSON object as its fixed texts (``pieces``) with the slots between them."""

    def __init__(self, node: dict) -> None:
        self.slots: list[Any] = []
        self.pieces = self._compile(node).split(_SLOT)

    def _compile(self, node: Any) -> str:
        if isinstance(node, dict):
            return (
                "{" + ",".join(self._key(k) + ":" + self._compile(v) for k, v in node.items()) + "}"
            )
        if isinstance(node, _Fixed):
            return node.json
        self.slots.append(node)
        return _SLOT

    @staticmethod
    def _key(k: Any) -> str:
        if type(k) is not str:
            raise _Unusual(repr(k))
        return _STRING(k)

    def parts(self, w: "_Writer") -> list:
        out: list = [self.pieces[0]]
        for slot, piece in zip(self.slots, self.pieces[1:]):
            out += slot.parts(w)
            out.append(piece)
        return _runs(out, w.n)


class _Value(_Leaf):
    """``plain(values[key], unit)`` as JSON."""

    def __init__(self, key: str) -> None:
        self.key = key

    def coded(self, w):
        return w.value(self.key)


class _Input(_Leaf):
    """An input column as the row gives it (``None`` for an empty cell)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def coded(self, w):
        return _values_coded(w.batch.inputs(self.name))


class _PerRank(_Leaf):
    """``params_per_rank``: the row's own value where it gives one, else the computed one."""

    def coded(self, w):
        col, computed = w.batch.inputs("params_per_rank"), w.value("params_per_rank")
        given = _given(col)
        if not given.any():
            return computed
        own = _values_coded(col)
        return _Coded(
            np.where(given, own.codes + len(computed.texts), computed.codes),
            computed.texts + own.texts,
        )


class _Name(_Leaf):
    def coded(self, w):
        col = w.batch.inputs("name")
        return _Coded(
            np.arange(len(col)), strings_json(list(map(str, col)))
        )  # not remembered: every row has its own


@functools.cache
def _keys_json(names: tuple) -> list[str]:
    """Each name as a JSON key, its colon after it."""
    return [_STRING(k) + ":" for k in names]


def _given(col: Sequence[Any]) -> Any:
    """Whether each row gives the column (a column no row gives, or every row, at once)."""
    blank = col.count(None)
    if blank in (0, len(col)):
        return np.full(len(col), blank == 0)
    return np.fromiter(map(is_not, col, repeat(None)), dtype=bool, count=len(col))


class _List:
    """A list: each item where the row shows it, a comma before it where an earlier one is shown."""

    brackets = ("[", "]")

    def parts(self, w: "_Writer") -> list:
        items = self.items(w)
        if not items:
            return ["".join(self.brackets)]
        out: list = [self.brackets[0]]
        earlier = np.zeros(w.n, dtype=bool)  # whether the row shows an earlier item
        for c, s in items:
            c, before, earlier = c.hidden_unless(s), earlier, earlier | s
            if (
                len(c.texts) > w.n / 4
            ):  # many texts: the comma a column of its own, not each text again
                out += [_Coded((before & s).astype(np.intp), ["", ","]), c]
                continue
            out.append(
                _Coded(
                    c.codes + len(c.texts) * before,
                    c.texts + [("," + t) if t else "" for t in c.texts],
                )
            )
        out.append(self.brackets[1])
        return _runs(out, w.n)

    def items(self, w: "_Writer") -> list[tuple[_Coded, Any]]:  # pragma: no cover - interface
        raise NotImplementedError


class _InputsFrom(_List):
    """``{column: origin}`` for the columns the row gives, in column order: an item a column,
    "row" or the model that filled it."""

    brackets = ("{", "}")

    def items(self, w):
        from ..config import COLUMN_NAMES

        b = w.batch
        out = []
        filled = _filled(b.origins())
        for name, key in zip(COLUMN_NAMES, _keys_json(COLUMN_NAMES)):
            given = _given(b.inputs(name))
            item = _Coded(given.astype(np.intp), ["", key + '"row"'])
            for rows, origin in filled.get(name, ()):
                text = key + raw_json(origin)
                if text not in item.texts:
                    item.texts.append(text)
                item.codes[rows] = item.texts.index(text)
            out.append((item, given))
        return out


def _filled(origins: Sequence[Any]) -> dict[str, list[tuple[list[int], str]]]:
    """For each column a model filled on some rows: those rows and the model, for each set of
    origins the rows have (rows with the same origins taken together: there are few)."""
    codes, kinds = first_seen_codes(np, [tuple(o.items()) for o in origins])
    rows: list[list[int]] = [[] for _ in kinds]
    for i, c in enumerate(codes.tolist()):
        rows[c].append(i)
    filled: dict[str, list[tuple[list[int], str]]] = {}
    for kind, at in zip(kinds, rows):
        for name, origin in kind:
            filled.setdefault(name, []).append((at, origin))
    return filled


class _Lines(_List):
    """A table: the list of its lines that the row shows."""

    def __init__(self, lines: list[tuple[str, _Template]]) -> None:
        self.lines = lines

    def items(self, w):
        every = np.ones(w.n, dtype=bool)
        return [
            (_one(tmpl.parts(w), w.n), w.shown(show) if show else every)
            for show, tmpl in self.lines
        ]


class _Notes(_List):
    """The assumption sentences the row shows (``suffix`` "_zh": in Chinese), as they are."""

    def __init__(self, keys: tuple[str, ...], suffix: str) -> None:
        self.keys, self.suffix = keys, suffix

    def items(self, w):
        out = []
        for k in self.keys:
            sh = w.shown(k + "_shown")
            out.append((w.where(k + self.suffix, sh), sh))
        return out


class _Warnings(_List):
    """Each warning rule the row breaks, as ``document.warnings`` words it."""

    def items(self, w):
        out = []
        b = w.batch
        for c in w.model.registry.constraints:
            if c.severity != WARNING:
                continue
            broken = np.array([v is False for v in b.column(c.ok)], dtype=bool)
            out.append((w.where(c.message, broken), broken))
        return out


class _NullUnless(_Leaf):
    """A section's object, or null where the row does not show the section."""

    def __init__(self, show: str, obj: _Template) -> None:
        self.show, self.obj = show, obj

    def coded(self, w):
        if not self.show:
            return _constant("null", w.n)
        shown = w.shown(self.show)
        if shown.all() or not all(type(s) is _Value for s in self.obj.slots):
            return _one(self.obj.parts(w), w.n).hidden_unless(shown, "null")
        at = np.flatnonzero(shown)  # the section's values on the rows that show it only
        some = _one(self.obj.parts(_OnRows(w, at)), len(at)) if len(at) else _Coded(at, [])
        codes = np.full(w.n, len(some.texts), dtype=np.intp)
        codes[at] = some.codes
        return _Coded(codes, some.texts + ["null"])


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
        inputs[col] = (
            (_PerRank() if col == "params_per_rank" else _Value(col)) if col in reg else _Input(col)
        )
    out: dict[str, Any] = {
        "name": _Name(),
        "notes": _Input("notes"),
        "inputs": inputs,
        "inputs_from": _InputsFrom(),
    }
    for sec in spec.sections:
        if isinstance(sec, Table):
            out[sec.json] = _Lines([(ln.show, _line(reg, sec, ln)) for ln in sec.lines])
            out.update({f.name: _Value(f.key) for f in sec.total})
            continue
        obj = {
            f.name: ({n: _Value(k) for n, k in f.items} if f.items else _Value(f.key))
            for f in sec.figures
        }
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
    """A batch's documents as pieces and columns; each quantity's texts computed once."""

    def __init__(self, batch: Batch) -> None:
        self.batch, self.model, self.n = batch, batch.model, len(batch.configs)
        self._shown: dict[str, Any] = {}
        self._values: dict[str, _Coded] = {}

    def parts(self) -> list:
        """Pieces (str) and columns (``_Coded``) that, joined, give each row's document."""
        return _absorbed(_template(self.model).parts(self), self.n)

    def value(self, key: str) -> _Coded:
        """``plain`` of the quantity as JSON on each row."""
        hit = self._values.get(key)
        if hit is None:
            hit = self._values[key] = _plain_coded(self.batch, key, self.model.registry[key].unit)
        return hit

    def shown(self, key: str) -> Any:
        """Whether each row shows a line or a section (the key's truth), as a bool array."""
        hit = self._shown.get(key)
        if hit is None:
            got = self.batch.floats(key) if self.batch.numeric(key) else None
            if got is not None:  # bool(v) of each number (a NaN is true), a blank false
                x, blank = got
                hit = x != 0 if blank is None else (x != 0) & ~blank
            else:
                hit = np.array([bool(v) for v in self.batch.column(key)], dtype=bool)
            self._shown[key] = hit = np.array(hit, dtype=bool)
        return hit

    def where(self, key: str, rows: Any) -> _Coded:
        """A quantity as ``raw_json`` writes it on the rows of the mask ``rows`` (computed there
        only), "" on the others."""
        at = np.flatnonzero(rows)
        some = self.on_rows(key, at.tolist())
        codes = np.zeros(self.n, dtype=np.intp)
        codes[at] = some.codes + 1
        return _Coded(codes, [""] + some.texts)

    def on_rows(self, key: str, rows: list[int]) -> _Coded:
        """A quantity's values on some rows as ``raw_json`` writes them, computing a text
        quantity there only."""
        b = self.batch
        if key in b.text_keys:
            return _composed(*b.text_coded(key, rows), _values_coded)
        col = b.column(key)
        return _values_coded([col[i] for i in rows])


class _OnRows(_Writer):
    """The writer on some rows of the batch only (``rows``: their positions), for a section
    of values that shows there: a text computed on those rows alone."""

    def __init__(self, w: _Writer, rows: Any) -> None:
        super().__init__(w.batch)
        self.n, self.whole, self.rows = len(rows), w, rows

    def value(self, key: str) -> _Coded:
        hit = self._values.get(key)
        if hit is None:
            if key in self.batch.text_keys and self.model.registry[key].unit == TEXT:
                hit = _composed(*self.batch.text_coded(key, self.rows.tolist()), _texts_json)
            else:
                whole = self.whole.value(key)
                hit = _Coded(whole.codes[self.rows], whole.texts)
            self._values[key] = hit
        return hit

    def shown(self, key: str) -> Any:
        return self.whole.shown(key)[self.rows]

    def where(
        self, key: str, rows: Any
    ) -> _Coded:  # pragma: no cover - a section of values has no list
        raise NotImplementedError


def _plain_coded(batch: Batch, key: str, unit: str) -> _Coded:
    """``plain(value, unit)`` on each row, as JSON."""
    n = len(batch.configs)
    if unit == BOOL and batch.numeric(key):
        got = batch.floats(key)
        if got is None:
            return _constant("null", n)
        x, blank = got
        truth = (x != 0).astype(np.intp)  # bool(v): a NaN is true
        return _Coded(
            truth if blank is None else np.where(blank, 2, truth), ["false", "true", "null"]
        )
    if unit == BOOL:
        return _factorized(
            batch.column(key), lambda v: "null" if v is None else ("true" if v else "false")
        )
    if unit == TEXT:
        if key in batch.text_keys:
            return _composed(*batch.coded_column(key), _texts_json)
        return _texts_json(batch.column(key))
    if unit not in INT_UNITS and unit not in FLOAT_UNITS:
        return _values_coded(batch.column(key))
    got = batch.floats(key)
    if got is None:
        return _constant("null", n)
    x, blank = got
    if x.strides == (0,) and (blank is None or blank.strides == (0,)):  # one value on every row
        one = _numbers_coded(
            x[:1], None if blank is None else blank[:1], unit in INT_UNITS, unit == BYTES
        )
        return _constant(one.texts[one.codes[0]], n)
    return _numbers_coded(x, blank, whole=unit in INT_UNITS, ceil=unit == BYTES)


def _texts_json(col: Sequence[Any]) -> _Coded:
    """Texts (or blanks) as JSON, each distinct text once."""
    if col and type(col[0]) is str and col.count(col[0]) == len(col):  # one text on every row
        return _constant(_STRING(col[0]), len(col))
    if set(map(type, col)) <= {str, type(None)}:
        return _strings_coded(col)
    return _texts_coded(["null" if v is None else string_json(str(v)) for v in col])


def _composed(inverse: list[int] | None, values: list, coded: Callable[[list], _Coded]) -> _Coded:
    """``coded`` of the distinct values, on each row: row i has value ``inverse[i]`` (``None``:
    the values are the rows')."""
    if inverse is None:
        return coded(values)
    if set(map(type, values)) <= {
        str,
        type(None),
    }:  # as both codings write them, without looking for repeats
        return _Coded(np.asarray(inverse, dtype=np.intp), _nullable_json(values))
    got = coded(values)
    return _Coded(got.codes[np.asarray(inverse, dtype=np.intp)], got.texts)


def _numbers_coded(x: Any, blank: Any, whole: bool, ceil: bool) -> _Coded:
    """Floats as json writes them, or (``whole``) rounded as ``plain`` rounds counts (bytes up,
    others to the nearest) and written as integers; blank and non-finite values null.  Each
    distinct value is written once (most columns hold few: a layout's constants, a GPU's figures)."""
    with np.errstate(all="ignore"):
        if whole:
            x = np.ceil(x) if ceil else np.floor(x + 0.5)
        bad = ~np.isfinite(x)
    if blank is not None:
        bad = bad | blank
    some_bad = bool(bad.any())
    safe = np.where(bad, 0.0, x) if some_bad else x
    if whole and np.abs(safe).max(initial=0.0) >= 2.0**62:
        coded = _texts_coded([int.__repr__(int(v)) for v in safe.tolist()])
    elif not whole and _negative_zero(safe):
        coded = _texts_coded(
            list(map(float.__repr__, safe.tolist()))
        )  # -0.0 beside 0.0: one distinct value to numpy
    else:
        distinct, inverse = _distinct_sorted(safe.astype(np.int64) if whole else safe)
        coded = _Coded(
            inverse, list(map(int.__repr__ if whole else float.__repr__, distinct.tolist()))
        )
    return coded.hidden_unless(~bad, "null") if some_bad else coded


def _distinct_sorted(x: Any) -> tuple[Any, Any]:
    """``np.unique(x, return_inverse=True)`` (the distinct values in order, each row's place among
    them), without the sort where it is not needed: one value on every row, or whole numbers
    close together (``tabled_codes``, the values less the least as codes)."""
    if not len(x):
        return x, np.zeros(0, dtype=np.intp)
    lo, hi = x.min(), x.max()
    if lo == hi:
        return x[:1], np.zeros(len(x), dtype=np.intp)
    if x.dtype.kind != "i" or int(hi) - int(lo) >= TABLE_SPAN * len(x):
        distinct, inverse = np.unique(x, return_inverse=True)
        return distinct, inverse.reshape(-1)
    rows, inverse = tabled_codes(np, x - lo, int(hi) - int(lo) + 1)
    return x[rows], inverse


def _negative_zero(x: Any) -> bool:
    """Whether some value is -0.0 (looked for among the zeros only)."""
    zero = x == 0
    return bool(zero.any()) and bool(np.signbit(x[zero]).any())
