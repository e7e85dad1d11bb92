"""The report spec (ledger_report/report.py): one quantity defined in the model and one figure added
to the spec reach every output with no other edit: the JSON document, the text table, the workbook
(a live formula in Ledgers and on the print sheet, recalculated by LibreOffice to the engine's value)
and the handout page (its label, value and formula text)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess

import openpyxl
import pytest
from support.libreoffice import recalculate_with_libreoffice
from support.spec import with_figure

from ledger_report import api
from ledger_report.engine import compute, config_from_mapping
from ledger_report.model import units
from ledger_report.model.definitions import build
from ledger_report.model.expr import Ref
from ledger_report.model.registry import BYTES
from ledger_report.model.tables import tables
from ledger_report.render import workbook as wbk
from ledger_report.render.table import render_table
from ledger_report.report import SPEC, Figure, Model

# Qwen3-8B under ZeRO-1 on 4 GPUs (docs/scenarios.md): 57.3 GB of state per rank over 36 layers.
ROW = {
    "name": "probe-row",
    "layers": 36,
    "hidden": 4096,
    "heads": 32,
    "kv_heads": 8,
    "head_dim": 128,
    "ffn_hidden": 12288,
    "vocab": 151936,
    "qk_norm": True,
    "seq_len": 8192,
    "global_batch": 384,
    "tokens": 10**11,
    "days": 30,
    "reserve_days": 5,
    "dp": 4,
    "zero": 1,
    "mfu": 0.4,
    "price_per_gpu_hour": 2.5,
}
KEY = "state_bytes_per_layer_probe"
LABEL = "state per layer (probe)"


def _model() -> Model:
    reg = build()
    reg.section = "compute"
    reg.define(
        KEY,
        Ref("state_bytes_per_rank") / Ref("layers"),
        BYTES,
        LABEL,
        "每层状态（探针）",
        "a figure added by the test",
    )
    return Model(reg, with_figure(SPEC, "compute", Figure(KEY, formula=True)), tables())


@pytest.fixture(scope="module")
def ledger():
    return compute(config_from_mapping(ROW), _model())


@pytest.mark.slow
def test_the_value_is_the_hand_calculation(ledger):
    """ZeRO-1 on 4 ranks: (2 + 2 + 12/4) B × 8,190,735,360 parameters = 57,335,147,520 B; ÷ 36 layers."""
    assert ledger["state_bytes_per_rank"] == 7 * 8_190_735_360
    assert ledger[KEY] == pytest.approx(7 * 8_190_735_360 / 36)


def test_the_figure_reaches_the_json_and_the_text(ledger):
    (data,) = api.outputs([ledger], "probe", ".", ("json",)).values()
    doc = json.loads(data)
    assert doc["configs"][0]["compute"][KEY] == round(7 * 8_190_735_360 / 36)
    text = render_table([ledger])
    assert f"{LABEL}: {units.gb(ledger[KEY])}" in text


@pytest.mark.slow
def test_the_figure_is_a_live_formula_in_the_workbook(ledger):
    data = wbk.render_xlsx([ledger])
    letter = wbk.layout._quantity_letters(ledger.model.registry)[KEY]
    ws = openpyxl.load_workbook(io.BytesIO(data))[wbk.LEDGERS]
    cell = ws[f"{letter}{wbk.layout.LEDGER_FIRST_ROW}"]
    assert cell.data_type == "f" and "/" in cell.value
    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice is not installed")
    recalculated = openpyxl.load_workbook(
        io.BytesIO(recalculate_with_libreoffice(data)), data_only=True
    )[wbk.LEDGERS]
    assert recalculated[f"{letter}{wbk.layout.LEDGER_FIRST_ROW}"].value == pytest.approx(
        ledger[KEY], rel=1e-12
    )


def test_the_figure_is_on_the_handout_page(ledger, tmp_path):
    pdf = api.outputs([ledger], "probe", tmp_path, ("pdf",))[tmp_path / "probe.pdf"]
    path = tmp_path / "probe.pdf"
    path.write_bytes(pdf)
    page = subprocess.run(
        ["pdftotext", "-f", "2", "-l", "2", str(path), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    squeezed = "".join(page.split())
    assert "".join(LABEL.split()) in squeezed
    assert "".join(units.gb(ledger[KEY]).split()) in squeezed
    # the formula text with the numbers filled in, unless the page is full and says in its foot
    # that it left the formula texts out (every one is then in the workbook and the docs)
    if "Leftoutforroom:formulatexts" in squeezed:
        from ledger_report.model import text as mtext

        shown = mtext.render(ledger.model.registry, KEY, ledger.values, "en", frozenset())
        assert "".join(shown.split()).startswith("57.3GB÷36")
    else:
        assert "57.3GB÷36" in squeezed


def test_a_choice_quantity_knows_its_values():
    """registry.choices reads the values a text quantity can take from its expression: the phases
    for the peak's phase (in the order the phases run), an enumerated input column's choices for
    the recompute mode, and nothing for a sentence, whose text is composed."""
    from ledger_report.config import COLUMNS
    from ledger_report.model.definitions import REGISTRY
    from ledger_report.model.definitions.phases import PHASE_NAMES
    from ledger_report.model.registry import choices

    columns = {c.name: c.choices for c in COLUMNS if c.choices}
    assert choices(REGISTRY, "peak_phase", columns) == PHASE_NAMES
    assert choices(REGISTRY, "recompute", columns) == ("none", "selective", "selective_op", "full")
    assert choices(REGISTRY, "reported_stage", columns) == ("only", "first", "middle", "last")
    assert choices(REGISTRY, "verdict_memory_reason", columns) is None
    assert choices(REGISTRY, "recompute") is None  # without the column's choices the input is open


def test_a_breakdown_on_the_pages_names_its_sentence():
    """A figure of named quantities is an object in JSON; on the pages it is a registry sentence
    (Figure.text), so the workbook's live formula and the handout say the same; without one the
    spec refuses it rather than let a reporter make up the text."""
    with pytest.raises(ValueError, match="text quantity"):
        Figure("step_time_s", "terms", items=(("compute", "time_compute_s"),))
    f = Figure("step_time_s", "terms", items=(("compute", "time_compute_s"),), pages=False)
    assert f.shown == "step_time_s"
    [g] = [
        g
        for s in SPEC.sections
        for g in getattr(s, "figures", ())
        if g.name == "step_time_breakdown"
    ]
    # the pages' sentence: the terms, the exposed communication as latency and bandwidth, what binds
    assert g.shown == "step_time_terms_bound"
    v = compute(
        config_from_mapping(
            {
                "name": "q",
                "layers": 36,
                "hidden": 4096,
                "heads": 32,
                "ffn_hidden": 12288,
                "vocab": 151936,
                "seq_len": 4096,
                "global_batch": 64,
                "dp": 8,
                "tokens": "1B",
                "days": 10,
            }
        )
    )
    assert v["step_time_terms"].startswith("compute ") and v["step_time_terms"].endswith(" s")


def test_the_text_table_names_lines_by_their_labels():
    """calc's table names a line of a one-id table by the registry's label, as the handout does
    ("allocator reserve and CUDA context", "backward (its end)"), not by its JSON id."""
    lg = compute(
        config_from_mapping(
            {
                "name": "q",
                "layers": 36,
                "hidden": 4096,
                "heads": 32,
                "ffn_hidden": 12288,
                "vocab": 151936,
                "seq_len": 4096,
                "global_batch": 64,
                "dp": 8,
            }
        )
    )
    text = render_table([lg])
    assert "allocator reserve and CUDA context" in text and "backward (its end)" in text
    assert "runtime_reserve " not in text and "backward_end " not in text
