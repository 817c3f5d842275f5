"""N-gram (prompt lookup) drafts through the engine loop, on SmolLM2's real weights: every
greedy output, free or grammar-constrained, is token for token the output of the same engine
without drafts; drafts were proposed and accepted; the pool's invariants hold after. A request
that switches drafting off gets none and the same tokens; the metrics count drafts by method."""
from __future__ import annotations

import dataclasses
import json

import jsonschema
import pytest

from engine.config import EngineConfig
from engine.engine import Engine
from engine.grammar import GrammarSpec
from engine.metrics import SPEC_METHODS, EngineMetrics
from engine.request import Request
from engine.sampling_params import SamplingParams
from engine.spec import NgramDrafter, propose_ngram

TEXT = ("Invoice INV-2044 from Acme GmbH, 12 Harbour Road, Bremen. Customer: Northwind Traders, "
        "Order 55-1207. Total due: 1,250.00 EUR by 2026-12-31. Status: unpaid.")
SCHEMA = {
    "type": "object",
    "properties": {
        "invoice_number": {"type": "string", "maxLength": 20},
        "seller": {"type": "string", "maxLength": 60},
        "address": {"type": "string", "maxLength": 80},
        "customer": {"type": "string", "maxLength": 60},
        "total": {"type": "number"},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "due_date": {"type": "string", "maxLength": 20},
    },
    "required": ["invoice_number", "seller", "address", "customer", "total", "currency", "due_date"],
    "additionalProperties": False,
}


def test_propose_ngram_takes_the_latest_longest_match():
    #            0  1  2  3  4  5  6  7  8  9
    tokens = [5, 6, 7, 8, 1, 5, 6, 7, 9, 2, 5, 6, 7]
    assert propose_ngram(tokens, 3, 2, 4) == [9, 2, 5]       # "5 6 7" last seen before 9
    assert propose_ngram(tokens, 1, 2, 4) == [9]
    assert propose_ngram([1, 2, 3, 4], 3, 2, 4) == []           # no earlier occurrence
    assert propose_ngram([3, 4, 1, 2, 3, 4], 5, 2, 2) == [1, 2, 3, 4]
    assert propose_ngram([3, 4, 3], 2, 1, 4) == [4, 3]          # one token matched, min_n=1
    assert propose_ngram([7, 7], 2, 2, 4) == []
    assert propose_ngram([1, 2, 1, 2], 0, 2, 4) == []


def test_ngram_drafter_reads_prompt_and_output():
    req = Request("r", 1, [10, 11, 12, 13, 14], SamplingParams(temperature=0.0), None, None, 64)
    req.output_ids = [11, 12]
    assert NgramDrafter(3, 2, 4).propose(req, 3) == [13, 14, 11]
    with pytest.raises(ValueError):
        NgramDrafter(0)
    with pytest.raises(ValueError):
        NgramDrafter(2, 3, 2)


@pytest.fixture(scope="module")
def engines():
    common = dict(model="smollm2-135m", context_length=1024, kv_tokens=8192, debug=True)
    plain = Engine(EngineConfig(**common, speculative_algorithm="none"))
    drafted = Engine(EngineConfig(**common, speculative_algorithm="ngram", draft_tokens=6),
                     metrics=EngineMetrics("smollm2-135m"))
    yield plain, drafted
    plain.close()
    drafted.close()


def chat(tok, text):
    out = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
    return list(out["input_ids"] if hasattr(out, "keys") else out)


def test_greedy_outputs_equal_the_undrafted_engine_and_drafts_are_accepted(engines):
    plain, drafted = engines
    tok = plain.tokenizer
    prompts = [chat(tok, "Copy this text exactly: " + TEXT),
               chat(tok, "Repeat after me: the quick brown fox jumps over the lazy dog, the quick brown fox."),
               chat(tok, "Name three colours.")]
    params = [SamplingParams(temperature=0, max_tokens=60),
              SamplingParams(temperature=0, max_tokens=40, stop=["lazy dog"]),
              SamplingParams(temperature=0, max_tokens=20, logprobs=2)]
    want = plain.generate(prompts, params)
    before = drafted.num_accepted_draft_tokens
    got = drafted.generate(prompts, params)
    for w, g in zip(want, got):
        assert g.token_ids == w.token_ids and g.text == w.text and g.finish_reason == w.finish_reason
    assert drafted.num_accepted_draft_tokens - before > 10
    drafted.pool.check_invariants()
    drafted.cache.check_invariants()


