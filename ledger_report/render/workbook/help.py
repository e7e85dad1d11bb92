"""The Help sheet."""

from __future__ import annotations

from ...config import COLUMNS, default_text
from .cells import _LINE_PT, _Book, _lines, print_setup
from .layout import MAX_PRINT_SHEETS

_HELP = {
    "en": {
        "title": "Help",
        "intro": [
            "The input columns: one row per configuration in the Inputs sheet; an empty cell takes its default.",
            "Counts accept 8190735360, 8,190,735,360, 8.19e9, 8.19B, 35B, 5T, 350M, 7K when the workbook is rebuilt; the live formulas need plain numbers.",
            "GB = 10^9 bytes and GiB = 2^30 bytes.",
            "The lookup sheets (Dtypes, Moments, Optimizers, GPUs, Conventions, Lists) are hidden: the formulas read them; show them (Excel: right-click a sheet tab > Unhide; LibreOffice: Sheet > Show Sheet) to read or change a width, an optimizer or a GPU.",
        ],
        "built": [
            "Sheets: Summary (the headline figures, the verdicts and each row's check), Inputs (the rows; edit them), Ledgers (every quantity as a live formula, one row per configuration, with the check column), "
            "one printable ledger per configuration (above {max} configurations, one Ledger sheet with a dropdown), Budget (the GPUs, days, verdicts and budget of every configuration side by side, totals per currency, and a chart of cost against days), and this Help.",
            "After editing Inputs or a lookup sheet, recalculate (Excel: automatic; LibreOffice: Data > Calculate > Recalculate Hard, Ctrl+Shift+F9) and every figure follows; the check column names every rule a row breaks (red) or warns about (amber).",
            "Printing the workbook gives the Summary, one page per configuration and the Budget (its figures and the totals per currency, one page wide). Inputs, Ledgers and Help are left out: their print area is one empty cell; clear it (Excel: Page Layout > Print Area > Clear Print Area; LibreOffice: Format > Print Ranges > Clear) to print one.",
            "Rebuild with: ledger-report build THIS.xlsx (only the Inputs sheet is read).",
        ],
        "headers": ("column", "kind", "unit", "default", "choices", "meaning", "含义"),
        "gpu": "see the GPUs sheet",
        "required": "required",
    },
    "zh": {
        "title": "说明",
        "intro": [
            "输入列：Inputs 表中每行一个配置；空单元格取默认值。",
            "重新生成工作簿时，数量可写作 8190735360、8,190,735,360、8.19e9、8.19B、35B、5T、350M、7K；实时公式需要普通数字。",
            "GB = 10^9 字节，GiB = 2^30 字节。",
            "查找表（Dtypes、Moments、Optimizers、GPUs、Conventions、Lists）已隐藏：公式读取它们；如需查看或修改精度宽度、优化器或 GPU，请取消隐藏（Excel：右键工作表标签 > 取消隐藏；LibreOffice：工作表 > 显示工作表）。",
        ],
        "built": [
            "各表：Summary（主要数值、结论与每行的检查）、Inputs（输入行，可编辑）、Ledgers（每个量的实时公式，每个配置一行，含检查列）、"
            "每个配置一张可打印的账本（超过 {max} 个配置时为一张带下拉选择的 Ledger 表）、Budget（各配置的 GPU 数、天数、结论与预算并列，按币种合计，附成本与天数图）以及本说明。",
            "修改 Inputs 或查找表后重新计算（Excel 自动；LibreOffice：数据 > 计算 > 硬重算，Ctrl+Shift+F9），所有数值随之更新；检查列写出该行违反（红色）或提醒（琥珀色）的每条规则。",
            "打印工作簿得到 Summary、每个配置一页以及 Budget（各项数值与按币种合计，一页宽）。Inputs、Ledgers 与本说明不打印：其打印区域为一个空单元格；清除打印区域即可打印（Excel：页面布局 > 打印区域 > 取消打印区域；LibreOffice：格式 > 打印范围 > 清除）。",
            "重新生成：ledger-report build THIS.xlsx（只读取 Inputs 表）。",
        ],
        "headers": ("列", "类型", "单位", "默认值", "可选值", "含义", "meaning"),
        "gpu": "见 GPUs 表",
        "required": "必填",
    },
}
_HELP_WIDTHS = (22, 8, 10, 30, 34, 60, 44)  # A-G


def _write_help(book: _Book, ws, built: bool, lang: str = "en") -> None:
    words = _HELP[lang]
    head = book.head(wrap=True)
    wrap = book.style(wrap=True)
    lines = list(words["intro"])
    if built:
        lines += [s.format(max=MAX_PRINT_SHEETS) for s in words["built"]]
    book.label(ws, 1, 1, words["title"], book.section())
    for r, text in enumerate(lines, start=2):
        book.merge(ws, r, 1, r, len(_HELP_WIDTHS))
        book.label(ws, r, 1, text, wrap)
        ws.set_row(r - 1, _LINE_PT * _lines(text, sum(_HELP_WIDTHS)))
    top = len(lines) + 3  # the columns' header
    for c, h in enumerate(words["headers"], start=1):
        book.label(ws, top, c, h, head)
    ws.freeze_panes(top, 0)
    for r, col in enumerate(COLUMNS, start=top + 1):
        choices = ", ".join(col.choices) or (words["gpu"] if col.name == "gpu" else "")
        default = default_text(col, lang) or (words["required"] if col.required else "")
        meaning = (col.help_en, col.help_zh) if lang == "en" else (col.help_zh, col.help_en)
        cells = (col.name, col.kind, col.unit, default, choices, *meaning)
        for c, text in enumerate(cells, start=1):
            if text:
                book.label(ws, r, c, text, wrap)
        need = max([1] + [_lines(t, w) for t, w in zip(cells, _HELP_WIDTHS) if t])
        if need > 1:
            ws.set_row(r - 1, _LINE_PT * need)
    for c, width in enumerate(_HELP_WIDTHS):
        ws.set_column(c, c, width)
    print_setup(ws, 0)
    ws.repeat_rows(top - 1)
