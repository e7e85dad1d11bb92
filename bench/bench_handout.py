"""The handout PDF: seconds per page (goals: <= 0.15 s per page in parallel, <= 0.25 in one
process), and the example's build (``--build``; #23 item 5: <= 3 s wall on 2 idle cores).

Renders, in English and in Chinese, (1) N varied configurations (default 100: a summary plus one
page each) and (2) the example input ``inputs/examples.csv``, each in one process (``jobs=1``) and
as ``build`` does it (the handout's parts in worker processes side by side, ``jobs`` = the CPUs).
The ledgers are computed first, untimed; the timer covers ``render_pdf`` only (Jinja, WeasyPrint's
layout, pages laid out again, each part's PDF and their join).  Prints pages, seconds and CPU
seconds per page (this process, and all processes: unlike wall time, CPU time does not count
waiting for a core), bytes, the pages each WeasyPrint pass laid out (one process), the parts and
the first-guess densities.  Each run is made in a process forked for it (after an untimed
warm-up here), so that no run inherits the heap of the runs before it.  Exit status 1 when a run
of the generated configurations misses its goal.

    python bench/bench_handout.py                # 100 configurations + the example, en and zh
    python bench/bench_handout.py -n 20 --lang zh --repeat 3 --json
    python bench/bench_handout.py --build --repeat 3

Figures (2-vCPU machines shared with other work, WeasyPrint 70, Debian's Python 3.11; wall time
is the load's, so CPU time is compared, runs of two versions made alternately):
- quiet machine (load ~1), 2026-12-02: 100 configurations, 0.199 s a page in one process and
  0.093 in parallel (English), 0.198 and 0.089 (Chinese); both goals met.
- one page per configuration, 2026-12-03 (loaded): the example, 23 pages, 0.206 s of CPU a page
  in one process, none clipped; 20 generated configurations 0.220.
- the build, 2026-12-03: 5.1 s wall and 8.3 s of CPU on an idle machine before; ~8 s of CPU of
  which ~0.5 s serial (the parent's imports, reading, computing), so ~4.3 s wall on 2 idle cores
  at best.  The handout's forks take ~65 % of the CPU (per part: the first layout ~60 %, pages
  laid out again ~12 %, ``write_pdf`` ~25 %), the workbook's ~20 %, the parent ~12 %.
- the build, 2026-12-03 21:30-23:00 UTC (load 5-12): WeasyPrint's import ran ``ldconfig``,
  ``gcc`` and ``ld`` for each library name it could not load (16 names: WeasyPrint#1125), ~0.2 s
  of CPU and ~0.5 s of wall time before the handout started; imported with
  ``workers.no_library_search`` it runs none (``python -c "import
  ledger_report.render.handout"``, the version before and this one alternately, six pairs, load
  ~8: 1.07-1.15 -> 0.87-0.95 s of CPU with the processes it ran, 2.68-3.05 -> 2.31-2.57 s wall).
  The build's own CPU (four pairs, load ~9: 8.2-10.1 s before, 8.9-9.7 after) is within this
  machine's noise; the handout's pages are the same bytes (0.267 s of CPU a page at that load).

- the build, 2026-12-05 (load ~1-2, three runs each, alternated): 4.33-4.58 s wall and 7.2-7.3 s
  of CPU; ``--format pdf`` 3.5-4.1 s wall, 5.1-5.9 s CPU; ``--format xlsx`` 2.85 s; the target is
  not met.  The example is laid out once per part (two parts, no page laid out again).  Tried:
  the descendant selectors on ``td``/``th``/``li`` as child chains of the same specificity (the
  same bytes, the cascade no faster: cssselect2's child test costs what the ancestor walk does;
  our stylesheet's matching is ~40 ms of 23 pages); the charts' per-segment ``left``/``width``
  as classes declared in the head (the same bytes, ~1.5 % fewer instructions a page by
  callgrind, within the wall-time noise: not kept for the template it needs); the legend without
  its ``span.entry`` (the English PDF the same, a Chinese legend line breaks elsewhere: not
  kept).  Kept: no ``div.main`` around a page's two floats (it did nothing).
- the build, 2026-12-05 04:20-05:25 (load ~1): 4.42 s wall and 8.0 s of CPU before.  A timeline
  (strace): the workbook forked at 0.50 s; WeasyPrint's import in the parent 0.65-0.95 s, of it
  cffi's library search (``ldconfig``, ``gcc`` and ``ld`` for 16 names, 48 processes); the
  handout's parts forked at 1.16 s, ended at 4.00 and 4.28 s; the workbook at 4.35 s; the process
  at 4.51 s.  The interpreter's shutdown took 0.25-0.32 s of that end (the collector walking every
  object); ``cli.py`` now freezes them at exit (``atexit.register(gc.freeze)``): 0.03 s.  Whole
  builds alternated, four each: 4.74-5.03 -> 4.34-4.52 s; this script: 4.30 s, 7.7 s of CPU.
- the build's floor, 2026-12-05 09:55-10:10 (load ~1; ``--build --repeat 3``, which now prints
  it): the build 4.17 s wall and 7.59 s of CPU; the libraries alone on the same bytes, each the
  least of two or three runs: the interpreter's start 0.02 s of CPU, WeasyPrint's import 0.39
  (its library search included), its layout and PDF of the same 23 pages as one document
  3.70-3.92 (4.04-4.16 in a fresh process, once), XlsxWriter's import 0.03 and the same 27,585
  formulas with their values 1.63-1.65: 5.8-6.0 s of CPU, 2.9-3.0 s on 2 cores before any of
  the package's own work (its imports 0.20 s, reading 0.09 s, computing 0.19 s; the parts'
  own code, Jinja and the join ~4 % of the handout by cProfile).  The 3 s goal cannot be met
  with these bytes: it needs WeasyPrint or XlsxWriter to do the same work in less time, or a
  handout page or workbook with less in it.

Where a page's time goes (cProfile and removing one part of the page at a time, the example in
English): WeasyPrint's layout ~45 % (tables ~15 %, absolutely placed spans ~6-8 %, text line
breaking ~10 %), drawing and writing the PDF ~22 %, the CSS cascade ~13-15 %, parsing the HTML
~5 %, building boxes ~6 %; font subsetting (HarfBuzz) ~1.5 %, zlib ~1 %, pypdf's join ~1 %.  By
part of the page: the three columns' flow ~40 % (figure rows ~24 %), the chart ~23 % (bars 16 %,
legend 6 %), the state ledger ~18 %, verdicts and headline strip ~9 %, the lines tables ~6 %.  No
part of WeasyPrint's work is more than a sixth: halving a page's time needs half its boxes.

What made it faster (kept): one process per part, forked, that never collects garbage
(``workers.fork``), the collector paused and ``gc.freeze`` before forking; markup whitespace
dropped before parsing (~8 %); each page's trim level and column cut chosen before layout from
estimates fitted to measured pages, so that the example is laid out once (pages laid out again
cost as much as the first layout); figure values as absolutely placed spans in paragraphs (no
table cells); ids only on childless elements (an element with an id or a style attribute gets a
computed style of its own, and so does every element in it; 95 -> 50 computed styles a page);
the bars' fills as classes; segments narrower than ``page.HAIRLINE`` not drawn; the summary's
table at a fixed layout (automatic: ~0.8 s a page).

Measured and left out: the bars as inline SVG (slower) or gradients; the state ledger's cells or
the figures' values as floats or spans positioned by style attributes (+2-10 %); one
FontConfiguration for all parts, the stylesheet parsed once for all parts, a warm-up render in the
parent before forking (each under 1 % or a wash: a tiny render costs what a worker's first
layout saves); no tabular figures (the columns lose their alignment); ``write_pdf`` options
(7 English pages written six times each, 2026-12-03: ``uncompressed_pdf`` 0.37 -> 0.32 s, ~8 ms a
page, but 0.37 MB -> 2.19 MB; ``hinting`` 0.37 -> 0.36 s, within the noise; ``full_fonts`` slower;
``optimize_images``: no images).  Not reachable through WeasyPrint's
public API: its user-agent stylesheet's six universal pseudo-element rules give every element six
pseudo-element computed styles (2,270 a page); leaving them out (a patch, for the measure only)
took ~8 % off a page.  Without ``libharfbuzz-subset0`` WeasyPrint subsets with fontTools and a
Chinese handout takes seconds more (its warning is printed).
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import multiprocessing
import os
import platform
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import rows  # noqa: E402  (bench/rows.py)
import weasyprint  # noqa: E402

from ledger_report.engine import compute_many, config_from_mapping  # noqa: E402
from ledger_report.render import handout  # noqa: E402

GOAL_S_PER_PAGE = 0.15  # parallel, as build renders
GOAL_ONE_PROCESS_S_PER_PAGE = 0.25  # jobs=1
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "inputs", "examples.csv")


def configs(n: int) -> list[dict]:
    return rows.configs(n, frameworks=("generic", "deepspeed"), handout=True)


class _Counting:
    """Counts WeasyPrint layouts (full documents and probes) during one render."""

    def __init__(self) -> None:
        self.layouts: list[int] = []
        self._original = handout._layout

    def __enter__(self):
        def layout(view, *args):
            self.layouts.append(len(view["pages"]) + len(view["summary_pages"]))
            return self._original(view, *args)

        handout._layout = layout
        return self

    def __exit__(self, *exc) -> None:
        handout._layout = self._original


def interpreter() -> str:
    """The interpreter's file, and whether it runs from a shared libpython: pyenv's builds do
    (and were built without profile-guided optimisation), Debian's /usr/bin/python3 does not, and
    the handout takes ~20 % more CPU under the former (measured on 2026-12-01, 3.11.7 against
    3.11.2; scripts/setup.sh picks Debian's)."""
    path = os.path.realpath(sys.executable)
    try:
        with open("/proc/self/maps") as maps:
            shared = "libpython" in maps.read()
    except OSError:
        return path
    return f"{path}, {'a shared' if shared else 'no shared'} libpython"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _once(doc: list, lang: str, jobs: int) -> dict:
    """One timed render (see the module docstring)."""
    warnings: list[str] = []
    with _Counting() as counting:
        t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
        pdf = handout.render_pdf(doc, lang, warnings=warnings, jobs=jobs)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        cpu_all = cpu + _children_cpu() - k0  # + the workers, which render_pdf has reaped
    # render_pdf pauses the cyclic garbage collector; what the render left is collected now
    # (untimed above, reported below).
    g0 = time.perf_counter()
    gc.collect()
    gc_s = time.perf_counter() - g0
    return {
        "seconds": seconds,
        "cpu": cpu,
        "cpu_all": cpu_all,
        "bytes": len(pdf),
        "layouts": counting.layouts,
        "warnings": warnings,
        "gc": gc_s,
    }


def _isolated(doc: list, lang: str, jobs: int) -> dict:
    """:func:`_once` in a process forked for it, so that every run starts from the same state, as
    ``ledger-report build`` does: a run in this process would inherit the heap the runs before it
    left (a parallel run after a one-process run measured 10.96 s, then 14.20 s, on 2026-12-01)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return _once(doc, lang, jobs)
    receive, send = multiprocessing.Pipe(duplex=False)
    pid = os.fork()
    if pid == 0:  # the child: measure, send, exit without running the parent's clean-up
        status = 0
        try:
            send.send(_once(doc, lang, jobs))
        except BaseException as err:  # noqa: BLE001 - reported by the parent
            send.send({"error": repr(err)})
            status = 1
        finally:
            send.close()
            os._exit(status)
    send.close()
    result = receive.recv()
    os.waitpid(pid, 0)
    if "error" in result:
        raise SystemExit(f"bench_handout: the run failed: {result['error']}")
    return result


def run(label: str, doc: list, lang: str, repeat: int, jobs: int) -> dict:
    best = None
    for _ in range(repeat):
        result = _isolated(doc, lang, jobs)
        if best is None or result["seconds"] < best["seconds"]:
            best = result
    n_configs = len(doc)
    parts = handout._parts(n_configs)
    pages = sum(p.pages for p in parts)
    book = handout._Book(doc, lang)
    fits = [handout._first_fit(book.data(i)) for i in range(n_configs)]
    first = collections.Counter(f.density for f in fits)
    return {
        "run": label,
        "lang": lang,
        "jobs": jobs,
        "configs": n_configs,
        "pages": pages,
        "parts": [len(p.configs) for p in parts],
        "seconds": round(best["seconds"], 3),
        "s_per_page": round(best["seconds"] / pages, 4),
        "cpu_s_per_page": round(best["cpu"] / pages, 4),
        "cpu_all_s_per_page": round(best["cpu_all"] / pages, 4),
        "bytes": best["bytes"],
        "gc_after_s": round(best["gc"], 3),
        "layouts": best["layouts"] if jobs == 1 else None,
        "first_guess_densities": dict(sorted(first.items())),
        "warnings": best["warnings"][:5],
        # The goals are for the generated configurations, rendered as build renders them (in
        # parallel) and in one process; the example is reported beside them.
        "goal_met": (
            best["seconds"] / pages
            <= (GOAL_S_PER_PAGE if jobs > 1 else GOAL_ONE_PROCESS_S_PER_PAGE)
            if label == "generated"
            else None
        ),
    }


BUILD_GOAL_S = 3.0  # the example's build, wall seconds on 2 idle cores (#23 item 5)
EXAMPLE_XLSX = os.path.join(os.path.dirname(__file__), "..", "inputs", "examples.xlsx")


def build_runs(repeat: int) -> dict:
    """``ledger-report build inputs/examples.xlsx`` (xlsx, pdf and json, the workers as build
    starts them) run ``repeat`` times in a fresh process: the fastest wall seconds, and the
    least CPU seconds (user + system) of the process and every worker it started.  On a shared
    machine the wall time is the load's; on 2 idle cores it is about the serial start (imports,
    reading, computing: the parent's CPU before it forks) plus half the rest."""
    import subprocess
    import tempfile

    walls, cpus = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "ledger_report", "build", EXAMPLE_XLSX, "-o", out, "-q"],
                check=True,
            )
            walls.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {
        "wall_s": round(min(walls), 2),
        "cpu_s": round(min(cpus), 2),
        "load": round(os.getloadavg()[0], 1),
        "goal_wall_s": BUILD_GOAL_S,
    }


