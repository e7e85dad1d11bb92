"""The handout: one A4-landscape page per configuration after a summary, as HTML and PDF (CONTRACT §6).

The renderer only displays what the engine computed: it takes the JSON document of CONTRACT §4
(``engine.document``), formats each number with :mod:`ledger_report.model.units` and prints the
engine's own formula texts.  What it works out itself is presentation only: the ranking order of
the summary, the geometry of the stacked bar, how much of a long note fits, and how dense a page
must be to stay one page.

Safety (reliability.md §3.3): Jinja2 with ``autoescape=True`` and ``StrictUndefined`` on every
template; user text only ever lands in element text (never in an attribute, a URL or CSS); and
WeasyPrint fetches through :class:`PackagedAssetFetcher`, which serves files of the packaged
template folder and refuses everything else, fatally.  So a note holding
``<a rel="attachment" href="file:///etc/passwd">`` is printed as text and embeds nothing.

One page per configuration, always: each page is an inline block of fixed height (WeasyPrint
does not split inline blocks across pages), so a page can never spill onto a second one.  What
does not fit would be clipped, so the renderer checks each page's end markers after layout and
re-renders a page that overflows at the next density (smaller type, shorter notes); see
:func:`_pages` and :func:`_refit`.

Speed: WeasyPrint is pure Python and single-threaded, and the handout uses only its public API
(``weasyprint.HTML(string=..., base_url=..., url_fetcher=...).render(font_config=...)``, then
``Document.copy`` and ``Document.write_pdf``).  The handout is laid out in parts fixed by the
number of configurations (:func:`_parts`), rendered by forked worker processes side by side
(which never collect garbage: :func:`_child`) and joined by pypdf's public ``PdfWriter`` API
(:func:`_merge`); the cyclic garbage collector is paused while a part renders
(:func:`_no_cyclic_gc`), and the whitespace between block tags is dropped from the HTML before
WeasyPrint parses it (:data:`_MARKUP_GAP`).

Determinism (reliability.md §4.4, DET-01/05): WeasyPrint's font subsets carry a timestamp, so the
render runs with ``SOURCE_DATE_EPOCH`` set (to a fixed date unless the caller already set one) and
the variable is restored afterwards; the parts do not depend on the machine, and pypdf joins them
without a file ID or date of its own.  Same document, same fonts, same WeasyPrint → same bytes,
with one worker or many.

WeasyPrint reports problems (a ``.notdef`` glyph, i.e. tofu; the slow fontTools fallback when
``libharfbuzz-subset0`` is missing; bad CSS) as log records.  They are collected during each render
and either appended to the caller's ``warnings`` list (the tests fail on any) or re-logged on the
``ledger_report.handout`` logger.
"""

from __future__ import annotations

import contextlib
import gc
import io
import logging
import math
import mimetypes
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
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

from ledger_report.errors import LedgerError
from ledger_report.model import units

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

LANGS = ("en", "zh")
TEMPLATE_PACKAGE = "ledger_report.templates"
MAIN_TEMPLATE = "handout.html.j2"
STYLESHEET = "handout.css"
# What the fetcher may serve from the template folder: stylesheets, images and fonts, nothing else
# (not the templates themselves, not Python files).
ASSET_SUFFIXES = frozenset({".css", ".svg", ".png", ".otf", ".ttf", ".woff", ".woff2"})
# 2000-01-01T00:00:00Z, the same instant as the workbook's fixed core-properties timestamp.
FIXED_SOURCE_DATE_EPOCH = "946684800"

# Page density: 0 is the normal type size; each step is smaller type and a shorter note.
# (The CSS classes d0..d3 in handout.css hold the type sizes.)
MAX_DENSITY = 3
NOTE_MAX_CHARS = (900, 650, 420, 260)  # characters of a note shown, per density
NOTE_MAX_LINES = (8, 6, 4, 3)  # line breaks kept, per density; further lines are joined
NAME_MAX_CHARS = 240  # a configuration's name on its own page
SUMMARY_NAME_MAX_CHARS = 36  # and in the summary table
SUMMARY_ROWS_PER_PAGE = 30  # the summary repeats its header on further pages beyond this
BAR_WIDTH = 1000.0  # SVG user units of the stacked bar (the viewBox is scaled to the column)


