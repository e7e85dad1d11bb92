"""The model catalogue and the architectures it needs: each entry's counts against its authors'
published figures, model= and config.json rows against the same architecture typed out, and the
config.json reader's refusals.

Published figures are quoted with their source.  Where the authors give an exact count (the
``total_size`` of a checkpoint's ``model.safetensors.index.json`` in bytes, or the Hub's
``safetensors.total``), the test is exact; else it is to the precision the figure is written with.
Headline sizes such as Meta's "70B" and "405B" truncate (70.55 B, 405.85 B): where a figure
truncates, the test says so and truncates.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger_report.catalogue import MODELS, find_model, parse_models
from ledger_report.cli import main
from ledger_report.engine import compute, config_from_mapping
from ledger_report.errors import InputError
from ledger_report.hf_config import UnsupportedConfig, columns_from_config, read_config_json
from ledger_report.inputs import read_configs

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "data" / "hf_configs"  # the Hugging Face config.json of each entry
FILES = {
    "Llama-3.1-8B": "Llama-3.1-8B.json",
    "Llama-3.1-70B": "Llama-3.1-70B.json",
    "Llama-3.1-405B": "Llama-3.1-405B.json",
    "Llama-2-7B": "Llama-2-7B.json",
    "Qwen2.5-7B": "Qwen2.5-7B.json",
    "Qwen3-8B": "Qwen3-8B.json",
    "Qwen3-32B": "Qwen3-32B.json",
    "Qwen3-30B-A3B": "Qwen3-30B-A3B.json",
    "Qwen3-235B-A22B": "Qwen3-235B-A22B.json",
    "Qwen3-Next-80B-A3B": "Qwen3-Next-80B-A3B.json",
    "DeepSeek-V3": "DeepSeek-V3.json",
    "Kimi-K2": "Kimi-K2-Instruct.json",
    "Mixtral-8x7B": "Mixtral-8x7B-v0.1.json",
    "Mixtral-8x22B": "Mixtral-8x22B-v0.1.json",
    "gpt-oss-20b": "gpt-oss-20b.json",
    "gpt-oss-120b": "gpt-oss-120b.json",
    "Gemma-3-27B": "Gemma-3-27B.json",
}
REQUIRED = (
    "Llama-3.1-8B",
    "Llama-3.1-70B",
    "Llama-3.1-405B",
    "Qwen3-8B",
    "Qwen3-32B",
    "Qwen3-30B-A3B",
    "Qwen3-235B-A22B",
    "DeepSeek-V3",
    "Kimi-K2",
    "Mixtral-8x7B",
    "Mixtral-8x22B",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "Gemma-3-27B",
    "Qwen3-Next-80B-A3B",
)
B = 10**9


def ledger(name: str, **more):
    return compute(config_from_mapping({"name": name, "model": name, "seq_len": 4096, **more}))


def main_total(lg) -> int:
    """The model without its MTP modules, as authors state their totals."""
    return int(lg["arch_main_params"])


def non_embedding(lg) -> int:
    """Qwen's "Non-Embedding": the total less the input embedding and the (untied) output head."""
    return main_total(lg) - int(lg["arch_embedding_params"])


def rounded(x: float, places: int) -> float:
    return round(x / B, places)


def truncated(x: float, places: int) -> float:
    return math.floor(x / B * 10**places) / 10**places


# ---- the catalogue ------------------------------------------------------------------------------


def test_catalogue_holds_the_architectures_people_train():
    """The architectures people train: Llama 3.1 8B/70B/405B, Qwen3 8B/32B/30B-A3B/235B-A22B, DeepSeek-V3, Kimi K2,
    Mixtral 8x7B/8x22B, gpt-oss-20b/120b, Gemma 3 27B, Qwen3-Next-80B-A3B; each with a source."""
    assert set(REQUIRED) <= set(MODELS)
    for m in MODELS.values():
        assert m.source.startswith(f"https://huggingface.co/{m.hf_repo}/"), m.name
        assert m.columns["layers"] > 0


@pytest.mark.parametrize("name", list(FILES))
def test_entry_is_its_config_json_as_read(name):
    """Each entry's columns are what the reader makes of the model's Hugging Face config.json
    (tests/data/hf_configs; scripts/make_models_json.py writes the catalogue from them)."""
    assert MODELS[name].columns == read_config_json(CONFIGS / FILES[name])


