"""The planner's plans as an input file: plans.csv holds one complete input row per plan."""

from __future__ import annotations

from typing import Any, Mapping

from ..config import COLUMN_NAMES
from .output import csv_bytes


def plans_csv(doc: Mapping[str, Any]) -> bytes:
    """plans.csv: every plan's row under the input columns (text neutralised against formula
    injection by the one CSV writer, ``output.csv_bytes``)."""
    return csv_bytes(COLUMN_NAMES, (p["row"] for p in doc["plans"]))
