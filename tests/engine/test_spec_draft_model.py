"""A draft model behind the drafter interface (`speculative_algorithm="draft_model"`): SmolLM2's
greedy outputs with drafts from (a) SmolLM2 itself, whose every draft holds, and (b) a tiny
random-weight Llama with SmolLM2's tokenizer, whose drafts nearly all fail, are both token for
token the outputs without drafts, and the metrics count the drafts as the draft model's; a draft
model with another tokenizer is refused at start."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.config import EngineConfig
from engine.engine import Engine, EngineStartupError
from engine.metrics import EngineMetrics
from engine.sampling_params import SamplingParams

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from adversarial.services import build_tiny_llama  # noqa: E402

COMMON = dict(model="smollm2-135m", context_length=512, kv_tokens=4096, debug=True)
QUESTIONS = ["Copy this exactly: the quick brown fox jumps over the lazy dog.", "Name three rivers.",
             "Count from one to ten in words."]


def chat(tok, text):
    out = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
    return list(out["input_ids"] if hasattr(out, "keys") else out)


@pytest.fixture(scope="module")
def undrafted():
    engine = Engine(EngineConfig(**COMMON, speculative_algorithm="none"))
    prompts = [chat(engine.tokenizer, q) for q in QUESTIONS]
    params = [SamplingParams(temperature=0, max_tokens=24), SamplingParams(temperature=0, max_tokens=24),
              SamplingParams(temperature=0, max_tokens=24, frequency_penalty=0.3)]
    outputs = [o.token_ids for o in engine.generate(prompts, params)]
    engine.close()
    return prompts, params, outputs


def _drafted_outputs(draft_model: str, undrafted) -> tuple[list[list[int]], Engine]:
    prompts, params, _ = undrafted
    engine = Engine(EngineConfig(**COMMON, speculative_algorithm="draft_model", draft_model=draft_model,
                                 draft_kv_tokens=4096), metrics=EngineMetrics())
    return [o.token_ids for o in engine.generate(prompts, params)], engine


def test_self_drafting_keeps_every_draft_and_the_output(undrafted, smollm2_path):
    outputs, engine = _drafted_outputs(str(smollm2_path), undrafted)
    try:
        assert outputs == undrafted[2]
        assert engine.num_draft_tokens > 20 and engine.num_accepted_draft_tokens >= 0.9 * engine.num_draft_tokens
        assert engine.num_steps < sum(len(o) for o in outputs)
        # the metrics count them under the draft model's name
        registry, label = engine.metrics.registry, {"method": "draft_model"}
        assert registry.get_sample_value("ocrserve_spec_draft_tokens_by_method_total", label) == engine.num_draft_tokens
        assert registry.get_sample_value("ocrserve_spec_accepted_tokens_by_method_total",
                                         label) == engine.num_accepted_draft_tokens
        engine.pool.check_invariants()
        engine.drafts.draft_engine.pool.check_invariants()
    finally:
        engine.close()


def test_a_poor_draft_model_changes_nothing_but_the_steps(undrafted, smollm2_path, tmp_path):
    tiny = build_tiny_llama(tmp_path / "tiny", smollm2_path, vocab_size=49152)
    outputs, engine = _drafted_outputs(str(tiny), undrafted)
    try:
        assert outputs == undrafted[2]
        assert engine.num_draft_tokens > 0
        engine.pool.check_invariants()
    finally:
        engine.close()


def test_a_draft_model_with_another_tokenizer_is_refused():
    with pytest.raises(EngineStartupError, match="another tokenizer"):
        Engine(EngineConfig(**COMMON, speculative_algorithm="draft_model", draft_model="house-ocr"))
    with pytest.raises(ValueError, match="draft model"):
        EngineConfig(**COMMON, speculative_algorithm="draft_model")


def test_a_step_drafts_for_its_requests_in_one_batch(undrafted, smollm2_path):
    """`prepare` runs the draft engine once for every decoding request of a step: fewer draft-engine
    steps than drafting request by request, and the same outputs."""
    prompts, params, want = undrafted
    engine = Engine(EngineConfig(**COMMON, speculative_algorithm="draft_model", draft_model=str(smollm2_path),
                                 draft_kv_tokens=4096))
    try:
        draft_steps = []
        drafter = engine.drafts.text_drafter
        real_prepare = drafter.prepare

        def counting_prepare(reqs):
            before = engine.drafts.draft_engine.num_steps
            real_prepare(reqs)
            draft_steps.append((len(reqs), engine.drafts.draft_engine.num_steps - before))

        drafter.prepare = counting_prepare
        assert [o.token_ids for o in engine.generate(prompts, params)] == want
        batched = [(n, steps) for n, steps in draft_steps if n == len(prompts)]
        assert batched and all(steps <= drafter.num_tokens + 1 for _, steps in batched)
    finally:
        engine.close()
