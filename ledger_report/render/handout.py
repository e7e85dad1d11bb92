"""The handout: summary page(s), then one A4-landscape page per configuration, as HTML and PDF.

The renderer decides nothing a registry quantity can decide: each page is the report spec walked
through :mod:`ledger_report.render.view` and arranged by :mod:`ledger_report.render.page`; the
summary's order and its flagged rows are the spec's ``rank`` and ``flag`` values.  A section the
spec gains later is printed with the others, with no change here or in the template.

Safety: Jinja2 with ``autoescape=True`` and ``StrictUndefined``; user text only ever lands in
element text (never in an attribute, a URL or CSS); WeasyPrint fetches through
:class:`PackagedAssetFetcher`, which serves the packaged template folder's assets and refuses
everything else, fatally.  So a note holding ``<a rel="attachment" href="file:///etc/passwd">``
is printed as text and embeds nothing.

Fit: each page is an inline block of fixed height (WeasyPrint does not split inline blocks across
pages), so nothing spills onto a further page.  Each page is first cut by estimates fitted to
measured pages (:func:`_first_fit`: a page laid out again costs as much as one laid out first),
then measured after layout and, where it overflows, cut again or trimmed a level further
(:func:`_pages`, :func:`_refit`).  A page that still overflows is reported, never clipped
silently.

Speed: WeasyPrint is pure Python and single-threaded.  The handout is laid out in parts fixed by
the number of configurations (:func:`_parts`), rendered by forked workers side by side and joined
by pypdf (:func:`_merge`); the cyclic garbage collector is paused while a part renders (a full
collection walks every live box, style and PDF object), and the whitespace between block tags is
dropped before WeasyPrint parses the HTML (:data:`_MARKUP_GAP`).

Determinism: WeasyPrint's font subsets carry a timestamp, so the render runs with
``SOURCE_DATE_EPOCH`` set (to a fixed date unless the caller set one); the parts do not depend on
the machine, and pypdf joins them without a file ID or date of its own.  Same ledgers, fonts and
WeasyPrint → same bytes, with one worker or many.
"""

from __future__ import annotations

import contextlib
import io
import logging
import logging.handlers
import math
import mimetypes
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import jinja2
import pypdf
import weasyprint
import weasyprint.text.fonts
import weasyprint.urls

from ledger_report.config import LANGS
from ledger_report.engine import Ledger
from ledger_report.errors import LedgerError
from ledger_report.render import page as pg
from ledger_report.render.workers import (
    can_fork,
    default_jobs,
    env_while_running,
    no_cyclic_gc,
    run_forked,
)

__all__ = [
    "render_html",
    "render_pdf",
    "HandoutError",
    "PackagedAssetFetcher",
    "AssetRefused",
    "templates_dir",
    "LANGS",
]

LOG = logging.getLogger("ledger_report.handout")

TEMPLATE_PACKAGE = "ledger_report.templates"
MAIN_TEMPLATE = "handout.html.j2"
STYLESHEET = "handout.css"
# What the fetcher may serve from the template folder: stylesheets, images and fonts, nothing else
# (not the templates themselves, not Python files).
ASSET_SUFFIXES = frozenset({".css", ".svg", ".png", ".otf", ".ttf", ".woff", ".woff2"})
# 2000-01-01T00:00:00Z, the same instant as the workbook's fixed core-properties timestamp.
FIXED_SOURCE_DATE_EPOCH = "946684800"

SUMMARY_ROWS_PER_PAGE = 12  # the summary repeats its header on further pages beyond this


class HandoutError(LedgerError):
    """The handout could not be rendered (an unknown language, or a template asking for a URL
    that is not a packaged asset)."""


# --------------------------------------------------------------------------------------------
# Packaged templates and the fetcher


def templates_dir() -> Path:
    """The folder of the packaged templates: the package ``ledger_report.templates`` where
    installed, else (a source checkout that is not installed) ``templates`` beside the package."""
    with contextlib.suppress(ModuleNotFoundError):
        path = Path(str(resources.files(TEMPLATE_PACKAGE)))
        if (path / MAIN_TEMPLATE).is_file():
            return path.resolve()
    checkout = Path(__file__).resolve().parents[2] / "templates"
    if (checkout / MAIN_TEMPLATE).is_file():
        return checkout
    raise HandoutError(
        f"The handout templates are missing: no {MAIN_TEMPLATE} in the package {TEMPLATE_PACKAGE}; reinstall ledger-report."
    )


