"""The input schema (the columns of docs/columns.md) and the frozen row type.

One table, ``COLUMNS`` (``data/columns.csv``), drives the reader, the workbook's Inputs sheet (header, help text,
dropdowns), the template command and the README's column table.  A ``Config`` holds what the
user gave, typed, with ``None`` for an empty cell: defaults are not filled in here but by the
model's resolution definitions, so that the workbook resolves them with live formulas too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from . import data
from .model.conventions import convention_names

# Kinds of column.  Each reader turns a cell into the Python type named here.
TEXT = "text"  # str, kept verbatim
COUNT = "count"  # int; accepts 8,190,735,360 / 8.19e9 / 35B / 5T / 350M / 7K
INT = "int"  # int, plain
FLOAT = "float"  # float
BOOL = "bool"  # True/False; accepts true/false/yes/no/1/0
ENUM = "enum"  # one of ``choices`` (canonical lower-case spelling)

# Spellings people type for the canonical names (matched after lower-casing and stripping):
# each canonical name with its other spellings.
ALIASES = {
    spelling: name
    for name, spellings in {
        "bf16": "bfloat16",
        "fp32": "float32 float",
        "fp16": "float16 half",
        "fp8": "fp8_e4m3 float8_e4m3fn e4m3",
        "int8": "uint8 8bit",
        "adam8bit": "adam-8bit adam_8bit paged_adamw_8bit adamw8bit",
        "momentum": "sgd-momentum",
        "host": "cpu dram",
        "hbm": "gpu",
        "rmsnorm": "rms",
        "layernorm": "ln",
        "generic": "fsdp",
        "megatron": "megatron-lm megatron-core mcore",
        "deepspeed": "ds",
    }.items()
    for spelling in spellings.split()
}


LANGS = ("en", "zh")  # the languages of the help text, the workbook and the handout (--lang)

MAX_TEXT_CHARS = 32_767  # a spreadsheet cell's limit (Excel; openpyxl and XlsxWriter keep to it)


@dataclass(frozen=True)
class Column:
    name: str
    kind: str
    help_en: str
    help_zh: str
    default: str = ""  # how the default is described to people (the model computes it)
    unit: str = ""
    choices: tuple[str, ...] = ()
    minimum: float | None = None  # inclusive unless ``min_exclusive``
    min_exclusive: bool = False
    maximum: float | None = None
    required: bool = False
    group: str = ""  # section of the template / handout
    # A fraction that may be typed as a percent ("40%"); 1 < x <= 100 typed bare gets "did you
    # mean x%?".
    percent: bool = False
    # Where an ENUM column's names come from instead of ``choices``: "gpus", the accelerator
    # catalogue (``ledger-report gpus``), matched by its loose name rules.
    catalogue: str = ""
    # The longest text a TEXT column takes, in UTF-16 code units as Excel counts them (an emoji
    # is two): a cell's limit, or less where a page shows the text whole.
    max_chars: int = MAX_TEXT_CHARS
    # One of its group's columns that a row gives all together or not at all (see ``together``).
    together: bool = False


def _number(text: str) -> float | None:
    return None if not text else int(text) if text.lstrip("-").isdigit() else float(text)


def _column(row: Mapping[str, str]) -> Column:
    flags = dict(f.partition("=")[::2] for f in row["flags"].split())
    choices = row["choices"]
    return Column(
        **{k: row[k] for k in ("name", "kind", "help_en", "help_zh", "default", "unit", "group")},
        choices=convention_names() if choices == "(conventions)" else tuple(choices.split()),
        **{f: f in flags for f in ("min_exclusive", "required", "percent", "together")},
        minimum=_number(row["minimum"]),
        maximum=_number(row["maximum"]),
        catalogue=flags.get("catalogue", ""),
        max_chars=int(row["max_chars"] or MAX_TEXT_CHARS),
    )


# The column table: ``ledger_report/data/columns.csv``, a row per column.  ``choices`` are the
# names an enum takes, space-separated ("(conventions)": the framework conventions'); ``flags``
# sets ``required``, ``percent``, ``min_exclusive``, ``together`` and ``catalogue=``; an empty
# ``max_chars`` is a cell's limit (``currency`` has 16: ISO 4217 codes are 3 letters, with room
# for "CNY (元)"); ``default_zh`` is how a default described in words reads in Chinese.
_COLUMN_ROWS = data.rows("columns.csv")
COLUMNS = tuple(_column(r) for r in _COLUMN_ROWS)
DEFAULT_ZH = {r["default"]: r["default_zh"] for r in _COLUMN_ROWS if r["default_zh"]}


def default_text(col: Column, lang: str) -> str:
    """A column's default as the reader's language says it."""
    return DEFAULT_ZH.get(col.default, col.default) if lang == "zh" else col.default


def together(group: str) -> tuple[str, ...]:
    """The columns of ``group`` flagged ``together``, in schema order: a row gives all of them or
    none (the architecture's, those that count the parameters, where params_total is empty)."""
    return tuple(c.name for c in COLUMNS if c.group == group and c.together)


COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
# The columns the reader treats apart: the label every row needs, unique in a file, and the
# model whose architecture fills the columns a row leaves empty.
NAME_COLUMN = "name"
MODEL_COLUMN = "model"
COLUMN_BY_NAME: Mapping[str, Column] = {c.name: c for c in COLUMNS}
# The columns a model fills: those of the architecture groups, but the model column itself.
_ARCH_GROUPS = ("arch", "mla", "moe", "hybrid")
MODEL_FILLS = tuple(c.name for c in COLUMNS if c.group in _ARCH_GROUPS and c.name != MODEL_COLUMN)

# Layers in a model, and in a stage: ten times the deepest model published (DeepSeek-V3 has 61,
# Llama-3.1-405B 126); the stage splits walk the layers.
MAX_LAYERS = COLUMN_BY_NAME["layers"].maximum
_NO_VALUES = dict.fromkeys(COLUMN_NAMES)  # every column empty, in schema order (copied per Config)

# ---------------------------------------------------------------------------------------------
# The names the ecosystem writes for the columns.  A header cell that is no column's name is
# looked up here (case-insensitive, "-" read as "_", a leading "--" dropped, and where a name
# has a section, also written "section.name" as in a TOML table or a JSON object).  The table is
# ``data/aliases.csv``: a row per name with its column, where it is defined (a key of
# ``ALIAS_SOURCES``), its section, ``bare`` = no where it is read only with its section, and a
# note.  Only names that mean exactly the column are there; names near a column that mean
# something else are in ``NOT_COLUMNS`` with the reason.
_MEGATRON = "NVIDIA/Megatron-LM@d98e8a6"
_DEEPSPEED = "deepspeedai/DeepSpeed@edaa722"
ALIAS_SOURCES: Mapping[str, str] = {
    "megatron_parallel": f"{_MEGATRON} megatron/core/model_parallel_config.py (ModelParallelConfig)",
    "megatron_model": f"{_MEGATRON} megatron/core/transformer/transformer_config.py (TransformerConfig)",
    "megatron_training": f"{_MEGATRON} megatron/training/config/training_config.py (TrainingConfig)",
    "megatron_arguments": f"{_MEGATRON} megatron/training/arguments.py",
    "deepspeed_constants": f"{_DEEPSPEED} deepspeed/runtime/constants.py",
    "deepspeed_zero": f"{_DEEPSPEED} deepspeed/runtime/zero/config.py (DeepSpeedZeroConfig)",
    "torchtitan": "pytorch/torchtitan@238fa99 torchtitan/config/job_config.py",
    "hugging_face": "huggingface/transformers configuration_<family>.py, as ledger_report/hf_config.py reads them",
    "common": "common shorthand",
}


@dataclass(frozen=True)
class Alias:
    name: str  # as the framework spells it (Megatron-LM: its --argument without the dashes)
    column: str
    source: str
    section: str = ""  # the table / object the name sits in ("parallelism", "zero_optimization")
    bare: bool = True  # also read without its section (False for words as plain as "mode")
    note: str = ""  # where the name means the column only in part of its uses


ALIAS_TABLE: tuple[Alias, ...] = tuple(
    Alias(**r | {"source": ALIAS_SOURCES[r["source"]], "bare": r["bare"] != "no"})
    for r in data.rows("aliases.csv")
)

# Names people write that no column means, with what to give instead (shown with the error).
NOT_COLUMNS: Mapping[str, str] = {
    "num_gpus": "the GPU count is dp × tp × pp × cp: give those",
    "world_size": "the GPU count is dp × tp × pp × cp: give those",
    "gpus": "the GPU count is dp × tp × pp × cp: give those; the accelerator is gpu",
    "nodes": "the GPU count is dp × tp × pp × cp and a node holds gpus_per_node of them",
    "num_nodes": "the GPU count is dp × tp × pp × cp and a node holds gpus_per_node of them",
    "batch_size": "give micro_batch (sequences a GPU runs at once) and global_batch (a step's)",
    "gradient_accumulation_steps": "give global_batch = micro_batch × dp × the accumulation steps",
    "data_parallel_replicate_degree": "dp is the replicate degree × the shard degree: give it",
    "padded_vocab_size": "give the tokenizer's vocab and the padding multiple in vocab_multiple",
    "train_iters": "give tokens = steps × global_batch × seq_len",
    "steps": "give tokens = steps × global_batch × seq_len",
    "use_distributed_optimizer": "Megatron-LM's distributed optimizer is zero = 1",
    "untie_embeddings_and_output_weights": "give tied_embeddings (false when untied)",
}


def header_key(text: str) -> str:
    """A header name as names are compared: case folded, "-" as "_", a leading "--" dropped."""
    return text.casefold().lstrip("-").replace("-", "_")


def _alias_keys() -> dict[str, Alias]:
    keys: dict[str, Alias] = {}
    for alias in ALIAS_TABLE:
        bare = alias.name if alias.bare else ""
        for name in (bare, f"{alias.section}.{alias.name}" if alias.section else ""):
            key = header_key(name)
            if key and key not in COLUMN_BY_NAME:
                keys[key] = alias
    return keys


ALIAS_BY_KEY: Mapping[str, Alias] = _alias_keys()


# Every float a row may hold, whatever its column: zero, or a magnitude within FLOAT_RANGE, so
# that every figure computed from the row stays a finite number that JSON, a workbook cell and the
# handout can hold (tests/test_columns.py evaluates rows at the corners).  Whole numbers are
# bounded by each column's maximum, else by 10^16 (inputs/cells.py MAX_NUMBER).
FLOAT_RANGE = (1e-6, 1e12)


@dataclass(frozen=True)
class Config:
    """One input row as the user gave it: typed values, ``None`` for an empty cell."""

    values: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""  # "inputs.csv line 4" / "inputs.xlsx Inputs!row 4", for messages
    # Columns filled from the row's ``model`` rather than typed in the row: column -> where from
    # ("model Qwen3-8B", "config.json configs/x.json").  A column not named here came from the row.
    origins: Mapping[str, str] = field(default_factory=dict)
    # What the reader warns of on this row ("layers: expected 32, as model Llama-3.1-8B has it;
    # found 80 ..."), each a sentence with its rule; the row is read all the same.
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        full = self.values
        if type(full) is not _FrozenDict:  # (a Config's own values are whole already)
            object.__setattr__(self, "values", full := row_values(full.items()))
        origins = self.origins and {
            k: v for k, v in self.origins.items() if full.get(k) is not None
        }
        object.__setattr__(self, "origins", _FrozenDict(origins) if origins else _NO_ORIGINS)

    @property
    def name(self) -> str:
        return str(self.values[NAME_COLUMN])

    def get(self, column: str) -> Any:
        return self.values[column]

    def replace(self, **changes: Any) -> "Config":
        kept = {k: v for k, v in self.origins.items() if k not in changes}
        return Config({**self.values, **changes}, self.source, kept, self.warnings)

    def __repr__(self) -> str:  # the cells the row has, not every column of the schema
        return f"<Config {self.name!r} ({self.source or 'no source'}): {self.given()!r}>"

    def given(self) -> dict[str, Any]:
        """The non-empty cells, in column order."""
        return {k: v for k, v in self.values.items() if v is not None}

    def origin(self, column: str) -> str:
        """Where a non-empty column's value came from: "row", or the model that filled it."""
        return self.origins.get(column, "row")

    def typed(self) -> dict[str, Any]:
        """The non-empty cells the row itself gave (not those its model filled), in column order."""
        return {k: v for k, v in self.given().items() if k not in self.origins}


def row_values(
    pairs: Iterable[tuple[str, Any]], base: Mapping[str, Any] | None = None
) -> Mapping[str, Any]:
    """Every column's value in schema order, from ``pairs`` and else ``base`` (``None`` where
    neither gives one): a Config's ``values``.  A key that is no column is refused."""
    full = _FrozenDict(_NO_VALUES if base is None else base)
    dict.update(full, pairs)
    if len(full) != len(COLUMN_NAMES):
        raise KeyError(f"unknown columns: {sorted(full.keys() - COLUMN_BY_NAME.keys())}")
    return full


class _FrozenDict(dict):
    """A dict that refuses changes once built (keeps ``Config`` hashable in spirit)."""

    def _refuse(self, *a, **k):  # pragma: no cover - trivial
        raise TypeError("Config values are frozen")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted((k, repr(v)) for k, v in self.items())))


_NO_ORIGINS = _FrozenDict()  # one, shared by the rows whose model filled nothing
