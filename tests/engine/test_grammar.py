"""Grammar-constrained decoding: real xgrammar, the real SmolLM2 tokenizer.

Most tests drive a GrammarState with seeded noise logits (what a random-weight
model produces): only the grammar keeps the output valid, so every output must
parse and validate. One test runs the real SmolLM2 weights.
"""
from __future__ import annotations

import json
import re
import threading

import jsonschema
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import InvalidRequestError
from engine.grammar import (
    GrammarBackend,
    GrammarError,
    GrammarSpec,
    apply_grammar,
    batch_allowed_mask,
    fill_batch_bitmask,
    unpack_bitmask,
)

VOCAB_SIZE = 49152          # SmolLM2's logits width (= its tokenizer's size)
PADDED_VOCAB_SIZE = VOCAB_SIZE + 64
MAX_TOKENS = 1000


@pytest.fixture(scope="module")
def backend(smollm2_tokenizer):
    grammar_backend = GrammarBackend(smollm2_tokenizer, VOCAB_SIZE)
    grammar_backend.warm_up()
    yield grammar_backend
    grammar_backend.close()


@pytest.fixture(scope="module")
def small_backend(smollm2_tokenizer):
    """Short timeout, small cache, a padded vocabulary (logits wider than the tokenizer)."""
    grammar_backend = GrammarBackend(smollm2_tokenizer, PADDED_VOCAB_SIZE, max_cache_bytes=400 << 10,
                                     max_grammar_bytes=400 << 10, compile_timeout_s=1.0)
    grammar_backend.warm_up()
    yield grammar_backend
    grammar_backend.close()


def generate_with_noise(state, seed: int, vocab_size: int = VOCAB_SIZE, closing_bias: torch.Tensor | None = None,
                        free_tokens: int = 0) -> list[int]:
    """Noise-logit decoding until the grammar terminates or MAX_TOKENS.

    closing_bias ([vocab]) is added after `free_tokens` steps, to steer
    unbounded grammars (any JSON object) towards an end; validity is still the
    grammar's alone."""
    generator = torch.Generator().manual_seed(seed)
    token_ids: list[int] = []
    while not state.is_terminated() and len(token_ids) < MAX_TOKENS:
        logits = torch.randn(1, vocab_size, generator=generator)          # [1, vocab]
        if closing_bias is not None and len(token_ids) >= free_tokens:
            logits += closing_bias
        apply_grammar(logits, [state])
        token_id = int(logits.argmax())
        assert state.accept(token_id), f"the grammar refused token {token_id} it allowed"
        token_ids.append(token_id)
    return token_ids


def decode(tokenizer, state, token_ids: list[int]) -> str:
    assert state.is_terminated(), f"no end after {len(token_ids)} tokens: {tokenizer.decode(token_ids)!r}"
    assert token_ids[-1] in state.stop_token_ids
    return tokenizer.decode(token_ids[:-1])


# ---------------------------------------------------------------- random JSON schemas

