"""The planner's plans as an input file: plans.csv holds one complete input row per plan."""

from __future__ import annotations

import csv
import io
from typing import Any, Mapping

from ..config import COLUMN_NAMES


def plans_csv(doc: Mapping[str, Any]) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(COLUMN_NAMES), lineterminator="\n")
    w.writeheader()
    for p in doc["plans"]:
        w.writerow(
            {
                k: ("true" if v is True else "false" if v is False else v)
                for k, v in p["row"].items()
            }
        )
    return buf.getvalue().encode("utf-8")
