"""The built-in catalogues: accelerators (``ledger_report/data/gpus.csv``) and models (``models.json``).

Standard library and the column table (``config``), so the engine can import it; it reads its files
through ``data.text``, so it works from an installed wheel.  One row per accelerator, in file order; every figure names its vendor document in
the ``source`` column.

Units, as the column names say:

* ``hbm_gb``: device memory a training process can use, in GB = 10^9 bytes: the device total
  CUDA (ROCm) reports, as PyTorch prints it in its out-of-memory message ("total capacity of
  79.11 GiB" on an H100 80GB).  The vendor's "80 GB" is 80 GiB of HBM, of which the driver keeps
  some; 79.11 GiB = 84.94 GB.  What the job itself holds (CUDA context, NCCL) is in the peak.
* ``hbm_nominal_gb``: the vendor's figure, as the part is sold (for display).
* ``peak_tflops``: dense BF16 tensor TFLOP/s, no structured sparsity (vendor "with sparsity"
  figures halved).
* ``hbm_tb_s``: device-memory bandwidth in TB/s (10^12 bytes/s).
* ``host_link_gb_s``: CPU-to-GPU link, GB/s per direction (PCIe Gen5 x16 = 64, Gen4 x16 = 32,
  NVLink-C2C = 900 for GB200).
* ``interconnect_gb_s``: GPU-to-GPU scale-up bandwidth per GPU in GB/s, total of both directions
  as vendors quote it (NVLink 4 = 900, Infinity Fabric = 896, Gaudi 3 24x200 GbE = 1,200).
* ``gpus_per_node``, ``host_gb``: GPUs and host (CPU) memory in GB per node of the vendor's
  reference system (DGX/HGX/platform; for GB200 one compute tray = two superchips).
* ``fp8_tflops``: dense FP8 tensor TFLOP/s (no sparsity); empty where the part has no FP8.
* ``network_gb_s``: scale-out (InfiniBand/RoCE) bandwidth per GPU, GB/s per direction (8 x 400 Gb/s
  per DGX H100 node = 50 per GPU).
* ``nvme_gb_s``, ``nvme_tb``: NVMe bandwidth per node for a step that reads and writes the same
  bytes (GB/s), and NVMe capacity per node (TB).
* ``host_mem_gb_s``: host (CPU) memory bandwidth per node, GB/s (theoretical: channels x rate).
* ``gemm_efficiency``, ``fp8_gemm_efficiency``: the measured maximum achievable matmul FLOP/s ÷
  the dense BF16 / FP8 peak (a kernel benchmark: stas00/ml-engineering's 'Maximum Achievable Matmul
  FLOPS' table, or the row's source); the step-time model applies each GEMM's shape and the share
  training sustains (definitions/time.py); empty FP8 where there is no FP8.
* ``sms``: streaming multiprocessors, the units a GEMM's tiles are scheduled on in waves (tile and
  wave quantization in definitions/time.py); empty where no count is published.

The figures the vendor does not publish for its reference system (NVMe bandwidth, a PCIe server's
network) are stated as assumptions in the row's source.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, fields

from .config import BOOL, COLUMN_BY_NAME, INT, MODEL_FILLS
from .data import text as data_text


@dataclass(frozen=True)
class Gpu:
    """One accelerator of the catalogue; field names and units as the CSV columns."""

    name: str
    hbm_gb: float
    hbm_nominal_gb: float
    peak_tflops: float
    hbm_tb_s: float
    host_link_gb_s: float
    interconnect: str
    interconnect_gb_s: float
    gpus_per_node: int
    host_gb: float
    fp8_tflops: float | None
    network_gb_s: float
    nvme_gb_s: float
    nvme_tb: float
    host_mem_gb_s: float
    gemm_efficiency: float
    fp8_gemm_efficiency: float | None
    sms: int | None
    source: str


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Gpu))
_TYPES = {f.name: f.type for f in fields(Gpu)}  # "float", "int | None", ...: how a cell reads
_FRACTION_COLUMNS = ("gemm_efficiency", "fp8_gemm_efficiency")  # at most 1
_DATA_FILE = "gpus.csv"


def normalise_gpu_name(name: str) -> str:
    """The matching key: case-folded, with whitespace, underscores and hyphens removed."""
    return "".join(ch for ch in name.casefold() if not (ch.isspace() or ch in "_-"))


def _positive(text: str, column: str, where: str, whole: bool = False) -> float:
    noun = "whole number" if whole else "number"
    try:
        value = int(text) if whole else float(text)
    except ValueError:
        raise ValueError(f"{where}: column {column!r} expected a {noun}; found {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{where}: column {column!r} expected a positive {noun}; found {text!r}")
    return value


def _add(entries: dict, entry: Gpu | ModelEntry, where: str) -> None:
    """``entry`` under its name, unless its matching key is another entry's."""
    key = normalise_gpu_name(entry.name)
    if (clash := next((n for n in entries if normalise_gpu_name(n) == key), None)) is not None:
        raise ValueError(f"{where}: name {entry.name!r} clashes with {clash!r}")
    entries[entry.name] = entry


