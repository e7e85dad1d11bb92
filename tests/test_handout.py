"""The handout PDF: a summary ranked by the verdicts, then one A4-landscape page per configuration
that walks the report spec (through ``render/view.py``): every label,
value and formula text on a page is one the view gives for that ledger (a page too full for all
of them leaves out the formula texts and, at the last trim level, the figures
``page.PageData._kept`` names, and says so in its foot), and a section the spec gains appears with no template
change.  Chinese with the Simplified Chinese face, type no smaller than 8 pt, bars that read in
greyscale, no WeasyPrint warning, nothing fetched or embedded from user text, one page however
full, and the same bytes for the same input.

The PDFs are read back with poppler-utils (pdfinfo, pdftotext, pdffonts, pdfdetach, pdftoppm) and
pypdf; a missing poppler or CJK font fails these tests rather than skipping them
(scripts/setup.sh installs both).
"""

from __future__ import annotations

import dataclasses
import gc
import html as htmllib
import io
import math
import os
import re
import statistics
import subprocess
from pathlib import Path

import jinja2
import pytest
from test_docs import OUTSIDE  # the words that would point a reader outside the repository

from ledger_report.engine import compute, compute_many, config_from_mapping
from ledger_report.render import handout, view
from ledger_report.render import page as pg

QWEN3_8B = {
    "name": "qwen3-8b-zero1",
    "notes": "Example 4: ZeRO-1 on 4 GPUs = 4N + 12N/4 = 7N.",
    "layers": 36,
    "hidden": 4096,
    "heads": 32,
    "kv_heads": 8,
    "head_dim": 128,
    "ffn_hidden": 12288,
    "vocab": 151936,
    "qk_norm": True,
    "seq_len": 8192,
    "global_batch": 384,
    "tokens": 10**11,
    "days": 30,
    "reserve_days": 5,
    "dp": 4,
    "zero": 1,
    "price_per_gpu_hour": 2.5,
}
MOE_35B = {
    "name": "moe35b-ep8-bf16-buffer",
    "notes": "bf16 grad buffer, 13.8 + 13.8 + 10.5 = 38.1 GB resident; measured peak 85.6 GB.",
    "params_total": 35 * 10**9,
    "params_per_rank": 6_900_000_000,
    "params_active": 3 * 10**9,
    "layers": 48,
    "hidden": 2048,
    "heads": 16,
    "kv_heads": 2,
    "head_dim": 256,
    "ffn_hidden": 512,
    "vocab": 151936,
    "qk_norm": True,
    "experts": 256,
    "topk": 8,
    "moe_ffn_hidden": 512,
    "shared_expert_ffn": 512,
    "full_attention_every": 4,
    "linear_key_heads": 16,
    "linear_value_heads": 32,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_conv_kernel": 4,
    "framework": "megatron",
    "weight_dtype": "bf16",
    "grad_dtype": "bf16",
    "dp": 40,
    "ep": 8,
    "zero": 1,
    "seq_len": 49152,
    "micro_batch": 1,
    "global_batch": 80,
    "recompute": "full",
    "logits_dtype": "bf16",
    "gpu": "H20",
    "mfu": 0.4,
    "measured_peak_gb": 85.6,
}
# Parameter counts only: no architecture, no tokens, so many figures are null (printed as "—").
MOE_5T = {
    "name": "moe5t-18B",
    "notes": "90 TB = 81.9 TiB.",
    "params_total": 5 * 10**12,
    "weight_dtype": "bf16",
    "grad_dtype": "fp32",
    "master_dtype": "fp32",
}
# Master weights and moments offloaded to host memory: location column and offload rows.
OFFLOAD = {
    "name": "deepspeed-z3-offload-13b",
    "layers": 40,
    "hidden": 5120,
    "heads": 40,
    "ffn_hidden": 13824,
    "vocab": 32000,
    "framework": "deepspeed",
    "dp": 8,
    "zero": 3,
    "master_at": "host",
    "optimizer_at": "host",
    "seq_len": 4096,
    "global_batch": 64,
    "recompute": "full",
    "gpu": "A100-80GB",
    "mfu": 0.35,
    "tokens": 20 * 10**9,
    "days": 10,
    "reserve_days": 1,
    "price_per_gpu_hour": 1.8,
}
HOSTILE_NOTE = (
    '{{ 7*7 }} &lt; <a rel="attachment" href="file:///etc/passwd">passwd</a> <img src="file:///etc/hostname">'
    '<link rel="attachment" href="file:///etc/passwd"><style>@import url("file:///etc/hostname");</style>'
    "<script>alert(1)</script></td></tr>"
)
# Words the project's own bookkeeping uses, which no label or source on a page may show.


def _ledgers(*rows: dict) -> list:
    return list(compute_many([config_from_mapping(r) for r in rows]))


def _run(*args: str | os.PathLike) -> str:
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True).stdout


def _pages_text(pdf_path: Path) -> list[str]:
    """pdftotext per page (form feeds separate pages), runs of whitespace collapsed to one space."""
    raw = _run(
        "pdftotext", "-raw", "-enc", "UTF-8", pdf_path, "-"
    )  # content-stream order: a wrapped cell stays together
    pages = raw.split("\f")
    if pages and not pages[-1].strip():
        pages.pop()
    return [re.sub(r"\s+", " ", p) for p in pages]


def _squeezed(text: str) -> str:
    """No whitespace, and a soft hyphen or a hyphen that ends a wrapped line does not count."""
    return re.sub(r"\s+", "", text).replace("\u00ad", "")


def _sheets(pages: list[str], k: int, n_summary: int = 1) -> str:
    """The text of configuration k: its one page."""
    return pages[n_summary + k]


# The foot of a page that left texts out for room (templates/strings.j2 formulas_elsewhere).
TRIMMED_FOOT = {"en": "Left out for room", "zh": "为节省版面未列出"}


def _page_count(pdf_path: Path) -> int:
    return int(re.search(r"^Pages:\s+(\d+)", _run("pdfinfo", pdf_path), re.M).group(1))


def _render(tmp: Path, name: str, ledgers: list, lang: str) -> tuple[Path, bytes, list[str]]:
    warnings: list[str] = []
    pdf = handout.render_pdf(ledgers, lang=lang, warnings=warnings)
    path = tmp / f"{name}-{lang}.pdf"
    path.write_bytes(pdf)
    return path, pdf, warnings


@pytest.fixture(scope="module")
def ledgers() -> list:
    return _ledgers(QWEN3_8B, MOE_35B, MOE_5T, OFFLOAD)


@pytest.fixture(scope="module")
def built(ledgers, tmp_path_factory) -> dict[str, tuple[Path, bytes, list[str]]]:
    """The four-configuration handout in both languages, rendered once for the module."""
    tmp = tmp_path_factory.mktemp("handout")
    return {lang: _render(tmp, "four", ledgers, lang) for lang in ("en", "zh")}