def _fresh_cpu(code: str) -> float:
    """CPU seconds (user + system, with the processes it starts) of ``python -c code``."""
    import subprocess

    before = _children_cpu()
    subprocess.run([sys.executable, "-c", code], check=True)
    return _children_cpu() - before


def floor_cpu(repeat: int) -> dict:
    """The CPU seconds the libraries alone spend on the example's bytes, the least of ``repeat``
    runs each: the interpreter's start; WeasyPrint's import (its library search included) and its
    layout and PDF of the same pages as one document (``render_html``: the example's pages are
    laid out once, at their first guesses); XlsxWriter's import and its writing of the same
    formula cells with their values (``bench_workbook.xlsxwriter_alone``).  No build of these
    bytes takes less CPU, nor less wall time than half of it on 2 cores."""
    import bench_workbook

    from ledger_report.inputs import read_configs
    from ledger_report.render.workbook import render_xlsx

    ledgers = list(compute_many(read_configs(EXAMPLE)))
    html = handout.render_html(ledgers, "en")
    base = handout.templates_dir().as_uri() + "/"
    sheets = bench_workbook.formula_cells(render_xlsx(ledgers, "en"))

    def pages() -> bytes:
        return weasyprint.HTML(string=html, base_url=base).write_pdf()

    def least(code: str) -> float:
        return min(_fresh_cpu(code) for _ in range(repeat))

    bare = least("pass")
    got = {
        "interpreter_s": bare,
        "weasyprint_import_s": least("import weasyprint") - bare,
        "weasyprint_pages_s": bench_workbook.cpu_seconds(pages, repeat)[0],
        "xlsxwriter_import_s": least("import xlsxwriter") - bare,
        "xlsxwriter_formulas_s": bench_workbook.cpu_seconds(
            lambda: bench_workbook.xlsxwriter_alone(sheets), repeat
        )[0],
    }
    got = {k: round(v, 2) for k, v in got.items()}
    total = sum(got.values())
    return {**got, "cpu_s": round(total, 2), "wall_s_on_2_cores": round(total / 2, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "-n", type=int, default=100, help="configurations in the generated run (default 100)"
    )
    parser.add_argument("--lang", choices=("en", "zh", "both"), default="both")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per case; the fastest is reported"
    )
    parser.add_argument("--no-example", action="store_true", help="skip inputs/examples.csv")
    parser.add_argument(
        "--build",
        action="store_true",
        help="only time `ledger-report build inputs/examples.xlsx` (wall and CPU, --repeat runs)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="worker processes of the parallel run (default: the CPUs)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()

    if args.build:
        got = build_runs(max(args.repeat, 1))
        floor = floor_cpu(max(args.repeat, 1))
        if args.json:
            print(json.dumps({**got, "floor": floor}, indent=2))
        else:
            print(
                f"build inputs/examples.xlsx: wall {got['wall_s']:.2f} s (goal {BUILD_GOAL_S} s on 2 idle "
                f"cores), CPU {got['cpu_s']:.2f} s in all processes; load average {got['load']}"
            )
            print(
                f"the libraries alone on the same bytes: the interpreter {floor['interpreter_s']:.2f} s "
                f"of CPU, WeasyPrint's import {floor['weasyprint_import_s']:.2f} (its library search "
                f"included), its layout and PDF of the same pages {floor['weasyprint_pages_s']:.2f}, "
                f"XlsxWriter's import {floor['xlsxwriter_import_s']:.2f}, the same formulas with their "
                f"values {floor['xlsxwriter_formulas_s']:.2f}: {floor['cpu_s']:.2f} s of CPU, so no "
                f"build of these bytes takes less than {floor['wall_s_on_2_cores']:.2f} s on 2 cores"
            )
        return 0
    cases = [("generated", list(compute_many([config_from_mapping(r) for r in configs(args.n)])))]
    if not args.no_example and os.path.exists(EXAMPLE):
        from ledger_report.inputs import read_configs

        cases.append(("examples.csv", list(compute_many(read_configs(EXAMPLE)))))
    langs = ("en", "zh") if args.lang == "both" else (args.lang,)
    handout.render_pdf(cases[0][1][:1], "en", warnings=[], jobs=1)  # warm-up: fonts, CSS
    gc.collect()
    jobs = handout.default_jobs() if args.jobs is None else args.jobs
    results = [
        run(label, doc, lang, args.repeat, j)
        for label, doc in cases
        for lang in langs
        for j in sorted({1, jobs})
    ]

    if args.json:
        print(
            json.dumps(
                {
                    "python": platform.python_version(),
                    "interpreter": interpreter(),
                    "weasyprint": weasyprint.__version__,
                    "cpus": os.cpu_count(),
                    "jobs": jobs,
                    "goal_s_per_page": GOAL_S_PER_PAGE,
                    "goal_one_process_s_per_page": GOAL_ONE_PROCESS_S_PER_PAGE,
                    "results": results,
                },
                indent=2,
            )
        )
    else:
        print(
            f"WeasyPrint {weasyprint.__version__}, Python {platform.python_version()} ({interpreter()}), {os.cpu_count()} CPUs, "
            f"parallel runs with {jobs} worker processes; goals {GOAL_S_PER_PAGE} s per page in parallel, "
            f"{GOAL_ONE_PROCESS_S_PER_PAGE} in one process"
        )
        for r in results:
            print(
                f"{r['run']:>13} {r['lang']} jobs {r['jobs']}: {r['pages']:4d} pages in {r['seconds']:7.2f} s = "
                f"{r['s_per_page']:.3f} s/page (CPU {r['cpu_all_s_per_page']:.3f} s/page in all processes, {r['cpu_s_per_page']:.3f} here; then {r['gc_after_s']:.1f} s of deferred "
                f"garbage collection), {r['bytes'] / 1024:5.0f} KiB; parts {r['parts']}; "
                + (f"pages laid out {r['layouts']}; " if r["layouts"] is not None else "")
                + f"first-guess densities {r['first_guess_densities']}"
                + {None: "", True: "  (goal met)", False: "  (goal missed)"}[r["goal_met"]]
            )
            for w in r["warnings"]:
                print(f"    warning: {w}")
    return 1 if any(r["goal_met"] is False for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
