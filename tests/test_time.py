"""The step-time model (definitions/time.py): each term follows its stated formula, and the outputs
that depend on time follow the prediction where mfu is empty and the measured mfu where given."""

from __future__ import annotations

import pytest
from support.jobs import QWEN3_8B_JOB

from ledger_report.engine import compute, config_from_mapping
from ledger_report.errors import InputError
from ledger_report.model.definitions import REGISTRY
from ledger_report.model.definitions.time import (
    CPU_ADAM_HOST_BYTES_PER_PARAM,
    GEMM_RAMP_S,
    GROUPED_GEMM_RELATIVE,
    HOST_LINK_EFFICIENCY,
    NETWORK_EFFICIENCY,
    NVLINK_EFFICIENCY,
    TERMS,
)
from ledger_report.render.document import config_document

# docs/scenarios.md's Qwen3-8B job (36 layers, h 4096, 32/8 heads, ffn 12288, vocab 151936, 8K tokens, 384 sequences).
QWEN = {**{k: v for k, v in QWEN3_8B_JOB.items() if k != "mfu"}, "name": "q"}


def v(**changes):
    return compute(config_from_mapping({**QWEN, **changes})).values


def test_step_time_is_the_sum_of_its_terms():
    """docs/definitions.md#step-time: step = m·(compute + TP + CP + EP + PP) + bubble + DP + optimizer + offload."""
    x = v(dp=4, tp=2, pp=2, zero=1, sequence_parallel=True)
    assert x["step_time_s"] == pytest.approx(sum(x[f"time_{k}_s"] for k, *_ in TERMS), rel=1e-12)
    d = config_document(compute(config_from_mapping({**QWEN, "dp": 4, "tp": 2, "pp": 2})))[
        "compute"
    ]
    assert set(d["step_time_breakdown"]) == {k for k, *_ in TERMS}
    assert d["step_time_s"] == pytest.approx(sum(d["step_time_breakdown"].values()), rel=1e-12)


@pytest.mark.parametrize("pp, v_stages", [(4, 1), (4, 2), (8, 3)])
def test_bubble_is_p_minus_1_over_vm_plus_p_minus_1(pp, v_stages):
    """Narayanan et al. 2021 §2.2: 1F1B idles (p − 1)/(m + p − 1) of the pipeline time; interleaved (p − 1)/(v·m + p − 1)."""
    x = v(dp=2, pp=pp, virtual_stages=v_stages, layers=48)
    m = 384 / 2
    assert x["bubble_fraction"] == pytest.approx((pp - 1) / (v_stages * m + pp - 1), rel=1e-12)


def test_tensor_parallel_all_reduces_follow_nccls_cost_model():
    """Korthikanti et al. 2022: 2 all-reduces of s·b·h forward and 2 backward per layer.  Each costed
    by NVIDIA/nccl src/graph/tuning.cc @5067397c (NCCL 2.30.7), worked by hand for tp=4 in one node,
    a 67.1 MB message: Simple ring latency 8.4 + 2·3·3.4 = 28.8 µs (tree 8.4 + 2·3·4.0 = 32.4),
    bandwidth 1.5 × 67.1 MB ÷ (450 × 0.8 GB/s) = 279.6 µs, together 308.4 µs; LL128 21.5 + 303.9 µs
    and LL 10.2 + 714.1 µs (at most llMaxBw, 141 GB/s on Hopper in one node) are slower, and so is
    the tree (32.4 µs + 2 × 67.1 MB ÷ (360 × 0.92 GB/s)), so NCCL (and the model) runs the Simple ring."""
    x = v(dp=1, tp=4, global_batch=8)
    act = 8192 * 4096 * 2
    bw = 1.5 * act / (900 / 2 * NVLINK_EFFICIENCY * 1e9)
    simple, ll128, ll = 28.8e-6 + bw, 21.5e-6 + bw / 0.92, 10.2e-6 + 1.5 * act / 141e9
    assert x["tp_all_reduce_s"] == pytest.approx(min(simple, ll128, ll), rel=1e-9)
    assert x["tp_all_reduce_latency_s"] == pytest.approx(28.8e-6, rel=1e-9)  # Simple's, the choice
    assert x["first_stage_tp_comm_s"] == pytest.approx(
        (4 * 36 + 2) * simple, rel=1e-9
    )  # and one for the embedding's output, one for the output layer's input
    assert x["time_tp_s"] == pytest.approx(
        8 * x["first_stage_tp_comm_s"], rel=1e-9
    )  # 8 micro-batches, nothing overlapped (tp_comm_overlap off)


def test_ring_latency_grows_with_ranks_and_nodes():
    """NCCL tuning.cc @5067397c: a ring all-gather over n ranks on k nodes takes base + (n − 1 − (k − 1))
    intra-node steps + (k − 1) network steps, and NCCL picks the algorithm and protocol its model
    says is fastest; LL's bus bandwidth is capped at llMaxBw (20.4 GB/s over more than two nodes of
    Intel hosts), so a layer's gather (hundreds of MB) runs LL128: base 14.0 + steps × max(1.9 NVLink,
    1.0 net overhead) + network steps × 4.0, at 0.92 of the bus bandwidth.  ZeRO-3 over dp 384 (48
    nodes of 8): 14.0 + 336 × 1.9 + 47 × 4.0 = 840.4 µs; over 3,072 ranks (384 nodes): 14.0 + 2,688 ×
    1.9 + 383 × 4.0 = 6,653.2 µs, and ZeRO-3 runs 3 per layer and micro-batch."""
    a = v(dp=384, zero=3)
    assert a["grad_nodes"] == 48
    assert a["dp_layer_all_gather_latency_s"] == pytest.approx(840.4e-6, rel=1e-9)
    b = v(dp=384, cp=8, zero=3)
    assert b["grad_nodes"] == 384
    assert b["dp_layer_all_gather_latency_s"] == pytest.approx(6653.2e-6, rel=1e-9)
    layer = b["dense_params_on_rank"] / 36 * 2
    assert b["dp_layer_all_gather_s"] == pytest.approx(
        6653.2e-6 + 3071 / 3072 * layer / (360e9 * 0.92), rel=1e-9
    )
    ll = (6.6 + 2688 * 1.0 + 383 * 2.7) * 1e-6 + 3071 / 3072 * layer / 20.4e9
    assert ll > b["dp_layer_all_gather_s"]  # LL would be slower at its capped bandwidth
    assert b["collectives_latency_s"] >= 36 * 3 * 6653.2e-6
    assert b["step_time_s"] >= b["collectives_latency_s"]
    assert b["step_bound"] == "latency"  # issue #24: the plan the old model put at 0.153 s