_CSS = (templates_dir() / STYLESHEET).read_text(encoding="utf-8")


def _css(rule: str, prop: str) -> float:
    """``prop`` in the stylesheet's rule for ``rule``: a number, or a length in mm or pt in CSS
    px (1/96 in): the page geometry the fit estimates with is the stylesheet's."""
    body = re.search(rf"^{re.escape(rule)} \{{([^}}]*)\}}", _CSS, re.M)
    value = body and re.search(rf"(?<![\w-]){prop}:\s*([\d.]+)(mm|pt)?", body[1])
    if not value:
        raise HandoutError(
            f"The packaged {STYLESHEET} has no {prop} of a number, mm or pt in its rule "
            f"{rule!r}, which the page fit reads; reinstall ledger-report."
        )
    number, unit = value.groups()
    return float(number) * {"mm": 96 / 25.4, "pt": 1 / 0.75, None: 1.0}[unit]


SHEET_HEIGHT_PX = _css(".sheet", "height")
LINE_PX = _css(".sheet", "font-size") * _css(".sheet", "line-height")  # a line of body text
# a section's heading: its line, its padding above (in a piece) and below, its rule and margin
HEADING_PX = LINE_PX + _css(".piece > h2", "padding-top")
HEADING_PX += sum(_css("h2", prop) for prop in ("padding-bottom", "border-bottom", "margin-bottom"))
HEADER_ROW_PX = _css("th", "padding-bottom") + _css("th", "border-bottom")  # besides its lines


# WeasyPrint's public fetcher API (weasyprint.urls, 68 and later): a fetcher is a ``URLFetcher``
# that returns a ``URLFetcherResponse``, and a ``FatalURLFetchingError`` stops the render.


class AssetRefused(weasyprint.urls.FatalURLFetchingError):
    """A URL that is not a packaged template asset: stops the render.  A ``BaseException`` (as
    WeasyPrint's ``FatalURLFetchingError`` is), so that WeasyPrint, which catches a fetcher's
    ``Exception`` and warns, does not swallow it; the render also checks the fetcher's
    ``refused`` list afterwards."""


class PackagedAssetFetcher(weasyprint.urls.URLFetcher):
    """A WeasyPrint URL fetcher that serves only the packaged template assets (:meth:`asset_path`)
    and raises :class:`AssetRefused` for anything else (``refused`` lists those URLs); it never
    falls back to WeasyPrint's own fetching."""

    def __init__(self, root: Path | None = None):
        # no redirects, and fail_on_errors so that any other failure inside fetch() is fatal too
        super().__init__(
            timeout=1, allowed_protocols=("file",), allow_redirects=False, fail_on_errors=True
        )
        self.root = (root or templates_dir()).resolve()
        self.refused: list[str] = []

    def asset_path(self, url: str) -> Path | None:
        """The file of a ``file:`` URL with no host (or ``localhost``) and no query whose path,
        after percent-decoding, ``..`` and symlinks, is a regular file inside the template folder
        with an asset suffix; else None (other schemes, ``data:``, traversal, the templates)."""
        try:
            parts = urlsplit(url)
            path = Path(url2pathname(unquote(parts.path))).resolve(strict=True)
        except (ValueError, OSError, RuntimeError):  # a bad URL, a NUL byte, no such file, a loop
            return None
        if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost") or parts.query:
            return None
        # an empty path resolves to the working directory, which is no file
        inside = path.is_relative_to(self.root) and path.is_file()
        return path if inside and path.suffix.lower() in ASSET_SUFFIXES else None

    def fetch(self, url, headers=None):
        path = self.asset_path(url)
        if path is None:
            self.refused.append(url)
            raise AssetRefused(
                f"refused to fetch {url!r}: the handout loads only its packaged template assets"
            )
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return weasyprint.urls.URLFetcherResponse(
            path.as_uri(), path.read_bytes(), {"Content-Type": mime}
        )


# --------------------------------------------------------------------------------------------
# Jinja2


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one Jinja2 environment of the handout (autoescape on, StrictUndefined)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=True,  # every template, whatever its extension
        undefined=jinja2.StrictUndefined,  # a missing field is an error, never a blank cell
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


