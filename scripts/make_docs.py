"""Write the generated reference in docs/ (definitions, columns, the JSON document) from the model.

Run after changing a definition, a column or the report spec:  .venv/bin/python scripts/make_docs.py
tests/test_docs.py regenerates the files and fails on any difference.
"""

from __future__ import annotations

from pathlib import Path

from ledger_report.render.docs import all_docs

DOCS = Path(__file__).resolve().parents[1] / "docs"


def main() -> None:
    for name, text in all_docs().items():
        (DOCS / name).write_text(text, encoding="utf-8")
        print(f"Wrote docs/{name}")


if __name__ == "__main__":
    main()
