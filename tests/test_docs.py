"""The reference in docs/ is what the model says, and nothing in the repository points users to
documents it does not hold."""

from __future__ import annotations

import re
from pathlib import Path

from ledger_report.render.docs import all_docs

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"contract|seed [0-9]|seed doc|seeds/|\.\./shared|issue [0-9]", re.I)
SCANNED = ("ledger_report", "templates", "README.md", "inputs", "tests", "docs")


def test_generated_docs_are_up_to_date():
    """scripts/make_docs.py's output equals the files in docs/ (run it after changing the model)."""
    for name, text in all_docs().items():
        assert (ROOT / "docs" / name).read_text(encoding="utf-8") == text, (
            f"docs/{name} is stale: run scripts/make_docs.py"
        )


def test_every_docs_anchor_a_source_names_exists():
    """A definition's source that points into docs/definitions.md names a heading that exists there."""
    from ledger_report.model.definitions import REGISTRY

    text = (ROOT / "docs" / "definitions.md").read_text(encoding="utf-8")
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).strip().replace(" ", "-")
        for h in re.findall(r"^## (.+)$", text, re.M)
    }
    used = {m for q in REGISTRY for m in re.findall(r"docs/definitions\.md#([a-z-]+)", q.source)}
    assert used and used <= anchors, used - anchors


def test_no_reference_to_documents_outside_the_repository():
    """No file of the product, its outputs' templates, examples, tests or docs mentions documents a
    user of the repository does not have (the check a new user would run with grep)."""
    hits = []
    for top in SCANNED:
        path = ROOT / top
        files = (
            [path]
            if path.is_file()
            else [p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        )
        for f in files:
            if f.suffix in (".xlsx", ".pyc", ".png", ".pdf") or f == Path(__file__):
                continue
            for i, line in enumerate(
                f.read_text(encoding="utf-8", errors="replace").splitlines(), 1
            ):
                if OUTSIDE.search(line):
                    hits.append(f"{f.relative_to(ROOT)}:{i}: {line.strip()[:100]}")
    assert not hits, "\n".join(hits[:20])
