"""A Hugging Face ``config.json`` read into the input columns of the architecture.

``columns_from_config(cfg)`` turns the mapping of a ``config.json`` into the columns that count its
parameters (layers, hidden, heads, ..., the MLA, MoE, hybrid and bias columns), the way the
reference implementation of its family builds the modules (huggingface/transformers
``src/transformers/models/<family>/modeling_<family>.py``; the class each rule follows is named
beside it).  It says what it did not understand rather than guessing: an unknown ``model_type``,
a key neither read nor on an ignore list (``IGNORED``), or a value it does not model raise
``UnsupportedConfig`` naming them.

Pure standard library; the reader (``inputs/fill.py``) turns ``UnsupportedConfig`` into an input
error at the row's ``model`` cell.
"""

from __future__ import annotations

import itertools
import json
import re
import textwrap
from pathlib import Path
from typing import Any, Callable, Mapping

MAX_CONFIG_BYTES = 4 * 2**20  # a config.json is a few KB; refuse to parse anything huge

# Keys that do not change the parameter count, in every family: identity, token ids, numerics,
# positions (RoPE has no parameters), regularisation, routing arithmetic, runtime and storage.
IGNORED: frozenset[str] = frozenset(
    """
    _name_or_path architectures model_type auto_map transformers_version torch_dtype dtype
    use_cache bos_token_id eos_token_id pad_token_id sep_token_id decoder_start_token_id
    initializer_range initializer_factor rms_norm_eps layer_norm_eps norm_eps hidden_act
    hidden_activation max_position_embeddings rope_theta rope_scaling rope_parameters rope_type
    partial_rotary_factor attention_dropout hidden_dropout dropout embedding_dropout resid_pdrop
    embd_pdrop quantization_config output_router_logits router_aux_loss_coef aux_loss_alpha
    seq_aux norm_topk_prob pretraining_tp tokenizer_class output_attentions output_hidden_states
    return_dict chunk_size_feed_forward is_encoder_decoder problem_type id2label label2id
    torchscript tie_encoder_decoder use_return_dict cache_implementation _attn_implementation
    attn_implementation keys_to_ignore_at_inference base_model_tp_plan base_model_pp_plan
    """.split()
)

FAMILY_IGNORED: dict[str, frozenset[str]] = {
    # routing arithmetic and grouping of DeepSeek-V3 / Kimi K2 (DeepseekV3TopkRouter): no parameters
    "deepseek": frozenset(
        "n_group topk_group routed_scaling_factor scoring_func topk_method ep_size "
        "num_key_value_heads head_dim rope_interleave".split()
    ),
    # the sliding window of Qwen2/Qwen3 applies only with use_sliding_window (checked), no parameters
    "qwen": frozenset({"sliding_window", "max_window_layers", "use_mrope"}),
    # gpt-oss: the SwiGLU clamp and the original context length do not change shapes
    "gpt_oss": frozenset({"swiglu_limit", "initial_context_length"}),
    # Gemma 3: softmax scale, soft-capping and the local RoPE base have no parameters
    "gemma3": frozenset(
        "query_pre_attn_scalar final_logit_softcapping attn_logit_softcapping "
        "rope_local_base_freq use_bidirectional_attention".split()
    ),
    # the vision tower of Gemma3ForConditionalGeneration is not counted: the text model is (see below)
    "gemma3_multimodal": frozenset(
        "vision_config mm_tokens_per_image boi_token_index eoi_token_index image_token_index "
        "text_config initializer_range".split()
    ),
}


class UnsupportedConfig(Exception):
    """A config.json ledger-report cannot count exactly: what was expected and what was found."""

    def __init__(self, expected: str, found: str):
        super().__init__(f"expected {expected}; found {found}")
        self.expected = expected
        self.found = found


