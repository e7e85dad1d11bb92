"""The two shortcuts through WeasyPrint's internals (ledger_report/render/fast_paths.py) change
nothing that is drawn: checked against renders without them, on the seed pages, the overflow
cases and a note in Chinese, in both languages."""

from __future__ import annotations

import io
import zlib

import pydyf
import pypdf
import pytest
import weasyprint.text.line_break as line_break

from ledger_report.render import fast_paths, handout

from test_handout import MOE_5T, MOE_35B, OFFLOAD, QWEN3_8B, _doc, _overflow_rows


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return [_doc(QWEN3_8B, MOE_35B, MOE_5T, OFFLOAD), _doc(*_overflow_rows())]


def _render(doc: dict, lang: str, monkeypatch, *, layouts: bool, level6: bool) -> bytes:
    """One render in this process with only the shortcuts asked for (handout's own are off)."""
    monkeypatch.setattr(handout, "FAST_PATHS", False)
    warnings: list[str] = []
    with fast_paths.taken(layouts, level6):
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


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_layouts_drawn_as_laid_out_give_the_same_bytes(docs, lang, monkeypatch):
    """Drawing each text's layout as it was laid out, instead of making and shaping it again,
    gives a PDF identical byte for byte to WeasyPrint's own way."""
    for doc in docs:
        theirs = _render(doc, lang, monkeypatch, layouts=False, level6=False)
        ours = _render(doc, lang, monkeypatch, layouts=True, level6=False)
        assert ours == theirs


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
    own = (line_break.Layout.deactivate, line_break.Layout.reactivate)
    handout.render_pdf(_doc(MOE_5T), "en", warnings=[], jobs=1)
    assert (line_break.Layout.deactivate, line_break.Layout.reactivate) == own
    assert pydyf.zlib is zlib
    monkeypatch.setattr(handout, "_pages", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        handout.render_pdf(_doc(MOE_5T), "en", warnings=[], jobs=1)
    assert (line_break.Layout.deactivate, line_break.Layout.reactivate) == own
    assert pydyf.zlib is zlib


def test_another_weasyprint_renders_without_the_shortcuts(monkeypatch):
    """Under any WeasyPrint but the pinned 70.x nothing is replaced."""
    monkeypatch.setattr(fast_paths, "SUPPORTED", False)
    own = line_break.Layout.deactivate
    with fast_paths.taken() as took:
        assert not took
        assert line_break.Layout.deactivate is own and pydyf.zlib is zlib