# --------------------------------------------------------------------------------------------
# The view: the pages' data (render/page.py) cut into columns, as the template prints them


@dataclass
class _Fit:
    """A page's trim level (``page.TRIMMED[density]``) and, once measured, the heights (CSS px)
    of its flow items, of each section's heading and of the room in each column."""

    density: int = 0
    heights: list[float] | None = None
    over: list[float] | None = None
    caps: list[float] | None = None
    tight: bool = False  # no level leaves room to spare: each item measured from the first layout


class _Book:
    """The ledgers of one handout in one language: the summary's order, and each page's data,
    built when a page is first wanted (in the process that renders it) and kept for re-layouts."""

    def __init__(self, ledgers: Sequence[Ledger], lang: str, front: Sequence[Ledger] = ()):
        self.ledgers = list(ledgers)
        if lang not in LANGS:
            raise HandoutError(
                f"Unknown handout language {lang!r}: expected one of {', '.join(LANGS)}."
            )
        if not all(isinstance(lg, Ledger) for lg in self.ledgers):  # a str's characters too
            raise HandoutError(
                "The handout needs the configurations' ledgers (engine.compute or api.compute)."
            )
        self.lang = lang
        self.front = pg.pareto(front, lang)  # the planner's front, on the first summary page
        self.ranked = bool(self.ledgers and self.ledgers[0].model.spec.rank)
        self.order = pg.rank_order(self.ledgers)  # the summary's order
        self.rank_of = {i: r for r, i in enumerate(self.order, 1)}
        self.n_summary = summary_page_count(len(self.ledgers))
        self._data: dict[int, pg.PageData] = {}

    def data(self, i: int) -> pg.PageData:
        if i not in self._data:
            self._data[i] = pg.page_data(self.ledgers[i], self.lang)
        return self._data[i]


def _estimated(d: pg.PageData, density: int) -> tuple[list[float], list[float], list[float]]:
    top = d.est_top[density]  # the lines above the left columns, and above the right one
    caps = [SHEET_HEIGHT_PX - t * LINE_PX for t in [top[0]] * (pg.COLUMNS - 1) + [top[1]]]
    return [h * LINE_PX for h in d.flow(density)[1]], [o * LINE_PX for o in d.est_over], caps


def _sizes(d: pg.PageData, fit: _Fit) -> tuple[list[float], list[float], list[float]]:
    """The heights, section overheads and column room a page is cut by: measured, else estimated."""
    heights, over, caps = _estimated(d, fit.density)
    if fit.heights is not None:
        heights, over = fit.heights, fit.over
    return heights, over, caps if fit.caps is None else fit.caps


def _first_fit(d: pg.PageData) -> _Fit:
    """The first trim level whose estimated flow is cut into the estimated room with
    ``page.CUT_SPARE`` of every column to spare, else the last; there, a cut that would overflow
    by the heights the flow has if every line count is right (``PageData.nominal``) is replaced
    by the cut of those heights: a page laid out again (:func:`_pages`) costs as much as one laid
    out first."""
    for density in range(pg.MAX_DENSITY + 1):
        heights, over, caps = _estimated(d, density)
        cols = pg.cut(heights, [it["sec"] for it in d.flow(density)[0]], over, caps)
        used = pg.heights_of(cols, heights, over)
        if all(u <= c * (1 - pg.CUT_SPARE) for u, c in zip(used, caps)):
            return _Fit(density)
    heights = [h * LINE_PX for h in d.nominal(pg.MAX_DENSITY)]
    # each section's heading (and table header row) as the stylesheet sets it
    over = [
        HEADING_PX + (pg.header_lines(s) * LINE_PX + HEADER_ROW_PX if s["headers"] else 0)
        for s in d.sections
    ]
    if all(u <= c for u, c in zip(pg.heights_of(cols, heights, over), caps)):
        return _Fit(pg.MAX_DENSITY, tight=True)  # the estimates' cut fits: kept
    return _Fit(pg.MAX_DENSITY, heights, over, tight=True)


# A piece's items by kind, in the order the template prints them: the piece's list -> the kind.
_KINDS = {"lines": "line", "zeros": "zeros", "rows": "row", "notes": "note"}


