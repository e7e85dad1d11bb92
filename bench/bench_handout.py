"""The handout PDF: seconds per page (goals: <= 0.15 s per page in parallel, <= 0.25 in one process).

Renders, in English and in Chinese, (1) N varied configurations (default 100: a summary plus one
page each) and (2) the example input ``inputs/examples.csv``, each twice: in one process
(``jobs=1``) and as ``build`` does it, the parts of the handout in worker processes side by side
(``jobs`` = the CPUs).  The handout goes through WeasyPrint's public API only (``HTML(string=...)
.render()``, ``Document.write_pdf``) and pypdf's ``PdfWriter``.  The ledgers are computed first,
untimed (``compute_many``); the timer covers ``render_pdf`` only: Jinja, WeasyPrint layout, the
re-layout of pages that overflow, writing each part's PDF and assembling them.  Prints pages,
seconds, seconds per page, CPU seconds per page of this process and of all processes (this one
and the workers it reaped; unlike wall time, it does not count time spent waiting for a CPU),
bytes, the pages laid out by each WeasyPrint pass (one process only: the first pass lays out
every page of a part, later passes only the pages that overflowed), the parts, and the
first-guess densities.  The machine's load shows as wall time above CPU time.  Each run is made
in a process forked for it from this one (after one untimed warm-up render here), so that no run
inherits the heap of the runs before it.

    python bench/bench_handout.py                # 100 configurations + the example, en and zh
    python bench/bench_handout.py -n 20 --lang zh --repeat 3 --json

Exit status 1 when a run of the generated configurations misses its goal (parallel: 0.15 s per
page; one process: 0.25 s per page; the example's figures are reported beside them).  On the
2-vCPU machines here (WeasyPrint 70, Debian's Python 3.11), the pages of the rebuilt handout
(8 pt, the spec walked section by section, bars by phase) measured with other work on the machine
(load 2.5-5): CPU 0.21-0.25 s per page over all processes in parallel and 0.24-0.30 in one process
(English and Chinese), wall 0.21-0.46 and 0.25-0.60 s per page; no idle machine was to be had
(the earlier, smaller page: 0.055-0.058 s per page in parallel and 0.116-0.118 in one process,
idle, 2026-12-01).  The first guess of a page's density going straight to run-on paragraphs for a
page estimated far too full for rows, and column cuts that leave room for the estimate's errors
(2026-12-02, run back to back with the version before, load 1-1.5): English 100 configurations,
pages laid out 168 -> 148, one process 0.454 -> 0.399 s per page (CPU 0.451 -> 0.398), in
parallel 0.323 -> 0.171 (CPU over all processes 0.426 -> 0.336); Chinese, pages laid out
139 -> 136, one process 0.425 -> 0.421 (CPU 0.418 -> 0.421), in parallel 0.207 -> 0.186 (CPU
0.361 -> 0.354): within the noise.  Both goals are still missed.  Measured and left out: one
FontConfiguration for all parts (0.04 s a part) and the stylesheet parsed once a part (~0.07 s a
layout), under 1 % together.  In one process the collector's pass after each part takes ~11 %
(2.0 s of 17.9 at 40 configurations), the price of freeing each part's pages.  This VM's speed
drifts by a fifth, and the wall time grows with its load: compare runs made together.  Without
``libharfbuzz-subset0`` WeasyPrint subsets fonts with fontTools and a Chinese handout takes
seconds more (the run's WeasyPrint warnings are printed, and that one names it).

2026-12-02, later (the version before and this one run back to back, load 1.4-1.9, 100
configurations): a figure's row and a legend line are a paragraph with its values in absolutely
placed spans (no table cells, no colgroups; every block of a column positioned, so each value is
painted and read right after its label), and the estimates calibrated by density (the flow and the
room above the columns measured at each density in both languages; a page estimated too full for
rows at d2 goes straight to run-on paragraphs).  Pages laid out: English 148 -> 116, Chinese 136 ->
115 (7 and 6 laid out again, not 39 and 27), ending at the same densities within a page or two.
English: one process 0.367 -> 0.306 s per page (CPU 0.367 -> 0.306), in parallel 0.161 -> 0.138
(CPU over all processes 0.316 -> 0.262): the parallel goal is met.  Chinese: one process 0.361 ->
0.295 (CPU 0.361 -> 0.295), in parallel 0.163 -> 0.135 (CPU 0.315 -> 0.257): met in parallel.  The
one-process goal (0.25) is still missed by ~20 %.  Measured and left out: the bars as one inline
SVG each (draws slower: 24 pages 6.27 -> 6.51 s) or as a gradient background with the numbers in
spans (6.51 -> 6.72); the state ledger's cells as absolutely placed spans (each with its position
in a style attribute: 6.03 -> 6.56 s); dropping the document before the collector resumes (the
pages are cycles: the collection after each part still takes ~0.65 s, ~10 % of one process).  Where
a page goes now (24 English pages, profiled): layout ~45 % (the tables left: the state ledger, the
bars, the lines tables, the verdicts), drawing and writing the PDF ~23 %, CSS cascade ~14 %; the 9
summary pages take ~0.2 s each.

2026-12-02, third (the version before and this one run back to back, load 1.4-2.0, 100
configurations; the machine ~20 % slower than for the entry above): fewer boxes on a page.  A
run-on pair is its label and its value in bold (no span around it; a bad pair is one bold span);
the HBM line is one dashed line down each chart's bars (placed with calc() in the bars table), not
one per bar; a segment narrower than ``page.HAIRLINE`` (0.4 % of the bar, ~0.2 mm, as wide as its
own white edge) is not drawn (the legend keys it with its value; the segments after it stay where
they were); the stylesheet lost its redundant rules (same bytes).  Function calls (cProfile, 24
English pages) 23.9 M -> 22.6 M; pages laid out unchanged (116 and 115).  English: one process
0.374 -> 0.320 s per page (CPU 0.374 -> 0.320), in parallel 0.166 -> 0.156 (CPU over all
processes 0.310 -> 0.287).  Chinese: one process 0.364 -> 0.325 (CPU 0.364 -> 0.319), in parallel
0.147 -> 0.143 (CPU 0.281 -> 0.270).  Scaled to the entry above (CPU 0.306 and 0.295), ~0.26 s per
page in one process: the one-process goal is still missed by ~5 %; at this run's load the
parallel goal was missed in English by both versions (0.166, 0.156) and met in Chinese.  Measured
and left out (cProfile calls, 24 English pages, 22.65 M): the segments as inline blocks (no
change), the legend's swatch inline or an inline block (no change, +0.8 %), the figures' values as
floats (+10 %, and a page more laid out twice), the bars as paragraphs with absolutely placed bars
(-0.8 %), the stylesheet parsed once a part and passed to ``render`` (-0.3 %), class-only CSS
selectors (-0.3 % for the simplifications kept: the cascade costs per element and property,
~354,000 computed values for 26 pages, not per selector), no tabular-nums (~2 % of CPU, within the
noise, and the figures would lose their column alignment), no white edge between segments
(-1.3 %).  Where the time goes now: the collector's pass after each part is ~10 % of one process
(3.5 s of 33.0 at 100 configurations: 0.55-1.0 s a part, 600,000-740,000 objects freed each time);
by ablation (24 English pages, calls): the figure rows ~18-25 %, the bars ~15 % (their segments
~10 % before this change), the state ledger ~13 %, the legend ~6 %; a page laid out again costs as
much as a page laid out first (~0.85 M calls).

2026-12-02, fourth (the version before and this one run back to back twice, in both orders, load
1.3-2.0, 100 configurations; the machine faster than for the entry above): fewer computed
styles.  WeasyPrint (70) shares one computed style among the elements that match the same rules
in parents that share one, but an element with an id or a style attribute gets one of its own,
and so then does every element in it.  The measuring ids were on the columns and the pieces, so
every element of a piece had its own (95 computed element styles a page, now 50): they are now
on childless elements only (a piece's heading, which carries the piece's top padding, and an
empty marker after each column's last piece; the last assumption has no bottom margin, which
would count in the measure to the marker and is not content); the bars have no ids (the test
numbers them itself); the bars' fills are classes from ``page.FILLS`` in a style element, not
style attributes.  The measures, the pages laid out and the pages are the same (every page of
both languages pixel-identical at 100 dpi; the PDF ~1 % smaller).  CPU per page in one process:
English 0.229 -> 0.212 and 0.217 -> 0.203, Chinese 0.239 -> 0.207 and 0.227 -> 0.204 (the
goal, 0.25, met by both versions at this machine's speed: ~7 % less in English, ~11 % in Chinese);
over all processes in parallel English 0.212 -> 0.190 and 0.196 -> 0.189, Chinese 0.197 -> 0.187
and 0.188 -> 0.179; the deferred collection after a one-process run 0.8-0.9 -> 0.5-0.6 s.
Instruction counts (cachegrind, the first-guess layout of 8 English pages parsed, laid out and
written): 12.08 G -> 11.57 G.  Measured and left out: the state ledger's body as paragraphs with
absolutely placed spans positioned by classes (+1.9 % instructions: a span costs what a cell
does); the collector left on with larger thresholds (20,000 or 100,000 young objects: no
change, it walks the same objects); ``position: relative`` dropped from the column blocks
(-0.2 %), ``overflow-wrap: normal`` (-1 %, but a long word would leave its box), no bookmarks
(-0.1 %), no overflow clip on the segments (+0.4 %), not tried: the stylesheet parsed once
(it takes 12 ms a layout, ~0.4 %).  Where the rest goes (cachegrind, 8 pages, removing one part at a time): the state
ledger 16 %, the bars 14 % (the segments 7 %), the figures' value spans 9 %, the legend 7 %, the
lines tables 6 %, bold runs 5 %, the layout line 3 %, formulas 3 %, the verdicts 2 %.  Two levers
are left.  (1) WeasyPrint's user-agent stylesheet has six universal pseudo-element rules
(``::marker``, ``::footnote-call``, ``::footnote-marker``, ``::note-call``, ``::note-marker``,
``::note-callback``), so every element gets six pseudo-element computed styles (2,270 a page;
only the list items' markers are drawn): skipping the others (a patch, for the measure only; 24
English configurations, paired runs) took 0.216-0.230 -> 0.197-0.217 s a page and half the
collector's pass, same bytes; the public API has no way to leave them out (upstream's to fix).
(2) Of the 7 pages laid out again (each ~0.15 s), 5 in English and 4 in Chinese are laid out at
the same density, cut again: the room left for the right column is estimated ~44 px short at d2
(median; 22-57), ~10 px at d3, because the chart's fixed heights (bars in mm) are scaled like
text; estimating the chart in px would save most of them (~3 %) but cut many pages' columns
differently.

2026-12-02, on a quiet machine (load ~1, nothing else running) after the merges: 100 configurations,
English 0.199 s per page in one process and 0.093 in parallel (CPU 0.176 over all processes), Chinese
0.198 and 0.089 (CPU 0.172); the example 0.189 / 0.098 and 0.184 / 0.096: both goals met.

2026-12-03, one layout for every page (8 pt at line height 1.2, two sheets per configuration: the
review sheet and its continuation; no run-on paragraphs; a headline strip), the version before and
this one measured the same way on a loaded machine (other work running: wall time is not
comparable, CPU is), ``-n 20 --lang en --jobs 1``: generated, CPU 0.278 -> 0.234 s per page (22 ->
42 pages: 0.306 -> 0.492 CPU s per configuration); the example, 0.233 -> 0.211 s per page (23 ->
44 pages: 0.255 -> 0.442 CPU s per configuration).  A page costs less (the continuation sheet is
light); a configuration costs ~1.7 times as much, as it has two.

2026-12-03, one page per configuration again (line height 1.15, formula texts, headline
duplicates, blank figures and the parameter breakdown left out on the fullest pages), loaded
machine, ``-n 20 --lang en --jobs 1``: generated 22 pages, CPU 0.220 s per page (pages laid out
[11, 2, 11, 3]; 2 of the 20 generated pages, MoE with ep 8 and a measured peak, still clipped by
~4 lines and reported); the example 23 pages, 0.206 s per page, none clipped.

2026-12-03, the build (#23 item 5: ``ledger-report build inputs/examples.xlsx`` in <= 3 s on 2
cores; ``--build`` times it).  Before: 5.1 s wall and 8.3 s of user CPU on an idle machine.  Where
a build's CPU went (loaded machine, one process each): the workbook's fork ~20 % (XlsxWriter's
``write_formula`` about half of it), the handout's two forks ~65 % (per part: the first layout
~60 %, pages laid out again ~12 %, ``write_pdf`` ~25 %), the parent ~12 % (~0.3 s of imports
and ~0.1 s reading and computing before it forks, then WeasyPrint's import, ~0.35 s loaded,
while the workbook runs).  What
the handout's calls go to (cProfile, the example in English, one layout a page, 19.5 M calls;
parts of the page removed one at a time): the three columns' flow 41 %, the bars 14 %, the state
ledger 14 %, the two summary pages 7 %, the legend 7 %, the lines tables 6.5 %, the headline
strip 5 %, the verdicts 3 %; an id on every flow item 10 % (so items carry ids only where a page
is laid out again or estimated tight); the value spans' absolute positions 5 % (floats instead:
+2 %).  Changed: each page's trim level and column cut chosen before layout from estimates fitted
to 111 measured pages (the room above the columns by level: header note lines, the state
ledger's total formulas; every cut between items tried, numpy, keeping 4 % of each column
spare), a sentence row run on after its label (a line and two boxes less), no ``gc.collect``
before forking.  Pages laid out: the example in English [11, 2, 12, 2] -> [11, 12, 1], in
Chinese [11, 12] both; 30 generated configurations in English 9 pages laid out again -> 0 (the
same 2 clipped), Chinese 0 both.  Calls (the example, one process): English 20.4 M -> 18.9 M,
Chinese 18.2 M -> 18.3 M (its pages now keep more formula texts: 13 at the first level, was 12).
The build, the version before and this one run alternately (``python -m ledger_report.cli build``,
user + system CPU of every process): three pairs at load 6.2-6.5, 10.05-10.78 -> 9.39-9.51 s
(-7 %); five pairs at load 1.5-3.1, 9.98-12.05 -> 10.00-13.08 s (the same within this shared
machine's noise); the handout in one process, two runs each, 4.22-4.40 -> 4.30-4.55 s.  So the
build's CPU is ~8 s on an idle machine either way, ~0.5 s of it serial: ~4.3 s wall on 2 idle
cores at best.  The 3 s goal is missed: it needs the build's CPU near 5.5 s, i.e. a handout page
at ~0.12 s of CPU with its PDF (now ~0.19 s), or a workbook well under XlsxWriter's own time.

2026-12-03, 16:00-16:25 UTC (#23 item 5, the machine loaded by other work, load 4.4-8.9: wall
time is the load's, and even CPU time drifts by a quarter between back-to-back runs).  Where a
part's time goes (cProfile, the example's 12-page part in English, one layout a page): WeasyPrint's
layout 42 % (tables 13 %, absolutely placed spans 6 %), drawing 26 % (text 14 %), the CSS
cascade 15 %, building the boxes 6 %, parsing the HTML 6 %; fonts subset with HarfBuzz 1.6 %,
zlib 1.8 %, pypdf's join of the parts ~0.01 s.  By removing one part of the page at a time
(calls, 8.69 M for 12 pages): the flow 40 % (the figure rows 24 %, their value spans 13 % of
which their absolute placement ~5 %), the chart 23 % (its bars table 16 %, the legend 6 %), the
state ledger 18 %, the verdicts and headline strip 9 %, the lines tables 6 %.  A forked worker's
first layout (fonts, the stylesheet) costs ~0.15 s more than the next: within the noise here.
Changed: a page too full for the first guess's spare room (``tight``) is cut, where the estimates'
cut would overflow by them, by the heights its flow has if every line count is right (a line
is exactly one line's height on the page, a heading 1.23 lines: ``page.PageData.nominal``,
``page.HEADING_LINES``); the example's deepseek-v3-by-name page (its column 2 px over) is laid
out once, not twice: pages laid out [11, 12, 1] -> [11, 12] in English, [11, 12] in Chinese
unchanged, the PDFs the same bytes; 30 generated configurations, the same two pages still
clipped, no page more laid out again.  Calls for the example in one process: English 18.81 M ->
18.05 M (-4.1 %), Chinese 18.25 M both.  Measured (back to back, load 4.4-8.9): the example in
English, CPU per page over all processes 0.289 and 0.236 (before) against 0.242 and 0.285 (after)
in one process, 0.287 and 0.206 against 0.228 and 0.224 in parallel; the build 8.98-9.75 s of
CPU against 8.76-10.59 s, wall 16-21 s: the noise is larger than the change.  Measured and left
out: the legend's entries without their wrapping span (-0.8 % calls, but a Chinese legend then
wraps at another place), the values as floats (+2.4 % calls), the headline strip's label and
value as spans in one cell (+1.4 %).  The 3 s goal is still missed: at ~0.2 s of CPU a page the
handout alone is ~4.6 s of CPU, and what is left is spread over every box of the page (no part
of WeasyPrint's work is more than a sixth): halving it needs half the boxes, i.e. another page.
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
        def layout(view, fetcher, font_config):
            self.layouts.append(len(view["pages"]) + len(view["summary_pages"]))
            return self._original(view, fetcher, font_config)

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
                [sys.executable, "-m", "ledger_report.cli", "build", EXAMPLE_XLSX, "-o", out, "-q"],
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
        if args.json:
            print(json.dumps(got, indent=2))
        else:
            print(
                f"build inputs/examples.xlsx: wall {got['wall_s']:.2f} s (goal {BUILD_GOAL_S} s on 2 idle "
                f"cores), CPU {got['cpu_s']:.2f} s in all processes; load average {got['load']}"
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
