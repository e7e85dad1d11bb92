"""Architecture cells that follow the ``model`` cell: written as the values the reader filled
in, they would keep the old architecture when someone changes the ``model`` cell.

So the workbook carries the models (a hidden ``Models`` sheet, lookups.py: the catalogue by name,
and each row's model as the row wrote it, with the columns it filled), and each architecture
cell that came from the row's model is a formula looking its column up by the ``model`` cell,
cached with the value read; a model the sheet does not hold leaves it empty, and the check names
the missing columns.  A column the row typed itself, different from its model's, stays a value
(the row wins, as when it is read), and so does an empty one (a rebuild reads the model again)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from ...catalogue import MODELS, find_model
from ...config import MODEL_FILLS, Config
from ...inputs.fill import config_path
from .layout import INPUT_LETTERS, _name


def model_rows(configs: Iterable[Config]) -> dict[str, dict[str, Any]]:
    """Model text -> the columns it fills: the catalogue by name, then each row's model as the
    row wrote it (MATCH ignores case, so keys equal but for case are one)."""
    rows = {m.name: dict(m.columns) for m in MODELS.values()}
    seen = {k.casefold() for k in rows}
    for cfg in configs:
        spec = cfg.get("model")
        if not isinstance(spec, str) or not spec or spec.casefold() in seen:
            continue
        entry = find_model(spec)
        filled = (
            dict(entry.columns)
            if entry is not None
            else {c: cfg.get(c) for c in cfg.origins if c in MODEL_FILLS}
        )
        if filled:
            rows[spec] = filled
            seen.add(spec.casefold())
    return rows


def following(cfg: Config, models: dict[str, dict[str, Any]]) -> set[str]:
    """The architecture columns of a row that follow its ``model`` cell: those its model filled,
    or fills with the value the row has.  An empty column stays empty (a formula whose saved
    result is blank is not a value the reader takes)."""
    spec = cfg.get("model")
    key = next(
        (k for k in models if isinstance(spec, str) and k.casefold() == spec.casefold()), None
    )
    if key is None:
        return set()
    return {
        c
        for c in MODEL_FILLS
        if cfg.get(c) is not None and (c in cfg.origins or cfg.get(c) == models[key].get(c))
    }


def relocated(cfg: Config, folders: tuple[Any, Any] | None) -> Config:
    """The row with its config.json ``model`` path (relative to the folder it was read from,
    ``folders[0]``) made relative to the workbook's folder (``folders[1]``), as the reader
    resolves it; absolute where no relative path leads there (another drive)."""
    spec = cfg.get("model")
    if folders is None or not isinstance(spec, str) or config_path(spec, None) is None:
        return cfg
    path = Path(spec.replace("\\", "/"))
    if path.is_absolute():
        return cfg
    target = (Path(folders[0]) / path).resolve()
    try:
        moved = Path(os.path.relpath(target, Path(folders[1]).resolve())).as_posix()
    except ValueError:
        moved = target.as_posix()
    return cfg if moved == spec else cfg.replace(model=moved)


def lookup_formula(column: str, row: int) -> str:
    """The formula of an architecture cell: its column of the row's model, blank where the model
    leaves it empty or the Models sheet does not hold the model."""
    model = f"${INPUT_LETTERS['model']}{row}"
    found = f"INDEX({_name('models', column)},MATCH({model},{_name('models', None)},0))"
    return f'IFERROR(IF({found}="","",{found}),"")'
