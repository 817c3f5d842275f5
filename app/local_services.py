"""Child processes that `ocrserve serve` and `ocrserve run` start on loopback
and stop when they finish: a Celery worker, and our engine when it is the
recogniser's endpoint.

Each child runs in its own session (process group): SIGTERM goes to the child
itself (Celery finishes or returns its tasks and stops its pool, the engine
drains its requests), then SIGKILL to whatever is left in the group, at once
or after `stop_timeout_s`. Children are run
as `python -m ...` modules, so they work from a checkout without the console
script on PATH.
"""
from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from workers.data_dir import open_private_log
from workers.settings import Settings, share_of_cores

ENGINE_READY = re.compile(r"ocrserve engine ready on (http://\S+) model=(\S+)")
REPO_ROOT = Path(__file__).resolve().parents[1]


class ServiceStartError(RuntimeError):
    pass


class ManagedProcess:
    def __init__(self, name: str, command: list[str], env: Mapping[str, str], log_path: Path | None = None,
                 capture_stdout: bool = False):
        from engine.server.parent_watch import parent_env   # stdlib only; engine/ is imported lazily here

        self.name = name
        self.command, self.env, self.log_path, self.capture_stdout = command, env, log_path, capture_stdout
        self.ready_url: str | None = None   # an engine's, once it said it is ready
        self.started_at = time.monotonic()
        self.log_file = open_private_log(log_path) if log_path is not None else None
        stderr = self.log_file if self.log_file is not None else subprocess.DEVNULL
        # Its own session (a terminal's Ctrl-C reaches only us; `stop` ends it in order), told to end
        # with this process should we be killed outright (engine/server/parent_watch.py).
        self.popen = subprocess.Popen(command, env={**env, **parent_env()}, start_new_session=True,
                                      stdin=subprocess.DEVNULL, stderr=stderr,
                                      stdout=subprocess.PIPE if capture_stdout else stderr)

    @property
    def is_running(self) -> bool:
        return self.popen.poll() is None

    def stop(self, stop_timeout_s: float = 20.0) -> int:
        """SIGTERM to the child alone (it stops its own pool), then SIGKILL to anything left in its group."""
        if self.is_running:
            self.popen.terminate()
            try:
                self.popen.wait(stop_timeout_s)
            except subprocess.TimeoutExpired:
                pass
        self._signal_group(signal.SIGKILL)
        self.popen.wait()
        if self.popen.stdout is not None:
            self.popen.stdout.close()
        if self.log_file is not None:
            self.log_file.close()
        return self.popen.returncode

    def _signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def respawn(self, ready_timeout_s: float = 600.0) -> ManagedProcess:
        """The same child started again (same command, environment and log); an engine on the
        same port, waited for until it says it is ready (ServiceStartError if it does not)."""
        child = ManagedProcess(self.name, self.command, self.env, self.log_path, self.capture_stdout)
        if self.ready_url is not None:
            child.ready_url = _wait_for_ready_line(child, ready_timeout_s)
            if child.ready_url is None:
                code = child.stop()
                raise ServiceStartError(f"the {self.name} did not start again (exit {code})")
        return child


def child_env(settings: Settings, **overrides: str | None) -> dict[str, str]:
    """The environment a child needs to read the same settings as this process."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("OCRSERVE_")}
    for name, value in settings.model_dump().items():
        if value is not None:
            env[f"OCRSERVE_{name.upper()}"] = str(value.resolve() if isinstance(value, Path) else value)
    for name, value in overrides.items():
        key = f"OCRSERVE_{name.upper()}"
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    return env


# The OCRSERVE_* variables an engine reads (engine/loader.py, engine/server/cli_args.py). Nothing
# else of the service's settings reaches an engine: not the users' API keys, the database URL and
# its password, the broker's URL, or another engine's key.
ENGINE_VARIABLES = frozenset({"OCRSERVE_CACHE_DIR", "OCRSERVE_ENGINE_API_KEY", "OCRSERVE_ENGINE_ADMIN_KEY"})


def engine_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the OCRSERVE_* settings an engine does not read."""
    return {key: value for key, value in env.items() if not key.startswith("OCRSERVE_") or key in ENGINE_VARIABLES}


def with_engine_keys(settings: Settings) -> Settings:
    """`settings` with a key for every engine `serve`/`run` start: the configured one, else a random
    internal key made now; workers get it through their environment (`child_env`). An engine
    without a key would let anything on this machine generate, flush its cache and probe other
    owners' cached prefixes."""
    from workers.extraction_client import starts_own_extraction_engine

    update: dict[str, str] = {}
    if settings.starts_own_engine and not settings.engine_api_key:
        update["engine_api_key"] = "ocre_" + secrets.token_urlsafe(32)
    if starts_own_extraction_engine(settings) and not settings.extraction_api_key:
        update["extraction_api_key"] = settings.engine_api_key or update.get("engine_api_key") \
            or "ocre_" + secrets.token_urlsafe(32)
    return settings.model_copy(update=update) if update else settings


# The extraction engine `serve` and `run` start: schema extraction copies its values out of the
# document and its JSON keys are fixed by the schema, so n-gram and grammar drafts verify several
# tokens a step (bench/speculative.py: 2.0x one request at a time, 1.7x eight at once, same tokens).
EXTRACTION_ENGINE_ARGS = ("--speculative-algorithm", "ngram")


