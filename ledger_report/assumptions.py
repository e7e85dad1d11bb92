"""The assumptions each ledger states in words (English and Chinese), from its resolved values."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import units

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Ledger


def assumptions(ledger: "Ledger") -> tuple[list[str], list[str]]:
    v = ledger.values
    en: list[str] = []
    zh: list[str] = []

    def add(e: str, z: str) -> None:
        en.append(e)
        zh.append(z)

    add("GB = 10^9 bytes and GiB = 2^30 bytes; state lines are per rank on the reported pipeline stage.",
        "GB = 10^9 字节，GiB = 2^30 字节；状态行均为报告流水段上的每卡数值。")
    fw = v["framework"]
    if fw == "megatron":
        add("framework=megatron: grad_dtype is Megatron's gradient buffer (param.main_grad), kept whole; zero=1 is the distributed optimizer sharding master and moments over dp·cp (experts over expert-DP).",
            "megatron 口径：grad_dtype 指 Megatron 的梯度 buffer（param.main_grad），不分片；zero=1 为分布式优化器，主权重与动量沿 dp·cp 分片（专家沿专家 DP 组）。")
    elif fw == "deepspeed":
        add("framework=deepspeed: ZeRO-2 = 2 + 18/N and ZeRO-3 = 18/N bytes per parameter, as DeepSpeed's own estimators; 16-bit gradients do not persist under ZeRO-3.",
            "deepspeed 口径：ZeRO-2 = 2 + 18/N，ZeRO-3 = 18/N 字节/参数，与 DeepSpeed 自带估算一致；ZeRO-3 下 16 位梯度不常驻。")
    else:
        add("framework=generic: ZeRO-1 shards master, moments and main gradients; ZeRO-2 also gradients; ZeRO-3 also weights.",
            "generic 口径：ZeRO-1 分片主权重、动量与主梯度；ZeRO-2 再分片梯度；ZeRO-3 再分片权重。")
    if v["has_arch"]:
        add("Parameters counted from the architecture as Megatron-LM does: no linear biases, no position embeddings, vocabulary unpadded.",
            "参数按 Megatron-LM 的理论口径由结构计算：无线性层偏置、无位置嵌入、词表不填充。")
    else:
        add("Parameter counts given directly: activations, logits and attention FLOPs need the architecture columns and are left out or blank.",
            "直接给出参数量：激活、logits 与注意力 FLOPs 需要结构列，因此缺省或留空。")
    if ledger.config.get("params_expert") is None and ledger.config.get("params_per_rank") is not None and (v["ep"] or 1) > 1:
        add(f"Expert split solved from params_per_rank: expert {units.params(v['params_expert'])}, non-expert {units.params(v['params_dense'])}.",
            f"专家拆分由每卡参数反推：专家 {units.params(v['params_expert'], 'zh')}，非专家 {units.params(v['params_dense'], 'zh')}。")
    if v["params_expert"]:
        add(f"Expert states shard over expert-DP = dp·cp·tp/(ep·etp) = {units.num(v['expert_shard_group'])}, not over dp·cp = {units.num(v['dense_shard_group'])}.",
            f"专家状态沿专家 DP 组 dp·cp·tp/(ep·etp) = {units.num(v['expert_shard_group'])} 分片，而不是 dp·cp = {units.num(v['dense_shard_group'])}。")
        add("Every rank of the expert-parallel group is assumed to hold an equal share of experts and routed tokens (no routing imbalance).",
            "假设专家并行组内各卡的专家与路由 token 均匀（不建模路由不均）。")
    if v["pp"] > 1:
        add(f"Pipeline: the {v['reported_stage']} stage is reported (the most loaded); the first stage holds the embedding, the last the output head and final norm.",
            f"流水线：报告负载最大的{'首' if v['reported_stage'] == 'first' else '末'}段；首段持有输入嵌入，末段持有输出头与末层 norm。")
    add("Compute floor from MFU: 6 × (active parameters − untied input embedding) + causal attention FLOPs per token; communication and pipeline bubbles are inside the MFU.",
        "算力下界由 MFU 给出：每 token 6 × (激活参数 − 不共享的输入嵌入) + 因果注意力 FLOPs；通信与流水气泡已含在 MFU 中。")
    if v["recompute"] == "full":
        add(f"Full recompute runs the forward twice: hardware FLOPs are 8/6 of model FLOPs, so HFU = {units.num(v['hfu'])} at MFU {units.num(v['mfu'])}.",
            f"全重计算前向算两遍：硬件 FLOPs 为模型 FLOPs 的 8/6，MFU {units.num(v['mfu'])} 时 HFU = {units.num(v['hfu'])}。")
    if (v["host_state_bytes_per_rank"] or 0) + (v["nvme_state_bytes_per_rank"] or 0) > 0:
        add(f"Offloaded states leave the HBM sum; streaming them in and out each step takes about {units.num(v['offload_stream_s'])} s over a {units.num(v['host_link_gb_s'])} GB/s host link.",
            f"卸载的状态不计入显存；每步经 {units.num(v['host_link_gb_s'])} GB/s 主机链路换入换出约需 {units.num(v['offload_stream_s'])} 秒。")
    if v["tokens"] is None:
        add("No tokens given: the compute floor is blank.", "未给出训练 token 数：算力下界留空。")
    return en, zh
