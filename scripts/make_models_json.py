"""Write ledger_report/data/models.json, the model catalogue, from the config.json files it records.

Run after adding a model:  .venv/bin/python scripts/make_models_json.py
Each entry's columns are what the config.json reader (ledger_report/hf_config.py) makes of the
model's Hugging Face config.json, kept in tests/data/hf_configs/; a test (tests/test_models.py)
checks the catalogue still equals the reader's output, and each entry's counts against the
figures its authors publish.
"""

from __future__ import annotations

import json
from pathlib import Path

from ledger_report.hf_config import read_config_json

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "data" / "hf_configs"

# name, config file, Hugging Face repository, how the config.json reached tests/data, a note on the count
ENTRIES = (
    (
        "Llama-3.1-8B",
        "Llama-3.1-8B.json",
        "meta-llama/Llama-3.1-8B",
        "ai-dynamo/aiconfigurator model_configs/meta-llama--Meta-Llama-3.1-8B_config.json",
        "",
    ),
    (
        "Llama-3.1-70B",
        "Llama-3.1-70B.json",
        "meta-llama/Llama-3.1-70B",
        "ai-dynamo/aiconfigurator model_configs/meta-llama--Meta-Llama-3.1-70B_config.json",
        "",
    ),
    (
        "Llama-3.1-405B",
        "Llama-3.1-405B.json",
        "meta-llama/Llama-3.1-405B",
        "ai-dynamo/aiconfigurator model_configs/meta-llama--Meta-Llama-3.1-405B_config.json",
        "",
    ),
    (
        "Llama-2-7B",
        "Llama-2-7B.json",
        "meta-llama/Llama-2-7b-hf",
        "the config.json of meta-llama/Llama-2-7b-hf (transformers 4.31.0.dev0)",
        "",
    ),
    (
        "Qwen2.5-7B",
        "Qwen2.5-7B.json",
        "Qwen/Qwen2.5-7B",
        "citsjtu2020/LLM-Prof sglang/Model_Config.md (Qwen2.5-7B)",
        "q, k, v biases (Qwen2Attention)",
    ),
    (
        "Qwen3-8B",
        "Qwen3-8B.json",
        "Qwen/Qwen3-8B",
        "ai-dynamo/aiconfigurator model_configs/Qwen--Qwen3-8B_config.json",
        "",
    ),
    (
        "Qwen3-32B",
        "Qwen3-32B.json",
        "Qwen/Qwen3-32B",
        "ai-dynamo/aiconfigurator model_configs/Qwen--Qwen3-32B_config.json",
        "",
    ),
    (
        "Qwen3-30B-A3B",
        "Qwen3-30B-A3B.json",
        "Qwen/Qwen3-30B-A3B",
        "ai-dynamo/aiconfigurator model_configs/Qwen--Qwen3-30B-A3B_config.json",
        "",
    ),
    (
        "Qwen3-235B-A22B",
        "Qwen3-235B-A22B.json",
        "Qwen/Qwen3-235B-A22B",
        "ai-dynamo/aiconfigurator model_configs/Qwen--Qwen3-235B-A22B_config.json",
        "",
    ),
    (
        "Qwen3-Next-80B-A3B",
        "Qwen3-Next-80B-A3B.json",
        "Qwen/Qwen3-Next-80B-A3B-Thinking",
        "ai-dynamo/aiconfigurator model_configs/Qwen--Qwen3-Next-80B-A3B-Thinking_config.json",
        "hybrid: Gated DeltaNet on 3 layers in 4; one MTP module (in the checkpoint; vLLM qwen3_next_mtp.py)",
    ),
    (
        "DeepSeek-V3",
        "DeepSeek-V3.json",
        "deepseek-ai/DeepSeek-V3",
        "ai-dynamo/aiconfigurator model_configs/deepseek-ai--DeepSeek-V3_config.json",
        "MLA; 3 dense layers; one MTP module (README_WEIGHTS.md); e_score_correction_bias counted",
    ),
    (
        "Kimi-K2",
        "Kimi-K2-Instruct.json",
        "moonshotai/Kimi-K2-Instruct",
        "ai-dynamo/aiconfigurator model_configs/moonshotai--Kimi-K2-Instruct_config.json",
        "DeepSeek-V3 architecture, 384 experts, 1 dense layer, no MTP module released",
    ),
    (
        "Mixtral-8x7B",
        "Mixtral-8x7B-v0.1.json",
        "mistralai/Mixtral-8x7B-v0.1",
        "ai-dynamo/aiconfigurator model_configs/mistralai--Mixtral-8x7B-v0.1_config.json",
        "",
    ),
    (
        "Mixtral-8x22B",
        "Mixtral-8x22B-v0.1.json",
        "mistralai/Mixtral-8x22B-v0.1",
        "ai-dynamo/aiconfigurator model_configs/mistralai--Mixtral-8x22B-v0.1_config.json",
        "",
    ),
    (
        "gpt-oss-20b",
        "gpt-oss-20b.json",
        "openai/gpt-oss-20b",
        "ai-dynamo/aiconfigurator model_configs/openai--gpt-oss-20b_config.json",
        "biases everywhere, attention sinks, sliding window 128 on every other layer",
    ),
    (
        "gpt-oss-120b",
        "gpt-oss-120b.json",
        "openai/gpt-oss-120b",
        "ai-dynamo/aiconfigurator model_configs/openai--gpt-oss-120b_config.json",
        "biases everywhere, attention sinks, sliding window 128 on every other layer",
    ),
    (
        "Gemma-3-27B",
        "Gemma-3-27B.json",
        "google/gemma-3-27b-it",
        "NVIDIA TensorRT-LLM tests/unittest/_torch/modeling/test_modeling_gemma3vl.py GEMMA3_27B config (62 layers, window 1024)",
        "the text model (the 417M SigLIP vision tower is not counted); vocab_size 262,208 (Gemma3TextConfig default); four norms per layer",
    ),
)


def main() -> None:
    models = []
    for name, file, repo, via, note in ENTRIES:
        columns = read_config_json(CONFIGS / file)
        models.append(
            {
                "name": name,
                "hf_repo": repo,
                "model_type": json.loads((CONFIGS / file).read_text(encoding="utf-8")).get(
                    "model_type"
                ),
                "source": f"https://huggingface.co/{repo}/blob/main/config.json (copy: {via})",
                "note": note,
                "columns": columns,
            }
        )
    out = ROOT / "ledger_report" / "data" / "models.json"
    out.write_text(
        json.dumps({"models": models}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"Wrote {out.relative_to(ROOT)} ({len(models)} models)")


if __name__ == "__main__":
    main()
