"""Qwen2 and Mistral text models (README: supported beside Llama) against Hugging Face transformers:
tiny random-weight checkpoints built here, the same greedy tokens for a batch of prompts of mixed
lengths, with chunked prefill and a prefix-cache hit on the second pass.

Qwen2 carries biases on q/k/v; Mistral has its own config class (and a sliding window, set here
past the context so both sides attend fully)."""
from __future__ import annotations

import shutil

import pytest
import torch

from engine.config import EngineConfig
from engine.engine import Engine
from engine.sampling_params import SamplingParams

VOCAB = 1024
MAX_NEW = 10
COMMON = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=512, eos_token_id=None, bos_token_id=None,
              pad_token_id=None, tie_word_embeddings=False)


def build(kind: str, path):
    import transformers

    torch.manual_seed({"qwen2": 11, "mistral": 12}[kind])
    if kind == "qwen2":
        config = transformers.Qwen2Config(**COMMON, use_sliding_window=False)
        model = transformers.Qwen2ForCausalLM(config)
    else:
        config = transformers.MistralConfig(**COMMON, sliding_window=None)
        model = transformers.MistralForCausalLM(config)
    with torch.no_grad():   # initialised to zero, biases would go untested: make them count
        for module in model.modules():
            if isinstance(module, torch.nn.Linear) and module.bias is not None:
                module.bias.normal_(0.0, 0.5)
    model.eval().save_pretrained(path)
    return model


@pytest.mark.parametrize("kind", ["qwen2", "mistral"])
def test_tiny_random_model_greedy_tokens_match_transformers(kind, tmp_path, smollm2_path):
    model = build(kind, tmp_path)
    num_biases = sum(1 for m in model.modules() if isinstance(m, torch.nn.Linear) and m.bias is not None)
    assert num_biases == (6 if kind == "qwen2" else 0)     # q, k, v in each of 2 layers
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(smollm2_path / name, tmp_path / name)
    engine = Engine(EngineConfig(model=str(tmp_path), kv_tokens=2048, max_prefill_tokens=16, debug=True))
    assert engine.model_config.architecture.lower().startswith(kind), engine.model_config.architecture
    g = torch.Generator().manual_seed(3)
    prompts = [torch.randint(3, VOCAB, (int(n),), generator=g).tolist()
               for n in torch.randint(3, 40, (12,), generator=g)]
    params = SamplingParams(temperature=0.0, max_tokens=MAX_NEW, ignore_eos=True)
    first = engine.generate(prompts, params)
    again = engine.generate(prompts, params)      # from the prefix cache this time
    assert sum(o.num_cached_tokens for o in again) > 0
    for ids, out, cached in zip(prompts, first, again):
        with torch.inference_mode():
            ref = model.generate(torch.tensor([ids]), max_new_tokens=MAX_NEW, do_sample=False,
                                 attention_mask=torch.ones(1, len(ids), dtype=torch.long))
        assert out.token_ids == ref[0, len(ids):].tolist()
        assert cached.token_ids == out.token_ids
    engine.pool.check_invariants()
