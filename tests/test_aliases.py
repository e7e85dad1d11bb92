"""The names the ecosystem writes for the columns (``config.ALIAS_TABLE``): each read as its
column, in a file and in a mapping, and "did you mean" never pointing at a column of another
meaning.

Where each name comes from is the table's ``source`` (framework, commit, file); the meanings were
read there: Megatron-LM's ``--tensor-model-parallel-size`` is ``ModelParallelConfig.
tensor_model_parallel_size`` (megatron/core/model_parallel_config.py), DeepSpeed's
``train_micro_batch_size_per_gpu`` is the micro-batch of one GPU (deepspeed/runtime/constants.py),
torchtitan's ``[parallelism] tensor_parallel_degree`` the TP degree (torchtitan/config/job_config.py),
Hugging Face's ``num_hidden_layers`` the layer count (the same keys hf_config.py reads)."""

from __future__ import annotations

import pytest
from files import write_csv

from ledger_report.config import ALIAS_TABLE, COLUMN_BY_NAME, NOT_COLUMNS, header_key
from ledger_report.errors import InputError
from ledger_report.inputs import configs_from_records, read_configs
from ledger_report.inputs.names import hint

# A value for each aliased column, with the columns its rules need beside it (a row naming topk
# needs experts, the MLA head sizes come together...): a value a reader that ignored the alias
# would leave empty.
SAMPLE = {
    "tp": 2, "pp": 2, "cp": 2, "ep": 1, "etp": 1, "dp": 4, "layers": 32, "hidden": 4096,
    "ffn_hidden": 14336, "heads": 32, "kv_heads": 8, "head_dim": 128, "norm": "layernorm",
    "qk_norm": True, "qkv_bias": True, "topk": 2, "moe_ffn_hidden": 1024, "shared_expert_ffn": 1024,
    "moe_every": 2, "mtp_layers": 1, "recompute": "full", "experts": 8, "glu": False,
    "vocab_multiple": 64, "seq_len": 4096, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "virtual_stages": 2, "pp_first_layers": 6, "pp_last_layers": 6, "micro_batch": 2,
    "global_batch": 512, "zero": 1, "reduce_bucket_elems": 500_000_000, "compile": True,
    "vocab": 128256, "tied_embeddings": True, "shared_experts": 2, "first_dense_layers": 1,
    "full_attention_every": 4, "linear_key_heads": 16, "linear_value_heads": 32,
    "linear_conv_kernel": 4, "days": 30.0, "overlap_grad_reduce": True, "moe_a2a_overlap": True,
}  # fmt: skip
MLA = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}
LINEAR = {
    "linear_key_heads": 16,
    "linear_value_heads": 32,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_conv_kernel": 4,
    "full_attention_every": 4,
}
BESIDE = {
    "topk": {"experts": 8},
    "experts": {"topk": 2},
    "qk_nope_head_dim": MLA,
    "qk_rope_head_dim": MLA,
    "pp_first_layers": {"pp": 4, "layers": 24},
    "pp_last_layers": {"pp": 4, "layers": 24},
    "virtual_stages": {"pp": 2},
    **{c: LINEAR for c in LINEAR},
}


def _row(header: str, column: str) -> dict:
    row = {"name": "a", "params_total": "7B", **BESIDE.get(column, {})}
    row.pop(column, None)
    row[header] = SAMPLE[column]
    return row


def _spellings(alias) -> list[str]:
    """The name as its framework writes it, and the other spellings people use for it."""
    names = [alias.section + "." + alias.name] if alias.section else []
    if alias.bare:
        names += [alias.name, alias.name.upper(), alias.name.replace("-", "_")]
        names += ["--" + alias.name] if "-" in alias.name else []
    return names


@pytest.mark.parametrize("alias", ALIAS_TABLE, ids=lambda a: f"{a.section}.{a.name}")
def test_every_alias_reads_as_its_column(alias):
    """Each spelling of each name in the table fills its column with the value given."""
    for header in _spellings(alias):
        config = configs_from_records([_row(header, alias.column)])[0]
        assert config.values[alias.column] == SAMPLE[alias.column], header


@pytest.mark.parametrize("alias", ALIAS_TABLE, ids=lambda a: f"{a.section}.{a.name}")
def test_an_alias_and_its_column_in_one_row_is_an_error(alias):
    """Two headers that mean the same column are refused, naming both (a typo must not
    silently pick one)."""
    header = _spellings(alias)[0]
    row = {**_row(header, alias.column), alias.column: SAMPLE[alias.column]}
    with pytest.raises(InputError) as err:
        configs_from_records([row])
    assert "each column once" in str(err.value) and f'both read as "{alias.column}"' in str(
        err.value
    )


def test_no_name_means_two_columns():
    """One name, one column: the same spelling in two frameworks (Megatron-LM's num-experts and
    Qwen's num_experts) must mean the same column."""
    seen: dict[str, str] = {}
    for alias in ALIAS_TABLE:
        key = header_key(alias.name)
        assert seen.setdefault(key, alias.column) == alias.column, alias
        assert alias.column in COLUMN_BY_NAME


def test_a_file_with_megatron_names_reads_and_names_them_in_errors(tmp_path):
    """A CSV with Megatron-LM's argument names: read as the columns; a bad cell under one is
    named as the user wrote it, with the column it means."""
    good = write_csv(
        tmp_path,
        "name,params_total,tensor-model-parallel-size,num_layers,global-batch-size,zero_stage\n"
        "a,7B,2,32,512,1\n",
    )
    config = read_configs(good)[0]
    assert (config.values["tp"], config.values["layers"], config.values["global_batch"]) == (
        2,
        32,
        512,
    )
    assert config.values["zero"] == 1
    bad = write_csv(tmp_path, "name,params_total,tensor-model-parallel-size\na,7B,two\n", "b.csv")
    with pytest.raises(InputError) as err:
        read_configs(bad)
    assert 'line 2, column "tensor-model-parallel-size" (tp): expected a whole number' in str(
        err.value
    )


@pytest.mark.parametrize(
    "written, meant",
    [
        ("data_parallel", "dp"),  # the walkthrough: it suggested sequence_parallel
        ("tensor_parallel", "tp"),
        ("pipeline_parallel", "pp"),
        ("num_layer", "layers"),  # a typo of an alias: never mtp_layers
        ("hidden_sizes", "hidden"),
        ("price", "price_per_gpu_hour"),
        ("params_totl", "params_total"),
        ("micro_batch_sz", "micro_batch"),
        ("mtp_num_layer", "mtp_layers"),
    ],
)
def test_did_you_mean_suggests_the_column_of_that_meaning(written, meant):
    assert hint(written) == f' (did you mean "{meant}"?)'


@pytest.mark.parametrize(
    "written, not_meant",
    [
        ("num_layer", "mtp_layers"),
        ("mtp_num_layer", "layers"),
        ("data_parallel", "sequence_parallel"),
        ("sequence_length_x", "sequence_parallel"),
        ("vocabulary_padding", "vocab_multiple"),
    ],
)
def test_did_you_mean_never_suggests_a_column_of_another_meaning(written, not_meant):
    assert f'"{not_meant}"' not in hint(written)


@pytest.mark.parametrize("name", sorted(NOT_COLUMNS))
def test_names_no_column_means_say_what_to_give(name):
    """num_gpus, gradient_accumulation_steps...: no column means them; the message says which
    columns carry that information instead of guessing a near name."""
    with pytest.raises(InputError) as err:
        configs_from_records([{"name": "a", "params_total": "7B", name: 8}])
    assert f"no column means that: {NOT_COLUMNS[name]}" in str(err.value)