def _expected(lg, lang: str, trimmed: bool = False) -> list[str]:
    """Every text the view gives for a configuration's page (``view.sections`` and
    ``view.assumptions``): section titles, figure labels and values (and GiB), formula texts,
    table lines' labels and cells, the phases' items (the chart's legend), verdicts and reasons.
    ``trimmed`` (the page's foot says texts were left out for room): no formula texts, and only
    the figures the last trim level keeps (``page.PageData._kept``: the headline strip shows its
    own figures' values)."""
    data = pg.page_data(lg, lang)
    out: list[str] = []
    in_lines: set[str] = set()  # a figure a table line shows already is not repeated (nor its GiB)
    for s in view.sections(lg, lang):
        if s.key == "verdicts":
            reasons = {
                r.name: r.text
                for r in next(x for x in view.sections(lg, lang) if x.key == "verdict_reasons").rows
            }
            colon = ": " if lang == "en" else "："
            out += [f"{r.label}{colon}{r.text} {reasons[r.name]}" for r in s.rows]
            continue
        if s.key == "verdict_reasons":
            continue
        if s.key in pg.NOTE_SECTIONS:  # the rules the row breaks, in words, lead the note line
            out += [r.text.rstrip("; ；") for r in s.rows]
            continue
        out.append(s.title)
        for r in s.rows:
            if trimmed and not data._kept(s.key, r.key, r.value is None):
                continue
            out += (
                [r.label, r.text]
                + ([r.gib] if r.gib and r.key not in in_lines else [])
                + ([r.formula] if pg._formula(r.formula) and not trimmed else [])
            )
        fixed = s.fixed
        for ln in s.lines:
            in_lines.update(ln.keys.values())
            out.append(ln.label)
            shown = [name for name in ln.cells if name not in fixed and name not in ln.items]
            narrow = s.chart is None and len(s.columns) <= pg.NARROW_COLUMNS
            zero = narrow and pg._is_zero(ln, shown)  # listed in one sentence: its numbers only
            for name in shown:
                if zero and not (
                    isinstance(ln.values[name], (int, float))
                    and not isinstance(ln.values[name], bool)
                ):
                    continue
                if s.chart is None or name == "bytes_per_rank":
                    out.append(ln.cells[name])
            for parts in ln.items.values():
                out += [f"{it.label} {it.text}" for it in parts if it.value]
            if pg._formula(ln.formula) and narrow and not zero and not trimmed:
                out.append(ln.formula)
        if s.chart is not None and s.chart.note:
            out.append(s.chart.note)
    out += view.assumptions(lg, lang)
    return [t for t in out if t]


def _missing(lg, lang: str, page: str) -> list[str]:
    squeezed = _squeezed(page)
    trimmed = _squeezed(TRIMMED_FOOT[lang]) in squeezed
    return [t for t in _expected(lg, lang, trimmed) if _squeezed(t) not in squeezed]


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d[\d,]*(?:\.\d+)?(?:e\d+)?", text)


# --------------------------------------------------------------------------------------------
# Pages and what they show


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.slow
def test_one_page_per_configuration_after_the_summary(built, ledgers, lang):
    """pdfinfo: pages = one per configuration + 1 summary page, each A4
    landscape (841.89 × 595.28 pt)."""
    path, _, _ = built[lang]
    assert _page_count(path) == len(ledgers) + 1
    sizes = re.findall(
        r"Page\s+\d+ size:\s+([\d.]+) x ([\d.]+)", _run("pdfinfo", "-f", "1", "-l", "5", path)
    )
    assert sizes and all((round(float(w)), round(float(h))) == (842, 595) for w, h in sizes)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_page_shows_what_the_view_gives_for_its_ledger(built, ledgers, lang):
    """Page k+1 shows configuration k's name and every text ``view.sections`` and
    ``view.assumptions`` give for its ledger in that language, and no other configuration's."""
    path, _, _ = built[lang]
    pages = _pages_text(path)
    for k, lg in enumerate(ledgers):
        page = _sheets(pages, k)
        assert _squeezed(lg.name) in _squeezed(page), lg.name
        missing = _missing(lg, lang, page)
        assert not missing, f"{lg.name} ({lang}): missing {missing}"
        for other in ledgers:
            if other is not lg:
                assert _squeezed(other.name) not in _squeezed(page)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_step_time_line_shows_latency_apart_from_bandwidth_and_what_binds(built, ledgers, lang):
    """#24 item 8: a page's step-time line (the terms of the step) goes on with the exposed
    communication as latency and bandwidth and the step's binding term, as the engine computed
    them (time_comm_latency_s, time_comm_bandwidth_s, step_bound), in the one line it had.  The
    two parts make up the communication terms (time.py: time_comm_bandwidth_s is the terms less
    the latency), checked on the ledger by hand; each is printed as the terms are, to three
    significant figures (two decimals from 1 s, five below 0.001 s)."""
    path, _, _ = built[lang]
    pages = _pages_text(path)
    sfx = "" if lang == "en" else "_zh"
    words = {"en": ("latency ", "bandwidth ", "bound: "), "zh": ("延迟 ", "带宽 ", "瓶颈：")}[lang]

    def sig(x: float) -> str:
        d = next((d for at, d in ((100, 0), (10, 1), (1, 2), (0.1, 3), (0.01, 4)) if x >= at), 5)
        return f"{x:,.{d}f}"

    shown = 0
    for k, lg in enumerate(ledgers):
        v = lg.values
        page = _squeezed(_sheets(pages, k))
        line = v["step_time_terms_bound" + sfx]
        assert line.startswith(v["step_time_terms" + sfx]) and _squeezed(line) in page, lg.name
        if v["step_bound"] is not None:
            assert _squeezed(words[2] + v["step_bound" + sfx]) in _squeezed(line)
        lat, bw = v["time_comm_latency_s"], v["time_comm_bandwidth_s"]
        if not (lat or bw):
            continue
        comm = sum(v[f"time_{g}_s"] for g in ("tp", "cp", "ep", "pp", "dp"))
        assert lat + bw == pytest.approx(comm, rel=1e-9)  # the split is the whole communication
        for word, x in zip(words, (lat, bw)):
            assert _squeezed(f"{word}{sig(x)} s") in _squeezed(line), (lg.name, word, sig(x))
        shown += 1
    assert shown >= 2  # the 8B job and the 35B MoE communicate


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_number_on_a_page_comes_from_its_ledger(built, ledgers, lang):
    """Each number printed on a configuration page is part of a text the view gives for that
    ledger, of its name or notes, or of the page's rank and page number: the handout prints no
    figure of its own.  (The bar segments' numbers are legend keys, 1 to 16, which the text layer
    may run together: "56" for segments 5 and 6.)"""
    path, _, _ = built[lang]
    pages = _pages_text(path)
    n_pages = len(pages)
    for k, lg in enumerate(ledgers):
        known = _squeezed(
            " ".join(_expected(lg, lang) + [lg.name, str(lg.config.get("notes") or "")])
        )
        book_rank = pg.rank_order(ledgers).index(k) + 1
        allowed = {
            str(book_rank),
            str(len(ledgers)),
            str(k + 2),
            str(n_pages),
        } | {str(j) for j in range(1, 17)}
        strays = [
            n
            for n in _numbers(_sheets(pages, k))
            if n not in allowed and n not in known and not re.fullmatch(r"(1[0-6]|[1-9])+", n)
        ]
        assert not strays, f"{lg.name} ({lang}): numbers not from the ledger {strays}"


def test_page_order_header_verdicts_ledger_chart_sections_assumptions(built, ledgers):
    """The page reads in the spec's order: name, the verdicts with their reasons, the state
    ledger, the memory picture by phase (its HBM line, the peak phase marked, the legend, the
    first-step note), the figure sections, the assumptions."""
    lg = ledgers[0]
    html = handout.render_html(
        [lg], "en"
    )  # the reading order (the PDF's text layer follows the paint order)
    page = _squeezed(_pages_text(built["en"][0])[1])
    secs = {s.key: s for s in view.sections(lg, "en")}
    # the left block (the ledger over two columns), then the right (the chart over one column)
    order = [f'<h1 class="short">{lg.name}</h1>']
    order += [f'<p class="badge">{r.label}: {r.text}</p>' for r in secs["verdicts"].rows]
    order += [f"<h2>{secs['states'].title}</h2>"]
    # the figure sections in reading order (page.FLOW_FIRST, then page.FLOW_LAST)
    order += [
        f">{secs[k].title}</h2>" for k in ("budget", "peak", "compute", "params", "uncounted")
    ] + [">Assumptions</h2>"]  # a piece's heading has an id
    positions = [html.index(t) for t in order]
    assert positions == sorted(positions), order
    chart = [
        f'<div class="chart"><h2>{secs["phases"].title}</h2>',
        "← peak",
        secs["phases"].chart.note,
        '<div class="col c2">',
    ]
    positions = [html.index(t) for t in chart]
    assert positions == sorted(positions) and positions[0] > html.index('<div class="right">'), (
        chart
    )
    assert (
        _squeezed(secs["phases"].chart.note) in page
    )  # the first-step note is shown with the chart
    assert _squeezed(f"HBM per GPU {secs['phases'].chart.limit.text}") in page


