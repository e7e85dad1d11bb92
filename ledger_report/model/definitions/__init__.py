"""Every number of the ledger, defined once, in sections read top to bottom (``build``).  Each
``define`` names its key, unit, English and Chinese labels and its source; the engine evaluates the
registry, the workbook turns each entry into a live formula, the handout prints its formula text
and docs/ is generated from it.
"""

from __future__ import annotations

from ..registry import Registry
from . import (
    activations,
    compute,
    constraints,
    inputs,
    notes,
    outside,
    params,
    phases,
    stages,
    state,
    time,
    verdicts,
)
from .common import PARTS, STATES, Ctx

__all__ = ["REGISTRY", "PARTS", "STATES", "build"]


def build() -> Registry:
    reg = Registry()
    r = Ctx()
    inputs.define(reg, r)
    params.define(reg, r)
    stages.define(reg, r)
    state.widths(reg, r)
    activations.define(reg, r)
    phases.define(reg, r)
    state.ledger(reg, r)
    outside.items(reg, r)
    compute.define(reg, r)
    time.define(reg, r)
    compute.costs(reg, r)
    notes.define(reg, r)
    constraints.define(reg, r)
    verdicts.define(reg, r)
    return reg


REGISTRY = build()