class HandoutError(LedgerError):
    """The handout could not be rendered (an unknown language, or a template asking for a URL
    that is not a packaged asset)."""


# --------------------------------------------------------------------------------------------
# Packaged templates and the fetcher


def templates_dir() -> Path:
    """The folder of the packaged templates (``ledger_report.templates``, i.e. ``templates/``).

    Installed (wheel or editable), it is the package ``ledger_report.templates``; from a source
    checkout that is not installed (``python -m pytest`` in the repository) it is the ``templates``
    folder beside the ``ledger_report`` package.
    """
    try:
        root = resources.files(TEMPLATE_PACKAGE)
    except ModuleNotFoundError:
        root = None
    if root is not None:
        path = Path(str(root))
        if (path / MAIN_TEMPLATE).is_file():
            return path.resolve()
    checkout = Path(__file__).resolve().parents[2] / "templates"
    if (checkout / MAIN_TEMPLATE).is_file():
        return checkout
    raise HandoutError(
        f"The handout templates are missing: no {MAIN_TEMPLATE} in the package {TEMPLATE_PACKAGE}; reinstall ledger-report."
    )


# WeasyPrint's public fetcher API (weasyprint.urls): from 68, a fetcher is a ``URLFetcher`` (70
# accepts nothing else) that returns a ``URLFetcherResponse``, and a ``FatalURLFetchingError``
# stops the render; before 68 (66, 67), a fetcher is a callable that returns a dict, and
# WeasyPrint turns any ``Exception`` it raises into a warning.
_URLFetcher = getattr(weasyprint.urls, "URLFetcher", None)
_URLFetcherResponse = getattr(weasyprint.urls, "URLFetcherResponse", None)
_FatalURLFetchingError = getattr(weasyprint.urls, "FatalURLFetchingError", BaseException)


class AssetRefused(_FatalURLFetchingError):
    """A URL that is not a packaged template asset: stops the render.  A ``BaseException`` (as
    WeasyPrint's ``FatalURLFetchingError`` is, and is a subclass of where WeasyPrint has it), so
    that WeasyPrint, which catches a fetcher's ``Exception`` and warns, does not swallow it; the
    render also checks the fetcher's ``refused`` list afterwards."""


class PackagedAssetFetcher(*((_URLFetcher,) if _URLFetcher else ())):
    """A WeasyPrint URL fetcher that serves only files inside the packaged template folder.

    Allowed: ``file:`` URLs with no host (or ``localhost``) and no query, whose path, after
    percent-decoding, ``..`` and symlinks, is a regular file inside :func:`templates_dir` with an
    asset suffix (:data:`ASSET_SUFFIXES`).  Everything else (other schemes, ``data:``, hosts,
    traversal, the templates themselves) raises :class:`AssetRefused`, which stops the render;
    ``refused`` and ``served`` list the URLs asked for.

    A ``weasyprint.urls.URLFetcher`` whose ``fetch`` returns a ``URLFetcherResponse`` where
    WeasyPrint has them (68 and later); before, a callable returning the dict of
    ``default_url_fetcher``.  It never falls back to WeasyPrint's own fetching.
    """

    def __init__(self, root: Path | None = None):
        if _URLFetcher is not None:
            # no redirects, and fail_on_errors so that any other failure inside fetch() is fatal too
            super().__init__(timeout=1, allowed_protocols=("file",), allow_redirects=False, fail_on_errors=True)
        self.root = (root or templates_dir()).resolve()
        self.refused: list[str] = []
        self.served: list[str] = []

    def asset_path(self, url: str) -> Path | None:
        """The packaged file ``url`` names, or None when it names anything else."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return None
        if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost") or parts.query:
            return None
        raw = url2pathname(unquote(parts.path))
        if not raw or "\x00" in raw:
            return None
        try:
            path = Path(raw).resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        if path == self.root or not path.is_relative_to(self.root) or not path.is_file():
            return None
        if path.suffix.lower() not in ASSET_SUFFIXES:
            return None
        return path

    def fetch(self, url, headers=None):
        path = self.asset_path(url)
        if path is None:
            self.refused.append(url)
            raise AssetRefused(f"refused to fetch {url!r}: the handout loads only its packaged template assets")
        self.served.append(url)
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        if _URLFetcherResponse is None:
            return {"string": path.read_bytes(), "mime_type": mime, "redirected_url": path.as_uri()}
        return _URLFetcherResponse(path.as_uri(), path.read_bytes(), {"Content-Type": mime})

    def __call__(self, url):
        return self.fetch(url)


# --------------------------------------------------------------------------------------------
# Jinja2


@lru_cache(maxsize=4)
def _environment(root: str) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(root),
        autoescape=True,  # every template, whatever its extension (reliability.md PDF-02)
        undefined=jinja2.StrictUndefined,  # a missing field is an error, never a blank cell
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        gb=units.gb,
        gib=units.gib,
        num=units.num,
        sci=units.sci,
        params=units.params,
    )
    return env


def environment() -> jinja2.Environment:
    """The one Jinja2 environment of the handout (autoescape on, StrictUndefined)."""
    return _environment(str(templates_dir()))


# --------------------------------------------------------------------------------------------
# The view: what the template prints, prepared here (coverage.py's html.py habit)


@dataclass
class _Fit:
    """How one configuration's page is laid out: its density and where the assumptions go."""

    density: int = 0
    assumptions_side: str = "left"


