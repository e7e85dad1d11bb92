"""Four shortcuts through WeasyPrint 70's internals, taken only while the handout renders
(:func:`taken`), and only under the WeasyPrint version pyproject.toml pins (70.x; any other
version renders without them).  None changes what is drawn; tests/test_fast_paths.py checks
each against a render without them.

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

3. **A line of text is broken once per part.**  A handout page repeats short texts in the same
   style at the same width ("HBM", "whole", "fp32", "sharded", the column heads): of the 6,451
   times 26 configurations (two parts) asked WeasyPrint's ``split_first_line`` where a line of
   text ends, 4,295 asked what an earlier call of the same part had asked, and took 0.71 of its
   1.17 s.  Here its answer (the Pango layout of the line and its metrics) is kept, for the part,
   under the text, the width and every property of the style that the function reads
   (:data:`LINE_PROPERTIES`; a test reads them off WeasyPrint's source), and the layout is shared
   by the text boxes that asked the same.  Drawing reads a shared layout and does not change it,
   except to shorten a line to an ellipsis (``text-overflow: ellipsis``, ``block-ellipsis``),
   which is then drawn on the box's own copy.  One 26-page part of the bench's 100
   configurations: 19.76 G instructions against 21.38 G (callgrind, the whole process: 7.6 %
   fewer), and a peak of 224 MB against 232 MB, since shared layouts are made once.
   A shared layout is also drawn once: WeasyPrint draws it for the first box (a Python loop over
   its glyphs), the calls it makes on the page's stream are noted, and the later boxes make the
   same calls at their own positions (:func:`_draw_first_line`; 0.18 G fewer instructions for 12
   configurations, 14.41 G to 14.23 G).  A line with a missing glyph is drawn by WeasyPrint each
   time, so that its warning comes as often as before.  And a style's line height and baseline
   (``strut``, which WeasyPrint looks up at every call under a string it builds from 16 of the
   style's values) are looked up once per style object (:func:`_strut`; 13.53 G instructions
   against 13.79 G for 12 configurations).

4. **A box's percentages are resolved once per style and containing block.**  WeasyPrint
   resolves the margins, paddings, widths, heights and borders of every box it lays out from its
   style and its containing block's width and height (``resolve_percentages``): 22,403 times for
   26 configurations, for 3,709 different (style, width, height) (the cells of a column, the
   lines of a cell).  Here the 18 values it sets are kept under the style (the same object) and
   the containing block's size, and set again on the next box that asks the same.  Boxes with
   collapsed borders, whose border widths depend on the box, are resolved by WeasyPrint.  13.84 G
   instructions against 14.25 G for 12 configurations (2.9 %).

Measured together (callgrind, 2026-12-01): 1 and 2 took 12 configurations in one process from
15.81 G instructions to 14.98 G; 3 and 4 then took one 26-page part of the bench's 100
configurations (the whole process) from 21.38 G to 17.47 G, 18 % fewer.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import pkgutil
import re
import types
import zlib
from collections.abc import Iterator

import pydyf
import weasyprint
import weasyprint.draw.text as _draw_text
import weasyprint.layout as _layout
import weasyprint.layout.inline as _inline
import weasyprint.layout.percent as _percent
import weasyprint.pdf.fonts as _pdf_fonts
import weasyprint.text.line_break as _line_break

ZLIB_LEVEL = 6  # zlib.Z_DEFAULT_COMPRESSION's level

SUPPORTED = weasyprint.__version__.split(".")[0] == "70"

_Layout = _line_break.Layout
_REACTIVATE = _Layout.reactivate
_SET_TEXT = _Layout.set_text
_SPLIT_FIRST_LINE = _line_break.split_first_line
_DRAW_FIRST_LINE = _draw_text.draw_first_line
_Font = _pdf_fonts.Font
_UNUSED_GLYPH_ID = _Font.get_unused_glyph_id
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
    """In place of ``Layout.reactivate(style)``: a finished layout without justification, of the
    same style (the same object, or for a shared layout the same :data:`LINE_PROPERTIES`), is
    drawn as it is; any other is made again as WeasyPrint makes it."""
    if getattr(self, "_kept", False) and not self.justification_spacing and (
            style is self.style or (hasattr(self, "_line_key") and _style_key(style) == self._line_key)):
        return
    _REACTIVATE(self, style)


# Every property of a text's style that ``split_first_line`` reads, directly or through
# ``Layout``, ``create_layout``, ``first_line_metrics`` and ``get_font_description``
# (tests/test_fast_paths.py reads them off WeasyPrint's source); with the style's font
# configuration they decide the answer.
LINE_PROPERTIES = (
    "direction", "font_family", "font_feature_settings", "font_kerning", "font_language_override",
    "font_size", "font_stretch", "font_style", "font_variant_alternates", "font_variant_caps",
    "font_variant_east_asian", "font_variant_ligatures", "font_variant_numeric",
    "font_variant_position", "font_variation_settings", "font_weight", "hyphenate_character",
    "hyphenate_limit_chars", "hyphenate_limit_zone", "hyphens", "lang", "letter_spacing",
    "overflow_wrap", "tab_size", "text_decoration_line", "white_space", "word_break", "word_spacing",
)

class _Answers:
    """What a part's render has worked out, kept while it renders (:func:`taken`).  An answer
    keyed by a style's id holds the style too, so that no other object takes that id meanwhile."""

    def __init__(self) -> None:
        self.style_keys: dict[int, tuple] = {}  # style id -> (style, its LINE_PROPERTIES key)
        self.lines: dict[tuple, tuple] = {}  # (text, width, ..., style key) -> split_first_line's answer
        self.struts: dict[int, tuple] = {}  # style id -> (style, strut)
        self.resolved: dict[tuple, tuple] = {}  # (style id, width, height, page?) -> (style, values)