def _columns(d: pg.PageData, fit: _Fit) -> list[list[dict[str, Any]]]:
    heights, over, caps = _sizes(d, fit)
    flow = d.flow(fit.density)[0]
    seen: set[int] = set()
    out = []
    for col in pg.cut(heights, [it["sec"] for it in flow], over, caps):
        pieces = []
        for s, idx in col:
            sec = d.sections[s]
            items = [flow[i] for i in idx]
            kinds = {key: [it for it in items if it["kind"] == k] for key, k in _KINDS.items()}
            pieces.append(
                {"title": sec["title"], "cont": s in seen, "headers": sec["headers"], **kinds}
            )
            seen.add(s)
        out.append(pieces)
    return out


def _config_view(book: _Book, i: int, fit: _Fit) -> dict[str, Any]:
    d = book.data(i)
    name = pg.clip(d.name, pg.NAME_MAX_CHARS)
    return {
        "id": i,
        "name": name,
        "name_long": len(name) > 70,
        "rank": book.rank_of[i],
        "density": fit.density,
        "wide_formulas": pg.ALL not in pg.TRIMMED[fit.density],
        "note": pg.note(d.notes, fit.density, d.lead),
        "verdicts": d.verdicts,
        "headline": d.headline,
        "compact": d.compact,
        "wide": d.wide,
        "charts": d.charts,
        "columns": _columns(d, fit),
        # each item measured (_measure) on a page laid out again or likely to be
        "item_ids": fit.tight or fit.heights is not None,
        "page_no": book.n_summary + i + 1,
    }


def summary_page_count(n_configs: int) -> int:
    """Pages of the summary: SUMMARY_ROWS_PER_PAGE rows each, one page even with no rows."""
    return max(1, math.ceil(n_configs / SUMMARY_ROWS_PER_PAGE))


def _view(
    book: _Book,
    fits: list[_Fit | None],
    only: Sequence[int] | None = None,
    summary: range | None = None,
) -> dict[str, Any]:
    """Everything the template needs; with ``only``, just those configurations' pages (a part of
    the handout, or a probe), and the summary pages in ``summary`` (by default: all of them when
    every page is wanted, else none).  Page numbers and ranks are those of the whole handout."""
    lang = book.lang
    wanted = range(len(book.ledgers)) if only is None else only
    if summary is None:
        summary = range(book.n_summary) if only is None else range(0)
    summary_pages: list[list[dict[str, Any]]] = []
    head: dict[str, Any] = {"verdicts": [], "cells": []}
    if len(summary):
        first = summary.start * SUMMARY_ROWS_PER_PAGE
        order = book.order[first : summary.stop * SUMMARY_ROWS_PER_PAGE]
        rows = [pg.summary_row(book.ledgers[i], lang, first + r) for r, i in enumerate(order, 1)]
        summary_pages = [
            rows[k : k + SUMMARY_ROWS_PER_PAGE] for k in range(0, len(rows), SUMMARY_ROWS_PER_PAGE)
        ] or [[]]
        if book.ledgers:
            head = pg.summary_headers(book.ledgers[0], lang)
    for i in wanted:
        if fits[i] is None:  # guessed where the page is rendered (a worker, for its part)
            fits[i] = _first_fit(book.data(i))
    return {
        "lang": lang,
        "html_lang": "zh-CN" if lang == "zh" else "en",
        "n_configs": len(book.ledgers),
        "ranked": book.ranked,
        "n_pages": book.n_summary + len(book.ledgers),
        "summary_pages": summary_pages,
        "summary_start": summary.start,
        "n_summary": book.n_summary,
        "summary_head": head,
        "pareto": book.front if summary.start == 0 else None,
        "currencies": pg.currencies(book.ledgers) if book.ranked else [],
        "pages": [_config_view(book, i, fits[i]) for i in wanted],
        "stylesheet": STYLESHEET,
        "fills": pg.FILLS,
    }


# Whitespace between a tag and a following block-level or table tag: the HTML parser keeps it as a
# text node that WeasyPrint then styles and throws away (~8 % of the render time).  Only markup
# whitespace matches: user text is escaped, so it holds no "<" or ">" of its own.
_MARKUP_GAP = re.compile(
    r">\s+<(?=/?(?:html|head|meta|title|link|style|body|section|div|header|h1|h2|p|ul|li|table|colgroup|col"
    r"|thead|tbody|tfoot|tr|th|td)[\s>])"
)


