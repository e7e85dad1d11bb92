"""Framework conventions as data: one row per convention, one field per thing that differs.

The definitions read a convention's fields through the ``convention`` lookup table (like the dtype
and optimizer tables), so the workbook carries them on a lookup sheet and its formulas follow a
changed field.  Adding a convention is adding a row here (and its tests); no definition, reporter
or validation names a framework.

Fields (1 = yes, 0 = no):

- ``main_grad_default``: the main-gradient dtype when the row leaves ``main_grad_dtype`` empty.
- ``grad_dtype_default``: the model-gradient dtype when the row leaves ``grad_dtype`` empty.
- ``zero0`` … ``zero3``: the ZeRO stages the framework has (1 = it can run the stage).
- ``grads_shard_stage``: the ZeRO stage from which model gradients are sharded.
- ``weights_persist_z3``: under ZeRO-3 the compute-dtype weights persist as a sharded state (0:
  only the sharded fp32 parameter persists and compute weights are gathered per layer).
- ``grads_persist_z3``: under ZeRO-3 the model gradients persist as a state (0: only the fp32
  main gradients do).
- ``bucket_fixed_bytes``, ``bucket_elems``: gradient-communication buckets outside the state:
  a fixed number of bytes, plus a number of elements of the gradient dtype.
- ``pp_zero_max``: the highest ZeRO stage the framework runs together with pipeline parallelism.
- ``loss_impl_default``, ``loss_impl_tp_default``: the cross-entropy's implementation without and
  with tensor parallelism (torchtitan turns loss parallel on with TP:
  torchtitan/distributed/utils.py ``maybe_enable_loss_parallel`` unless
  ``parallelism.disable_loss_parallel``; Megatron-LM: its vocab-parallel loss).
- ``head_input_sharded``: under sequence parallelism the output layer saves its sequence shard
  (1: Megatron-LM gathers it again in backward) or the gathered sequence (0).
- ``pp_keeps_outputs``: a pipeline stage keeps each in-flight micro-batch's output until its
  backward (0: Megatron-LM frees the output's data once sent).
- ``moe_combine_saved_bytes``: bytes per h of each routed token that the MoE combine keeps for the
  routing weights' gradient (0 where the weights are applied inside the experts' activation;
  compiled, at most the 16-bit output).

Time (definitions/time.py; each field's sources are cited where a definition reads it):

- ``cp_overlap``: the share of the context-parallel K/V ring hidden behind the attention chunks.
- ``overlap_p2p_comm_default``, ``tp_comm_overlap_default``, ``attention_kernel_default``: the
  defaults of the columns ``overlap_p2p_comm``, ``tp_comm_overlap`` and ``attention_kernel``
  (DeepSpeed's and torch.distributed.pipelining's schedules wait for each receive: no p2p overlap).
- ``overlap_grad_reduce_from_zero``, ``overlap_param_gather_from_zero``: the ZeRO stage from which
  the columns ``overlap_grad_reduce``, ``overlap_param_gather`` default on (0: always, 99: never).
- ``sp_layout_copy``: 1 where the sequence-parallel collectives run on the sequence dimension of
  batch-first activations, so each copies the whole unsharded activation once (torchtitan's
  [batch, seq, hidden], torchtitan/models/llama3/infra/parallelize.py); 0 where the sequence is
  dimension 0 (Megatron-LM's [seq, batch, hidden], megatron/core/tensor_parallel/mappings.py).
- ``dp_bucket_params``: parameters per gradient bucket (one data-parallel collective) when the
  reduction overlaps the backward (0: one per layer, as FSDP2); ``dp_bucket_params_per_dp``: the
  bucket grows to at least this many parameters per data-parallel rank (Megatron-LM: "make
  buckets larger to ensure that chunks used in NCCL ring-reduce implementations are large enough
  to remain bandwidth-bound"; 0: fixed).
- ``pp_dp_overlap``: 1 where the gradient reduction may overlap the backward with pipeline
  parallelism (0: DeepSpeed's pipeline engine reduces the gradients after the pipeline flush,
  deepspeed/runtime/pipe/engine.py ReduceGrads).
- ``expert_gemm_streams``: how many local experts' GEMMs run at once, sharing the SMs (0: all of
  them, one grouped kernel).  Megatron-LM with ``--moe-grouped-gemm`` (as its MoE recipes and the
  published runs set it; off by default, gpt_layer_specs.py @d98e8a64, which loops over the experts
  in SequentialMLP and is not a column yet) runs TEGroupedMLP: Transformer Engine's GroupedLinear,
  one cuBLAS GEMM per expert round-robin over 4 compute streams (TransformerEngine @d0067d0d
  transformer_engine/common/gemm/cublaslt_gemm.cu multi_stream_cublas_gemm,
  common/util/multi_stream.cpp num_compute_streams = 4); torchtitan one ``torch._grouped_mm``
  over every local expert (torchtitan @b5bcd76c torchtitan/models/common/moe.py); DeepSpeed loops
  over its experts (deepspeed/moe/experts.py @edaa7221: ``for chunk, expert in zip(...)``), as a
  plain PyTorch MoE does (1).
- ``moe_block_tp_collectives``: 1 where an MoE block gathers its sequence-parallel input over tp
  and reduce-scatters its output as a tensor-parallel MLP does (torchtitan's ``apply_moe_ep_tp``,
  pytorch/torchtitan PR #1324: ``PrepareModuleInputOutput`` from ``Shard(1)`` to ``Replicate()``
  and from ``Partial()`` to ``Shard(1)``, "all-gather for input, reduce-scatter for output"); 0 where the
  routed tokens stay in their sequence shard and only the expert-TP group gathers them
  (Megatron-LM @6a6cd478 megatron/core/transformer/moe/token_dispatcher.py: the dispatchers'
  ``tp_group`` is ``model_comm_pgs.expt_tp``), so an MoE layer's tensor-parallel collectives are
  its attention's (and its shared expert's, a tensor-parallel MLP).
- ``moe_host_sync``: 1 where an MoE layer's dispatch waits on the host for the tokens per expert
  every forward pass, so the host launches what follows with no lead over the GPU (Megatron-LM);
  0 where the counts stay on the GPU (torchtitan's ``torch._grouped_mm`` takes device offsets).
- ``eager_rotary``: 1 where the rotary embedding and the key/value repeat run as eager PyTorch ops
  on every head of the rank (torchtitan); 0 where they are fused (Megatron-LM with Transformer
  Engine) or not examined (generic, DeepSpeed).
- ``z3_gather_copy_out``: 1 where each ZeRO-3 all-gather lands in one flat buffer that the compute
  stream then copies into the parameters' own tensors (FSDP2); 0 where not examined (DeepSpeed,
  generic).
- ``reduce_every_micro_from``: the ZeRO stage from which gradients are reduced every micro-batch
  instead of once per step (99: never).
"""

