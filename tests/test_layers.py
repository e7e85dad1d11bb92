"""The package's layers as docs/architecture.md states them: each module placed in one layer, every
import (inside functions too) from its own layer or one above it, and no import cycle.

The table is read from the document itself, so the page a new engineer reads and the rule the code
keeps are one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "ledger_report"
DOC = ROOT / "docs" / "architecture.md"


def _layers() -> list[tuple[str, list[str]]]:
    """The rows of the document's layer table: each layer's name and its modules (a path ending
    in ``.py`` is that file; one ending in ``/`` is every module under it)."""
    text = DOC.read_text(encoding="utf-8").split("## The layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("layer", "---"):
            rows.append((cells[0], re.findall(r"`([^`]+(?:\.py|/))`", cells[1])))
    return rows


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in sorted(PKG.rglob("*.py"))}


def _layer_of(path: Path, layers: list[tuple[str, list[str]]]) -> int | None:
    """The layer whose most specific entry holds ``path`` (``None``: no layer does)."""
    rel = path.relative_to(PKG).as_posix()
    best = None
    for i, (_name, entries) in enumerate(layers):
        for e in entries:
            if rel == e or (e.endswith("/") and rel.startswith(e)):
                if best is None or len(e) > best[1]:
                    best = (i, len(e))
    return None if best is None else best[0]


def _imports(name: str) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its file (``from pkg import mod``
    counts as importing ``pkg.mod``)."""
    path = MODULES[name]
    here = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            subs = {f"{base}.{a.name}" for a in node.names} & MODULES.keys()
            out |= subs or {base}
    return {m for m in out if m in MODULES and m != name}


def test_every_module_is_placed_in_one_layer():
    """docs/architecture.md places every module of the package, so the import rule covers all."""
    layers = _layers()
    assert [n for n, _ in layers][:2] == ["the base", "the column table"]
    unplaced = [m for m, p in MODULES.items() if _layer_of(p, layers) is None]
    assert unplaced == []


def test_no_module_imports_from_a_layer_below_its_own():
    """The layer rule of docs/architecture.md, on every import of every module."""
    layers = _layers()
    layer = {m: _layer_of(p, layers) for m, p in MODULES.items()}
    upward = [
        f"{m} ({layers[layer[m]][0]}) imports {t} ({layers[layer[t]][0]})"
        for m in MODULES
        for t in sorted(_imports(m))
        if layer[t] > layer[m]
    ]
    assert upward == []


def test_no_import_cycle():
    """No module reaches itself through the modules it imports (depth-first, every import)."""
    graph = {m: _imports(m) for m in MODULES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(" -> ".join(path[path.index(t) :] + [t]))
            elif t not in state:
                visit(t, path + [t])
        state[m] = 2

    for m in MODULES:
        if m not in state:
            visit(m, [m])
    assert cycles == []


def test_the_rule_sees_a_lazy_import():
    """The walk counts an import inside a function, so a cycle cannot hide there: api.py imports
    the workbook's modules only inside the function a forked process runs (the import that made
    the workers and the workbook a cycle before)."""
    tree = ast.parse(MODULES["ledger_report.api"].read_text(encoding="utf-8"))
    top = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}  # the module's own level
    assert "render.workbook" not in top
    assert "ledger_report.render.workbook" in _imports("ledger_report.api")


def test_the_command_line_calls_only_the_library():
    """The CLI computes and renders nothing itself: of the package it imports only api.py (what
    it calls) and errors.py (the errors it turns into exit statuses)."""
    assert _imports("ledger_report.cli") == {"ledger_report.api", "ledger_report.errors"}


def test_every_output_format_has_its_one_reporter():
    """build and plan -o make each file through the one reporter table (api.REPORTERS), which
    lists the files in the order they are written: JSON, workbook, handout."""
    from ledger_report import api

    assert list(api.REPORTERS) == ["json", "xlsx", "pdf"]
    assert set(api.REPORTERS) == set(api.FORMATS)


def test_no_module_of_the_package_shares_a_name_with_the_library_face():
    """``import ledger_report.X`` sets the package's attribute X to the module, so a module named
    as a function of ``lr.__all__`` replaces that function once anything imports it, and ``from .
    import X`` inside the package gets the function instead of the module: both happened, to
    ``lr.plan`` (the planner module is planner.py) and to ``lr.reconcile`` (reconciler.py)."""
    import pkgutil

    import ledger_report as lr

    modules = {m.name for m in pkgutil.iter_modules(lr.__path__)}
    assert len(modules) > 10 and not modules & set(lr.__all__)
