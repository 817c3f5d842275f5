"""`ocrserve mcp [--data-dir DIR]`: ocrserve as a local MCP server on stdin/stdout, for a desktop
agent that launches it (the MCP server over HTTP, for many agents, is /mcp of `ocrserve serve`).

It needs no server running: like `ocrserve run` it starts its own worker on loopback with an
embedded broker (and our engine, when it is the recogniser, and the extraction engine the first
time a job asks for fields) — the first time a tool submits a document, not before, so an agent
that only reads old results costs nothing. They stop when the agent closes the server.

Jobs and results live in the data directory (OCRSERVE_DATA_DIR, else ~/.local/share/ocrserve), so
an agent can read earlier jobs as resources; they belong to the same owner as a no-key local API's
jobs. Tools may read files on this machine by absolute path (the agent's user runs this server).
stdout carries the protocol: children log into DATA_DIR/mcp-logs, this process to stderr.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from workers.settings import Settings

if TYPE_CHECKING:
    from app.local_services import ManagedProcess

# A client closing us waits a few seconds before it kills us (the SDK: 2 s, then SIGTERM, then SIGKILL):
# the worker is not waited for long; an unfinished page is run again by the next worker (jobs are durable).
STOP_TIMEOUT_S = 3.0
ENGINE_LOAD_TIMEOUT_S = 600.0   # as long as `start_engine` waits for an engine to listen
SUMMARY = "an MCP server on stdio (OCR, extraction and results as tools and resources); HTTP: /mcp of serve"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="jobs and results (default: OCRSERVE_DATA_DIR, else ~/.local/share/ocrserve)")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes (default: OCRSERVE_WORKER_CONCURRENCY)")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("mcp", help=SUMMARY, description=SUMMARY)
    configure(parser)
    parser.set_defaults(handler=main)
    return parser


def default_data_dir() -> Path:
    if os.environ.get("OCRSERVE_DATA_DIR"):
        return Path(os.environ["OCRSERVE_DATA_DIR"])
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "ocrserve"


class LocalServices:
    """The worker and engines this server starts on first use (`ensure`, from any thread) and
    stops at exit. Their ports and keys are fixed up front, so the worker knows the extraction
    engine's address before it is started (only when a job first asks for fields)."""

    def __init__(self, settings: Settings, concurrency: int | None):
        from app.local_services import free_loopback_port, with_engine_keys
        from workers.extraction_client import starts_own_extraction_engine

        settings = with_engine_keys(settings)
        self.own_extraction = starts_own_extraction_engine(settings)
        if self.own_extraction:
            settings = settings.model_copy(update={
                "extraction_url": f"http://127.0.0.1:{free_loopback_port()}/v1"})
        self.settings = settings
        self.concurrency = concurrency or settings.worker_concurrency
        self.log_dir = settings.data_dir / "mcp-logs"
        self.worker: ManagedProcess | None = None
        self.children: list[ManagedProcess] = []
        self.extraction_started = False
        self._lock = threading.Lock()

    def ensure(self, needs_extraction: bool, say: Callable[[str], None]) -> None:
        from app.local_services import ServiceStartError
        from app.mcp_tools import ServiceUnavailableError
        from workers.recognizers.base import RecognizerConfigError, RecognizerUnavailableError

        with self._lock:
            try:
                if self.worker is None:
                    say("starting the local worker" + (" and engine" if self.settings.starts_own_engine else ""))
                    self._start_worker()
                else:
                    self._restart_stopped()
                if needs_extraction and self.own_extraction and not self.extraction_started:
                    say("starting the extraction engine (its model loads once)")
                    self._start_extraction_engine()
            except (ServiceStartError, RecognizerConfigError, RecognizerUnavailableError) as exc:
                raise ServiceUnavailableError(f"the local OCR services could not start: {exc} "
                                              f"(logs in {self.log_dir})") from None

    def _restart_stopped(self) -> None:
        """A child that died since is started again (an engine on its port); the jobs wait in the broker."""
        for index, child in enumerate(self.children):
            if not child.is_running:
                self.children[index] = child.respawn()
                if child is self.worker:
                    self.worker = self.children[index]

    def _start_worker(self) -> None:
        """The worker (and the recogniser's engine): all of them, or none left running."""
        started = len(self.children)
        try:
            self._start_worker_and_engine()
        except BaseException:
            for child in reversed(self.children[started:]):
                child.stop(STOP_TIMEOUT_S)
            del self.children[started:]
            self.worker = None
            raise

    def _start_worker_and_engine(self) -> None:
        from app.local_services import child_env, free_loopback_port, start_engine, start_worker
        from workers.recognizers.registry import build_recognizer

        self.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)   # logs may name documents
        settings = self.settings
        if settings.starts_own_engine:
            # As `run` does: the worker loads its models while the engine loads.
            port = free_loopback_port()
            settings = settings.model_copy(update={"engine_url": f"http://127.0.0.1:{port}/v1"})
            self.worker = start_worker(child_env(settings), self.concurrency, self.log_dir / "worker.log")
            self.children.append(self.worker)
            engine, url = start_engine(settings, child_env(settings), port, self.log_dir / "engine.log",
                                       api_key=settings.engine_api_key)
            self.children.append(engine)
            self.settings = settings.model_copy(update={"engine_url": url})
        else:
            self.worker = start_worker(child_env(settings), self.concurrency, self.log_dir / "worker.log")
            self.children.append(self.worker)
        build_recognizer(self.settings).check()

    def _start_extraction_engine(self) -> None:
        from urllib.parse import urlsplit

        from app.local_services import EXTRACTION_ENGINE_ARGS, EXTRACTION_KV_TOKENS, child_env, start_engine
        from workers.extraction_client import ExtractionEndpoint

        endpoint = ExtractionEndpoint.from_settings(self.settings)
        engine, _ = start_engine(self.settings, child_env(self.settings), urlsplit(endpoint.base_url).port or 0,
                                 self.log_dir / "extraction-engine.log", model=endpoint.model,
                                 extra_args=("--kv-tokens", str(EXTRACTION_KV_TOKENS), *EXTRACTION_ENGINE_ARGS),
                                 api_key=endpoint.api_key)
        try:
            _wait_until_serving(endpoint.base_url, engine)
        except BaseException:
            engine.stop(STOP_TIMEOUT_S)
            raise
        self.children.append(engine)
        self.extraction_started = True

    def stop(self) -> None:
        with self._lock:
            for child in reversed(self.children):
                child.stop(STOP_TIMEOUT_S)
            self.children.clear()


