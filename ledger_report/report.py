"""The report spec: what a configuration's report shows, in order, by registry key.

Sections hold figures (one registry quantity each) or tables (lines of registry quantities).  The
JSON document, the terminal table, the workbook and the handout each walk this one spec; none keeps
a list of its own.  A figure's label, unit and source come from the registry; whether a figure or
a line is shown is itself a registry quantity (``show``), so the rule lives in the model too.

To add a figure to every output, add a ``Figure`` to a section here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .model.definitions import PARTS, REGISTRY, STATES
from .model.definitions.phases import PHASES
from .model.definitions.time import DIMS, TERM_KEYS
from .model.registry import Registry
from .model.tables import tables


@dataclass(frozen=True)
class Figure:
    key: str  # registry key
    json: str = ""  # name in the JSON section (default: the key)
    # registry BOOL key: the figure is shown (text, handout, print sheet) only where true
    show: str = ""
    formula: bool = False  # the handout prints its formula text with the numbers filled in
    expand: tuple[str, ...] = ()  # quantities whose definitions the formula text writes inline
    # (name, registry key): the figure is an object of these in JSON, a list on the page
    items: tuple[tuple[str, str], ...] = ()
    # registry TEXT key ("good", "bad" or "unknown"): how the reports colour the figure
    tone: str = ""
    # (English, Chinese) column heading where space is short (the handout's summary)
    short: tuple[str, str] = ()
    pages: bool = True  # False: in JSON only, the pages state it in other words (a verdict, a note)
    # registry TEXT key: what the pages show for a figure of ``items`` (a sentence of them)
    text: str = ""

    def __post_init__(self) -> None:
        if self.items and self.pages and not self.text:
            raise ValueError(
                f"figure {self.name!r}: a breakdown on the pages needs its text quantity (text=...)"
            )

    @property
    def name(self) -> str:
        return self.json or self.key

    @property
    def shown(self) -> str:
        """The quantity the pages show: the figure's own, or its breakdown's sentence."""
        return self.text or self.key


@dataclass(frozen=True)
class Section:
    key: str
    en: str
    zh: str
    figures: tuple[Figure, ...]
    # the JSON object the figures go into ("": the key); None: the configuration itself
    json: str | None = ""
    show: str = ""  # registry BOOL key: the whole section is shown only where true
    json_null_unless_shown: bool = False  # the JSON object is null where the section is not shown

    def __post_init__(self) -> None:
        object.__setattr__(self, "json", self.key if self.json == "" else self.json)


@dataclass(frozen=True)
class Cell:
    """One column of a table line: a registry key, a fixed value, or named registry keys (a
    breakdown, shown as a list and carried in JSON as an object)."""

    key: str = ""
    value: Any = None
    items: tuple[tuple[str, str], ...] = ()
    text: str = ""  # registry TEXT key: what the pages show for a breakdown (its sentence)

    def __post_init__(self) -> None:
        if self.items and not self.text:
            raise ValueError("a breakdown cell needs its text quantity (text=...)")


@dataclass(frozen=True)
class Line:
    id: str
    en: str
    zh: str
    cells: Mapping[str, Cell]
    show: str = ""  # registry BOOL key: the line exists for the row only where true
    formula: str = ""  # registry key whose formula text the handout prints on the line


@dataclass(frozen=True)
class TableColumn:
    name: str  # the JSON field
    en: str
    zh: str
    unit: str = ""  # a registry unit for formatting; "" takes the cell's quantity unit
    # a truth value's own words (true, false), keys of the renderers' word tables
    words: tuple[str, str] = ()


@dataclass(frozen=True)
class Bars:
    """A table drawn as one horizontal bar per line, stacked from the line's ``items`` cell."""

    items: str  # the column whose cells are the named breakdowns
    limit: str = ""  # registry key: a vertical line at this quantity (bytes)
    mark: str = ""  # registry TEXT key: the id of the line to mark
    peak: str = ""  # registry key: a tick on the marked line (bytes)
    # an assumption's key (``note_*``): printed with the chart where shown, not among the others
    note: str = ""


