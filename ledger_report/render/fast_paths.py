"""Two shortcuts through WeasyPrint 70's internals, taken only while the handout renders
(:func:`taken`), and only under the WeasyPrint version pyproject.toml pins (70.x; any other
version renders without them).  Neither changes what is drawn; tests/test_fast_paths.py checks
both against a render without them.

1. **A text's Pango layout is drawn as it was laid out.**  WeasyPrint shapes each text box with
   Pango while it breaks lines, then frees the layout (``Layout.deactivate``), and when it draws
   the page it makes and shapes the same layout again (``Layout.reactivate``), in Pango's
   single-paragraph mode.  Here the first layout is kept and drawn, and a text with no paragraph
   end in it is laid out in single-paragraph mode from the start (where the mode changes
   nothing; switching it on later would make Pango lay the text out again): the same text,
   style and font, so the same glyphs at the same positions and the same PDF bytes.  A layout is
   made again, as before, wherever drawing might need a different one: another style object, or
   justified text (extra word spacing).  The kept layouts cost a worker ~11 MB more for 26
   pages (peak 289 MB against 278 MB).

2. **Content streams are compressed at zlib's default level (6), not 9.**  pydyf asks for level
   9, which on these streams takes 3.3 times as long for 4 % less (the 19 pages of
   inputs/examples.csv: 1.16 MB of page contents to 152 KB in 107 ms at 9, 158 KB in 32 ms at 6);
   the whole PDF grows by 0.5 % (945,850 bytes against 940,760).  The
   decompressed streams are byte for byte the same; the PDF's bytes differ from level 9's, and
   are still the same for the same input.

Measured together (callgrind, 12 configurations in one process, 2026-12-01): 14.98 G instructions
against 15.81 G, about 6 % of the render.
"""

from __future__ import annotations

import contextlib
import re
import types
import zlib
from collections.abc import Iterator

import pydyf
import weasyprint
import weasyprint.text.line_break as _line_break

ZLIB_LEVEL = 6  # zlib.Z_DEFAULT_COMPRESSION's level

SUPPORTED = weasyprint.__version__.split(".")[0] == "70"

_Layout = _line_break.Layout
_REACTIVATE = _Layout.reactivate
_SET_TEXT = _Layout.set_text
# What Pango may take for the end of a paragraph (and so lays out differently in single-paragraph
# mode): line feed, carriage return, U+2029 and, to be safe, every other line or page separator.
_PARAGRAPH_ENDS = re.compile("[\n\r\u2029\u2028\u0085\x0b\x0c\x1c\x1d\x1e]")


def _keep(self) -> None:
    """In place of ``Layout.deactivate``: the layout stays as it is, marked as finished."""
    self._kept = True


def _set_text(self, text, justify=False) -> None:
    """``Layout.set_text``, then single-paragraph mode for a text with no paragraph end, where it
    changes nothing: drawing switches it on (``draw_first_line``), and switching it on after the
    layout was made would make Pango lay the text out and shape it again."""
    _SET_TEXT(self, text, justify)
    if not _PARAGRAPH_ENDS.search(self.text):
        _line_break.pango.pango_layout_set_single_paragraph_mode(self.layout, True)


def _reuse(self, style) -> None:
    """In place of ``Layout.reactivate(style)``: a finished layout of the same style and without
    justification is drawn as it is; any other is made again as WeasyPrint makes it."""
    if getattr(self, "_kept", False) and style is self.style and not self.justification_spacing:
        return
    _REACTIVATE(self, style)


def _compressobj(level: int = ZLIB_LEVEL, *args, **kwargs):
    return zlib.compressobj(ZLIB_LEVEL, *args, **kwargs)


# pydyf's view of zlib: the module, with compressobj at level 6.
_ZLIB = types.SimpleNamespace(**{name: getattr(zlib, name) for name in dir(zlib) if not name.startswith("__")})
_ZLIB.compressobj = _compressobj


@contextlib.contextmanager
def taken(layouts: bool = True, level6: bool = True) -> Iterator[bool]:
    """Inside the block, draw layouts as laid out (``layouts``) and compress at level 6
    (``level6``), when the WeasyPrint version is the pinned one; WeasyPrint's and pydyf's own
    functions are restored after it.  Yields whether any shortcut was taken.  Renders in one
    process are serialised (``handout._RENDER_LOCK``), so no other render sees them half-applied."""
    if not SUPPORTED or not (layouts or level6):
        yield False
        return
    saved = (_Layout.deactivate, _Layout.reactivate, _Layout.set_text, pydyf.zlib)
    if layouts:
        _Layout.deactivate, _Layout.reactivate, _Layout.set_text = _keep, _reuse, _set_text
    if level6:
        pydyf.zlib = _ZLIB
    try:
        yield True
    finally:
        _Layout.deactivate, _Layout.reactivate, _Layout.set_text, pydyf.zlib = saved
