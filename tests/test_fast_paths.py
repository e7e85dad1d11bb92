"""The four shortcuts through WeasyPrint's internals (ledger_report/render/fast_paths.py)
change nothing that is drawn: checked against renders without them, on the seed pages, the
overflow cases and a note in Chinese, in both languages."""

from __future__ import annotations

import collections
import inspect
import io
import logging
import re
import sys
import zlib

import pydyf
import pypdf
import pytest
import weasyprint
import weasyprint.draw.text as draw_text
import weasyprint.layout.inline as inline
import weasyprint.layout.percent as percent
import weasyprint.text.fonts as text_fonts
import weasyprint.text.line_break as line_break

from ledger_report.render import fast_paths, handout

from test_handout import MOE_5T, MOE_35B, OFFLOAD, QWEN3_8B, _doc, _overflow_rows


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return [_doc(QWEN3_8B, MOE_35B, MOE_5T, OFFLOAD), _doc(*_overflow_rows())]


def _render(doc: dict, lang: str, monkeypatch, *, layouts: bool, level6: bool, lines: bool = False,
            percentages: bool = False) -> bytes:
    """One render in this process with only the shortcuts asked for (handout's own are off)."""
    monkeypatch.setattr(handout, "FAST_PATHS", False)
    warnings: list[str] = []
    with fast_paths.taken(layouts=layouts, level6=level6, lines=lines, percentages=percentages):
        pdf = handout.render_pdf(doc, lang, warnings=warnings, jobs=1)
    assert warnings == []
    return pdf


def _streams(pdf: bytes) -> list[tuple[bytes, bytes]]:
    """Every stream object of the file: (decoded data, data as stored), in object order."""
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    out = []
    for number in range(1, reader.trailer["/Size"]):
        try:
            obj = reader.get_object(number)
        except Exception:  # noqa: BLE001 - free or compressed-away numbers
            continue
        if isinstance(obj, pypdf.generic.StreamObject):
            out.append((obj.get_data(), obj._data))
    return out


def test_the_pinned_weasyprint_takes_the_shortcuts():
    """pyproject.toml pins WeasyPrint 70.x, the version whose internals fast_paths replaces."""
    assert fast_paths.SUPPORTED
    with fast_paths.taken() as took:
        assert took
        assert line_break.Layout.deactivate is fast_paths._keep
        assert pydyf.zlib is fast_paths._ZLIB
        assert inline.split_first_line is fast_paths._split_first_line and inline.strut is fast_paths._strut
        # every module of WeasyPrint that holds resolve_percentages holds the shortcut
        holders = [m for m in list(sys.modules.values()) if m and m.__name__.startswith("weasyprint")
                   and getattr(m, "resolve_percentages", None) in (percent.resolve_percentages,
                                                                   fast_paths._RESOLVE_PERCENTAGES)]
        assert len(holders) >= 9 and percent.resolve_percentages is fast_paths._resolve_percentages
        assert all(m.resolve_percentages is fast_paths._resolve_percentages for m in holders)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_layouts_drawn_as_laid_out_give_the_same_bytes(docs, lang, monkeypatch):
    """Drawing each text's layout as it was laid out, instead of making and shaping it again,
    gives a PDF identical byte for byte to WeasyPrint's own way."""
    for doc in docs:
        theirs = _render(doc, lang, monkeypatch, layouts=False, level6=False)
        ours = _render(doc, lang, monkeypatch, layouts=True, level6=False)
        assert ours == theirs


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lines_broken_once_per_part_give_the_same_bytes(docs, lang, monkeypatch):
    """Answering a repeated line-break question from the part's earlier answer, and sharing its
    layout between the boxes that asked it, gives a PDF identical byte for byte to WeasyPrint's
    own way: alone, and with the other two shortcuts (as the handout renders)."""
    for doc in docs:
        theirs = _render(doc, lang, monkeypatch, layouts=False, level6=False)
        assert _render(doc, lang, monkeypatch, layouts=False, level6=False, lines=True) == theirs
        assert _render(doc, lang, monkeypatch, layouts=True, level6=False, lines=True) == theirs