# SmolLM2 reads one document's text at a time: a small pool (~0.75 GB) is plenty.
EXTRACTION_KV_TOKENS = 16384


def start_host_engines(settings: Settings, data_dir: Path, who: str
                       ) -> tuple[Settings, dict[str, str | None], list[ManagedProcess]]:
    """This host's engines on loopback, as `serve` and `worker --with-engine` start them: the
    recogniser's engine when it is ours, and the extraction engine when jobs may ask for one.
    Returns the settings pointing at them, the same as OCRSERVE_* overrides for children, and
    the engines (the caller stops them). `settings` must carry their keys (`with_engine_keys`)."""
    from workers.extraction_client import ExtractionEndpoint, starts_own_extraction_engine

    overrides: dict[str, str | None] = {}
    children: list[ManagedProcess] = []
    try:
        if settings.starts_own_engine:
            print(f"ocrserve {who}: starting the engine ({settings.recognizer_model})", file=sys.stderr)
            engine, engine_url = start_engine(settings, child_env(settings), settings.engine_port,
                                              data_dir / "engine.log", api_key=settings.engine_api_key)
            children.append(engine)
            overrides["engine_url"] = engine_url
            settings = settings.model_copy(update={"engine_url": engine_url})
        if starts_own_extraction_engine(settings):
            # Jobs may ask for schema extraction at any time: the text route needs its model up.
            endpoint = ExtractionEndpoint.from_settings(settings)
            print(f"ocrserve {who}: starting the extraction engine ({endpoint.model})", file=sys.stderr)
            extraction_engine, extraction_url = start_engine(
                settings, child_env(settings), settings.extraction_port, data_dir / "extraction-engine.log",
                extra_args=("--kv-tokens", str(EXTRACTION_KV_TOKENS), *EXTRACTION_ENGINE_ARGS), model=endpoint.model,
                api_key=endpoint.api_key)
            extraction_engine.name = "extraction engine"
            children.append(extraction_engine)
            overrides["extraction_url"] = extraction_url
            settings = settings.model_copy(update={"extraction_url": extraction_url})
    except BaseException:
        for child in reversed(children):
            child.stop()
        raise
    return settings, overrides, children


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS picks it), for a child that must be given its port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_worker(env: Mapping[str, str], concurrency: int, log_path: Path | None = None) -> ManagedProcess:
    command = [sys.executable, "-m", "app.commands.worker", "--concurrency", str(concurrency)]
    # OpenMP and OpenBLAS (numpy) in each page process keep to its share of the cores unless told
    # otherwise: they read this as they load, before the worker could set it
    env = dict(env)
    env.setdefault("OMP_NUM_THREADS", env.get("OCRSERVE_VISION_NUM_THREADS") or str(share_of_cores(concurrency)))
    return ManagedProcess("worker", command, env, log_path)


def start_engine(settings: Settings, env: Mapping[str, str], port: int, log_path: Path | None = None,
                 ready_timeout_s: float = 600.0, extra_args: tuple[str, ...] = (),
                 model: str | None = None, api_key: str | None = None) -> tuple[ManagedProcess, str]:
    """Our engine on loopback serving `model` (default: the recogniser's model); returns it and its
    base URL (.../v1). Port 0 lets the engine pick a free port; the ready line says which.
    `api_key`: the key it requires, given through its environment (never on the command line,
    which every local user can read); None: whatever OCRSERVE_ENGINE_API_KEY `env` holds.
    Its torch threads: `Settings.engine_num_threads`, else torch's own choice (every core)."""
    model = model or settings.recognizer_model
    threads = settings.engine_num_threads
    command = [sys.executable, "-m", "engine.server", "--model", model, "--host", "127.0.0.1", "--port", str(port),
               *(("--num-threads", str(threads)) if threads else ()), *extra_args]
    env = engine_env(env)
    if threads:
        env.setdefault("OMP_NUM_THREADS", str(threads))
    if api_key is not None:
        env["OCRSERVE_ENGINE_API_KEY"] = api_key
    engine = ManagedProcess("engine", command, env, log_path, capture_stdout=True)
    url = _wait_for_ready_line(engine, ready_timeout_s)
    if url is None:
        code = engine.stop()
        where = f"; see {log_path}" if log_path else ""
        raise ServiceStartError(f"the engine did not start (model {model!r}, exit {code}){where}")
    engine.ready_url = url
    # Started again (app/supervisor.py) on the port it took, which its clients were given.
    engine.command[engine.command.index("--port") + 1] = str(urlsplit(url).port)
    return engine, url.rstrip("/") + "/v1"


def _wait_for_ready_line(engine: ManagedProcess, timeout_s: float) -> str | None:
    found: list[str] = []

    def read() -> None:
        assert engine.popen.stdout is not None
        for raw in engine.popen.stdout:
            match = ENGINE_READY.search(raw.decode(errors="replace"))
            if match:
                found.append(match.group(1))
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout_s
    while not found and engine.is_running and time.monotonic() < deadline:
        reader.join(0.2)
    return found[0] if found else None