def test_schema_extraction_with_drafts_validates_and_equals_the_undrafted_engine(engines):
    plain, drafted = engines
    prompt = chat(plain.tokenizer, "Extract the invoice fields as JSON: " + TEXT)
    params = SamplingParams(temperature=0, max_tokens=160, grammar=GrammarSpec(json_schema=json.dumps(SCHEMA)))
    want = plain.generate([prompt], params)[0]
    proposed, accepted = drafted.num_draft_tokens, drafted.num_accepted_draft_tokens
    got = drafted.generate([prompt], params)[0]
    assert got.token_ids == want.token_ids and got.finish_reason == want.finish_reason == "stop"
    jsonschema.validate(json.loads(got.text), SCHEMA)
    assert drafted.num_draft_tokens > proposed and drafted.num_accepted_draft_tokens > accepted
    drafted.pool.check_invariants()


def test_penalised_and_logprob_requests_with_drafts_equal_the_undrafted_engine(engines):
    """Penalties' counts and logprobs advance with the kept drafted tokens exactly as one token a step."""
    plain, drafted = engines
    prompt = chat(plain.tokenizer, "Copy this text exactly: " + TEXT)
    accepted_before = drafted.num_accepted_draft_tokens
    for params in (SamplingParams(temperature=0, max_tokens=40, frequency_penalty=0.5),
                   SamplingParams(temperature=0, max_tokens=40, repetition_penalty=1.1, presence_penalty=0.3),
                   SamplingParams(temperature=0, max_tokens=60, logprobs=2,
                                  grammar=GrammarSpec(json_schema=json.dumps(SCHEMA)))):
        want, got = _streamed(plain, prompt, params), _streamed(drafted, prompt, params)
        assert got["tokens"] == want["tokens"] and got["finish"] == want["finish"]
        for w, g in zip(want["logprobs"], got["logprobs"]):
            assert g.token_id == w.token_id and [t for t, _ in g.top] == [t for t, _ in w.top]
            assert g.logprob == pytest.approx(w.logprob, abs=1e-4)
    assert drafted.num_accepted_draft_tokens > accepted_before
    drafted.pool.check_invariants()


def _streamed(engine, prompt, params) -> dict:
    req = engine.add_request(prompt, params)
    tokens, logprobs, finish = [], [], None
    while finish is None:
        for out in engine.step():
            if out.request_id == req.request_id:
                tokens += out.delta_token_ids
                logprobs += out.delta_logprobs
                finish = out.finish_reason if out.finished else None
    return {"tokens": tokens, "logprobs": logprobs, "finish": finish}


def test_every_request_takes_ngram_drafts_and_a_grammar_one_its_forced_text(engines):
    plain, drafted = engines
    prompt = chat(drafted.tokenizer, "Copy: " + TEXT)
    for params in (SamplingParams(temperature=0, max_tokens=8),
                   SamplingParams(temperature=0.8, seed=3, max_tokens=8),
                   SamplingParams(temperature=0, repetition_penalty=1.2, max_tokens=8),
                   SamplingParams(temperature=0, max_tokens=8, logprobs=1, grammar=GrammarSpec(regex="[A-Z]+"))):
        expected = drafted.drafts.text_drafter if params.grammar is None else drafted.drafts.grammar_drafter
        assert drafted.make_request(prompt, params).draft.drafter is expected
    assert plain.make_request(prompt, SamplingParams(temperature=0, max_tokens=8)).draft is None   # no drafter


def test_seeded_sampled_requests_with_drafts_equal_the_undrafted_engine(engines):
    """Temperature > 0: each position's token is drawn as a one-token step draws it, the draft
    kept while it agrees (its distribution: test_spec_sampled.py); a seed gives the same tokens
    with and without drafts, alone or batched, and a copying prompt keeps many drafted tokens."""
    plain, drafted = engines
    prompts = [chat(drafted.tokenizer, "Copy this text exactly: " + TEXT),
               chat(drafted.tokenizer, "Repeat after me: the quick brown fox jumps over the lazy dog, the quick brown fox.")]
    params = [SamplingParams(temperature=0.7, top_p=0.95, seed=seed, max_tokens=48, logprobs=1) for seed in range(2)]
    params.append(SamplingParams(temperature=1.0, top_k=20, frequency_penalty=0.3, seed=5, max_tokens=40))
    prompts = [prompts[0], prompts[1], prompts[0]]
    want = plain.generate(prompts, params)
    accepted = drafted.num_accepted_draft_tokens
    got = drafted.generate(prompts, params)
    assert [g.token_ids for g in got] == [w.token_ids for w in want]
    assert drafted.num_accepted_draft_tokens - accepted > 10
    assert drafted.generate([prompts[0]], params[0])[0].token_ids == want[0].token_ids, "alone as in a batch"
    drafted.pool.check_invariants()
    drafted.cache.check_invariants()


