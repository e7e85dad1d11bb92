"""The model fill-in: the architecture columns a row's ``model`` cell names (an entry of the
shipped catalogue, or a Hugging Face ``config.json``), each with where it came from."""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Any

from ..config import ALIAS_SOURCES, ALIAS_TABLE, COLUMN_BY_NAME
from .cells import Bad, convert, norm, show

# column -> the Hugging Face config.json keys that give it (data/aliases.csv), for messages
_HF_KEYS: dict[str, list[str]] = {}
for _alias in ALIAS_TABLE:
    if _alias.source == ALIAS_SOURCES["hugging_face"]:
        _HF_KEYS.setdefault(_alias.column, []).append(repr(_alias.name))


def config_path(spec: str, folder: Path | None) -> Path | None:
    """The config.json file a ``model`` cell names (a path, relative to the input file's folder),
    or None where the cell names a model of the catalogue: the one rule for both readings."""
    text = norm(spec)
    if not (text.lower().endswith(".json") or "/" in text or "\\" in text):
        return None
    path = Path(text.replace("\\", "/"))
    return path if path.is_absolute() else (folder or Path.cwd()) / path


class Models:
    """The architecture columns a ``model`` cell names: a catalogue entry, or a Hugging Face
    config.json (a path relative to the input file's folder), read once per file."""

    def __init__(self, folder: Path | None):
        self.folder = folder
        self.columns = functools.cache(self._resolve)  # one dict per model: not to be changed

    def _resolve(self, spec: str) -> tuple[dict[str, Any], str]:
        from .. import catalogue, hf_config

        text = norm(spec)
        path = config_path(spec, self.folder)
        if path is not None:
            try:
                columns = hf_config.read_config_json(path)
            except hf_config.UnsupportedConfig as exc:
                raise Bad(exc.expected, f"{exc.found} (in {text})") from None
            return _as_cells(columns, text), f"config.json {text}"
        entry = catalogue.find_model(text)
        if entry is None:
            near = difflib.get_close_matches(text, catalogue.MODEL_NAMES, n=1, cutoff=0.5)
            hint = f" — did you mean {near[0]}?" if near else ""
            raise Bad(
                "a model of the catalogue (ledger-report models) or a path to a config.json",
                show(spec) + hint,
            )
        return dict(entry.columns), f"model {entry.name}"


def _as_cells(columns: dict[str, Any], text: str) -> dict[str, Any]:
    """A config.json's columns through the rule a cell of each column meets (``cells.convert``:
    its kind and its range in ``data/columns.csv``), so that a value the file could not hold in
    a cell is refused on the row's ``model`` cell too, naming the key (or column) and the file."""
    checked = {}
    for column, value in columns.items():
        try:
            checked[column] = convert(COLUMN_BY_NAME[column], value)
        except Bad as exc:
            keys = _HF_KEYS.get(column, [])
            key = ", ".join(keys[:-1]) + " or " + keys[-1] if len(keys) > 1 else "".join(keys)
            named = f"{key} ({column})" if key else column
            raise Bad(f"{named} {exc.expected}", f"{exc.found} (in {text})") from None
    return checked
