"""ledger_report uses only the public API of the libraries the handout is built on: no name that
begins with "_" is read, written or imported from WeasyPrint, pypdf, pydyf and the rest (their
private names change without notice; the WeasyPrint shortcuts that replaced them crashed on 68
and 69 and failed to import on 66).

The check is an AST walk, deliberately simple: a name is *tracked* when it is bound by an import
of one of the packages, or assigned from an expression that mentions a tracked name; then any
``_name`` attribute (dunders other than ``__version__`` included) on an expression rooted at a
tracked name, any ``from pkg._x import`` / ``import pkg._x`` / ``from pkg import _x``, any
``getattr``/``setattr``/``hasattr``/``delattr`` with a ``"_..."`` string on a tracked
expression, any ``"pkg._x"`` module string, and any ``self._name`` inside a class derived from a
tracked base (which would read or override the base's privates) is reported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

# The handout's libraries and theirs.  (openpyxl, used by the workbook and the reader, is not
# checked here.)
PACKAGES = frozenset(
    {
        "weasyprint",
        "pypdf",
        "pydyf",
        "cssselect2",
        "tinycss2",
        "tinyhtml5",
        "jinja2",
        "markupsafe",
        "fontTools",
        "pyphen",
        "PIL",
    }
)
ALLOWED = frozenset({"__version__"})
SOURCE = Path(__file__).resolve().parents[1] / "ledger_report"
_MODULE_STRING = re.compile(r"^(%s)(\.\w+)*\._" % "|".join(map(re.escape, sorted(PACKAGES))))


def _private(name: str) -> bool:
    return name.startswith("_") and name not in ALLOWED


def _root(node: ast.AST) -> ast.AST:
    """The innermost object of an attribute chain, through calls and subscripts."""
    while True:
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return node


def _bound(target: ast.AST) -> list[str]:
    """The plain names an assignment target binds (``a``, ``a, b``, ``*a``; not ``self.a``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _bound(element)]
    if isinstance(target, ast.Starred):
        return _bound(target.value)
    return []


def violations(source: str, filename: str = "<source>") -> list[str]:
    tree = ast.parse(source, filename)
    tracked: set[str] = set()
    found: list[str] = []

    def report(node: ast.AST, what: str) -> None:
        found.append(f"{filename}:{getattr(node, 'lineno', '?')}: {what}")

    def mentions_tracked(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id in tracked for n in ast.walk(node))

    # Pass 1: the names bound by imports of the packages, then (to a fixed point) by assignments
    # from expressions that mention them.
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] in PACKAGES:
                    tracked.add(alias.asname or parts[0])
                    if any(_private(p) for p in parts):
                        report(node, f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] in PACKAGES:
                if any(_private(p) for p in parts):
                    report(node, f"from {node.module} import ...")
                for alias in node.names:
                    tracked.add(alias.asname or alias.name)
                    if _private(alias.name):
                        report(node, f"from {node.module} import {alias.name}")
    while True:
        before = len(tracked)
        for node in ast.walk(tree):
            if (
                isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr))
                and node.value is not None
                and mentions_tracked(node.value)
            ):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    tracked.update(_bound(target))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None and mentions_tracked(item.context_expr):
                        tracked.update(_bound(item.optional_vars))
        if len(tracked) == before:
            break

    # Pass 2: what is read or written on them.
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            root = _root(node.value)
            if isinstance(root, ast.Name) and root.id in tracked:
                report(node, f"{ast.unparse(node)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
        ):
            obj, name = node.args[0], node.args[1]
            if (
                isinstance(name, ast.Constant)
                and isinstance(name.value, str)
                and _private(name.value)
                and isinstance(_root(obj), ast.Name)
                and _root(obj).id in tracked
            ):
                report(node, f"{node.func.id}(..., {name.value!r})")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _MODULE_STRING.match(node.value)
        ):
            report(node, f"module string {node.value!r}")
        elif isinstance(node, ast.ClassDef) and any(mentions_tracked(base) for base in node.bases):
            for inner in ast.walk(node):
                if (
                    isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and _private(inner.name)
                    and not (inner.name.startswith("__") and inner.name.endswith("__"))
                ):
                    report(
                        inner,
                        f"{node.name}.{inner.name} overrides or adds a private method of its base",
                    )
                if (
                    isinstance(inner, ast.Attribute)
                    and isinstance(inner.value, ast.Name)
                    and inner.value.id in ("self", "cls")
                    and _private(inner.attr)
                ):
                    report(inner, f"{node.name}: {ast.unparse(inner)}")
    return found


def test_ledger_report_reads_no_private_name_of_its_libraries():
    files = sorted(SOURCE.rglob("*.py"))
    assert len(files) > 10
    found = [
        v
        for path in files
        for v in violations(path.read_text(encoding="utf-8"), str(path.relative_to(SOURCE.parent)))
    ]
    assert found == []


def test_the_handout_still_imports_weasyprint_and_pypdf():
    """The check is not vacuous: the handout module is one it walks, and it imports both."""
    source = (SOURCE / "render" / "handout.py").read_text(encoding="utf-8")
    assert re.search(r"^\s*import weasyprint$", source, re.M) and re.search(
        r"^import pypdf$", source, re.M
    )


@pytest.mark.parametrize(
    "snippet",
    [
        "import weasyprint\nweasyprint.HTML._ua_stylesheets = None",
        "import weasyprint.text.line_break as lb\nlb._x",
        "import weasyprint.layout.inline as inline\nf = inline.split_first_line\ninline._cache = f",
        "from weasyprint.urls import URLFetcher\nclass F(URLFetcher):\n    def f(self):\n        return self._timeout",
        "import weasyprint\nclass H(weasyprint.HTML):\n    def _ua_stylesheets(self):\n        pass",
        "from weasyprint._private import thing",
        "import weasyprint._private",
        "from weasyprint.text import _helper",
        "import pydyf\npydyf.zlib = None\npydyf._x",
        "import pypdf\nw = pypdf.PdfWriter()\nw._objects.append(1)",
        "import pypdf\nreader = pypdf.PdfReader('x')\npage = reader.pages[0]\npage._get_contents()",
        "import weasyprint\ndoc = weasyprint.HTML(string='').render()\nbox = doc.pages[0]._page_box",
        "import weasyprint\nbox = weasyprint.HTML(string='').render()\nbox.__dict__.update({})",
        "import weasyprint\ngetattr(weasyprint.HTML, '_ua_stylesheets')",
        "import importlib\nimportlib.import_module('weasyprint.layout._x')",
        "import cssselect2\ncssselect2._compile",
        "import jinja2\nwith jinja2.Environment() as env:\n    env._x",
    ],
)
def test_the_check_finds_private_names(snippet):
    assert violations(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        "import weasyprint\nprint(weasyprint.__version__)",
        "import weasyprint\nweasyprint.HTML(string='x', base_url='file:///', url_fetcher=None).render(font_config=None)",
        "import pypdf\nw = pypdf.PdfWriter()\nw.append(pypdf.PdfReader('x'), import_outline=True)",
        "class Mine:\n    def _helper(self):\n        return self._state",
        "_cache = {}\n_cache.clear()",
        "import pypdf\nclass Merge:\n    def __init__(self):\n        self.writer = pypdf.PdfWriter()\n        self._n = 0",
    ],
)
def test_the_check_lets_public_names_through(snippet):
    assert violations(snippet) == []