def test_megatron_overlap_switches_hide_at_most_the_communication():
    """Issue #24: a Megatron row with overlap_grad_reduce, overlap_param_gather and tp_comm_overlap on
    is predicted faster than with them off (Megatron-LM @d98e8a64 defaults), by the share the model
    hides, never by more than the communication itself."""
    row = dict(framework="megatron", dp=16, tp=4, zero=1, sequence_parallel=True)
    off = v(**row)
    on = v(**row, overlap_grad_reduce=True, overlap_param_gather=True, tp_comm_overlap=True)
    assert off["overlap_grad_reduce"] is False and off["tp_comm_overlap"] is False
    gain = off["step_time_s"] - on["step_time_s"]
    hidden = (off["time_tp_s"] - on["time_tp_s"]) + (off["time_dp_s"] - on["time_dp_s"])
    assert gain > 0 and gain == pytest.approx(hidden, rel=1e-9)
    assert gain < off["time_tp_s"] + off["dp_comm_s"]
    # TE splits each collective into tp chunks: at least the first is exposed
    assert on["first_stage_tp_exposed_s"] >= on["first_stage_tp_comm_s"] / 4


def test_bubble_with_fewer_micro_batches_than_stages_is_the_critical_path():
    """With m < p every micro-batch still crosses all p stages: interleaved with v = 2, m = 2, p = 8
    the step is (p + (m − 1)/v)·t = 8.5·t, a bubble of 6.5·t, not (p − 1)/v·t = 3.5·t."""
    x = v(dp=1, pp=8, virtual_stages=2, global_batch=2, layers=48)
    assert x["time_bubble_s"] == pytest.approx(6.5 * x["micro_batch_s"], rel=1e-9)
    y = v(dp=1, pp=8, virtual_stages=2, global_batch=32, layers=48)  # m = 32 ≥ p
    assert y["time_bubble_s"] == pytest.approx(3.5 * y["micro_batch_s"], rel=1e-9)


def test_placement_puts_tp_innermost_and_dp_across_nodes():
    """Placement rule tp, cp, ep, dp, pp over nodes of 8: tp 8 fills a node, so dp and pp cross nodes and
    the data-parallel collectives run at the NIC's speed (DGX H100: 50 GB/s per GPU)."""
    x = v(dp=4, tp=8, pp=2)
    assert (
        x["tp_crosses_nodes"] is False
        and x["dp_crosses_nodes"] is True
        and x["pp_crosses_nodes"] is True
    )
    assert x["grad_bus_gb_s"] == pytest.approx(50 * NETWORK_EFFICIENCY)
    y = v(dp=8)
    assert y["dp_crosses_nodes"] is False and y["grad_bus_gb_s"] == pytest.approx(
        900 / 2 * NVLINK_EFFICIENCY
    )
    z = v(dp=16, tp=2)  # 4 data-parallel ranks per node drive 4 NICs
    assert z["grad_ranks_per_node"] == 4 and z["grad_bus_gb_s"] == pytest.approx(min(360, 4 * 45))
    assert "dp across nodes" in x["placement_summary"]


def test_nvme_offload_is_charged_at_nvme_speed():
    """ZeRO-Infinity: moments and master on NVMe are read and written back each step at the node's NVMe
    bandwidth (shared by its 8 GPUs), far slower than the same bytes over PCIe; the CPU updates them."""
    host = v(dp=8, zero=1, master_at="host", optimizer_at="host")
    nvme = v(dp=8, zero=1, master_at="nvme", optimizer_at="nvme")
    states = nvme["nvme_state_bytes_per_rank"]
    assert states == pytest.approx(12 * 8_190_735_360 / 8, rel=1e-6)
    assert nvme["nvme_stream_s"] == pytest.approx(2 * states * 8 / (13.3e9), rel=1e-9)
    assert nvme["time_offload_s"] > 10 * host["host_stream_s"]
    assert host["cpu_optimizer_s"] == pytest.approx(
        8_190_735_360 / 8 * 8 * CPU_ADAM_HOST_BYTES_PER_PARAM / 614.4e9, rel=1e-6
    )
    assert host["host_stream_s"] == pytest.approx(
        8_190_735_360 / 8 * (2 + 2) / (64e9 * HOST_LINK_EFFICIENCY), rel=1e-6
    )


def test_the_bandwidth_gate_closes_when_offload_cannot_stream_within_the_step():
    """Issue: a plan whose offloaded states cannot stream (and update) within the step budget is not feasible."""
    ok = v(dp=8, zero=1, master_at="host", optimizer_at="host")
    assert ok["bandwidth_gate"] is True
    slow = v(dp=8, zero=1, master_at="nvme", optimizer_at="nvme", nvme_gb_s=0.05)
    assert slow["time_offload_s"] > slow["step_budget_s"] and slow["bandwidth_gate"] is False
    assert v(dp=8)["bandwidth_gate"] is True  # nothing offloaded


