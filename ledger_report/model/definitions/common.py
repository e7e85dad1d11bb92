"""What every section of the definitions shares: named coefficients, sources, and the context
that carries each section's quantities to the next."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from ..expr import Col, IsBlank, Lookup, concat, default, drop_first, if_, maximum

# Named coefficients -------------------------------------------------------------------------
SECONDS_PER_DAY = 86400
BYTES_PER_GB = 10**9
FLOPS_PER_TFLOP = 10**12
TRAIN_FLOPS_PER_PARAM_TOKEN = 6  # 2 forward + 4 backward (Kaplan et al. 2020)
FULL_RECOMPUTE_SBH_BYTES = 2  # a layer's 16-bit input, 2·s·b·h bytes (Korthikanti Table 2)
ATTN_SCORE_BYTES_PER_ELEM = 5  # softmax out 2 + dropout mask 1 + dropout out 2 (Korthikanti)
CUDA_CONTEXT_BYTES = 500_000_000  # 300-500 MB per process (Fujii et al. 2024, arXiv 2411.06465)
NCCL_BYTES_PER_GROUP = 500_000_000  # ~0.5 GB per NCCL communicator (Fujii et al. 2024)

# Sources --------------------------------------------------------------------------------------
COLUMN = "input column (docs/columns.md)"
CATALOGUE = "GPU catalogue (ledger-report gpus; docs/columns.md)"
MEGATRON_PARAMS = (
    "Megatron-LM megatron/training/theoretical_memory_usage.py (no biases, unpadded vocabulary)"
)
KORTH = "Korthikanti et al. 2022, Table 2"
ZERO_PAPER = "Rajbhandari et al. 2020 (ZeRO), section 3: 2 + 2 + 12 bytes per parameter with Adam"
MOE35 = "docs/scenarios.md (35B MoE on 40 H20)"
QWEN8B = "docs/scenarios.md (Qwen3-8B, 100B tokens in 30 days)"
MOE5T = "docs/scenarios.md (5T MoE)"
FUJII = "Fujii et al. 2024 (arXiv 2411.06465)"


def doc(anchor: str) -> str:
    return f"docs/definitions.md#{anchor}"


STATES = (
    # key, location column, English, Chinese
    ("weights", "weights_at", "compute weights", "计算权重"),
    ("grads", "grads_at", "model gradients", "模型梯度"),
    ("main_grads", "grads_at", "main gradients", "主梯度"),
    ("master", "master_at", "master weights", "主权重"),
    ("m", "optimizer_at", "optimizer first moment m", "一阶矩 m"),
    ("v", "optimizer_at", "optimizer second moment v", "二阶矩 v"),
)
PARTS = (("dense", "dense", "非专家"), ("expert", "expert", "专家"))
# the counters a measured peak may be read on, in Chinese: PyTorch's allocated and reserved, the device (nvidia-smi)
COUNTER_ZH = {"allocated": "已分配", "reserved": "已预留", "device": "整卡"}


class Ctx(SimpleNamespace):
    """The quantities defined so far, by short name, for the sections that follow."""


def conv(r: Ctx, field: str):
    """A field of the row's framework convention (data/conventions.csv)."""
    return Lookup("convention", r.framework, field)


def or0(x):
    """``x``, or 0 where it is blank (an item that cannot be computed adds nothing)."""
    return if_(IsBlank(x), 0, x)


def sentence(template: str, *values):
    """``template`` with each ``{}`` filled by the next of ``values``, as the text expression
    concat(text, value, text, …) (empty texts left out)."""
    first, *texts = template.split("{}")
    parts = [first] if first else []
    for value, text in zip(values, texts, strict=True):
        parts += [value, text] if text else [value]
    return concat(*parts)


def switch(x, cases: dict):
    """``cases[v]`` where ``x`` is ``v``, as conditionals over the keys in order; the last case
    where ``x`` is none of the others."""
    (value, out), *rest = cases.items()
    return out if not rest else if_(x.eq(value), out, switch(x, dict(rest)))


def of_kinds(n_dense, n_moe, dense, moe, both=maximum):
    """``dense`` or ``moe`` by the kinds of layer there are (``n_dense``, ``n_moe`` of them), and
    ``both(dense, moe)`` where there are both."""
    return if_(n_moe.gt(0), if_(n_dense.gt(0), both(dense, moe), moe), dense)


def joined(items, sep: str):
    """The texts of ``items`` ((condition, parts of the text) pairs) whose condition holds, with
    ``sep`` between them."""
    texts = [if_(cond, concat(sep, *parts), "") for cond, parts in items]
    return drop_first(concat(*texts), len(sep))


def definer(reg, unit: str, source: str = ""):
    """``reg.define`` for a run of quantities that share a unit and a source: each names its key,
    expression and labels, and ``unit=`` or ``source=`` only where it differs."""

    def define(key: str, expr: Any, en: str, zh: str, *, unit: str = unit, source: str = source):
        return reg.define(key, expr, unit, en, zh, source)

    return define


def column_definer(reg, unit: str):
    """Input columns of ``unit`` (``unit=`` where one differs): each the row's cell ``key``, else
    ``value`` (None: no default), sourced to the column's documentation (and ``note``)."""

    def given(key: str, value: Any, en: str, zh: str, note: str = "", *, unit: str = unit):
        expr = Col(key) if value is None else default(key, value)
        return reg.define(key, expr, unit, en, zh, COLUMN + note)

    return given


def catalogue_definer(reg, gpu, unit: str, source: str = CATALOGUE):
    """Columns that default to the catalogue: each the row's cell ``key``, else the figure
    ``field`` (``key``) of the catalogue's GPU ``gpu``."""

    def listed(key: str, en: str, zh: str, field: str = "", *, unit: str = unit, source=source):
        expr = default(key, Lookup("gpu", gpu, field or key))
        return reg.define(key, expr, unit, en, zh, source)

    return listed