from __future__ import annotations

from typing import Any

MIB = 2**20

# The constants of the memory model whose value is chosen from measured peaks (each a field of every
# convention below): tests/support/measured.py refits them on tests/data/measured_runs.csv, in
# sample and leaving each source out, and bench/bench_fidelity.py prints both.  Everything else in
# the table is read from a framework's code.
FITTED_CONSTANTS = ("reserved_fraction", "reserved_fraction_expandable")

# The generic convention (ZeRO as the paper describes it); each other convention is it with the
# fields that differ.
_GENERIC: dict[str, Any] = {
    "main_grad_default": "none",
    "grad_dtype_default": "bf16",
    "zero0": 1,
    "zero1": 1,
    "zero2": 1,
    "zero3": 1,
    "grads_shard_stage": 2,
    "weights_persist_z3": 1,
    "grads_persist_z3": 1,
    "bucket_fixed_bytes": 2 * 25 * MIB,
    "bucket_elems": 0,
    "pp_zero_max": 3,
    "logits_dtype_default": "fp32",
    "autocast_cache": 1,
    "norm_saved_bytes": 8,
    "glu_saved_bytes": 8,
    "loss_fp32_default": 1,
    "selective_mode": "core_attn",
    "grads_at_setup": 0,
    "moments_lazy": 1,
    "ce_fwd_bytes": 8,
    "ce_bwd_bytes": 12,
    "ce_fwd_bytes_compiled": 0,
    "ce_bwd_bytes_compiled": 2,
    "logits_kept": 1,
    "z3_layers_gathered": 2,
    "z3_largest_factor": 0,
    "z3_head_kept": 0,
    "pp_unsharded_grads": 0,
    "optimizer_temp_bytes": 4,
    "moe_combine_saved_bytes": 2,
    "cp_overlap": 0.9,
    "pp_dp_overlap": 1,
    "overlap_grad_reduce_from_zero": 0,
    "overlap_param_gather_from_zero": 0,
    "tp_comm_overlap_default": 0,
    "reduce_every_micro_from": 3,
    "dp_bucket_params": 13_107_200,
    "dp_bucket_params_per_dp": 0,
    "sp_layout_copy": 0,
    "overlap_p2p_comm_default": 0,
    "loss_impl_default": "eager_fp32",
    "loss_impl_tp_default": "eager_fp32",
    "head_input_sharded": 0,
    "pp_keeps_outputs": 1,
    "attention_kernel_default": "sdpa",
    "expert_gemm_streams": 1,
    "moe_block_tp_collectives": 1,
    "moe_host_sync": 0,
    "eager_rotary": 0,
    "z3_gather_copy_out": 0,
    "reserved_fraction": 0.04,
    "reserved_fraction_expandable": 0.12,
    "en": "generic: ZeRO-1 shards master, moments and main gradients; ZeRO-2 also gradients; ZeRO-3 also weights",
    "zh": "generic：ZeRO-1 分片主权重、动量与主梯度；ZeRO-2 再分片梯度；ZeRO-3 再分片权重",
    "source": "Rajbhandari et al. 2020 (ZeRO), section 5; torch/nn/parallel/distributed.py DistributedDataParallel(bucket_cap_mb=25); time: torch DistributedDataParallel overlaps the bucketed all-reduce with backward, FSDP prefetches its all-gathers (torch/distributed/fsdp); TP overlap off (no async TP by default); MoE combine: huggingface/transformers src/transformers/models/qwen3_moe/modeling_qwen3_moe.py Qwen3MoeSparseMoeBlock multiplies each expert's output by its routing weight (the product keeps the 16-bit output)",
}