def test_empty_mfu_is_predicted_and_a_given_one_decides():
    """Issue: with mfu empty the prediction decides days and cost; a measured mfu decides them and the
    prediction stands beside it with the difference."""
    pred = v(dp=8, zero=3)
    assert pred["mfu_source"] == "predicted" and pred["mfu"] == pytest.approx(pred["predicted_mfu"])
    assert pred["tokens_per_s_per_gpu"] == pytest.approx(
        pred["predicted_tokens_per_s_per_gpu"], rel=1e-9
    )
    given = v(dp=8, zero=3, mfu=0.3)
    assert given["mfu"] == 0.3 and given["predicted_mfu"] == pytest.approx(pred["predicted_mfu"])
    assert given["mfu_difference"] == pytest.approx(pred["predicted_mfu"] - 0.3)
    assert given["days_on_config"] == pytest.approx(
        5.2658e21 / (8 * 989e12 * 0.3) / 86400, rel=1e-3
    )
    assert given["meets_deadline"] == (given["days_on_config"] <= 25)
    assert given["days_over_deadline"] == pytest.approx(given["days_on_config"] - 25)


def test_fp8_runs_the_gemms_at_the_fp8_peak_and_attention_in_bf16():
    """compute_dtype fp8: the layers' GEMMs at the dense FP8 peak (H100: 1,979) and its efficiency; attention and the
    output layer stay bf16, so the step is faster but less than twice as fast. Ampere has no FP8: an error."""
    bf16, fp8 = v(dp=8, zero=3), v(dp=8, zero=3, compute_dtype="fp8")
    assert fp8["gemm_peak_flops"] == 1979e12 and bf16["gemm_peak_flops"] == 989e12
    assert bf16["step_time_s"] / 2 < fp8["step_time_s"] < bf16["step_time_s"]
    assert fp8["head_gemm_efficiency"] == pytest.approx(bf16["head_gemm_efficiency"])
    with pytest.raises(InputError, match="FP8 peak"):
        v(gpu="A100-80GB", dp=8, zero=3, compute_dtype="fp8")


def test_topology_columns_override_the_catalogue():
    """network_gb_s, nvlink_gb_s, hbm_gb_s, host_link_gb_s, nvme_gb_s and host_mem_gb_s replace the catalogue figures."""
    x = v(
        dp=4,
        tp=8,
        network_gb_s=25,
        nvlink_gb_s=400,
        hbm_gb_s=2000,
        host_link_gb_s=32,
        nvme_gb_s=5,
        host_mem_gb_s=300,
    )
    assert (
        x["network_gb_s"],
        x["nvlink_gb_s"],
        x["hbm_gb_s"],
        x["host_link_gb_s"],
        x["nvme_gb_s"],
        x["host_mem_gb_s"],
    ) == (25, 400, 2000, 32, 5, 300)
    assert (
        x["time_dp_s"] > v(dp=4, tp=8)["time_dp_s"]
    )  # the slower network exposes more of the reduction


def test_figures_that_do_not_depend_on_time_are_unchanged_by_it():
    """States, peaks, parameters and FLOPs read no time quantity: none of them refers to the time sections."""
    time_keys = {q.key for q in REGISTRY if q.section in ("time", "placement", "offload")}
    from ledger_report.model.expr import all_refs

    for key in (
        "state_bytes_per_rank",
        "peak_bytes_per_rank",
        "params_total",
        "flops_per_token",
        "total_flops",
    ):
        stack, seen = [key], set()
        while stack:
            k = stack.pop()
            if k in seen:
                continue
            seen.add(k)
            assert k not in time_keys, (key, k)
            stack.extend(all_refs(REGISTRY[k].expr))


@pytest.mark.parametrize(
    "x, text",
    [
        (1234.5678, "1,235"),
        (92.84, "92.8"),
        (1.5, "1.50"),
        (0.08693, "0.0869"),
        (0.006831, "0.00683"),
        (0.0004, "0.00040"),
    ],
)
def test_a_term_is_written_to_three_significant_figures(x, text):
    """sig_text: three significant figures from 0.001 up (the spreadsheet's TEXT(x, "#,##0.0…") with the
    places picked by magnitude), so the workbook's sentence and the handout's read the same."""
    from ledger_report.model.evaluate import eval_scalar
    from ledger_report.model.expr import Const, sig_text
    from ledger_report.model.tables import tables

    assert eval_scalar(sig_text(Const(x)), {}, {}, tables()) == text


def test_step_time_terms_name_the_terms_that_are_not_zero():
    """The pages' "step time by term" lists each nonzero term (compute, tp, pp, bubble, dp, optimizer
    here; no cp, ep or offload) in the order of the sum, in seconds, and in Chinese with its short name."""
    x = v(dp=4, tp=2, pp=2, zero=1, sequence_parallel=True)
    names = [part.split(" ")[0] for part in x["step_time_terms"].split(", ")]
    assert names == [k for k, *_ in TERMS if x[f"time_{k}_s"] > 0] and {
        "cp",
        "ep",
        "offload",
    }.isdisjoint(names)
    assert names[:2] == ["compute", "tp"] and "bubble" in names
    assert x["step_time_terms_zh"].startswith("计算 ") and "气泡 " in x["step_time_terms_zh"]
    # 16 GPUs in nodes of 8, tp innermost: tp 2 and dp 4 fill a node, pp 2 spans two
    assert x["placement_summary"] == "tp within a node; dp within a node; pp across nodes"
    assert x["placement_summary_zh"] == "tp 在节点内；dp 在节点内；pp 跨节点"
    assert (
        v(dp=8)["placement_summary"] == "no group crosses a node"
        and v(dp=8)["placement_summary_zh"] == "没有跨节点的组"
    )


def test_two_stages_have_no_middle_one_to_be_slowest():
    """With pp = 2 the stages are the first and the last: the slowest is one of them (the middle
    stage is defined only for pp > 2; with two it is a copy of the last)."""
    assert v(dp=4, pp=2)["slowest_stage"] in ("first", "last")
    assert v(dp=2, pp=4, layers=48)["slowest_stage"] in ("first", "middle", "last")


