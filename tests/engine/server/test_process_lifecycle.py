"""The server process and its clocks, on servers of their own (the session one must outlive every test):

- a server with short timeouts: a stalled upload outlives the keep-alive timeout (only the request
  timeout may cut it), answers past the request timeout are aborted (504 / a timeout event), and at
  the end SIGTERM with a stream in flight aborts it cleanly and the process exits 0, leaving nothing;
- SIGINT while the model is still loading exits 0;
- a model that cannot load exits 1 with one clear line.
"""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from .conftest import MODEL, REPO_ROOT, EngineServer

REQUEST_TIMEOUT_S = 4
KEEP_ALIVE_TIMEOUT_S = 1
SHUTDOWN_GRACE_S = 1
LONG_STORY = {"model": MODEL, "messages": [{"role": "user", "content": "Tell me a very long story."}],
              "max_tokens": 400, "temperature": 0, "ignore_eos": True}


@pytest.fixture(scope="module")
def short_timeout_server():
    server = EngineServer(["--context-length", "512", "--kv-tokens", "2048",
                           "--request-timeout", str(REQUEST_TIMEOUT_S),
                           "--keep-alive-timeout", str(KEEP_ALIVE_TIMEOUT_S),
                           "--shutdown-grace", str(SHUTDOWN_GRACE_S)])
    server.start()
    try:
        server.wait_ready()
        yield server
    finally:
        if server.process.poll() is None:
            server.stop(signal.SIGKILL)


def post_in_two_parts(port: int, body: bytes, stall_s: float) -> bytes:
    """Send headers and half the body, stall, then the rest; return the raw response.

    An answer that comes during the stall (the server gave up waiting) ends the exchange there."""
    head = (f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head + body[:len(body) // 2])
        sock.settimeout(stall_s)
        try:
            chunks = [sock.recv(65536)]
        except TimeoutError:
            sock.sendall(body[len(body) // 2:])
            chunks = []
        sock.settimeout(60)
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def wait_for_aborts(server: EngineServer, num_aborts: float) -> None:
    deadline = time.monotonic() + 120      # a hang guard only: the abort itself is what is checked
    while server.metrics()["ocrserve_request_aborts_total"] < num_aborts:
        assert time.monotonic() < deadline, "the request was not aborted"
        time.sleep(0.05)


def test_a_stalled_upload_outlives_the_keep_alive_timeout(short_timeout_server):
    body = json.dumps({"prompt": "Hello", "max_tokens": 1, "temperature": 0}).encode()
    response = post_in_two_parts(short_timeout_server.port, body, stall_s=KEEP_ALIVE_TIMEOUT_S + 1.5)
    assert response.startswith(b"HTTP/1.1 200"), response[:300]


def test_an_upload_stalled_past_the_request_timeout_is_408(short_timeout_server):
    body = json.dumps({"prompt": "Hello", "max_tokens": 1}).encode()
    response = post_in_two_parts(short_timeout_server.port, body, stall_s=REQUEST_TIMEOUT_S + 1)
    assert response.startswith(b"HTTP/1.1 408"), response[:300]
    assert b'"code":"timeout"' in response


def test_a_whole_answer_past_the_request_timeout_is_aborted_with_504(short_timeout_server):
    before = short_timeout_server.metrics()
    aborts_before = before["ocrserve_request_aborts_total"]
    started = time.monotonic()
    response = httpx.post(f"{short_timeout_server.base_url}/v1/chat/completions", json=LONG_STORY, timeout=60)
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "timeout"
    assert time.monotonic() - started >= REQUEST_TIMEOUT_S     # never cut shorter than configured
    # Cut by the timeout, not run to its end: the request was aborted and its 400 tokens never all made.
    wait_for_aborts(short_timeout_server, aborts_before + 1)
    finished_by_length = 'ocrserve_request_success_total{finish_reason="length"}'
    assert short_timeout_server.metrics()[finished_by_length] == before[finished_by_length]


def test_a_stream_past_the_request_timeout_ends_with_a_timeout_event(short_timeout_server):
    with httpx.stream("POST", f"{short_timeout_server.base_url}/v1/chat/completions",
                      json={**LONG_STORY, "stream": True}, timeout=60) as response:
        events = [line for line in response.iter_lines() if line]
    assert json.loads(events[-1][len("data: "):])["error"]["code"] == "timeout"
    assert "data: [DONE]" not in events


def test_sigterm_aborts_an_in_flight_stream_and_exits_zero(short_timeout_server):
    """Runs last in this module: it stops the module's server."""
    server = short_timeout_server
    events: list[str] = []
    first_token = threading.Event()

    def stream() -> None:
        with httpx.stream("POST", f"{server.base_url}/v1/chat/completions", json={**LONG_STORY, "stream": True},
                          timeout=60) as response:
            for line in response.iter_lines():
                if line:
                    events.append(line)
                    first_token.set()

    reader = threading.Thread(target=stream)
    reader.start()
    assert first_token.wait(60), server.stderr_text()
    assert server.child_pids() == []
    exit_code = server.stop(signal.SIGTERM, timeout_s=120)
    reader.join(60)
    log = server.stderr_text()
    assert exit_code == 0, log
    assert "Traceback" not in log, log
    assert not reader.is_alive()
    # The grace period cut the stream: it ended well before its 400 tokens, instead of being waited for.
    assert len(events) < LONG_STORY["max_tokens"]
    # The stream ended with an explicit "aborted" error event: not [DONE], not cut mid-chunk.
    assert json.loads(events[-1][len("data: "):])["error"]["code"] == "aborted", events[-3:]
    assert len(server.stdout_lines) == 1 and server.stdout_lines[0].startswith("ocrserve engine ready on ")


def test_sigint_while_loading_exits_zero():
    server = EngineServer(["--context-length", "512", "--kv-tokens", "2048"])
    server.start()
    try:
        first_answer = None
        deadline = time.monotonic() + 120
        while first_answer is None and time.monotonic() < deadline:
            try:
                first_answer = httpx.get(f"{server.base_url}/health", timeout=5)
            except httpx.TransportError:
                time.sleep(0.02)
        exit_code = server.stop(signal.SIGINT, timeout_s=30)
    finally:
        if server.process.poll() is None:
            server.stop(signal.SIGKILL)
    assert first_answer is not None and first_answer.status_code == 503
    assert exit_code == 0, server.stderr_text()
    assert server.stdout_lines == []


def test_a_model_that_cannot_load_exits_1_with_one_clear_line():
    result = subprocess.run([sys.executable, "-m", "engine.server", "--model", "/nonexistent/model", "--port", "0",
                             "--num-threads", "1"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("ocrserve engine: failed to start: ")
    assert "/nonexistent/model" in result.stderr and "Traceback" not in result.stderr