def test_names_match_like_gpu_names():
    """A row may spell a name as people do: case, spaces, hyphens and underscores do not matter."""
    assert find_model("qwen3 8b").name == "Qwen3-8B"
    assert find_model("GPT_OSS_120B").name == "gpt-oss-120b"
    assert find_model("Qwen4-8B") is None


def test_catalogue_parser_refuses_a_bad_entry():
    """A malformed catalogue is an error naming the entry, not a silent default."""
    good = json.loads((ROOT / "ledger_report" / "data" / "models.json").read_text(encoding="utf-8"))
    bad = {"models": [dict(good["models"][0], columns={"layers": "32"})]}
    with pytest.raises(ValueError, match="model 1: column 'layers'"):
        parse_models(json.dumps(bad))
    with pytest.raises(ValueError, match="not an architecture column"):
        parse_models(json.dumps({"models": [dict(good["models"][0], columns={"dp": 8})]}))


# ---- published figures -----------------------------------------------------------------------------


EXACT = {
    # name: (parameters, source)
    "Llama-3.1-8B": (
        16_060_522_496 // 2,
        "huggingface.co/meta-llama/Llama-3.1-8B model.safetensors.index.json total_size 16,060,522,496 bytes (bf16)",
    ),
    "Llama-3.1-70B": (
        141_107_412_992 // 2,
        "huggingface.co/meta-llama/Llama-3.1-70B-Instruct model.safetensors.index.json total_size 141,107,412,992 bytes (bf16)",
    ),
    "Llama-3.1-405B": (
        405_853_388_800,
        "huggingface.co/api/models/meta-llama/Llama-3.1-405B safetensors.total",
    ),
    # the old Llama-2 checkpoint also stores 32 × 64 fp32 rotary inv_freq buffers: 8,192 bytes that are not parameters
    "Llama-2-7B": (
        (13_476_839_424 - 32 * 64 * 4) // 2,
        "huggingface.co/meta-llama/Llama-2-7b-hf model.safetensors.index.json total_size 13,476,839,424 bytes (fp16)",
    ),
    "Qwen2.5-7B": (
        15_231_233_024 // 2,
        "huggingface.co/Qwen/Qwen2.5-7B model.safetensors.index.json total_size 15,231,233,024 bytes (bf16)",
    ),
    "Qwen3-8B": (
        16_381_470_720 // 2,
        "huggingface.co/Qwen/Qwen3-8B model.safetensors.index.json total_size 16,381,470,720 bytes (bf16)",
    ),
    "Qwen3-32B": (
        65_524_246_528 // 2,
        "huggingface.co/Qwen/Qwen3-32B model.safetensors.index.json total_size 65,524,246,528 bytes (bf16)",
    ),
    "Qwen3-30B-A3B": (
        61_064_245_248 // 2,
        "huggingface.co/Qwen/Qwen3-30B-A3B model.safetensors.index.json total_size 61,064,245,248 bytes (bf16)",
    ),
    "Qwen3-235B-A22B": (
        235_093_634_560,
        "huggingface.co/api/models/Qwen/Qwen3-235B-A22B safetensors.total",
    ),
    "Mixtral-8x7B": (
        93_405_585_408 // 2,
        "huggingface.co/mistralai/Mixtral-8x7B-v0.1 model.safetensors.index.json total_size 93,405,585,408 bytes (bf16)",
    ),
}


@pytest.mark.parametrize("name", list(EXACT))
def test_exact_published_counts(name):
    """Checkpoints whose index gives the exact size: the count equals it to the parameter (the
    source of each is beside it in EXACT)."""
    expected, _source = EXACT[name]
    assert main_total(ledger(name)) == expected


def test_qwen3_8b_count_does_not_move():
    """The Qwen3-8B checkpoint (model.safetensors.index.json, 16,381,470,720 bytes of bf16): 8,190,735,360 by name as typed out."""
    assert ledger("Qwen3-8B")["params_total"] == 8_190_735_360


