"""The top of a printable ledger: title, name, notes, the chooser, the row's check."""

from __future__ import annotations

from functools import partial

from ...model.expr import Ref, if_
from .cells import _INPUT_FILL, _INPUT_FONT, _letter, _lines, _ok
from .grid import _NAME_SPAN, _TABLE_LABEL, _U_CHARS
from .layout import CHOSEN_CELL, INPUT_LETTERS, INPUTS, LEDGER_FIRST_ROW, LEDGERS


# the top: title, name, notes, the chooser, the row's check ------------------------------
def write_top(page, last_col: int) -> int:
    rep, ws, book = page.rep, page.ws, page.book
    title = rep.t("Per-rank memory ledger and compute floor", "每卡显存账本与算力下界")
    page.label(1, 1, title, "title")
    page.need(1, 1, 14)
    page.span(2, 1, _NAME_SPAN)
    book.formula(ws, 2, 1, rep.name_ref(page.mode, page.i), page.lg.config.name, page.st["name"])
    rep.flag_format(ws, 1, 0, 1, 0, flag(page, rep.spec.flag))
    notes_col = _NAME_SPAN + 2
    page.span(2, notes_col, last_col - notes_col + 1)
    notes = page.lg.config.get("notes") or None  # text, or blank
    ref = rep.ref(INPUTS, INPUT_LETTERS["notes"], page.mode, page.i)
    book.formula(ws, 2, notes_col, f'IF({ref}="","",{ref})', notes, page.st["note"])
    longest = page.longest(lambda l: l.config.get("notes"))
    page.need(2, _lines(longest, (last_col - notes_col + 1) * _U_CHARS), 11)
    page.need(2, 1, 13)
    r = 3
    if page.chosen:
        choose = rep.t("configuration shown (choose):", "显示的配置（可选）：")
        page.label(r, 1, choose, "bold", _TABLE_LABEL)
        first, width = CHOSEN_CELL
        page.span(r, first, width)
        chooser = page.look(fill=_INPUT_FILL, font_color=_INPUT_FONT, quote=True, bold=True)
        book.text(ws, r, first, page.lg.config.name, chooser)
        ls = f"{LEDGERS}!$A${LEDGER_FIRST_ROW}:$A${rep.last}"
        ref = f"${_letter(first)}${r}"
        esc = f'SUBSTITUTE(SUBSTITUTE(SUBSTITUTE({ref},"~","~~"),"*","~*"),"?","~?")'
        row_col = first + width + 1
        book.formula(ws, r, row_col, f"MATCH({esc},{ls},0)", 1, page.look())
        rule = {"validate": "list", "source": "=" + ls, "ignore_blank": False, "show_error": False}
        _ok(
            ws.data_validation(r - 1, first - 1, r - 1, first - 1, rule),
            f"{ws.get_name()}: the dropdown",
        )
        page.label(
            r, row_col + 1, rep.t("(its row in Ledgers)", "（在 Ledgers 中的行）"), "note", 8
        )
        r += 1
    # the row's check: the rules it breaks (the model's constraints), red where it breaks one
    check, ok = rep.spec.check, rep.spec.check_ok
    page.label(r, 1, rep.t("check", "检查"), "bold", _TABLE_LABEL)
    width = last_col - _TABLE_LABEL
    page.span(r, _TABLE_LABEL + 1, width)
    fine = rep.t("meets every rule", "满足全部规则")
    build = partial(if_, Ref(check).eq(""), fine, Ref(check))
    page.put(r, _TABLE_LABEL + 1, ("check", fine), build, page.st["text"])
    page.need(r, page.text_lines(check, width))
    rep.check_format(ws, r - 1, _TABLE_LABEL, r - 1, flag(page, ok), flag(page, check))
    return r + 2


def flag(page, key: str) -> str:
    """The Ledgers cell of ``key`` for this sheet's configuration (a conditional format's reference)."""
    return page.rep.ref(LEDGERS, page.rep.letters[key], page.mode, page.i)