_ANSWERS: _Answers | None = None  # while a part renders


def _style_key(style) -> object:
    entry = _ANSWERS.style_keys.get(id(style))
    if entry is None:
        key = (id(style.font_config),) + tuple(style[name] for name in LINE_PROPERTIES)
        try:
            hash(key)
        except TypeError:  # a list among the values
            key = repr(key)
        entry = _ANSWERS.style_keys[id(style)] = (style, key)
    return entry[1]


def _split_first_line(text, style, context, max_width, justification_spacing, is_line_start=True, minimum=False):
    """``split_first_line``, answered once per part for each text, width and style key."""
    question = (text, max_width, justification_spacing, is_line_start, minimum, _style_key(style))
    answer = _ANSWERS.lines.get(question)
    if answer is None:
        answer = _SPLIT_FIRST_LINE(text, style, context, max_width, justification_spacing, is_line_start, minimum)
        answer[0]._line_key = question[-1]
        _ANSWERS.lines[question] = answer
    return answer


class _Recorder:
    """A page's stream as ``draw_first_line`` sees it, noting the calls that draw the line (and
    passing them on); any other use of the stream makes the recording unusable."""

    _DRAWING = frozenset(("set_text_matrix", "add_font", "set_font_size", "show_text", "set_text_rise"))
    _READ = frozenset(("ink_rect", "logical_rect"))  # glyph extents are written into these

    def __init__(self, stream):
        self.stream, self.calls, self.complete = stream, [], True

    def __getattr__(self, name):
        attribute = getattr(self.stream, name)
        if name in self._READ:
            return attribute
        if name not in self._DRAWING:
            self.complete = False
            return attribute

        def call(*args):
            self.calls.append((name, args))
            return attribute(*args)
        return call


_missing_glyph = False  # set when a line being recorded has a glyph no font has (.notdef, a warning)


def _unused_glyph_id(self, codepoint):
    global _missing_glyph
    _missing_glyph = True
    return _UNUSED_GLYPH_ID(self, codepoint)


def _draw_first_line(stream, textbox, text_overflow, block_ellipsis, matrix):
    """``draw_first_line`` for the text boxes that share a layout: the first box's line is drawn
    by WeasyPrint and its calls on the stream noted; a later box with the same layout makes the
    same calls, at its own position.  The line of an ellipsis is shortened on the layout itself,
    so there it is drawn by WeasyPrint on the box's own copy of the layout; and a line with a
    missing glyph (whose warning WeasyPrint gives each time it is drawn) or an emoji is always
    drawn by WeasyPrint."""
    global _missing_glyph
    layout = textbox.pango_layout
    if not hasattr(layout, "_line_key"):
        return _DRAW_FIRST_LINE(stream, textbox, text_overflow, block_ellipsis, matrix)
    if text_overflow == "ellipsis" or block_ellipsis != "none":
        own = copy.copy(layout)
        del own._line_key
        own._kept = False
        _REACTIVATE(own, textbox.style)
        textbox.pango_layout = own
        return _DRAW_FIRST_LINE(stream, textbox, text_overflow, block_ellipsis, matrix)
    drawn = getattr(layout, "_drawn", None)
    if drawn is None:
        recorder, _missing_glyph = _Recorder(stream), False
        emojis = _DRAW_FIRST_LINE(recorder, textbox, text_overflow, block_ellipsis, matrix)
        layout._drawn = recorder.calls if recorder.complete and not emojis and not _missing_glyph else False
        return emojis
    if drawn is False:
        return _DRAW_FIRST_LINE(stream, textbox, text_overflow, block_ellipsis, matrix)
    for name, args in drawn:
        if name == "set_text_matrix":
            stream.set_text_matrix(*matrix.values)
        else:
            getattr(stream, name)(*args)
    return []


