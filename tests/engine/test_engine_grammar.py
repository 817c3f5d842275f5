"""Constrained decoding through the engine loop: outputs validate, and free
requests batched with constrained ones are token-identical to running alone."""
from __future__ import annotations

import json
import re
import shutil

import jsonschema
import pytest
import torch

from engine.config import EngineConfig
from engine.engine import Engine
from engine.grammar import GrammarError, GrammarSpec
from engine.sampling_params import SamplingParams

INVOICE = {
    "type": "object",
    "properties": {
        "invoice_number": {"type": "string", "maxLength": 20},
        "total": {"type": "number", "minimum": 0},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "paid": {"type": "boolean"},
    },
    "required": ["invoice_number", "total", "currency", "paid"],
    "additionalProperties": False,
}
TEXT = "Invoice INV-2044 from Acme GmbH. Total due: 1,250.00 EUR. Status: unpaid."


@pytest.fixture(scope="module")
def engine():
    eng = Engine(EngineConfig(model="smollm2-135m", context_length=1024, kv_tokens=8192, debug=True))
    yield eng
    eng.close()


def chat(tok, text):
    out = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
    return list(out["input_ids"] if hasattr(out, "keys") else out)


def test_mixed_batch_constrained_and_free(engine):
    tok = engine.tokenizer
    free_prompts = [chat(tok, q) for q in ("Name a colour.", "What is 2 plus 2?", "Say hello in French.")]
    free = SamplingParams(temperature=0, max_tokens=12)
    alone = [engine.generate([p], free)[0].token_ids for p in free_prompts]
    schema_prompt = chat(tok, "Extract the invoice fields as JSON: " + TEXT)
    constrained = SamplingParams(temperature=0, max_tokens=80, grammar=GrammarSpec(json_schema=json.dumps(INVOICE)))
    regex = SamplingParams(temperature=0, max_tokens=20, grammar=GrammarSpec(regex=r"INV-[0-9]{4}"))
    outs = engine.generate(free_prompts + [schema_prompt, chat(tok, "Invoice id? " + TEXT)],
                           [free, free, free, constrained, regex])
    for want, got in zip(alone, outs[:3]):
        assert got.token_ids == want
    value = json.loads(outs[3].text)
    jsonschema.validate(value, INVOICE)
    assert outs[3].finish_reason == "stop"
    assert re.fullmatch(r"INV-[0-9]{4}", outs[4].text)


def test_sampled_constrained_output_validates_across_seeds(engine):
    tok = engine.tokenizer
    prompt = chat(tok, "Write any JSON describing an invoice: " + TEXT)
    for seed in range(3):
        params = SamplingParams(temperature=1.3, top_p=0.95, max_tokens=120, seed=seed,
                                grammar=GrammarSpec(json_schema=json.dumps(INVOICE)))
        out = engine.generate([prompt], params)[0]
        jsonschema.validate(json.loads(out.text), INVOICE)


def test_bad_grammar_is_a_clear_error_and_engine_keeps_serving(engine):
    with pytest.raises(GrammarError):
        engine.make_request([1, 2, 3], SamplingParams(grammar=GrammarSpec(json_schema="{not json")))
    with pytest.raises(GrammarError):
        engine.make_request([1, 2, 3], SamplingParams(grammar=GrammarSpec(json_schema=json.dumps(
            {"$ref": "https://example.com/schema.json"}))))
    out = engine.generate([chat(engine.tokenizer, "Hi")], SamplingParams(temperature=0, max_tokens=4))[0]
    assert out.num_output_tokens >= 1


def test_tiny_random_model_only_the_grammar_keeps_it_valid(tmp_path, smollm2_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=49152, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                      eos_token_id=2, bos_token_id=1, tie_word_embeddings=True)
    LlamaForCausalLM(cfg).save_pretrained(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(smollm2_path / name, tmp_path / name)
    eng = Engine(EngineConfig(model=str(tmp_path), kv_tokens=4096))
    try:
        for seed in range(4):
            params = SamplingParams(temperature=1.0, max_tokens=200, seed=seed,
                                    grammar=GrammarSpec(json_schema=json.dumps(INVOICE)))
            out = eng.generate([[1, 2, 3, 4]], params)[0]
            if out.finish_reason == "stop":
                jsonschema.validate(json.loads(out.text), INVOICE)
            else:  # a noise model may wander inside a number; whatever it wrote is still a valid prefix
                assert out.finish_reason == "length"
    finally:
        eng.close()


@pytest.fixture(scope="module")
def tiny_engine(tmp_path_factory, smollm2_path):
    """A random-weight Llama with SmolLM2's tokenizer: its logits are noise, so only the grammar keeps it valid."""
    from transformers import LlamaConfig, LlamaForCausalLM

    path = tmp_path_factory.mktemp("tiny_llama")
    torch.manual_seed(1)
    cfg = LlamaConfig(vocab_size=49152, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                      eos_token_id=2, bos_token_id=1, tie_word_embeddings=True)
    LlamaForCausalLM(cfg).save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(smollm2_path / name, path / name)
    eng = Engine(EngineConfig(model=str(path), kv_tokens=8192))
    yield eng
    eng.close()


def _random_schema_property(engine_fixture: str, temperature: float):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.engine.test_grammar import RANDOM_SCHEMAS

    @settings(max_examples=6, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(schema=RANDOM_SCHEMAS, seed=st.integers(0, 2**31 - 1))
    def check(request, schema, seed):
        eng = request.getfixturevalue(engine_fixture)
        prompt = chat(eng.tokenizer, "Answer with JSON for this schema: " + json.dumps(schema))
        params = SamplingParams(temperature=temperature, max_tokens=600, seed=seed,
                                grammar=GrammarSpec(json_schema=json.dumps(schema)))
        out = eng.generate([prompt], params)[0]
        assert out.finish_reason == "stop", (schema, out.text)
        jsonschema.validate(json.loads(out.text), schema, cls=jsonschema.Draft202012Validator)

    return check


test_random_schemas_through_the_engine_with_smollm2 = _random_schema_property("engine", 0.0)
test_random_schemas_through_the_engine_with_a_noise_model = _random_schema_property("tiny_engine", 1.0)
