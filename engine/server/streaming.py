"""Server-sent-event streams of engine outputs.

A stream that cannot finish normally ends with an OpenAI-style error event
(`data: {"error": {...}}`) and no `[DONE]`, so neither the `openai` SDK (which
raises on it) nor a raw SSE reader mistakes a cut-short answer for a whole one.
"""
from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from engine.errors import EngineOverloadedError, InvalidRequestError
from engine.server.api_errors import api_error_from_engine, error_body
from engine.server.generation import GenerationRun, closing_stream
from engine.server.responses import SSE_DONE, sse_event

logger = logging.getLogger("engine.server")

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
ABORTED_MESSAGE = "the request was aborted by the engine (the server is shutting down)"


class EventStreamResponse(StreamingResponse):
    """A streaming response that closes its event source however the response ends.

    Starlette cancels the response on client disconnect; if that lands while
    the body iterator is suspended (the transport was busy sending), nothing
    else would close it and the engine request would run on.
    """

    def __init__(self, events: AsyncIterator[bytes]) -> None:
        super().__init__(events, media_type="text/event-stream", headers=SSE_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self.body_iterator.aclose()


async def sse_events(run: GenerationRun, opening_chunks: list[dict],
                     delta_chunk: Callable[[Any], dict | None],
                     finish_chunk: Callable[[Any], dict],
                     usage_chunk: Callable[[Any], dict] | None) -> AsyncIterator[bytes]:
    """The SSE byte stream of one request.

    delta_chunk(output) -> the chunk carrying this output's new text (None: nothing new);
    finish_chunk(last) -> the chunk carrying the finish reason;
    usage_chunk(last) -> the trailing usage chunk, when the client asked for it.
    """
    try:
        for chunk in opening_chunks:
            yield sse_event(chunk)
        async with closing_stream(run) as outputs:
            async for output in outputs:
                chunk = delta_chunk(output)
                if chunk is not None:
                    yield sse_event(chunk)
                if not output.finished:
                    continue
                if output.finish_reason == "abort":
                    yield sse_event(error_body(503, ABORTED_MESSAGE, "aborted"))
                    return
                yield sse_event(finish_chunk(output))
                if usage_chunk is not None:
                    yield sse_event(usage_chunk(output))
        yield SSE_DONE
    except TimeoutError:
        yield sse_event(run.deadline.timeout_error().to_body())
    except (InvalidRequestError, EngineOverloadedError) as exc:
        yield sse_event(api_error_from_engine(exc).to_body())
    except Exception:
        # The status line is long gone: say so in the stream, keep the traceback in the log.
        logger.exception("a streamed response failed")
        yield sse_event(error_body(500, "internal server error", "internal_error"))
