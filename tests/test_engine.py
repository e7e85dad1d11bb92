"""Engine invariants (Hypothesis), purity, and hand-derived figures beyond the seeds."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_report.engine import compute, config_from_mapping
from ledger_report.model.definitions import PARTS, REGISTRY, STATES
from ledger_report.render.document import config_document

PKG = Path(__file__).resolve().parents[1] / "ledger_report"
FORBIDDEN = {"pandas", "click", "openpyxl", "xlsxwriter", "jinja2", "weasyprint"}
# The pure engine: the model, the engine, config, assumptions, catalogue, errors.
PURE = [
    "engine.py",
    "config.py",
    "assumptions.py",
    "catalogue.py",
    "errors.py",
    "planner.py",
    "model",
]

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci")


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_engine_imports_no_io_or_rendering_library():
    """STYLE.md habit 1: the engine imports no pandas, click, openpyxl, xlsxwriter, jinja2 or weasyprint (walks every import)."""
    files = []
    for name in PURE:
        p = PKG / name
        files += sorted(p.rglob("*.py")) if p.is_dir() else ([p] if p.exists() else [])
    assert len(files) >= 8
    for f in files:
        bad = _imports(f) & FORBIDDEN
        assert not bad, f"{f.relative_to(PKG)} imports {bad}"


def test_every_quantity_has_labels_unit_and_source():
    """One definition per number: each registry entry carries English and Chinese labels, a unit and a source."""
    for q in REGISTRY:
        assert q.en and q.zh and q.unit and q.source, q.key


# ---- Hypothesis invariants ----------------------------------------------------------------------

DTYPES = st.sampled_from(["fp32", "bf16", "fp16"])


@st.composite
def rows(draw, framework=None):
    fw = framework or draw(st.sampled_from(["generic", "megatron", "deepspeed"]))
    zero = draw(st.sampled_from([0, 1, 3] if fw == "megatron" else [0, 1, 2, 3]))
    experts = draw(st.sampled_from([None, 8, 16]))
    ep = draw(st.sampled_from([1, 2, 4])) if experts else 1
    tp = draw(st.sampled_from([1, 2]))
    dp = ep * draw(st.integers(1, 8))
    row = dict(
        name="h",
        framework=fw,
        zero=zero,
        dp=dp,
        tp=tp,
        pp=draw(st.sampled_from([1, 2, 3])),
        ep=ep,
        layers=draw(st.integers(4, 24)),
        hidden=128 * draw(st.integers(1, 16)),
        heads=8,
        kv_heads=draw(st.sampled_from([2, 4, 8])),
        ffn_hidden=256 * draw(st.integers(1, 16)),
        vocab=draw(st.integers(1000, 200_000)),
        tied_embeddings=draw(st.booleans()),
        qk_norm=draw(st.booleans()),
        glu=draw(st.booleans()),
        weight_dtype=draw(DTYPES),
        grad_dtype=draw(DTYPES),
        optimizer=draw(st.sampled_from(["adam", "sgd", "lion", "adam8bit", "adafactor"])),
        seq_len=1024 * draw(st.integers(1, 8)),
        micro_batch=draw(st.integers(1, 4)),
        recompute=draw(st.sampled_from(["none", "selective", "full"])),
        flash_attention=draw(st.booleans()),
        tokens=10**9,
        days=10,
        mfu=0.4,
    )
    if experts:
        row.update(
            experts=experts, topk=2, moe_ffn_hidden=256, moe_every=draw(st.sampled_from([1, 2]))
        )
    if fw == "deepspeed" and row["pp"] > 1:
        row["zero"] = min(zero, 1)  # DeepSpeed's pipeline engine runs ZeRO-0 and ZeRO-1 only
    return row


@given(rows())
@pytest.mark.slow
def test_totals_equal_the_sum_of_lines(row):
    """Totals equal the sum of their lines: HBM state = Σ HBM lines; each phase = Σ the items that live
    in it (each rounded up once); the allocated peak is the largest phase; the device peak is the
    reserved peak plus the CUDA context and NCCL's buffers."""
    d = config_document(compute(config_from_mapping(row)))
    assert d["state_bytes_per_rank"] == sum(
        s["bytes_per_rank"] for s in d["states"] if s["location"] == "hbm"
    )
    for p in d["phases"]:
        assert abs(p["bytes_per_rank"] - sum(p["items"].values())) <= 16, p
    assert d["peak_allocated_bytes_per_rank"] == max(p["bytes_per_rank"] for p in d["phases"])
    assert d["peak_phase"] == max(d["phases"], key=lambda p: p["bytes_per_rank"])["phase"]
    assert d["peak_reserved_bytes_per_rank"] >= d["peak_allocated_bytes_per_rank"]
    overhead = sum(
        u["bytes_per_rank"]
        for u in d["uncounted"]
        if u["item"] in ("comm_buffers", "runtime_reserve")
    )
    buckets = max(p["items"].get("buckets", 0) for p in d["phases"])
    assert (
        abs(d["peak_bytes_per_rank"] - (d["peak_allocated_bytes_per_rank"] - buckets + overhead))
        <= 16
    )
    for v in (d["peak_bytes_per_rank"], d["compute"]["total_flops"], d["compute"]["days"]):
        assert v is not None and math.isfinite(v) and v > 0


