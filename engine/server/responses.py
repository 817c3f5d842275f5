"""Response bodies in OpenAI's exact wire shapes, and server-sent-event framing.

| endpoint | whole answer | stream chunk |
|---|---|---|
| /v1/chat/completions | object "chat.completion", choices[].message | object "chat.completion.chunk", choices[].delta |
| /v1/completions | object "text_completion", choices[].text | object "text_completion", choices[].text |

`usage.prompt_tokens_details.cached_tokens` is always present (0 when nothing
hit the prefix cache). A stream ends with `data: [DONE]`; with
`stream_options.include_usage` every chunk carries `"usage": null` and one last
chunk with empty `choices` carries the usage.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

SSE_DONE = b"data: [DONE]\n\n"


def sse_event(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def usage_body(num_prompt_tokens: int, num_output_tokens: int, num_cached_tokens: int) -> dict:
    return {
        "prompt_tokens": num_prompt_tokens,
        "completion_tokens": num_output_tokens,
        "total_tokens": num_prompt_tokens + num_output_tokens,
        "prompt_tokens_details": {"cached_tokens": num_cached_tokens},
    }


@dataclass(frozen=True)
class ResponseHeader:
    """What every body and chunk of one response repeats."""

    response_id: str
    created: int
    model: str


def chat_completion_body(header: ResponseHeader, text: str, finish_reason: str, logprobs: dict | None,
                         usage: dict) -> dict:
    return {
        "id": header.response_id,
        "object": "chat.completion",
        "created": header.created,
        "model": header.model,
        "system_fingerprint": None,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": None},
            "logprobs": logprobs,
            "finish_reason": finish_reason,
        }],
        "usage": usage,
    }


def chat_chunk(header: ResponseHeader, delta: dict, finish_reason: str | None = None,
               logprobs: dict | None = None, with_usage_field: bool = False) -> dict:
    chunk = {
        "id": header.response_id,
        "object": "chat.completion.chunk",
        "created": header.created,
        "model": header.model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}],
    }
    if with_usage_field:
        chunk["usage"] = None
    return chunk


def completion_body(header: ResponseHeader, text: str, finish_reason: str, logprobs: dict | None,
                    usage: dict) -> dict:
    return {
        "id": header.response_id,
        "object": "text_completion",
        "created": header.created,
        "model": header.model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "text": text, "logprobs": logprobs, "finish_reason": finish_reason}],
        "usage": usage,
    }


def completion_chunk(header: ResponseHeader, text: str, finish_reason: str | None = None,
                     logprobs: dict | None = None, with_usage_field: bool = False) -> dict:
    chunk = {
        "id": header.response_id,
        "object": "text_completion",
        "created": header.created,
        "model": header.model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "text": text, "logprobs": logprobs, "finish_reason": finish_reason}],
    }
    if with_usage_field:
        chunk["usage"] = None
    return chunk


def usage_chunk(header: ResponseHeader, object_name: str, usage: dict) -> dict:
    return {
        "id": header.response_id,
        "object": object_name,
        "created": header.created,
        "model": header.model,
        "system_fingerprint": None,
        "choices": [],
        "usage": usage,
    }
