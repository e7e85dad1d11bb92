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
:func:`_settle_densities`.

Determinism (reliability.md §4.4, DET-01/05): WeasyPrint's font subsets carry a timestamp, so the
render runs with ``SOURCE_DATE_EPOCH`` set (to a fixed date unless the caller already set one) and
the variable is restored afterwards.  Same document, same fonts, same WeasyPrint → same bytes.

WeasyPrint reports problems (a ``.notdef`` glyph, i.e. tofu; the slow fontTools fallback when
``libharfbuzz-subset0`` is missing; bad CSS) as log records.  They are collected during each render
and either appended to the caller's ``warnings`` list (the tests fail on any) or re-logged on the
``ledger_report.handout`` logger.
"""

from __future__ import annotations

import contextlib
import logging
import math
import mimetypes
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import jinja2
import weasyprint
from weasyprint.urls import FatalURLFetchingError, URLFetcher, URLFetcherResponse

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


class AssetRefused(FatalURLFetchingError):
    """A URL that is not a packaged template asset: stops the render (a ``BaseException``, as
    WeasyPrint's fatal fetch errors are, so WeasyPrint does not swallow it into a warning)."""


class PackagedAssetFetcher(URLFetcher):
    """A WeasyPrint ``URLFetcher`` that serves only files inside the packaged template folder.

    Allowed: ``file:`` URLs with no host (or ``localhost``) and no query, whose path, after
    percent-decoding, ``..`` and symlinks, is a regular file inside :func:`templates_dir` with an
    asset suffix (:data:`ASSET_SUFFIXES`).  Everything else (other schemes, ``data:``, hosts,
    traversal, the templates themselves) raises :class:`AssetRefused`, which stops the render;
    ``refused`` and ``served`` list the URLs asked for.
    """

    def __init__(self, root: Path | None = None):
        # WeasyPrint 70 requires a URLFetcher subclass (a plain function crashes); no redirects,
        # and fail_on_errors so that any other failure inside fetch() is fatal too.
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
        return URLFetcherResponse(path.as_uri(), path.read_bytes(), {"Content-Type": mime})


# --------------------------------------------------------------------------------------------
# Jinja2


def _gb(n):
    return units.gb(n)


def _gib(n):
    return units.gib(n)


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
        gb=_gb,
        gib=_gib,
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
        joined = joined[:limit].rstrip() + "…"
    return {"text": joined, "truncated": truncated, "shown": min(limit, len(joined)), "total": len(text)}


def _bar(c: Mapping[str, Any]) -> dict[str, Any]:
    """Per-rank HBM memory as stacked segments (states in HBM, then the items in the peak)."""
    segments: list[dict[str, Any]] = []
    for s in c["states"]:
        if s["location"] == "hbm" and s["bytes_per_rank"]:
            segments.append({"kind": "state", "key": s["state"], "part": s["part"], "label": s["label"], "bytes": s["bytes_per_rank"]})
    for u in c["uncounted"]:
        if u["in_peak"] and u["bytes_per_rank"]:
            segments.append({"kind": "item", "key": u["item"], "part": "", "label": u["label"], "bytes": u["bytes_per_rank"]})
    stacked = sum(s["bytes"] for s in segments)
    peak = c.get("peak_bytes_per_rank")
    hbm = c.get("hbm_bytes")
    top = max([x for x in (stacked, peak, hbm) if x] or [1])
    scale = BAR_WIDTH / (top * 1.04)
    x = 0.0
    for seg in segments:
        seg["x"] = round(x, 2)
        seg["w"] = round(seg["bytes"] * scale, 2)
        x += seg["bytes"] * scale
    return {
        "segments": segments,
        "end_x": round(x, 2),
        "hbm_x": round(hbm * scale, 2) if hbm else None,
        "peak_x": round(peak * scale, 2) if peak else None,
        "over": bool(peak and hbm and peak > hbm),
        "width": BAR_WIDTH,
    }


def _config_view(i: int, c: Mapping[str, Any], rank: int, density: int) -> dict[str, Any]:
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
        "density": density,
        "note": _note(c.get("notes"), density),
        "bar": _bar(c),
        "formulas": {f["key"]: f for f in c.get("formulas") or []},
    }


def _density_guess(c: Mapping[str, Any]) -> int:
    """A first guess of the density a page needs, from how much it holds (checked after layout)."""
    load = 0.0
    load += 1.6 * len(c["states"])
    load += 0.9 * len(c.get("formulas") or [])
    load += sum(len(a) for a in c.get("assumptions") or []) / 140
    load += sum(len(u.get("basis") or "") for u in c["uncounted"]) / 150
    load += min(len(str(c.get("notes") or "")), NOTE_MAX_CHARS[0]) / 160
    load += len(str(c["name"])) / 90
    load += 2 if c.get("measured") else 0
    load += 2 if (c.get("offload") or {}).get("host_state_bytes_per_rank") or (c.get("offload") or {}).get("nvme_state_bytes_per_rank") else 0
    if load <= 48:
        return 0
    if load <= 56:
        return 1
    return 2