def test_qwen_cards():
    """Qwen model cards (huggingface.co/Qwen/<model>): "Number of Parameters" and "(Non-Embedding)".

    Qwen2.5-7B: 7.61B / 6.53B (the card truncates 7.6156); Qwen3-8B: 8.2B / 6.95B; Qwen3-32B: 32.8B
    / 31.2B; Qwen3-30B-A3B: "30.5B in total and 3.3B activated" / 29.9B; Qwen3-235B-A22B: "235B in
    total and 22B activated" / 234B.  Qwen's activated count includes the embedding and the head
    (without them the 30B-A3B would be 2.73B); its 3.3B truncates 3.35 B, as 7.61B truncates 7.6156 B."""
    q25 = ledger("Qwen2.5-7B")
    assert truncated(main_total(q25), 2) == 7.61 and rounded(non_embedding(q25), 2) == 6.53
    q8 = ledger("Qwen3-8B")
    assert rounded(main_total(q8), 1) == 8.2 and rounded(non_embedding(q8), 2) == 6.95
    q32 = ledger("Qwen3-32B")
    assert rounded(main_total(q32), 1) == 32.8 and rounded(non_embedding(q32), 1) == 31.2
    q30 = ledger("Qwen3-30B-A3B")
    assert (
        rounded(main_total(q30), 1) == 30.5
        and truncated(q30["params_active"], 1) == 3.3
        and rounded(non_embedding(q30), 1) == 29.9
    )
    q235 = ledger("Qwen3-235B-A22B")
    assert (
        rounded(main_total(q235), 0) == 235
        and rounded(q235["params_active"], 0) == 22
        and rounded(non_embedding(q235), 0) == 234
    )


def test_qwen3_next_with_and_without_its_mtp_module():
    """Qwen3-Next-80B-A3B (huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct): "80B in total and 3B
    activated", "Non-Embedding: 79B".  The Hub's safetensors total, 81,324,862,720, includes the mtp.*
    weights that transformers' Qwen3NextForCausalLM skips and vLLM's qwen3_next_mtp.py builds: the
    total with its MTP module is exact, the card's 80B is the model without it.  Its "3B activated"
    matches the count without both vocabulary matrices (3.25 B; with them 3.87 B)."""
    lg = ledger("Qwen3-Next-80B-A3B")
    assert lg["params_total"] == 81_324_862_720
    assert rounded(main_total(lg), 0) == 80 and rounded(non_embedding(lg), 0) == 79
    assert rounded(lg["params_active"] - lg["arch_embedding_params"], 0) == 3
    assert lg["params_mtp"] == lg["params_total"] - main_total(lg) > 0


def test_deepseek_v3():
    """DeepSeek-V3 README (github.com/deepseek-ai/DeepSeek-V3): "671B total parameters with 37B
    activated for each token"; README_WEIGHTS.md: the MTP module has "11.5B unique parameters,
    excluding the shared 0.9B Embedding and 0.9B output Head".

    671 B is the main model (the MTP module left out), to the billion.  37 B truncates the 37.55 B
    the shapes give with the embedding and the head (as Meta's 70B and 405B do).  The MTP module's
    11.61 B include eh_proj (2h·h = 0.10 B); without it 11.51 B, DeepSeek's 11.5B.  Not reproduced:
    README_WEIGHTS' 36.7B active (the shapes give 36.63 B without the input embedding), and the 685B
    of the Hub, which counts the checkpoint's stored tensors (the MTP layer's own copies of the
    embedding and head, and the fp8 scales)."""
    lg = ledger("DeepSeek-V3")
    assert rounded(main_total(lg), 0) == 671
    assert truncated(lg["params_active"], 0) == 37
    h = lg["hidden"]
    assert rounded(lg["params_mtp"] - 2 * h * h, 1) == 11.5
    assert (
        rounded(lg["params_active"] - lg["embedding_params"], 2) == 36.63
    )  # not README_WEIGHTS' 36.7


def test_kimi_k2():
    """Kimi K2 model card (github.com/MoonshotAI/Kimi-K2 README): "32 billion activated parameters and
    1 trillion total parameters".  The released config gives 1.026 T and 32.86 B active (32 B
    truncated, as DeepSeek-V3's 37B).  The technical report's 1.04T and 32.6B (arXiv 2507.20534
    Table 2) are not reproducible from the released config.json: its shapes give 1.03 T and 32.86 B."""
    lg = ledger("Kimi-K2")
    assert round(main_total(lg) / 10**12) == 1
    assert truncated(lg["params_active"], 0) == 32
    assert round(main_total(lg) / 10**10) / 100 == 1.03  # not the report's 1.04


