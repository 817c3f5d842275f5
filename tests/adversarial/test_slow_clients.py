"""Slow clients: a stalled upload and a stalled stream are ended by configured timeouts only, and
never block other clients (another request succeeds while the stalled one is pending).

No timing threshold beyond the configured timeout itself: the only clock read is the check
that a stalled request was NOT cut before its configured timeout (DESIGN invariant 7); the
client-side socket timeouts are hang guards far past it.

- the engine (tiny random-weight Llama, `--request-timeout ENGINE_TIMEOUT_S`): an upload
  stalled half-way is answered 408 by the request timeout; a stream whose client stops
  reading (a small receive buffer, never read) ends by itself or by the timeout, and in the
  meantime other clients are served;
- the API (`ocrserve api`, one upload slot): a stalled upload holds its slot while read
  requests are served; it is ended 408 by the configured upload idle timeout (no earlier),
  and the freed slot takes the next upload.
"""
from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from .conftest import report
from .services import ApiProcess, build_tiny_llama, engine_server_class, service_env

pytestmark = pytest.mark.slow

ENGINE_TIMEOUT_S = 6
ENGINE_KEY = "slow-client-engine-key"
API_KEY = "slow-client-api-key"
API_UPLOAD_IDLE_S = 4   # the API's configured upload idle timeout here
GUARD_S = 120     # hang guard for the client's own socket reads


@pytest.fixture(scope="module")
def engine(tmp_path_factory, smollm2_path):
    model = build_tiny_llama(tmp_path_factory.mktemp("slow-tiny-llama"), smollm2_path, vocab_size=49152)
    server = engine_server_class()(["--context-length", "512", "--kv-tokens", "4096", "--api-key", ENGINE_KEY,
                                    "--request-timeout", str(ENGINE_TIMEOUT_S), "--served-model-name", "tiny"],
                                   model=str(model))
    server.start()
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def quick_chat(base_url: str) -> httpx.Response:
    return httpx.post(f"{base_url}/v1/chat/completions", headers={"Authorization": f"Bearer {ENGINE_KEY}"},
                      json={"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
                      timeout=GUARD_S)


def read_all(sock: socket.socket) -> bytes:
    sock.settimeout(GUARD_S)
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_engine_stalled_upload_is_408_by_its_timeout_and_blocks_no_one(engine):
    body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "hello " * 50}],
                       "max_tokens": 2}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {ENGINE_KEY}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", engine.port)) as stalled:
        stalled.sendall(head + body[: len(body) // 2])
        started = time.monotonic()
        # While it stalls, others are served.
        for _ in range(3):
            assert quick_chat(engine.base_url).status_code == 200
        answer = read_all(stalled)
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert waited >= ENGINE_TIMEOUT_S - 0.5, "cut before the configured request timeout"


def test_engine_stream_whose_client_stops_reading_blocks_no_one(engine):
    body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "go"}], "max_tokens": 480,
                       "ignore_eos": True, "stream": True}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {ENGINE_KEY}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)    # fills after a few chunks
    try:
        stalled.connect(("127.0.0.1", engine.port))
        stalled.sendall(head + body)
        served = 0
        for _ in range(5):     # never read from `stalled` while others ask
            assert quick_chat(engine.base_url).status_code == 200
            served += 1
        # It ends on its own terms: all its tokens, or the configured timeout's event; never hangs.
        events = [line for line in read_all(stalled).split(b"\n") if line.startswith(b"data: ")]
    finally:
        stalled.close()
    assert events, "the stream sent nothing"
    last = events[-1]
    assert last == b"data: [DONE]" or json.loads(last[len(b"data: "):])["error"]["code"] == "timeout", last
    metrics = engine.metrics()
    assert metrics["ocrserve_requests_running"] == 0
    report("slow clients (engine)", served_while_stalled=served, stalled_stream_events=len(events),
           ended_by="all tokens" if last == b"data: [DONE]" else "request timeout")


# --------------------------------------------------------------------------------------------- the API

@pytest.fixture(scope="module")
def api(tmp_path_factory):
    data = tmp_path_factory.mktemp("slow-api")
    env = service_env(data / "data", api_keys=API_KEY, max_concurrent_uploads=1,
                      upload_idle_timeout_s=API_UPLOAD_IDLE_S)
    process = ApiProcess(env, data / "api.log").wait_ready()
    yield process
    process.stop()


def stalled_upload(port: int) -> socket.socket:
    """A multipart upload whose client sends the headers and part of the body, then nothing."""
    boundary = "slowclientboundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + b"\x89PNG" + b"\0" * 200_000
    head = (f"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {API_KEY}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {len(body) + 1000}\r\n"
            f"Connection: close\r\n\r\n").encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(head + body[:100_000])
    return sock


def test_api_read_requests_are_served_while_an_upload_stalls(api):
    with stalled_upload(api.port):
        time.sleep(0.5)   # let the server start reading it (not a threshold: any delay works)
        for _ in range(3):
            listing = httpx.get(f"{api.base_url}/v1/jobs", headers={"Authorization": f"Bearer {API_KEY}"},
                                timeout=GUARD_S)
            assert listing.status_code == 200, listing.text
        assert httpx.get(f"{api.base_url}/health", timeout=GUARD_S).status_code == 200


def test_api_stalled_upload_is_ended_by_its_idle_timeout_and_frees_its_slot(api):
    import ocr_samples as samples

    with stalled_upload(api.port) as stalled:
        started = time.monotonic()
        answer = read_all(stalled)
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert b"request_timeout" in answer, answer[-300:]
    assert waited >= API_UPLOAD_IDLE_S - 0.5, "cut before the configured idle timeout"
    # Its one upload slot is free again: the next upload is taken.
    other = httpx.post(f"{api.base_url}/v1/jobs", headers={"Authorization": f"Bearer {API_KEY}"},
                       files=[("files", ("scan.png", samples.scanned_png(), "image/png"))], timeout=GUARD_S)
    assert other.status_code == 202, other.text
    report("slow clients (API)", stalled_upload_ended_by="408 after the idle timeout",
           idle_timeout_s=API_UPLOAD_IDLE_S, next_upload=other.status_code)
