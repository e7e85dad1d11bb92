"""The model fill-in: the architecture columns a row's ``model`` cell names (an entry of the
shipped catalogue, or a Hugging Face ``config.json``), each with where it came from."""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Any

from .cells import Bad, norm, show


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
                return hf_config.read_config_json(path), f"config.json {text}"
            except hf_config.UnsupportedConfig as exc:
                raise Bad(exc.expected, f"{exc.found} (in {text})") from None
        entry = catalogue.find_model(text)
        if entry is None:
            near = difflib.get_close_matches(text, catalogue.MODEL_NAMES, n=1, cutoff=0.5)
            hint = f" — did you mean {near[0]}?" if near else ""
            raise Bad(
                "a model of the catalogue (ledger-report models) or a path to a config.json",
                show(spec) + hint,
            )
        return dict(entry.columns), f"model {entry.name}"