_STRUT = _line_break.strut


def _strut(style):
    """``strut`` (a style's line height and baseline) for the layout of inline boxes, once per style
    object (it depends on nothing else: the font configuration is the style's)."""
    answer = _ANSWERS.struts.get(id(style))
    if answer is None:
        answer = _ANSWERS.struts[id(style)] = (style, _STRUT(style))
    return answer[1]


_RESOLVE_PERCENTAGES = _percent.resolve_percentages
# The modules that call resolve_percentages by the name they imported it under.
_PERCENT_USERS = [module for module in (importlib.import_module(f"weasyprint.layout.{info.name}")
                                        for info in pkgutil.iter_modules(_layout.__path__))
                  if getattr(module, "resolve_percentages", None) is _RESOLVE_PERCENTAGES]
# What resolve_percentages sets on a box (tests/test_fast_paths.py reads them off its source).
RESOLVED = (
    "margin_left", "margin_right", "margin_top", "margin_bottom",
    "padding_left", "padding_right", "padding_top", "padding_bottom",
    "width", "min_width", "max_width", "height", "min_height", "max_height",
    "border_top_width", "border_right_width", "border_bottom_width", "border_left_width",
)
_Box, _PageBox = _percent.boxes.Box, _percent.boxes.PageBox


def _resolve_percentages(box, containing_block):
    """``resolve_percentages``, answered once per part for each style, containing block size and
    kind of box (a page resolves its vertical margins against the height)."""
    style = box.style
    if style["border_collapse"] == "collapse":
        return _RESOLVE_PERCENTAGES(box, containing_block)
    if isinstance(containing_block, _Box):
        question = (id(style), containing_block.width, containing_block.height, isinstance(box, _PageBox))
    else:
        width, height = containing_block
        question = (id(style), width, height, isinstance(box, _PageBox))
    answer = _ANSWERS.resolved.get(question)
    if answer is None:
        _RESOLVE_PERCENTAGES(box, containing_block)
        values = box.__dict__
        _ANSWERS.resolved[question] = (style, {name: values[name] for name in RESOLVED})
    else:
        box.__dict__.update(answer[1])


def _compressobj(level: int = ZLIB_LEVEL, *args, **kwargs):
    return zlib.compressobj(ZLIB_LEVEL, *args, **kwargs)


# pydyf's view of zlib: the module, with compressobj at level 6.
_ZLIB = types.SimpleNamespace(**{name: getattr(zlib, name) for name in dir(zlib) if not name.startswith("__")})
_ZLIB.compressobj = _compressobj


def _patches(layouts: bool, level6: bool, lines: bool, percentages: bool) -> list[tuple[object, str, object]]:
    """(owner, name, replacement) for each of WeasyPrint's and pydyf's functions that the
    shortcuts asked for replace."""
    patches: list[tuple[object, str, object]] = []
    if layouts:
        patches += [(_Layout, "deactivate", _keep), (_Layout, "reactivate", _reuse), (_Layout, "set_text", _set_text)]
    if level6:
        patches.append((pydyf, "zlib", _ZLIB))
    if lines:
        patches += [(_inline, "split_first_line", _split_first_line), (_inline, "strut", _strut),
                    (_draw_text, "draw_first_line", _draw_first_line), (_Font, "get_unused_glyph_id", _unused_glyph_id)]
    if percentages:
        patches += [(module, "resolve_percentages", _resolve_percentages) for module in _PERCENT_USERS]
    return patches


@contextlib.contextmanager
def taken(layouts: bool = True, level6: bool = True, lines: bool = True,
          percentages: bool = True) -> Iterator[bool]:
    """Inside the block, draw layouts as laid out (``layouts``), compress at level 6
    (``level6``), break and draw each line of text once (``lines``) and resolve percentages once
    (``percentages``), when the WeasyPrint version is the pinned one; WeasyPrint's and pydyf's own
    functions are restored after it, and the answers kept forgotten.  Yields whether any shortcut
    was taken.  Renders in one process are serialised (``handout._RENDER_LOCK``), so no other
    render sees them half-applied."""
    global _ANSWERS
    patches = _patches(layouts, level6, lines, percentages) if SUPPORTED else []
    if not patches:
        yield False
        return
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    _ANSWERS = _Answers()
    for owner, name, replacement in patches:
        setattr(owner, name, replacement)
    try:
        yield True
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)
        _ANSWERS = None