def test_grammar_requests_draft_the_forced_text_first(engines):
    """Jump-forward: at the start of a schema's object the only continuation is its first key."""
    _, drafted = engines
    prompt = chat(drafted.tokenizer, "Extract: " + TEXT)
    req = drafted.make_request(prompt, SamplingParams(temperature=0, max_tokens=8,
                                                      grammar=GrammarSpec(json_schema=json.dumps(SCHEMA))))
    assert req.draft.drafter is drafted.drafts.grammar_drafter
    forced = req.grammar_state.jump_forward_string()
    assert forced.startswith('{') and '"invoice_number"' in forced
    draft = req.draft.drafter.propose(req, 12)
    assert drafted.tokenizer.decode(draft) == forced[:len(drafted.tokenizer.decode(draft))] and draft


def spec_counts(engine) -> dict[str, tuple[float, float, float]]:
    """method -> (drafted, accepted, verification steps), from the engine's Prometheus registry."""
    registry = engine.metrics.registry
    return {m: tuple(registry.get_sample_value(name, {"method": m}) for name in (
        "ocrserve_spec_draft_tokens_by_method_total", "ocrserve_spec_accepted_tokens_by_method_total",
        "ocrserve_spec_acceptance_length_count")) for m in SPEC_METHODS}


def test_a_request_that_switches_drafting_off_gets_no_drafts_and_the_same_tokens(engines):
    _, drafted = engines
    prompts = [chat(drafted.tokenizer, "Copy this text exactly: " + TEXT),
               chat(drafted.tokenizer, "Extract the invoice fields as JSON: " + TEXT)]
    params = [SamplingParams(temperature=0, max_tokens=30),
              SamplingParams(temperature=0, max_tokens=30, grammar=GrammarSpec(json_schema=json.dumps(SCHEMA)))]
    before, num_drafted = spec_counts(drafted), drafted.num_draft_tokens
    off = drafted.generate(prompts, [dataclasses.replace(p, speculative=False) for p in params])
    assert spec_counts(drafted) == before and drafted.num_draft_tokens == num_drafted
    on = drafted.generate(prompts, params)
    assert [o.token_ids for o in off] == [o.token_ids for o in on]
    after = spec_counts(drafted)
    assert after["ngram"][0] > before["ngram"][0] and after["grammar"][0] > before["grammar"][0]
    drafted.pool.check_invariants()


def test_drafts_are_counted_by_method_and_sum_to_the_totals(engines):
    """Per-method series: drafted and kept tokens add up to the unlabelled totals; the acceptance
    length histogram has one observation per verification step, summing to the kept tokens."""
    _, drafted = engines
    schema = GrammarSpec(json_schema=json.dumps(SCHEMA))
    drafted.generate([chat(drafted.tokenizer, "Repeat after me: " + TEXT), chat(drafted.tokenizer, "JSON: " + TEXT)],
                     [SamplingParams(temperature=0, max_tokens=24), SamplingParams(temperature=0, max_tokens=40,
                                                                                   grammar=schema)])
    counts, registry = spec_counts(drafted), drafted.metrics.registry
    assert sum(c[0] for c in counts.values()) == drafted.num_draft_tokens
    assert sum(c[1] for c in counts.values()) == drafted.num_accepted_draft_tokens
    assert registry.get_sample_value("ocrserve_spec_draft_tokens_total") == drafted.num_draft_tokens
    assert counts["draft_model"] == counts["ctc"] == (0, 0, 0)
    for method in ("ngram", "grammar"):
        drafted_tokens, kept, steps = counts[method]
        assert 0 < kept <= drafted_tokens and 0 < steps <= drafted_tokens
        assert registry.get_sample_value("ocrserve_spec_acceptance_length_sum", {"method": method}) == kept
        assert registry.get_sample_value("ocrserve_spec_acceptance_length_bucket",
                                         {"method": method, "le": "+Inf"}) == steps