def _view(doc: Mapping[str, Any], lang: str, densities: Sequence[int], only: Sequence[int] | None = None) -> dict[str, Any]:
    configs = list(doc["configs"])
    order = sorted(enumerate(configs), key=_rank_key)
    rank_of = {i: r for r, (i, _) in enumerate(order, 1)}
    pages = [_config_view(i, c, rank_of[i], densities[i]) for i, c in enumerate(configs)]
    by_rank = [pages[i] for i, _ in order]
    summary = [by_rank[k : k + SUMMARY_ROWS_PER_PAGE] for k in range(0, len(by_rank), SUMMARY_ROWS_PER_PAGE)] or [[]]
    if only is not None:
        pages = [pages[i] for i in only]
        summary = []
    return {
        "lang": lang,
        "html_lang": "zh-CN" if lang == "zh" else "en",
        "schema": doc.get("schema", ""),
        "n_configs": len(configs),
        "summary_pages": summary,
        "pages": pages,
        "stylesheet": "handout.css",
    }


def _check_lang(lang: str) -> None:
    if lang not in LANGS:
        raise HandoutError(f"Unknown handout language {lang!r}: expected one of {', '.join(LANGS)}.")


def _html(view: Mapping[str, Any]) -> str:
    return environment().get_template(MAIN_TEMPLATE).render(**view)


def render_html(doc: Mapping[str, Any], lang: str = "en") -> str:
    """The handout as an HTML string (the first-guess densities; the PDF may make pages denser)."""
    _check_lang(lang)
    densities = [_density_guess(c) for c in doc["configs"]]
    return _html(_view(doc, lang, densities))


# --------------------------------------------------------------------------------------------
# WeasyPrint


_ENV_LOCK = threading.RLock()  # os.environ and the weasyprint logger are process-wide


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


def _layout(view: Mapping[str, Any], root: Path):
    fetcher = PackagedAssetFetcher(root)
    html = weasyprint.HTML(string=_html(view), base_url=root.as_uri() + "/", url_fetcher=fetcher)
    try:
        return html.render()
    except AssetRefused as err:
        raise HandoutError(f"Handout template error: {err}") from None


def _overfull(document) -> set[int]:
    """Indexes of configuration pages whose content runs past the bottom of their page."""
    bottoms: dict[int, float] = {}
    ends: dict[int, float] = {}
    for page in document.pages:
        for anchor, pos in page.anchors.items():  # (x1, y1, x2, y2) of the border box
            y = pos[1]
            if anchor.startswith("bottom-"):
                bottoms[int(anchor.split("-")[1])] = y
            elif anchor.startswith("end-"):
                i = int(anchor.split("-")[1])
                ends[i] = max(ends.get(i, -math.inf), y)
    return {i for i, y in ends.items() if i in bottoms and y > bottoms[i] + 0.5}


def _settle_densities(doc: Mapping[str, Any], lang: str, root: Path):
    """Lay the handout out; lay out again, denser, the pages whose content overflows.

    The first layout uses :func:`_density_guess`.  Overflowing pages are bumped one density step
    at a time and checked in a probe document holding only them; when none overflows any more
    (or the densest step is reached: its end is then clipped, never moved to a second page), the
    whole handout is laid out once more with the settled densities.
    """
    configs = doc["configs"]
    densities = [_density_guess(c) for c in configs]
    document = _layout(_view(doc, lang, densities), root)
    pending = sorted(_overfull(document))
    if not pending:
        return document, densities
    stuck: list[int] = []
    while pending:
        stuck += [i for i in pending if densities[i] >= MAX_DENSITY]
        pending = [i for i in pending if densities[i] < MAX_DENSITY]
        if not pending:
            break
        for i in pending:
            densities[i] += 1
        probe = _layout(_view(doc, lang, densities, only=pending), root)
        pending = sorted(_overfull(probe))
    for i in stuck:
        LOG.warning("handout: the page of %r is too full even at the densest layout; its end is clipped", configs[i]["name"])
    return _layout(_view(doc, lang, densities), root), densities


def render_pdf(doc: Mapping[str, Any], lang: str = "en", *, warnings: list[str] | None = None) -> bytes:
    """The handout PDF: a summary, then one A4-landscape page per configuration, as bytes.

    ``warnings``: when a list is given, WeasyPrint's warnings (tofu, missing HarfBuzz-subset, CSS
    problems) are appended to it as strings; otherwise they are logged on ``ledger_report.handout``.
    """
    _check_lang(lang)
    root = templates_dir()
    with _ENV_LOCK, _source_date_epoch(), _collect_weasyprint_warnings() as collected:
        document, _ = _settle_densities(doc, lang, root)
        pdf = document.write_pdf()
    messages = [r.getMessage() for r in collected.records]
    if warnings is not None:
        warnings.extend(messages)
    else:
        for m in messages:
            LOG.warning("WeasyPrint: %s", m)
    return pdf