@given(rows(), st.sampled_from([2, 3, 4, 8]))
@pytest.mark.slow
def test_sharding_never_raises_per_rank_bytes(row, k):
    """Reliability LED-02: a k-times larger data-parallel group never raises any state line or the total."""
    a = compute(config_from_mapping(row))
    b = compute(config_from_mapping({**row, "dp": row["dp"] * k}))
    for s, *_ in STATES:
        for p, *_ in PARTS:
            assert b[f"{s}_{p}_bytes"] <= a[f"{s}_{p}_bytes"]
    assert b["state_bytes_per_rank"] <= a["state_bytes_per_rank"]


@given(rows(framework="generic"))
@pytest.mark.slow
def test_generic_zero_stages_never_raise_state(row):
    """Per-rank state never rises from ZeRO-k to ZeRO-(k+1) under framework=generic (docs/scenarios.md, Qwen3-8B sharding on 4 GPUs)."""
    states = [
        compute(config_from_mapping({**row, "zero": z}))["state_bytes_per_rank"]
        for z in (0, 1, 2, 3)
    ]
    assert states == sorted(states, reverse=True)


@given(rows(), st.integers(2, 5))
@pytest.mark.slow
def test_state_is_linear_in_parameters(row, k):
    """Reliability LED-04: with parameter counts given, every state line scales exactly with the parameters (± rounding)."""
    base = {
        key: v
        for key, v in row.items()
        if key
        not in (
            "layers",
            "hidden",
            "heads",
            "kv_heads",
            "ffn_hidden",
            "vocab",
            "experts",
            "topk",
            "moe_ffn_hidden",
            "moe_every",
            "tied_embeddings",
            "qk_norm",
            "glu",
        )
    }
    base["optimizer"] = "adam" if base["optimizer"] == "adafactor" else base["optimizer"]
    base["ep"] = 1  # without experts in the row, expert parallelism has nothing to split
    n = 10**9 * 12 * 7 * 5  # divisible by every group size drawn
    a = compute(config_from_mapping({**base, "params_total": n}))
    b = compute(config_from_mapping({**base, "params_total": k * n}))
    assert b["state_bytes_per_rank"] == pytest.approx(k * a["state_bytes_per_rank"], abs=16 * k)
    assert b["state_bytes_logical_total"] == k * a["state_bytes_logical_total"]


def test_zero_paper_figure_1():
    """ZeRO paper (Rajbhandari et al. 2020) Fig. 1: Ψ = 7.5B, N_d = 64, K = 12: 120 / 31.4 / 16.6 / 1.9 GB."""
    got = []
    for z in (0, 1, 2, 3):
        lg = compute(
            config_from_mapping(
                dict(
                    name="z",
                    params_total=7_500_000_000,
                    dp=64,
                    zero=z,
                    weight_dtype="fp16",
                    grad_dtype="fp16",
                )
            )
        )
        got.append(round(lg["state_bytes_per_rank"] / 1e9, 1))
    assert got == [120.0, 31.4, 16.6, 1.9]