def test_mixtral():
    """Mistral AI, "Mixtral of experts" (mistral.ai/news/mixtral-of-experts): "Mixtral has 46.7B total
    parameters but only uses 12.9B parameters per token"; "Cheaper, better, faster, stronger"
    (mistral.ai/news/mixtral-8x22b): "39B active parameters out of 141B"."""
    m7 = ledger("Mixtral-8x7B")
    assert rounded(main_total(m7), 1) == 46.7 and rounded(m7["params_active"], 1) == 12.9
    m22 = ledger("Mixtral-8x22B")
    assert rounded(main_total(m22), 0) == 141 and rounded(m22["params_active"], 0) == 39


@pytest.mark.parametrize(
    "name, mlp, attention, embed, active, total",
    [
        ("gpt-oss-120b", 114.71, 0.96, 1.16, 5.13, 116.83),
        ("gpt-oss-20b", 19.12, 0.64, 1.16, 3.61, 20.91),
    ],
)
def test_gpt_oss_table_1(name, mlp, attention, embed, active, total):
    """gpt-oss model card (arXiv 2508.10925), Table 1 "Model parameter counts": MLP, Attention,
    Embed + Unembed, Active and Total, each in billions to two places.  "Unembedding parameters are
    counted towards active, but not embeddings."  The biases (attention, router, experts) and the 64
    sinks per layer are needed for these to hold."""
    lg = ledger(name)
    assert rounded(lg["arch_mlp_params"], 2) == mlp
    assert rounded(lg["arch_attention_params"], 2) == attention
    assert rounded(lg["arch_embedding_params"], 2) == embed
    assert rounded(lg["params_active"] - lg["embedding_params"], 2) == active
    assert rounded(main_total(lg), 2) == total


def test_gemma_3_27b_table_1():
    """Gemma 3 technical report (arXiv 2503.19786), Table 1: 27B: vision encoder 417M, embedding 1,416M,
    non-embedding 25,600M.  The catalogue counts the text model: non-embedding to the million.  The
    1,416M embedding is the 262,208 × 5,376 table with the multimodal projector
    (Gemma3MultiModalProjector: mm_input_projection_weight 1,152 × 5,376 and mm_soft_emb_norm 1,152,
    transformers gemma3/modeling_gemma3.py), which ledger-report does not count; the vision tower is
    not counted either."""
    lg = ledger("Gemma-3-27B")
    assert round(non_embedding(lg) / 10**6) == 25_600
    vision_h = json.loads((CONFIGS / FILES["Gemma-3-27B"]).read_text())["vision_config"][
        "hidden_size"
    ]
    projector = vision_h * lg["hidden"] + vision_h
    assert round((lg["arch_embedding_params"] + projector) / 10**6) == 1_416
    assert rounded(main_total(lg), 0) == 27


def test_llama_31_headline_sizes():
    """Meta, "The Llama 3 Herd of Models" (arXiv 2407.21783): 8B, 70B and 405B, each the count truncated
    to the billion (8.03, 70.55, 405.85)."""
    assert [
        truncated(main_total(ledger(n)), 0)
        for n in ("Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.1-405B")
    ] == [8, 70, 405]


# ---- model= rows, config.json rows and typed-out rows -----------------------------------------------


