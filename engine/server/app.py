"""The FastAPI application around one engine.

The app starts loading the engine when it starts (answering 503 meanwhile)
and shuts the engine down when it stops, after the HTTP server has stopped
taking requests and given in-flight ones their grace period.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from engine.server import routes_admin, routes_batch, routes_chat, routes_completions
from engine.server.api_errors import install_error_handlers
from engine.server.deps import ServerContext
from engine.server.engine_lifecycle import EngineLifecycle
from engine.server.settings import ServerSettings


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
    return app