def test_cp_is_in_the_optimizer_shard_group():
    """anchors-mission.md §2.1: with CP=2, DP=4 the distributed optimizer shards over 8 ranks: 6 + 12/8 = 7.5 B/param (Megatron-LM's estimator says 9.0)."""
    n = 8 * 10**9
    lg = compute(
        config_from_mapping(
            dict(
                name="cp",
                params_total=n,
                framework="megatron",
                zero=1,
                dp=4,
                cp=2,
                grad_dtype="fp32",
            )
        )
    )
    assert lg["state_bytes_per_rank"] == 7.5 * n


def test_expert_dp_follows_megatron_bridge():
    """Megatron-Bridge theoretical_memory_utils: expert shard = DP·TP·CP/(EP·ETP): dp 8, tp 2, ep 4, etp 1 → 4."""
    lg = compute(
        config_from_mapping(
            dict(
                name="e",
                params_total=10**10,
                params_expert=8 * 10**9,
                dp=8,
                tp=2,
                ep=4,
                etp=1,
                zero=1,
                framework="megatron",
            )
        )
    )
    assert lg["expert_shard_group"] == 4
    assert lg["dense_shard_group"] == 8


def test_offloaded_states_leave_the_hbm_sum():
    """The location column: optimizer on the host leaves HBM; per node = per rank × GPUs per node."""
    row = dict(name="o", params_total=10**10, dp=8, zero=1, optimizer_at="host", master_at="host")
    lg = compute(config_from_mapping(row))
    d = config_document(lg)
    host = sum(s["bytes_per_rank"] for s in d["states"] if s["location"] == "host")
    assert host == (4 + 4 + 4) * 10**10 / 8
    assert lg["state_bytes_per_rank"] == (2 + 2) * 10**10
    assert lg["host_bytes_per_node"] == host * 8  # H100-SXM: 8 GPUs per node
    # ZeRO-Offload (Ren et al. 2021 §4): the bf16 gradient partition goes down and the updated bf16
    # weights come up each step, over PCIe Gen5 x16 (64 GB/s) at its payload efficiency
    from ledger_report.model.definitions.time import HOST_LINK_EFFICIENCY

    assert lg["offload_stream_s"] == pytest.approx(
        (2 + 2) * 10**10 / 8 / (64e9 * HOST_LINK_EFFICIENCY)
    )


def test_adam8bit_moments_carry_block_scales():
    """Dettmers et al. 2022: blockwise 8-bit states, one fp32 scale per 2,048 values: 1 + 4/2048 B per moment."""
    lg = compute(
        config_from_mapping(dict(name="a8", params_total=2048 * 10**6, optimizer="adam8bit"))
    )
    assert lg["m_bytes_per_param"] == 1 + 4 / 2048
    assert lg["m_dense_bytes"] == 2048 * 10**6 + 4 * 10**6


def test_pipeline_stage_split_puts_remainder_layers_first():
    """docs/definitions.md#pipeline-stages: 10 layers on pp 4 → stages of 3, 3, 2, 2; the first holds the embedding, the last the head."""
    row = dict(
        name="pp",
        layers=10,
        hidden=1024,
        heads=8,
        ffn_hidden=4096,
        vocab=50_000,
        pp=4,
        seq_len=2048,
        global_batch=64,
    )
    lg = compute(config_from_mapping(row))
    assert lg["first_stage_layers"] == 3 and lg["stage_layers_base"] == 2
    layer = 2 * 1024 * 128 * 16 + 2 * 1024 + 3 * 1024 * 4096
    assert lg["arch_first_stage_dense"] == 3 * layer + 50_000 * 1024
    assert lg["arch_last_stage_dense"] == 2 * layer + 50_000 * 1024 + 1024