def test_no_predicted_step_no_sentence_about_it():
    """Without the architecture there is no predicted step time, so the assumption that days come
    from it is not stated (its numbers would be blank)."""
    x = compute(
        config_from_mapping(
            {
                "name": "p",
                "params_total": "8B",
                "seq_len": 4096,
                "global_batch": 64,
                "dp": 8,
                "tokens": "1B",
                "days": 10,
            }
        )
    ).values
    assert x["step_time_s"] is None and not x["note_predicted_shown"]
    assert v(dp=8)["note_predicted_shown"]


@pytest.mark.slow
def test_qwen3_8b_pareto_front_never_outruns_its_collectives_latency():
    """Issue #24: the shipped Qwen3-8B job's Pareto front (inputs/plan-examples.csv) has no plan whose
    step is shorter than the latency of the collectives it must run (NCCL's cost model per call), and
    each plan says what binds its step."""
    import csv
    from pathlib import Path

    from ledger_report.planner import plan

    path = Path(__file__).resolve().parents[1] / "inputs" / "plan-examples.csv"
    row = next(r for r in csv.DictReader(open(path, encoding="utf-8")) if "qwen3-8b" in r["name"])
    front = plan(config_from_mapping({k: x for k, x in row.items() if x != ""}))["pareto"]
    assert front
    for p in front:
        x = compute(config_from_mapping(p["row"])).values
        assert p["step_time_s"] >= x["collectives_latency_s"], p["row"]
        assert p["step_bound"] in ("compute", "communication", "latency", "bubble")


# Qwen3-30B-A3B (tests/data/hf_configs/Qwen3-30B-A3B.json): 48 layers, 128 experts, top-8, moe_ffn 768.
MOE = dict(
    QWEN,
    layers=48,
    hidden=2048,
    heads=32,
    kv_heads=4,
    ffn_hidden=6144,
    experts=128,
    topk=8,
    moe_ffn_hidden=768,
    framework="megatron",
    zero=1,
)


def test_expert_groups_are_placed_as_megatron_builds_them():
    """Megatron-LM megatron/core/parallel_state.py @d98e8a64: the expert RankGenerator has
    tp = expert_tensor_parallel_size and order tp-ep-dp, so with etp 1 the ep ranks are adjacent:
    tp 2 × ep 8 stays in a node of 8; the expert gradients reduce over the expert-DP group
    dp·cp·tp/(ep·etp) = 32·2/8 = 8 ranks, 8 apart (so across nodes)."""
    x = v(**MOE, dp=32, tp=2, ep=8, etp=1, sequence_parallel=True)
    assert x["ep_crosses_nodes"] is False
    assert x["egrad_crosses_nodes"] is True and x["expert_shard_group"] == 8
    assert x["edp_reduce_scatter_s"] > 0 and x["dp_reduce_scatter_s"] > 0


def test_node_dedup_sends_a_token_once_per_destination_node():
    """DeepEP / HybridEP (ep_dispatch node_dedup): a token goes to each other node holding one of its
    top-k experts once.  ep 32 over 4 nodes, top-8 uniform: (4 − 1)·(1 − (3/4)^8) = 2.7027 copies leave
    the node instead of 8 × 24/32 = 6, so the expert all-to-all shrinks."""
    a = v(**MOE, dp=32, ep=32, etp=1)
    b = v(**MOE, dp=32, ep=32, etp=1, ep_dispatch="node_dedup")
    assert b["ep_remote_nodes_per_token"] == pytest.approx(3 * (1 - 0.75**8), rel=1e-12)
    assert b["time_ep_s"] < a["time_ep_s"]


def test_imbalance_scales_the_busiest_ranks_expert_work():
    """moe_imbalance: the busiest expert-parallel rank's routed tokens over the mean scale its expert
    GEMMs and its all-to-all; 1.5 makes both 1.5× (nothing overlapped)."""
    a = v(**MOE, dp=32, ep=8, etp=1)
    b = v(**MOE, dp=32, ep=8, etp=1, moe_imbalance=1.5)
    assert b["first_stage_ep_comm_s"] == pytest.approx(1.5 * a["first_stage_ep_comm_s"], rel=1e-9)
    assert b["first_stage_compute_s"] > a["first_stage_compute_s"]


def test_a2a_and_p2p_overlap_switches():
    """moe_a2a_overlap (Megatron-LM overlap_moe_expert_parallel_comm, off by default) hides the
    all-to-all behind another micro-batch's compute, leaving 0.15 of it (the compute slowdown) when
    the compute is longer; overlap_p2p_comm (Megatron default on) only acts with the interleaved
    schedule (megatron/training/arguments.py @d98e8a64 turns it off without it)."""
    a = v(**MOE, dp=32, ep=8, etp=1)
    b = v(**MOE, dp=32, ep=8, etp=1, moe_a2a_overlap=True)
    raw = a["first_stage_ep_comm_s"]
    assert b["first_stage_ep_comm_s"] == pytest.approx(0.15 * raw, rel=1e-9)
    assert a["overlap_p2p_comm"] is True
    plain = v(**MOE, dp=8, pp=4)
    inter = v(**MOE, dp=8, pp=4, virtual_stages=2)
    off = v(**MOE, dp=8, pp=4, virtual_stages=2, overlap_p2p_comm=False)
    assert plain["time_pp_s"] > 0
    assert inter["first_stage_pp_comm_s"] == pytest.approx(
        0.15 * off["first_stage_pp_comm_s"], rel=1e-9
    )