def test_the_peak_phase_is_the_registrys(ledgers):
    """The bar marked as the peak is the phases line whose id is the ledger's ``peak_phase``; the
    chart's note is the first-step note where it is shown (and then not among the assumptions)."""
    for k, lg in enumerate(ledgers):
        d = pg.page_data(lg, "en")
        marked = [b["id"] for c in d.charts for b in c["bars"] if b["marked"]]
        assert marked == ([lg["peak_phase"]] if lg["peak_phase"] else [])
        notes = [it["text"] for it in d.items if it["kind"] == "note"]
        if lg["note_first_step_shown"]:
            assert (
                d.charts[0]["note"] == lg["note_first_step"] and lg["note_first_step"] not in notes
            )


def test_verdict_badges_take_their_tone_from_the_registry(ledgers):
    """Each verdict badge is coloured by its ``verdict_*_tone`` quantity (the HTML class), and
    shows the verdict's text and its reason."""
    html = handout.render_html(ledgers, "en")
    for lg in ledgers:
        for v in ("memory", "deadline", "bandwidth"):
            tone = lg[f"verdict_{v}_tone"]
            assert tone in ("good", "bad", "unknown")
            assert (
                f'<td class="v tone-{tone}"><p class="badge">{v} verdict: {lg[f"verdict_{v}"]}</p>'
                f'<p class="why">{lg[f"verdict_{v}_reason"]}</p></td>' in html
            )


def test_state_ledger_shows_only_shown_lines_with_whole_sharded_group_and_location(built, ledgers):
    """The ledger rows are the spec's lines whose ``show`` is true, with stored whole/sharded, the
    shard group and the location (host for the offloaded master weights and moments)."""
    path, _, _ = built["en"]
    page = _sheets(_pages_text(path), 3)  # OFFLOAD
    lines = next(s for s in view.sections(ledgers[3], "en") if s.key == "states").lines
    assert [ln.id for ln in lines] == [
        ln.id
        for ln in handout._Book(ledgers, "en").ledgers[3].model.spec.section("states").lines
        if ledgers[3][ln.show]
    ]
    assert "sharded" in page and "host" in page
    for ln in lines:
        row = " ".join(
            [ln.label]
            + [
                ln.cells[c]
                for c in (
                    "dtype",
                    "bytes_per_param",
                    "sharded",
                    "shard_group",
                    "params_on_rank",
                    "bytes_per_rank",
                    "location",
                )
            ]
        )
        assert row in page, row


def test_summary_ranks_by_the_verdicts_then_cost_then_gpus(built, ledgers):
    """The summary lists every candidate once, in the order of the spec's ``rank`` values
    (``verdicts_bad``, cost, GPUs): rows with a bad verdict come after the others, and show the
    verdict in words ("does not fit", "late by N days") so the order reads in greyscale."""
    path, _, _ = built["en"]
    summary = _squeezed(_pages_text(path)[0])
    order = pg.rank_order(ledgers)
    positions = [summary.index(ledgers[i].name) for i in order]
    assert positions == sorted(positions)
    bad = [ledgers[i]["verdicts_bad"] for i in order]
    assert bad == sorted(bad) and True in bad and False in bad
    for lg in ledgers:
        row = _squeezed(summary[summary.index(lg.name) :])
        assert _squeezed(lg["verdict_memory"]) in row and _squeezed(lg["verdict_deadline"]) in row
        for r in view.short_rows(lg, lg.model.spec.summary, "en"):
            assert _squeezed(r.text) in row
    late = [lg for lg in ledgers if str(lg["verdict_deadline"]).startswith("late by")]
    assert (
        late
        and all(_squeezed(lg["verdict_deadline"]) in summary for lg in late)
        and "doesnotfit" in summary
    )


@pytest.mark.slow
def test_summary_order_is_stable_and_puts_blanks_last():
    """Ties keep the input order; a blank cost ranks after every known one."""
    a = dict(QWEN3_8B, name="a")
    b = dict(QWEN3_8B, name="b")
    c = dict(QWEN3_8B, name="c", price_per_gpu_hour=None)
    d = dict(QWEN3_8B, name="d", price_per_gpu_hour=1.0, days=60)
    lgs = _ledgers({k: v for k, v in c.items() if v is not None}, a, b, d)
    order = [lgs[i].name for i in pg.rank_order(lgs)]
    assert lgs[3]["verdicts_bad"] is True or order[0] == "d"
    assert order.index("a") < order.index("b")
    same_badness = [
        n
        for n in order
        if lgs[[x.name for x in lgs].index(n)]["verdicts_bad"] == lgs[0]["verdicts_bad"]
    ]
    assert same_badness[-1] == "c"


@pytest.mark.slow
def test_a_figure_the_spec_adds_appears_on_the_page(tmp_path):
    """A spec with one more figure (``support.spec.with_figure``) gives ledgers whose pages show its label
    and value, with no template or renderer change."""
    from support.spec import with_figure

    from ledger_report.report import DEFAULT, Figure, Model

    spec = with_figure(DEFAULT.spec, "compute", Figure("train_window_days"))
    model = Model(DEFAULT.registry, spec, DEFAULT.tables)
    lg = compute(config_from_mapping(QWEN3_8B), model)
    row = next(
        r
        for s in view.sections(lg, "en")
        if s.key == "compute"
        for r in s.rows
        if r.key == "train_window_days"
    )
    assert row.label and row.text.endswith("days")
    path, _, warnings = _render(tmp_path, "extra", [lg], "en")
    assert warnings == []
    page = _squeezed(_sheets(_pages_text(path), 0))
    if _squeezed(TRIMMED_FOOT["en"]) in page and row.key in pg.page_data(lg, "en").headline_keys:
        # a full page prints a headline figure once, in the strip, under its short label
        strip = {r.key: r for r in view.short_rows(lg, lg.model.spec.headline, "en")}[row.key]
        assert strip.text == row.text
        assert _squeezed(strip.label) in page and _squeezed(strip.text) in page
    else:
        assert _squeezed(f"{row.label} {row.text}") in page
    assert not _missing(lg, "en", _sheets(_pages_text(path), 0))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_project_bookkeeping_on_the_pages(built, lang):
    """No label or source on any page mentions the project's bookkeeping words."""
    path, _, _ = built[lang]
    text = " ".join(_pages_text(path)).lower()
    assert not OUTSIDE.search(text), OUTSIDE.search(text)


# --------------------------------------------------------------------------------------------
# Print: type size, black figures, bars in greyscale


def _text_sizes(pdf: bytes) -> dict[int, dict[float, int]]:
    """Per page, the size in points of the text drawn (pypdf's text visitor: the font size times
    the vertical scale of the text and transformation matrices), counted in characters."""
    import pypdf

    out: dict[int, dict[float, int]] = {}
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    for n, page in enumerate(reader.pages):
        sizes: dict[float, int] = {}

        def visit(text, cm, tm, font, size, sizes=sizes):
            if text.strip():
                pt = round(size * math.hypot(tm[2], tm[3]) * math.hypot(cm[2], cm[3]), 2)
                sizes[pt] = sizes.get(pt, 0) + len(text.strip())

        page.extract_text(visitor_text=visit)
        out[n] = sizes
    return out


# Noto Sans CJK SC (the handout's one face; /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc,
# read with fontTools): hhea ascender 1160 and descender -288 of 1000 units, the box pdftotext
# gives each line (1.448 em); the ink of ordinary text lies within 0.84 em above the baseline
# ("(" 818, "|" 838, ideographs 795) and 0.25 em below it ("g" -250, "y" -234, "p" -229).
FONT_BOX_EM = 1.448
FONT_BOX_DESCENT_EM = 0.288
INK_ABOVE_EM, INK_BELOW_EM = 0.84, 0.25


