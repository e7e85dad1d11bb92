"""The command line: the one place errors become exit codes (0 done, 1 bad input, 2 usage)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import __version__
from .api import TOP_PLANS
from .errors import LedgerError
from .render.workers import JobsError, default_jobs

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
FORMATS = ("xlsx", "pdf", "json")


def _fail(err: LedgerError) -> None:
    click.echo(f"Error: {err}", err=True)
    sys.exit(1)


def _read(path: str):
    from .inputs import read_configs

    return read_configs(path)


def _read_packed(path: str):
    """The file's configurations, checked as ``_read`` checks them, held compactly (``PackedConfigs``)."""
    from .engine import PackedConfigs
    from .inputs import read_configs

    packed = PackedConfigs()
    read_configs(path, sink=packed.append, sink_columns=packed.extend_columns)
    return packed


def _json_bytes(doc: dict) -> bytes:
    from .api import json_bytes

    return json_bytes(doc)


class _Progress:
    """A progress line on stderr for long runs; silent with -q or when stderr is not a terminal."""

    def __init__(self, label: str, quiet: bool):
        self.label = label
        self.on = not quiet and sys.stderr.isatty()
        self.compute = self
        self.pages = (
            self
            if label == "handout pages"
            else _Progress("handout pages", quiet)
            if label != "-"
            else None
        )

    def stage(self, text: str) -> None:
        if self.on:
            click.echo(text, err=True)

    def __call__(self, done: int, total: int) -> None:
        if not self.on:
            return
        if total:
            pct = 100 * done // total
            click.echo(f"\r{self.label}: {done:,}/{total:,} ({pct}%)", err=True, nl=done >= total)
        else:  # the total is not known while streaming
            click.echo(f"\r{self.label}: {done:,}", err=True, nl=False)


class _Group(click.Group):
    """Turns an unexpected exception into one line and exit status 1 (set LEDGER_REPORT_DEBUG=1 for the traceback)."""

    def invoke(self, ctx):
        import os

        try:
            return super().invoke(ctx)
        except (
            click.exceptions.Exit,
            click.ClickException,
            click.Abort,
            SystemExit,
            KeyboardInterrupt,
        ):
            raise
        except BrokenPipeError:  # the reader went away (`| head`): stop quietly
            sys.stderr.close()
            sys.exit(0)
        except LedgerError as err:
            _fail(err)
        except (
            Exception
        ) as err:  # a bug: say so plainly; nothing was written (outputs are all-or-nothing)
            if os.environ.get("LEDGER_REPORT_DEBUG"):
                raise
            click.echo(
                f"Error: internal error ({type(err).__name__}: {err}); no file was written. "
                "Rerun with LEDGER_REPORT_DEBUG=1 for details and report it.",
                err=True,
            )
            sys.exit(1)


@click.group(cls=_Group, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="ledger-report")
def main() -> None:
    """Per-rank model-state ledgers and compute floors for LLM training configurations.

    Example: ledger-report build inputs/examples.xlsx -o out
    """
    try:
        default_jobs()  # a bad LEDGER_REPORT_JOBS is a usage error (exit 2), as a bad -j is
    except JobsError as e:
        raise click.UsageError(str(e)) from None


@main.command(context_settings=CONTEXT)
@click.argument("input", type=click.Path(dir_okay=False))
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the JSON document (docs/json.md) instead of the table.",
)
def calc(input: str, as_json: bool) -> None:
    """Compute every row of INPUT (.csv or .xlsx) and print the ledgers.

    Example: ledger-report calc inputs/examples.csv --json > ledgers.json
    """
    from .engine import compute_many
    from .render.table import render_table

    try:
        if as_json:
            _calc_json(input, sys.stdout.buffer, _Progress("computing", quiet=False))
        else:
            click.echo(render_table(compute_many(_read(input))))
    except LedgerError as err:
        _fail(err)


def _calc_json(path: str, out, progress) -> None:
    """``calc --json``: a .csv file read and computed in worker processes side by side where
    there are several CPUs (``render/json_stream.write_file``), else read here, then streamed."""
    from .render.json_stream import write_file

    def begin(total: int):
        out.write(_json_head())
        return _counter(progress, total)

    if write_file(path, out, begin):
        out.write(_JSON_TAIL)
        out.flush()
    else:
        _stream_json(_read_packed(path), out, progress)


def _json_head() -> bytes:
    from .render.document import SCHEMA

    return b'{\n  "schema": "' + SCHEMA.encode() + b'",\n  "configs": [\n'


_JSON_TAIL = b"\n  ]\n}\n"