# Characters that no font draws and XML 1.0 does not allow (C0 controls other than tab, LF and CR;
# U+FFFE, U+FFFF; lone surrogates).  The template writes none, so any comes from user text (a
# script's row; the reader refuses them); each is shown as U+FFFD, not as tofu.
_UNPRINTABLE = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _html(view: dict[str, Any]) -> str:
    # No whitespace after </html>: the HTML parser would append it to the body.
    html = _MARKUP_GAP.sub("><", environment().get_template(MAIN_TEMPLATE).render(**view)).rstrip()
    return _UNPRINTABLE.sub("\ufffd", html)


def render_html(
    ledgers: Sequence[Ledger], lang: str = "en", *, pareto: Sequence[Ledger] = ()
) -> str:
    """The handout as HTML, with the first-guess layout of each page (the PDF may cut a page's
    columns again after measuring it)."""
    book = _Book(ledgers, lang, pareto)
    return _html(_view(book, [None] * len(book.ledgers)))


# --------------------------------------------------------------------------------------------
# WeasyPrint


_RENDER_LOCK = threading.RLock()  # os.environ and the weasyprint logger are process-wide


@contextlib.contextmanager
def _collect_weasyprint_warnings() -> Iterator[logging.handlers.BufferingHandler]:
    """WeasyPrint's warnings while the block runs, kept in the handler's ``buffer``."""
    logger = logging.getLogger("weasyprint")
    handler = logging.handlers.BufferingHandler(math.inf)  # never flushed: keeps every record
    handler.setLevel(logging.WARNING)
    old_level = logger.level
    if logger.getEffectiveLevel() > logging.WARNING:
        logger.setLevel(logging.WARNING)  # see warnings even when an application silenced them
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def _layout(
    view: Mapping[str, Any], fetcher: PackagedAssetFetcher, font_config, n: int, what: str
) -> weasyprint.document.Document:
    """Lay the view's ``n`` ``what`` out, one page each: WeasyPrint's public API, its own HTML
    parser and user-agent stylesheet, every URL through ``fetcher`` (its ``base_url`` is the
    template folder, where the template's ``<link>`` finds handout.css)."""
    document = weasyprint.HTML(
        string=_html(view), base_url=fetcher.root.as_uri() + "/", url_fetcher=fetcher
    ).render(font_config=font_config)
    if len(document.pages) != n:  # each sheet: one unsplittable block
        raise HandoutError(f"Internal error: {n} {what} laid out as {len(document.pages)} pages.")
    return document


@dataclass
class _Measure:
    """A configuration page after layout, in CSS px: the room in each column (from its top to the
    foot of the sheet), the height each column's content takes, each flow item's height and each
    section's heading (with a table's header row)."""

    caps: list[float]
    used: list[float]
    items: dict[int, float]
    over: dict[int, float]
    exact: bool = False  # every item measured by its own anchor (a page laid out again)

    @property
    def overflows(self) -> bool:
        return any(u > c + 0.5 for u, c in zip(self.used, self.caps))