def test_uneven_pipeline_fixes_the_first_and_last_stages():
    """Megatron-LM --decoder-first/last-pipeline-num-layers (megatron/core/transformer/transformer_block.py
    get_num_layers_to_build): 14 layers on pp 4 with the first stage at 4 and the last at 2 leave 8 for the
    2 middle stages, 4 each: layers 0-3, 4-7, 8-11, 12-13 (DeepSeek-V3's 14-layer proxy layout)."""
    row = dict(
        name="pp",
        layers=14,
        hidden=1024,
        heads=8,
        ffn_hidden=4096,
        vocab=50_000,
        pp=4,
        seq_len=2048,
        global_batch=64,
        pp_first_layers=4,
        pp_last_layers=2,
    )
    lg = compute(config_from_mapping(row))
    assert (lg["first_stage_layers"], lg["middle_stage_layers"], lg["last_stage_layers"]) == (
        4,
        4,
        2,
    )
    assert (
        lg["first_stage_first_layer"],
        lg["middle_stage_first_layer"],
        lg["last_stage_first_layer"],
    ) == (0, 8, 12)
    only_last = compute(config_from_mapping({**row, "pp_first_layers": None}))
    assert (
        only_last["first_stage_layers"],
        only_last["middle_stage_layers"],
        only_last["last_stage_layers"],
    ) == (4, 4, 2)  # 12 over 3: 4, 4, 4


def test_uneven_pipeline_rules(tmp_path):
    """The given stages must leave a layer for every other stage (an error naming both columns), need
    pp > 1, and the other stages sharing their layers unevenly is a warning."""
    from ledger_report.errors import InputError

    base = dict(
        name="pp",
        layers=14,
        hidden=1024,
        heads=8,
        ffn_hidden=4096,
        vocab=50_000,
        pp=4,
        seq_len=2048,
        global_batch=64,
    )
    with pytest.raises(InputError) as exc:
        config_from_mapping({**base, "pp_first_layers": 7, "pp_last_layers": 6})
    assert "pp_first_layers = 7, pp_last_layers = 6, 1 layers left" in str(exc.value)
    with pytest.raises(InputError) as exc:
        config_from_mapping({**base, "pp": 1, "pp_first_layers": 4})
    assert "pp > 1 with pp_first_layers or pp_last_layers" in str(exc.value)
    lg = compute(
        config_from_mapping({**base, "pp_first_layers": 3})
    )  # 11 layers over 3 stages: 4, 4, 3
    assert (lg["first_stage_layers"], lg["middle_stage_layers"], lg["last_stage_layers"]) == (
        3,
        4,
        3,
    )
    assert lg["ok_layers_by_pp"] is False  # a warning: the row is kept


def test_mixtral_8x7b_parameters_match_the_published_46_7B_and_12_9B_active():
    """Mistral AI (Mixtral of Experts, 2024): 46.7B total, 12.9B active per token.

    Hand count (Megatron rules): per layer 2·4096·128·(32+8) attention + 2·4096 norms + 4096·8 router
    + 8 × 3·4096·14336 experts = 1,451,270,144; × 32 + 2 × 32000·4096 + 4096 = 46,702,792,704.
    Active: experts 2 of 8 → 12,879,925,248.
    """
    row = dict(
        name="mixtral",
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        ffn_hidden=14336,
        vocab=32000,
        experts=8,
        topk=2,
    )
    lg = compute(config_from_mapping(row))
    assert lg["params_total"] == 46_702_792_704
    assert lg["params_active"] == 12_879_925_248
    assert lg["params_expert"] == 32 * 8 * 3 * 4096 * 14336


def test_llama2_7b_parameters_match_hugging_face_count():
    """Llama-2-7B has 6,738,415,616 parameters (Hugging Face model card / num_parameters()); same with Megatron's rules."""
    row = dict(name="l2", layers=32, hidden=4096, heads=32, ffn_hidden=11008, vocab=32000)
    assert compute(config_from_mapping(row))["params_total"] == 6_738_415_616