def _stream_json(configs, out, progress) -> None:
    """Write the JSON document one batch of configurations at a time, as they are computed (in
    worker processes side by side on a machine with several CPUs: ``render/json_stream.py``):
    compact, one configuration a line (the .json that build writes is indented for reading)."""
    from .render.json_stream import write_configs

    out.write(_json_head())
    write_configs(configs, out, _counter(progress, len(configs)))
    out.write(_JSON_TAIL)
    out.flush()


def _counter(progress, total: int):
    """A callback taking rows done a batch at a time, telling ``progress`` every 1,000 rows (as
    the row-at-a-time loop reported)."""
    done = 0

    def counted(n: int) -> None:
        nonlocal done
        before, done = done, done + n
        for k in range(before // 1000 + 1, done // 1000 + 1):
            progress(k * 1000, total)

    return counted


def _formats(formats: str) -> list[str]:
    wanted = [f.strip().lower() for f in formats.split(",") if f.strip()]
    bad = [f for f in wanted if f not in FORMATS]
    if bad or not wanted:
        raise click.BadParameter(
            f"expected a comma-separated list of {', '.join(FORMATS)}; found {formats!r}",
            param_hint="--format",
        )
    return wanted


JOBS_HELP = "Processes rendering the handout side by side [default: LEDGER_REPORT_JOBS, else every CPU]; the PDF is the same bytes whatever the number."


@main.command(context_settings=CONTEXT)
@click.argument("input", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--out",
    "out_dir",
    default="out",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder for the outputs.",
)
@click.option(
    "--format",
    "formats",
    default="xlsx,pdf,json",
    show_default=True,
    help="Comma-separated: xlsx, pdf, json.",
)
@click.option(
    "--lang",
    type=click.Choice(["en", "zh"]),
    default="en",
    show_default=True,
    help="Language of the handout and the workbook.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress or 'Wrote' lines.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help=JOBS_HELP)
def build(input: str, out_dir: str, formats: str, lang: str, quiet: bool, jobs: int | None) -> None:
    """Write DIR/<stem>.xlsx, .pdf and .json for INPUT.

    All outputs are written together or not at all; a failed run leaves earlier files as they were.

    Example: ledger-report build inputs/examples.xlsx -o out --lang zh
    """
    from . import api

    wanted = _formats(formats)
    try:
        _wrote(
            api.build(
                input, out_dir, wanted, lang=lang, jobs=jobs, progress=_Progress("computing", quiet)
            ),
            quiet,
        )
    except LedgerError as err:
        _fail(err)


def _wrote(paths, quiet: bool) -> None:
    if not quiet:
        for p in paths:
            click.echo(f"Wrote {p}", err=True)


@main.command(context_settings=CONTEXT)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def template(out: str, force: bool) -> None:
    """Write an empty input file: OUT.xlsx (help text, defaults, dropdowns) or OUT.csv (the header
    and one example row).  An existing file is kept unless --force.

    Example: ledger-report template my-configs.xlsx
    """
    from .render.output import write_outputs

    path = Path(out)
    suffix = path.suffix.lower()
    if suffix not in (".xlsx", ".csv"):
        raise click.BadParameter(
            f"expected a name ending in .xlsx or .csv; found {out!r}", param_hint="OUT"
        )
    if path.exists() and not force:
        click.echo(
            f"Error: {out} exists; pass --force to overwrite it (nothing was written).", err=True
        )
        sys.exit(1)
    try:
        if suffix == ".csv":
            from .render.template import template_csv

            data = template_csv()
        else:
            from .render.workbook import template_xlsx

            data = template_xlsx()
        written = write_outputs({path: data})
        click.echo(f"Wrote {written[0]}", err=True)
    except LedgerError as err:
        _fail(err)


@main.command(context_settings=CONTEXT)
@click.option("--json", "as_json", is_flag=True, help="Print the catalogue as JSON.")
def gpus(as_json: bool) -> None:
    """List the built-in accelerator catalogue (GB = 10^9 bytes; dense BF16 TFLOP/s).

    Example: ledger-report gpus
    """
    from .catalogue import GPUS
    from .render.table import render_gpus

    if as_json:
        from dataclasses import asdict

        rows = [asdict(g) for g in GPUS.values()]
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        click.echo(render_gpus(GPUS))


@main.command(context_settings=CONTEXT)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the catalogue as JSON (columns, sources and counted parameters).",
)
def models(as_json: bool) -> None:
    """List the built-in model catalogue: a row's `model` column takes these names.

    Example: ledger-report models
    """
    from .catalogue import MODELS
    from .engine import compute, config_from_mapping
    from .render.table import render_models

    rows = []
    for m in MODELS.values():
        lg = compute(config_from_mapping({"name": m.name, "model": m.name}, source="models.json"))
        counted = {
            k: int(lg[k])
            for k in ("params_total", "params_active", "params_mtp", "arch_main_params")
        }
        rows.append(
            {
                "name": m.name,
                "hf_repo": m.hf_repo,
                "model_type": m.model_type,
                "source": m.source,
                "note": m.note,
                "layers": m.columns["layers"],
                "hidden": m.columns["hidden"],
                "experts": m.columns.get("experts", 0),
                "topk": m.columns.get("topk", 0),
                "columns": dict(m.columns),
                **counted,
            }
        )
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        click.echo(render_models(rows))


@main.command(context_settings=CONTEXT)
@click.argument("input", type=click.Path(dir_okay=False))
@click.option(
    "--top",
    default=TOP_PLANS,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Plans to keep per input row.",
)
@click.option(
    "-o",
    "--out",
    "out_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Write DIR/plans.csv and build it.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the planner's JSON document (docs/json.md)."
)
@click.option(
    "--lang",
    type=click.Choice(["en", "zh"]),
    default="en",
    show_default=True,
    help="Language of the handout (with -o).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help=JOBS_HELP)
@click.option(
    "--prices",
    "prices_file",
    default=None,
    type=click.Path(dir_okay=False, exists=True),
    help="CSV of gpu,price (per GPU-hour): the price of each GPU type; only these types are searched when a row names no GPU.",
)
def plan(
    input: str,
    top: int,
    out_dir: str | None,
    as_json: bool,
    lang: str,
    quiet: bool,
    jobs: int | None,
    prices_file: str | None,
) -> None:
    """Search layouts, GPU counts and memory savers; rank the feasible plans by predicted cost.

    Exit status 1 when a row has no feasible plan (the output says which gate or constraint
    excluded the most candidates).

    Example: ledger-report plan inputs/plan-examples.csv --top 3 -o plans
    """
    from .planner import plan_document, read_prices
    from .render.table import render_plans

    try:
        configs = _read(input)
        prices = read_prices(prices_file) if prices_file else None
        doc = plan_document(
            configs, top=top, progress=_Progress("candidates", quiet), prices=prices
        )
        if as_json:
            sys.stdout.buffer.write(_json_bytes(doc))
        else:
            click.echo(render_plans(doc))
        if out_dir and doc["plans"]:
            _build_plans(doc, Path(out_dir), lang, quiet, jobs)
    except LedgerError as err:
        _fail(err)
    empty = [i for i in doc["inputs"] if not i["plans"]]
    for i in empty:
        click.echo(f"No plan for {i['name']}: {i['reason']}", err=True)
    if empty:
        sys.exit(1)


def _build_plans(doc: dict, out: Path, lang: str, quiet: bool, jobs: int | None) -> None:
    """plans.csv (complete input rows) and its outputs, built as ``build`` builds any input."""
    from dataclasses import replace

    from . import api
    from .engine import compute_many
    from .render.output import write_outputs
    from .render.plans import plans_csv
    from .report import DEFAULT

    # the pages keep the planner's order (its ranks: cost, within 1 % the simpler plan first)
    in_plan_order = replace(DEFAULT, spec=replace(DEFAULT.spec, rank=()))
    ledgers = list(compute_many(api.read(_records(doc)), in_plan_order))
    files = {out / "plans.csv": plans_csv(doc)}
    files.update(
        api.outputs(
            ledgers,
            "plans",
            out,
            FORMATS,
            lang=lang,
            jobs=jobs,
            progress=_Progress("computing", quiet),
        )
    )
    _wrote(write_outputs(files), quiet)


@main.command(context_settings=CONTEXT)
@click.argument("input", type=click.Path(dir_okay=False))
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--row", default=None, help="The row to reconcile [default: the probe's row].")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON document, not the text.")
@click.option(
    "-o",
    "--out",
    "out_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Also write DIR/<stem>-reconcile.json and .txt.",
)
@click.option(
    "--update",
    default=None,
    type=click.Path(dir_okay=False),
    help="Write OUT.csv: the input rows, the reconciled one with measured_peak_gb, "
    "measured_counter and mfu filled in.",
)
def reconcile(
    input: str,
    runs: tuple[str, ...],
    row: str | None,
    as_json: bool,
    out_dir: str | None,
    update: str | None,
) -> None:
    """Compare a row's phases, peak and throughput with probe files or training logs (RUN...:
    ledger_report.probe JSON lines, Megatron-LM, torchtitan or DeepSpeed logs).

    Example: ledger-report reconcile inputs.csv run.jsonl --update measured.csv
    """
    from . import api
    from .reconcile import render_text

    try:
        doc = api.reconcile(input, runs, row=row, out_dir=out_dir, update=update)
    except LedgerError as err:
        _fail(err)
    if as_json:
        sys.stdout.buffer.write(_json_bytes(doc))
    else:
        click.echo(render_text(doc), nl=False)


def _records(doc: dict) -> list[dict]:
    return [p["row"] for p in doc["plans"]]


if __name__ == "__main__":  # pragma: no cover
    main()
