"""/v1/chat/completions through the official `openai` client: whole and streamed answers,
stop strings and regexes, seeds, logprobs, usage with cached tokens."""
from __future__ import annotations

import json
import re

QUESTION = [{"role": "user", "content": "Name three colours of the rainbow."}]


def greedy_chat(client, messages, max_tokens: int = 16, **kwargs):
    return client.chat.completions.create(model="smollm2-135m", messages=messages, max_tokens=max_tokens,
                                          temperature=0, **kwargs)


def test_chat_completion_shape(client):
    completion = greedy_chat(client, QUESTION)
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    assert completion.model == "smollm2-135m"
    choice = completion.choices[0]
    assert choice.index == 0 and choice.message.role == "assistant"
    assert choice.message.content.strip()
    assert choice.finish_reason in ("stop", "length")
    usage = completion.usage
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.prompt_tokens_details.cached_tokens >= 0


def test_greedy_is_repeatable_and_length_finishes_at_max_tokens(client):
    first = greedy_chat(client, QUESTION, max_tokens=5)
    second = greedy_chat(client, QUESTION, max_tokens=5)
    assert first.choices[0].message.content == second.choices[0].message.content
    assert first.choices[0].finish_reason == "length"
    assert first.usage.completion_tokens == 5


def test_streamed_text_equals_the_whole_answer_and_ends_with_usage(client):
    whole = greedy_chat(client, QUESTION).choices[0].message.content
    chunks = list(greedy_chat(client, QUESTION, stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(chunk.object == "chat.completion.chunk" for chunk in chunks)
    assert len({chunk.id for chunk in chunks}) == 1
    content_chunks = [chunk for chunk in chunks if chunk.choices]
    assert "".join(chunk.choices[0].delta.content or "" for chunk in content_chunks) == whole
    assert content_chunks[-1].choices[0].finish_reason in ("stop", "length")
    assert all(chunk.choices[0].finish_reason is None for chunk in content_chunks[:-1])
    usage_chunk = chunks[-1]
    assert usage_chunk.choices == []
    assert usage_chunk.usage.completion_tokens > 0
    assert usage_chunk.usage.prompt_tokens_details.cached_tokens >= 0
    assert all(chunk.usage is None for chunk in chunks[:-1])


def test_raw_stream_is_openai_sse_ending_with_done(http):
    body = {"model": "smollm2-135m", "messages": QUESTION, "max_tokens": 4, "temperature": 0, "stream": True}
    with http.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in events)
    assert events[-1] == "data: [DONE]"
    payloads = [json.loads(line[len("data: "):]) for line in events[:-1]]
    assert payloads[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert payloads[-1]["choices"][0]["delta"] == {}
    assert payloads[-1]["choices"][0]["finish_reason"] == "length"
    assert all("usage" not in payload for payload in payloads)


def test_stop_string_ends_and_is_trimmed(client):
    full = greedy_chat(client, QUESTION, max_tokens=24).choices[0].message.content
    start = len(full) // 2
    stop = full[start:start + 3]
    start = full.find(stop)   # the engine stops at the first occurrence
    stopped = greedy_chat(client, QUESTION, max_tokens=24, stop=[stop]).choices[0]
    assert stopped.finish_reason == "stop"
    assert stopped.message.content == full[:start]


def test_stop_regex_ends_and_is_trimmed_by_what_matched(client):
    full = greedy_chat(client, QUESTION, max_tokens=24).choices[0].message.content
    words = re.findall(r"[A-Za-z]{3,}", full)
    assert len(words) >= 2, full
    pattern = r"\b" + re.escape(words[1][:2]) + r"[a-z]*"
    match = re.search(pattern, full)
    stopped = greedy_chat(client, QUESTION, max_tokens=24, extra_body={"stop_regex": [pattern]}).choices[0]
    assert stopped.finish_reason == "stop"
    assert stopped.message.content == full[:match.start()]


def test_same_seed_same_text_other_seed_other_text(client):
    def sampled(seed: int) -> str:
        return client.chat.completions.create(model="smollm2-135m", messages=QUESTION, max_tokens=16,
                                              temperature=1.0, top_p=0.95, seed=seed).choices[0].message.content

    first = sampled(1234)
    assert sampled(1234) == first
    assert sampled(4321) != first


def test_logprobs_list_every_token_with_its_alternatives(client):
    completion = greedy_chat(client, QUESTION, max_tokens=6, logprobs=True, top_logprobs=3)
    entries = completion.choices[0].logprobs.content
    assert len(entries) == completion.usage.completion_tokens == 6
    for entry in entries:
        assert len(entry.top_logprobs) == 3
        assert entry.logprob <= 0
        best = max(alternative.logprob for alternative in entry.top_logprobs)
        assert abs(entry.logprob - best) < 1e-4   # greedy picks the most likely token
        assert entry.bytes == list(entry.token.encode("utf-8"))


def test_repeated_prefix_is_reported_as_cached_tokens(client):
    system = {"role": "system", "content": "You are a terse assistant for the tests of prefix caching, "
                                           "session 7f3a. Answer in one short sentence. " * 3}
    messages = [system, {"role": "user", "content": "What is a prefix cache?"}]
    first = greedy_chat(client, messages, max_tokens=2)
    second = greedy_chat(client, messages, max_tokens=2)
    assert first.usage.prompt_tokens == second.usage.prompt_tokens
    assert second.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens // 2
    assert second.usage.prompt_tokens_details.cached_tokens > first.usage.prompt_tokens_details.cached_tokens


def test_content_parts_of_text_render_like_a_string(client):
    as_parts = [{"role": "user", "content": [{"type": "text", "text": "Name three colours of the rainbow."}]}]
    assert greedy_chat(client, as_parts).choices[0].message.content == \
        greedy_chat(client, QUESTION).choices[0].message.content