def test_korthikanti_table_2_gpt3_layer():
    """Korthikanti et al. 2022 Table 2 with a GPT-3-style layer (plain MLP 4h, MHA, s 2048, b 1, h 12288, a 96, t 8).

    none, no SP: sbh(10 + 24/t + 5as/(ht)); selective + SP: 34·sbh/t; full: 2·sbh per layer.
    """
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    base = dict(
        name="g",
        layers=1,
        hidden=h,
        heads=a,
        ffn_hidden=4 * h,
        vocab=51200,
        glu=False,
        tp=t,
        seq_len=s,
        micro_batch=b,
        flash_attention=False,
        dropout=True,
        framework="megatron",
    )
    sbh = s * b * h

    def layers_part(lg):
        """The stage's activations less what lives outside the layers (the embedding's output, the
        final norm's tensors and the output layer's input), which Table 2 does not count."""
        return lg["activation_bytes_per_rank"] - lg["act_outside_first"] - lg["act_outside_last"]

    none = compute(config_from_mapping({**base, "recompute": "none"}))
    assert layers_part(none) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    sel_sp = compute(
        config_from_mapping({**base, "recompute": "selective", "sequence_parallel": True})
    )
    assert layers_part(sel_sp) == pytest.approx(34 * sbh / t)
    none_sp = compute(config_from_mapping({**base, "recompute": "none", "sequence_parallel": True}))
    assert layers_part(none_sp) == pytest.approx(sbh / t * (34 + 5 * a * s / h))
    full = compute(config_from_mapping({**base, "recompute": "full"}))
    assert layers_part(full) == 2 * sbh


def test_first_stage_holds_pp_micro_batches_in_flight():
    """Megatron-LM schedules.py (1F1B): pipeline rank r holds min(pp − r, micro-batches) micro-batches
    in flight, so the first stage holds pp of them and the last one; the reported stage is the one
    with the largest peak (Korthikanti et al. 2022 §4.2.3)."""
    base = dict(
        name="p",
        layers=8,
        hidden=1024,
        heads=8,
        ffn_hidden=4096,
        vocab=1000,
        pp=4,
        seq_len=1024,
        recompute="full",
    )
    many = compute(config_from_mapping({**base, "global_batch": 64}))
    two = compute(config_from_mapping({**base, "global_batch": 2}))
    per_layer = 2 * 1024 * 1024
    assert (
        many["first_stage_in_flight"] == 4
        and many["middle_stage_in_flight"] == 2
        and many["last_stage_in_flight"] == 1
    )
    # each micro-batch in flight: 2 layers and the embedding's output (2·s·b·h); a sending stage
    # also keeps each in-flight output and one gradient receive buffer (torch.distributed.pipelining
    # stage.py fwd_cache), 2·s·b·h each; the last stage: its layers, the final norm's input and
    # output (8 bytes per h, generic) and the output layer's input (2)
    sbh = 1024 * 1024
    assert many["first_stage_activation_bytes"] == 4 * (2 * per_layer + 2 * sbh) + 5 * 2 * sbh
    assert two["first_stage_activation_bytes"] == 2 * (2 * per_layer + 2 * sbh) + 3 * 2 * sbh
    assert many["last_stage_activation_bytes"] == 1 * (2 * per_layer + 8 * sbh + 2 * sbh)
    for lg in (many, two):
        peaks = {s: lg[f"{s}_stage_peak_allocated_bytes"] for s in ("first", "middle", "last")}
        assert lg["reported_stage"] == max(peaks, key=peaks.get)


def test_interleaved_first_rank_holds_more_chunks():
    """Megatron-LM schedules.py (interleaved): rank 0 warms up (pp − 1)·2 + (v − 1)·pp chunks, so it
    holds L/pp × (1 + (pp − 1)/(pp·v)) layers' worth: pp = 4, v = 2: 4 + 3/2 = 5.5 stage-sized micro-batches."""
    base = dict(
        name="p",
        layers=16,
        hidden=1024,
        heads=8,
        ffn_hidden=4096,
        vocab=1000,
        pp=4,
        seq_len=1024,
        recompute="full",
        global_batch=64,
    )
    lg = compute(config_from_mapping({**base, "virtual_stages": 2}))
    assert lg["first_stage_in_flight"] == pytest.approx(5.5)
    assert lg["last_stage_in_flight"] == pytest.approx((0 + 4 + 1) / 2)