def parse_catalogue(text: str, origin: str = _DATA_FILE) -> dict[str, Gpu]:
    """Parse catalogue CSV text into ``{name: Gpu}`` in file order; a malformed file raises ValueError."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise ValueError(f"{origin}: empty file") from None
    if tuple(header) != COLUMNS:
        raise ValueError(f"{origin}: header expected {','.join(COLUMNS)}; found {','.join(header)}")
    gpus: dict[str, Gpu] = {}
    for line_no, row in enumerate(reader, start=2):
        if not any(cell.strip() for cell in row):
            continue
        where = f"{origin} line {line_no}"
        if len(row) != len(COLUMNS):
            raise ValueError(f"{where}: expected {len(COLUMNS)} fields; found {len(row)}")
        values: dict[str, object] = {}
        for column, text in zip(COLUMNS, (cell.strip() for cell in row)):
            kind = _TYPES[column]
            if kind.endswith(" | None") and not text:  # FP8 figures, SM counts: may be empty
                values[column] = None
            elif kind.startswith(("float", "int")):
                values[column] = _positive(text, column, where, whole=kind.startswith("int"))
            elif not text:
                raise ValueError(f"{where}: column {column!r} expected text; found an empty cell")
            else:
                values[column] = text
            if column in _FRACTION_COLUMNS and (values[column] or 0) > 1:
                raise ValueError(
                    f"{where}: column {column!r} expected a fraction at most 1; found {text!r}"
                )
        _add(gpus, Gpu(**values), where)  # type: ignore[arg-type]
    if not gpus:
        raise ValueError(f"{origin}: no rows")
    return gpus


GPUS: dict[str, Gpu] = parse_catalogue(data_text(_DATA_FILE))
GPU_NAMES: tuple[str, ...] = tuple(GPUS)
_BY_KEY: dict[str, Gpu] = {normalise_gpu_name(g.name): g for g in GPUS.values()}


# A GPU outside the catalogue is described by the row: hbm_gb and peak_tflops are required; what the
# row leaves empty comes from this profile, a plain 8-GPU PCIe server (stated on the page as such).
USER_DESCRIBED = Gpu(
    name="user-described",
    hbm_gb=0.0,
    hbm_nominal_gb=0.0,
    peak_tflops=0.0,
    hbm_tb_s=2.0,
    host_link_gb_s=32.0,
    interconnect="PCIe",
    interconnect_gb_s=64.0,
    gpus_per_node=8,
    host_gb=1024.0,
    fp8_tflops=None,
    network_gb_s=12.5,
    nvme_gb_s=6.7,
    nvme_tb=15.0,
    host_mem_gb_s=300.0,
    gemm_efficiency=0.5,
    fp8_gemm_efficiency=None,
    sms=None,
    source="a user-described accelerator: the row gives hbm_gb and peak_tflops; the rest is a plain 8-GPU PCIe server "
    "(2 TB/s HBM, PCIe Gen4 x16 = 32 GB/s per direction host link and 64 GB/s between GPUs, 100 Gb/s = 12.5 GB/s network "
    "per GPU, 1 TB host memory, half the peak on large GEMMs, no FP8); the row's hbm_gb_s, nvlink_gb_s, network_gb_s, "
    "gpus_per_node and host_gb columns replace these",
)


def find_gpu(name: str) -> Gpu | None:
    """The catalogue entry for ``name`` ignoring case, spaces, underscores and hyphens, else None."""
    return _find(_BY_KEY, name)


def _find(by_key: dict, name: str):
    key = normalise_gpu_name(name) if isinstance(name, str) else ""
    return by_key.get(key) if key else None


# ---------------------------------------------------------------------------------------------
# The model catalogue (``ledger_report/data/models.json``): architectures by name.


@dataclass(frozen=True)
class ModelEntry:
    """One model of the catalogue: the architecture columns it fills and where they come from."""

    name: str
    hf_repo: str  # the Hugging Face repository whose config.json the columns follow
    model_type: str
    source: str  # the config.json the values were read from
    note: str
    columns: dict  # input column -> typed value (only the architecture columns)


_MODELS_FILE = "models.json"
_MODEL_FIELDS = tuple(f.name for f in fields(ModelEntry))


def parse_models(text: str, origin: str = _MODELS_FILE) -> dict[str, ModelEntry]:
    """Parse catalogue JSON into ``{name: ModelEntry}`` in file order; a malformed file raises ValueError."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{origin}: not JSON ({exc})") from None
    rows = doc.get("models") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ValueError(f'{origin}: expected {{"models": [...]}} with at least one model')
    models: dict[str, ModelEntry] = {}
    for i, row in enumerate(rows, 1):
        where = f"{origin} model {i}"
        if not isinstance(row, dict) or set(row) != set(_MODEL_FIELDS):
            raise ValueError(f"{where}: expected the fields {', '.join(_MODEL_FIELDS)}")
        for f in _MODEL_FIELDS[:4]:
            if not isinstance(row[f], str) or not row[f].strip():
                raise ValueError(f"{where}: field {f!r} expected text; found {row[f]!r}")
        cols = row["columns"]
        if not isinstance(cols, dict):
            raise ValueError(f"{where}: columns expected an object")
        for col, v in cols.items():
            if col not in MODEL_FILLS:
                raise ValueError(f"{where}: {col!r} is not an architecture column")
            spec = COLUMN_BY_NAME[col]
            whole = spec.kind == INT and type(v) is int  # JSON's whole numbers, not true/false
            ok = isinstance(v, bool) if spec.kind == BOOL else whole
            if not ok or (whole and spec.minimum is not None and v < spec.minimum):
                raise ValueError(f"{where}: column {col!r} has the value {v!r}")
        _add(models, ModelEntry(**row), where)
    return models


MODELS: dict[str, ModelEntry] = parse_models(data_text(_MODELS_FILE))
MODEL_NAMES: tuple[str, ...] = tuple(MODELS)
_MODEL_BY_KEY: dict[str, ModelEntry] = {normalise_gpu_name(m.name): m for m in MODELS.values()}


def find_model(name: str) -> ModelEntry | None:
    """The catalogue entry for ``name`` ignoring case, spaces, underscores and hyphens, else None."""
    return _find(_MODEL_BY_KEY, name)
