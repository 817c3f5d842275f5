"""The two things that end a request early: its deadline, and its client going away.

`RequestDeadline` is the single clock of a request (settings.request_timeout_s):
it bounds reading the body and every wait on the engine.

`DisconnectWatcher` notices a client that hung up while the server was working
on a non-streamed answer (or before the first token of a streamed one): the
ASGI `receive()` of a request whose body has been read returns only when the
client disconnects. Streamed answers are watched by Starlette itself, which
cancels the response task on disconnect.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from starlette.types import Receive

from engine.server.api_errors import ApiError, ClientDisconnected

T = TypeVar("T")


class RequestDeadline:
    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.loop_deadline = asyncio.get_running_loop().time() + timeout_s

    def remaining_s(self) -> float:
        return max(0.0, self.loop_deadline - asyncio.get_running_loop().time())

    def timeout_error(self) -> ApiError:
        return ApiError(504, f"the request did not finish within request_timeout_s={self.timeout_s:g} s "
                             "(it has been aborted)", "timeout")


class DisconnectWatcher:
    """Waits, in its own task, for the client to disconnect. Start it only after the body is read."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self.task: asyncio.Task[None] = asyncio.create_task(self._wait_for_disconnect())

    async def _wait_for_disconnect(self) -> None:
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                return

    async def stop(self) -> None:
        """Stop watching, so that the response (Starlette's streaming one) can receive() itself."""
        if not self.task.done():
            self.task.cancel()
            try:
                await self.task
            except asyncio.CancelledError:
                pass

    async def race(self, awaitable: Awaitable[T], deadline: RequestDeadline) -> T:
        """Await `awaitable` unless the client leaves (ClientDisconnected) or time runs out (504).

        On either, the awaitable's task is cancelled and awaited, so an engine
        iterator inside it has aborted its request before this returns.
        """
        work = asyncio.ensure_future(awaitable)
        try:
            done, _ = await asyncio.wait({work, self.task}, timeout=deadline.remaining_s(),
                                         return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:   # the handler itself is cancelled (server shutdown)
            await abandon(work)
            raise
        if work in done:
            return work.result()
        await abandon(work)
        if self.task in done:
            raise ClientDisconnected()
        raise deadline.timeout_error()


async def abandon(work: asyncio.Future) -> None:
    """Cancel `work` and wait until it has unwound (its finally blocks ran)."""
    work.cancel()
    try:
        await work
    except (asyncio.CancelledError, Exception):
        pass   # the work was abandoned; its own error, if any, is moot