# DeepSpeedExamples training/bf16_master_weight (@6a3d817a): the 6.86B model of its README on 4 GPUs,
# ZeRO-3, batch 1, seq 512, reduce_bucket_size 5e7 (configs/baseline.json).
DS_EXAMPLE = dict(
    name="ds",
    framework="deepspeed",
    layers=32,
    hidden=4096,
    heads=32,
    ffn_hidden=16384,
    vocab=50_000,
    glu=False,
    norm="layernorm",
    dp=4,
    zero=3,
    seq_len=512,
    micro_batch=1,
    global_batch=4,
    flash_attention=False,
    main_grad_dtype="bf16",
    reduce_bucket_elems=50_000_000,
)


def test_zero3_gathered_weights_kept_until_backward():
    """DeepSpeed PR 8189 (in 0.19.4): without its ZeRO-3 Linear, 'the standard Linear implementation can
    retain the gathered weight storage until backward completes'.  Hand count: every Linear's bf16
    weight, 32 layers × (4h² attention + 2·h·4h MLP) + the head V·h, = 13.29 GB; the input embedding
    saves only its indices.  Full recompute keeps only the head (outside the recomputed layers); below
    ZeRO-3 the weights are whole anyway (a warning, nothing added)."""
    h, V = 4096, 50_000
    lg = compute(config_from_mapping({**DS_EXAMPLE, "gathered_weights_kept": True}))
    linear_bytes = (32 * (4 * h * h + 2 * h * 4 * h) + V * h) * 2
    assert lg["mem_weights_kept_bytes"] == pytest.approx(
        linear_bytes, rel=1e-3
    )  # norms' weights are the 0.05 % left
    assert lg["phase_forward_bytes"] - compute(config_from_mapping(DS_EXAMPLE))[
        "phase_forward_bytes"
    ] == pytest.approx(lg["mem_weights_kept_bytes"])
    assert (
        lg["phase_backward_end_bytes"]
        == compute(config_from_mapping(DS_EXAMPLE))["phase_backward_end_bytes"]
    )  # freed by then
    full = compute(
        config_from_mapping({**DS_EXAMPLE, "gathered_weights_kept": True, "recompute": "full"})
    )
    assert full["mem_weights_kept_bytes"] == V * h * 2
    z2 = compute(config_from_mapping({**DS_EXAMPLE, "gathered_weights_kept": True, "zero": 2}))
    assert z2["mem_weights_kept_bytes"] == 0 and z2["ok_weights_kept_needs_zero3"] is False


def test_reduce_bucket_elems_sizes_deepspeeds_bucket():
    """DeepSpeed stage3.py allocates its reduce bucket as reduce_bucket_size elements of the gradient
    dtype: 5e7 bf16 elements are 100 MB (the convention's 5e8 are 1.0 GB); another framework's row
    that gives the column is warned and keeps its own bucket."""
    assert compute(config_from_mapping(DS_EXAMPLE))["bucket_bytes"] == 50_000_000 * 2
    assert (
        compute(config_from_mapping({**DS_EXAMPLE, "reduce_bucket_elems": None}))["bucket_bytes"]
        == 500_000_000 * 2
    )
    mg = compute(config_from_mapping({**DS_EXAMPLE, "framework": "megatron", "zero": 1}))
    assert mg["ok_bucket_elems_deepspeed"] is False
    assert (
        mg["bucket_bytes"]
        == compute(
            config_from_mapping(
                {**DS_EXAMPLE, "framework": "megatron", "zero": 1, "reduce_bucket_elems": None}
            )
        )["bucket_bytes"]
    )


