"""The FastAPI application: `create_app(settings)`.

Run it with `ocrserve api` (API only, as in docker-compose) or `ocrserve serve`
(API, worker and engine together). It never imports torch and never runs the
pipeline: it checks uploads, records jobs, queues them and serves results.

Given the address it is bound to, it answers only requests whose `Host` names
that address, a loopback name or one of `OCRSERVE_ALLOWED_HOSTS`: a web page
whose DNS name is rebound to 127.0.0.1 then cannot drive a no-key local API.
"""
from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from app.api_docs import mount_api_docs
from app.api_keys import KeyRing
from app.deps import ApiContext
from app.errors import error_response, install_error_handlers
from app.local_copies import LocalCopySweeper
from app.mcp_http import McpEndpoint
from app.routes_events import router as events_router
from app.routes_jobs import router as jobs_router
from app.routes_pages import router as pages_router
from app.routes_webhooks import router as webhooks_router
from app.schemas_registry import router as schemas_router
from app.web_ui import mount_web_ui
from httpguard.hosts import allowed_host_names, host_allowed
from vision.limits import DocumentTooLargeError
from workers.job_service import JobService
from workers.service_status import ServiceStatus, check_services
from workers.settings import Settings

VERSION = "0.1.0"
MULTIPART_OVERHEAD_BYTES = 1024 * 1024   # form fields and part headers around the files

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def create_app(settings: Settings | None = None, bound_host: str | None = None) -> FastAPI:
    """`bound_host`: the address the server listens on (`ocrserve api`/`serve` pass it); with it,
    requests naming another host are refused. None: not bound by us (an in-process client)."""
    settings = settings or Settings()
    # FastAPI's own docs pages load unpinned CDN files on the web page's origin: ours, when asked for.
    jobs = JobService(settings)
    keys = KeyRing.from_settings(settings)
    mcp = McpEndpoint(jobs, keys, settings)   # the MCP server at /mcp, behind the same keys
    app = FastAPI(title="ocrserve", version=VERSION,
                  description="Self-hosted document OCR: PDFs and images in; Markdown, JSON, text and "
                              "searchable PDF out.",
                  docs_url=None, redoc_url=None, swagger_ui_oauth2_redirect_url=None,
                  lifespan=_lifespan(jobs, settings, mcp))
    app.state.context = ApiContext(settings=settings, jobs=jobs, keys=keys)
    install_error_handlers(app)
    mcp.mount(app)
    app.include_router(jobs_router)
    app.include_router(schemas_router)
    app.include_router(pages_router)
    app.include_router(events_router)
    app.include_router(webhooks_router)
    mount_web_ui(app)
    if settings.api_docs:
        mount_api_docs(app)

    health_cache = HealthCache(app.state.context.jobs)

    @app.get("/health", tags=["service"], summary="The API, its job store, broker and workers (no key needed)")
    def health() -> JSONResponse:
        # 200 whenever the API answers (docker's liveness check); `status` says whether the job store
        # and the broker do too. Worker names are for `ocrserve status`, not for anyone who asks.
        return JSONResponse(health_cache.get().to_dict())

    max_body = settings.max_upload_bytes * settings.max_files_per_job + MULTIPART_OVERHEAD_BYTES
    app.add_middleware(BodySizeLimit, max_bytes=max_body)
    if bound_host is not None:
        allowed = allowed_host_names(bound_host, (settings.allowed_hosts or "").split(","))
        if allowed is not None:
            app.add_middleware(HostCheck, allowed=allowed)
    return app


def _lifespan(jobs: JobService, settings: Settings, mcp: McpEndpoint):
    """While the app serves: the MCP endpoint's session manager, and with a shared blob store, its
    sweep of this host's copies of deleted jobs (app/local_copies.py); no sweep when the data
    directory is the shared place."""
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        sweeper = LocalCopySweeper(jobs, settings.recovery_interval_s) if jobs.blobs.shared else None
        if sweeper is not None:
            sweeper.start()
        try:
            async with mcp.running():
                yield
        finally:
            if sweeper is not None:
                sweeper.stop()
    return lifespan


class HealthCache:
    """The last `check_services` result, at most `max_age_s` old: a probe every second (the web page,
    load balancers) costs one check per interval, each bounded by its own timeout. Runs in the
    thread pool FastAPI gives plain `def` routes, never on the event loop."""

    def __init__(self, jobs: JobService, max_age_s: float = 5.0):
        self.jobs = jobs
        self.max_age_s = max_age_s
        self._last: ServiceStatus | None = None
        self._lock = threading.Lock()

    def get(self) -> ServiceStatus:
        with self._lock:
            if self._last is None or time.time() - self._last.checked_at > self.max_age_s:
                self._last = check_services(self.jobs)
            # `serve`'s children as they are now: a child that just died is reported at once.
            return self._last.with_children_from(self.jobs.data_dir.root)


class HostCheck:
    """Refuses (400) a request whose Host header is not one of the names the server is bound to
    (`httpguard.hosts` says which)."""

    def __init__(self, app: Callable[..., Awaitable[None]], allowed: frozenset[str]):
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not host_allowed(self.allowed, dict(scope.get("headers", [])).get(b"host")):
            response = error_response(400, "host_not_allowed",
                                      "the Host header names a host this service does not serve "
                                      "(add it to OCRSERVE_ALLOWED_HOSTS if it is yours)")
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class BodySizeLimit:
    """Refuses a request body over `max_bytes` with 413 — from its Content-Length
    before reading anything, or as soon as a streamed body passes the cap."""

    def __init__(self, app: Callable[..., Awaitable[None]], max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        received = 0
        response_started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLarge(f"the request body is larger than the {self.max_bytes:,}-byte limit")
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            response_started = response_started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _BodyTooLarge:
            if not response_started:
                await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(413, "request_too_large",
                                  f"the request body is larger than the {self.max_bytes:,}-byte limit")
        await response(scope, receive, send)


class _BodyTooLarge(DocumentTooLargeError):
    """Raised inside a handler's body read: the InputError handler answers 413."""
