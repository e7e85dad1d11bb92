"""Lookup tables the definitions read: dtype widths, moment widths, optimizers, the GPU catalogue.

The workbook writes each table to a lookup sheet and its formulas read them with INDEX/MATCH,
so a reviewer can see (and change) the width of bf16 in one place.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .conventions import CONVENTIONS

# Bytes per element of a stored tensor.  "none" = the state does not exist.
DTYPE_BYTES: dict[str, dict[str, Any]] = {
    dtype: {"bytes": width}
    for dtype, width in {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "none": 0}.items()
}

# 8-bit optimizer states are quantized block-wise with one fp32 absmax scale per block of
# 2,048 values (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization";
# bitsandbytes' default block size for optimizer states): 1 + 4/2048 bytes per value.
BLOCKWISE_SCALE_BYTES_PER_VALUE = 4 / 2048

MOMENT_BYTES: dict[str, dict[str, Any]] = {
    "fp32": {"bytes": 4},
    "bf16": {"bytes": 2},
    "fp8": {"bytes": 1},  # per-tensor scaled (TransformerEngine precision-aware optimizer)
    "int8": {"bytes": 1 + BLOCKWISE_SCALE_BYTES_PER_VALUE},
}

# has_m / has_v: the optimizer keeps a first / second moment per parameter; factored_v: the
# second moment is stored as row and column statistics (Adafactor, Shazeer & Stern 2018, with
# beta1 = None, its default); moment_dtype: the moment dtype when the row leaves it empty.
OPTIMIZERS: dict[str, dict[str, Any]] = {
    "adam": {"has_m": 1, "has_v": 1, "factored_v": 0, "moment_dtype": "fp32"},
    "adamw": {"has_m": 1, "has_v": 1, "factored_v": 0, "moment_dtype": "fp32"},
    "sgd": {"has_m": 0, "has_v": 0, "factored_v": 0, "moment_dtype": "fp32"},
    "momentum": {"has_m": 1, "has_v": 0, "factored_v": 0, "moment_dtype": "fp32"},
    "lion": {"has_m": 1, "has_v": 0, "factored_v": 0, "moment_dtype": "fp32"},
    "adafactor": {"has_m": 0, "has_v": 1, "factored_v": 1, "moment_dtype": "fp32"},
    "adam8bit": {"has_m": 1, "has_v": 1, "factored_v": 0, "moment_dtype": "int8"},
}

GPU_FIELDS = tuple(
    "hbm_gb peak_tflops gpus_per_node host_gb host_link_gb_s hbm_tb_s interconnect_gb_s fp8_tflops "
    "network_gb_s nvme_gb_s nvme_tb host_mem_gb_s gemm_efficiency fp8_gemm_efficiency sms".split()
)


# The lookup sheet of each table in the workbook, in sheet order.
TABLE_SHEETS = {
    "dtype": "Dtypes",
    "moment": "Moments",
    "optimizer": "Optimizers",
    "gpu": "GPUs",
    "convention": "Conventions",
}


@lru_cache(maxsize=1)
def tables() -> dict[str, dict[str, dict[str, Any]]]:
    """Every table by name; "gpu" is the catalogue and last the profile of a user-described GPU,
    with 0 for a field a part lacks (no FP8: 0 FP8 TFLOP/s and efficiency)."""
    from ..catalogue import GPUS, USER_DESCRIBED

    gpus = {
        g.name: {f: 0.0 if getattr(g, f) is None else getattr(g, f) for f in GPU_FIELDS}
        for g in (*GPUS.values(), USER_DESCRIBED)
    }
    return {
        "dtype": DTYPE_BYTES,
        "moment": MOMENT_BYTES,
        "optimizer": OPTIMIZERS,
        "gpu": gpus,
        "convention": {name: dict(row) for name, row in CONVENTIONS.items()},  # descriptions too
    }