def test_switches_change_no_figure_that_does_not_depend_on_time():
    """The overlap switches and the MoE time columns move the step time only: every memory, parameter
    and compute-floor figure of the row stays the same."""
    base = v(**MOE, dp=16, tp=2, pp=2, ep=8, etp=1, sequence_parallel=True)
    other = v(
        **MOE,
        dp=16,
        tp=2,
        pp=2,
        ep=8,
        etp=1,
        sequence_parallel=True,
        overlap_grad_reduce=True,
        overlap_param_gather=True,
        tp_comm_overlap=True,
        moe_a2a_overlap=True,
        overlap_p2p_comm=False,
        ep_dispatch="node_dedup",
        moe_imbalance=1.3,
        tp_qk_norm_gather=True,
    )
    for k in (
        "peak_bytes_per_rank",
        "peak_reserved_bytes_per_rank",
        "params_total",
        "flops_per_token",
        "state_floor_gpus",
    ):
        assert other[k] == base[k], k
    assert other["step_time_s"] != base["step_time_s"]


def test_hsdp_shards_within_a_node_and_all_reduces_across_replicas():
    """FSDP2 HSDP (dp_shard): the ZeRO-3 gathers run over the dp_shard·cp ranks of a node (a layer's
    gather runs NCCL's Simple ring over 8 ranks in one node: 8.4 + 7 × 3.4 = 32.2 µs of latency,
    against LL128's 14.0 + 336 × 1.9 + 47 × 4.0 = 840.4 µs over 384 ranks on 48 nodes, tuning.cc
    @5067397c), the state is
    sharded 8 ways instead of 384 (so more memory), and the gradient shard is all-reduced across the
    48 replicas, one GPU per node."""
    full = v(framework="fsdp2", dp=384, zero=3)
    hsdp = v(framework="fsdp2", dp=384, zero=3, dp_shard=8)
    assert full["dense_shard_group"] == 384 and hsdp["dense_shard_group"] == 8
    assert hsdp["peak_bytes_per_rank"] > full["peak_bytes_per_rank"]
    assert hsdp["grad_crosses_nodes"] is False and hsdp["rep_crosses_nodes"] is True
    assert hsdp["dp_layer_all_gather_latency_s"] == pytest.approx(32.2e-6, rel=1e-9)
    assert full["dp_layer_all_gather_latency_s"] == pytest.approx(840.4e-6, rel=1e-9)
    assert hsdp["rep_layer_all_reduce_s"] > 0 and full["rep_layer_all_reduce_s"] == 0
    with pytest.raises(InputError, match="dp_shard"):
        v(framework="fsdp2", dp=384, zero=3, dp_shard=7)


def test_attention_kernel_sets_the_attention_efficiency():
    """attention_kernel: FlashAttention-3 (Shah et al. 2024) runs the attention core at 0.60 of the H100
    BF16 peak against FlashAttention-2's 0.35 ("only 35% utilization on H100"), each times the
    sustained fraction; on an A100 FlashAttention-3 does not exist and the figure is FlashAttention-2's."""
    fa2 = v(dp=8, attention_kernel="fa2")
    fa3 = v(dp=8, attention_kernel="fa3")
    assert fa2["attention_efficiency"] == pytest.approx(0.35 * fa2["sustained_fraction"])
    assert fa3["attention_efficiency"] == pytest.approx(0.60 * fa3["sustained_fraction"])
    assert fa3["step_time_s"] < fa2["step_time_s"]
    a2 = v(dp=8, gpu="A100-80GB", attention_kernel="fa2")
    a3 = v(dp=8, gpu="A100-80GB", attention_kernel="fa3")
    assert a3["attention_efficiency"] == a2["attention_efficiency"]
    assert v(dp=8, framework="megatron")["attention_kernel"] == "cudnn"


def _nccl_ag(nbytes: float, n: int, bus_gb_s: float) -> float:
    """One all-gather over n ranks in a node, by hand from NVIDIA/nccl src/graph/tuning.cc @5067397c:
    the least over Simple, LL128, LL of ring base + (n − 1) NVLink steps + (n − 1)/n × bytes ÷
    (bus bandwidth × 1, 0.92, 0.5)."""
    moved = (n - 1) / n * nbytes / (bus_gb_s * 1e9)
    return min(
        (8.4 + (n - 1) * 3.4) * 1e-6 + moved,
        (14.0 + (n - 1) * 1.9) * 1e-6 + moved / 0.92,
        (6.6 + (n - 1) * 0.6) * 1e-6 + moved / 0.5,
    )


def test_torchtitan_qwen3_tp_plan_gathers_q_and_k_at_the_norms():
    """pytorch/torchtitan @d66b72a6 torchtitan/experiments/qwen3/infra/parallelize.py wraps q_norm and
    k_norm in NoParallel, which redistributes the head-sharded q and k to Replicate (issue #1867,
    fixed by PR #1870).  Worked by hand for the Qwen3-8B job at tp 8 in one node, one sequence of
    8,192 tokens per micro-batch, no recompute: per layer an all-gather of q (8,192 × 32 × 128 × 2 B
    = 67.1 MB) and of k (16.8 MB) forward, and of the gradients of q and of the keys repeated to all
    32 heads (67.1 MB each) backward, each costed as NCCL runs it over 450 × 0.8 GB/s; then the
    rotary and repeat_kv work on the 7/8 of q and k other ranks own, 22 + 26 bytes per element
    (eager bf16) at 3,350 × 0.9 GB/s."""
    row = dict(dp=1, tp=8, global_batch=8, framework="fsdp2", sequence_parallel=True)
    off, on = v(**row), v(**row, tp_qk_norm_gather=True)
    q, k = 8192 * 32 * 128 * 2, 8192 * 8 * 128 * 2
    gathers = 3 * _nccl_ag(q, 8, 360) + _nccl_ag(k, 8, 360)
    work = 8192 * (32 + 8) * 128 * 7 / 8 * (22 + 26) / (3350 * 0.9e9)
    assert on["first_stage_tp_qk_gather_s"] == pytest.approx(36 * (gathers + work), rel=1e-9)
    assert on["time_tp_s"] - off["time_tp_s"] == pytest.approx(
        8 * on["first_stage_tp_qk_gather_s"], rel=1e-9
    )
    assert off["first_stage_tp_qk_gather_s"] == 0
    assert v(**row, tp_qk_norm_gather=True, qk_norm=False)["first_stage_tp_qk_gather_s"] == 0


