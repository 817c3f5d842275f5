"""A client's draft of the whole output (`draft_text`; the pipeline's `text_layer="verify"` sends a
PDF text layer's line): house-ocr reads rendered lines token for token as it does without the
draft, whether the draft is the line's true text or wrong, the drafts are counted as `text_layer`,
a right draft is nearly all kept, and the CTC rescoring still compares its own draft. SmolLM2 takes
one too (any model, any request: a sampled one keeps its seeded tokens). The HTTP API carries the
field and refuses a non-string."""
from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

import pytest

from engine.config import EngineConfig
from engine.engine import Engine
from engine.errors import InvalidRequestError
from engine.metrics import EngineMetrics
from engine.request import Request
from engine.sampling_params import SamplingParams
from engine.spec import DraftState, TextDrafter
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


# -- bounds: a client's draft costs what the request's output budget allows, whatever its length --

class CountingIds(Sequence):
    """A draft's token ids that count how many of them are read (a slice counts its length)."""

    def __init__(self, ids: list[int]) -> None:
        self.ids, self.num_read = ids, 0

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i):
        got = self.ids[i]
        self.num_read += len(got) if isinstance(i, slice) else 1
        return got


class RecordingTokenizer:
    """A tokenizer's `encode`, recording the length of each text and the thread it runs on."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer, self.text_lens, self.threads = tokenizer, [], []

    def encode(self, text: str, **kwargs) -> list[int]:
        self.text_lens.append(len(text))
        self.threads.append(threading.current_thread())
        return self.tokenizer.encode(text, **kwargs)


@pytest.fixture(scope="module")
def smol():
    return Engine(EngineConfig(model="smollm2-135m", context_length=512, kv_tokens=4096, debug=True))


def test_a_draft_is_cut_to_the_tokens_its_request_can_output(smol):
    """65,536 emoji are 3 tokens each: the bound is the request's budget in tokens (max_tokens, or
    the context left after the prompt), and the tokenizer never reads the whole draft."""
    recorder = RecordingTokenizer(smol.tokenizer)
    smol.drafts.tokenizer = recorder
    try:
        req = smol.make_request("Describe the sea.", SamplingParams(temperature=0.0, max_tokens=16,
                                                                     draft_text="\U0001F600" * 65536))
        assert len(req.draft.text_ids) == 16
        long_prompt = list(range(1000, 1000 + 500))        # 12 tokens of context left
        req = smol.make_request(long_prompt, SamplingParams(temperature=0.0, max_tokens=256,
                                                             draft_text="\U0001F600" * 65536))
        assert req.max_output_len == 12 and len(req.draft.text_ids) == 12
        assert max(recorder.text_lens) <= 256 * 16 < 65536
        # a draft within the budget is the whole draft, as before, + EOS
        short = "The sea is wide and deep."
        req = smol.make_request("Describe the sea.", SamplingParams(temperature=0.0, max_tokens=64, draft_text=short))
        assert req.draft.text_ids == smol.tokenizer.encode(short, add_special_tokens=False) + [smol.tokenizer.eos_token_id]
    finally:
        smol.drafts.tokenizer = smol.tokenizer


def test_a_cut_draft_changes_no_output(smol):
    plain = Engine(EngineConfig(model="smollm2-135m", context_length=512, kv_tokens=4096, debug=True,
                                speculative_tokens=0))
    question = smol.tokenizer.apply_chat_template([{"role": "user", "content": "Name three rivers."}],
                                                  add_generation_prompt=True, tokenize=False)
    params = SamplingParams(temperature=0.0, max_tokens=12)
    want = plain.generate([question], params)[0]
    long_draft = want.text + " and then a great deal more" * 2000
    for draft in (want.text, long_draft):
        got = smol.generate([question], dataclasses.replace(params, draft_text=draft))[0]
        assert got.token_ids == want.token_ids


def test_alignment_work_a_step_does_not_grow_with_the_draft():
    """The drafter keeps a cursor into the draft: following it, each step reads the tokens it
    proposes and those the output appended; once the output has left it, realigning reads the
    draft once (an index of its n-grams), then a few tokens a step, for a draft of 1,000 tokens
    as for one of 100,000."""
    reads = {}
    for n in (1_000, 100_000):
        ids = CountingIds([10 + i % 50 for i in range(n)])   # a line of 50 distinct tokens, repeated
        req = Request("r", 0, [1, 2, 3], SamplingParams(temperature=0.0), None, None, n,
                      draft=DraftState(text_ids=ids))
        drafter, per_step = TextDrafter(4), []
        for step in range(200):
            before = ids.num_read
            proposed, _ = drafter.draft(req, 4)
            per_step.append(ids.num_read - before)
            if step == 100:
                req.output_ids.append(7)                     # a token the draft does not have: realigned
            req.output_ids.extend(proposed[:2] or [10])
        realign_build = per_step[101]
        reads[n] = per_step[:101] + per_step[102:]
        assert realign_build <= 4 * n                            # the index: the draft read once (+ the proposal)
    assert max(reads[1_000]) == max(reads[100_000]) <= 8
