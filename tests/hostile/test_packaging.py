"""Dependencies pinned by floors only (the red-team pass found openpyxl held below 3.2): a ceiling
keeps users off fixed releases and makes the package uninstallable beside newer ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
ROOT = Path(__file__).resolve().parents[2]


def test_no_upper_pins():
    """Every requirement of the package and its extras has only lower bounds (>=)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs.extend(extra)
    capped = [
        s for s in specs for c in Requirement(s).specifier if c.operator not in (">=", ">", "!=")
    ]
    assert capped == []