def _text_lines(pdf_path: Path, page: int) -> list[tuple[float, float, float, float, float]]:
    """pdftotext -bbox-layout's lines of a page, each as (x0, x1, baseline, size, block): the size
    and the baseline from the line's box (the font box above)."""
    xml = _run("pdftotext", "-bbox-layout", "-f", str(page), "-l", str(page), pdf_path, "-")
    out = []
    for b, block in enumerate(re.split(r"<block ", xml)[1:]):
        for x0, y0, x1, y1 in re.findall(
            r'<line xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)"', block
        ):
            size = (float(y1) - float(y0)) / FONT_BOX_EM
            out.append((float(x0), float(x1), float(y1) - FONT_BOX_DESCENT_EM * size, size, b))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_text_lines_of_an_example_page_never_overlap(tmp_path, lang):
    """The first two configurations of inputs/examples.csv (a summary, then a page for each
    configuration), read back with ``pdftotext -bbox-layout``: no two lines
    that share any width overlap in their ink (from above the ascenders to below the descenders,
    FONT_BOX_EM above), and consecutive lines of a paragraph (one pdftotext block, same size,
    same left edge) stand at least 1.15 of their size apart.  At the line heights of the handout
    before (1.0 and 0.96 of 8 pt: 8.0 and 7.7 pt from baseline to baseline against 8.7 pt of ink,
    0.84 + 0.25 em) the lines overlapped."""
    from ledger_report.inputs import read_configs

    root = Path(__file__).resolve().parents[1]
    lgs = list(compute_many(read_configs(root / "inputs" / "examples.csv")))[:2]
    path, _, warnings = _render(tmp_path, "example", lgs, lang)
    assert warnings == [] and _page_count(path) == 3
    steps: list[float] = []  # baseline to baseline over the size, within paragraphs
    for page in range(1, 4):
        lines = _text_lines(path, page)
        assert len(lines) > 20, page
        for i, (ax0, ax1, ab, asz, _blk) in enumerate(lines):
            for bx0, bx1, bb, bsz, _ in lines[i + 1 :]:
                if min(ax1, bx1) - max(ax0, bx0) <= 0.5:
                    continue  # side by side
                top_a, bottom_a = ab - INK_ABOVE_EM * asz, ab + INK_BELOW_EM * asz
                top_b, bottom_b = bb - INK_ABOVE_EM * bsz, bb + INK_BELOW_EM * bsz
                overlap = min(bottom_a, bottom_b) - max(top_a, top_b)
                assert overlap <= 0.05, (lang, page, (ax0, ab, asz), (bx0, bb, bsz))
        steps += [
            (b[2] - a[2]) / a[3]
            for a, b in zip(lines, lines[1:])
            if a[4] == b[4] and abs(a[3] - b[3]) < 0.05 and abs(a[0] - b[0]) < 0.5 and b[2] > a[2]
        ]
    assert len(steps) > 10 and min(steps) >= 1.15 - 0.01, (lang, sorted(steps)[:5])


def test_type_at_least_8_pt_and_line_height_at_least_1_15_in_the_stylesheet():
    """templates/handout.css, the handout's only stylesheet: every font size is 8 pt or more (in
    pt, or in em of the 8 pt body: 1 em or more), and every line height at least 1.15 of the
    type (unitless; in mm, against 8 pt = 2.822 mm), except the zero-size wrapper of each sheet
    (font-size 0, no text)."""
    css = (Path(handout.templates_dir()) / handout.STYLESHEET).read_text(encoding="utf-8")
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    rules = re.findall(r"([^{}]+)\{([^{}]*)\}", css)
    sizes, heights = [], []
    for selector, body in rules:
        decl = dict(
            (k.strip(), v.strip()) for k, _, v in (d.partition(":") for d in body.split(";")) if v
        )
        if decl.get("font-size") == "0":
            continue  # section.page: the strutless wrapper of each sheet
        if "font-size" in decl:
            sizes.append((selector.strip(), decl["font-size"]))
        if "line-height" in decl:
            heights.append((selector.strip(), decl["line-height"]))
    assert len(sizes) >= 5 and len(heights) >= 3
    for selector, v in sizes:
        n = float(re.match(r"[\d.]+", v).group())
        assert (v.endswith("pt") and n >= 8) or (v.endswith("em") and n >= 1), (selector, v)
    for selector, v in heights:
        n = float(re.match(r"[\d.]+", v).group())
        ratio = n / (8 * 25.4 / 72) if v.endswith("mm") else n
        assert ratio >= 1.15, (selector, v)
    # the line the renderer estimates with (read from the sheet's rule): 8 pt at 1.15, by hand
    assert handout.LINE_PX == pytest.approx(8 * 1.15 / 0.75) and (".sheet", "1.15") in heights


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.slow
def test_no_text_below_8_pt_on_a4(built, lang):
    """Every character on every page (summary, configuration pages, footer) is drawn at 8 pt or
    more: the PDF pages are A4 landscape at 100 %, so that is the printed size."""
    _, pdf, _ = built[lang]
    sizes = _text_sizes(pdf)
    assert len(sizes) == 5 and all(sizes.values())
    small = {n: {pt: c for pt, c in s.items() if pt < 7.99} for n, s in sizes.items()}
    assert not any(small.values()), small
    # and the text of pdftotext's bounding boxes agrees: no word box shorter than 8 pt of type
    html = _run("pdftotext", "-bbox", "-f", "2", "-l", "2", built[lang][0], "-")
    heights = [
        float(b) - float(a)
        for a, b in re.findall(r'yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)"', html)
    ]
    assert heights and min(heights) >= 8.0


def test_figures_are_black_and_no_text_is_light_grey():
    """The stylesheet sets every text colour to black (numbers and formulas included): no
    ``color`` other than #000000 for text, except white numbers on the dark bar segments."""
    css = (handout.templates_dir() / "handout.css").read_text(encoding="utf-8")
    colours = re.findall(r"(?<![-\w])color:\s*(#[0-9a-fA-F]{6})", css)
    assert colours and set(c.lower() for c in colours) == {"#000000"}
    assert {fg for _bg, fg in pg.FILLS} <= {"#000000", "#ffffff"}
    assert all((fg == "#ffffff") == (_luminance(bg) < 128) for bg, fg in pg.FILLS)


def _grey(pdf_path: Path, page_no: int, tmp: Path) -> "Image.Image":  # noqa: F821
    from PIL import Image

    out = tmp / f"grey-{page_no}"
    _run(
        "pdftoppm",
        "-gray",
        "-r",
        "100",
        "-f",
        str(page_no),
        "-l",
        str(page_no),
        "-png",
        pdf_path,
        out,
    )
    (png,) = tmp.glob(f"grey-{page_no}*.png")
    return Image.open(png).convert("L")