def test_sequence_parallel_on_batch_first_activations_copies_each_collective():
    """torch/distributed/_functional_collectives.py: all_gather_tensor on gather_dim 1 runs
    torch.cat(torch.chunk(res, group_size, dim=0), dim=gather_dim), reduce_scatter_tensor on
    scatter_dim 1 torch.cat(torch.chunk(self, ...)): a read and a write of the whole unsharded
    activation per collective in torchtitan's [batch, seq, hidden] layout (conventions
    sp_layout_copy), none in Megatron-LM's [seq, batch, hidden].  Qwen3-8B at tp 4: 36 layers × 8
    collectives (an all-gather and a reduce-scatter around attention and around the MLP, forward
    and backward) and 4 for the embedding's output and the output layer's input, 8,192 × 4,096 ×
    2 B = 67.1 MB each, read and written at 3,350 × 0.9 GB/s."""
    row = dict(dp=1, tp=4, global_batch=8, sequence_parallel=True)
    fsdp, megatron = v(**row, framework="fsdp2"), v(**row, framework="megatron")
    act = 8192 * 4096 * 2
    assert fsdp["first_stage_tp_layout_copy_s"] == pytest.approx(
        (36 * 8 + 4) * 2 * act / (3350 * 0.9e9), rel=1e-9
    )
    assert megatron["first_stage_tp_layout_copy_s"] == 0
    no_sp = {**row, "sequence_parallel": False}
    assert v(**no_sp, framework="fsdp2")["first_stage_tp_layout_copy_s"] == 0


def test_expert_tensor_parallel_gathers_the_routed_tokens():
    """Megatron-LM @d98e8a64 megatron/core/transformer/moe/token_dispatcher.py
    MoEAlltoAllTokenDispatcher: with expert TP, dispatch_postprocess all-gathers the routed tokens
    over the expert-TP group (bf16) and combine_preprocess reduce-scatters hidden_states.to(probs.dtype)
    (fp32); backward runs a reduce-scatter and an all-gather of the same sizes.  Qwen3-30B-A3B, tp 2 =
    etp 2 with sequence parallelism: the rank gathers 8,192 × 8 routed copies × 2,048 = 134.2 M
    elements, 268.4 MB in bf16 and 536.9 MB in fp32, each half moved over NVLink; per MoE layer two
    of each (no recompute), 48 layers.  With etp 1 there is none."""
    one = v(**MOE, dp=32, tp=2, ep=8, etp=1, sequence_parallel=True)
    two = v(**MOE, dp=32, tp=2, ep=8, etp=2, sequence_parallel=True)
    elems = 8192 * 8 * 2048
    per_layer = 2 * (_nccl_ag(elems * 2, 2, 360) + _nccl_ag(elems * 4, 2, 360))
    assert two["first_stage_etp_gather_s"] == pytest.approx(48 * per_layer, rel=1e-9)
    assert one["first_stage_etp_gather_s"] == 0
    assert two["time_ep_s"] == pytest.approx(
        384 / 32 * two["first_stage_ep_all_to_all_s"], rel=1e-9
    )  # 12 micro-batches, the gathers inside the expert term, nothing overlapped


def test_deepep_node_dedup_matches_deepeps_measured_internode_bandwidth():
    """deepseek-ai/DeepEP @dd758ca docs/legacy.md 'Normal kernels with NVLink and RDMA forwarding':
    EP 32 on H800 with one 400 Gb/s CX7 per GPU, 4,096 tokens per rank, hidden 7,168, top-8: combine
    (bf16) 57 GB/s 'bottleneck bandwidth (RDMA)', counted by tests/legacy/test_internode.py as
    num_rdma_token_sent × hidden × 2 bytes, a token once per node its experts sit on, its own node
    included (4 × (1 − (3/4)^8) = 3.60 nodes per token).  The model sends a token once to each of the
    2.70 other nodes over the GPU's NIC at 50 × 0.9 GB/s: the same bytes over its time read as a
    bandwidth within 10 % of DeepEP's."""
    x = v(
        name="deepep",
        layers=4,
        hidden=7168,
        heads=56,
        kv_heads=56,
        head_dim=128,
        ffn_hidden=18432,
        experts=256,
        topk=8,
        moe_ffn_hidden=2048,
        seq_len=4096,
        global_batch=32,
        dp=32,
        ep=32,
        etp=1,
        gpu="H800",
        network_gb_s=50,
        framework="megatron",
        zero=1,
        ep_dispatch="node_dedup",
    )
    one = x["first_stage_ep_all_to_all_s"] / (4 * 4)
    logical = 4096 * 4 * (1 - 0.75**8) * 7168 * 2 / one
    assert logical / 1e9 == pytest.approx(57, rel=0.10)


def test_hidden_cross_node_traffic_shares_the_nic_with_the_gradient_reduction():
    """Groups that cross nodes at the same time share the GPU's NIC (one per GPU, rail-optimised):
    the context-parallel ring hidden behind attention holds the NIC, so the data-parallel reduction
    that also crosses nodes hides behind less compute.  cp 16 spans two nodes of 8 and dp 4 is placed
    outside it: the window shrinks by exactly the hidden ring; with cp 8 in one node it does not."""
    far = v(dp=4, cp=16, global_batch=64)
    near = v(dp=4, cp=8, global_batch=32)
    assert far["cp_crosses_nodes"] and far["grad_crosses_nodes"]
    assert far["first_stage_nic_hidden_s"] > 0
    assert far["micro_batch_nic_free_compute_s"] == pytest.approx(
        far["micro_batch_compute_s"] - far["first_stage_nic_hidden_s"], rel=1e-12
    )
    assert not near["cp_crosses_nodes"] and near["first_stage_nic_hidden_s"] == 0
    assert near["micro_batch_nic_free_compute_s"] == near["micro_batch_compute_s"]