def test_loss_compiled_apart_from_the_model():
    """torchtitan compiled the model's blocks but not the loss until bbb1b616 (2025-04-02).  Eager
    F.cross_entropy(logits.float()) on bf16 logits holds 12 B per logit in backward (the fsdp2
    convention: the fp32 copy, its log-softmax and its gradient), compiled 2 B: Llama-3-8B at seq
    8192 has 8192 × 128,256 logits, so 12.6 GB against 2.1 GB.  Empty, the loss follows compile."""
    row = dict(
        name="tt",
        framework="fsdp2",
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        ffn_hidden=14336,
        vocab=128_256,
        dp=8,
        zero=3,
        seq_len=8192,
        micro_batch=1,
        global_batch=8,
        compile=True,
        recompute="selective_op",
    )
    logits = 8192 * 128_256
    eager = compute(config_from_mapping({**row, "loss_compiled": False}))
    assert eager["loss_backward_bytes"] == logits * 12
    assert compute(config_from_mapping(row))["loss_backward_bytes"] == logits * 2
    assert (
        eager["mlp_act_factor"] == compute(config_from_mapping(row))["mlp_act_factor"]
    )  # the model stays compiled


def test_moe_layer_keeps_the_dispatched_tokens():
    """Megatron-LM experts.py TEGroupedMLP.forward: linear_fc1 keeps its input, the dispatched tokens
    (top-k copies of each token, h wide, bf16), for the weight gradient; the router's probabilities
    are applied inside the activation, so the combine keeps nothing h wide.  Hand count for a
    DeepSeek-V3 layer at seq 2048, micro-batch 1: 2 B × 8 × 2048 × 7168 = 234,881,024 B, on top of
    Korthikanti's 6 B per s·b·ffn for each of the top-k experts and the shared one."""
    row = dict(
        name="dsv3",
        framework="megatron",
        layers=4,
        hidden=7168,
        heads=128,
        ffn_hidden=18432,
        vocab=129_280,
        experts=256,
        topk=8,
        moe_ffn_hidden=2048,
        shared_expert_ffn=2048,
        q_lora_rank=1536,
        kv_lora_rank=512,
        qk_rope_head_dim=64,
        qk_nope_head_dim=128,
        v_head_dim=128,
        dp=16,
        ep=16,
        zero=1,
        seq_len=2048,
        micro_batch=1,
        global_batch=16,
        recompute="none",
    )
    lg = compute(config_from_mapping(row))
    assert lg["act_moe_routed_input_per_layer"] == 2 * 8 * 2048 * 7168
    assert lg["act_moe_mlp_per_layer"] == 2 * 8 * 2048 * 7168 + 2048 * (8 * 2048 * 6 + 2048 * 6)
    # token_dispatcher.py: with tp 2 and sequence parallelism each rank dispatches half the sequence; an
    # expert-tensor-parallel group of 2 gathers both halves again (etp empty is tp)
    tp2 = {**row, "tp": 2, "dp": 16, "global_batch": 32, "sequence_parallel": True}
    assert (
        compute(config_from_mapping({**tp2, "etp": 1}))["moe_expert_token_copies"] == 2048 * 8 / 2
    )
    assert compute(config_from_mapping(tp2))["moe_expert_token_copies"] == 2048 * 8
    # the time side counts the same copies: each etp-1 rank runs its whole experts on half the tokens
    e1, e2 = (compute(config_from_mapping({**tp2, "etp": e})) for e in (1, 2))
    assert e1["first_stage_expert_gemm_flops"] == pytest.approx(e2["first_stage_expert_gemm_flops"])
    assert e1["tokens_per_local_expert"] == 2048 * 8 / 2 * 16 / 256
    dense = compute(
        config_from_mapping(
            {
                k: v
                for k, v in row.items()
                if k not in ("experts", "topk", "moe_ffn_hidden", "shared_expert_ffn", "ep")
            }
        )
    )
    assert (
        dense["act_dense_layer"] == lg["act_dense_layer"]
    )  # a dense layer's MLP input is its norm's output, counted once


