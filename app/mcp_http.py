"""The MCP server over streamable HTTP, at /mcp of the API, behind the API's keys.

Every request to /mcp presents `Authorization: Bearer KEY` as a REST call does; the key's owner
(app/api_keys.py) is put on the request, and the tools and resources see that owner's jobs only.
A missing or unknown key gets the REST API's 401, keys that cannot be read its 503, before the
MCP SDK sees the request. The SDK runs stateless: each POST stands alone, so no MCP session
outlives the key that opened it or can be used by another key, and any API process behind a
load balancer can answer it; progress notifications travel on the POST's own event stream.

The app's own middleware already holds /mcp to its Host check (DNS rebinding) and body cap; the
SDK's copy of the Host check is off, and its body cap is the upload cap in base64 plus room for
the JSON around it. A local path is never read here: ocr_file over HTTP takes bytes or nothing.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI
from mcp.server import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from app.api_keys import KeyRing, KeysUnavailableError
from app.errors import error_response
from app.mcp_server import build_server
from app.mcp_tools import McpJobs
from workers.job_service import JobService
from workers.settings import Settings

MCP_PATH = "/mcp"
OWNER_STATE = "ocrserve_mcp_owner"
JSON_ROOM_BYTES = 1024 * 1024   # the JSON-RPC envelope and the other arguments around a base64 document


class McpEndpoint:
    """The ASGI app at /mcp: the key check, then the SDK's streamable-HTTP session manager.
    `running()` must be entered in the app's lifespan (the manager's task group lives there)."""

    def __init__(self, jobs: JobService, keys: KeyRing, settings: Settings):
        self.keys = keys
        server = build_server(McpJobs(jobs, settings, local_paths=False), owner_of_request)
        self.sessions = StreamableHTTPSessionManager(
            app=server, stateless=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=(settings.max_upload_bytes + 2) // 3 * 4 + JSON_ROOM_BYTES)

    def mount(self, app: FastAPI) -> None:
        app.router.add_route(MCP_PATH, self, methods=["GET", "POST", "DELETE"], include_in_schema=False)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.sessions.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))
        scheme, _, presented = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        presented = presented.strip() if scheme.lower() == "bearer" else ""
        try:
            # The keys file may be re-read (a stat, sometimes a read): off the event loop.
            owner = await anyio.to_thread.run_sync(self.keys.owner_for, presented or None)
        except KeysUnavailableError as exc:   # keyed, but no key can be read: refuse, never open up
            await error_response(503, "keys_unavailable", str(exc), {"Retry-After": "5"})(scope, receive, send)
            return
        if owner is None:
            message = "an API key is required: send 'Authorization: Bearer KEY'" if not presented else "unknown API key"
            await error_response(401, "unauthorized", message, {"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
        scope = {**scope, "state": {**scope.get("state", {}), OWNER_STATE: owner}}
        await self.sessions.handle_request(scope, receive, send)


def owner_of_request(ctx: ServerRequestContext[Any]) -> str:
    """The owner `McpEndpoint` put on the HTTP request that carried this MCP message."""
    scope = getattr(ctx.request, "scope", None) or {}
    owner = scope.get("state", {}).get(OWNER_STATE)
    if owner is None:   # every request passes the key check first: this is a bug, not a caller's error
        raise RuntimeError("an MCP request reached a handler without an authenticated owner")
    return owner
