"""The column table (``config.COLUMNS``) against the rest of the product: each default said once
in words and once as a value, and the two agree."""

from __future__ import annotations

import pytest

from ledger_report.config import COLUMNS, COUNT, INT, Column
from ledger_report.inputs.cells import Bad, convert
from ledger_report.model.definitions import REGISTRY
from ledger_report.model.expr import Col, Const, If, IsBlank


def _registry_default(name: str):
    """The expression the model uses for an empty cell of column ``name``
    (``default(name, value)`` in model/definitions/inputs.py), or None where it has none."""
    if name not in REGISTRY:
        return None
    e = REGISTRY[name].expr
    blank_test = isinstance(e, If) and isinstance(e.cond, IsBlank) and isinstance(e.cond.x, Col)
    if blank_test and e.cond.x.name == name and isinstance(e.other, Col) and e.other.name == name:
        return e.then
    return None


def _as_value(col: Column):
    """The column's default text read as a cell of the column, or None where it is words."""
    try:
        return convert(col, col.default) if col.default else None
    except Bad:
        return None


@pytest.mark.parametrize("col", COLUMNS, ids=lambda c: c.name)
def test_a_columns_default_in_words_is_the_models_default(col):
    """Where the model's default for an empty cell is a constant, the column's help says that
    constant; where it is a rule (another column, the convention, the catalogue), the help does
    not name a value the model does not use.  The value is the registry's (hand-checked in
    model/definitions/inputs.py); the words are config.COLUMNS's."""
    model = _registry_default(col.name)
    said = _as_value(col)
    if isinstance(model, Const) and col.kind in (COUNT, INT) and col.default == "none":
        assert model.value == 0  # "none" of a count: no experts, no experts per token
    elif isinstance(model, Const):
        same_kind = isinstance(said, bool) == isinstance(model.value, bool)
        assert said == model.value and same_kind, (col.default, model)
    elif model is not None:
        assert said is None, f"{col.name}: help says {col.default!r}, the model computes {model}"


def test_every_literal_default_in_words_has_the_model_behind_it():
    """A default said as a value ("1", "true", "bf16") is one the model fills in: the registry
    has ``default(column, that value)`` for it."""
    unbacked = [
        c.name
        for c in COLUMNS
        if _as_value(c) is not None and not isinstance(_registry_default(c.name), Const)
    ]
    assert unbacked == []
