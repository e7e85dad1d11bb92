"""The framework conventions (ledger_report/data/conventions.csv, read by model/conventions.py)."""

import csv
from pathlib import Path

from ledger_report.model.conventions import CONVENTIONS, MEANINGS

TABLE = Path(__file__).resolve().parents[1] / "ledger_report" / "data" / "conventions.csv"


def test_every_field_has_a_generic_value_and_a_meaning():
    """The generic column is the value an empty cell of another convention takes, and the docs
    show each field's meaning: neither may be missing."""
    with TABLE.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["field"] for r in rows] == list(CONVENTIONS["generic"]) == list(MEANINGS)
    assert [r["field"] for r in rows if not r["generic"] or not r["meaning"]] == []


def test_an_empty_cell_is_the_generic_value_and_numbers_are_numbers():
    """The file's megatron column leaves zero0 empty: it reads as generic's 1, an integer (as the
    workbook's lookup sheet writes it); fsdp2 writes its own zero1, 0."""
    assert CONVENTIONS["megatron"]["zero0"] == 1 and type(CONVENTIONS["megatron"]["zero0"]) is int
    assert CONVENTIONS["fsdp2"]["zero1"] == 0
    assert type(CONVENTIONS["generic"]["cp_overlap"]) is float


def test_bucket_sizes_follow_the_frameworks_defaults():
    """The generic 2 × 25 MiB of torch DistributedDataParallel(bucket_cap_mb=25), as bucket_bytes'
    source states it; DeepSpeed zero/config.py reduce_bucket_size = 5e8 elements; Megatron-LM
    distributed_data_parallel_config.py bucket_size = max(40000000, 1000000 * dp_size)."""
    assert CONVENTIONS["generic"]["bucket_fixed_bytes"] == 2 * 25 * 2**20
    assert CONVENTIONS["deepspeed"]["bucket_elems"] == 500_000_000
    megatron = CONVENTIONS["megatron"]
    assert (megatron["dp_bucket_params"], megatron["dp_bucket_params_per_dp"]) == (40e6, 1e6)