def test_megatron_gradient_buckets_grow_with_data_parallel_size():
    """Megatron-LM @d98e8a64 megatron/core/distributed/distributed_data_parallel.py: bucket_size =
    max(40000000, 1000000 * dp_group.size()) with overlap_grad_reduce: 40 M parameters up to dp 40,
    128 M at dp 128."""
    row = dict(framework="megatron", zero=1, overlap_grad_reduce=True, global_batch=1024)
    assert v(**row, dp=32)["dp_bucket_params"] == 40_000_000
    assert v(**row, dp=128)["dp_bucket_params"] == 128_000_000


def test_expert_gemms_are_quantized_in_waves_as_their_kernels_launch():
    """Tile and wave quantization (NVIDIA 'Matrix Multiplication Background User's Guide';
    stas00/ml-engineering @744d01e1 training/performance/README.md: C = ⌈M/Tm⌉·⌈N/Tn⌉ tiles,
    W = ⌈C/SMs⌉ waves, C/(W·SMs) of them busy), best of the 128×256, 256×128 and 128×128 tiles.
    Qwen3-30B-A3B, seq 1024, micro-batch 1, ep 8: 1024 × 8 routed copies over 128/8 = 16 local experts
    = 512 tokens per expert; mean width 3·2048·768 ÷ (2048 × 2 GEMMs) = 1152, so one expert's GEMM
    is 4·5 = 20, 2·9 = 18 or 4·9 = 36 tiles.  Megatron-LM (Transformer Engine GroupedLinear, 4 cuBLAS
    streams, TransformerEngine @d0067d0d cublaslt_gemm.cu multi_stream_cublas_gemm): 4·20 = 80 tiles in
    one wave of H100's 132 SMs = 80/132 (A100's 108: 80/108); DeepSpeed (one expert at a time,
    deepspeed/moe/experts.py): 36/132; a GPU with no published SM count: 1."""
    h100 = v(**{**MOE, "seq_len": 1024}, dp=8, ep=8, etp=1)
    assert h100["tokens_per_local_expert"] == 512 and h100["gemm_sm_count"] == 132
    assert h100["expert_gemms_at_once"] == 4
    assert h100["expert_gemm_wave_efficiency"] == pytest.approx(80 / 132, rel=1e-12)
    a100 = v(**{**MOE, "seq_len": 1024, "gpu": "A100-80GB"}, dp=8, ep=8, etp=1)
    assert a100["expert_gemm_wave_efficiency"] == pytest.approx(80 / 108, rel=1e-12)
    ds = v(**{**MOE, "seq_len": 1024, "framework": "deepspeed"}, dp=8, ep=8, etp=1)
    assert ds["expert_gemms_at_once"] == 1
    assert ds["expert_gemm_wave_efficiency"] == pytest.approx(36 / 132, rel=1e-12)
    assert ds["expert_gemm_efficiency"] < h100["expert_gemm_efficiency"]
    mi = v(**{**MOE, "seq_len": 1024, "gpu": "MI300X"}, dp=8, ep=8, etp=1)
    assert mi["gemm_sm_count"] == 0 and mi["expert_gemm_wave_efficiency"] == 1


def test_torch_grouped_mm_fills_the_waves_with_every_local_expert():
    """torchtitan runs every local expert in one torch._grouped_mm (torchtitan @b5bcd76c
    torchtitan/models/common/moe.py): 16 experts × 36 tiles of 128×128 = 576 tiles, 5 waves of 132
    SMs = 576/660 (128×256: 16·20 = 320 in 3 waves = 320/396 is worse)."""
    x = v(**{**MOE, "seq_len": 1024, "framework": "fsdp2", "zero": 3}, dp=8, ep=8, etp=1)
    assert x["expert_gemms_at_once"] == 16
    assert x["expert_gemm_wave_efficiency"] == pytest.approx(576 / 660, rel=1e-12)


def test_an_expert_gemm_with_few_tokens_is_bound_by_hbm():
    """Roofline (NVIDIA 'Matrix Multiplication Background User's Guide', math and memory bounds): a
    GEMM of M × N × K reaches at most its arithmetic intensity 2·M·N·K ÷ (2 bytes × (M·K + K·N + M·N))
    times the HBM bandwidth.  Qwen3-30B-A3B on H100 (3,350 GB/s × 0.9 streamed, 989 TFLOP/s), K = 2048,
    N = 1152: 512 tokens per expert give 302.2 FLOP/B → 0.921 of the peak (above what the GEMM reaches
    anyway); 64 tokens (seq 128) give 58.89 FLOP/B → 0.1795.  Under torchtitan (all 16 local experts in
    one grouped GEMM: 16·5 = 80 tiles of 128×256 in one wave, 80/132) the waves would allow
    0.57 × 0.606, so that bound sets the expert GEMMs' efficiency (× the grouped factor and the size
    ramp F/(F + peak × GEMM_RAMP_S))."""
    bw = 3350 * 0.9 * 1e9

    def bound(m, n=1152, k=2048):
        return 2 * m * n * k / (2 * (m * k + k * n + m * n)) * bw / 989e12

    many = v(**{**MOE, "seq_len": 1024}, dp=8, ep=8, etp=1)
    few = v(**{**MOE, "seq_len": 128, "framework": "fsdp2", "zero": 3}, dp=8, ep=8, etp=1)
    assert many["expert_gemm_memory_bound_efficiency"] == pytest.approx(bound(512), rel=1e-9)
    assert bound(512) == pytest.approx(0.921, abs=1e-3)
    assert few["tokens_per_local_expert"] == 64
    assert few["expert_gemm_memory_bound_efficiency"] == pytest.approx(bound(64), rel=1e-9)
    assert bound(64) == pytest.approx(0.1795, abs=1e-4)
    assert few["expert_gemm_wave_efficiency"] == pytest.approx(80 / 132, rel=1e-12)
    assert bound(64) < few["layer_gemm_efficiency"] * 80 / 132
    flops = 2 * 64 * 3 * 2048 * 768 / 2
    ramp = flops / (flops + 989e12 * GEMM_RAMP_S)
    assert few["expert_gemm_efficiency"] == pytest.approx(
        bound(64) * GROUPED_GEMM_RELATIVE * ramp, rel=1e-9
    )