def _rank_key(item: tuple[int, Mapping[str, Any]]):
    """Fitting configurations first, then by cost, then by fewer GPUs; input order breaks ties."""
    i, c = item
    comp = c.get("compute") or {}
    cost = comp.get("cost")
    gpus = comp.get("gpus")
    return (c.get("fits") is not True, cost is None, cost or 0.0, gpus is None, gpus or 0, i)


def _clip(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[: max(limit - 1, 1)].rstrip() + "…", True


def _note(text: str | None, density: int) -> dict[str, Any]:
    """A note cut to what the page has room for: at most N lines and N characters.

    Lines beyond the limit are joined with " / " (nothing is lost); characters beyond the limit are
    cut, and the template then prints a visible marker with the shown and total counts.
    """
    if not text:
        return {"text": "", "truncated": False, "shown": 0, "total": 0}
    text = str(text)
    lines = [ln.strip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    lines = [ln for ln in lines if ln]
    keep = NOTE_MAX_LINES[density]
    if len(lines) > keep:
        lines = lines[: keep - 1] + [" / ".join(lines[keep - 1 :])]
    joined = "\n".join(lines)
    limit = NOTE_MAX_CHARS[density]
    truncated = len(joined) > limit
    if truncated:
        joined = joined[:limit].rstrip()
    return {"text": joined, "truncated": truncated, "shown": len(joined), "total": len(text)}


def _bar(c: Mapping[str, Any]) -> dict[str, Any]:
    """Geometry of the stacked bar: per-rank HBM by state (in HBM), then the items in the peak."""
    segments: list[dict[str, Any]] = []
    for s in c["states"]:
        if s["location"] == "hbm" and s["bytes_per_rank"]:
            segments.append({"key": s["state"], "part": s["part"], "label": s["label"], "bytes": s["bytes_per_rank"]})
    for u in c["uncounted"]:
        if u["in_peak"] and u["bytes_per_rank"]:
            segments.append({"key": u["item"], "part": "", "label": u["label"], "bytes": u["bytes_per_rank"]})
    stacked = sum(seg["bytes"] for seg in segments)
    peak = c.get("peak_bytes_per_rank")
    hbm = c.get("hbm_bytes")
    top = max([x for x in (stacked, peak, hbm) if x] or [1])
    scale = BAR_WIDTH / (top * 1.03)
    x = 0.0
    for seg in segments:
        seg["x"] = round(x, 2)
        seg["w"] = round(seg["bytes"] * scale, 2)
        x += seg["bytes"] * scale
    return {
        "segments": segments,
        "hbm_x": round(hbm * scale, 2) if hbm else None,
        "peak_x": round(peak * scale, 2) if peak else None,
        "over": bool(peak and hbm and peak > hbm),
    }


def _lines(text: str | None, per_line: int) -> int:
    return max(1, math.ceil(len(text or "") / per_line))


# Lines of 7.6 pt (density 0) that fit on a page, and the height of a page at density d relative
# to density 0 (type size × line height; measured on the example pages: d3/d0 ≈ 0.72-0.74).
_PAGE_LINES = 48.5
_DENSITY_SCALE = (1.0, 0.92, 0.84, 0.76)
# English basis and assumption texts wrap onto more lines than the counts above assume (measured on
# the bench's 100 pages: English left columns end up to 3 % past the page where Chinese ones stay
# 5 % short); a page guessed too loose is laid out twice.
_LEFT_SCALE = {"en": 1.05, "zh": 1.0}


def _first_fit(c: Mapping[str, Any], lang: str = "en") -> _Fit:
    """A first guess of the layout from rough line counts (the layout is measured afterwards and a
    page that overflows is laid out again, denser; see :func:`_pages`)."""
    formulas = {f["key"]: f for f in c.get("formulas") or []}
    top = 11.5 + 0.9 * (len(c["states"]) + 1) + len(str(c["name"])) / 110
    left = 2.0
    zeros = 0
    for u in c["uncounted"]:
        if u["bytes_per_rank"]:
            left += 0.2 + _lines(u.get("basis"), 70) + (1 if u["item"] in ("activations", "logits") else 0)
        else:
            zeros += len(u.get("basis") or "") + len(u["label"]["en"]) + 12
    left += zeros / 130
    if c.get("notes"):
        left += 1.5 + min(_lines(str(c["notes"]), 130), NOTE_MAX_CHARS[0] // 130 + 1)
    left *= _LEFT_SCALE[lang]
    right = 7.0 + (3 if c.get("measured") else 0)
    for key in ("peak_bytes_per_rank", "state_bytes_logical_total", "flops_per_token", "total_flops",
                "step_budget_s", "days_on_config", "min_gpus_compute", "min_gpus_memory", "gpu_hours", "cost"):
        f = formulas.get(key)
        right += _lines(f["text"], 70) if f else 0.5
    right += 5
    asm = (1.5 + sum(_lines(a, 150) for a in c.get("assumptions") or [])) * _LEFT_SCALE[lang]
    # the assumptions go under the column that ends higher
    side = "left" if max(left + asm, right) <= max(left, right + asm) else "right"
    lines = top + (max(left + asm, right) if side == "left" else max(left, right + asm))
    density = 0
    while density < MAX_DENSITY and lines * _DENSITY_SCALE[density] > _PAGE_LINES:
        density += 1
    return _Fit(density, side)


def _config_view(i: int, c: Mapping[str, Any], rank: int, fit: _Fit, page_no: int, n_pages: int) -> dict[str, Any]:
    name = str(c["name"])
    shown, name_cut = _clip(name, NAME_MAX_CHARS)
    short, _ = _clip(name, SUMMARY_NAME_MAX_CHARS)
    return {
        "id": i,
        "c": c,
        "name": shown,
        "name_truncated": name_cut,
        "name_long": len(shown) > 70,
        "short_name": short,
        "rank": rank,
        "density": fit.density,
        "assumptions_side": fit.assumptions_side,
        "note": _note(c.get("notes"), fit.density),
        "bar": _bar(c),
        "formulas": {f["key"]: f for f in c.get("formulas") or []},
        "page_no": page_no,
        "n_pages": n_pages,
    }


def _summary_page_count(n_configs: int) -> int:
    """Pages of the summary: SUMMARY_ROWS_PER_PAGE rows each, one page even with no rows."""
    return max(1, math.ceil(n_configs / SUMMARY_ROWS_PER_PAGE))


def _view(doc: Mapping[str, Any], lang: str, fits: Sequence[_Fit], only: Sequence[int] | None = None,
          summary: bool | None = None) -> dict[str, Any]:
    """Everything the template needs; with ``only``, just those configurations' pages (a part of
    the handout, or a probe), and the summary pages only when ``summary`` says so (by default:
    when every page is wanted).  Page numbers and ranks are those of the whole handout."""
    configs = list(doc["configs"])
    order = sorted(enumerate(configs), key=_rank_key)
    rank_of = {i: r for r, (i, _) in enumerate(order, 1)}
    n_summary = _summary_page_count(len(configs))
    n_pages = n_summary + len(configs)
    wanted = range(len(configs)) if only is None else only

    def page(i: int) -> dict[str, Any]:
        return _config_view(i, configs[i], rank_of[i], fits[i], n_summary + i + 1, n_pages)

    pages = {i: page(i) for i in wanted}
    summary_pages: list[list[dict[str, Any]]] = []
    if summary or (summary is None and only is None):
        rows = [pages.get(i) or page(i) for i, _ in order]
        summary_pages = [rows[k : k + SUMMARY_ROWS_PER_PAGE] for k in range(0, len(rows), SUMMARY_ROWS_PER_PAGE)] or [[]]
    return {
        "lang": lang,
        "html_lang": "zh-CN" if lang == "zh" else "en",
        "n_configs": len(configs),
        "n_pages": n_pages,
        "summary_pages": summary_pages,
        "pages": [pages[i] for i in wanted],
        "stylesheet": STYLESHEET,
    }


def _check(doc: Mapping[str, Any], lang: str) -> None:
    if lang not in LANGS:
        raise HandoutError(f"Unknown handout language {lang!r}: expected one of {', '.join(LANGS)}.")
    if not isinstance(doc, Mapping) or not isinstance(doc.get("configs"), list):
        raise HandoutError("The handout needs the JSON document of CONTRACT §4 (a mapping with a list of configs).")


# Whitespace between a tag and a following block-level or table tag: the HTML parser keeps it as a
# text node that WeasyPrint then styles and throws away (~8 % of the render time).  Only markup
# whitespace matches: user text is escaped, so it holds no "<" or ">" of its own.
_MARKUP_GAP = re.compile(
    r">\s+<(?=/?(?:html|head|meta|title|link|style|body|section|div|header|h1|h2|p|ul|li|table|colgroup|col"
    r"|thead|tbody|tfoot|tr|th|td|svg|rect|line|text)[\s>])"
)


# Characters that no font draws and XML 1.0 does not allow (C0 controls other than tab, LF and CR;
# U+FFFE, U+FFFF; lone surrogates).  The template writes none, so any comes from user text (a
# document built by a script; the reader refuses them); each is shown as U+FFFD, not as tofu.
_UNPRINTABLE = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _html(view: Mapping[str, Any]) -> str:
    # No whitespace after </html>: the HTML parser would append it to the body.
    html = _MARKUP_GAP.sub("><", environment().get_template(MAIN_TEMPLATE).render(**view)).rstrip()
    return _UNPRINTABLE.sub("\ufffd", html)


def render_html(doc: Mapping[str, Any], lang: str = "en") -> str:
    """The handout as HTML, with the first-guess layout of each page (the PDF may make a page
    denser after measuring it)."""
    _check(doc, lang)
    fits = [_first_fit(c, lang) for c in doc["configs"]]
    return _html(_view(doc, lang, fits))


# --------------------------------------------------------------------------------------------
# WeasyPrint


_RENDER_LOCK = threading.RLock()  # os.environ and the weasyprint logger are process-wide


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the render.  A render builds hundreds of
    thousands of live objects (boxes, styles, PDF objects) and every collection of the oldest
    generation walks them all: ~20 % of the render time, for ~10 % more peak memory without it.
    Reference counting still frees what is not in a cycle; the collector is resumed (if it was
    running) when the render ends, and collects the rest on its own schedule."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextlib.contextmanager
def _source_date_epoch() -> Iterator[None]:
    """Set SOURCE_DATE_EPOCH for the render (unless the caller set one) and restore it after."""
    old = os.environ.get("SOURCE_DATE_EPOCH")
    if old is None:
        os.environ["SOURCE_DATE_EPOCH"] = FIXED_SOURCE_DATE_EPOCH
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = old


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def _collect_weasyprint_warnings() -> Iterator[_Collector]:
    logger = logging.getLogger("weasyprint")
    handler = _Collector()
    old_level = logger.level
    if logger.getEffectiveLevel() > logging.WARNING:
        logger.setLevel(logging.WARNING)  # see warnings even when an application silenced them
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def _layout(view: Mapping[str, Any], fetcher: PackagedAssetFetcher, font_config) -> weasyprint.document.Document:
    """Lay the view's pages out: WeasyPrint's public API, its own HTML parser and user-agent
    stylesheet, every URL through ``fetcher`` (its ``base_url`` is the template folder, where the
    template's ``<link>`` finds handout.css)."""
    html = weasyprint.HTML(string=_html(view), base_url=fetcher.root.as_uri() + "/", url_fetcher=fetcher)
    return html.render(font_config=font_config)


@dataclass
class _Measure:
    """Where a configuration page's parts end, in CSS px from the top of its sheet."""

    avail: float
    left: float
    right: float
    asm_top: float | None


def _measure(document) -> dict[int, _Measure]:
    """Read the anchors the template places on each configuration page (``top-``, ``bottom-``,
    ``end-N-l``, ``end-N-r`` and ``asm-``; their ``(x1, y1, x2, y2)`` boxes, y1 used)."""
    marks: dict[int, dict[str, float]] = {}
    for page in document.pages:
        for anchor, pos in page.anchors.items():
            kind, _, rest = anchor.partition("-")
            if kind in ("top", "bottom", "end", "asm") and rest[:1].isdigit():
                i_text, _, side = rest.partition("-")
                marks.setdefault(int(i_text), {})[kind + side] = pos[1]
    out = {}
    for i, m in marks.items():
        top = m.get("top")
        if top is None or "bottom" not in m:
            continue
        out[i] = _Measure(
            avail=m["bottom"] - top,
            left=m.get("endl", top) - top,
            right=m.get("endr", top) - top,
            asm_top=(m["asm"] - top) if "asm" in m else None,
        )
    return out


def _refit(fit: _Fit, m: _Measure) -> _Fit:
    """A layout for a page that overflowed: the assumptions under the other column if that is
    shorter, and the first density whose smaller type should make the rest fit."""
    side = fit.assumptions_side
    height = max(m.left, m.right)
    if m.asm_top is not None:
        own, other = (m.left, m.right) if side == "left" else (m.right, m.left)
        block = own - m.asm_top
        moved = max(own - block, other + block)
        if moved < height - 2:
            side = "right" if side == "left" else "left"
            height = moved
    density = fit.density
    needed = m.avail / height if height > 0 else 1.0
    base = _DENSITY_SCALE[fit.density]
    while density < MAX_DENSITY and _DENSITY_SCALE[density] / base > needed * 0.995:
        density += 1
    if density == fit.density and side == fit.assumptions_side and density < MAX_DENSITY:
        density += 1
    return _Fit(density, side)


# --------------------------------------------------------------------------------------------
# Parts: the handout is laid out and written in parts of about equal page counts, which worker
# processes render side by side (WeasyPrint is pure Python and single-threaded; see Speed above),
# and one PDF is assembled from the parts' PDFs.  The parts depend only on the number of
# configurations, never on the machine, so the PDF is the same bytes with one worker or many.

PARALLEL_MIN_CONFIGS = 8  # fewer configurations: one part, rendered in this process
PART_MAX_PAGES = 64  # bounds a worker's memory: a 52-page part peaked at 400 MB (~7 MB a laid-out page)


@dataclass(frozen=True)
class _Part:
    """One part of the handout: the summary pages (first part only) and a run of configurations;
    ``pages`` counts both."""

    summary: bool
    configs: range
    pages: int


def _parts(n_configs: int) -> list[_Part]:
    """Split the handout into parts: one below :data:`PARALLEL_MIN_CONFIGS` configurations; two up
    to 32 pages; else a multiple of four parts of at most :data:`PART_MAX_PAGES` pages (four keeps
    two or four cores equally busy).  Page counts differ by at most one between parts; the summary
    pages count as pages of the first part."""
    n_summary = _summary_page_count(n_configs)
    pages = n_summary + n_configs
    if n_configs < PARALLEL_MIN_CONFIGS:
        k = 1
    elif pages <= 32:
        k = 2
    else:
        k = 4 * math.ceil(pages / (4 * PART_MAX_PAGES))
    bounds = [max(j * pages // k - n_summary, 0) for j in range(k + 1)]
    bounds[-1] = n_configs
    return [_Part(j == 0, range(bounds[j], bounds[j + 1]), bounds[j + 1] - bounds[j] + (n_summary if j == 0 else 0))
            for j in range(k) if j == 0 or bounds[j + 1] > bounds[j]]


def _pages(doc: Mapping[str, Any], lang: str, fetcher: PackagedAssetFetcher, part: _Part, fits: list[_Fit]):
    """Lay one part out; lay out again (alone, in a probe document) each page that overflows,
    until it fits or is at the densest step; return the pages and the names still clipped."""
    configs = doc["configs"]
    font_config = weasyprint.text.fonts.FontConfiguration()
    view = _view(doc, lang, fits, only=part.configs, summary=part.summary)
    first = _layout(view, fetcher, font_config)
    pages = list(first.pages)
    n_summary = len(view["summary_pages"])
    if len(pages) != n_summary + len(part.configs):  # every sheet is one unsplittable block
        raise HandoutError(f"Internal error: {n_summary + len(part.configs)} sheets laid out as {len(pages)} pages.")
    measures = _measure(first)
    over = sorted(i for i, m in measures.items() if max(m.left, m.right) > m.avail + 0.5)
    clipped: list[int] = []
    while over:
        retry = []
        for i in over:
            new = _refit(fits[i], measures[i])
            if (new.density, new.assumptions_side) == (fits[i].density, fits[i].assumptions_side):
                clipped.append(i)  # already at the densest step and nothing left to move
            else:
                fits[i] = new
                retry.append(i)
        if not retry:
            break
        probe = _layout(_view(doc, lang, fits, only=retry, summary=False), fetcher, font_config)
        if len(probe.pages) != len(retry):
            raise HandoutError(f"Internal error: {len(retry)} configuration pages laid out as {len(probe.pages)} pages.")
        for k, i in enumerate(retry):
            pages[n_summary + i - part.configs.start] = probe.pages[k]
        measures = _measure(probe)
        over = sorted(i for i in retry if max(measures[i].left, measures[i].right) > measures[i].avail + 0.5)
    return first.copy(pages), [configs[i]["name"] for i in clipped]


def _render_part(doc: Mapping[str, Any], lang: str, root: Path, part: _Part, fits: list[_Fit]) -> tuple[bytes, list[str]]:
    """One part as a PDF, with the warnings its render raised (WeasyPrint's, and clipped pages)."""
    fetcher = PackagedAssetFetcher(root)
    with _RENDER_LOCK, _no_cyclic_gc(), _collect_weasyprint_warnings() as collected:
        try:
            document, clipped = _pages(doc, lang, fetcher, part, fits)
            pdf = document.write_pdf()  # attachments, if any, are fetched here
        except AssetRefused as err:
            raise HandoutError(f"Handout template error: {err}") from None
    if fetcher.refused:  # refused, and the error caught by WeasyPrint after all
        raise HandoutError(f"Handout template error: refused to fetch {fetcher.refused[0]!r}: "
                           "the handout loads only its packaged template assets")
    messages = [f"WeasyPrint: {r.getMessage()}" for r in collected.records]
    messages += [f"the page of {name!r} is too full even at the densest layout; its end is clipped" for name in clipped]
    return pdf, messages


# What a forked worker renders from: set in the parent just before the workers are forked (so
# nothing but a part's number is sent to a worker), cleared afterwards.
_FORKED: tuple | None = None


def _part_task(j: int) -> tuple[bytes, list[str]]:
    doc, lang, root, parts, fits = _FORKED  # the child's own copy: _pages may change its fits
    return _render_part(doc, lang, root, parts[j], fits)


def _child(j: int, conn) -> None:
    """A forked process that renders part ``j``, sends the result (or the exception) and exits.
    One process per part: its memory goes back to the system when it exits, with no garbage
    collection.  A part leaves ~16,000 objects in reference cycles per page and collecting them
    costs ~20-23 ms a page; a process that rendered part after part without collecting grew to
    2.5 GB for 1,000 configurations.  So the collector stays off in the child for good (turned
    back on after the render, as :func:`_no_cyclic_gc` does in one process, its next allocation
    would make that walk just before the process exits).  Ctrl-C is the parent's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.disable()
    try:
        message = (True, _part_task(j))
    except BaseException as err:  # noqa: BLE001 - sent to the parent, which raises it
        message = (False, err)
    try:
        conn.send(message)
    except Exception as err:  # noqa: BLE001 - an exception that does not pickle
        conn.send((False, HandoutError(f"{type(message[1]).__name__}: {message[1]} ({err})")))
    conn.close()


def _forked(n: int, workers: int, done: Callable[[int, tuple[bytes, list[str]]], None]) -> None:
    """Run parts 0..n-1 in forked processes, at most ``workers`` at a time, calling ``done(j,
    result)`` as each finishes.  The processes are forked from this (single-threaded) thread, so
    no lock can be held by a thread that the child does not have."""
    context = multiprocessing.get_context("fork")
    running: dict[Any, tuple[int, Any]] = {}
    started = 0
    try:
        while started < n or running:
            while started < n and len(running) < workers:
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_child, args=(started, send), daemon=True)
                process.start()
                send.close()
                running[receive] = (started, process)
                started += 1
            for conn in multiprocessing.connection.wait(list(running)):
                j, process = running.pop(conn)
                try:
                    ok, payload = conn.recv()
                except EOFError:
                    process.join()
                    raise HandoutError(
                        f"A process rendering the handout stopped unexpectedly (exit code {process.exitcode}); "
                        "try again with -j 1 (LEDGER_REPORT_JOBS=1) to render in one process."
                    ) from None
                finally:
                    conn.close()
                process.join()
                if not ok:
                    raise payload
                done(j, payload)
    finally:
        for conn, (_, process) in running.items():
            process.kill()
            process.join()
            conn.close()


def default_jobs() -> int:
    """Worker processes for the handout: ``LEDGER_REPORT_JOBS`` if set, else the CPUs this process
    may run on."""
    text = os.environ.get("LEDGER_REPORT_JOBS", "").strip()
    if text:
        try:
            return max(1, int(text))
        except ValueError:
            raise HandoutError(f"LEDGER_REPORT_JOBS must be a whole number of worker processes; found {text!r}.") from None
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _can_fork() -> bool:
    """Workers are forked (they inherit the imported modules, templates and the document: no
    start-up cost, nothing to send), which is safe only in a single-threaded process on a
    platform that has fork."""
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def _render_parts(doc, lang, root, parts, fits, jobs, progress) -> list[tuple[bytes, list[str]]]:
    """Every part's PDF and warnings, in part order: in forked processes side by side when there
    are several parts, more than one job and it is safe to fork; else one after the other here."""
    total, done = sum(p.pages for p in parts), 0
    results: dict[int, tuple[bytes, list[str]]] = {}

    def finished(j: int, result: tuple[bytes, list[str]]) -> None:
        nonlocal done
        results[j] = result
        done += parts[j].pages
        if progress:
            progress(done, total)

    workers = min(jobs, len(parts))
    if workers > 1 and _can_fork():
        global _FORKED
        _FORKED = (doc, lang, root, parts, fits)
        # The template is compiled here, once, rather than in every worker (~0.1 s each).
        environment().get_template(MAIN_TEMPLATE)
        # Objects the workers inherit are moved out of the collector's reach: a forked worker
        # that collects them touches (and so copies) every page of the parent's heap, which made
        # the workers ~25 % slower.
        gc.collect()
        gc.freeze()
        try:
            _forked(len(parts), workers, finished)
        finally:
            _FORKED = None
            gc.unfreeze()
    else:
        for j, part in enumerate(parts):
            finished(j, _render_part(doc, lang, root, part, fits))
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
    lang = first.trailer["/Root"].get("/Lang")
    if lang is not None:
        catalog[pypdf.generic.NameObject("/Lang")] = pypdf.generic.TextStringObject(str(lang))
    catalog.pop(pypdf.generic.NameObject("/Names"), None)
    writer.pdf_header = first.pdf_header
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def render_pdf(doc: Mapping[str, Any], lang: str = "en", *, warnings: list[str] | None = None,
               jobs: int | None = None, progress: Callable[[int, int], None] | None = None) -> bytes:
    """The handout PDF: a summary, then one A4-landscape page per configuration, as bytes.

    ``warnings``: when a list is given, WeasyPrint's warnings (tofu, missing HarfBuzz-subset, CSS
    problems) and any page whose end had to be clipped are appended to it as strings; otherwise
    they are logged on the ``ledger_report.handout`` logger.  ``jobs``: worker processes for the
    parts (:func:`_parts`; default :func:`default_jobs`); the bytes do not depend on it.
    ``progress(pages_done, pages_total)`` is called as parts finish.
    """
    _check(doc, lang)
    root = templates_dir()
    jobs = default_jobs() if jobs is None else max(1, int(jobs))
    configs = doc["configs"]
    parts = _parts(len(configs))
    fits = [_first_fit(c, lang) for c in configs]
    with _source_date_epoch():
        results = _render_parts(doc, lang, root, parts, fits, jobs, progress)
    with _no_cyclic_gc():  # pypdf's objects are many and short-lived: ~15 % of the merge
        pdf = _merge([r[0] for r in results])
    messages = [m for r in results for m in r[1]]
    if warnings is not None:
        warnings.extend(messages)
    else:
        for message in messages:
            LOG.warning("handout: %s", message)
    return pdf