def test_repeated_lines_are_laid_out_once(docs, monkeypatch):
    """The shortcut is taken: on the seed pages (four ledgers repeating "HBM", "whole", "fp32"...)
    WeasyPrint breaks under 80 % of the lines it is asked to (670 of 922 in WeasyPrint 70.0), and
    makes under 85 % of the Pango layouts it makes without the shortcut (846 against 1,098)."""
    made, asked = collections.Counter(), collections.Counter()
    setup, split = line_break.Layout.setup, fast_paths._SPLIT_FIRST_LINE

    def counting_setup(self, style):
        made[mode] += 1
        return setup(self, style)

    def counting_split(*args, **kwargs):
        asked["broken"] += 1
        return split(*args, **kwargs)

    def counting_question(*args, **kwargs):
        asked["asked"] += 1
        return fast_paths_split(*args, **kwargs)

    fast_paths_split = fast_paths._split_first_line
    monkeypatch.setattr(line_break.Layout, "setup", counting_setup)
    monkeypatch.setattr(fast_paths, "_SPLIT_FIRST_LINE", counting_split)
    monkeypatch.setattr(fast_paths, "_split_first_line", counting_question)
    for mode in ("without", "with"):
        _render(docs[0], "en", monkeypatch, layouts=True, level6=False, lines=mode == "with")
    assert 0 < asked["broken"] < 0.8 * asked["asked"], asked
    assert 0 < made["with"] < 0.85 * made["without"], made


def _line_break_reads() -> set[str]:
    """The style properties that WeasyPrint's split_first_line reads, directly or through the
    functions it calls, found in their source."""
    functions = (line_break.split_first_line, line_break.first_line_metrics, line_break.line_size,
                 line_break.create_layout, line_break.Layout, text_fonts.get_font_description)
    source = "".join(inspect.getsource(f) for f in functions)
    assert re.findall(r"style\.(\w+)", source) == ["font_config", "font_config"]  # part of the key too
    return set(re.findall(r"style\[['\"](\w+)['\"]\]", source))


def test_the_line_key_holds_every_property_weasyprint_reads():
    """The key a line's answer is kept under holds every style property split_first_line reads
    (28 in WeasyPrint 70.0): a property missing from it could give one box another's line."""
    reads = _line_break_reads()
    assert "font_size" in reads and "white_space" in reads and "letter_spacing" in reads
    assert reads == set(fast_paths.LINE_PROPERTIES)


def _small_pdf(css: str, body: str, lines: bool) -> tuple[bytes, int]:
    """A small page of Noto Sans CJK SC paragraphs rendered by WeasyPrint with the layouts kept
    and, if ``lines``, lines broken and drawn once: its PDF, and the .notdef warnings it gave."""
    html = (f"<style>@page {{ size: 80mm 40mm; margin: 2mm }} p {{ font: 8pt 'Noto Sans CJK SC'; margin: 0 }}"
            f" {css}</style>{body}")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("weasyprint")
    logger.addHandler(handler)
    try:
        with fast_paths.taken(layouts=True, level6=False, lines=lines):
            pdf = weasyprint.HTML(string=html).write_pdf()
    finally:
        logger.removeHandler(handler)
    return pdf, sum(".notdef" in r.getMessage() for r in records)


def test_an_ellipsis_is_drawn_on_the_boxs_own_layout(monkeypatch):
    """Drawing shortens the line of an ellipsis on the layout itself; with a layout shared between
    boxes of the same text, the ellipsis box gets its own, and the other boxes keep the whole
    text: the same bytes as WeasyPrint's own way."""
    text = "sharded over the expert-parallel group of eight ranks"
    css = "p { width: 30mm; white-space: nowrap; overflow: hidden } .cut { text-overflow: ellipsis }"
    body = f"<p>{text}</p><p class=cut>{text}</p><p>{text}</p><p class=cut>{text}</p>"
    theirs = _small_pdf(css, body, lines=False)
    assert _small_pdf(css, body, lines=True) == theirs
    # the same boxes drawn on the shared layout: the third box is drawn cut short as well
    monkeypatch.setattr(fast_paths, "_draw_first_line", fast_paths._DRAW_FIRST_LINE)
    assert _small_pdf(css, body, lines=True)[0] != theirs[0]


