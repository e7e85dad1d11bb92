"""The command line: the one place errors become exit codes (0 done, 1 bad input, 2 usage)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import __version__
from .errors import LedgerError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
FORMATS = ("xlsx", "pdf", "json")


def _fail(err: LedgerError) -> None:
    click.echo(f"Error: {err}", err=True)
    sys.exit(1)


def _read(path: str):
    from .inputs import read_configs

    return read_configs(path)


def _json_bytes(doc: dict) -> bytes:
    return (json.dumps(doc, ensure_ascii=False, indent=2, allow_nan=False) + "\n").encode("utf-8")


class _Progress:
    """A progress line on stderr for long runs; silent with -q or when stderr is not a terminal."""

    def __init__(self, label: str, quiet: bool):
        self.label = label
        self.on = not quiet and sys.stderr.isatty()

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
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit, KeyboardInterrupt):
            raise
        except LedgerError as err:
            _fail(err)
        except Exception as err:  # a bug: say so plainly; nothing was written (outputs are all-or-nothing)
            if os.environ.get("LEDGER_REPORT_DEBUG"):
                raise
            click.echo(f"Error: internal error ({type(err).__name__}: {err}); no file was written. "
                       "Rerun with LEDGER_REPORT_DEBUG=1 for details and report it.", err=True)
            sys.exit(1)


@click.group(cls=_Group, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="ledger-report")
def main() -> None:
    """Per-rank model-state ledgers and compute floors for LLM training configurations.

    Example: ledger-report build inputs/examples.xlsx -o out
    """


@main.command(context_settings=CONTEXT)
@click.argument("input", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the JSON document (CONTRACT §4) instead of the table.")
def calc(input: str, as_json: bool) -> None:
    """Compute every row of INPUT (.csv or .xlsx) and print the ledgers.

    Example: ledger-report calc inputs/examples.csv --json > ledgers.json
    """
    from .engine import compute
    from .render.table import render_table

    try:
        if as_json:
            _stream_json(input, sys.stdout.buffer, _Progress("computing", quiet=False))
        else:
            click.echo(render_table([compute(c) for c in _read(input)]))
    except LedgerError as err:
        _fail(err)


def _stream_json(input: str, out, progress) -> None:
    """Write the CONTRACT §4 document one configuration at a time: the rows are checked first,
    then read again and written as they are computed, so memory does not grow with the rows."""
    from .engine import SCHEMA, compute
    from .inputs import stream_configs

    done = 0

    def write(config) -> None:
        nonlocal done
        body = json.dumps(compute(config).to_dict(), ensure_ascii=False, indent=2, allow_nan=False)
        out.write((",\n" if done else "").encode() + body.encode("utf-8"))
        done += 1
        if done % 1000 == 0:
            progress(done, 0)

    out.write(b'{\n  "schema": "' + SCHEMA.encode() + b'",\n  "configs": [\n')
    stream_configs(input, write)
    out.write(b"\n  ]\n}\n")
    out.flush()


@main.command(context_settings=CONTEXT)
@click.argument("input", type=click.Path(dir_okay=False))
@click.option("-o", "--out", "out_dir", default="out", show_default=True, type=click.Path(file_okay=False), help="Folder for the outputs.")
@click.option("--format", "formats", default="xlsx,pdf,json", show_default=True, help="Comma-separated: xlsx, pdf, json.")
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True, help="Language of the handout.")
@click.option("-q", "--quiet", is_flag=True, help="No progress or 'Wrote' lines.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Processes rendering the handout side by side [default: LEDGER_REPORT_JOBS, else every CPU]; the PDF is the same bytes whatever the number.")
def build(input: str, out_dir: str, formats: str, lang: str, quiet: bool, jobs: int | None) -> None:
    """Write DIR/<stem>.xlsx, .pdf and .json for INPUT.

    All outputs are written together or not at all; a failed run leaves earlier files as they were.

    Example: ledger-report build inputs/examples.xlsx -o out --lang zh
    """
    from .engine import compute, document_of
    from .render.output import write_outputs

    wanted = [f.strip().lower() for f in formats.split(",") if f.strip()]
    bad = [f for f in wanted if f not in FORMATS]
    if bad or not wanted:
        raise click.BadParameter(f"expected a comma-separated list of {', '.join(FORMATS)}; found {formats!r}", param_hint="--format")
    try:
        configs = _read(input)
        progress = _Progress("computing", quiet)
        ledgers = []
        for i, c in enumerate(configs, 1):
            ledgers.append(compute(c))
            if i % 100 == 0 or i == len(configs):
                progress(i, len(configs))
        doc = document_of(ledgers)
        stem = Path(input).stem
        out = Path(out_dir)
        files: dict[Path, bytes] = {}
        if "json" in wanted:
            files[out / f"{stem}.json"] = _json_bytes(doc)
        if "xlsx" in wanted:
            from .render.workbook import render_xlsx

            progress.stage(f"writing the workbook ({len(ledgers):,} configurations)")
            files[out / f"{stem}.xlsx"] = render_xlsx(ledgers)
        if "pdf" in wanted:
            from .render.handout import render_pdf

            progress.stage(f"rendering the handout ({len(ledgers) + 1:,}+ pages, about 0.25 s of CPU each)")
            files[out / f"{stem}.pdf"] = render_pdf(doc, lang=lang, jobs=jobs, progress=_Progress("handout pages", quiet))
        written = write_outputs(files, inputs=[Path(input)])
        if not quiet:
            for p in written:
                click.echo(f"Wrote {p}", err=True)
    except LedgerError as err:
        _fail(err)


@main.command(context_settings=CONTEXT)
@click.argument("out", type=click.Path(dir_okay=False))
def template(out: str) -> None:
    """Write an empty input workbook with help text, defaults and dropdowns.

    Example: ledger-report template my-configs.xlsx
    """
    from .render.output import write_outputs
    from .render.workbook import template_xlsx

    try:
        written = write_outputs({Path(out): template_xlsx()})
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
        rows = [{"name": g.name, **{k: getattr(g, k) for k in ("hbm_gb", "peak_tflops", "hbm_tb_s", "host_link_gb_s", "interconnect", "interconnect_gb_s", "gpus_per_node", "host_gb", "source")}} for g in GPUS.values()]
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        click.echo(render_gpus(GPUS))


@main.command(context_settings=CONTEXT)
@click.argument("input", type=click.Path(dir_okay=False))
@click.option("--top", default=5, show_default=True, type=click.IntRange(1, 1000), help="Plans to keep per input row.")
@click.option("-o", "--out", "out_dir", default=None, type=click.Path(file_okay=False), help="Write DIR/plans.csv and build it.")
@click.option("--json", "as_json", is_flag=True, help="Print the CONTRACT §7 document.")
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True, help="Language of the handout (with -o).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def plan(input: str, top: int, out_dir: str | None, as_json: bool, lang: str, quiet: bool) -> None:
    """Search layouts, GPU counts and memory savers; rank the feasible plans by cost.

    Example: ledger-report plan inputs/plan-examples.csv --top 3 -o plans
    """
    from .plan import plan_document
    from .render.table import render_plans

    try:
        configs = _read(input)
        doc = plan_document(configs, top=top, progress=_Progress("candidates", quiet))
        if as_json:
            sys.stdout.buffer.write(_json_bytes(doc))
        else:
            click.echo(render_plans(doc))
        if out_dir:
            _build_plans(doc, Path(out_dir), lang, quiet)
    except LedgerError as err:
        _fail(err)


def _build_plans(doc: dict, out: Path, lang: str, quiet: bool) -> None:
    import csv
    import io

    from .config import COLUMN_NAMES
    from .engine import compute, config_from_mapping, document_of
    from .render.handout import render_pdf
    from .render.output import write_outputs
    from .render.workbook import render_xlsx

    rows = [p["row"] for p in doc["plans"]]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(COLUMN_NAMES), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("true" if v is True else "false" if v is False else v) for k, v in r.items()})
    ledgers = [compute(config_from_mapping(r)) for r in rows]
    ldoc = document_of(ledgers)
    files = {
        out / "plans.csv": buf.getvalue().encode("utf-8"),
        out / "plans.json": _json_bytes(ldoc),
        out / "plans.xlsx": render_xlsx(ledgers),
        out / "plans.pdf": render_pdf(ldoc, lang=lang),
    }
    for p in write_outputs(files):
        if not quiet:
            click.echo(f"Wrote {p}", err=True)


if __name__ == "__main__":  # pragma: no cover
    main()
