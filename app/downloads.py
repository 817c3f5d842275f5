"""Result and figure downloads, bounded so that clients who stop reading cost little and
not for long.

| bounded                           | by                                                          |
|-----------------------------------|-------------------------------------------------------------|
| database connections of a download | none held while the client is written to: the blob store reads each chunk in its own short transaction (workers/blob_store.py) |
| a client that stops reading       | `download_idle_timeout_s`: a piece of the body the connection does not take within it ends the download (its slot freed, the connection closed once the kernel lets go of it) |
| one key's result downloads at once | `DownloadGate` (`max_concurrent_downloads_per_key`): over it 429 with Retry-After, before any byte is read (figures, small and loaded many at once by a page of Markdown, are not counted) |

A client that vanishes (its socket closed or reset) ends its download at once: the server
sees the disconnect, the stream is cancelled and its slot freed.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
from fastapi import Request
from fastapi.responses import Response
from starlette.types import Message, Receive, Scope, Send

from app.errors import error_response

logger = logging.getLogger("ocrserve.app")
RETRY_AFTER_S = 5


class DownloadGate:
    """At most `limit` downloads of one key at once in this API process. Entered and left on the
    event loop only (`GuardedDownload.__call__`), so the counts need no lock."""

    def __init__(self, limit: int):
        self.limit = limit
        self.num_active: dict[str, int] = {}

    def enter(self, owner: str) -> bool:
        if self.num_active.get(owner, 0) >= self.limit:
            return False
        self.num_active[owner] = self.num_active.get(owner, 0) + 1
        return True

    def leave(self, owner: str) -> None:
        left = self.num_active[owner] - 1
        if left:
            self.num_active[owner] = left
        else:
            del self.num_active[owner]


def download_gate(request: Request) -> DownloadGate:
    """This app's gate (made on first use; `ApiContext` is frozen, so it lives on app.state)."""
    gate = getattr(request.app.state, "download_gate", None)
    if gate is None:
        settings = request.app.state.context.settings
        gate = request.app.state.download_gate = DownloadGate(settings.max_concurrent_downloads_per_key)
    return gate


class _Stalled(Exception):
    """The client took no part of the body within the idle timeout."""


class GuardedDownload(Response):
    """`inner` (a file or a stream of chunks) sent under the owner's slot in `gate` (None: not
    counted; figures, which a page of Markdown loads all at once), every message to the client
    bounded by `idle_timeout_s`; `close` ends the chunk source whatever
    happens (a cancelled stream otherwise waits for the garbage collector)."""

    def __init__(self, inner: Response, gate: DownloadGate | None, owner: str, idle_timeout_s: float,
                 close: Callable[[], None] | None = None):
        # Not Response.__init__: the body is the inner response's. FastAPI reads these attributes.
        self.inner, self.gate, self.owner = inner, gate, owner
        self.idle_timeout_s, self.close = idle_timeout_s, close
        self.status_code, self.background, self.raw_headers = inner.status_code, None, inner.raw_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if self.gate is None:
                await self._send_inner(scope, receive, send)
                return
            if not self.gate.enter(self.owner):
                refusal = error_response(
                    429, "too_many_downloads", f"this key has {self.gate.limit} downloads running already; "
                    "finish one, or try again in a few seconds", headers={"Retry-After": str(RETRY_AFTER_S)})
                await refusal(scope, receive, send)
                return
            try:
                await self._send_inner(scope, receive, send)
            finally:
                self.gate.leave(self.owner)
        finally:
            if self.close is not None:
                self.close()

    async def _send_inner(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def bounded_send(message: Message) -> None:
            with anyio.move_on_after(self.idle_timeout_s) as waited:
                await send(message)
            if waited.cancelled_caught:
                raise _Stalled

        self.inner.background = self.background
        try:
            await self.inner(scope, receive, bounded_send)
        except _Stalled:
            # Returning without the body's end makes the server close the connection; the log says why.
            logger.warning("a download of %s was ended: its client took nothing for %g s", scope.get("path"),
                           self.idle_timeout_s)