def _wait_until_serving(base_url: str, engine: ManagedProcess) -> None:
    """An engine says it is ready when it listens, then loads its weights, answering 503 meanwhile:
    wait for its /health to say ok, so the first job's extraction is not refused."""
    import time

    import httpx

    from app.local_services import ServiceStartError

    deadline = time.monotonic() + ENGINE_LOAD_TIMEOUT_S
    health = base_url.removesuffix("/v1") + "/health"
    while time.monotonic() < deadline and engine.is_running:
        try:
            if httpx.get(health, timeout=5.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    why = "it stopped" if not engine.is_running else f"not within {ENGINE_LOAD_TIMEOUT_S:g} s"
    raise ServiceStartError(f"the extraction engine did not finish loading its model ({why})")


def main(args: argparse.Namespace) -> int:
    import anyio
    from mcp.server.stdio import stdio_server

    from app.api_keys import ANONYMOUS
    from app.mcp_server import build_server
    from app.mcp_tools import McpJobs
    from workers.job_service import JobService

    data_dir = (args.data_dir or default_data_dir()).expanduser().resolve()
    # Its own embedded broker, as `run`: jobs go to the worker this server starts, not to a deployment's.
    settings = Settings(data_dir=data_dir, broker_url=None)
    services = LocalServices(settings, args.workers)
    jobs = McpJobs(JobService(services.settings), services.settings, local_paths=True, ensure_workers=services.ensure)
    server = build_server(jobs, lambda ctx: ANONYMOUS)

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    print(f"ocrserve mcp: serving on stdio (data in {data_dir})", file=sys.stderr)
    # SIGTERM (a client giving up on a clean close) unwinds like Ctrl-C, so the children are stopped.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        pass
    finally:
        # A second SIGTERM must not cut the stopping short; a SIGKILL ends us, and the children end
        # with us (engine/server/parent_watch.py).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        services.stop()
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    from app.commands import run_as_script

    run_as_script("mcp")