def _csv(path: Path, rows: list[dict]) -> None:
    cols = sorted({k for r in rows for k in r}, key=lambda c: (c != "name", c))
    lines = [",".join(cols)] + [",".join(str(r.get(c, "")) for c in cols) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _cell(v):
    return "true" if v is True else "false" if v is False else v


@pytest.mark.parametrize("name", list(FILES))
def test_by_name_by_config_json_and_typed_out_agree(name, tmp_path):
    """A row by model=, a row naming the config.json (relative to the CSV's folder) and a row with
    the same architecture typed out give the same figures, pipeline stages included."""
    (tmp_path / "configs").mkdir()
    shutil.copy(CONFIGS / FILES[name], tmp_path / "configs" / "config.json")
    job = {
        "seq_len": 4096,
        "dp": 2,
        "pp": 2,
        "micro_batch": 1,
        "global_batch": 64,
        "tokens": "1B",
        "days": 10,
    }
    typed = {k: _cell(v) for k, v in MODELS[name].columns.items()}
    rows = [
        {"name": "by-name", "model": name, **job},
        {"name": "by-file", "model": "configs/config.json", **job},
        {"name": "typed", **typed, **job},
    ]
    _csv(tmp_path / "rows.csv", rows)
    a, b, c = (compute(x) for x in read_configs(tmp_path / "rows.csv"))
    skip = {"note_model", "note_model_zh", "note_model_shown"}  # the note naming the model cell
    for key in a.model.registry.keys():
        if key not in skip:
            assert a[key] == b[key] == c[key], key
    assert a.config.origin("layers") == f"model {name}"
    assert b.config.origin("layers") == "config.json configs/config.json"
    assert c.config.origin("layers") == "row"


def test_a_column_the_row_gives_wins_and_the_json_says_where_each_came_from(tmp_path):
    """model=Qwen3-8B with layers=40: 40 layers; the JSON's inputs_from names the model for the
    filled columns and "row" for the typed ones."""
    from ledger_report.render.document import config_document

    lg = compute(
        config_from_mapping({"name": "x", "model": "Qwen3-8B", "layers": 40, "seq_len": 4096})
    )
    assert lg["layers"] == 40
    doc = config_document(lg)
    assert doc["inputs_from"]["layers"] == "row"
    assert doc["inputs_from"]["hidden"] == "model Qwen3-8B"
    assert doc["inputs"]["hidden"] == 4096
    assert lg["params_total"] > 8_190_735_360


def test_unknown_model_name_names_the_cell():
    """An unknown name is an input error at the row's model cell, with the nearest name."""
    with pytest.raises(InputError) as err:
        config_from_mapping({"name": "x", "model": "Qwen4-8B"})
    p = err.value.problems[0]
    assert p.column == "model" and "Qwen3-8B" in p.found


# ---- config.json the reader does not understand ----------------------------------------------------


def _cli_calc(tmp_path: Path, cfg: dict):
    (tmp_path / "c.json").write_text(json.dumps(cfg), encoding="utf-8")
    (tmp_path / "rows.csv").write_text("name,model,seq_len\nx,c.json,4096\n", encoding="utf-8")
    return CliRunner().invoke(main, ["calc", str(tmp_path / "rows.csv")])


def test_cli_unknown_model_type_exits_1_naming_it(tmp_path):
    """A config.json of an architecture ledger-report does not count: exit 1, the message names its
    model_type and the row's model cell, no traceback."""
    cfg = json.loads((CONFIGS / "Llama-3.1-8B.json").read_text())
    cfg["model_type"] = "falcon_h1"
    r = _cli_calc(tmp_path, cfg)
    assert r.exit_code == 1
    assert (
        'model_type "falcon_h1"' in r.output
        and 'column "model"' in r.output
        and "line 2" in r.output
    )
    assert "Traceback" not in r.output


def test_cli_unknown_keys_exit_1_naming_them(tmp_path):
    """Keys the reader does not know are named, not guessed at (they may change the count)."""
    cfg = json.loads((CONFIGS / "Qwen3-8B.json").read_text())
    cfg["num_experts"] = 64
    cfg["layer_scale_init"] = 0.1
    r = _cli_calc(tmp_path, cfg)
    assert r.exit_code == 1
    assert "unknown keys layer_scale_init, num_experts" in r.output


def test_values_it_does_not_model_are_named():
    """A known key with a value that changes the layout in a way not modelled is refused by name."""
    cfg = json.loads((CONFIGS / "Qwen3-30B-A3B.json").read_text())
    with pytest.raises(UnsupportedConfig, match="decoder_sparse_step = 2"):
        columns_from_config({**cfg, "decoder_sparse_step": 2})
    with pytest.raises(UnsupportedConfig, match="mlp_only_layers"):
        columns_from_config({**cfg, "mlp_only_layers": [0]})
    gpt = json.loads((CONFIGS / "gpt-oss-20b.json").read_text())
    n = gpt["num_hidden_layers"]
    with pytest.raises(
        UnsupportedConfig, match="layer_types"
    ):  # local first, global last: not one in k
        columns_from_config(
            {
                **gpt,
                "layer_types": ["sliding_attention"] * (n // 2) + ["full_attention"] * (n - n // 2),
            }
        )
    assert (
        columns_from_config({**gpt, "layer_types": ["full_attention"] * n})["sliding_every"] == 1
    )  # every layer global


@pytest.mark.parametrize(
    "key, column, value",
    [("num_hidden_layers", "layers", 1_000_000), ("hidden_size", "hidden", 10**30)],
)
def test_a_config_json_value_out_of_its_columns_range_is_refused(tmp_path, key, column, value):
    """A value a config.json fills meets the rule the column's cell meets (data/columns.csv):
    layers from 1 to 10,000, a whole number at most 10^16.  The example row naming Qwen3-30B-A3B's
    config.json, with the value changed: exit 1 at the row's model cell, naming the file, the key
    and the column, what the cell would expect (the CSV cell's own refusal of the same value) and
    the value found; no traceback."""
    header, *rows = (ROOT / "inputs" / "examples.csv").read_text(encoding="utf-8").splitlines()
    row = next(r for r in rows if ",configs/qwen3-30b-a3b.json," in r)
    (tmp_path / "configs").mkdir()
    cfg = json.loads((ROOT / "inputs" / "configs" / "qwen3-30b-a3b.json").read_text())
    (tmp_path / "configs" / "qwen3-30b-a3b.json").write_text(json.dumps({**cfg, key: value}))
    (tmp_path / "rows.csv").write_text(f"{header}\n{row}\n", encoding="utf-8")
    # the same value typed in the column's cell: its refusal states the limit
    (tmp_path / "typed.csv").write_text(f"name,{column}\nx,{value}\n", encoding="utf-8")
    with pytest.raises(InputError) as typed:
        read_configs(tmp_path / "typed.csv")
    (cell,) = typed.value.problems
    assert cell.column == column
    limit = {"layers": "from 1 to 10,000", "hidden": "at most 10^16"}[column]
    assert limit in cell.expected  # layers: 1..10000, hidden: no maximum (MAX_NUMBER 10^16)

    with pytest.raises(InputError) as err:
        read_configs(tmp_path / "rows.csv")
    (p,) = err.value.problems
    assert (p.row, p.column) == (2, "model")
    assert p.expected == f"{key!r} ({column}) {cell.expected}"
    assert p.found.startswith(str(value)) and p.found.endswith("(in configs/qwen3-30b-a3b.json)")

    r = CliRunner().invoke(main, ["calc", str(tmp_path / "rows.csv")])
    assert r.exit_code == 1
    assert 'rows.csv, line 2, column "model": expected' in r.output
    assert cell.expected in r.output and "configs/qwen3-30b-a3b.json" in r.output
    assert "Traceback" not in r.output and "params" not in r.output


def test_ignored_keys_do_not_change_the_count():
    """RoPE scaling, token ids and dropout are on the ignore list: changing them changes nothing."""
    cfg = json.loads((CONFIGS / "Llama-3.1-8B.json").read_text())
    changed = {
        **cfg,
        "rope_scaling": None,
        "bos_token_id": 1,
        "attention_dropout": 0.1,
        "max_position_embeddings": 8192,
    }
    assert columns_from_config(changed) == columns_from_config(cfg)


# ---- the new architecture columns ---------------------------------------------------------------------


def test_vocab_padding_as_megatron_pads():
    """Megatron-LM megatron/training/tokenizer/tokenizer.py _vocab_size_with_padding: the vocabulary
    grows one by one until it is a multiple of make_vocab_size_divisible_by × tp."""

    def megatron(orig, divisible_by, tp):
        after, multiple = orig, divisible_by * tp
        while after % multiple != 0:
            after += 1
        return after

    plain, padded = ledger("Qwen3-8B", tp=8), ledger("Qwen3-8B", tp=8, vocab_multiple=128)
    assert padded["padded_vocab"] == megatron(151_936, 128, 8)
    assert (
        padded["params_total"] - plain["params_total"]
        == 2 * (megatron(151_936, 128, 8) - 151_936) * 4096
    )
    assert plain["padded_vocab"] == 151_936  # empty: unpadded, as before


def test_mtp_and_first_dense_layers_on_the_pipeline_stages():
    """Megatron-LM places the MTP modules on the last pipeline stage (megatron/core/transformer/
    multi_token_prediction.py), which then builds its own embedding (megatron/core/models/gpt/
    gpt_model.py: the embedding exists where pre_process or mtp_process).  With pp = 2 the two stages
    hold every parameter once, plus that embedding copy; DeepSeek-V3's three dense layers are on the
    first stage (first_k_dense_replace, DeepseekV3DecoderLayer)."""
    lg = ledger("DeepSeek-V3", pp=2)
    assert lg["first_stage_moe_layers"] == 31 - 3 and lg["last_stage_moe_layers"] == 30
    both = lg["arch_first_stage_dense"] + lg["arch_last_stage_dense"]
    assert both == lg["arch_dense_params"] + lg["embedding_params"]
    assert lg["first_stage_expert_params"] + lg["last_stage_expert_params"] == pytest.approx(
        lg["params_expert"]
    )


def test_hybrid_layers_on_the_pipeline_stages():
    """Qwen3-Next (Hybrid Layout "12 * (3 * (Gated DeltaNet -> MoE) -> 1 * (Gated Attention -> MoE))",
    model card): with pp = 2 each stage holds 6 softmax-attention and 18 Gated DeltaNet layers."""
    lg = ledger("Qwen3-Next-80B-A3B", pp=2)
    assert lg["first_stage_attention_layers"] == lg["last_stage_attention_layers"] == 6
    per_stage = (
        24 * lg["norm_params_per_layer"]
        + 6 * lg["attn_params_per_layer"]
        + 18 * lg["linear_attn_params_per_layer"]
        + 24 * lg["moe_mlp_dense_params"]
    )
    assert lg["arch_first_stage_dense"] == per_stage + lg["embedding_params"]


def test_sliding_window_flops():
    """A causal window no shorter than the sequence is plain causal attention; far longer sequences
    cost a local layer about the window per token (gpt-oss: window 128 on every other layer)."""
    short = ledger("gpt-oss-20b", seq_len=128)
    no_window = compute(
        config_from_mapping(
            {
                "name": "x",
                **MODELS["gpt-oss-20b"].columns,
                "sliding_window": None,
                "sliding_every": None,
                "seq_len": 128,
            }
        )
    )
    assert short["attention_flops_per_token"] == no_window["attention_flops_per_token"]
    a, b = ledger("gpt-oss-20b", seq_len=65_536), ledger("gpt-oss-20b", seq_len=131_072)
    per_key = a["attention_flops_per_key"]

    def local(lg):
        return (
            lg["attention_flops_per_token"]
            - per_key * lg["global_attention_layers"] * lg["seq_len"]
        )  # noqa: E731

    assert local(a) / (per_key * 12 * 2) == pytest.approx(128, rel=0.01)
    assert local(b) == pytest.approx(local(a), rel=0.001)


def test_linear_attention_flops_do_not_grow_with_the_sequence():
    """Gated DeltaNet's recurrence costs the same per token whatever the sequence (Yang et al. 2024);
    the softmax layers' cost grows with it."""
    a, b = ledger("Qwen3-Next-80B-A3B", seq_len=4096), ledger("Qwen3-Next-80B-A3B", seq_len=65_536)
    assert a["linear_attention_flops_per_token"] == b["linear_attention_flops_per_token"] > 0
    assert b["attention_flops_per_token"] == 16 * a["attention_flops_per_token"]


def test_mtp_adds_its_flops():
    """DeepSeek-V3 technical report §2.2: each MTP module runs one more transformer layer and the
    shared output head per token: at least 6 × its active parameters more per token."""
    with_mtp, without = ledger("DeepSeek-V3"), ledger("DeepSeek-V3", mtp_layers=0)
    assert with_mtp["params_active"] == without["params_active"]
    assert with_mtp["flops_per_token"] - without["flops_per_token"] > 6 * (2 * 7168 * 7168)


@pytest.mark.parametrize(
    "row, column",
    [
        ({"kv_lora_rank": 512, "qk_rope_head_dim": 64}, "kv_lora_rank"),
        ({"q_lora_rank": 1536}, "q_lora_rank"),
        ({"sliding_every": 2}, "sliding_every"),
        ({"linear_key_heads": 16}, "linear_key_heads"),
        ({"first_dense_layers": 40}, "first_dense_layers"),
    ],
)
def test_the_new_columns_rules(row, column):
    """Partial MLA or Gated DeltaNet columns, q_lora_rank or sliding_every alone, more dense layers
    than layers: the row is refused at the column (definitions/constraints.py, read by the reader)."""
    base = {
        "name": "x",
        "layers": 32,
        "hidden": 4096,
        "heads": 32,
        "ffn_hidden": 11008,
        "vocab": 32000,
    }
    with pytest.raises(InputError) as err:
        config_from_mapping({**base, **row})
    assert column in [p.column for p in err.value.problems]


@pytest.mark.slow
def test_every_catalogue_model_recalculates_in_libreoffice():
    """The workbook's live formulas for each catalogue model (MLA, Gated DeltaNet, sliding windows,
    MTP, biases, padding), recalculated by LibreOffice from poisoned cached values, equal the engine,
    pipeline stages included (the method of tests/test_workbook.py)."""
    from test_workbook import LEDGERS, _ledger_mismatches, _load, _poisoned, _recalc

    from ledger_report.render.workbook import render_xlsx

    leds = [
        ledger(
            n,
            pp=2,
            dp=4,
            ep=2 if MODELS[n].columns.get("experts") else 1,
            tp=2 if n != "Qwen2.5-7B" else 1,
            vocab_multiple=128,
            global_batch=64,
            tokens="10B",
            days=30,
            recompute="selective",
        )
        for n in MODELS
    ]
    out = _load(_recalc(_poisoned(render_xlsx(leds))), data_only=True)
    assert _ledger_mismatches(out[LEDGERS], leds) == []


@pytest.mark.parametrize(
    "spec, found",
    [
        ("missing/config.json", "no file"),
        ("/dev/zero", "not a regular file"),
        ("configs/", "not a regular file"),
        ("bad.json", "a JSON error at line 1"),
    ],
)
def test_a_model_path_that_is_no_config_json(tmp_path, spec, found):
    """A model cell naming a missing file, a device, a folder or a file that is not JSON: an input
    error at that cell, the file never read past a bound."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "bad.json").write_text("{model_type: llama", encoding="utf-8")
    (tmp_path / "rows.csv").write_text(f"name,model\nx,{spec}\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_configs(tmp_path / "rows.csv")
    p = err.value.problems[0]
    assert (p.column, p.row) == ("model", 2) and found in p.found


def test_sliding_window_scores_without_flash_attention():
    """Without flash attention a layer keeps its softmax scores (Korthikanti et al. 2022, Table 2:
    5·heads·s²·b bytes); a sliding-window layer scores each query against at most the window
    (Longformer's banded attention), so a window as long as the sequence changes nothing and a
    short one keeps far less."""
    cols = {
        k: v
        for k, v in MODELS["gpt-oss-20b"].columns.items()
        if k not in ("sliding_window", "sliding_every")
    }

    def act(seq, **more):
        return compute(
            config_from_mapping(
                {"name": "x", **cols, "seq_len": seq, "flash_attention": False, **more}
            )
        )["activation_bytes_per_rank"]

    assert act(128, sliding_window=128, sliding_every=2) == act(128)
    assert act(8192, sliding_window=128, sliding_every=2) < 0.6 * act(8192)


def test_a_missing_config_json_names_the_folder_it_was_looked_for_in(tmp_path, monkeypatch):
    """A relative path in a model cell is read from the input file's folder: the refusal names
    the whole path it looked at (the file's folder joined with the cell), so a user whose
    config.json lies beside the working directory instead sees where it was expected."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sheets").mkdir()
    (tmp_path / "sheets" / "rows.csv").write_text("name,model\nx,cfg/x.json\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_configs("sheets/rows.csv")
    [p] = err.value.problems
    assert f"no file {tmp_path / 'sheets' / 'cfg' / 'x.json'}" in p.found
    assert "a relative path is read from the input file's folder" in p.expected
