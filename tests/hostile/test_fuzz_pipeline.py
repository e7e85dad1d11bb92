"""Fuzzing: Hypothesis-generated rows, valid and invalid, through the whole `calc --json` pipeline.

Never a traceback: every run exits 0 with a JSON document whose numbers are finite and obey the
engine's invariants, or exits 1 with a message naming the file.
"""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_report.cli import main
from ledger_report.config import COLUMNS

VALID = {
    "layers": st.integers(1, 64).map(str),
    "hidden": st.sampled_from(["512", "1024", "4096"]),
    "heads": st.sampled_from(["8", "16", "32"]),
    "ffn_hidden": st.sampled_from(["1024", "11008", "4096"]),
    "vocab": st.sampled_from(["32000", "151936", "1000"]),
    "dp": st.sampled_from(["1", "2", "8", "64"]),
    "tp": st.sampled_from(["1", "2", "8"]),
    "pp": st.sampled_from(["1", "2", "4"]),
    "zero": st.sampled_from(["0", "1", "2", "3"]),
    "seq_len": st.sampled_from(["2048", "8192"]),
    "global_batch": st.sampled_from(["512", "1024"]),
    "tokens": st.sampled_from(["1B", "100B", "15T"]),
    "days": st.sampled_from(["1", "30", "90"]),
    "mfu": st.sampled_from(["0.3", "0.4", "40%"]),
    "recompute": st.sampled_from(["none", "selective", "full"]),
    "weight_dtype": st.sampled_from(["bf16", "fp32", "BF16 ", "bfloat16"]),
    "optimizer": st.sampled_from(["adam", "sgd", "adam8bit", "adafactor", "lion"]),
    "gpu": st.sampled_from(["H100-SXM", "h20", "MI300X", "A100-40GB"]),
    "framework": st.sampled_from(["generic", "deepspeed"]),
}
JUNK = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "nan",
            "inf",
            "-1",
            "0",
            "1e400",
            "1,024",
            "3,5",
            "NA",
            "=1+1",
            "#DIV/0!",
            "1e20",
            "10^20",
            "100000000000000000000",
        ]
    ),
)
NAMES = [c.name for c in COLUMNS if c.name not in ("name",)]


def _csv_cell(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


@st.composite
def sheets(draw):
    valid = draw(st.booleans())
    if valid:  # only well-formed values; contradictions (tp not dividing heads...) may still occur
        cols = draw(st.lists(st.sampled_from(sorted(VALID)), min_size=0, max_size=12, unique=True))
        use = sorted(set(cols) | {"layers", "hidden", "heads", "ffn_hidden", "vocab"})
    else:
        use = draw(st.lists(st.sampled_from(NAMES), min_size=0, max_size=10, unique=True))
    header = ["name"] + use
    lines = [",".join(header)]
    for i in range(draw(st.integers(1, 3))):
        cells = [f"row{i}"]
        for c in use:
            if c in VALID and (valid or draw(st.integers(0, 3)) > 0):
                cells.append(draw(VALID[c]))
            else:
                cells.append(draw(JUNK))
        lines.append(",".join(_csv_cell(x) for x in cells))
    return "\n".join(lines) + "\n"


def _numbers(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from _numbers(v)
    elif isinstance(x, list):
        for v in x:
            yield from _numbers(v)
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield x


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(text=sheets())
@pytest.mark.slow
def test_fuzzed_rows_never_traceback(tmp_path, text):
    """Every generated sheet: exit 0 with finite numbers obeying peak ≥ state ≥ 0, or exit 1 naming the file."""
    p = tmp_path / "fuzz.csv"
    p.write_text(text, encoding="utf-8")
    r = CliRunner().invoke(main, ["calc", str(p), "--json"])
    assert r.exit_code in (0, 1), (text, r.output, r.exception)
    assert "Traceback" not in r.output
    if r.exit_code == 1:
        assert "fuzz.csv" in r.output
        return
    doc = json.loads(r.stdout)
    for c in doc["configs"]:
        for v in _numbers(c):
            assert math.isfinite(v), (text, v)
        assert c["state_bytes_per_rank"] >= 0
        if c["peak_bytes_per_rank"] is not None:
            assert c["peak_bytes_per_rank"] >= c["state_bytes_per_rank"]
        assert (
            c["state_bytes_logical_total"] >= c["state_bytes_per_rank"]
            or c["params"]["per_rank"] > 0
        )
