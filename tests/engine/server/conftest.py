"""The real engine server as a subprocess (SmolLM2-135M, loopback, a free port), started once per session.

While it loads, the fixture probes it, so the suite can check the 503-while-
loading answer; right after it is ready, before any test sends a request, it
keeps a copy of /metrics, so the suite can check every series exists at zero.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

REPO_ROOT = Path(__file__).resolve().parents[3]
MODEL = "smollm2-135m"
ALIAS = "smol"
API_KEY = "test-api-key"
ADMIN_KEY = "test-admin-key"
CONTEXT_LENGTH = 1024
KV_TOKENS = 8192
MAX_REQUEST_BYTES = 256 * 1024
ALLOWED_IMAGE_HOST = "images.example.org"
READY_TIMEOUT_S = 300
# One thread: on shared, oversubscribed cores two OpenMP threads per step are several times slower.
SERVER_THREADS = os.environ.get("OCRSERVE_TEST_SERVER_THREADS", "1")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def read_metrics(text: str) -> dict[str, float]:
    """Every sample of a Prometheus exposition, keyed `name{label="v",...}` (labels sorted)."""
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return samples


@dataclass
class EngineServer:
    """One `python -m engine.server` process and what was seen of it."""

    extra_args: list[str]
    model: str = MODEL
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    stdout_lines: list[str] = field(default_factory=list)
    loading_responses: list[httpx.Response] = field(default_factory=list)
    metrics_at_start: str = ""
    _ready: threading.Event = field(default_factory=threading.Event)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.stderr_file = tempfile.NamedTemporaryFile("w+", prefix="engine-server-", suffix=".log", delete=False)
        command = [sys.executable, "-m", "engine.server", "--model", self.model, "--host", "127.0.0.1",
                   "--port", str(self.port), "--num-threads", SERVER_THREADS, *self.extra_args]
        self.process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=self.stderr_file,
                                        text=True, bufsize=1)
        threading.Thread(target=self._read_stdout, daemon=True).start()

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            self.stdout_lines.append(line.rstrip("\n"))
            if "ready on" in line:
                self._ready.set()

    def wait_ready(self) -> None:
        """Probe while loading (keeping the answers), until the ready line appears."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        with httpx.Client(timeout=5) as client:
            while not self._ready.is_set():
                if self.process.poll() is not None:
                    raise RuntimeError(f"server exited with {self.process.returncode}:\n{self.stderr_text()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"server not ready after {READY_TIMEOUT_S} s:\n{self.stderr_text()}")
                try:
                    # A probe that needs the model but generates nothing, so the
                    # engine has seen no request when metrics_at_start is taken.
                    response = client.get(f"{self.base_url}/v1/models",
                                          headers={"Authorization": f"Bearer {API_KEY}"})
                    self.loading_responses.append(response)
                except httpx.TransportError:
                    pass   # not listening yet
                time.sleep(0.02)
        self.metrics_at_start = httpx.get(f"{self.base_url}/metrics", timeout=10).text

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def stderr_text(self) -> str:
        self.stderr_file.flush()
        return Path(self.stderr_file.name).read_text()[-5000:]

    def metrics(self) -> dict[str, float]:
        return read_metrics(httpx.get(f"{self.base_url}/metrics", timeout=10).text)

    def child_pids(self) -> list[int]:
        """Processes whose parent is the server (there should be none)."""
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.process.pid:
                children.append(int(stat.parent.name))
        return children


def server_args() -> list[str]:
    return ["--context-length", str(CONTEXT_LENGTH), "--kv-tokens", str(KV_TOKENS),
            "--api-key", API_KEY, "--admin-key", ADMIN_KEY,
            "--served-model-name", MODEL, "--served-model-name", ALIAS,
            "--max-request-bytes", str(MAX_REQUEST_BYTES), "--image-url-allowlist", ALLOWED_IMAGE_HOST]


@pytest.fixture(scope="session")
def engine_server():
    server = EngineServer(server_args())
    server.start()
    try:
        server.wait_ready()
        yield server
    finally:
        exit_code = server.stop()
        log = server.stderr_text()
    assert exit_code == 0, f"server exited with {exit_code} on SIGTERM:\n{log}"
    assert "Traceback" not in log, log


@pytest.fixture(scope="session")
def client(engine_server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{engine_server.base_url}/v1", api_key=API_KEY, max_retries=0, timeout=120)


@pytest.fixture(scope="session")
def http(engine_server):
    with httpx.Client(base_url=engine_server.base_url, timeout=120,
                      headers={"Authorization": f"Bearer {API_KEY}"}) as session:
        yield session
