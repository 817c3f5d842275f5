"""The FastAPI application around one engine.

The app starts loading the engine when it starts (answering 503 meanwhile)
and shuts the engine down when it stops, after the HTTP server has stopped
taking requests and given in-flight ones their grace period.

Before any route, `RequestGuard` refuses what a hostile web page could send to
an engine on this machine's loopback: a `Host` that is not one of the engine's
names (DNS rebinding: 400) and a body to a JSON route that is not declared
JSON (a cross-site `text/plain` form post needs no CORS preflight: 415).
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI

from engine.server import routes_admin, routes_batch, routes_chat, routes_completions
from engine.server.api_errors import ApiError, error_response, install_error_handlers
from engine.server.deps import ServerContext
from engine.server.engine_lifecycle import EngineLifecycle
from engine.server.settings import ServerSettings
from httpguard.hosts import allowed_host_names, host_allowed


def create_app(engine: Any, settings: ServerSettings) -> FastAPI:
    """`engine` is an unstarted `engine.engine.AsyncEngine`; the app starts and stops it."""
    context = ServerContext(engine=engine, settings=settings, lifecycle=EngineLifecycle(engine))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        context.lifecycle.start_loading()
        yield
        await asyncio.to_thread(context.lifecycle.shutdown_engine)

    app = FastAPI(title="ocrserve engine", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.context = context
    install_error_handlers(app)
    app.include_router(routes_chat.router)
    app.include_router(routes_batch.router)
    app.include_router(routes_completions.router)
    app.include_router(routes_admin.router)
    app.add_middleware(RequestGuard, allowed_hosts=allowed_host_names(settings.host, settings.allowed_hosts))
    return app


JSON_TYPES = frozenset({"application/json"})
# POST routes that read a body, and the media types each accepts (the batch route takes JSON Lines).
BODY_TYPES = {
    "/v1/chat/completions": JSON_TYPES,
    "/v1/completions": JSON_TYPES,
    "/v1/batch": JSON_TYPES | {"application/jsonl", "application/x-ndjson", "application/json-lines"},
}

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class RequestGuard:
    """Host check (400) and Content-Type check on body routes (415), before routing or any key check."""

    def __init__(self, app: Callable[..., Awaitable[None]], allowed_hosts: frozenset[str] | None):
        self.app = app
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            error = self.refusal(scope)
            if error is not None:
                await error_response(error)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> ApiError | None:
        headers = dict(scope.get("headers", []))
        if not host_allowed(self.allowed_hosts, headers.get(b"host")):
            return ApiError(400, "the Host header names a host this engine does not serve "
                                 "(start it with --allowed-host NAME if the name is its own)", "host_not_allowed")
        accepted = BODY_TYPES.get(scope.get("path", "")) if scope.get("method") == "POST" else None
        if accepted is not None:
            media_type = headers.get(b"content-type", b"").decode("latin-1").partition(";")[0].strip().lower()
            if media_type not in accepted:
                return ApiError(415, f"send the body as {' or '.join(sorted(accepted))} "
                                     f"(Content-Type was {media_type or 'missing'!r})", "unsupported_media_type")
        return None
