"""The library face: read rows, compute them, build the outputs, plan, and look at them as tables.

    import ledger_report as lr
    ledgers = lr.compute("inputs/examples.csv")       # or a DataFrame, mappings, a dict, Configs
    sweep = lr.to_frame("inputs/examples.csv")        # pandas: a row per configuration
    lr.build("inputs/examples.csv", out_dir="out")    # the same files as `ledger-report build`

Every function that takes rows takes what a notebook holds: a .csv/.xlsx path, a ``Config``, a
``Ledger``, a mapping (one row), a pandas DataFrame, or any iterable (list, tuple, generator) of
those, mixed.  Mappings are checked exactly as rows of a file are, the n-th item being row n in
messages; ``None``, NaN and pandas' NA are empty cells, and numpy scalars count as the Python
values they hold.  The command line is a thin layer over these functions.
"""

from __future__ import annotations

import math
import numbers
import os
import pickle
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Sequence

import numpy as np

from . import halves
from .catalogue import GPUS, MODELS
from .config import LANGS, Config
from .engine import CHUNK_ROWS, Ledger, compute_many, ledger_table, table_keys
from .engine import compute as compute_one
from .engine import table as engine_table
from .errors import InputError, OutputError, Problem
from .inputs import config_from_mapping, configs_from_records, name_key, read_configs
from .inputs.fill import config_path
from .inputs.prices import checked_prices, read_prices
from .model.evaluate import text_codes
from .planner import MAX_CANDIDATES, MAX_TOP, TOP_PLANS, plan_document  # noqa: F401 (for cli.py)
from .progress import Progress, counter
from .render.workers import JobsError, default_jobs, no_cyclic_gc  # noqa: F401 (for cli.py)

FORMATS = ("xlsx", "pdf", "json")
Rows = Any  # a path, a Config, a Ledger, a mapping, a DataFrame, or an iterable of those
SOURCES = (
    "a .csv/.xlsx path (str or Path), a DataFrame, a mapping of column names to values (one row), "
    "a Config, a Ledger, or a list or other iterable of those"
)
MAX_PATH_CHARS = 300  # a str source longer than this (or with a line break) that names no file


def _found(value: Any, most: int = 80) -> str:
    """``value`` as a message shows it: its repr (cut to ``most`` characters) and its type."""
    shown = repr(value)
    if len(shown) > most:
        shown = shown[: most - 1] + "…"
    return shown if value is None else f"{shown} ({type(value).__name__})"


def _refused(argument: str, expected: str, value: Any) -> InputError:
    """The error for an argument out of its range, naming it, what it takes and what it got."""
    return InputError(Problem(argument, None, None, expected, _found(value)))


def checked_formats(formats: str | Iterable[str], argument: str = "formats") -> list[str]:
    """The outputs asked for, as ``build --format`` reads them: names of ``FORMATS`` in any case
    (blank ones skipped), as a comma-separated string or a list, each kept once in the order
    given; none, or one not in ``FORMATS``, is refused naming ``argument``."""
    items = formats.split(",") if isinstance(formats, str) else formats
    names: list[Any] = []
    if isinstance(items, Iterable) and not isinstance(items, (bytes, Mapping)):
        names = [f.strip().lower() if isinstance(f, str) else None for f in items]
    wanted = list(dict.fromkeys(f for f in names if f != ""))
    if not wanted or any(f not in FORMATS for f in wanted):
        listed = ", ".join(FORMATS)
        kind = "a comma-separated list" if isinstance(formats, str) else "a list of one or more"
        raise _refused(argument, f"{kind} of {listed} (any case)", formats)
    return wanted