@pytest.mark.parametrize(
    "row", [QWEN3_8B, MOE_35B, dict(OFFLOAD, master_at="hbm", optimizer_at="hbm", gpu="H100-SXM")]
)
@pytest.mark.slow
def test_bar_segments_differ_in_greyscale(row, tmp_path):
    """The page rendered to a greyscale PNG (``pdftoppm -gray -r 100``): each pair of touching
    segments of every bar differs by at least 20 levels of 255.

    The measure: the bars' boxes come from the layout itself (ids the test gives them;
    CSS px, 1/96 in, so × 100/96 for 100 dpi) and each segment's span from the page's data (its
    left and width in per cent of the bar).  A segment's grey is the median of the pixels in two
    rows 2-3 px below the bar's top edge (inside its border, above the segment's number: an 8 pt
    digit in a 3.8 mm bar starts ~4 px down) across the middle half of its width (away from its
    borders and from the dashed HBM line, which a median ignores).  Segments narrower than
    ``page.VISIBLE`` per cent of the bar are slivers (they are keyed in the legend): the segments
    either side of one are compared with each other, since to the eye they touch."""
    lgs = _ledgers(row)
    book = handout._Book(lgs, "en")
    fits = [None]
    # The template gives the bars no ids (each is a link target, which costs layout time): the
    # test numbers them, in page order, before laying the page out.
    numbers = iter(range(1000))
    html = re.sub(
        r'<div class="bar">',
        lambda _m: f'<div class="bar" id="bar0-0-{next(numbers)}">',
        handout._html(handout._view(book, fits, only=[0])),
    )
    fetcher = handout.PackagedAssetFetcher()
    document = handout.weasyprint.HTML(
        string=html, base_url=fetcher.root.as_uri() + "/", url_fetcher=fetcher
    ).render()
    path = tmp_path / "bars.pdf"
    path.write_bytes(document.write_pdf())
    image = _grey(path, 1, tmp_path)
    scale = 100 / 96
    anchors = document.pages[0].anchors
    chart = book.data(0).charts[0]
    pairs = 0
    for k, bar in enumerate(chart["bars"]):
        x1, y1, x2, y2 = (v * scale for v in anchors[f"bar0-0-{k}"])
        # every pixel row inside the bar's border; the fill is the commonest grey (the segment's
        # number, in the middle of a narrow segment, is anti-aliased over many greys)
        rows = range(int(y1) + 2, int(y2) - 1)
        greys = []
        for seg in bar["segs"]:
            a = x1 + (x2 - x1) * seg["x"] / 100
            w = (x2 - x1) * seg["w"] / 100
            if seg["w"] < pg.VISIBLE:
                greys.append(None)
                continue
            xs = range(int(a + w / 4), int(a + 3 * w / 4) + 1)
            greys.append(statistics.mode(image.getpixel((x, yy)) for x in xs for yy in rows))
        seen = [g for g in greys if g is not None]
        for g, h in zip(seen, seen[1:]):
            pairs += 1
            assert abs(g - h) >= 20, (row["name"], bar["id"], greys)
    assert pairs >= 5


def _luminance(colour: str) -> float:
    """0.299 R + 0.587 G + 0.114 B of a ``#rrggbb`` colour (ITU-R BT.601's luma weights)."""
    r, g, b = (int(colour[k : k + 2], 16) for k in (1, 3, 5))
    return 0.299 * r + 0.587 * g + 0.114 * b


def test_the_palette_is_spaced_and_touching_segments_never_share_a_fill(ledgers):
    """The fills' luminances are at least 25 levels apart, and no two touching segments of a bar
    share one (so each pair differs by 25 levels or more in greyscale, before rendering)."""
    lum = sorted(_luminance(bg) for bg, _fg in pg.FILLS)
    assert min(b - a for a, b in zip(lum, lum[1:])) >= 25
    for k, lg in enumerate(ledgers):
        for chart in pg.page_data(lg, "en").charts:
            for bar in chart["bars"]:
                for a, b in zip(bar["segs"], bar["segs"][1:]):
                    assert a["fill"] != b["fill"], (lg.name, bar["id"])


# --------------------------------------------------------------------------------------------
# Chinese


def test_chinese_build_holds_chinese_labels(built, ledgers):
    """--lang zh: the registry's Chinese labels (through the view) and the template's words."""
    path, _, _ = built["zh"]
    pages = _pages_text(path)
    assert "候选配置" in pages[0]
    for k, lg in enumerate(ledgers):
        page = _squeezed(_sheets(pages, k))
        for label in ("模型状态账本", "不在状态账本中", "算力下界", "假设", "各阶段显存", "结论"):
            assert label in page, (lg.name, label)
        for text in view.assumptions(lg, "zh"):
            assert _squeezed(text) in page
        assert _squeezed(lg["verdict_memory_zh"]) in page


def test_chinese_build_embeds_the_simplified_chinese_face(built):
    """pdffonts lists embedded Noto Sans CJK SC subsets and no Japanese (JP) face."""
    path, _, warnings = built["zh"]
    fonts = _run("pdffonts", path)
    rows = [line for line in fonts.splitlines()[2:] if line.strip()]
    assert any("Noto-Sans-CJK-SC" in r for r in rows), fonts
    assert all(" yes " in r for r in rows), fonts  # embedded
    assert "CJK-JP" not in fonts
    assert not [w for w in warnings if ".notdef" in w]


def test_html_names_the_sc_face_and_zh_cn(ledgers):
    """The HTML says lang="zh-CN" and the stylesheet names "Noto Sans CJK SC" explicitly."""
    html = handout.render_html(ledgers, "zh")
    assert '<html lang="zh-CN">' in html
    css = (handout.templates_dir() / "handout.css").read_text(encoding="utf-8")
    assert '"Noto Sans CJK SC"' in css


# --------------------------------------------------------------------------------------------
# Warnings


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_weasyprint_warning(built, lang):
    """Any WeasyPrint warning (tofu, the fontTools fallback without libharfbuzz-subset0, bad CSS)
    fails the build."""
    _, _, warnings = built[lang]
    assert warnings == []


@pytest.mark.slow
def test_warnings_are_collected_not_lost(tmp_path):
    """A glyph no installed font has (U+1F99C) is reported as a .notdef warning, proving the
    collector sees WeasyPrint's log records."""
    _, _, warnings = _render(
        tmp_path, "tofu", _ledgers(dict(MOE_5T, notes="parrot \U0001f99c")), "en"
    )
    assert any(".notdef" in w for w in warnings)


# --------------------------------------------------------------------------------------------
# Safety


@pytest.mark.slow
def test_hostile_note_embeds_and_fetches_nothing(tmp_path, monkeypatch):
    """A note with attachment links, file:// images and CSS imports is printed as text: no
    embedded file (pdfdetach), no /EmbeddedFile in the bytes, and the only URL fetched is the
    packaged stylesheet (reliability.md PDF-01)."""
    fetched: list[str] = []
    original = handout.PackagedAssetFetcher.fetch

    def spy(self, url, headers=None):
        fetched.append(url)
        return original(self, url, headers)

    monkeypatch.setattr(handout.PackagedAssetFetcher, "fetch", spy)
    hostile = dict(QWEN3_8B, name='evil <img src="file:///etc/hostname">', notes=HOSTILE_NOTE)
    path, pdf, warnings = _render(tmp_path, "hostile", _ledgers(hostile), "en")
    assert warnings == []
    assert "0 embedded files" in _run("pdfdetach", "-list", path)
    assert b"/EmbeddedFile" not in pdf and b"/Filespec" not in pdf
    assert fetched and all(u.endswith("/handout.css") for u in fetched), fetched
    text = _pages_text(path)[1]
    assert '<a rel="attachment" href="file:///etc/passwd">' in text
    assert "{{ 7*7 }}" in text and "&lt;" in text
    html = handout.render_html(_ledgers(hostile), "en")
    assert "<img src=" not in html and "&lt;img src=&#34;file:///etc/hostname&#34;&gt;" in html


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "FILE:///etc/passwd",
        "file:/etc/passwd",
        "file://localhost/etc/passwd",
        "file://evil.example/share/x.png",
        "http://127.0.0.1:9/x.png",
        "https://example.com/x.css",
        "data:text/css,body{}",
        "ftp://example.com/x",
    ],
)
def test_fetcher_refuses_everything_outside_the_packaged_assets(url):
    """URLs that are not packaged template assets are refused, fatally."""
    fetcher = handout.PackagedAssetFetcher()
    with pytest.raises(handout.AssetRefused):
        fetcher.fetch(url)
    assert fetcher.refused == [url]


