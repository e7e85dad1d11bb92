"""The printable one-page ledgers (one per configuration, or one with a dropdown)."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from ...model import registry as R
from ...model.expr import Expr, Ref, concat, if_
from ...report import Figure, Section, Table
from .cells import (
    _LINE_PT,
    _SECTION_FONT,
    _UNIT_FONT,
    DASH,
    _letter,
    _ok,
    _text_width,
    print_setup,
)
from .layout import (
    _NAME_SPAN,
    _PANE,
    _PANE_WIDTH,
    _SMALL,
    _TABLE_LABEL,
    _TEXT_LABEL,
    _U,
    _U_CHARS,
    CHOSEN_CELL,
    INPUT_LETTERS,
    INPUTS,
    LEDGER_FIRST_ROW,
    LEDGERS,
    _grid_lines,
)
from .page_tables import table_columns, write_table
from .report import _Report, _unit_word, _words


class _PrintSheet:
    """One A4-landscape page for one configuration (``index``), or for the configuration chosen
    in a dropdown (``index`` None).  The spec is walked once: its tables stacked on the left,
    its figure sections in two columns on the right, the assumptions below, every figure a
    formula over Ledgers.  On a configuration's own sheet, a table line that does not exist for
    it (its ``show`` quantity false) is a hidden row, the columns beside it skip that row, and a
    section or figure that does not apply is left out, as the other reports leave it out; the
    chosen sheet shows every line, "—" where it does not apply."""

    def __init__(self, rep: _Report, ws, index: int | None) -> None:
        self.rep = rep
        self.book = rep.book
        self.ws = ws
        self.i = index
        self.chosen = index is None
        self.mode = "chosen" if self.chosen else "absolute"
        self.lg = rep.ledgers[index or 0]
        self.v = self.lg.values
        self.heights: dict[int, float] = {}
        self.hidden: set[int] = set()
        look = self.look
        self.st = {
            "title": look(bold=True, size=14, font_color=_SECTION_FONT),
            "name": look(bold=True, size=13),
            "section": look(bold=True, size=12, font_color=_SECTION_FONT),
            "head": self.book.head(wrap=True),
            "bold": look(bold=True),
            "text": look(wrap=True),
            "unit": look(font_color=_UNIT_FONT),
            "note": look(italic=True, wrap=True),
            "small": look(wrap=True, size=_SMALL),
            "small_note": look(italic=True, wrap=True, size=_SMALL),
        }

    def look(self, **kw):
        return self.book.style(top=True, **kw)  # top-aligned: rows grow for wrapped text

    # rows ---------------------------------------------------------------------------------
    def need(self, r: int, lines: float, size: float = 11) -> None:
        h = max(1.0, lines) * _LINE_PT * size / 11
        self.heights[r] = max(self.heights.get(r, _LINE_PT), h)

    def shows(self, key: str) -> bool:
        """Whether this sheet shows what ``show`` key ``key`` (empty: none) guards: the chosen
        sheet shows everything; a configuration's own sheet, what the key is true for."""
        return self.chosen or not key or bool(self.v[key])

    def put(self, r: int, c: int, ident: tuple, build: Callable[[], Expr], style) -> Any:
        """A display formula for this sheet's configuration (:meth:`_Report.write`)."""
        return self.rep.write(self.ws, r, c, self.mode, ident, build, self.i, style)

    def label(self, r: int, c: int, text: str, look: str, width: int = 1) -> None:
        """Our own text over ``width`` merged grid columns, in one of the sheet's looks."""
        self.span(r, c, width)
        self.book.label(self.ws, r, c, text, self.st[look])

    def span(self, r: int, c: int, width: int) -> None:
        if width > 1:
            self.book.merge(self.ws, r, c, r, c + width - 1)

    def longest(self, get: Callable[[Any], Any]) -> str:
        """The widest text ``get(ledger)`` gives for this sheet's configuration (the chosen
        sheet: of every configuration)."""
        lgs = self.rep.ledgers if self.chosen else [self.lg]
        return max((str(get(l) or "") for l in lgs), key=_text_width)

    def text_lines(self, key: str, width: int) -> int:
        """Lines a text quantity takes in ``width`` grid columns (the chosen sheet: its longest)."""
        key = self.rep.text_key(key)
        return _grid_lines(self.longest(lambda l: l.values[key]), width)

    def put_figure(self, r: int, c: int, key: str, guards: tuple[str, ...], style, words=None):
        """A figure's display formula, "—" unless every ``guards`` key is true (on the chosen
        sheet; a configuration's own sheet leaves out what does not apply); its cached value."""
        guards = tuple(g for g in guards if g)

        def build() -> Expr:
            e = self.rep.shown(key, words)
            for g in reversed(guards):
                e = if_(Ref(g), e, DASH)
            return e

        return self.put(r, c, ("fig", key, guards, words), build, style)

    def figure_row(self, r: int, c: int, f: Figure, label: str, guards: tuple, spans=_PANE) -> None:
        """label | value | unit, from grid column ``c`` (``spans``: their grid widths)."""
        rep = self.rep
        wl, wv, wu = spans
        key = f.shown
        q = rep.reg[key]
        self.label(r, c, label, "text", wl)
        lines = _grid_lines(label, wl)
        text = q.unit in (R.TEXT, R.BOOL)  # over the unit's columns too
        self.span(r, c + wl, wv + wu if text else wv)
        self.value_cell(r, c + wl, key, guards)
        if q.unit == R.TEXT:
            lines = max(lines, self.text_lines(key, wv + wu))
        elif not text:  # the unit; a cost's is its row's currency
            cu = c + wl + wv
            self.span(r, cu, wu)
            look = self.st["unit"]
            if q.unit == R.MONEY and "currency" in rep.reg:
                self.put(r, cu, ("show", "currency"), partial(rep.shown, "currency"), look)
            else:
                self.book.label(self.ws, r, cu, _unit_word(q.unit, rep.lang), look)
        self.need(r, lines)

    def value_cell(
        self, r: int, c: int, key: str, guards: tuple[str, ...], words=None, unit: str = ""
    ) -> None:
        """A figure's value: text, a truth value as a word (``words``, else yes/no), or a number
        in the format of ``unit`` (by default the figure's own)."""
        rep = self.rep
        own = rep.reg[key].unit
        if own == R.BOOL and words is None:
            words = _words(rep.lang)
        text = own in (R.TEXT, R.BOOL)
        style = self.st["text"] if text else self.look(fmt=rep.fmt(key, unit), align="right")
        self.put_figure(r, c, key, guards, style, words)

    # the spec, walked -----------------------------------------------------------------------
    def write(self) -> None:
        ws = self.ws
        tables = [s for s in self.rep.spec.sections if isinstance(s, Table)]
        left = max([_PANE_WIDTH] + [table_columns(self, t)[1] for t in tables])
        pane_cols = (left + 2, left + 2 + _PANE_WIDTH + 1)  # 1-based first grid column of each pane
        last_col = pane_cols[1] + _PANE_WIDTH - 1
        top = self.write_top(last_col)
        ws.freeze_panes(top - 2, 0)  # the title, the name and the row's check stay in view
        r = top
        for t in tables:  # stacked on the left
            r = write_table(self, r, 1, t, left) + 1
        last_row = self.write_notes(max(r, self.write_sections(top, pane_cols)), last_col)
        for row in range(1, last_row + 1):
            h = self.heights.get(row)
            if row in self.hidden:
                ws.set_row(row - 1, h or _LINE_PT, None, {"hidden": True})
            elif h is not None and h != _LINE_PT:
                ws.set_row(row - 1, h)
        ws.set_column(0, last_col - 1, _U)
        ws.print_area(0, 0, last_row - 1, last_col - 1)
        ws.center_horizontally()
        chosen = self.rep.t(
            "ledger-report: the configuration chosen on this sheet", "ledger-report：本页所选的配置"
        )
        print_setup(ws, 1, chosen if self.chosen else self.lg.config.name, self.rep.footer())
        ws.hide_gridlines(2)  # on screen and on paper

    def write_sections(self, top: int, pane_cols: tuple[int, int]) -> int:
        """The figure sections in two columns on the right, as even as they go, each skipping
        the hidden rows; the row after the longer."""
        rep = self.rep
        sections = [s for s in rep.spec.sections if isinstance(s, Section) and self.shows(s.show)]
        parts = [(s, figs) for s in sections for figs in [self.section_figures(s)] if figs]
        sizes = [1 + len(figs) + 1 for _s, figs in parts]
        split = min(range(len(parts) + 1), key=lambda k: (max(sum(sizes[:k]), sum(sizes[k:])), k))
        ends = []
        for c, chunk in zip(pane_cols, (parts[:split], parts[split:])):
            r = top
            for s, figs in chunk:
                r = self.free(r)
                self.label(r, c, rep.t(s.en, s.zh), "section")
                r += 1
                spans = _PANE
                if all(
                    rep.reg[f.shown].unit == R.TEXT and _text_width(label) <= _TEXT_LABEL * _U_CHARS
                    for f, label, _g in figs
                ):  # a section of sentences: the text takes the room
                    spans = (_TEXT_LABEL, _PANE_WIDTH - _TEXT_LABEL, 0)
                for f, label, guards in figs:
                    r = self.free(r)
                    self.figure_row(r, c, f, label, guards, spans)
                    r += 1
                r += 1
            ends.append(r)
        return max(ends)

    def free(self, r: int) -> int:
        while r in self.hidden:
            r += 1
        return r

    def section_figures(self, s: Section) -> list[tuple[Figure, str, tuple[str, ...]]]:
        """(figure, label, guards) of the figures a section shows here: labels from the registry
        (a label the section repeats carries the figure's name), guards the show keys that the
        chosen sheet tests in its formulas."""
        rep = self.rep
        figs = [f for f in s.figures if f.pages and self.shows(f.show)]
        labels = [rep.label(f.shown) for f in figs]
        out = []
        for f, label in zip(figs, labels):
            if labels.count(label) > 1:
                label = f"{label} ({f.name})" if rep.lang == "en" else f"{label}（{f.name}）"
            out.append((f, label, (s.show, f.show) if self.chosen else ()))
        return out

    def write_top(self, last_col: int) -> int:
        """Title, name, notes, the chooser (the chosen sheet), the row's check; the first free row."""
        rep, ws, book = self.rep, self.ws, self.book
        title = rep.t("Per-rank memory ledger and compute floor", "每卡显存账本与算力下界")
        self.label(1, 1, title, "title")
        self.need(1, 1, 14)
        self.span(2, 1, _NAME_SPAN)
        book.formula(
            ws, 2, 1, rep.name_ref(self.mode, self.i), self.lg.config.name, self.st["name"]
        )
        rep.flag_format(ws, 1, 0, 1, 0, self.flag(rep.spec.flag))
        notes_col = _NAME_SPAN + 2
        self.span(2, notes_col, last_col - notes_col + 1)
        notes = self.lg.config.get("notes") or None  # text, or blank
        ref = rep.ref(INPUTS, INPUT_LETTERS["notes"], self.mode, self.i)
        book.formula(ws, 2, notes_col, f'IF({ref}="","",{ref})', notes, self.st["note"])
        longest = self.longest(lambda l: l.config.get("notes"))
        self.need(2, _grid_lines(longest, last_col - notes_col + 1))
        self.need(2, 1, 13)
        r = 3
        if self.chosen:
            self.write_chooser(r)
            r += 1
        # the row's check: the rules it breaks (the model's constraints), red where it breaks one
        check, ok = rep.spec.check, rep.spec.check_ok
        self.label(r, 1, rep.t("check", "检查"), "bold", _TABLE_LABEL)
        width = last_col - _TABLE_LABEL
        self.span(r, _TABLE_LABEL + 1, width)
        fine = rep.t("meets every rule", "满足全部规则")
        build = partial(if_, Ref(check).eq(""), fine, Ref(check))
        self.put(r, _TABLE_LABEL + 1, ("check", fine), build, self.st["text"])
        self.need(r, self.text_lines(check, width))
        rep.check_format(ws, r - 1, _TABLE_LABEL, r - 1, self.flag(ok), self.flag(check))
        return r + 2

    def write_chooser(self, r: int) -> None:
        """The chosen sheet's dropdown of configuration names, and the row it picks in Ledgers."""
        rep, ws, book = self.rep, self.ws, self.book
        choose = rep.t("configuration shown (choose):", "显示的配置（可选）：")
        self.label(r, 1, choose, "bold", _TABLE_LABEL)
        first, width = CHOSEN_CELL
        self.span(r, first, width)
        chooser = self.book.entry(quote=True, bold=True, top=True)
        book.text(ws, r, first, self.lg.config.name, chooser)
        ls = f"{LEDGERS}!$A${LEDGER_FIRST_ROW}:$A${rep.last}"
        ref = f"${_letter(first)}${r}"
        esc = f'SUBSTITUTE(SUBSTITUTE(SUBSTITUTE({ref},"~","~~"),"*","~*"),"?","~?")'
        row_col = first + width + 1
        book.formula(ws, r, row_col, f"MATCH({esc},{ls},0)", 1, self.look())
        rule = {"validate": "list", "source": "=" + ls, "ignore_blank": False, "show_error": False}
        where = f"{ws.get_name()}: the dropdown"
        _ok(ws.data_validation(r - 1, first - 1, r - 1, first - 1, rule), where)
        its_row = rep.t("(its row in Ledgers)", "（在 Ledgers 中的行）")
        self.label(r, row_col + 1, its_row, "note", 8)

    def flag(self, key: str) -> str:
        """The Ledgers cell of ``key`` for this sheet's configuration (a conditional format's reference)."""
        return self.rep.ref(LEDGERS, self.rep.letters[key], self.mode, self.i)

    # the assumptions --------------------------------------------------------------------------
    def write_notes(self, r: int, last_col: int) -> int:
        """The model's assumption sentences (live text), each where its ``_shown`` quantity says it
        applies; on a configuration's own sheet the others are hidden rows."""
        rep = self.rep
        self.label(r, 1, rep.t("Assumptions", "假设"), "section")
        r += 1
        suffix = "" if rep.lang == "en" else "_zh"
        for k in rep.spec.assumptions:
            shown = f"{k}_shown"
            if not self.shows(shown):
                self.hidden.add(r)
            self.span(r, 1, last_col)
            key = k + suffix
            bullet = partial(if_, Ref(shown), concat("• ", Ref(key)), "")  # else empty
            self.put(r, 1, ("note", key), bullet, self.st["text"])
            self.need(r, self.text_lines(key, last_col) if self.shows(shown) else 1)
            r += 1
        return r - 1
