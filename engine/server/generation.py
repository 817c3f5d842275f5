"""One request inside the engine, seen from an HTTP handler.

The engine's output iterator aborts its request when it is closed or cancelled;
everything here makes sure that happens on every way out -- client gone,
deadline passed, handler cancelled at shutdown -- and that the request's first
output is awaited before a response starts, so admission errors (bad params,
prompt too long, overload) become proper 4xx/5xx responses rather than a broken
stream.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
from fastapi import Request

from engine.server.request_lifetime import DisconnectWatcher, RequestDeadline


@dataclass
class FinalOutput:
    last: Any                   # engine.request.RequestOutput with finished=True
    logprobs: list[Any]         # every TokenLogprobs of the request, in order


async def close_outputs(outputs: Any) -> None:
    """Close the engine's iterator (which aborts the request if it is still running)."""
    aclose = getattr(outputs, "aclose", None)
    if aclose is not None:
        with anyio.CancelScope(shield=True):   # cleanup must finish even inside a cancelled scope
            await aclose()


class GenerationRun:
    def __init__(self, outputs: Any, first: Any, watcher: DisconnectWatcher, deadline: RequestDeadline) -> None:
        self.outputs = outputs
        self.first = first
        self.watcher = watcher
        self.deadline = deadline

    @classmethod
    async def start(cls, engine: Any, request: Request, prompt: str | list[int], params: Any, request_id: str,
                    tenant: str, deadline: RequestDeadline, images: list[bytes] | None = None) -> GenerationRun:
        """Submit the request and wait for its first output (admission errors surface here)."""
        if images:
            outputs = engine.generate(prompt, params, request_id=request_id, tenant=tenant, images=images)
        else:
            outputs = engine.generate(prompt, params, request_id=request_id, tenant=tenant)
        watcher = DisconnectWatcher(request.receive)

        async def first_output() -> Any:
            return await anext(outputs)

        try:
            first = await watcher.race(first_output(), deadline)
        except BaseException:
            await watcher.stop()
            await close_outputs(outputs)
            raise
        return cls(outputs, first, watcher, deadline)

    async def collect(self) -> FinalOutput:
        """Wait for the whole answer, aborting if the client leaves or the deadline passes."""
        async def rest() -> FinalOutput:
            output = self.first
            logprobs = list(output.delta_logprobs)
            while not output.finished:
                output = await anext(self.outputs)
                logprobs.extend(output.delta_logprobs)
            return FinalOutput(output, logprobs)

        try:
            return await self.watcher.race(rest(), self.deadline)
        finally:
            await self.watcher.stop()
            await close_outputs(self.outputs)

    async def stream(self) -> AsyncIterator[Any]:
        """Yield outputs as they come; TimeoutError when the deadline passes.

        From here on Starlette's streaming response watches for the disconnect
        (it cancels this iteration), so our own watcher stops first.
        """
        await self.watcher.stop()
        try:
            output = self.first
            yield output
            while not output.finished:
                # The timeout wraps only the wait on the engine, never a `yield`:
                # a timeout that fired while the consumer holds control would
                # cancel the consumer instead.
                async with asyncio.timeout_at(self.deadline.loop_deadline):
                    output = await anext(self.outputs)
                yield output
        finally:
            await close_outputs(self.outputs)


@contextlib.asynccontextmanager
async def closing_stream(run: GenerationRun) -> AsyncIterator[AsyncIterator[Any]]:
    """`run.stream()` that is closed (so the engine request aborted) however the consumer stops."""
    outputs = run.stream()
    try:
        yield outputs
    finally:
        with anyio.CancelScope(shield=True):
            await outputs.aclose()
            # If iteration never started, stream()'s own cleanup never ran.
            await run.watcher.stop()
        await close_outputs(run.outputs)
