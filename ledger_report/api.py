"""The library face: read rows, compute them, build the outputs, plan, and look at them as DataFrames.

    import ledger_report as lr
    ledgers = lr.compute(lr.read("inputs/examples.csv"))
    configs, states = lr.to_frame(ledgers)           # pandas DataFrames
    lr.build("inputs/examples.csv", out_dir="out")    # the same files as `ledger-report build`

Mappings are validated exactly as rows of a file are (``read([{"name": "a", "params_total": "7B"}])``).
The command line is a thin layer over these functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from .config import Config
from .engine import Ledger, compute_many

FORMATS = ("xlsx", "pdf", "json")
TOP_PLANS = 5  # plans kept per input row unless the caller says (`ledger-report plan --top`)
Progress = Callable[[int, int], None]


def read(source: str | Path | Iterable[Mapping[str, Any]]) -> list[Config]:
    """Configurations from a CSV/XLSX path, or from mappings (validated like a file's rows)."""
    from . import inputs

    if isinstance(source, (str, Path)):
        return inputs.read_configs(source)
    return inputs.configs_from_records(list(source), source="mappings")


def compute(
    configs: Config | Iterable[Config] | str | Path, progress: Progress | None = None
) -> list[Ledger]:
    """The ledger of each configuration (a path or mappings are read first)."""
    if isinstance(configs, Config):
        configs = [configs]
    elif isinstance(configs, (str, Path)) or (
        isinstance(configs, list) and configs and isinstance(configs[0], Mapping)
    ):
        configs = read(configs)
    configs = list(configs)
    out: list[Ledger] = []
    for lg in compute_many(configs):
        out.append(lg)
        if progress and (len(out) % 1000 == 0 or len(out) == len(configs)):
            progress(len(out), len(configs))
    return out


def outputs(
    ledgers: Sequence[Ledger],
    stem: str,
    out_dir: str | Path,
    formats: Sequence[str] = FORMATS,
    *,
    lang: str = "en",
    jobs: int | None = None,
    progress: Any = None,
) -> dict[Path, bytes]:
    """The bytes of each output file, by path (nothing is written)."""
    from .render.document import document

    out = Path(out_dir)
    files: dict[Path, bytes] = {}
    if "json" in formats:
        files[out / f"{stem}.json"] = json_bytes(document(ledgers))
    if "xlsx" in formats:
        from .render.workbook import render_xlsx

        if progress:
            progress.stage(f"writing the workbook ({len(ledgers):,} configurations)")
        files[out / f"{stem}.xlsx"] = render_xlsx(list(ledgers), lang=lang)
    if "pdf" in formats:
        from .render.handout import render_pdf

        if progress:
            progress.stage(f"rendering the handout ({len(ledgers) + 1:,}+ pages)")
        files[out / f"{stem}.pdf"] = render_pdf(
            ledgers, lang=lang, jobs=jobs, progress=getattr(progress, "pages", None)
        )
    return files


def build(
    source: str | Path | Sequence[Ledger],
    out_dir: str | Path = "out",
    formats: Sequence[str] = FORMATS,
    *,
    lang: str = "en",
    jobs: int | None = None,
    stem: str | None = None,
    progress: Any = None,
) -> list[Path]:
    """Compute (if need be) and write the outputs atomically; returns the paths written."""
    from .render.output import write_outputs

    inputs: list[Path] = []
    if isinstance(source, (str, Path)):
        inputs = [Path(source)]
        stem = stem or Path(source).stem
        ledgers = compute(source, progress=getattr(progress, "compute", None))
    else:
        ledgers = list(source)
        stem = stem or "ledgers"
    files = outputs(ledgers, stem, out_dir, formats, lang=lang, jobs=jobs, progress=progress)
    return write_outputs(files, inputs=inputs)


def plan(
    source: str | Path | Iterable[Config],
    top: int = TOP_PLANS,
    progress: Progress | None = None,
    prices: Mapping[str, float] | str | Path | None = None,
) -> dict[str, Any]:
    """The planner's document for each row, as ``ledger-report plan`` gives it (the same default
    ``top``); ``prices``: GPU type -> price per GPU-hour, or the path of a gpu,price CSV."""
    from .planner import plan_document, read_prices

    configs = read(source) if isinstance(source, (str, Path)) else list(source)
    if isinstance(prices, (str, Path)):
        prices = read_prices(prices)
    return plan_document(configs, top=top, progress=progress, prices=prices)


def to_frame(ledgers: Iterable[Ledger]):
    """Two pandas DataFrames: one row per configuration with a column per registry quantity, and
    one row per state line (configuration, state, part, dtype, bytes per parameter, sharded,
    shard group, parameters and bytes on the rank, location)."""
    import pandas as pd

    from .engine import plain
    from .render.document import config_document

    rows, lines = [], []
    for lg in ledgers:
        reg = lg.model.registry
        rows.append({"name": lg.name, **{q.key: plain(lg.values[q.key], q.unit) for q in reg}})
        for s in config_document(lg)["states"]:
            lines.append(
                {"name": lg.name, **{k: v for k, v in s.items() if k not in ("label", "basis")}}
            )
    return pd.DataFrame(rows), pd.DataFrame(lines)


def json_bytes(doc: Mapping[str, Any]) -> bytes:
    import json

    return (json.dumps(doc, ensure_ascii=False, indent=2, allow_nan=False) + "\n").encode("utf-8")


def reconcile(
    source: str | Path,
    runs: Sequence[str | Path],
    *,
    row: str | None = None,
    out_dir: str | Path | None = None,
    update: str | Path | None = None,
) -> dict[str, Any]:
    """``ledger-report reconcile``: one row's ledger against probe files or training logs
    (``ledger_report/reconcile.py``); writes ``out_dir/<stem>-reconcile.json`` and ``.txt``, and
    with ``update`` the input rows as a CSV with measured_peak_gb, measured_counter and mfu filled."""
    from . import reconcile as rc
    from .render.output import write_outputs

    configs = read(source)
    read_runs = [rc.read_run(r) for r in runs]
    ledger = rc.pick_row(compute(configs), read_runs, row, str(source))
    doc = rc.reconcile(ledger, read_runs)
    files: dict[Path, bytes] = {}
    if out_dir is not None:
        stem = Path(out_dir) / f"{Path(source).stem}-reconcile"
        files[stem.with_suffix(".json")] = json_bytes(doc)
        files[stem.with_suffix(".txt")] = rc.render_text(doc).encode("utf-8")
    if update is not None:
        files[Path(update)] = rc.updated_csv(configs, ledger.name, doc["update"])
    if files:
        write_outputs(files, inputs=[source, *runs])
    return doc