class _Keys:
    """The config's keys, recording which ones a family reads (the rest must be on an ignore list)."""

    def __init__(self, cfg: Mapping[str, Any], family: str):
        self.cfg = cfg
        self.family = family
        self.used: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.used.add(key)
        v = self.cfg.get(key)
        return default if v is None else v

    def count(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        v = self.get(key, default)
        if v is None:
            raise UnsupportedConfig(f"the key {key!r} (model_type {self.family})", "no such key")
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise UnsupportedConfig(f"{key!r} a whole number ≥ {minimum}", json.dumps(v)[:60])
        return v

    def optional(self, out: dict[str, Any], key: str) -> None:
        """``out[key]``, read with ``count``, where the config gives the key."""
        if self.get(key) is not None:
            out[key] = self.count(key)

    def counts(self, **columns: str) -> dict[str, int]:
        """Each column from its key (``column="key"``), read with ``count``, in the order given."""
        return {column: self.count(key) for column, key in columns.items()}

    def flag(self, key: str, default: bool) -> bool:
        v = self.get(key, default)
        if not isinstance(v, bool):
            raise UnsupportedConfig(f"{key!r} true or false", json.dumps(v)[:60])
        return v

    def must(self, key: str, value: Any, why: str) -> None:
        """A key of one modelled ``value`` (also its default): refuse any other, naming the key."""
        v = self.get(key, value)
        if not (v is value if isinstance(value, bool) else v == value):
            raise UnsupportedConfig(why, f"{key} = {json.dumps(v)[:60]}")

    def refuse_unknown(self, *ignored: frozenset[str]) -> None:
        """Every key read by the family or on an ignore list, else UnsupportedConfig naming them."""
        skip = self.used.union(IGNORED, *ignored)
        if extra := sorted(k for k in self.cfg if k not in skip):
            raise UnsupportedConfig(
                f"config.json keys ledger-report understands for model_type {self.family} (or on its ignore list)",
                "unknown keys " + ", ".join(extra),
            )


# ---------------------------------------------------------------------------------------------
# The families


def _base(
    k: _Keys, *, tied_default: bool = False, head_dim: bool = True, vocab_default: int | None = None
) -> dict[str, Any]:
    """The columns every decoder family shares (LlamaModel and its descendants)."""
    out: dict[str, Any] = k.counts(
        layers="num_hidden_layers", hidden="hidden_size", heads="num_attention_heads"
    )
    kv = k.count("num_key_value_heads", out["heads"])
    if kv != out["heads"]:
        out["kv_heads"] = kv
    if head_dim:
        k.optional(out, "head_dim")
    out["ffn_hidden"] = k.count("intermediate_size")
    out["vocab"] = k.count("vocab_size", vocab_default)
    out["tied_embeddings"] = k.flag("tie_word_embeddings", tied_default)
    return out


def _no_sliding(k: _Keys) -> None:
    k.must(
        "use_sliding_window",
        False,
        "use_sliding_window false (Qwen2/Qwen3's per-layer window from max_window_layers is not modelled)",
    )


def _no_attention_bias(k: _Keys, why: str = "") -> None:
    k.must("attention_bias", False, "attention_bias false" + why)


def _layout(k: _Keys, key: str, local: str, default_every: int) -> int:
    """The period k of a layer_types list in which layer i is full_attention iff i mod k = k − 1."""
    full = "full_attention"
    types = k.get("layer_types")
    n = k.cfg.get("num_hidden_layers")
    if types is None:
        return default_every
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types) or len(types) != n:
        raise UnsupportedConfig(f"layer_types a list of {n} layer types", json.dumps(types)[:60])
    if bad := sorted(set(types) - {local, full}):
        raise UnsupportedConfig(f"layer_types of {local!r} and {full!r} only", ", ".join(bad))
    fulls = [i for i, t in enumerate(types) if t == full]
    every = fulls[0] + 1 if fulls else 0
    if every and all((t == full) == (i % every == every - 1) for i, t in enumerate(types)):
        return every
    raise UnsupportedConfig(
        f"layer_types with {full!r} exactly on layers i where i mod k = k − 1 ({key})",
        "another pattern: "
        + ", ".join(str(i) for i in fulls[:12])
        + (" ..." if len(fulls) > 12 else ""),
    )


def _llama(k: _Keys) -> dict[str, Any]:
    """LlamaForCausalLM (llama/modeling_llama.py LlamaAttention, LlamaMLP): attention_bias puts a bias
    on q, k, v and o; mlp_bias on the MLP."""
    out = _base(k)
    ab, mb = k.flag("attention_bias", False), k.flag("mlp_bias", False)
    if ab != mb:
        raise UnsupportedConfig(
            "attention_bias and mlp_bias both true or both false (a bias on the attention alone is not modelled)",
            f"attention_bias = {json.dumps(ab)}, mlp_bias = {json.dumps(mb)}",
        )
    if ab:
        out["linear_bias"] = True
    return out


def _mistral(k: _Keys) -> dict[str, Any]:
    """MistralForCausalLM (mistral/modeling_mistral.py): Llama's shapes; sliding_window on every layer."""
    out = _base(k)
    _no_attention_bias(k)
    k.optional(out, "sliding_window")
    return out