def _measure(document, book: _Book, fits: Sequence[_Fit]) -> dict[int, _Measure]:
    """Read the ids the template sets on each configuration page: ``p<page>-<k>-<j>`` (the heading
    of each piece of a section, at the top of its piece), ``i<page>-<n>`` (a childless element at
    the top of flow item ``n``), ``c<page>-<k>`` (an empty marker after a column's last piece) and
    ``b<page>`` (the foot of the sheet); an anchor's box is ``(x1, y1, x2, y2)``.  A column starts
    at its first piece (or at its marker, if it has none); a piece ends where the next one starts
    (or at the marker); an item ends where the next one starts (or its piece ends), and a piece's
    heading takes what is above its first item.  The ids are on childless elements only:
    an element with an id has a computed style of its own, and so then have all the elements in
    it, where WeasyPrint otherwise shares one computed style among the elements that match the
    same rules in parents that do (ids on the columns and pieces cost ~4 % of the render)."""
    boxes: dict[int, dict[str, tuple[float, float, float, float]]] = {}
    for page in document.pages:
        for anchor, pos in page.anchors.items():
            kind = anchor[:1]
            if kind in "cbpi" and anchor[1:2].isdigit():
                num, _, rest = anchor[1:].partition("-")
                boxes.setdefault(int(num), {})[kind + rest] = pos
    out = {}
    for i, m in boxes.items():
        ends = [m.get(f"c{k}") for k in range(pg.COLUMNS)]
        if "b" not in m or None in ends:
            continue
        d, fit = book.data(i), fits[i]
        heights, over_now, _caps = _sizes(d, fit)
        flow = d.flow(fit.density)[0]
        items: dict[int, float] = {}
        over: dict[int, float] = {}
        tops, used = [], []
        exact = True
        for c, col in enumerate(_columns(d, fit)):
            starts = [m.get(f"p{c}-{j}") for j in range(len(col))] + [None]  # None: the end
            end = ends[c][1]
            top = starts[0][1] if col and starts[0] is not None else end
            tops.append(top)
            used.append(end - top)
            for j, pc in enumerate(col):
                n = [it["n"] for key in _KINDS for it in pc[key]]
                if starts[j] is None or not n:
                    continue
                bottom = end if starts[j + 1] is None else starts[j + 1][1]
                s = flow[n[0]]["sec"]
                marks = [m.get(f"i{k}") for k in n]
                if all(mk is not None for mk in marks):  # each item's top: exact heights
                    edges = [mk[1] for mk in marks] + [bottom]
                    over[s] = max(over.get(s, 0.0), edges[0] - starts[j][1])
                    items.update({k: y1 - y0 for k, y0, y1 in zip(n, edges, edges[1:])})
                    continue
                exact = False
                over[s] = over_now[s]
                body = max(bottom - starts[j][1] - over[s], 0.0)
                guess = sum(heights[k] for k in n) or 1.0
                items.update({k: heights[k] * body / guess for k in n})
        out[i] = _Measure([m["b"][1] - t for t in tops], used, items, over, exact)
    return out


def _refit(d: pg.PageData, fit: _Fit, m: _Measure) -> _Fit | None:
    """A layout for a page that overflowed: its flow cut again by the measured heights if they fit
    the measured room; else the next trim level, the items it trims estimated again, the others
    and the room above the columns as measured (measured again after the next layout).  None:
    nothing left to try."""
    est, est_over, _caps = _estimated(d, fit.density)
    heights = [m.items.get(n, h) for n, h in enumerate(est)]
    over = [m.over.get(s, est_over[s]) for s in range(len(d.sections))]
    old = d.flow(fit.density)[0]
    caps = list(m.caps)
    if fit.caps is not None and fit.heights is not None and not m.exact:
        # cut by these (shared) heights already: leave what overflowed
        caps = [c - max(u - c, 0.0) - 2.0 for u, c in zip(m.used, m.caps)]
    cols = pg.cut(heights, [it["sec"] for it in old], over, caps)
    excess = max(h - c for h, c in zip(pg.heights_of(cols, heights, over), caps))
    # at the last level, a cut the measures put within a line of fitting is tried too (a section
    # continued in a column measures its heading where it was laid out, not where it goes)
    room = LINE_PX if fit.density >= pg.MAX_DENSITY else -0.5
    if excess <= room and (fit.heights is None or heights != fit.heights or caps != fit.caps):
        return _Fit(fit.density, heights, over, caps)
    if fit.density >= pg.MAX_DENSITY:
        return None
    nxt = fit.density + 1
    # the next level: the items it trims estimated again, the others as measured
    flow = d.flow(nxt)[0]
    new = _estimated(d, nxt)[0]
    if len(flow) != len(old):  # the level leaves items out: every item estimated again
        return _Fit(nxt, None, None, list(m.caps))
    kept = [
        h if it["formula"] == was["formula"] else e
        for h, e, it, was in zip(heights, new, flow, old)
    ]
    return _Fit(nxt, kept, over, list(m.caps))


# --------------------------------------------------------------------------------------------
# Parts (see Speed and Determinism above)

MAX_LAYOUTS = 6  # layouts of one page at most (then it is reported as clipped)
PARALLEL_MIN_CONFIGS = 8  # fewer configurations: one part, rendered in this process
# bounds a worker's memory: a 52-page part peaked at 400 MB (~7 MB a laid-out page)
PART_MAX_PAGES = 64


