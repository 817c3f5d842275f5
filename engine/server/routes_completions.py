"""POST /v1/completions: one prompt, as text or as token ids."""
from __future__ import annotations

import time
import uuid

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from engine.server.api_errors import ApiError
from engine.server.chat_prompt import check_prompt_size, max_prompt_bytes, tokenize_off_loop
from engine.server.deps import get_context, require_api_key, require_ready
from engine.server.generation import GenerationRun
from engine.server.logprobs_format import completion_logprobs
from engine.server.protocol import CompletionRequest
from engine.server.request_body import read_json_body
from engine.server.request_lifetime import RequestDeadline
from engine.server.responses import (ResponseHeader, completion_body, completion_chunk, usage_body,
                                     usage_chunk)
from engine.server.sampling_request import completion_prompt, completion_sampling_params
from engine.server.streaming import ABORTED_MESSAGE, EventStreamResponse, sse_events

router = APIRouter()


@router.post("/v1/completions", dependencies=[Depends(require_api_key), Depends(require_ready)])
async def create_completion(request: Request) -> Response:
    context = get_context(request)
    engine, settings = context.engine, context.settings
    deadline = RequestDeadline(settings.request_timeout_s)
    body = await read_json_body(request, CompletionRequest, settings.max_request_bytes, deadline)
    header = ResponseHeader(f"cmpl-{uuid.uuid4().hex}", int(time.time()), context.resolve_model(body.model))
    params = completion_sampling_params(body, engine.vocab_size)
    prompt = completion_prompt(body, engine.vocab_size)
    if isinstance(prompt, str):
        # Refused by its size before it is tokenised; tokenised off the event loop.
        check_prompt_size(prompt, max_prompt_bytes(engine.context_length, settings.prompt_bytes_per_token), "prompt")
        prompt = await tokenize_off_loop(engine.tokenize, prompt)
    run = await GenerationRun.start(engine, request, prompt, params, header.response_id, body.tenant_key,
                                    deadline)
    token_texts = context.token_texts if body.logprobs is not None else None

    if body.is_stream:
        include_usage = body.include_usage_in_stream
        num_chars_sent = 0

        def delta_chunk(output) -> dict | None:
            nonlocal num_chars_sent
            if not output.delta_text and not (token_texts and output.delta_logprobs):
                return None
            logprobs = None
            if token_texts is not None:
                logprobs = completion_logprobs(token_texts, output.delta_logprobs, num_chars_sent)
            num_chars_sent += len(output.delta_text)
            return completion_chunk(header, output.delta_text, None, logprobs, include_usage)

        def finish_chunk(last) -> dict:
            return completion_chunk(header, "", last.finish_reason, None, include_usage)

        def final_usage(last) -> dict:
            usage = usage_body(last.num_prompt_tokens, last.num_output_tokens, last.num_cached_tokens)
            return usage_chunk(header, "text_completion", usage)

        return EventStreamResponse(sse_events(run, [], delta_chunk, finish_chunk,
                                              final_usage if include_usage else None))

    final = await run.collect()
    last = final.last
    if last.finish_reason == "abort":
        raise ApiError(503, ABORTED_MESSAGE, "aborted")
    logprobs = completion_logprobs(token_texts, final.logprobs, 0) if token_texts is not None else None
    usage = usage_body(last.num_prompt_tokens, last.num_output_tokens, last.num_cached_tokens)
    return JSONResponse(completion_body(header, last.text, last.finish_reason, logprobs, usage))