def _mixtral(k: _Keys) -> dict[str, Any]:
    """MixtralForCausalLM (mixtral/modeling_mixtral.py MixtralSparseMoeBlock): every layer MoE, no
    shared expert, router without bias; the experts are intermediate_size wide."""
    out = _base(k)
    out.update(k.counts(experts="num_local_experts", topk="num_experts_per_tok"))
    out["moe_ffn_hidden"] = out["ffn_hidden"]
    k.optional(out, "sliding_window")
    return out


def _qwen2(k: _Keys) -> dict[str, Any]:
    """Qwen2ForCausalLM (qwen2/modeling_qwen2.py Qwen2Attention): q, k, v with bias, o without."""
    out = _base(k)
    _no_sliding(k)
    out["qkv_bias"] = True
    return out


def _qwen3(k: _Keys) -> dict[str, Any]:
    """Qwen3ForCausalLM (qwen3/modeling_qwen3.py Qwen3Attention): q_norm and k_norm over head_dim."""
    out = _base(k)
    _no_sliding(k)
    _no_attention_bias(k, " (a bias on the attention alone is not modelled)")
    out["qk_norm"] = True
    return out


# the MoE columns of Qwen3-MoE and Qwen3-Next, from their keys
_QWEN_MOE = dict(
    experts="num_experts", topk="num_experts_per_tok", moe_ffn_hidden="moe_intermediate_size"
)


def _qwen_moe_layout(k: _Keys) -> None:
    """Qwen3MoeDecoderLayer: sparse iff layer_idx not in mlp_only_layers and (layer_idx + 1) % decoder_sparse_step == 0."""
    k.must(
        "decoder_sparse_step",
        1,
        "decoder_sparse_step 1 (every layer MoE; other steps are not modelled)",
    )
    k.must(
        "mlp_only_layers",
        [],
        "mlp_only_layers empty (dense layers among the MoE ones are not modelled)",
    )


def _qwen3_moe(k: _Keys) -> dict[str, Any]:
    """Qwen3MoeForCausalLM (qwen3_moe/modeling_qwen3_moe.py Qwen3MoeSparseMoeBlock): no shared expert,
    router without bias."""
    out = _qwen3(k)
    _qwen_moe_layout(k)
    out.update(k.counts(**_QWEN_MOE))
    return out


def _qwen3_next(k: _Keys) -> dict[str, Any]:
    """Qwen3NextForCausalLM (qwen3_next/modeling_qwen3_next.py): gated softmax attention
    (Qwen3NextAttention, q_proj twice as wide) on layer i iff (i + 1) % full_attention_interval == 0,
    Gated DeltaNet (Qwen3NextGatedDeltaNet) on the others; Qwen3NextSparseMoeBlock with one shared
    expert and its gate.  The checkpoint holds an MTP module that the transformers class skips
    (_keys_to_ignore_on_load_unexpected "^mtp"); vLLM qwen3_next_mtp.py builds
    num_nextn_predict_layers of them, 1 when the key is absent."""
    out = _base(k)
    _no_sliding(k)
    _no_attention_bias(k)
    _qwen_moe_layout(k)
    out["qk_norm"] = True
    out["gated_attention"] = True
    every = k.count("full_attention_interval", 4)
    if _layout(k, "full_attention_interval", "linear_attention", every) != every:
        raise UnsupportedConfig(
            "layer_types that agree with full_attention_interval",
            json.dumps(k.cfg.get("layer_types"))[:60],
        )
    out["full_attention_every"] = every
    out.update(
        k.counts(
            linear_key_heads="linear_num_key_heads",
            linear_value_heads="linear_num_value_heads",
            linear_key_head_dim="linear_key_head_dim",
            linear_value_head_dim="linear_value_head_dim",
            linear_conv_kernel="linear_conv_kernel_dim",
            **_QWEN_MOE,
        )
    )
    if shared := k.count("shared_expert_intermediate_size", 0, minimum=0):
        out["shared_experts"] = 1
        out["shared_expert_ffn"] = shared
        out["shared_expert_gate"] = True
    out["mtp_layers"] = k.count("num_nextn_predict_layers", 1, minimum=0)
    return out