_NAMES = st.sampled_from(["id", "name", "total", "date", "items", "qty", "price", "note", "tags", "kind"])
_PATTERNS = st.sampled_from([r"^[A-Z]{2}[0-9]{2,4}$", r"^[a-z]{1,6}$", r"^(yes|no)$",
                             r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", r"^INV-[0-9]{3}$"])


def _leaf_schemas() -> st.SearchStrategy[dict]:
    strings = st.tuples(st.integers(0, 3), st.integers(0, 8)).map(
        lambda t: {"type": "string", "minLength": t[0], "maxLength": t[0] + t[1]})
    patterned = _PATTERNS.map(lambda pattern: {"type": "string", "pattern": pattern})
    integers = st.tuples(st.integers(-1000, 1000), st.integers(0, 2000)).map(
        lambda t: {"type": "integer", "minimum": t[0], "maximum": t[0] + t[1]})
    numbers = st.tuples(st.integers(-400, 400), st.integers(1, 400)).map(
        lambda t: {"type": "number", "minimum": t[0] / 4, "maximum": (t[0] + t[1]) / 4})
    enum_values = st.one_of(st.text(alphabet="abcxyz -", max_size=6), st.integers(-50, 50), st.booleans(), st.none())
    enums = st.lists(enum_values, min_size=1, max_size=4, unique_by=json.dumps).map(lambda values: {"enum": values})
    constants = st.sampled_from([{"type": "boolean"}, {"type": "null"}, {"const": "fixed"}])
    return st.one_of(strings, patterned, integers, numbers, enums, constants)


def _container_schemas(children: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    objects = st.dictionaries(_NAMES, children, min_size=1, max_size=4).flatmap(
        lambda properties: st.lists(st.sampled_from(sorted(properties)), unique=True).map(
            lambda required: {"type": "object", "properties": properties, "required": required}))
    arrays = st.tuples(children, st.integers(0, 1), st.integers(0, 2)).map(
        lambda t: {"type": "array", "items": t[0], "minItems": t[1], "maxItems": t[1] + t[2]})
    unions = st.lists(children, min_size=2, max_size=3).map(lambda branches: {"anyOf": branches})
    return st.one_of(objects, arrays, unions)


def _with_definitions(schema: dict) -> dict:
    return {"$defs": {"part": schema}, "type": "object",
            "properties": {"part": {"$ref": "#/$defs/part"}, "parts": {"type": "array", "maxItems": 1,
                                                                       "items": {"$ref": "#/$defs/part"}}},
            "required": ["part"]}


RANDOM_SCHEMAS = st.recursive(_leaf_schemas(), _container_schemas, max_leaves=8).flatmap(
    lambda schema: st.sampled_from([schema, _with_definitions(schema)]))


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(schema=RANDOM_SCHEMAS, seed=st.integers(0, 2**31 - 1))
def test_random_schema_outputs_parse_and_validate(backend, smollm2_tokenizer, schema, seed):
    state = backend.new_matcher(GrammarSpec(json_schema=json.dumps(schema)))
    text = decode(smollm2_tokenizer, state, generate_with_noise(state, seed))
    jsonschema.validate(json.loads(text), schema, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("regex", [r"[A-Z]{2}-[0-9]{3,5}", r"(yes|no|maybe)", r"\d{4}-\d{2}-\d{2}",
                                   r"[a-z]{1,8}@[a-z]{2,6}\.(com|org)", r"(a+)+$", r"-?(0|[1-9][0-9]{0,5})"])
def test_regex_outputs_match_fully(backend, smollm2_tokenizer, regex):
    spec = GrammarSpec(regex=regex)
    for seed in range(3):
        state = backend.new_matcher(spec)
        text = decode(smollm2_tokenizer, state, generate_with_noise(state, seed))
        assert re.fullmatch(regex, text), (regex, text)


@pytest.mark.parametrize("ebnf, equivalent_regex", [
    ('root ::= "Total: " amount " " currency\n'
     'amount ::= [1-9] [0-9]{0,4} ("." [0-9] [0-9])?\n'
     'currency ::= "EUR" | "USD" | "GBP"',
     r"Total: [1-9][0-9]{0,4}(\.[0-9][0-9])? (EUR|USD|GBP)"),
    ('root ::= "[" (digit ("," digit)*)? "]"\ndigit ::= [0-9]', r"\[([0-9](,[0-9])*)?\]"),
])
def test_ebnf_outputs_match_fully(backend, smollm2_tokenizer, ebnf, equivalent_regex):
    spec = GrammarSpec(ebnf=ebnf)
    for seed in range(3):
        state = backend.new_matcher(spec)
        text = decode(smollm2_tokenizer, state, generate_with_noise(state, seed))
        assert re.fullmatch(equivalent_regex, text), text


def test_json_object_gives_an_object(backend, smollm2_tokenizer):
    # Any-JSON has unbounded strings: after some free noise, favour tokens that close things.
    closing_bias = torch.zeros(VOCAB_SIZE)
    for token_id in range(len(smollm2_tokenizer)):
        piece = smollm2_tokenizer.decode([token_id])
        closing_bias[token_id] = 20.0 if ("}" in piece or "]" in piece) else 10.0 if '"' in piece else 0.0
    closing_bias[smollm2_tokenizer.eos_token_id] = 30.0
    for seed in range(4):
        state = backend.new_matcher(GrammarSpec(json_object=True))
        token_ids = generate_with_noise(state, seed, closing_bias=closing_bias, free_tokens=25)
        value = json.loads(decode(smollm2_tokenizer, state, token_ids))
        assert isinstance(value, dict) and len(token_ids) > 25


# ---------------------------------------------------------------- masks and state

def test_stop_token_only_after_a_complete_match(backend, smollm2_tokenizer):
    spec = GrammarSpec(json_schema=json.dumps({"type": "object", "properties": {"n": {"type": "integer"}},
                                               "required": ["n"]}))
    state = backend.new_matcher(spec)
    eos = smollm2_tokenizer.eos_token_id
    assert state.stop_token_ids == [eos]
    for token_id in smollm2_tokenizer.encode('{"n": 12'):
        assert not state.allowed_mask()[eos]
        assert state.accept(token_id)
    assert not state.is_completed()
    assert state.accept(smollm2_tokenizer.encode("}")[0]) and state.is_completed()
    mask = state.allowed_mask()
    assert mask.nonzero().flatten().tolist() == [eos]       # a closed object can only end
    assert not state.accept(smollm2_tokenizer.encode(" ")[0])
    assert state.accept(eos) and state.is_terminated()


def test_rollback_restores_the_earlier_mask(backend, smollm2_tokenizer):
    spec = GrammarSpec(json_schema=json.dumps({"type": "object", "properties": {
        "code": {"type": "string", "pattern": r"^[A-Z]{2}[0-9]{3}$"}}, "required": ["code"]}))
    state = backend.new_matcher(spec)
    token_ids = smollm2_tokenizer.encode('{"code": "AB')
    assert len(token_ids) >= 3
    assert state.accept(token_ids[0])
    mask_after_first = state.allowed_mask()
    for token_id in token_ids[1:3]:
        assert state.accept(token_id)
    assert not torch.equal(state.allowed_mask(), mask_after_first)
    state.rollback(2)
    assert state.num_accepted == 1
    assert torch.equal(state.allowed_mask(), mask_after_first)


def test_mixed_batch_leaves_free_rows_alone(backend):
    spec = GrammarSpec(regex=r"[0-9]{3}")
    states = [None, backend.new_matcher(spec), None, backend.new_matcher(spec)]
    assert batch_allowed_mask([None, None], VOCAB_SIZE) is None
    logits = torch.randn(4, VOCAB_SIZE, generator=torch.Generator().manual_seed(0))    # [batch, vocab]
    masked = logits.clone()
    apply_grammar(masked, states)
    assert torch.equal(masked[0], logits[0]) and torch.equal(masked[2], logits[2])
    allowed = batch_allowed_mask(states, VOCAB_SIZE)                                   # [batch, vocab]
    assert allowed.shape == (4, VOCAB_SIZE) and allowed[0].all() and allowed[2].all()
    # The bool mask and the in-place bitmask kernel agree on every row.
    assert torch.equal(allowed, masked != float("-inf"))
    assert torch.equal(allowed[1], states[1].allowed_mask())
    half = logits.to(torch.bfloat16)
    apply_grammar(half, states)
    assert torch.equal(half != float("-inf"), allowed)
    assert 0 < int(allowed[1].sum()) < 100                 # digit tokens only


def test_unpack_bitmask_keeps_token_order():
    bitmask = torch.zeros(2, 3, dtype=torch.int32)                                     # [rows, words]
    bitmask[0, 0] = 1 << 5
    bitmask[0, 2] = -(1 << 31)           # bit 31 of word 2: token 95
    bitmask[1, 1] = 1
    allowed = unpack_bitmask(bitmask, 90)
    assert allowed.shape == (2, 90)
    assert allowed[0].nonzero().flatten().tolist() == [5]           # token 95 lies past vocab 90
    assert allowed[1].nonzero().flatten().tolist() == [32]
    assert unpack_bitmask(bitmask, 96)[0].nonzero().flatten().tolist() == [5, 95]


def test_padded_vocabulary_never_allows_padding(small_backend, smollm2_tokenizer):
    state = small_backend.new_matcher(GrammarSpec(json_object=True))
    state.accept(smollm2_tokenizer.encode("{")[0])
    allowed = state.allowed_mask()
    assert allowed.shape == (PADDED_VOCAB_SIZE,)
    assert allowed[:VOCAB_SIZE].any() and not allowed[VOCAB_SIZE:].any()
    bitmask, rows = fill_batch_bitmask([state], PADDED_VOCAB_SIZE)
    assert rows == [0] and bitmask.shape == (1, PADDED_VOCAB_SIZE // 32)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("spec, message", [
    (GrammarSpec(json_schema='{"type": "object", "properties": '), "not valid JSON"),
    (GrammarSpec(json_schema='{"type": "object", "x": ' + "1" * (1 << 20) + "}"), "more than the limit"),
    (GrammarSpec(json_schema='{"properties": {"a": {"$ref": "#/$defs/missing"}}}'), "does not resolve"),
    (GrammarSpec(json_schema='{"$ref": "https://example.com/invoice.json"}'), "points outside the schema"),
    (GrammarSpec(json_schema='{"type": "strnig"}'), "not a valid JSON Schema"),
    (GrammarSpec(json_schema='{"type": "array", "uniqueItems": true}'), "'uniqueItems' is not supported"),
    (GrammarSpec(json_schema='{"not": {"type": "null"}}'), "'not' is not supported"),
    (GrammarSpec(json_schema='{"type": "string", "pattern": "^[a-z]+$", "maxLength": 4}'), "bound the length"),
    (GrammarSpec(json_schema='{"type": "object", "required": ["id"]}'), "'required' names 'id'"),
    (GrammarSpec(json_schema='{"type": "string", "minLength": 5, "maxLength": 1}'), "minLength 5 is greater"),
    (GrammarSpec(json_schema='[1, 2]'), "must be a JSON object"),
    (GrammarSpec(json_schema="NaN"), "not valid JSON"),
    (GrammarSpec(regex="(abc"), "parenthesis is not closed"),
    (GrammarSpec(regex="a" * 5000), "more than the limit"),
    (GrammarSpec(regex="(?=INV)[A-Z]+"), "lookaround"),
    (GrammarSpec(ebnf='root ::= "yes" |'), "EBNF parser error"),
    (GrammarSpec(ebnf='answer ::= "yes"'), 'root rule with name "root" is not found'),
    (GrammarSpec(), "exactly one of"),
    (GrammarSpec(regex="a", ebnf='root ::= "a"'), "exactly one of"),
], ids=lambda value: value if isinstance(value, str) else "")
def test_bad_input_is_a_clear_grammar_error(backend, spec, message):
    timeouts = backend.num_timeouts
    with pytest.raises(GrammarError, match=re.escape(message)) as caught:
        backend.compile(spec)
    # Refused by a check or by the compiler's own error, never by running into the compile deadline.
    assert backend.num_timeouts == timeouts
    assert isinstance(caught.value, InvalidRequestError) and caught.value.param
    assert "/project/" not in str(caught.value) and "Check failed" not in str(caught.value)


def test_catastrophic_backtracking_shape_compiles_quickly(backend, smollm2_tokenizer):
    timeouts = backend.num_timeouts
    state = backend.new_matcher(GrammarSpec(regex=r"(a+)+$"))     # xgrammar builds an automaton: no backtracking
    assert backend.num_timeouts == timeouts          # compiled inside the backend's own deadline
    text = decode(smollm2_tokenizer, state, generate_with_noise(state, seed=7))
    assert re.fullmatch(r"a+", text)


def test_slow_compile_times_out_and_the_backend_recovers(small_backend):
    slow = GrammarSpec(regex="[^x]{0,20000}[^y]{0,20000}")      # ~6 s and 10 MB when let run
    first_worker = small_backend._worker
    compiles = small_backend.num_compiles
    with pytest.raises(GrammarError, match="took longer than 1 s"):
        small_backend.compile(slow)
    # The 1 s deadline cut it: the compile process was killed (not left running) and replaced.
    assert small_backend.num_timeouts == 1 and small_backend.num_compiles == compiles + 1
    assert first_worker._process.poll() is not None and small_backend._worker.pid != first_worker.pid
    replacement_pid = small_backend._worker.pid
    with pytest.raises(GrammarError, match="took longer than 1 s"):     # remembered: no second compile
        small_backend.compile(slow)
    assert small_backend.num_timeouts == 1 and small_backend.num_compiles == compiles + 1
    assert small_backend._worker.pid == replacement_pid
    assert small_backend.new_matcher(GrammarSpec(regex="[0-9]+")).allowed_mask().any()


# ---------------------------------------------------------------- cache

def test_same_spec_compiles_once(backend):
    spec = GrammarSpec(json_schema=json.dumps({"type": "object", "properties": {"x": {"type": "boolean"}}}))
    compiles, hits = backend.num_compiles, backend.num_cache_hits
    first = backend.compile(spec)
    second = backend.compile(GrammarSpec(json_schema=spec.json_schema))
    assert backend.num_compiles == compiles + 1 and backend.num_cache_hits == hits + 1
    assert first is second


def test_cache_is_bounded_by_bytes(small_backend):
    specs = [GrammarSpec(json_schema=json.dumps({"type": "object", "properties": {
        f"field_{i}": {"type": "string", "maxLength": 20}, "n": {"type": "integer"}}})) for i in range(8)]
    for spec in specs:
        small_backend.compile(spec)
        assert small_backend.cache_bytes <= small_backend.max_cache_bytes
    assert small_backend.num_evictions > 0 and small_backend.num_cached < len(specs)
    compiles = small_backend.num_compiles
    small_backend.compile(specs[0])                 # evicted first (least recently used): compiled again
    assert small_backend.num_compiles == compiles + 1
    small_backend.compile(specs[0])
    assert small_backend.num_compiles == compiles + 1


def test_concurrent_compiles_all_succeed(backend):
    specs = [GrammarSpec(regex=f"[a-c]{{{i}}}x") for i in range(1, 7)]
    errors: list[BaseException] = []

    def compile_one(spec):
        try:
            backend.compile(spec)
        except BaseException as exc:      # surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=compile_one, args=(spec,)) for spec in specs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert all(backend.compile(spec) is not None for spec in specs)


# ---------------------------------------------------------------- real model

@pytest.mark.slow
def test_smollm2_answers_an_invoice_schema_with_valid_json(backend, hf_smollm2, smollm2_tokenizer):
    schema = {"type": "object", "properties": {
        "invoice_number": {"type": "string", "maxLength": 20},
        "date": {"type": "string", "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "total": {"type": "number", "minimum": 0}},
        "required": ["invoice_number", "date", "total"]}
    prompt = ("Invoice INV-2041 dated 2024-03-18. Total due: 1250.00 EUR.\n"
              "Extract invoice_number, date and total as JSON.")
    input_ids = smollm2_tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                                      add_generation_prompt=True, return_dict=True,
                                                      return_tensors="pt")["input_ids"]
    state = backend.new_matcher(GrammarSpec(json_schema=json.dumps(schema)))
    token_ids: list[int] = []
    with torch.no_grad():
        output = hf_smollm2(input_ids=input_ids, use_cache=True)
        while not state.is_terminated() and len(token_ids) < 80:
            logits = output.logits[:, -1, :].float()                             # [1, vocab]
            apply_grammar(logits, [state])
            token_id = int(logits.argmax())
            assert state.accept(token_id)
            token_ids.append(token_id)
            output = hf_smollm2(input_ids=torch.tensor([[token_id]]), cache=output.past_key_values,
                                use_cache=True)
    answer = json.loads(decode(smollm2_tokenizer, state, token_ids))
    jsonschema.validate(answer, schema)
    assert answer["invoice_number"] == "INV-2041" and answer["date"] == "2024-03-18"