def test_fetcher_refuses_traversal_templates_and_symlinks(tmp_path):
    """Inside a template folder: the stylesheet is served; ``..`` (plain or percent-encoded), the
    folder itself, a non-asset file (a template) and a symlink pointing outside are refused."""
    root = tmp_path / "templates"
    root.mkdir()
    (root / "style.css").write_text("body { color: black }", encoding="utf-8")
    (root / "page.html.j2").write_text("{{ x }}", encoding="utf-8")
    secret = tmp_path / "secret.css"
    secret.write_text("secret", encoding="utf-8")
    (root / "link.css").symlink_to(secret)
    fetcher = handout.PackagedAssetFetcher(root)
    response = fetcher.fetch((root / "style.css").as_uri())
    body = response.read()  # a URLFetcherResponse
    assert body == b"body { color: black }"
    for url in [
        root.as_uri() + "/../secret.css",
        root.as_uri() + "/..%2fsecret.css",
        root.as_uri() + "/%2e%2e/secret.css",
        root.as_uri(),
        (root / "page.html.j2").as_uri(),
        (root / "link.css").as_uri(),
        (root / "missing.css").as_uri(),
        (root / "style.css").as_uri() + "?x=1",
    ]:
        with pytest.raises(handout.AssetRefused):
            fetcher.fetch(url)
    assert len(fetcher.refused) == 8


def test_a_refused_url_stops_the_render():
    """A document that asks for a file outside the templates raises instead of rendering."""
    import weasyprint

    html = weasyprint.HTML(
        string='<img src="file:///etc/hostname">', url_fetcher=handout.PackagedAssetFetcher()
    )
    with pytest.raises(handout.AssetRefused):
        html.render()


def test_environment_autoescapes_and_is_strict(ledgers):
    """Every template autoescapes (whatever its extension) and a missing field is an error: a
    page's data without its verdicts does not render.  (The folder is a package: Python's
    bytecode cache of its __init__.py, where Python writes one, is no template.)"""
    env = handout.environment()
    for name in env.list_templates(filter_func=lambda name: "__pycache__" not in name):
        template = env.get_template(name)
        assert template.environment.autoescape is True, name
    assert env.undefined is jinja2.StrictUndefined
    book = handout._Book(ledgers[:1], "en")
    view = handout._view(book, [None])
    del view["pages"][0]["verdicts"]
    with pytest.raises(jinja2.UndefinedError):
        handout._html(view)


def test_string_tables_have_the_same_keys():
    """The English and Chinese string tables of strings.j2 name the same labels."""
    module = handout.environment().get_template("strings.j2").module
    assert set(module.en) == set(module.zh)
    assert all(
        isinstance(v, str) and v for v in list(module.en.values()) + list(module.zh.values())
    )


def test_unknown_language_is_an_error(ledgers):
    with pytest.raises(handout.HandoutError):
        handout.render_pdf(ledgers, lang="fr")


def test_the_old_json_document_is_refused(ledgers):
    """The handout takes ledgers; the JSON document (or anything else) is an error, not a page."""
    from ledger_report.render.document import document

    with pytest.raises(handout.HandoutError, match="ledgers"):
        handout.render_pdf(document(ledgers), lang="en")


# --------------------------------------------------------------------------------------------
# One page, however full


def _overflow_rows() -> list[dict]:
    lines = "\n".join(
        f"line {k}: lorem ipsum dolor sit amet, consectetur adipiscing elit" for k in range(120)
    )
    twelve_states = dict(
        MOE_35B,
        framework="generic",
        weight_dtype="fp16",
        grad_dtype="fp16",
        main_grad_dtype="fp32",
        master_dtype="fp32",
        master_at="host",
        price_per_gpu_hour=2.0,
        tokens=10**12,
        days=60,
        reserve_days=5,
    )
    return [
        dict(twelve_states, name="X" * 200, notes=lines[:5000]),
        dict(
            twelve_states,
            name=("很长的配置名称" * 40)[:200],
            notes=("中文备注，很长很长。" * 600)[:5000],
        ),
        dict(QWEN3_8B, name="word " * 40, notes="A" * 5000),
    ]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.slow
def test_overflowing_configurations_stay_one_page_each(tmp_path, lang):
    """A 5,000-character note (with 120 lines, or unbroken), a 200-character name and twelve state
    lines (with offloaded state and a measured peak: every section shown) still give exactly one
    page per configuration, in both languages.  The note is cut and says so; the 8B page (a long
    name and note) fits whole.  KNOWN LIMIT: the two pages with all of that at once (a three-line
    title, twelve state lines, offload and measured peak, nine assumptions) are about 20 lines
    taller than A4 at 8 pt and line height 1.15 even at the last trim level: the renderer says so
    (a warning naming each, never a silent clip), and this test holds it to exactly those two."""
    lgs = _ledgers(*_overflow_rows())
    states = next(s for s in view.sections(lgs[0], lang) if s.key == "states")
    assert len(states.lines) == 12
    path, _, warnings = _render(tmp_path, "overflow", lgs, lang)
    assert _page_count(path) == len(lgs) + 1
    assert len(warnings) == 2 and all(
        w.startswith(f"the page of {lg.name!r}") and w.endswith("its end is clipped")
        for w, lg in zip(warnings, lgs[:2])
    ), warnings
    pages = _pages_text(path)
    assert not _missing(lgs[2], lang, _sheets(pages, 2)), lgs[2].name
    if lang == "en":
        assert "truncated" in pages[1] and "5000" in pages[1]
        assert _squeezed("X" * 200) in _squeezed(pages[1])
    else:
        assert "已截断" in pages[3]


@pytest.mark.slow
def test_every_page_of_the_example_is_laid_out_once(monkeypatch):
    """#23 item 5: a page laid out again costs as much as one laid out first, so the example
    (inputs/examples.csv, English) is laid out page by page once: two layouts (the two parts,
    one process), 23 pages in all.  Its deepseek-v3-by-name page is too full for the first
    guess's spare room; its flow is cut by the heights it has if every line count is right, a
    section's heading among them: by hand from templates/handout.css, a line of 8 pt at line
    height 1.15 (9.2 pt = 12.27 px), 0.2 mm of padding above and below, 0.2 mm of margin below
    (0.6 mm = 2.27 px) and a 0.4 pt rule (0.53 px): 15.07 px, as handout.HEADING_PX reads it from the stylesheet and as
    the laid-out page measures (each piece's heading to its first item)."""
    from ledger_report.inputs import read_configs

    by_hand_px = 9.2 / 0.75 + 0.6 * 96 / 25.4 + 0.4 / 0.75
    assert handout.HEADING_PX == pytest.approx(by_hand_px, abs=0.01)
    root = Path(__file__).resolve().parents[1]
    lgs = list(compute_many(read_configs(root / "inputs" / "examples.csv")))
    layouts: list[int] = []
    headings: list[float] = []
    original_layout, original_measure = handout._layout, handout._measure

    def layout(view, *args):
        layouts.append(len(view["pages"]) + len(view["summary_pages"]))
        return original_layout(view, *args)

    def measure(document, book, fits):
        out = original_measure(document, book, fits)
        for i, m in out.items():
            if m.exact:  # every item measured by its own anchor: the headings exactly
                headings.extend(
                    o for s, o in m.over.items() if not book.data(i).sections[s]["headers"]
                )
        return out

    monkeypatch.setattr(handout, "_layout", layout)
    monkeypatch.setattr(handout, "_measure", measure)
    warnings: list[str] = []
    handout.render_pdf(lgs, "en", warnings=warnings, jobs=1)
    assert warnings == []
    assert sum(layouts) == len(lgs) + handout.summary_page_count(len(lgs)) and len(layouts) == 2
    assert headings and all(h == pytest.approx(by_hand_px, abs=0.05) for h in headings), headings


@pytest.mark.slow
def test_many_configurations_spread_the_summary_over_pages(tmp_path, monkeypatch):
    """Beyond SUMMARY_ROWS_PER_PAGE rows the summary continues on a further page (checked with a
    page of 3 rows, to keep the test quick)."""
    monkeypatch.setattr(handout, "SUMMARY_ROWS_PER_PAGE", 3)
    n = handout.SUMMARY_ROWS_PER_PAGE + 1
    rows = [dict(MOE_5T, name=f"cfg-{k:02d}", notes="") for k in range(n)]
    path, _, warnings = _render(tmp_path, "many", _ledgers(*rows), "en")
    assert _page_count(path) == n + 2
    assert warnings == []