def test_moe_combine_keeps_what_each_framework_multiplies():
    """The routing weights' gradient needs the expert outputs they multiply.  torchtitan
    (token_dispatcher.py LocalTokenDispatcher.combine) multiplies routed_output.to(float32) by the
    scores: 4 B per h of each routed token; HF transformers and DeepSpeed multiply the 16-bit output:
    2 B; Megatron-LM applies the probabilities inside the activation: 0.  Compiled, at most 2 B.
    Hand count, top-8 of h 2048 at seq 4096: 8 × 4096 × 2048 = 67,108,864 routed elements."""
    row = dict(
        name="moe",
        layers=4,
        hidden=2048,
        heads=16,
        ffn_hidden=8192,
        vocab=32_000,
        experts=64,
        topk=8,
        moe_ffn_hidden=1024,
        dp=8,
        ep=8,
        seq_len=4096,
        micro_batch=1,
        global_batch=8,
        recompute="none",
    )
    routed = 8 * 4096 * 2048
    want = {
        ("fsdp2", False): 4,
        ("fsdp2", True): 2,
        ("generic", False): 2,
        ("deepspeed", False): 2,
        ("megatron", False): 0,
    }
    for (fw, compiled), per_h in want.items():
        lg = compute(
            config_from_mapping(
                {**row, "framework": fw, "zero": 1 if fw != "fsdp2" else 3, "compile": compiled}
            )
        )
        assert lg["act_moe_combine_per_layer"] == per_h * routed, fw


def test_mtp_module_activations_and_kept_loss_on_the_last_stage():
    """Megatron-LM multi_token_prediction.py: an MTP module norms the embeddings and the hidden states
    (enorm, hnorm: input and output each, 2 + 2 B per h in Megatron's fused norms), concatenates them
    for eh_proj (2·h in bf16: 4 B per h), runs one MoE layer, and its head's loss is computed in
    forward and kept until backward (process_mtp_loss, MTPLossAutoScaler): the vocab-parallel loss's
    fp32 working copy, 4 B per logit.  Hand count at seq 2048, h 7168, vocab 129,280: extras
    (2·4 + 4) × 2048 × 7168 = 176,160,768 B; kept loss 4 × 2048 × 129,280 = 1,059,061,760 B."""
    row = dict(
        name="dsv3",
        framework="megatron",
        layers=4,
        hidden=7168,
        heads=128,
        ffn_hidden=18432,
        vocab=129_280,
        experts=256,
        topk=8,
        moe_ffn_hidden=2048,
        shared_expert_ffn=2048,
        q_lora_rank=1536,
        kv_lora_rank=512,
        qk_rope_head_dim=64,
        qk_nope_head_dim=128,
        v_head_dim=128,
        dp=16,
        ep=16,
        zero=1,
        pp=2,
        seq_len=2048,
        micro_batch=1,
        global_batch=32,
        recompute="none",
    )
    with_mtp, without = (compute(config_from_mapping({**row, "mtp_layers": n})) for n in (1, 0))
    assert (
        with_mtp["act_mtp_per_micro_batch"] == with_mtp["act_moe_layer"] + (2 * 4 + 4) * 2048 * 7168
    )
    assert (
        with_mtp["last_stage_activation_per_micro_batch"]
        - without["last_stage_activation_per_micro_batch"]
        == with_mtp["act_mtp_per_micro_batch"]
    )
    assert (
        with_mtp["first_stage_activation_per_micro_batch"]
        == without["first_stage_activation_per_micro_batch"]
    )
    assert with_mtp["mtp_loss_kept_bytes"] == 4 * 2048 * 129_280
    assert (
        with_mtp["last_mem_loss_forward"] - without["last_mem_loss_forward"] == 4 * 2048 * 129_280
    )


def test_a_chunk_ledger_gives_a_text_quantity_by_get_as_the_row_by_row_ledger_does():
    """``Ledger.get`` on a ledger from ``compute_many`` (a chunk over arrays) must give the same
    text as ``compute`` on the one row: the texts are computed on first read, and ``dict.get``
    alone never asks for them (it returned None for every sentence not yet read)."""
    from ledger_report.engine import compute_many
    from ledger_report.inputs import read_configs

    configs = read_configs(Path(__file__).parents[1] / "inputs" / "examples.csv")
    texts = [q.key for q in REGISTRY if q.unit == "text"]
    for many, c in zip(compute_many(configs), configs):
        one = compute(c)
        assert [many.get(k) for k in texts] == [one.get(k) for k in texts]
    assert many.get("no such quantity", "absent") == "absent"