@dataclass(frozen=True)
class Table:
    key: str
    en: str
    zh: str
    columns: tuple[TableColumn, ...]
    lines: tuple[Line, ...]
    json: str = ""  # the JSON list the lines go into ("": the key)
    total: tuple[Figure, ...] = ()  # figures shown under the table (its totals)
    sources: bool = False  # the workbook's printed table gives each line's source (the registry's, of the line's ``formula``)
    bars: Bars | None = None  # the handout draws the table as bars

    def __post_init__(self) -> None:
        object.__setattr__(self, "json", self.json or self.key)


@dataclass(frozen=True)
class Series:
    """One series of a chart: the registry quantity plotted, per configuration (and, on a scatter
    chart, the quantity on the x axis)."""

    y: str
    x: str = ""


@dataclass(frozen=True)
class Chart:
    """A chart of the configurations side by side, drawn as its key says: a column each, the series
    stacked and ``line`` drawn over them ("memory"), or each series a point per configuration at its
    ``x`` ("budget")."""

    key: str
    en: str
    zh: str
    series: tuple[Series, ...]
    line: tuple[str, ...] = ()
    x_en: str = ""
    x_zh: str = ""
    y_en: str = ""
    y_zh: str = ""


@dataclass(frozen=True)
class Report:
    sections: tuple[Section | Table, ...]
    # the columns of the summary table (workbook Summary, handout summary)
    summary: tuple[Figure, ...]
    # registry TEXT keys of the assumption sentences (each with a ``_zh`` twin and ``_shown``)
    assumptions: tuple[str, ...]
    check: str = "check_message"  # registry TEXT key: the rules the row breaks (empty when it meets every rule)
    check_ok: str = "check_ok"  # registry BOOL key: the row meets every rule (no error)
    flag: str = "verdicts_bad"  # registry BOOL key: a verdict says no (the Summary colours the row)
    # "memory": per-rank memory by state (Summary); "budget": cost against days (Budget)
    charts: tuple[Chart, ...] = ()
    # The summary's order: by each of these registry values in turn (False before True, smaller
    # first, blank last; input order breaks ties); rows where ``flag`` is true are marked.
    rank: tuple[str, ...] = ("verdicts_bad", "cost", "gpus")
    # The figures a page shows first, in a strip under the verdicts (the handout), each with its
    # short heading: what a reviewer looks for before anything else.
    headline: tuple[Figure, ...] = ()

    def section(self, key: str) -> Section | Table:
        return next(s for s in self.sections if s.key == key)

    def summary_figures(self) -> list[Figure]:
        """The verdicts, which follow the summary's own figures (workbook Summary, handout)."""
        return list(self.section("verdicts").figures)

    def chart(self, key: str) -> Chart | None:
        return next((c for c in self.charts if c.key == key), None)


STATE_LINES = tuple(
    Line(
        id=f"{s}_{p}",
        en=f"{en} ({pen})",
        zh=f"{zh}（{pzh}）",
        cells={
            "state": Cell(value=s),
            "part": Cell(value=p),
            "dtype": Cell(f"{s}_dtype_label"),
            "bytes_per_param": Cell(f"{s}_bytes_per_param"),
            "sharded": Cell(f"{s}_{p}_sharded"),
            "shard_group": Cell(f"{s}_{p}_shard_group"),
            "params_on_rank": Cell(f"{s}_{p}_params_on_rank"),
            "bytes_per_rank": Cell(f"{s}_{p}_bytes"),
            "location": Cell(col),
        },
        show=f"{s}_{p}_shown",
        formula=f"{s}_{p}_bytes",
    )
    for s, col, en, zh in STATES
    for p, pen, pzh in PARTS
)

STATE_COLUMNS = (
    TableColumn("state", "state", "状态"),
    TableColumn("part", "part", "部分"),
    TableColumn("dtype", "dtype", "精度"),
    TableColumn("bytes_per_param", "B/param", "字节/参数"),
    TableColumn("sharded", "stored", "存储", words=("sharded", "whole")),
    TableColumn("shard_group", "group", "分片组"),
    TableColumn("params_on_rank", "params/rank", "每卡参数"),
    TableColumn("bytes_per_rank", "per rank", "每卡"),
    TableColumn("location", "where", "位置"),
)