def test_a_full_summary_page_fits(tmp_path):
    """SUMMARY_ROWS_PER_PAGE rows of the longest verdicts fit a summary page (the renderer warns
    about a summary page whose table runs past its foot)."""
    rows = [
        dict(
            MOE_35B,
            name=f"{'long-name-' * 4}{k:02d}",
            measured_peak_gb=200.0,
            tokens=10**13,
            days=30,
        )
        for k in range(handout.SUMMARY_ROWS_PER_PAGE)
    ]
    lgs = _ledgers(*rows)
    assert lgs[0]["verdict_memory"] == "measured: does not fit" and lgs[0][
        "verdict_deadline"
    ].startswith("late by")
    book = handout._Book(lgs, "en")
    document = handout._layout(
        handout._view(book, [None] * len(lgs), only=[], summary=range(1)),
        handout.PackagedAssetFetcher(),
        handout.weasyprint.text.fonts.FontConfiguration(),
        1,
        "sheets",
    )
    assert len(document.pages) == 1 and handout._summary_overflow(document, range(1)) == []


# --------------------------------------------------------------------------------------------
# Determinism


@pytest.mark.slow
def test_same_input_gives_byte_identical_pdf_and_leaves_the_environment_alone(monkeypatch):
    """Two renders of the same ledgers are byte-identical (SOURCE_DATE_EPOCH fixes the font
    subsets' timestamps), and SOURCE_DATE_EPOCH is unset again afterwards."""
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    lgs = _ledgers(MOE_5T)
    first = handout.render_pdf(lgs, "zh", warnings=[])
    assert "SOURCE_DATE_EPOCH" not in os.environ
    second = handout.render_pdf(lgs, "zh", warnings=[])
    assert first == second
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1234567890")
    handout.render_pdf(lgs, "en", warnings=[])
    assert os.environ["SOURCE_DATE_EPOCH"] == "1234567890"


# --------------------------------------------------------------------------------------------
# User text that no font draws


@pytest.mark.slow
def test_characters_xml_forbids_are_shown_as_replacement_characters(tmp_path):
    """The reader refuses control characters, but a configuration built by a script may hold
    them: the page shows U+FFFD for each (no tofu, so no warning) instead of a .notdef glyph."""
    (lg,) = _ledgers(MOE_5T)
    values = dict(lg.config.values, notes="bell\x07 nul\x00 end\ufffe")
    lg = dataclasses.replace(lg, config=dataclasses.replace(lg.config, values=values))
    assert "bell\ufffd nul\ufffd end\ufffd" in handout.render_html([lg], "en")
    path, _, warnings = _render(tmp_path, "controls", [lg], "en")
    assert warnings == []
    assert "bell\ufffd nul\ufffd end\ufffd" in _pages_text(path)[1]


# --------------------------------------------------------------------------------------------
# Parts rendered side by side, assembled into one PDF


