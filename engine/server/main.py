"""`ocrserve engine` / `python -m engine.server`: run one engine behind its HTTP server.

Prints exactly one line on stdout, when the model is loaded and the socket
listens: `ocrserve engine ready on http://HOST:PORT model=NAME`. Everything
else (warnings, errors) goes to stderr. SIGTERM and SIGINT stop it cleanly:
no new connections, in-flight requests get `--shutdown-grace` seconds to
finish and are then aborted, the engine loop stops, the process exits 0.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator

import uvicorn

from engine.server.cli_args import (build_parser, engine_config_from_args, multimodal_config_from_args,
                                    settings_from_args)
from engine.server.deps import ServerContext
from engine.server.parent_watch import exit_with_parent
from engine.server.settings import ServerSettings

# After the engine has aborted what was still in flight, how long the aborted
# answers get to reach their clients before uvicorn cancels what is left.
SHUTDOWN_FLUSH_S = 2


class EngineHTTPServer(uvicorn.Server):
    """uvicorn's server, announcing readiness once the engine has loaded, exiting 0 on a signal."""

    def __init__(self, config: uvicorn.Config, context: ServerContext) -> None:
        super().__init__(config)
        self.context = context
        self.exit_code = 0
        self._announce_task: asyncio.Task[None] | None = None

    async def startup(self, sockets: list | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._announce_task = asyncio.create_task(self._announce_when_loaded())

    async def _announce_when_loaded(self) -> None:
        if not await self.context.lifecycle.wait_loaded():
            error = self.context.lifecycle.load_error
            print(f"ocrserve engine: failed to start: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
            self.exit_code = 1
            self.should_exit = True
            return
        port = self.servers[0].sockets[0].getsockname()[1]
        host = self.config.host if ":" not in self.config.host else f"[{self.config.host}]"
        model = self.context.served_model_names()[0]
        print(f"ocrserve engine ready on http://{host}:{port} model={model}", flush=True)

    async def shutdown(self, sockets: list | None = None) -> None:
        # uvicorn stops accepting, lets in-flight requests run for its graceful
        # timeout, then cancels them. We abort them through the engine first, at
        # shutdown_grace_s, so clients get a clean "aborted" answer (an error
        # event, a 503) rather than a cut connection.
        aborter = asyncio.create_task(self._abort_in_flight_after_grace())
        try:
            await super().shutdown(sockets)
        finally:
            aborter.cancel()

    async def _abort_in_flight_after_grace(self) -> None:
        await asyncio.sleep(self.context.settings.shutdown_grace_s)
        await asyncio.to_thread(self.context.lifecycle.shutdown_engine)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn's own version re-raises the caught signal after a graceful
        # shutdown, so the process would die "by SIGTERM" instead of exiting 0.
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def uvicorn_config(app: object, settings: ServerSettings) -> uvicorn.Config:
    """Every uvicorn knob that shapes a request's life, set explicitly (see ServerSettings)."""
    return uvicorn.Config(
        app, host=settings.host, port=settings.port,
        http="h11", ws="none", lifespan="on", loop="asyncio",
        timeout_keep_alive=settings.keep_alive_timeout_s,
        timeout_graceful_shutdown=settings.shutdown_grace_s + SHUTDOWN_FLUSH_S,
        limit_concurrency=None,            # admission control is the engine's (EngineOverloadedError -> 503)
        log_level=settings.log_level, access_log=False, server_header=False,
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    exit_with_parent()     # started by `ocrserve run`/`serve`: end with it, even if it is SIGKILLed
    settings = settings_from_args(args)
    if settings.api_key is None and not settings.binds_loopback_only:
        # Without a key, anyone who reaches the port could generate, flush the cache, and read other
        # tenants' cached-token counts: only this machine may reach an open engine.
        print(f"ocrserve engine: refusing to bind {settings.host} without an API key; pass --api-key KEY "
              f"(or set OCRSERVE_ENGINE_API_KEY), or bind to 127.0.0.1", file=sys.stderr)
        return 2
    logging.basicConfig(stream=sys.stderr, level=settings.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        engine_config = engine_config_from_args(args)
        multimodal_config = multimodal_config_from_args(args)
    except ValueError as exc:
        print(f"ocrserve engine: {exc}", file=sys.stderr)
        return 2

    # Imported only when serving: the engine pulls in torch and transformers.
    from engine.async_engine import AsyncEngine
    from engine.metrics import EngineMetrics
    from engine.server.app import create_app

    metrics = EngineMetrics(model_name=(settings.served_model_names or (args.model,))[0])
    try:
        engine = AsyncEngine(engine_config, metrics=metrics, multimodal_config=multimodal_config)
    except Exception as exc:   # a bad model name or path: say so, no traceback
        print(f"ocrserve engine: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    app = create_app(engine, settings)
    context: ServerContext = app.state.context
    server = EngineHTTPServer(uvicorn_config(app, settings), context)
    try:
        server.run()
        exit_code = server.exit_code
    except SystemExit as exc:   # uvicorn exits this way when it cannot bind
        exit_code = exc.code if isinstance(exc.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    if context.lifecycle.is_loading:
        # Stopped while the weights were still loading: nothing is in flight,
        # and the loading thread must not hold the interpreter's exit.
        os._exit(exit_code)
    context.lifecycle.shutdown_engine()   # no-op after a normal stop; covers a forced (double Ctrl-C) exit
    return exit_code