def test_dense_gemms_fill_their_waves_with_the_best_tile():
    """Qwen3-8B on H100, seq 8192: a layer's parameters 4096·(32 + 2·8)·128 + 32·128·4096 +
    3·4096·12288 + two norms 2·4096 + q/k norms 2·128 = 192,946,432, mean GEMM width ÷ (4096 × 4)
    = 11,776.5; over 8192 tokens: 64·47 = 3,008 tiles of 128×256 in 23 waves (3,036) = 0.99078, the
    best (256×128: 32·93 = 2,976 in 23 waves = 0.9802; 128×128: 64·93 = 5,952 in 46 waves (6,072) =
    0.9802); the output layer (151,936 wide): 64·594 = 38,016 tiles of 128×256 in 288 waves
    (38,016 = 288·132: every wave full)."""
    x = v(dp=8)
    assert 192_946_432 / (4096 * 4) == pytest.approx(11_776.5, abs=0.1)
    assert x["dense_layer_gemm_wave_efficiency"] == pytest.approx(3008 / 3036, rel=1e-12)
    assert x["head_gemm_wave_efficiency"] == pytest.approx(1.0, rel=1e-12)


def test_megatron_moe_layers_run_only_the_attentions_tensor_parallel_collectives():
    """Megatron-LM @6a6cd478 megatron/core/transformer/moe/token_dispatcher.py: the token dispatchers
    take ``model_comm_pgs.expt_tp`` as their tp group, so with sequence parallelism each tp rank routes
    its own sequence shard and an MoE layer's only tensor-parallel collectives are its attention's: an
    all-gather and a reduce-scatter per pass (forward, backward), against two of each in a dense layer.
    Qwen3-30B-A3B (48 MoE layers), tp 2, one stage holding the embedding and the output layer: 2·48 + 2
    pairs per micro-batch; torchtitan's MoE TP plan (apply_moe_ep_tp, pytorch/torchtitan PR #1324:
    "all-gather for input, reduce-scatter for output") gathers the MoE block's input as well: 4·48 + 2;
    so does a Megatron shared expert (SharedExpertMLP, a tensor-parallel MLP); full recompute runs the
    forward's again: 3·48 + 2."""
    row = dict(MOE, dp=8, tp=2, ep=8, etp=1, sequence_parallel=True)
    meg = v(**row)
    pair = meg["tp_reduce_scatter_s"] + meg["tp_all_gather_s"]
    assert pair > 0
    assert meg["first_stage_tp_comm_s"] == pytest.approx((2 * 48 + 2) * pair, rel=1e-9)
    full = v(**row, recompute="full")
    assert full["first_stage_tp_comm_s"] == pytest.approx((3 * 48 + 2) * pair, rel=1e-9)
    shared = v(**row, shared_expert_ffn=768)
    assert shared["first_stage_tp_comm_s"] == pytest.approx((4 * 48 + 2) * pair, rel=1e-9)
    titan = v(**{**row, "framework": "fsdp2", "zero": 3})
    pair_t = titan["tp_reduce_scatter_s"] + titan["tp_all_gather_s"]
    assert titan["first_stage_tp_comm_s"] == pytest.approx((4 * 48 + 2) * pair_t, rel=1e-9)


@pytest.mark.parametrize(
    "framework, recompute",
    [("fsdp2", "selective"), ("megatron", "selective"), ("megatron", "full")],
)
def test_measured_and_predicted_hfu_count_the_same_recompute_flops(framework, recompute):
    """Which FLOPs recompute runs again, by hand from the frameworks' code: pytorch/torchtitan
    @b5bcd76c torchtitan/distributed/activation_checkpoint.py wraps only model.layers, and its
    SelectiveAC saves the attention ops and "all compute/comm ops, except every second mm/linear"
    (half the layers' forward matmuls again: 1/6 of their 6 FLOPs per parameter and token);
    Megatron-LM @d98e8a64 megatron/core/transformer/transformer_block.py checkpoints the block's
    layers under 'full' (their forward again, 1/3; gpt_model.py's output_layer runs after the block)
    and transformer_config.py's selective recompute_modules ['core_attn'] reruns attention's
    forward (1/3 of it).  The output head 6·vocab·h is never rerun.  A measured mfu equal to the
    predicted one gives the predicted HFU."""
    x = v(framework=framework, recompute=recompute, dp=2, zero=3 if framework == "fsdp2" else 1)
    fpt, attn = x["flops_per_token"], x["attention_flops_per_token"]
    layers = fpt - attn - 6 * 151936 * 4096
    extra = {
        ("fsdp2", "selective"): layers / 6,
        ("megatron", "selective"): attn / 3,
        ("megatron", "full"): (layers + attn) / 3,
    }[framework, recompute]
    assert x["recompute_flops_per_token"] == pytest.approx(extra, rel=1e-12)
    assert x["predicted_hfu"] == pytest.approx(x["predicted_mfu"] * (1 + extra / fpt), rel=1e-12)
    measured = v(
        framework=framework,
        recompute=recompute,
        dp=2,
        zero=3 if framework == "fsdp2" else 1,
        mfu=x["predicted_mfu"],
    )
    assert measured["hfu"] == pytest.approx(x["predicted_hfu"], rel=1e-12)
