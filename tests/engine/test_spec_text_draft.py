"""A client's draft of the whole output (`draft_text`; the pipeline's `text_layer="verify"` sends a
PDF text layer's line): house-ocr reads rendered lines token for token as it does without the
draft, whether the draft is the line's true text or wrong, the drafts are counted as `text_layer`,
a right draft is nearly all kept, and the CTC rescoring still compares its own draft. SmolLM2 takes
one too (any model, any request: a sampled one keeps its seeded tokens). The HTTP API carries the
field and refuses a non-string."""
from __future__ import annotations

import dataclasses

import pytest

from engine.config import EngineConfig
from engine.engine import Engine
from engine.errors import InvalidRequestError
from engine.metrics import EngineMetrics
from engine.sampling_params import SamplingParams
from tests.engine.test_house_ocr import LINES, png, prompt, render


@pytest.fixture(scope="module")
def house():
    crops = [png(render(*line)) for line in LINES]
    plain = Engine(EngineConfig(model="house-ocr", kv_tokens=8192, debug=True))
    text = prompt(plain)
    want = plain.generate([text] * len(crops), SamplingParams(temperature=0.0, max_tokens=128),
                          images=[[c] for c in crops])
    return crops, text, want


def test_a_text_layer_draft_changes_nothing_but_the_steps(house):
    crops, text, want = house
    eng = Engine(EngineConfig(model="house-ocr", kv_tokens=8192, debug=True), metrics=EngineMetrics())
    truths = [line[0] for line in LINES]
    params = [SamplingParams(temperature=0.0, max_tokens=128, draft_text=t) for t in truths]
    got = eng.generate([text] * len(crops), params, images=[[c] for c in crops])
    assert [g.token_ids for g in got] == [w.token_ids for w in want]
    assert [g.text for g in got] == [w.text for w in want]
    registry = eng.metrics.registry

    def count(name: str, method: str) -> float:
        return registry.get_sample_value(f"ocrserve_spec_{name}_tokens_by_method_total", {"method": method})

    # the layer's text drafts; where the reading left it, the model's own CTC draft may, counted as such
    assert count("draft", "text_layer") > 0
    assert count("draft", "text_layer") + count("draft", "ctc") == eng.num_draft_tokens
    if sum(w.text == t for w, t in zip(want, truths)) >= len(truths) // 2:   # the model reads most lines right
        assert count("accepted", "text_layer") >= 0.7 * count("draft", "text_layer")
    eng.pool.check_invariants()


def test_a_wrong_draft_is_rejected_and_the_reading_kept(house):
    crops, text, want = house
    eng = Engine(EngineConfig(model="house-ocr", kv_tokens=8192, debug=True))
    wrong = ["Invoice No. 2024-118", "", "completely different words here", "x" * 300]
    params = [SamplingParams(temperature=0.0, max_tokens=128, draft_text=w) for w in wrong]
    got = eng.generate([text] * len(wrong), params, images=[[c] for c in crops[:len(wrong)]])
    assert [g.token_ids for g in got] == [w.token_ids for w in want[:len(wrong)]]
    eng.pool.check_invariants()


def test_any_model_and_request_takes_a_text_draft():
    eng = Engine(EngineConfig(model="smollm2-135m", context_length=512, kv_tokens=4096, debug=True))
    plain = Engine(EngineConfig(model="smollm2-135m", context_length=512, kv_tokens=4096, debug=True, speculative_tokens=0))
    question = eng.tokenizer.apply_chat_template([{"role": "user", "content": "Name three rivers."}],
                                                 add_generation_prompt=True, tokenize=False)
    params = [SamplingParams(temperature=0.0, max_tokens=24), SamplingParams(temperature=0.8, seed=3, max_tokens=24),
              SamplingParams(temperature=0.0, max_tokens=24, frequency_penalty=0.4)]
    want = plain.generate([question] * 3, params)
    drafted = [dataclasses.replace(p, draft_text=w.text) for p, w in zip(params, want)]
    got = eng.generate([question] * 3, drafted)
    assert [g.token_ids for g in got] == [w.token_ids for w in want]
    assert eng.num_accepted_draft_tokens > 0.8 * eng.num_draft_tokens > 0
    # speculative_tokens=0 turns client drafts off too; the output is the same
    assert [o.token_ids for o in plain.generate([question] * 3, drafted)] == [w.token_ids for w in want]
    assert plain.num_draft_tokens == 0


def test_draft_text_is_validated():
    with pytest.raises(InvalidRequestError, match="draft_text"):
        SamplingParams(draft_text=5).validate()
    with pytest.raises(InvalidRequestError, match="draft_text"):
        SamplingParams(draft_text="x" * 70000).validate()


def test_text_drafts_under_grammars_stops_chunked_prefill_and_retraction():
    """JSON schema, regex, a stop string and logprobs, right and wrong drafts, prompts prefilled in
    chunks of 16, prefix-cache hits and a pool too small for all at once (retraction): the undrafted
    tokens."""
    import json

    from engine.grammar import GrammarSpec

    common = dict(model="smollm2-135m", context_length=256, debug=True)
    plain = Engine(EngineConfig(**common, kv_tokens=4096, speculative_tokens=0))
    chat = [plain.tokenizer.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True,
                                                tokenize=False)
            for q in ("Give a JSON object with a city name and its country.", "Write a date as YYYY-MM-DD.",
                      "Describe the sea in two sentences.", "List three colours.")]
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                               "country": {"type": "string", "maxLength": 20}},
              "required": ["city", "country"]}
    params = [SamplingParams(temperature=0.0, max_tokens=60, grammar=GrammarSpec(json_schema=json.dumps(schema))),
              SamplingParams(temperature=0.0, max_tokens=20, grammar=GrammarSpec(regex=r"20[0-9]{2}-[01][0-9]-[0-3][0-9]")),
              SamplingParams(temperature=0.0, max_tokens=60, stop=["."], logprobs=2),
              SamplingParams(temperature=0.0, max_tokens=150, ignore_eos=True)]
    want = plain.generate(chat, params)
    drafts = [want[0].text, "1999-12-31", want[2].text + ". And more.", want[3].text[:20] + " wrong turn"]
    eng = Engine(EngineConfig(**common, kv_tokens=260, max_prefill_tokens=16))
    # each request twice: the second copies also hit the prefix cache
    got = eng.generate(chat * 2, [dataclasses.replace(p, draft_text=d) for p, d in zip(params, drafts)] * 2)
    assert [g.token_ids for g in got] == [w.token_ids for w in want] * 2
    assert [g.finish_reason for g in got] == [w.finish_reason for w in want] * 2
    assert eng.scheduler.num_retractions > 0
    assert eng.num_accepted_draft_tokens > 0
    eng.pool.check_invariants()
