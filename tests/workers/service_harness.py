"""Real services for the workers and app tests: a Redis server and Celery
worker processes (`python -m app.commands.worker`), started and stopped by pid.

Workers run with Tesseract as the recogniser (the engine serves only a text
model until the house OCR model lands; see test_worker_openai_recognizer.py
for the OpenAI path against the real engine), at 100 DPI and one ONNX thread,
to keep pages fast on two shared cores.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 90


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def house_engine(*extra_args: str) -> Iterator[str]:
    """Our engine serving the house OCR model on a free loopback port, on one thread; its base URL.
    `extra_args` go to `engine.server` (`--api-key KEY`)."""
    port = free_port()
    log = tempfile.NamedTemporaryFile("w+", prefix="house-engine-", suffix=".log", delete=False)   # noqa: SIM115
    process = subprocess.Popen([sys.executable, "-m", "engine.server", "--model", "house-ocr", "--host", "127.0.0.1",
                                "--port", str(port), "--num-threads", "1", *extra_args],
                               cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        ready = process.stdout.readline()
        assert "ready" in ready, open(log.name).read()
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)


class RedisServer:
    def __init__(self, workdir: Path, bind: str = "127.0.0.1"):
        """`bind`: the address(es) to listen on (other than loopback only for a multi-host test)."""
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed (scripts/setup.sh installs it)"
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", *bind.split(), "--save", "", "--appendonly", "no",
             "--protected-mode", "no" if bind != "127.0.0.1" else "yes",
             "--daemonize", "no", "--dir", str(workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def run_cli(inputs: Path, out: Path, *options: str, timeout_s: float = 900) -> subprocess.CompletedProcess:
    """`ocrserve run INPUTS --out OUT --quiet OPTIONS` as a fresh checkout runs it: this tree's code,
    no OCRSERVE_ setting from the test's environment, run from the folder that holds OUT."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("OCRSERVE_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run([sys.executable, "-m", "app.commands.run", str(inputs), "--out", str(out), "--quiet",
                           *options], env=env, cwd=out.parent, capture_output=True, text=True, timeout=timeout_s)


def service_env(data_dir: Path, broker_url: str | None = None, **settings: object) -> dict[str, str]:
    """Environment for a worker (or API) process: the test defaults plus `settings` (OCRSERVE_ names, lower case)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("OCRSERVE_")}
    defaults: dict[str, object] = {
        "data_dir": data_dir, "recognizer": "tesseract", "render_dpi": 100, "vision_num_threads": 1,
        "worker_concurrency": 2, "page_time_limit_s": 18, "broker_visibility_timeout_s": 30,
        "page_retry_backoff_s": 1,
    }
    if broker_url:
        defaults["broker_url"] = broker_url
    for name, value in {**defaults, **settings}.items():
        if value is not None:
            env[f"OCRSERVE_{name.upper()}"] = str(value)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = "1"
    return env


class WorkerProcess:
    """`python -m app.commands.worker` in its own process group (so SIGKILL takes its pool too)."""

    def __init__(self, env: dict[str, str], log_path: Path, extra_args: tuple[str, ...] = (),
                 prefix: tuple[str, ...] = ()):
        """`prefix`: a command the worker runs under (`ip netns exec HOST`: another "host")."""
        self.log_path = log_path
        self._log = open(log_path, "ab")   # noqa: SIM115 - closed in stop()/kill()
        self._log_start = log_path.stat().st_size
        self.process = subprocess.Popen(
            [*prefix, sys.executable, "-m", "app.commands.worker", "--loglevel", "info", *extra_args],
            env=env, cwd=REPO_ROOT, stdout=self._log, stderr=self._log, start_new_session=True)

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> WorkerProcess:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if " ready." in self.log_text():
                return self
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited with {self.process.returncode}:\n{self.log_text()[-3000:]}")
            time.sleep(0.2)
        raise RuntimeError(f"worker not ready after {timeout_s} s:\n{self.log_text()[-3000:]}")

    def log_text(self) -> str:
        with open(self.log_path, "rb") as log:
            log.seek(self._log_start)
            return log.read().decode(errors="replace")

    def kill(self) -> None:
        """SIGKILL the worker and its pool processes at once: a crash, not a shutdown."""
        self._signal_group(signal.SIGKILL)
        self.process.wait(10)
        self._log.close()

    def stop(self) -> None:
        """SIGTERM to the worker alone (it shuts its pool down), then SIGKILL to whatever is left."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                pass
        self._signal_group(signal.SIGKILL)
        self.process.wait(10)
        self._log.close()

    def _signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass


def wait_for(predicate, timeout_s: float, interval_s: float = 0.25, what: str = "condition"):
    """Poll until `predicate()` returns something truthy; return it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