def _whole(argument: str, value: Any, most: int | None = None) -> int:
    """``value``, a whole number from 1 to ``most`` (bool and text refused)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if 1 <= value and (most is None or value <= most):
            return int(value)
    span = f"from 1 to {most:,}" if most is not None else "at least 1"
    raise _refused(argument, f"a whole number, {span}", value)


def _stem(stem: Any) -> str:
    """``stem``: a file name without its extension, written in ``out_dir`` and nowhere else."""
    seps = {"/", "\\", os.sep, os.altsep} - {None}
    plain = isinstance(stem, str) and stem not in ("", ".", "..") and "\0" not in stem
    if not plain or any(sep in stem for sep in seps):
        expected = "a file name without its extension: not empty, not . or .., no / or \\"
        raise _refused("stem", expected, stem)
    return stem


def read(source: Rows, lines: range | None = None) -> list[Config]:
    """The configurations ``source`` holds, each checked as a row of a file is (of a CSV file,
    with ``lines``, those that begin on those physical lines)."""
    with no_cyclic_gc():  # ~100,000 rows' objects, none in a cycle: no collection walks them
        if isinstance(source, (str, Path)):
            return read_configs(_path(source), lines)
        label = "DataFrame" if _is_frame(source) else "mappings"  # as messages name the source
        items = _items(source)
        records = [(n, _record(x)) for n, x in enumerate(items, 1) if not isinstance(x, Config)]
        read_back = iter(_checked(records, label))
        configs = [x if isinstance(x, Config) else next(read_back) for x in items]
    _names_unique(configs, items)
    return configs


def _items(source: Rows) -> list[Any]:
    """``source`` as a list of rows (each a Config, a Ledger's Config, or a mapping)."""
    if _is_frame(source):
        if any(n is not None for n in source.index.names):  # set_index("name"): a column too
            source = source.reset_index()
        source = source.to_dict("records")
    elif type(source).__name__ == "Series" and hasattr(source, "to_dict"):  # one row (df.iloc[0])
        source = [source.to_dict()]
    elif isinstance(source, (Config, Mapping, Ledger)):
        source = [source]
    elif isinstance(source, (str, bytes)) or not isinstance(source, Iterable):
        raise _refused("source", SOURCES, source)
    items = [x.config if isinstance(x, Ledger) else x for x in source]
    for n, x in enumerate(items, 1):
        if not isinstance(x, (Config, Mapping)) and not hasattr(x, "to_dict"):
            expected = "a Config, a Ledger or a mapping of column names to values"
            raise InputError(Problem("source", n, None, expected, _found(x)))
    return items


def _path(source: str | Path) -> str | Path:
    """A str or Path source as a file's path; a str that names no file and holds a line break or
    more than ``MAX_PATH_CHARS`` characters is refused as text (CSV, most likely), shown cut."""
    long = isinstance(source, str) and ("\n" in source or len(source) > MAX_PATH_CHARS)
    if long and not os.path.exists(source):  # (False, not an error, for a name the OS refuses)
        expected = (
            "the path of a .csv or .xlsx file (for CSV text, write it to a file or pass "
            "pandas.read_csv(io.StringIO(text)))"
        )
        shown = repr(source[:60]) + ("…" if len(source) > 60 else "")
        found = f"{len(source):,} characters of text that look like CSV, not a file name: {shown}"
        raise InputError(Problem("source", None, None, expected, found))
    return source


def _is_frame(x: Any) -> bool:
    return type(x).__name__ == "DataFrame" and hasattr(x, "to_dict")


def _record(x: Any) -> dict[str, Any]:
    """A mapping (or a pandas Series) as a row: empty values as None, numpy scalars as Python's."""
    pairs = x.to_dict().items() if hasattr(x, "to_dict") else x.items()
    return {k: _cell(v) for k, v in pairs}


def _number(v: Any) -> Any:
    """A numpy scalar as the Python value it holds (NaN kept, as a message shows it)."""
    return v.item() if type(v).__module__ == "numpy" and hasattr(v, "item") else v


def _cell(v: Any) -> Any:
    v = _number(v)  # np.bool_, np.int64, np.float64, np.str_ as bool, int, float, str
    if type(v).__name__ in ("NAType", "NaTType") or (isinstance(v, float) and math.isnan(v)):
        return None
    return v


def _checked(records: list[tuple[int, dict[str, Any]]], label: str) -> list[Config]:
    """The mappings checked together, each problem naming the item's place in the source."""
    try:
        return configs_from_records([r for _, r in records], source=label)
    except InputError as err:
        place = {k: n for k, (n, _) in enumerate(records, 1)}
        for p in err.problems:
            p.row = place.get(p.row, p.row)
        raise InputError(err.problems) from None


def _names_unique(configs: list[Config], items: list[Any]) -> None:
    """Names are unique across the rows, as in a file (mappings are checked among themselves)."""
    first: dict[str, int] = {}  # name -> the first row that has it
    problems = []
    for n, (c, item) in enumerate(zip(configs, items), 1):
        k = name_key(c.name)
        # a mapping beside a Config (mappings are checked among themselves as they are read)
        if k in first and isinstance(item, Config) != isinstance(items[first[k] - 1], Config):
            expected = f"a name unique in the rows (row {first[k]} has it)"
            problems.append(Problem("mappings", n, "name", expected, repr(c.name)))
        first.setdefault(k, n)
    if problems:
        raise InputError(problems)


def compute(source: Rows, progress: Progress | None = None) -> list[Ledger]:
    """The ledger of each configuration ``source`` holds (a path, mappings, a DataFrame...)."""
    if _all_ledgers(source):
        return list(source)
    configs = read(source)
    tick = counter(progress, len(configs), every=1000)  # told every 1,000 rows, and at the last
    out: list[Ledger] = []
    for lg in compute_many(configs):
        out.append(lg)
        tick(1)
    return out


def _all_ledgers(source: Any) -> bool:
    listed = isinstance(source, (list, tuple)) and bool(source)
    return listed and all(isinstance(x, Ledger) for x in source)


def outputs(
    ledgers: Sequence[Ledger],
    stem: str,
    out_dir: str | Path,
    formats: Sequence[str] = FORMATS,
    *,
    lang: str = "en",
    jobs: int | None = None,
    progress: Any = None,
    source_folder: str | Path | None = None,
    plans: Mapping[str, Any] | None = None,
    pareto: Sequence[Ledger] = (),
) -> dict[Path, bytes]:
    """The bytes of each output file, by path (nothing is written), each made by its reporter in
    ``REPORTERS``.  ``source_folder``: where the rows were read (a row's config.json path is
    relative to it), so the workbook names that file relative to ``out_dir`` and rebuilds from
    there; ``plans``: the planner's document, whose layouts and Pareto front the workbook shows
    (``plan -o``); ``pareto``: the ledgers of that front, which the handout draws on its summary."""
    from .render.workers import Beside

    out = Path(out_dir)
    paths = {f: out / f"{stem}.{f}" for f in REPORTERS if f in formats}
    folders = (Path(source_folder), out) if source_folder is not None else None
    options = dict(
        lang=lang, jobs=jobs, progress=progress, plans=plans, pareto=pareto, folders=folders
    )
    workbook = None
    if "xlsx" in paths:
        if progress:
            progress.stage(f"writing the workbook ({len(ledgers):,} configurations)")
        # first, in a forked process beside the others where more than one job may run
        side_by_side = len(paths) > 1 and (jobs or default_jobs()) > 1
        workbook = Beside("workbook", _workbook, ledgers, side_by_side=side_by_side, **options)
    try:
        made = {f: REPORTERS[f](ledgers, **options) for f in paths if f != "xlsx"}
        if workbook is not None:
            made["xlsx"] = workbook.result()
    finally:
        if workbook is not None:
            workbook.cancel()  # the JSON or the handout failed: the workbook is not wanted
    return {paths[f]: made[f] for f in paths}


def _json(ledgers: Sequence[Ledger], **_: Any) -> bytes:
    from .render.document import document, json_bytes

    return json_bytes(document(ledgers))


def _workbook(ledgers: Sequence[Ledger], *, lang: str, plans: Any, folders: Any, **_: Any) -> bytes:
    """The workbook, its modules and XlsxWriter imported where it runs: in the process ``Beside``
    forks, beside the caller's work, not in the caller before the fork (~50 ms of a build's
    serial start)."""
    from .render.workbook import render_xlsx

    return render_xlsx(ledgers, lang, folders=folders, plans=plans)


def _handout(ledgers: Sequence[Ledger], *, lang: str, jobs, progress, pareto, **_: Any) -> bytes:
    from .render.handout import render_pdf

    if progress:
        progress.stage(f"rendering the handout ({len(ledgers) + 1:,}+ pages)")
    pages = getattr(progress, "pages", None)
    return render_pdf(ledgers, lang=lang, jobs=jobs, progress=pages, pareto=pareto)


# each output's reporter (the ledgers and the build's options to the file's bytes), in the order
# the files are listed
REPORTERS = {"json": _json, "xlsx": _workbook, "pdf": _handout}


def build(
    source: Rows,
    out_dir: str | Path = "out",
    formats: Sequence[str] = FORMATS,
    *,
    lang: str = "en",
    jobs: int | None = None,
    stem: str | None = None,
    progress: Any = None,
) -> list[Path]:
    """Compute (if need be) and write the outputs atomically; returns the paths written.  A
    workbook or a handout of more than ``render.limits.MAX_BUILD_CONFIGS`` rows is refused.
    ``formats`` as ``build --format`` takes them (any case), ``stem`` a file name in ``out_dir``
    (no folder), ``jobs`` None or at least 1, ``lang`` one of ``LANGS``: else an ``InputError``
    naming the argument, before any work.  ``progress``: called as ``progress(done, total)`` while
    the rows are computed, told ``progress.stage(text)`` as each output begins, and, where it has
    ``pages``, ``progress.pages(done, total)`` as the handout's pages finish (the CLI's lines)."""
    from .render.limits import check_build_size
    from .render.output import check_targets, write_outputs

    formats = checked_formats(formats)
    if lang not in LANGS or not isinstance(lang, str):  # as --lang takes, whatever the outputs
        raise _refused("lang", f"one of {', '.join(LANGS)}", lang)
    # None: LEDGER_REPORT_JOBS, else every CPU, read where workers are forked
    jobs = None if jobs is None else _whole("jobs", jobs)
    inputs = [Path(source)] if isinstance(source, (str, Path)) else []
    stem = _stem(stem) if stem is not None else (inputs[0].stem if inputs else "ledgers")
    check_targets((Path(out_dir) / f"{stem}.{f}" for f in formats), inputs)
    rows = list(source) if _all_ledgers(source) else read(source)
    check_build_size(rows, formats)  # before any work: a page and a column per configuration
    ledgers = compute(rows, progress)
    folder = inputs[0].parent if inputs else None
    if inputs:  # the config.json files the rows' model cells name were read too, filling or not
        named = {str(lg.config.values.get("model") or "") for lg in ledgers}
        inputs += sorted({p for p in (config_path(m, folder) for m in named if m) if p})
    files = outputs(
        ledgers,
        stem,
        out_dir,
        formats,
        lang=lang,
        jobs=jobs,
        progress=progress,
        source_folder=folder,
    )
    return write_outputs(files, inputs=inputs)


def plan(
    source: Rows,
    top: int = TOP_PLANS,
    progress: Progress | None = None,
    prices: Mapping[str, Any] | str | Path | None = None,
    max_candidates: int | None = None,
) -> dict[str, Any]:
    """The planner's document for each row, as ``ledger-report plan`` gives it (the same default
    ``top``); ``prices``: GPU type -> price per GPU-hour, or the path of a gpu,price CSV."""
    top = _whole("top", top, MAX_TOP)
    if max_candidates is not None:
        max_candidates = _whole("max_candidates", max_candidates)
    if isinstance(prices, (str, Path)):
        prices = read_prices(prices)
    elif isinstance(prices, Mapping):  # checked as a prices file's lines are
        prices = checked_prices(
            (("prices", None, f"price of {k}"), k, _number(v)) for k, v in prices.items()
        )
    elif prices is not None:
        expected = "a mapping of GPU name to price per GPU-hour, or the path of a gpu,price CSV"
        raise _refused("prices", expected, prices)
    configs = read(source)
    return plan_document(
        configs, top=top, progress=progress, prices=prices, max_candidates=max_candidates
    )


def build_plans(
    doc: Mapping[str, Any],
    out_dir: str | Path,
    formats: Sequence[str] = FORMATS,
    *,
    inputs: Sequence[str | Path] = (),
    lang: str = "en",
    jobs: int | None = None,
    progress: Any = None,
) -> list[Path]:
    """``plan -o DIR``: DIR/plans.csv (a complete input row per plan) and its outputs, built as
    ``build`` builds any input, the pages in the planner's order; never over ``inputs``."""
    from dataclasses import replace

    from .render.limits import MAX_BUILD_CONFIGS, check_build_size
    from .render.output import check_targets, plans_csv, write_outputs
    from .report import DEFAULT

    out = Path(out_dir)
    check_targets([out / "plans.csv", *(out / f"plans.{f}" for f in formats)], inputs)
    in_plan_order = replace(DEFAULT, spec=replace(DEFAULT.spec, rank=()))
    rows = read([p["row"] for p in doc["plans"]])
    check_build_size(
        rows,
        formats,
        where=f"{out / 'plans.csv'}, plan {MAX_BUILD_CONFIGS + 1:,}",
        instead="keep fewer plans a row (--top) or plan fewer rows at a time",
    )
    ledgers = list(compute_many(rows, in_plan_order))
    # the front of days against cost, for the handout's chart (its rows are complete input rows)
    front = list(compute_many(read([p["row"] for p in doc.get("pareto", [])]), in_plan_order))
    files = outputs(
        ledgers,
        "plans",
        out,
        formats,
        lang=lang,
        jobs=jobs,
        progress=progress,
        plans=doc,
        pareto=front,
    )
    return write_outputs({out / "plans.csv": plans_csv(doc), **files}, inputs=inputs)


_COUNTED = ("params_total", "params_active", "params_active_card", "params_mtp", "arch_main_params")


def models() -> list[dict[str, Any]]:
    """The built-in model catalogue: each model's columns and source, with the parameters the
    engine counts from them (total, active, MTP, the main model's)."""
    rows = []
    for m in MODELS.values():
        lg = compute_one(config_from_mapping({"name": m.name, "model": m.name}, "models.json"))
        rows.append(
            {
                "name": m.name,
                "hf_repo": m.hf_repo,
                "model_type": m.model_type,
                "source": m.source,
                "note": m.note,
                **{k: m.columns.get(k, 0) for k in ("layers", "hidden", "experts", "topk")},
                "columns": dict(m.columns),
                **{k: int(lg[k]) for k in _COUNTED},
            }
        )
    return rows


def gpus() -> dict[str, Any]:
    """The built-in accelerator catalogue: name -> ``catalogue.GPU`` (GB = 10^9 bytes)."""
    return dict(GPUS)


def template(path: str | Path) -> Path:
    """Write an empty input file: .xlsx (help text, defaults, dropdowns) or .csv (the header and
    one example row); returns the path written."""
    from .render.output import template_csv, write_outputs

    path = Path(path)
    if path.suffix.lower() == ".csv":
        data = template_csv()
    else:
        from .render.workbook import template_xlsx

        data = template_xlsx()
    return write_outputs({path: data}, inputs=())[0]


def to_frame(source: Rows | Mapping[str, Any], *, states: bool = False):
    """A pandas DataFrame: one row per configuration, a column per quantity of the registry
    (``engine.table_keys``: every number, truth value and short text) after ``name``, with the
    values the JSON document carries (bytes, parameters, counts and tokens as integers; blank
    cells as NA).  ``states=True``: one row per state line instead (configuration, state, part,
    dtype, bytes per parameter, sharded, shard group, parameters and bytes on the rank,
    location).  A planner document (``lr.plan``) gives its plans, one row each, the row's columns
    as ``row.<column>``."""
    import pandas as pd

    if isinstance(source, Mapping) and str(source.get("schema", "")).startswith(
        "ledger-report-plan/"
    ):
        return pd.json_normalize(source["plans"])
    if states:
        from .render.document import config_document

        drop = ("label", "basis")
        return pd.DataFrame(
            [
                {"name": lg.name, **{k: v for k, v in s.items() if k not in drop}}
                for lg in compute(source)
                for s in config_document(lg)["states"]
            ]
        )
    if _all_ledgers(source):
        columns = ledger_table(source)
        return pd.DataFrame({k: _pandas_column(pd, *c) for k, c in columns.items()}, copy=False)
    with no_cyclic_gc(), _sweep(source, _frame_half) as (got, rest):
        if rest is not None:  # the second half's rows, after the first's
            got = _merged(got, pickle.load(rest))
        if not got[0]:
            return pd.DataFrame(columns=["name", *table_keys()])
        return pd.DataFrame(dict(_joined(pd, *got)), copy=False)


def _frame_half(configs: list[Config], _tick, spill: BinaryIO | None) -> Gathered | None:
    """The rows' table gathered for pandas: returned, or written into ``spill`` (``_sweep``)."""
    gathered = _gathered(engine_table(configs))
    if spill is None:
        return gathered
    pickle.dump(gathered, spill, protocol=pickle.HIGHEST_PROTOCOL)
    return None


# The sweep table for pandas, a column's chunks gathered as they come and joined at the end:
# (column -> its chunks' arrays (text as codes into its distinct texts, not a string object per
# cell), column -> their blank masks (None: none blank), text column -> its texts' codes).
Gathered = tuple[dict[str, list], dict[str, list], dict[str, dict[str, int]]]


def _gathered(chunks: Iterable[Mapping[str, tuple[Any, Any]]]) -> Gathered:
    parts: dict[str, list] = {}
    blanks: dict[str, list] = {}
    texts: dict[str, dict[str, int]] = {}
    for chunk in chunks:
        for k, (v, b) in chunk.items():
            if k not in parts:
                parts[k], blanks[k] = [], []
                if v.dtype.kind == "U":
                    texts[k] = {}
            parts[k].append(_codes(v, texts[k]) if k in texts else v)
            blanks[k].append(b)
    return parts, blanks, texts


def _merged(first: Gathered, second: Gathered) -> Gathered:
    """The rows of ``second`` after those of ``first``, its text codes made ``first``'s."""
    parts, blanks, texts = first
    for k, arrays in second[0].items():
        if k in texts:
            codes = texts[k]
            place = np.array([codes.setdefault(t, len(codes)) for t in second[2][k]], np.intp)
            arrays = [place[a] for a in arrays]
        parts[k].extend(arrays)
        blanks[k].extend(second[1][k])
    return parts, blanks, texts


def _joined(pd, parts: dict, blanks: dict, texts: dict) -> Iterator[tuple[str, Any]]:
    """The sweep table's columns for pandas: each column's arrays and blank masks joined."""
    for k in list(parts):
        arrays, masks = parts.pop(k), blanks.pop(k)
        blank = None
        if any(b is not None for b in masks):
            blank = np.concatenate(
                [np.zeros(len(a), bool) if b is None else b for a, b in zip(arrays, masks)]
            )
        if k in texts:
            yield k, _text_column(pd, np.concatenate(arrays), list(texts.pop(k)), blank)
        else:
            yield k, _pandas_column(pd, np.concatenate(arrays), blank)


def _codes(values: Any, codes: dict[str, int]) -> Any:
    """Each row's code among the column's distinct texts (``codes``, grown with new ones): one
    comparison when the chunk holds one text for every row (a note, a currency), else
    ``text_codes``."""
    if not len(values) or values.strides[0] == 0:
        texts, inverse = values[:1].tolist(), np.zeros(len(values), np.intp)
    else:
        inverse, texts = text_codes(np, values)
    place = np.array([codes.setdefault(t, len(codes)) for t in texts], dtype=np.intp)
    return place[inverse]


def _text_column(pd, codes: Any, texts: list[str], blank: Any):
    """A text column from each row's code among ``texts``: blanks as NA, one string object per
    distinct text (not one per cell: ~6 M strings, ~0.7 GB, on 100,000 rows), in the string
    type pandas gives text; a column blank on every row as ``None``s."""
    if blank is not None and blank.all():
        return np.full(len(codes), None, dtype=object)
    if blank is not None:
        codes[blank] = -1
    return pd.Series(np.array(texts, dtype=object)).array.take(codes, allow_fill=True)


def _pandas_column(pd, values: Any, blank: Any):
    """One column of the table: blanks as NA (a nullable type where the column's kind has no NaN
    of its own); text as ``_text_column`` makes it.  ``values`` is the column's own array (made
    for it, shared with nothing), and may be written into."""
    if blank is None and values.dtype.kind != "U":
        return values
    kind = values.dtype.kind
    if kind == "i":
        return pd.arrays.IntegerArray(values, blank)
    if kind == "b":
        return pd.arrays.BooleanArray(values, blank)
    if kind == "f":  # NaN written into the column's own array (no second array of its length)
        values[blank] = np.nan
        return values
    if kind == "U":
        texts: dict[str, int] = {}
        return _text_column(pd, _codes(values, texts), list(texts), blank)
    out = values.astype(object)
    out[blank] = None
    return out


def write_json(source: Rows, out: BinaryIO, progress: Progress | None = None) -> None:
    """``calc --json``: the JSON document of every row, compact, one configuration a line, written
    to the binary stream ``out`` a chunk of rows at a time as they are computed (``_streamed``)."""
    from .render.document import json_lines, write_lines

    def work(configs: list[Config], tick, spill: BinaryIO | None) -> bool:
        parts = compute_many(configs, make=json_lines)
        stream = out if spill is None else spill
        write_lines(parts, stream, tick, opening=spill is None, closing=False)
        return bool(configs)

    begun = _streamed(source, out, work, progress)
    write_lines((), out, opening=not begun)  # the end (and the head, where no row began it)


def write_csv(source: Rows, out: BinaryIO, progress: Progress | None = None) -> None:
    """``calc --csv``: the sweep table (``to_frame``'s) as CSV, a chunk of rows at a time
    (``_streamed``)."""
    from .render.sweep import write_table

    header = ["name", *table_keys()]

    def work(configs: list[Config], tick, spill: BinaryIO | None) -> None:
        stream = out if spill is None else spill
        write_table(header, engine_table(configs), stream, spill is None, tick)

    _streamed(source, out, work, progress)


def _streamed(source: Rows, out: BinaryIO, work, progress: Progress | None) -> Any:
    """``_sweep`` of a ``work`` that writes the first half's rows to ``out`` as they are made and
    the second half's to its spill, then copied to ``out``; the first half's value."""
    import shutil

    with no_cyclic_gc(), _sweep(source, work, progress) as (value, rest):
        if rest is not None:
            shutil.copyfileobj(rest, out, 1 << 20)
    return value


def _sweep(source: Rows, work, progress: Progress | None = None):
    """``halves.sweep`` of ``work`` over the rows of ``source``, read in chunks of ``CHUNK_ROWS``."""
    return halves.sweep(read, source, work, progress, CHUNK_ROWS)


def reconcile(
    source: str | Path,
    runs: Sequence[str | Path],
    *,
    row: str | None = None,
    out_dir: str | Path | None = None,
    update: str | Path | None = None,
) -> dict[str, Any]:
    """``ledger-report reconcile``: one row's ledger against probe files or training logs
    (``ledger_report/reconciler.py``); writes ``out_dir/<stem>-reconcile.json`` and ``.txt``, and
    with ``update`` the input rows as a CSV with measured_peak_gb, measured_counter and mfu filled."""
    from . import reconciler as rc
    from .render.document import json_bytes
    from .render.output import check_targets, write_outputs

    stem = f"{Path(source).stem}-reconcile"  # named whole: a stem may hold dots (q3.v2)
    targets = [] if out_dir is None else [Path(out_dir) / f"{stem}.{x}" for x in ("json", "txt")]
    if update is not None:
        if Path(update).suffix.lower() != ".csv":
            raise OutputError(
                f"Refusing to write {update}: the updated rows are CSV; name a file ending in .csv."
            )
        targets.append(Path(update))
    check_targets(targets, [source, *runs])  # (two targets that are one file: refused here)
    seen: dict[Path, int] = {}  # a run file's place -> where in ``runs`` it first stands
    for i, run in enumerate(runs):  # a run file given twice would count its samples twice
        first = seen.setdefault(Path(run).resolve(), i)
        if first != i:
            first = runs[first]
            found = f"{run} given twice" + ("" if str(first) == str(run) else f" (as {first})")
            raise InputError(Problem(str(run), None, None, "each run file once", found))
    configs = read(source)
    read_runs = [rc.read_run(r) for r in runs]
    ledger = rc.pick_row(compute(configs), read_runs, row, str(source))
    doc = rc.reconcile(ledger, read_runs)
    files: dict[Path, bytes] = {}
    if out_dir is not None:
        files[targets[0]] = json_bytes(doc)
        files[targets[1]] = rc.render_text(doc).encode("utf-8")
    if update is not None:
        files[Path(update)] = rc.updated_csv(configs, ledger.name, doc["update"])
    if files:
        write_outputs(files, inputs=[source, *runs])
    return doc


def text(kind: str, value: Any) -> str:
    """What the command line prints for ``value``: ``kind`` is ``ledgers``, ``gpus``, ``models``,
    ``plans`` (a planner document) or ``reconcile`` (a reconciliation document)."""
    from .reconciler import render_text
    from .render import table

    reporters = {
        "ledgers": table.render_table,
        "gpus": table.render_gpus,
        "models": table.render_models,
        "plans": table.render_plans,
        "reconcile": render_text,
    }
    return reporters[kind](value)


def json_text(doc: Mapping[str, Any]) -> bytes:
    """A document (``document``, ``plan``, ``reconcile``) as the JSON the command line prints."""
    from .render.document import json_bytes

    return json_bytes(doc)