def _deepseek(k: _Keys) -> dict[str, Any]:
    """DeepseekV3ForCausalLM (deepseek_v3/modeling_deepseek_v3.py; deepseek-ai/DeepSeek-V3
    inference/model.py): multi-head latent attention (num_key_value_heads unused by its shapes);
    layer i is MoE iff i ≥ first_k_dense_replace; n_shared_experts shared experts of
    moe_intermediate_size; the router's e_score_correction_bias (a Parameter in DeepSeek's Gate);
    num_nextn_predict_layers MTP modules (README_WEIGHTS.md)."""
    out = _base(k, head_dim=False)
    out.pop("kv_heads", None)  # MLA: the key/value heads are the query heads
    _no_attention_bias(k)
    k.must(
        "moe_layer_freq",
        1,
        "moe_layer_freq 1 (DeepseekV3DecoderLayer makes every layer after the dense ones MoE)",
    )
    k.optional(out, "q_lora_rank")
    out.update(
        k.counts(
            kv_lora_rank="kv_lora_rank",
            qk_rope_head_dim="qk_rope_head_dim",
            qk_nope_head_dim="qk_nope_head_dim",
            v_head_dim="v_head_dim",
            experts="n_routed_experts",
            topk="num_experts_per_tok",
            moe_ffn_hidden="moe_intermediate_size",
        )
    )
    if dense := k.count("first_k_dense_replace", 0, minimum=0):
        out["first_dense_layers"] = dense
    if shared := k.count("n_shared_experts", 0, minimum=0):
        out["shared_experts"] = shared
        out["shared_expert_ffn"] = out["moe_ffn_hidden"]
    out["router_bias"] = True
    if mtp := k.count("num_nextn_predict_layers", 0, minimum=0):
        out["mtp_layers"] = mtp
    return out


def _gpt_oss(k: _Keys) -> dict[str, Any]:
    """GptOssForCausalLM (gpt_oss/modeling_gpt_oss.py): GptOssAttention with biases on q, k, v, o and
    one sink per head; GptOssTopKRouter with a bias; GptOssExperts with biases; sliding-window
    layers from layer_types ("sliding_attention" if (i + 1) % 2 else "full_attention")."""
    out = _base(k)
    k.must(
        "attention_bias",
        True,
        "attention_bias true (the experts always have biases: biases everywhere)",
    )
    out["linear_bias"] = True
    out["attention_sinks"] = True
    out.update(k.counts(experts="num_local_experts", topk="num_experts_per_tok"))
    k.must("experts_per_token", out["topk"], "experts_per_token equal to num_experts_per_tok")
    out["moe_ffn_hidden"] = out["ffn_hidden"]
    out["router_bias"] = True
    out["sliding_window"] = k.count("sliding_window")
    out["sliding_every"] = _layout(k, "gpt-oss", "sliding_attention", 2)
    return out


def _gemma3_text(k: _Keys) -> dict[str, Any]:
    """Gemma3ForCausalLM / the text model of Gemma3ForConditionalGeneration (gemma3/modeling_gemma3.py):
    Gemma3Attention with q_norm and k_norm, four norms per layer (Gemma3DecoderLayer), tied
    embeddings by default, vocab_size 262,208 when absent (Gemma3TextConfig), sliding-window layers
    with one global layer in sliding_window_pattern = 6."""
    out = _base(k, tied_default=True, vocab_default=262_208)
    _no_attention_bias(k)
    out["qk_norm"] = True
    out["norms_per_layer"] = 4
    out["sliding_window"] = k.count("sliding_window", 4096)
    every = k.count("sliding_window_pattern", 6)
    out["sliding_every"] = _layout(k, "sliding_window_pattern", "sliding_attention", every)
    return out


# model_type -> (its ignore lists, its reader, its transformers class, which ``architectures`` names)
FAMILIES: dict[str, tuple[tuple[str, ...], Callable[[_Keys], dict[str, Any]], str]] = {
    "llama": ((), _llama, "LlamaForCausalLM"),
    "mistral": ((), _mistral, "MistralForCausalLM"),
    "mixtral": ((), _mixtral, "MixtralForCausalLM"),
    "qwen2": (("qwen",), _qwen2, "Qwen2ForCausalLM"),
    "qwen3": (("qwen",), _qwen3, "Qwen3ForCausalLM"),
    "qwen3_moe": (("qwen",), _qwen3_moe, "Qwen3MoeForCausalLM"),
    "qwen3_next": (("qwen",), _qwen3_next, "Qwen3NextForCausalLM"),
    "deepseek_v3": (("deepseek",), _deepseek, "DeepseekV3ForCausalLM"),
    "kimi_k2": (("deepseek",), _deepseek, ""),
    "gpt_oss": (("gpt_oss",), _gpt_oss, "GptOssForCausalLM"),
    "gemma3_text": (("gemma3",), _gemma3_text, "Gemma3ForCausalLM"),
}
ARCHITECTURES = {cls: mt for mt, (_g, _r, cls) in FAMILIES.items() if cls}
ARCHITECTURES["Gemma3ForConditionalGeneration"] = "gemma3"
KNOWN_TYPES = tuple(sorted(set(FAMILIES) | {"gemma3"}))


