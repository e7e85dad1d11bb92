"""The shipped examples: the workbook and the CSV hold the same configurations."""

from pathlib import Path

from ledger_report.inputs import read_configs

ROOT = Path(__file__).resolve().parents[1]


def test_example_workbook_equals_csv():
    """inputs/examples.xlsx is inputs/examples.csv as a workbook (scripts/make_example_xlsx.py): same names, same typed values."""
    a = read_configs(ROOT / "inputs" / "examples.csv")
    b = read_configs(ROOT / "inputs" / "examples.xlsx")
    assert [c.name for c in a] == [c.name for c in b]
    assert [dict(c.values) for c in a] == [dict(c.values) for c in b]
    assert len(a) == 21


def test_readme_documents_every_column():
    """sqlite-utils habit: docs/columns.md names every input column."""
    from ledger_report.config import COLUMN_NAMES

    text = (ROOT / "docs" / "columns.md").read_text()
    missing = [c for c in COLUMN_NAMES if f"`{c}`" not in text]
    assert not missing
