"""Write inputs/examples.xlsx from inputs/examples.csv: the same rows, one `Inputs` sheet.

Run after editing the CSV:  .venv/bin/python scripts/make_example_xlsx.py
A test (tests/test_examples.py) checks the two files hold the same configurations.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from openpyxl import Workbook

from ledger_report.inputs import read_configs
from ledger_report.render.output import deterministic_zip

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    src = ROOT / "inputs" / "examples.csv"
    header = next(csv.reader(src.open(encoding="utf-8")))
    configs = read_configs(src)
    wb = Workbook()
    ws = wb.active
    ws.title = "Inputs"
    ws.append(header)
    for c in configs:
        ws.append([c.get(h) for h in header])
    for row in ws.iter_rows(min_row=2):
        for cell in row:
            if isinstance(cell.value, str):
                cell.data_type = "s"  # user text is text, never a formula
    ws.freeze_panes = "B2"
    buf = io.BytesIO()
    wb.save(buf)
    (ROOT / "inputs" / "examples.xlsx").write_bytes(deterministic_zip(buf.getvalue()))
    print(f"Wrote inputs/examples.xlsx ({len(configs)} rows)")


if __name__ == "__main__":
    main()
