"""Write inputs/examples.xlsx from inputs/examples.csv: the same rows, one `Inputs` sheet.

Run after editing the CSV:  .venv/bin/python scripts/make_example_xlsx.py
A test (tests/test_examples.py) checks the two files hold the same configurations.  Written with
XlsxWriter like the built workbooks: text through ``write_string`` (never a formula), a fixed
creation time, so the same CSV gives the same bytes.
"""

from __future__ import annotations

import csv
import datetime
import io
from pathlib import Path

import xlsxwriter

from ledger_report.inputs import read_configs

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    src = ROOT / "inputs" / "examples.csv"
    header = next(csv.reader(src.open(encoding="utf-8")))
    configs = read_configs(src)
    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(
        buf,
        {
            "in_memory": True,
            "strings_to_formulas": False,
            "strings_to_urls": False,
            "strings_to_numbers": False,
        },
    )
    wb.set_properties({"created": datetime.datetime(2000, 1, 1)})
    ws = wb.add_worksheet("Inputs")
    for j, name in enumerate(header):
        ws.write_string(0, j, name)
    for i, c in enumerate(configs, start=1):
        typed = c.typed()  # what the row gives; a model's columns are filled again when it is read
        for j, name in enumerate(header):
            v = typed.get(name)
            if v is None:
                continue
            if isinstance(v, str):
                ws.write_string(i, j, v)  # user text is text, never a formula
            elif isinstance(v, bool):
                ws.write_boolean(i, j, v)
            else:
                ws.write_number(i, j, v)
    ws.freeze_panes(1, 1)
    wb.close()
    (ROOT / "inputs" / "examples.xlsx").write_bytes(buf.getvalue())
    print(f"Wrote inputs/examples.xlsx ({len(configs)} rows)")


if __name__ == "__main__":
    main()
