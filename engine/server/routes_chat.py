"""POST /v1/chat/completions."""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from engine.sampling_params import SamplingParams
from engine.server.api_errors import ApiError
from engine.server.chat_prompt import build_chat_prompt, max_prompt_bytes
from engine.server.deps import ServerContext, get_context, require_api_key, require_ready
from engine.server.generation import GenerationRun
from engine.server.image_urls import fetch_image
from engine.server.logprobs_format import chat_logprobs
from engine.server.protocol import ChatCompletionRequest
from engine.server.request_body import read_json_body
from engine.server.request_lifetime import RequestDeadline
from engine.server.responses import (ResponseHeader, chat_chunk, chat_completion_body, usage_body,
                                     usage_chunk)
from engine.server.sampling_request import chat_sampling_params
from engine.server.streaming import ABORTED_MESSAGE, EventStreamResponse, sse_events

router = APIRouter()


@dataclass
class ChatCall:
    """A validated chat request, ready for the engine."""

    header: ResponseHeader
    params: SamplingParams
    prompt_ids: list[int]
    images: list[bytes] | None


async def prepare_chat(context: ServerContext, body: ChatCompletionRequest, deadline: RequestDeadline) -> ChatCall:
    """Model, sampling parameters, prompt (the chat template's, cached by message structure) and image
    bytes of a chat request; ApiError says what is wrong with it."""
    engine, settings = context.engine, context.settings
    header = ResponseHeader(f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), context.resolve_model(body.model))
    params = chat_sampling_params(body, engine.vocab_size)
    prompt = await build_chat_prompt(engine.tokenizer, body.messages, header.model, engine.supports_images,
                                     settings.image_url_host_allowlist, engine.tokenize, context.prompt_cache,
                                     max_prompt_bytes(engine.context_length, settings.prompt_bytes_per_token))
    images = await resolve_images(prompt.images, engine, deadline)
    return ChatCall(header, params, prompt.ids, images)


def chat_response_body(call: ChatCall, last, logprobs: dict | None) -> dict:
    """The whole answer of a finished chat request (`last`: its final RequestOutput)."""
    if last.finish_reason == "abort":
        raise ApiError(503, ABORTED_MESSAGE, "aborted")
    usage = usage_body(last.num_prompt_tokens, last.num_output_tokens, last.num_cached_tokens)
    return chat_completion_body(call.header, last.text, last.finish_reason, logprobs, usage)


@router.post("/v1/chat/completions", dependencies=[Depends(require_api_key), Depends(require_ready)])
async def create_chat_completion(request: Request) -> Response:
    context = get_context(request)
    engine, settings = context.engine, context.settings
    deadline = RequestDeadline(settings.request_timeout_s)
    body = await read_json_body(request, ChatCompletionRequest, settings.max_request_bytes, deadline)
    call = await prepare_chat(context, body, deadline)
    header = call.header
    run = await GenerationRun.start(engine, request, call.prompt_ids, call.params, header.response_id,
                                    body.tenant_key, deadline, images=call.images)
    token_texts = context.token_texts if body.logprobs else None

    def logprobs_of(items: list) -> dict | None:
        return chat_logprobs(token_texts, items) if token_texts is not None else None

    if body.is_stream:
        include_usage = body.include_usage_in_stream

        def delta_chunk(output) -> dict | None:
            if not output.delta_text and not (token_texts and output.delta_logprobs):
                return None
            return chat_chunk(header, {"content": output.delta_text}, None, logprobs_of(output.delta_logprobs),
                              include_usage)

        def finish_chunk(last) -> dict:
            return chat_chunk(header, {}, last.finish_reason, None, include_usage)

        def final_usage(last) -> dict:
            usage = usage_body(last.num_prompt_tokens, last.num_output_tokens, last.num_cached_tokens)
            return usage_chunk(header, "chat.completion.chunk", usage)

        opening = [chat_chunk(header, {"role": "assistant", "content": ""}, None, None, include_usage)]
        return EventStreamResponse(sse_events(run, opening, delta_chunk, finish_chunk,
                                              final_usage if include_usage else None))

    final = await run.collect()
    return JSONResponse(chat_response_body(call, final.last, logprobs_of(final.logprobs)))


async def resolve_images(sources: list, engine, deadline: RequestDeadline) -> list[bytes] | None:
    """Bytes of every image, fetching allowlisted URLs (each capped like an inline image)."""
    if not sources:
        return None
    max_bytes = engine.multimodal_config.max_image_bytes
    return [src if isinstance(src, bytes) else await fetch_image(src, max_bytes, deadline.remaining_s())
            for src in sources]
