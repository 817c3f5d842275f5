"""/v1/completions: text and token-id prompts, streaming, logprobs, cached tokens, tenants."""
from __future__ import annotations

from .conftest import MODEL

PROMPT = "The three primary colours are"
# Token ids no other test sends first, so nothing of them is in the prefix cache yet.
FRESH_PROMPT_IDS = [5000 + 7 * i for i in range(80)]


def test_text_prompt(client):
    completion = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=8, temperature=0)
    assert completion.object == "text_completion"
    assert completion.id.startswith("cmpl-")
    assert completion.choices[0].text
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage.completion_tokens == 8


def test_token_id_prompt_equals_its_text(client, smollm2_tokenizer):
    by_text = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=8, temperature=0)
    prompt_ids = smollm2_tokenizer.encode(PROMPT, add_special_tokens=False)
    by_ids = client.completions.create(model=MODEL, prompt=prompt_ids, max_tokens=8, temperature=0)
    assert by_ids.choices[0].text == by_text.choices[0].text
    assert by_ids.usage.prompt_tokens == by_text.usage.prompt_tokens == len(prompt_ids)


def test_streamed_completion_equals_the_whole(client):
    whole = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=8, temperature=0).choices[0].text
    chunks = list(client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=8, temperature=0, stream=True,
                                            stream_options={"include_usage": True}))
    assert "".join(chunk.choices[0].text for chunk in chunks if chunk.choices) == whole
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 8


def test_logprobs_in_the_legacy_shape(client):
    completion = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=5, temperature=0, logprobs=2)
    logprobs = completion.choices[0].logprobs
    assert len(logprobs.tokens) == len(logprobs.token_logprobs) == len(logprobs.top_logprobs) == 5
    assert "".join(logprobs.tokens) == completion.choices[0].text
    assert logprobs.text_offset[0] == 0
    assert all(1 <= len(top) <= 2 for top in logprobs.top_logprobs)


def test_cached_tokens_are_zero_then_the_repeated_prefix_and_never_cross_tenants(http):
    body = {"prompt": FRESH_PROMPT_IDS, "max_tokens": 1, "temperature": 0}
    first = http.post("/v1/completions", json=body).json()["usage"]
    assert first["prompt_tokens_details"] == {"cached_tokens": 0}
    second = http.post("/v1/completions", json=body).json()["usage"]
    assert second["prompt_tokens_details"]["cached_tokens"] >= len(FRESH_PROMPT_IDS) // 2
    other_tenant = http.post("/v1/completions", json={**body, "tenant": "someone-else"}).json()["usage"]
    assert other_tenant["prompt_tokens_details"] == {"cached_tokens": 0}