# Items outside the state ledger: (item, registry key, registry key of "lives in the peak phase").
OUTSIDE = (
    ("activations", "activation_bytes_per_rank", "mem_activations_in_peak"),
    ("logits", "logits_bytes_per_rank", "mem_logits_in_peak"),
    ("loss_working_set", "loss_working_bytes_per_rank", "loss_in_peak"),
    ("recompute_working_set", "recompute_working_bytes_per_rank", "recompute_in_peak"),
    ("zero3_gather", "zero3_gather_bytes_per_rank", "gathers_in_peak"),
    ("comm_buffers", "comm_buffer_bytes_per_rank", "always_in_peak"),
    ("runtime_reserve", "runtime_reserve_bytes_per_rank", "always_in_peak"),
    ("first_step_optimizer", "first_step_optimizer_bytes", "mem_moments_in_peak"),
)

OUTSIDE_LINES = tuple(
    Line(
        id=item,
        en=REGISTRY[key].en,
        zh=REGISTRY[key].zh,
        cells={"item": Cell(value=item), "bytes_per_rank": Cell(key), "in_peak": Cell(in_peak)},
        formula=key,
    )
    for item, key, in_peak in OUTSIDE
)

OUTSIDE_COLUMNS = (
    TableColumn("item", "item", "项目"),
    TableColumn("bytes_per_rank", "per rank", "每卡"),
    TableColumn("in_peak", "in the peak phase", "在峰值阶段"),
)

PHASE_COLUMNS = (
    TableColumn("phase", "phase", "阶段"),
    TableColumn("bytes_per_rank", "per rank", "每卡"),
    TableColumn("items", "what lives then", "此时存在的项"),
)

PHASE_LINES = tuple(
    Line(
        id=p,
        en=en,
        zh=zh,
        cells={
            "phase": Cell(value=p),
            "bytes_per_rank": Cell(f"phase_{p}_bytes"),
            "items": Cell(
                items=tuple((n, f"mem_{n}_bytes") for n in names), text=f"phase_{p}_items"
            ),
        },
        show="reported_stage_holds_head" if p == "loss" else "",
    )
    for p, en, zh, names in PHASES
)

F = Figure

# The step-time terms (definitions/time.py), in the order they add up, and the groups that may cross nodes.
STEP_TERMS = tuple((k, f"time_{k}_s") for k in TERM_KEYS)
CROSSES = tuple((g, f"{g}_crosses_nodes") for g in DIMS)
VERDICTS = ("memory", "deadline", "bandwidth")  # each with its tone and its reason