CONVENTIONS: dict[str, dict[str, Any]] = {
    "generic": _GENERIC,
    "megatron": {
        **_GENERIC,
        "zero2": 0,
        "grads_shard_stage": 3,
        "bucket_fixed_bytes": 0,
        "logits_dtype_default": "bf16",
        "autocast_cache": 0,
        "norm_saved_bytes": 4,
        "glu_saved_bytes": 6,
        "grads_at_setup": 1,
        "ce_fwd_bytes": 4,
        "ce_bwd_bytes": 6,
        "ce_fwd_bytes_compiled": 4,
        "ce_bwd_bytes_compiled": 6,
        "logits_kept": 0,
        "optimizer_temp_bytes": 0,
        "moe_combine_saved_bytes": 0,
        "overlap_grad_reduce_from_zero": 99,
        "overlap_param_gather_from_zero": 99,
        "reduce_every_micro_from": 99,
        "dp_bucket_params": 40_000_000,
        "dp_bucket_params_per_dp": 1_000_000,
        "overlap_p2p_comm_default": 1,
        "loss_impl_default": "megatron_fused",
        "loss_impl_tp_default": "megatron_fused",
        "head_input_sharded": 1,
        "pp_keeps_outputs": 0,
        "attention_kernel_default": "cudnn",
        "expert_gemm_streams": 4,
        "moe_block_tp_collectives": 0,
        "moe_host_sync": 1,
        "en": "megatron: grad_dtype is the gradient buffer (param.main_grad), kept whole; zero=1 is the distributed optimizer sharding master and moments over dp·cp (experts over expert-DP)",
        "zh": "megatron：grad_dtype 指梯度 buffer（param.main_grad），不分片；zero=1 为分布式优化器，主权重与动量沿 dp·cp 分片（专家沿专家 DP）",
        "source": "Megatron-LM megatron/core/distributed/param_and_grad_buffer.py (_ParamAndGradBuffer), megatron/core/optimizer/distrib_optimizer.py (DistributedOptimizer); docs/source/api-guide/dist_optimizer.md; time: megatron/core/distributed/distributed_data_parallel_config.py (overlap_grad_reduce=False, overlap_param_gather=False by default), megatron/training/arguments.py (--tp-comm-overlap off by default; num_layers divisible by the pipeline size), megatron/core/transformer/moe/token_dispatcher.py (all-to-all on the critical path); MoE combine: megatron/core/transformer/moe/experts.py TEGroupedMLP applies the probabilities inside the activation (weighted_bias_swiglu_impl), token_dispatcher.py unpermute takes none",
    },
    "deepspeed": {
        **_GENERIC,
        "main_grad_default": "fp32",
        "grads_persist_z3": 0,
        "bucket_fixed_bytes": 0,
        "bucket_elems": 500_000_000,
        "pp_zero_max": 1,
        "autocast_cache": 0,
        "z3_layers_gathered": 0,
        "z3_largest_factor": 4,
        "optimizer_temp_bytes": 0,
        "pp_dp_overlap": 0,
        "overlap_grad_reduce_from_zero": 3,
        "overlap_param_gather_from_zero": 3,
        "reduce_every_micro_from": 2,
        "dp_bucket_params": 500_000_000,
        "attention_kernel_default": "fa2",
        "en": "deepspeed: ZeRO-2 = 2 + 18/N and ZeRO-3 = 18/N bytes per parameter, as DeepSpeed's own estimators; 16-bit gradients do not persist under ZeRO-3",
        "zh": "deepspeed：ZeRO-2 = 2 + 18/N，ZeRO-3 = 18/N 字节/参数，与 DeepSpeed 自带估算一致；ZeRO-3 下 16 位梯度不常驻",
        "source": "DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py, stage3.py (estimate_zero2_model_states_mem_needs, estimate_zero3_model_states_mem_needs); deepspeed/runtime/zero/config.py (reduce_bucket_size, allgather_bucket_size = 5e8); deepspeed/runtime/pipe/engine.py (ZeRO-2/3 not supported with pipeline parallelism); time: deepspeed/runtime/zero/stage_1_and_2.py (gradients reduced in every backward from ZeRO-2, overlap_comm), stage3.py (prefetched parameter gathers), pipe/engine.py (ReduceGrads after the schedule's last backward); MoE combine: deepspeed/moe/sharded_moe.py MOELayer.forward einsum('sec,ecm->sm', combine_weights, expert_output) keeps the expert output",
    },
    "fsdp2": {
        **_GENERIC,
        "expert_gemm_streams": 0,
        "grad_dtype_default": "fp32",
        "zero1": 0,
        "weights_persist_z3": 0,
        "bucket_fixed_bytes": 0,
        "logits_dtype_default": "bf16",
        "autocast_cache": 0,
        "selective_mode": "selective_op",
        "logits_kept": 0,
        "z3_head_kept": 1,
        "pp_unsharded_grads": 1,
        "optimizer_temp_bytes": 0,
        "moe_combine_saved_bytes": 4,
        "reduce_every_micro_from": 2,
        "dp_bucket_params": 0,
        "sp_layout_copy": 1,
        "eager_rotary": 1,
        "z3_gather_copy_out": 1,
        "loss_impl_tp_default": "loss_parallel",
        "en": "fsdp2: PyTorch FSDP2 as torchtitan runs it: sharded fp32 parameters (the master), fp32 gradients and moments; bf16 layers gathered one at a time; selective recompute saves by operator",
        "zh": "fsdp2：torchtitan 所用的 PyTorch FSDP2：分片的 fp32 参数（即主权重）、fp32 梯度与动量；bf16 层逐层聚合；选择性重计算按算子保存",
        "source": "PyTorch torch/distributed/fsdp/_fully_shard/_fsdp_param.py (FSDPParam: sharded parameter in its original dtype, unsharded all-gather outputs, to_accumulated_grad_if_needed); torchtitan torchtitan/distributed/fsdp.py (MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)), activation_checkpoint.py (SelectiveAC), components/loss.py (cross_entropy on pred.float()); torch/distributed/pipelining/stage.py; time: torch/distributed/fsdp/_fully_shard (all-gathers prefetched, reduce-scatter per backward); torchtitan torchtitan/distributed/parallel_dims.py (async TP off by default); MoE combine: torchtitan torchtitan/models/common/token_dispatcher.py LocalTokenDispatcher.combine multiplies routed_output.to(float32) by the scores (the fp32 copy is kept)",
    },
}


def convention_names() -> tuple[str, ...]:
    return tuple(CONVENTIONS)