@dataclass(frozen=True)
class _Part:
    """One part of the handout: a run of the summary's pages (the first parts), then a run of
    configurations; ``pages`` counts both."""

    summary: range
    configs: range
    pages: int


def _parts(n_configs: int) -> list[_Part]:
    """Split the handout into parts: one below :data:`PARALLEL_MIN_CONFIGS` configurations; two up
    to 32 pages; else a multiple of four parts of at most :data:`PART_MAX_PAGES` pages (four keeps
    two or four cores equally busy).  Each part holds about as many pages as the next: the
    summary's pages, then each configuration's one page, cut in that order."""
    n_summary = summary_page_count(n_configs)
    pages = n_summary + n_configs
    if n_configs < PARALLEL_MIN_CONFIGS:
        k = 1
    elif pages <= 32:
        k = 2
    else:
        k = 4 * math.ceil(pages / (4 * PART_MAX_PAGES))
    # part j starts at the page nearest j/k of the handout (the earlier one of two as near)
    cuts = [0, *(min(range(pages + 1), key=lambda u: abs(u - j * pages / k)) for j in range(1, k))]
    out = []
    for a, b in zip(cuts, [*cuts[1:], pages]):
        summary = range(min(a, n_summary), min(b, n_summary))
        configs = range(max(a - n_summary, 0), max(b - n_summary, 0))
        out.append(_Part(summary, configs, b - a))
    return out


def _pages(book: _Book, fetcher: PackagedAssetFetcher, part: _Part, fits: list[_Fit]):
    """Lay one part out; lay out again (alone, in a probe document) each page that overflows,
    until it fits or nothing is left to try; return the pages and the names still clipped."""
    font_config = weasyprint.text.fonts.FontConfiguration()
    view = _view(book, fits, only=part.configs, summary=part.summary)
    n_summary = len(view["summary_pages"])
    first = _layout(view, fetcher, font_config, n_summary + len(part.configs), "sheets")
    pages = list(first.pages)
    clipped = [f"the summary page {k + 1}" for k in _summary_overflow(first, part.summary)]
    measures = _measure(first, book, fits)
    over = sorted(i for i, m in measures.items() if m.overflows)
    for _attempt in range(MAX_LAYOUTS - 1):
        retry = []
        for i in over:
            new = _refit(book.data(i), fits[i], measures[i])
            if new is None:
                clipped.append(f"the page of {book.ledgers[i].name!r}")
            else:
                fits[i] = new
                retry.append(i)
        over = []
        if not retry:
            break
        view = _view(book, fits, only=retry)
        probe = _layout(view, fetcher, font_config, len(retry), "configurations")
        for k, i in enumerate(retry):
            pages[n_summary + i - part.configs.start] = probe.pages[k]
        measures = _measure(probe, book, fits)
        over = sorted(i for i in retry if measures[i].overflows)
    clipped += [f"the page of {book.ledgers[i].name!r}" for i in over]
    return first.copy(pages), clipped


def _summary_overflow(document, summary: range) -> list[int]:
    """Summary pages whose table runs past the foot of the sheet (``s<k>`` and ``sb<k>``)."""
    out = []
    for k, page in zip(summary, document.pages):
        end, foot = page.anchors.get(f"s{k}"), page.anchors.get(f"sb{k}")
        if end is not None and foot is not None and end[1] > foot[1] + 0.5:
            out.append(k)
    return out


def _render_part(book: _Book, part: _Part, fits: list[_Fit]) -> tuple[bytes, list[str]]:
    """One part as a PDF, with the warnings its render raised (WeasyPrint's, and clipped pages)."""
    fetcher = PackagedAssetFetcher()
    with _RENDER_LOCK, no_cyclic_gc(), _collect_weasyprint_warnings() as collected:
        with contextlib.suppress(AssetRefused):  # each refused URL is in fetcher.refused
            document, clipped = _pages(book, fetcher, part, fits)
            pdf = document.write_pdf()  # attachments, if any, are fetched here
    if fetcher.refused:  # the error raised, or caught by WeasyPrint after all
        raise HandoutError(
            f"Handout template error: refused to fetch {fetcher.refused[0]!r}: "
            "the handout loads only its packaged template assets"
        )
    messages = [f"WeasyPrint: {r.getMessage()}" for r in collected.buffer]
    messages += [
        f"{what} is too full even at the densest layout; its end is clipped" for what in clipped
    ]
    return pdf, messages


