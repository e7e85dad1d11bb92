"""The JSON document's walk of the report spec (ledger_report/render/document.py)."""

import gc
import weakref
from dataclasses import replace
from pathlib import Path

from ledger_report.engine import Ledger, compute
from ledger_report.inputs import read_configs
from ledger_report.render.document import config_document
from ledger_report.report import DEFAULT, Model

EXAMPLES = Path(__file__).parents[1] / "inputs" / "examples.csv"


def _with_spec(lg: Ledger, spec) -> Ledger:
    return Ledger(lg.config, lg.values, Model(DEFAULT.registry, spec, DEFAULT.tables))


def test_a_document_follows_its_own_models_spec_whichever_came_before():
    """The spec is read once per model and remembered for the last one: a model whose spec has the
    first two sections only (verdicts and their reasons, docs/json.md) gives those two, and the
    shipped model gives its whole document again after it."""
    lg = compute(read_configs(EXAMPLES)[0])
    full = config_document(lg)
    two = config_document(_with_spec(lg, replace(DEFAULT.spec, sections=DEFAULT.spec.sections[:2])))
    assert list(two) == [
        "name",
        "notes",
        "inputs",
        "inputs_from",
        "verdicts",
        "verdict_reasons",
        "assumptions",
        "assumptions_zh",
        "warnings",
    ]
    assert two["verdicts"] == full["verdicts"] and two["verdict_reasons"] == full["verdict_reasons"]
    assert config_document(lg) == full


def test_the_spec_read_is_let_go_when_another_model_is_documented():
    """The remembered reading holds one model's spec, not every spec ever documented (the cache
    keyed by id() kept each for good)."""
    lg = compute(read_configs(EXAMPLES)[0])
    spec = replace(DEFAULT.spec)
    gone = weakref.ref(spec)
    config_document(_with_spec(lg, spec))
    del spec
    config_document(lg)
    gc.collect()
    assert gone() is None


def _keys(value, path=()):
    """Every object key in a document, with the path of keys above it (lists looked into)."""
    if isinstance(value, dict) and path[-1:] not in (("inputs",), ("inputs_from",), ("label",)):
        for k, v in value.items():
            yield path, k
            yield from _keys(v, (*path, k))
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item, path)


def test_docs_json_md_names_every_key_the_examples_documents_hold():
    """docs/json.md is the reference for scripts: each key of each shipped example's document is
    written there as `key` (the columns under ``inputs`` and ``inputs_from`` are the input
    schema's, documented in docs/columns.md; ``label``'s ``en``/``zh`` in its own line)."""
    text = (Path(__file__).parents[1] / "docs" / "json.md").read_text(encoding="utf-8")
    docs = [config_document(compute(c)) for c in read_configs(EXAMPLES)]
    missing = {(p[-1:], k) for d in docs for p, k in _keys(d) if f"`{k}`" not in text}
    assert not missing