@pytest.mark.parametrize(
    ("n", "pages"),
    [(0, [1]), (1, [2]), (7, [8]), (8, [4, 5]), (18, [10, 10]), (100, [27, 27, 28, 27])],
)
def test_parts_are_fixed_by_the_number_of_configurations(n, pages):
    """Below 8 configurations one part; up to 32 pages two; then four (counted by hand, 12
    summary rows a page and one page a configuration, each cut at the unit boundary nearest j/k of
    the pages, the first of two as near: 8 configurations + 1 summary page = 9 pages, cut nearest
    4.5: at 4 (4 and 5 as near); 18 configurations + 2 summary pages = 20 pages (at most 32: two
    parts), cut at 10; 100 + 9 summary pages = 109 (four parts), cuts nearest 27.25, 54.5 and
    81.75: at 27, 54, 82).  The summary's pages come first; every page is in exactly one part,
    in order."""
    parts = handout._parts(n)
    n_summary = max(1, -(-n // handout.SUMMARY_ROWS_PER_PAGE))
    assert [len(p.summary) + len(p.configs) for p in parts] == [p.pages for p in parts]
    assert [p.pages for p in parts] == pages
    assert [k for p in parts for k in p.summary] == list(range(n_summary))
    assert [i for p in parts for i in p.configs] == list(range(n))


def test_a_thousand_configurations_are_parts_of_at_most_64_pages():
    """1,000 configurations (84 summary pages + 1,000 pages = 1,084 pages): 20 parts (4 ×
    ceil(1084 / 256)) of 54-55 pages, so no worker holds more than PART_MAX_PAGES laid-out pages
    (the summary's pages are cut into parts too)."""
    parts = handout._parts(1000)
    sizes = [p.pages for p in parts]
    assert [k for p in parts for k in p.summary] == list(range(84))
    assert len(parts) == 20 and sum(sizes) == 1084 and max(sizes) <= handout.PART_MAX_PAGES


def _many(n: int) -> dict:
    shapes = [QWEN3_8B, MOE_35B, MOE_5T, OFFLOAD]
    rows = [dict(shapes[k % 4], name=f"{shapes[k % 4]['name']}-{k}") for k in range(n)]
    rows[-1]["notes"] = (
        "parrot \U0001f99c"  # a glyph no font has: a .notdef warning from the last part
    )
    return _ledgers(*rows)


@pytest.fixture(scope="module")
def parted(tmp_path_factory):
    """Ten configurations (two parts), rendered in one process and by two workers."""
    assert handout.can_fork()  # else jobs=2 would quietly run in one process too
    doc = _many(handout.PARALLEL_MIN_CONFIGS + 2)
    tmp = tmp_path_factory.mktemp("parted")
    out = {}
    for jobs in (1, 2):
        warnings: list[str] = []
        calls: list[tuple[int, int]] = []
        pdf = handout.render_pdf(
            doc, "en", warnings=warnings, jobs=jobs, progress=lambda d, t: calls.append((d, t))
        )
        path = tmp / f"jobs{jobs}.pdf"
        path.write_bytes(pdf)
        out[jobs] = (path, pdf, warnings, calls)
    return doc, out


@pytest.mark.slow
def test_workers_give_the_same_bytes_as_one_process(parted):
    """The PDF does not depend on the number of worker processes (the parts are fixed by the
    input), and warnings raised in a worker reach the caller, in the same order."""
    doc, out = parted
    assert len(handout._parts(len(doc))) == 2
    assert out[1][1] == out[2][1]
    assert out[1][2] == out[2][2] and any(".notdef" in w for w in out[2][2])


def test_assembled_pdf_has_every_page_in_order_with_its_number(parted):
    """11 pages: the summary, then configuration k on page k + 2 with "k + 2 / 11" printed on it,
    across the boundary between the two parts."""
    doc, out = parted
    path = out[2][0]
    assert _page_count(path) == 11
    pages = _pages_text(path)
    for k, lg in enumerate(doc):
        assert lg.name in _sheets(pages, k) and f"page {k + 2} / 11" in pages[k + 1]
        assert all(o.name not in _sheets(pages, k) for o in doc if o is not lg)
        missing = _missing(lg, "en", _sheets(pages, k))
        assert not missing, f"{lg.name}: missing {missing}"


def test_assembled_pdf_keeps_one_bookmark_per_page(parted):
    """The outline (WeasyPrint's bookmarks from the headings) spans both parts: one top-level
    entry per page, titled with the page's heading and pointing at that page."""
    import pypdf

    doc, out = parted
    reader = pypdf.PdfReader(out[2][0])
    top = [
        item for item in reader.outline if not isinstance(item, list)
    ]  # nested lists are h2 entries
    assert [str(item.title) for item in top[1:]] == [lg.name for lg in doc]
    assert [reader.get_destination_page_number(item) for item in top] == list(range(11))
    assert "/Names" not in reader.trailer["/Root"]  # the layout markers' destinations are left out
    assert str(reader.metadata["/Producer"]).startswith("WeasyPrint")
    assert str(reader.trailer["/Root"]["/Lang"]) == "en"


def test_progress_counts_pages_as_parts_finish(parted):
    """progress(done, total) after each part: the first part is the summary + 4 configurations
    (5 pages, the cut nearest 11 / 2 = 5.5, 5 and 6 as near: the first), the second 6
    configurations (6 pages); side by side, either may finish first."""
    _, out = parted
    assert out[1][3] == [(5, 11), (11, 11)]
    assert out[2][3] in ([(5, 11), (11, 11)], [(6, 11), (11, 11)])


@pytest.mark.slow
def test_an_error_in_a_worker_reaches_the_caller(monkeypatch):
    """A refused asset inside a worker process is the same HandoutError as in one process."""
    monkeypatch.setattr(handout.PackagedAssetFetcher, "asset_path", lambda self, url: None)
    doc = _many(handout.PARALLEL_MIN_CONFIGS)
    for jobs in (1, 2):
        with pytest.raises(handout.HandoutError, match="template error"):
            handout.render_pdf(doc, "en", warnings=[], jobs=jobs)


def test_jobs_from_the_environment(monkeypatch):
    """One rule for the handout's workers and calc's: a whole number of at least 1, else the CPUs."""
    from ledger_report.render import workers

    monkeypatch.setenv("LEDGER_REPORT_JOBS", "3")
    assert handout.default_jobs() == 3 and workers.default_jobs() == 3
    for bad in ("many", "0", "-2", "1.5"):
        monkeypatch.setenv("LEDGER_REPORT_JOBS", bad)
        with pytest.raises(workers.JobsError, match="LEDGER_REPORT_JOBS"):
            handout.default_jobs()
    monkeypatch.delenv("LEDGER_REPORT_JOBS")
    assert handout.default_jobs() >= 1


_RENDER_PART = handout._render_part


def _part_reporting_gc(*args):
    """A worker's part, then a report of the cyclic collector in that worker: whether it is on,
    and how many collections ran during and after the render (allocations after the render are
    when a collector turned back on would walk every object the render made)."""
    collections: list[int] = []
    gc.callbacks.append(
        lambda phase, info: collections.append(info["generation"]) if phase == "stop" else None
    )
    pdf, messages = _RENDER_PART(*args)
    [[] for _ in range(10_000)]  # allocations after the render
    return pdf, messages + [f"gc enabled={gc.isenabled()} collections={len(collections)}"]


@pytest.mark.slow
def test_a_worker_never_collects_garbage(monkeypatch):
    """A forked worker exits once its part is sent, so the cyclic collector stays off in it for
    good: turned back on after the render, it walked the render's objects before the process
    ended (measured here: 0.30 s after a 13-page part, ~23 ms a page, ~9 % of the part)."""
    monkeypatch.setattr(handout, "_render_part", _part_reporting_gc)
    warnings: list[str] = []
    doc = _many(handout.PARALLEL_MIN_CONFIGS)
    assert gc.isenabled()
    handout.render_pdf(doc, "en", warnings=warnings, jobs=2)
    reports = [w for w in warnings if w.startswith("gc ")]
    assert reports == ["gc enabled=False collections=0"] * len(handout._parts(len(doc)))
    assert gc.isenabled()  # the parent's collector is as it was


_TEST_PROCESS = os.getpid()


def _worker_dies(*args):
    assert os.getpid() != _TEST_PROCESS, "the part was rendered in the test's own process"
    os._exit(3)


def test_a_worker_that_dies_is_an_error_not_a_hang(monkeypatch):
    """A worker process that stops without a result (a crash inside a C library, say) ends the
    render with a HandoutError that says how to render in one process."""
    monkeypatch.setattr(handout, "_render_part", _worker_dies)
    with pytest.raises(handout.HandoutError, match="stopped unexpectedly.*-j 1"):
        handout.render_pdf(_many(handout.PARALLEL_MIN_CONFIGS), "en", warnings=[], jobs=2)


@pytest.mark.parametrize(
    "lang, lead",
    [
        # the rule's own text (definitions/constraints.py), not only the column it flags
        (
            "en",
            "warning: params_total: expected params_total within 1 % of the architecture's count "
            "40,893,758,208, found params_total = 35,000,000,000 (-14 % off)",
        ),
        (
            "zh",
            "警告：params_total：给定 params_total 与结构计数相差不超过 1 %"
            "（params_total = 35,000,000,000 (-14 % off)）",
        ),
    ],
)
@pytest.mark.slow
def test_a_rule_the_row_breaks_leads_its_page(tmp_path, lang, lead):
    """A warning the row raises (params_total 13 % off the 35B MoE's architecture count of 40.4B) is
    on its page, first on the note line and never cut; the row's own note follows it, and a row
    that breaks nothing has no such line."""
    flagged, clean = _ledgers(
        dict(MOE_35B, name="flagged", notes="the row's own note"),
        dict(MOE_35B, name="clean", params_total=None, notes="n"),
    )
    assert flagged["check_columns"] == "params_total" and not clean["check_says_something"]
    path, _, warnings = _render(tmp_path, "rules", [flagged, clean], lang)
    pages = [re.sub(r"\s+", " ", p) for p in _pages_text(path)]
    assert f"{lead} · the row's own note" in pages[1] and lead not in pages[2] and warnings == []


@pytest.mark.parametrize("rule, prop", [(".no-such-rule", "height"), (".sheet", "no-such-prop")])
def test_a_page_measure_missing_from_the_stylesheet_is_named(rule, prop):
    """The page fit reads its geometry from handout.css (a sheet's height, 297 mm by 210 mm A4
    landscape less its margins); a rule or property that is not there is a HandoutError naming
    both, not a TypeError from the import."""
    with pytest.raises(handout.HandoutError, match=f"{prop}.*{re.escape(rule)}"):
        handout._css(rule, prop)


def _words(pdf_path: Path, page: int) -> list[tuple[float, float, float, str]]:
    """pdftotext -bbox's words of a page, each as (top, left, right, text)."""
    xml = _run("pdftotext", "-bbox", "-f", str(page), "-l", str(page), pdf_path, "-")
    found = re.findall(
        r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="[\d.]+">([^<]*)</word>', xml
    )
    return [(float(y0), float(x0), float(x1), htmllib.unescape(w)) for x0, y0, x1, w in found]


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_summary_cells_stay_in_their_columns(tmp_path, lang):
    """The summary of three example rows (an A100-80GB, the longest GPU names of the catalogue
    with A100-40GB; a row with no memory gate and no binding gate; a late H100 row), read back
    with ``pdftotext -bbox``: no two words of one line overlap (before, "A100-80GB" ran 8.7 pt
    into the layout column); the binding gate's header and cells stand apart from the figure
    before them (before, pdftotext read "memorybinds" as one word); "GPU-h" is never split at
    its hyphen (before: "84.8 GPU-" above "h")."""
    from ledger_report.inputs import read_configs

    root = Path(__file__).resolve().parents[1]
    wanted = ("fsdp-7b-finetune", "moe35b-ep8-fp32-buffer", "qwen3-8b-2gpu-77d")
    configs = [c for c in read_configs(root / "inputs" / "examples.csv") if c.name in wanted]
    path, _, warnings = _render(tmp_path, "summary", list(compute_many(configs)), lang)
    assert warnings == [] and len(configs) == 3
    words = _words(path, 1)
    lines: dict[int, list] = {}
    for top, x0, x1, w in words:
        lines.setdefault(round(top), []).append((x0, x1, w))
    for line in lines.values():
        line.sort()
        for (_, a1, a), (b0, _, b) in zip(line, line[1:]):
            assert a1 <= b0 + 0.2, (lang, a, b, a1, b0)
    texts = [w for *_, w in words]
    assert "A100-80GB" in texts and not any(w.endswith("-") and "GPU" in w for w in texts)
    if lang == "en":
        assert "binds" in texts and texts.count("GPU-h") == 2, texts