def build_spec() -> Report:
    sections: tuple[Section | Table, ...] = (
        Section(
            "verdicts",
            "Verdicts",
            "结论",
            tuple(F(f"verdict_{v}", v, tone=f"verdict_{v}_tone") for v in VERDICTS),
        ),
        Section(
            "verdict_reasons",
            "Why",
            "原因",
            tuple(F(f"verdict_{v}_reason", v) for v in VERDICTS),
        ),
        Section(
            "check",
            "Warnings",
            "警告",
            # JSON: the columns; the pages and the terminal: the rules in words (check_message)
            (F("check_columns", "columns", text="check_message"),),
            show="check_says_something",
            json_null_unless_shown=True,
        ),
        Section(
            "layout",
            "Layout",
            "布局",
            (
                *map(F, ("framework", "zero", "dp", "tp", "pp", "cp", "ep")),
                F("etp", show="has_experts"),
                *map(F, ("seq_len", "micro_batch", "global_batch", "recompute", "gpu")),
                F("reported_stage"),
            ),
        ),
        Section(
            "params",
            "Parameters",
            "参数",
            (
                F("params_total", "total"),
                F("params_expert", "expert", show="has_experts"),
                F("params_dense", "dense", show="has_experts"),
                F("params_active", "active"),
                F("params_active_card", "active_card"),
                F("params_mtp", "mtp", show="has_mtp"),
                F("arch_main_params", "without_mtp", show="has_mtp"),
                F("arch_embedding_params", "embedding", show="has_arch"),
                F("arch_attention_params", "attention", show="has_arch"),
                F("arch_mlp_params", "mlp", show="has_arch"),
                F("arch_norm_params", "norms", show="has_arch"),
                F("padded_vocab", show="vocab_padded"),
                F("params_per_rank", "per_rank"),
                F("largest_matrix_params", "largest_matrix"),
                F("has_arch", "from_architecture"),
            ),
        ),
        Table(
            "states",
            "Model-state ledger (per rank)",
            "模型状态账本（每卡）",
            STATE_COLUMNS,
            STATE_LINES,
            total=(
                F("state_bytes_per_rank", formula=True),
                F("state_bytes_per_param"),
                F("state_bytes_logical_total", formula=True, expand=("state_bytes_per_param",)),
            ),
        ),
        Section(
            "offload",
            "Offloaded state",
            "卸载的状态",
            (
                F("host_state_bytes_per_rank"),
                F("nvme_state_bytes_per_rank"),
                F("host_bytes_per_node"),
                F("nvme_bytes_per_node"),
                F("host_fits"),
                F("offload_stream_s", "stream_s"),
            ),
            show="has_offload",
        ),
        Table(
            "uncounted",
            "Not in the state ledger",
            "不在状态账本中",
            OUTSIDE_COLUMNS,
            OUTSIDE_LINES,
            sources=True,
        ),
        Table(
            "phases",
            "Memory by phase (reported stage)",
            "各阶段显存（报告段）",
            PHASE_COLUMNS,
            PHASE_LINES,
            total=(F("first_step_peak_bytes", pages=False), F("lazy_state_bytes", pages=False)),
            bars=Bars(
                "items",
                limit="hbm_bytes",
                mark="peak_phase",
                peak="peak_bytes_per_rank",
                note="note_first_step",
            ),
        ),
        Section(
            "peak",
            "Peak and fit",
            "峰值与是否放得下",
            (
                F("activation_bytes_per_rank", formula=True),
                F("logits_bytes_per_rank", formula=True, expand=("logits_full_bytes",)),
                F("peak_phase"),
                F("peak_allocated_bytes_per_rank"),
                F("peak_reserved_bytes_per_rank"),
                F("peak_bytes_per_rank", formula=True),
                F("first_stage_peak_allocated_bytes", show="multi_stage"),
                F("middle_stage_peak_allocated_bytes", show="has_middle_stage"),
                F("last_stage_peak_allocated_bytes", show="multi_stage"),
                F("hbm_bytes"),
                F("headroom_bytes"),
                F("fits"),
            ),
            json=None,  # in the configuration object itself
        ),
        Section(
            "measured",
            "Measured peak",
            "实测峰值",
            (
                F("measured_peak_bytes"),
                F("measured_counter", "counter"),
                F("estimate_on_measured_counter", "estimate_bytes"),
                F("measured_minus_state_bytes"),
                F("unexplained_bytes"),
                F("measured_ratio", "ratio"),
            ),
            show="has_measured_peak",
            json_null_unless_shown=True,
        ),
        Section(
            "compute",
            "Compute floor",
            "算力下界",
            (
                F("flops_per_token", formula=True),
                F("total_flops", formula=True),
                F("tokens_per_step"),
                F("steps"),
                F("step_budget_s", formula=True, expand=("train_window_s",)),
                F("required_tokens_per_s"),
                F("tokens_per_s_per_gpu"),
                F("days_on_config", "days", formula=True, expand=("effective_flops_per_gpu",)),
                F("gpus"),
                F(
                    "gpus_needed_compute",
                    formula=True,
                    expand=("effective_flops_per_gpu", "train_window_s"),
                ),
                F("min_gpus_compute"),
                F("min_gpus_compute_reason", show="min_gpus_compute_blank"),
                F("min_gpus_memory"),
                F("min_gpus_memory_reason", show="min_gpus_memory_blank"),
                F("state_floor_gpus", formula=True, show="peak_unknown"),
                F("binding_gate"),
                F("gpu_hours", formula=True, expand=("effective_flops_per_gpu",)),
                F("cost", formula=True),
                F("mfu"),
                F("hfu"),
                F("mfu_source"),
                F("predicted_mfu"),
                F("predicted_hfu", show="mfu_given"),
                F("mfu_difference", show="mfu_given"),
                F("predicted_tokens_per_s_per_gpu", show="mfu_given"),
                F("step_time_s", formula=True),
                F(
                    "step_time_s",
                    "step_time_breakdown",
                    items=STEP_TERMS,
                    text="step_time_terms_bound",
                ),
                F("step_bound", pages=False),
                F("time_comm_latency_s", pages=False),
                F("time_comm_bandwidth_s", pages=False),
                F("bubble_fraction", show="multi_stage"),
                F("slowest_stage", show="multi_stage"),
                F("placement_summary"),
                F("tp_crosses_nodes", "crosses_nodes", items=CROSSES, pages=False),
                F("bandwidth_gate", pages=False),
                F("meets_deadline", pages=False),
                F("days_over_deadline", pages=False),
            ),
        ),
        Section(
            "budget",
            "Budget",
            "预算",
            (
                F("currency", show="currency_given"),
                F("price_per_gpu_hour"),
                F("gpu_hours"),
                F("node_hours", formula=True),
                F("cost"),
                F("cost_with_reserve", formula=True),
                # where the run is late, holding the GPUs for the deadline costs less than the
                # run: not shown, as it would read as a saving
                F("cost_deadline_hold", formula=True, show="meets_deadline"),
            ),
        ),
    )
    # the summary's columns, each with its (English, Chinese) short heading
    short = {
        "gpu": ("GPU", "GPU"),
        # the layout says the GPUs: dp × tp × pp × cp × ep = GPUs; ZeRO; recompute
        "layout_text": ("layout, GPUs", "布局与 GPU 数"),
        "state_bytes_per_rank": ("state / rank", "每卡状态"),
        "peak_bytes_per_rank": ("peak / rank", "每卡峰值"),
        "hbm_bytes": ("HBM", "显存"),
        "fits": ("fits", "放得下"),
        "state_bytes_logical_total": ("whole state", "全模型状态"),
        "min_gpus_compute": ("min GPUs, deadline", "最少 GPU（期限）"),
        "min_gpus_memory": ("min GPUs, memory", "最少 GPU（显存）"),
        "binding_gate": ("binds", "先撞的门"),
        "days_on_config": ("days needed", "所需天数"),
        # the days the verdict measures against: the deadline less the reserve
        "train_window_days": ("days available", "可用天数"),
        "gpu_hours": ("GPU-hours", "GPU 小时"),
        "cost": ("cost", "成本"),
        "predicted_mfu": ("predicted MFU", "预测 MFU"),
    }
    summary = tuple(F(k, short=v) for k, v in short.items())
    assumptions = tuple(
        k[: -len("_shown")]
        for k in REGISTRY.keys()
        if k.startswith("note_") and k.endswith("_shown")
    )
    charts = (
        Chart(
            "memory",
            "Per-rank memory by state vs HBM (GB)",
            "每卡各状态显存与 HBM 对比（GB）",
            tuple(Series(f"{s}_hbm_bytes") for s, *_ in STATES)
            + (Series("outside_state_bytes_per_rank"),),
            line=("hbm_bytes",),
            y_en="GB per rank",
            y_zh="每卡 GB",
        ),
        Chart(
            "budget",
            "Cost against days",
            "成本与天数",
            (Series("cost", "days_on_config"), Series("cost_deadline_hold", "days")),
            x_en="days",
            x_zh="天",
            y_en="cost",
            y_zh="成本",
        ),
    )
    # a page's headline strip: the summary's short headings, and two of its own
    short |= {"gpus": ("GPUs", "GPU 数"), "step_time_s": ("step time", "单步时间")}
    headline = tuple(
        F(k, short=short[k])
        for k in (
            *("peak_bytes_per_rank", "hbm_bytes", "gpus", "step_time_s", "days_on_config"),
            *("train_window_days", "gpu_hours", "cost"),
        )
    )
    return Report(sections, summary, assumptions, charts=charts, headline=headline)


@dataclass(frozen=True)
class Model:
    """What every output reads: the registry of definitions, the report spec, the lookup tables."""

    registry: Registry
    spec: Report
    tables: Mapping[str, Any] = field(default_factory=tables)

    def __repr__(self) -> str:  # help() and notebooks print it, as Ledger's default too
        sections = len(self.spec.sections)
        return f"<Model: {len(self.registry.keys()):,} definitions, {sections} sections>"


SPEC = build_spec()
DEFAULT = Model(REGISTRY, SPEC, tables())
