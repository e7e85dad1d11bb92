"""The command line: the one place errors become exit codes (0 done, 1 bad input, 2 usage)."""

from __future__ import annotations

import atexit
import gc
import json
import os
import signal
import sys
from dataclasses import asdict
from functools import partial
from pathlib import Path

import click

from . import __version__, api
from .errors import LedgerError, OutputError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
# One command, then the process ends: its objects are left to the system, not walked by the
# collector as the interpreter shuts down (0.25 s after a build, 0.15 s after a long calc).
atexit.register(gc.freeze)


class _Progress:
    """A progress line on stderr for long runs; silent with -q or when stderr is not a terminal."""

    def __init__(self, label: str, quiet: bool):
        self.label = label
        self.on = not quiet and sys.stderr.isatty()
        self.pages = self if label == "handout pages" else _Progress("handout pages", quiet)

    def stage(self, text: str) -> None:
        if self.on:
            click.echo(text, err=True)

    def __call__(self, done: int, total: int) -> None:
        if self.on and total:  # (every caller knows its total: 0 only where there is no work)
            pct = 100 * done // total
            click.echo(f"\r{self.label}: {done:,}/{total:,} ({pct}%)", err=True, nl=done >= total)


class _Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (its number the argument), raised where the run is, as Ctrl-C is: the
    same clean-up runs (temp files removed, earlier outputs put back, worker processes ended)."""


def _raise_terminated(signum, _frame) -> None:
    raise _Terminated(signum)


# a control character a cell or a file name brought into a message, written as its escape (a NUL
# or an escape sequence sent raw to a terminal hides or rewrites the line); line breaks kept
_SHOWN_CONTROLS = {c: f"\\u{c:04x}" for c in (*range(9), *range(11, 32), 127)}


def _echo_error(text: str) -> None:
    click.echo(f"Error: {text}".translate(_SHOWN_CONTROLS), err=True)


class _Group(click.Group):
    """Turns an unexpected exception into one line and exit status 1 (set LEDGER_REPORT_DEBUG=1 for the traceback);
    a signal that ends the run (Ctrl-C, SIGTERM, SIGHUP) into one line and 128 + its number."""

    def invoke(self, ctx):
        # SIGTERM (`timeout`, `kill`) and SIGHUP (a closed terminal) handled as Ctrl-C is
        for name in ("SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None and signal.getsignal(signum) is signal.SIG_DFL:
                signal.signal(signum, _raise_terminated)
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as err:
            signum = err.args[0] if isinstance(err, _Terminated) else signal.SIGINT
            name = signal.Signals(signum).name
            _echo_error(
                f"stopped by {name}; no output file was written (they are written all together"
                " or not at all), and any output printed is incomplete."
            )
            sys.exit(128 + signum)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:  # the reader went away (`| head`): stop quietly
            sys.stderr.close()
            sys.exit(0)
        except api.JobsError as err:  # a bad LEDGER_REPORT_JOBS: a usage error, as a bad -j is
            raise click.UsageError(str(err), ctx) from None
        except LedgerError as err:  # the one place a user's error becomes exit status 1
            _echo_error(str(err))
            sys.exit(1)
        # a bug: say so plainly; nothing was written (outputs are all-or-nothing)
        except Exception as err:
            if os.environ.get("LEDGER_REPORT_DEBUG"):
                raise
            _echo_error(
                f"internal error ({type(err).__name__}: {err}); no file was written. "
                "Rerun with LEDGER_REPORT_DEBUG=1 for details and report it."
            )
            sys.exit(1)


JOBS_HELP = "Processes rendering the handout side by side [default: LEDGER_REPORT_JOBS, else every CPU]; the PDF is the same bytes whatever the number."
_JOBS = click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help=JOBS_HELP)
_INPUT = click.argument("input", type=click.Path(dir_okay=False))


# options several commands take, each with its own help= (and -o its default)
_lang = partial(
    click.option, "--lang", type=click.Choice(api.LANGS), default="en", show_default=True
)
_json = partial(click.option, "--json", "as_json", is_flag=True)
_quiet = partial(click.option, "-q", "--quiet", is_flag=True)
_out = partial(click.option, "-o", "--out", "out_dir", type=click.Path(file_okay=False))


@click.group(cls=_Group, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="ledger-report")
def main() -> None:
    """Per-rank model-state ledgers and compute floors for LLM training configurations.

    Example: ledger-report build inputs/examples.xlsx -o out
    """


@main.command(context_settings=CONTEXT)
@_INPUT
@_json(help="Print the JSON document (docs/json.md) instead of the table.")
@click.option(
    "--csv",
    "as_csv",
    is_flag=True,
    help="Print the sweep table as CSV: a row per configuration, a column per quantity.",
)
def calc(input: str, as_json: bool, as_csv: bool) -> None:
    """Compute every row of INPUT (.csv or .xlsx) and print the ledgers.

    Example: ledger-report calc inputs/examples.csv --json > ledgers.json
    """
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    progress = _Progress("computing", quiet=False)
    if as_json:
        api.write_json(input, sys.stdout.buffer, progress)
    elif as_csv:
        api.write_csv(input, sys.stdout.buffer, progress)
    else:
        click.echo(api.text("ledgers", api.compute(input, progress)))
    sys.stdout.flush()


@main.command(context_settings=CONTEXT)
@_INPUT
@_out(help="Folder for the outputs.", default="out", show_default=True)
@click.option(
    "--format",
    "formats",
    default="xlsx,pdf,json",
    show_default=True,
    help="Comma-separated: xlsx, pdf, json.",
)
@_lang(help="Language of the handout and the workbook.")
@_quiet(help="No progress or 'Wrote' lines.")
@_JOBS
def build(input: str, out_dir: str, formats: str, lang: str, quiet: bool, jobs: int | None) -> None:
    """Write DIR/<stem>.xlsx, .pdf and .json for INPUT.

    All outputs are written together or not at all; a failed run leaves earlier files as they were.

    Example: ledger-report build inputs/examples.xlsx -o out --lang zh
    """
    try:
        wanted = api.checked_formats(formats, "--format")
    except api.InputError as err:
        expected = err.problems[0].expected
        raise click.BadParameter(f"expected {expected}; found {formats!r}", param_hint="--format")
    progress = _Progress("computing", quiet)
    _wrote(api.build(input, out_dir, wanted, lang=lang, jobs=jobs, progress=progress), quiet)


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
    path = Path(out)
    if path.suffix.lower() not in (".xlsx", ".csv"):
        raise click.BadParameter(
            f"expected a name ending in .xlsx or .csv; found {out!r}", param_hint="OUT"
        )
    if path.exists() and not force:
        raise OutputError(f"{out} exists; pass --force to overwrite it (nothing was written).")
    click.echo(f"Wrote {api.template(path)}", err=True)


@main.command(context_settings=CONTEXT)
@_json(help="Print the catalogue as JSON.")
def gpus(as_json: bool) -> None:
    """List the built-in accelerator catalogue (GB = 10^9 bytes; dense BF16 TFLOP/s).

    Example: ledger-report gpus
    """
    gpus = api.gpus()
    _show([asdict(g) for g in gpus.values()] if as_json else api.text("gpus", gpus), as_json)


@main.command(context_settings=CONTEXT)
@_json(help="Print the catalogue as JSON (columns, sources and counted parameters).")
def models(as_json: bool) -> None:
    """List the built-in model catalogue: a row's `model` column takes these names.

    Example: ledger-report models
    """
    rows = api.models()
    _show(rows if as_json else api.text("models", rows), as_json)


def _show(shown, as_json: bool) -> None:
    click.echo(json.dumps(shown, ensure_ascii=False, indent=2) if as_json else shown)


@main.command(context_settings=CONTEXT)
@_INPUT
@click.option(
    "--top",
    default=api.TOP_PLANS,
    show_default=True,
    type=click.IntRange(1, api.MAX_TOP),
    help="Plans to keep per input row.",
)
@_out(help="Write DIR/plans.csv and build it.")
@_json(help="Print the planner's JSON document (docs/json.md).")
@_lang(help="Language of the handout (with -o).")
@_quiet(help="No progress bar.")
@_JOBS
@click.option(
    "--prices",
    "prices_file",
    default=None,
    type=click.Path(dir_okay=False, exists=True),
    help="CSV of gpu,price (per GPU-hour): the price of each GPU type; only these types are searched when a row names no GPU.",
)
@click.option(
    "--max-candidates",
    default=None,
    type=click.IntRange(min=1),
    help=f"The largest search a row may ask for [default: {api.MAX_CANDIDATES:,}, about 40 s]; a larger one "
    "is refused, naming the columns that would narrow it.",
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
    max_candidates: int | None,
) -> None:
    """Search layouts, GPU counts and memory savers; rank the feasible plans by predicted cost.

    Exit status 1 when a row has no feasible plan (the output says which gate or constraint
    excluded the most candidates).

    Example: ledger-report plan inputs/plan-examples.csv --top 3 -o plans
    """
    progress = _Progress("candidates", quiet)
    doc = api.plan(
        input, top=top, progress=progress, prices=prices_file, max_candidates=max_candidates
    )
    if as_json:
        sys.stdout.buffer.write(api.json_text(doc))
    else:
        click.echo(api.text("plans", doc))
    if out_dir and doc["plans"]:
        inputs = [input, *([prices_file] if prices_file else [])]
        progress = _Progress("computing", quiet)
        paths = api.build_plans(
            doc, out_dir, inputs=inputs, lang=lang, jobs=jobs, progress=progress
        )
        _wrote(paths, quiet)
    empty = [i for i in doc["inputs"] if not i["plans"]]
    for i in empty:
        click.echo(f"No plan for {i['name']}: {i['reason']}", err=True)
    if empty:
        sys.exit(1)


@main.command(context_settings=CONTEXT)
@_INPUT
@click.argument("runs", nargs=-1, required=True, metavar="RUN...", type=click.Path(dir_okay=False))
@click.option("--row", default=None, help="The row to reconcile [default: the probe's row].")
@_json(help="Print the JSON document, not the text.")
@_out(help="Also write DIR/<stem>-reconcile.json and .txt.")
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
    doc = api.reconcile(input, runs, row=row, out_dir=out_dir, update=update)
    if as_json:
        sys.stdout.buffer.write(api.json_text(doc))
    else:
        click.echo(api.text("reconcile", doc), nl=False)