def family_of(cfg: Mapping[str, Any]) -> str:
    """The config's model_type (else its architectures' class), or UnsupportedConfig naming it."""
    mt = cfg.get("model_type")
    archs = cfg.get("architectures") or []
    if mt is None and isinstance(archs, list) and archs:
        mt = ARCHITECTURES.get(str(archs[0]))
        if mt is None:
            raise UnsupportedConfig(
                "a model_type, or architectures of a known class ("
                + ", ".join(sorted(ARCHITECTURES))
                + ")",
                "architectures " + json.dumps(archs)[:80],
            )
    if mt is None:
        raise UnsupportedConfig("a model_type key", "neither model_type nor architectures")
    if mt not in KNOWN_TYPES:
        raise UnsupportedConfig(
            "a model_type ledger-report counts (" + ", ".join(KNOWN_TYPES) + ")",
            f"model_type {json.dumps(mt)[:60]}",
        )
    return mt


def columns_from_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The architecture columns of a config.json mapping (only the columns that differ from their
    defaults, and the required ones), or UnsupportedConfig."""
    if not isinstance(cfg, Mapping):
        raise UnsupportedConfig("a JSON object", type(cfg).__name__)
    mt = family_of(cfg)
    if mt == "gemma3":  # the multimodal wrapper: count its text model; the vision tower is left out
        _Keys(cfg, "gemma3").refuse_unknown(FAMILY_IGNORED["gemma3_multimodal"])
        text = cfg.get("text_config")
        if not isinstance(text, Mapping):
            raise UnsupportedConfig(
                "a text_config object (Gemma3ForConditionalGeneration)", json.dumps(text)[:60]
            )
        return columns_from_config({**text, "model_type": "gemma3_text"})
    groups, read, _cls = FAMILIES[mt]
    k = _Keys(cfg, mt)
    out = read(k)
    k.refuse_unknown(*(FAMILY_IGNORED[g] for g in groups))
    return out


MAX_CONFIG_DEPTH = 64  # a config.json nests a few levels (rope_scaling, quantization_config)


def read_config_json(path: Path) -> dict[str, Any]:
    """The columns of a config.json file, or UnsupportedConfig naming what is wrong with it."""
    from .errors import InputError
    from .inputs.files import read_bounded

    try:
        data = read_bounded(path, str(path), MAX_CONFIG_BYTES, "config.json")
    except InputError as err:
        found = err.problems[0].found
        if found == "no such file":
            raise UnsupportedConfig(
                "an existing config.json (a relative path is read from the input file's folder;"
                " for rows given from Python, from the working directory)",
                f"no file {path.absolute()}",
            ) from None
        if found == "a larger file":
            raise UnsupportedConfig(
                f"a config.json of at most {MAX_CONFIG_BYTES // 2**20} MiB", f"a larger file {path}"
            ) from None
        if err.problems[0].expected == "a regular file":
            raise UnsupportedConfig(
                "a config.json file", f"{path}, which is not a regular file ({found})"
            ) from None
        raise UnsupportedConfig("a readable UTF-8 config.json", found[:120]) from None
    try:
        text = data.decode("utf-8-sig")
    except ValueError as exc:
        raise UnsupportedConfig(
            "a readable UTF-8 config.json", f"{type(exc).__name__}: {exc}"[:120]
        ) from None
    return columns_from_config(_parse(text))


def _parse(text: str) -> Any:
    """The JSON of a config.json, its nesting and its numbers bounded before Python's parser
    meets them (it would recurse past its limit, or refuse a number over 4,300 digits)."""
    brackets = re.findall(r"[\[\]{}]", re.sub(r'"(?:[^"\\]|\\.)*"', "", text))
    depth = max(itertools.accumulate(1 if b in "[{" else -1 for b in brackets), default=0)
    if depth > MAX_CONFIG_DEPTH:
        raise UnsupportedConfig(
            f"a config.json nested at most {MAX_CONFIG_DEPTH} levels deep",
            f"{depth:,} levels of nested arrays or objects",
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnsupportedConfig(
            "a config.json holding JSON",
            f"a JSON error at line {exc.lineno}, column {exc.colno}: {exc.msg}",
        ) from None
    except (ValueError, RecursionError) as exc:  # a number of more digits than int() takes
        raise UnsupportedConfig(
            "a config.json whose numbers Python can read (at most 4,300 digits)",
            f"{type(exc).__name__}: {textwrap.shorten(str(exc), 100, placeholder=' …')}",
        ) from None