def test_a_shared_line_with_a_missing_glyph_warns_each_time_it_is_drawn():
    """A line with a glyph no font has is drawn by WeasyPrint each time (not from the first
    drawing's calls), so its .notdef warning comes as often as WeasyPrint gives it, once per box;
    and a line drawn from the first drawing's calls gives the same bytes."""
    body = "<p>parrot \U0001F99C</p><p>HBM</p>" * 3
    ours, theirs = _small_pdf("", body, lines=True), _small_pdf("", body, lines=False)
    assert theirs[1] == 3
    assert ours == theirs


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_percentages_resolved_once_give_the_same_bytes(docs, lang, monkeypatch):
    """Setting a box's margins, paddings, sizes and borders from the answer for an earlier box
    of the same style and containing block gives a PDF identical byte for byte to WeasyPrint's
    own way: alone, and with every other shortcut."""
    for doc in docs:
        theirs = _render(doc, lang, monkeypatch, layouts=False, level6=False)
        assert _render(doc, lang, monkeypatch, layouts=False, level6=False, percentages=True) == theirs
        assert _render(doc, lang, monkeypatch, layouts=True, level6=False, lines=True, percentages=True) == theirs


def test_the_resolved_values_are_every_value_weasyprint_sets():
    """The values kept for a box are every attribute resolve_percentages (and the box sizing it
    applies) sets, read off WeasyPrint's source: one left out would keep the previous box's."""
    source = inspect.getsource(percent.resolve_percentages)
    named = set(re.findall(r"resolve_one_percentage\(box, '(\w+)'", source))
    assert "box.height = " in source and "setattr(box, prop, box.style[prop])" in source
    named |= {"height"} | {f"border_{side}_width" for side in ("top", "right", "bottom", "left")}
    assert "for side in ('top', 'right', 'bottom', 'left')" in source
    sizing = inspect.getsource(percent.adjust_box_sizing)
    # box sizing sets width and height, and their min_ and max_, all named above
    assert "setattr(box, axis," in sizing and set(re.findall(r"setattr\(box, f'(\w+)_\{axis\}'", sizing)) == {"min", "max"}
    assert named == set(fast_paths.RESOLVED) and len(fast_paths.RESOLVED) == 18


def test_level_6_streams_hold_the_same_content(docs, monkeypatch):
    """At zlib level 6 every stream (page contents, fonts, the text layer's maps) decodes to the
    same bytes as at pydyf's level 9, and the compressed ones are stored as level 6 writes them
    (so the shortcut was taken, and the file differs)."""
    theirs = _streams(_render(docs[0], "zh", monkeypatch, layouts=False, level6=False))
    ours = _streams(_render(docs[0], "zh", monkeypatch, layouts=False, level6=True))
    assert [data for data, _ in ours] == [data for data, _ in theirs]
    stored_differently = 0
    for (data, stored), (_, stored_9) in zip(ours, theirs):
        if stored != data:  # a compressed stream
            compressor = zlib.compressobj(6)
            assert stored == compressor.compress(data) + compressor.flush()
            stored_differently += stored != stored_9
    assert stored_differently > 0


def test_weasyprints_own_functions_are_back_after_a_render(monkeypatch):
    """The shortcuts are taken for the render only: afterwards WeasyPrint deactivates layouts
    and pydyf compresses with zlib again, even after a render that failed."""
    def current():
        return (line_break.Layout.deactivate, line_break.Layout.reactivate, inline.split_first_line,
                draw_text.draw_first_line, percent.resolve_percentages, inline.resolve_percentages, inline.strut,
                pydyf.zlib)

    own = current()
    assert own[-1] is zlib and own[2] is line_break.split_first_line and own[-2] is line_break.strut
    handout.render_pdf(_doc(MOE_5T), "en", warnings=[], jobs=1)
    assert current() == own
    assert fast_paths._ANSWERS is None  # the part's lines, struts and percentages forgotten
    monkeypatch.setattr(handout, "_pages", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        handout.render_pdf(_doc(MOE_5T), "en", warnings=[], jobs=1)
    assert current() == own


def test_another_weasyprint_renders_without_the_shortcuts(monkeypatch):
    """Under any WeasyPrint but the pinned 70.x nothing is replaced."""
    monkeypatch.setattr(fast_paths, "SUPPORTED", False)
    own = line_break.Layout.deactivate
    with fast_paths.taken() as took:
        assert not took
        assert line_break.Layout.deactivate is own and pydyf.zlib is zlib
        assert inline.split_first_line is line_break.split_first_line