def _stopped(exit_code: Any) -> HandoutError:
    return HandoutError(
        f"A process rendering the handout stopped unexpectedly (exit code {exit_code}); "
        "try again with -j 1 (LEDGER_REPORT_JOBS=1) to render in one process."
    )


def _render_parts(book, parts, fits, jobs, progress) -> list[tuple[bytes, list[str]]]:
    """Every part's PDF and warnings, in part order: in forked processes side by side where
    there are several parts and jobs and it is safe to fork; else one after the other here."""
    results: dict[int, tuple[bytes, list[str]]] = {}

    def finished(j: int, result: tuple[bytes, list[str]]) -> None:
        results[j] = result
        if progress:
            progress(sum(parts[k].pages for k in results), sum(p.pages for p in parts))

    workers = min(jobs, len(parts))
    tasks = [partial(_render_part, book, part, fits) for part in parts]
    # forked workers inherit the imported modules, templates and the book: nothing to send
    if workers > 1 and can_fork():
        # The template is compiled here, once, rather than in every worker (~0.1 s each).
        environment().get_template(MAIN_TEMPLATE)
        run_forked(tasks, workers, finished, HandoutError, _stopped)
    else:
        for j, task in enumerate(tasks):
            finished(j, task())
    return [results[j] for j in range(len(parts))]


def _merge(pdfs: Sequence[bytes]) -> bytes:
    """One PDF from the parts' PDFs (pypdf): their pages in order; one outline (the bookmarks
    WeasyPrint makes from the headings) over all of them; the first part's document information
    and language.  The named destinations of the layout markers are left out (they are the
    renderer's measuring points, not places a reader goes).  pypdf writes no file identifier
    and no date of its own, so the same parts give the same bytes."""
    writer = pypdf.PdfWriter()
    readers = [pypdf.PdfReader(io.BytesIO(pdf)) for pdf in pdfs]
    for reader in readers:
        writer.append(reader, import_outline=True)
    first = readers[0]
    writer.add_metadata(dict(first.metadata or {}))
    catalog = writer.root_object
    if (lang := first.trailer["/Root"].get("/Lang")) is not None:
        catalog[pypdf.generic.NameObject("/Lang")] = pypdf.generic.TextStringObject(str(lang))
    catalog.pop(pypdf.generic.NameObject("/Names"), None)
    writer.pdf_header = first.pdf_header
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def render_pdf(
    ledgers: Sequence[Ledger],
    lang: str = "en",
    *,
    warnings: list[str] | None = None,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    pareto: Sequence[Ledger] = (),
) -> bytes:
    """The handout PDF of the ledgers: the summary, then one A4-landscape page per configuration.

    ``warnings``: when a list is given, WeasyPrint's warnings (a ``.notdef`` glyph, i.e. tofu; the
    slow fontTools fallback when ``libharfbuzz-subset0`` is missing; bad CSS) and any page whose
    end had to be clipped are appended to it as strings; otherwise they are logged on the
    ``ledger_report.handout`` logger.  ``jobs``: worker processes for the parts (:func:`_parts`;
    default :func:`default_jobs`); the bytes do not depend on it.
    ``progress(pages_done, pages_total)`` is called as parts finish.  ``pareto``: the ledgers of
    a planner's Pareto front of days against cost (its ``pareto`` plans' rows), drawn as bars on
    the first summary page, fastest first.
    """
    book = _Book(ledgers, lang, pareto)
    jobs = default_jobs() if jobs is None else max(1, int(jobs))
    parts = _parts(len(book.ledgers))
    # First guesses need each page's data, which is built where the page is rendered: the
    # workers guess their own pages (a None is guessed on first use, see _view).
    fits: list[_Fit | None] = [None] * len(book.ledgers)
    with env_while_running("SOURCE_DATE_EPOCH", FIXED_SOURCE_DATE_EPOCH):
        results = _render_parts(book, parts, fits, jobs, progress)
    with no_cyclic_gc():  # pypdf's objects are many and short-lived: ~15 % of the merge
        pdf = _merge([r[0] for r in results])
    messages = [m for r in results for m in r[1]]
    if warnings is not None:
        warnings.extend(messages)
    else:
        for message in messages:
            LOG.warning("handout: %s", message)
    return pdf
