"""A text prompt is refused by its size before it is tokenised, and tokenising runs
off the event loop: a large prompt neither costs a tokenizer pass when it cannot
fit nor holds up /health while it is tokenised. The real engine (SmolLM2-135M)
in-process behind the real app, through an ASGI client on one event loop; the
tokenizer is the real one, wrapped only to record when it runs."""
from __future__ import annotations

import asyncio
import threading

import httpx
import pytest

from engine.async_engine import AsyncEngine
from engine.config import EngineConfig
from engine.server.app import create_app
from engine.server.settings import ServerSettings

CONTEXT_LENGTH = 512
BYTES_PER_TOKEN = 16
MAX_PROMPT_BYTES = CONTEXT_LENGTH * BYTES_PER_TOKEN


class RecordingTokenize:
    """The engine's own tokenize, recording each call; optionally held until `release` is set."""

    def __init__(self, tokenize) -> None:
        self.tokenize = tokenize
        self.texts: list[str] = []
        self.events: list[str] = []
        self.hold = False
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, text: str) -> list[int]:
        self.texts.append(text)
        if self.hold:
            self.events.append("tokenize started")
            self.started.set()
            self.release.wait(timeout=30)   # a safety net only: the test asserts the order of events
            self.events.append("tokenize finished")
        return self.tokenize(text)


@pytest.fixture(scope="module")
def served():
    engine = AsyncEngine(EngineConfig(model="smollm2-135m", kv_tokens=2048, context_length=CONTEXT_LENGTH,
                                      num_threads=1))
    app = create_app(engine, ServerSettings(prompt_bytes_per_token=BYTES_PER_TOKEN))
    lifecycle = app.state.context.lifecycle
    lifecycle.start_loading()
    assert asyncio.run(lifecycle.wait_loaded()), lifecycle.load_error
    yield app, engine
    lifecycle.shutdown_engine()


@pytest.fixture
def recorder(served):
    _, engine = served
    recorder = RecordingTokenize(engine.tokenize)
    engine.tokenize = recorder
    yield recorder
    del engine.tokenize   # the method again
    recorder.release.set()


def _client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1", timeout=60)


@pytest.mark.parametrize("route, body", [
    ("/v1/completions", {"prompt": "word " * (MAX_PROMPT_BYTES // 5 + 1), "max_tokens": 1}),
    ("/v1/completions", {"prompt": "é" * (MAX_PROMPT_BYTES // 2 + 1), "max_tokens": 1}),    # bytes, not characters
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "word " * (MAX_PROMPT_BYTES // 5 + 1)}],
                              "max_tokens": 1}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "x" * (MAX_PROMPT_BYTES // 2)}, {"type": "text", "text": "y" * MAX_PROMPT_BYTES}]}],
        "max_tokens": 1}),
])
def test_a_prompt_too_large_to_fit_is_refused_before_tokenising(served, recorder, route, body):
    app, _ = served

    async def run() -> httpx.Response:
        async with _client(app) as client:
            return await client.post(route, json=body)

    response = asyncio.run(run())
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "context_length_exceeded" and f"the limit is {MAX_PROMPT_BYTES:,}" in error["message"]
    assert recorder.texts == []


def test_a_prompt_within_the_byte_limit_is_tokenised_and_answered(served, recorder):
    app, _ = served

    async def run() -> httpx.Response:
        async with _client(app) as client:
            return await client.post("/v1/completions", json={"prompt": "The cat sat on the", "max_tokens": 2})

    response = asyncio.run(run())
    assert response.status_code == 200, response.text
    assert recorder.texts == ["The cat sat on the"]


def test_health_answers_while_a_prompt_is_being_tokenised(served, recorder):
    app, _ = served
    recorder.hold = True
    prompt = "Invoice number 42, total due in thirty days. " * 30   # well within the context

    async def run() -> tuple[httpx.Response, httpx.Response]:
        async with _client(app) as client:
            completion = asyncio.create_task(client.post("/v1/completions", json={"prompt": prompt, "max_tokens": 1}))
            assert await asyncio.to_thread(recorder.started.wait, 30)
            health = await client.get("/health")
            recorder.events.append("health answered")
            recorder.release.set()
            return health, await completion

    health, completion = asyncio.run(run())
    assert health.status_code == 200
    assert recorder.events == ["tokenize started", "health answered", "tokenize finished"]
    assert completion.status_code == 200, completion.text


class HeldDraftTokenizer:
    """The drafting policy's tokenizer, held inside `encode` until `release` is set, recording the
    thread each call runs on."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.threads: list[threading.Thread] = []
        self.events: list[str] = []
        self.started = threading.Event()
        self.release = threading.Event()

    def encode(self, text: str, **kwargs) -> list[int]:
        self.threads.append(threading.current_thread())
        self.events.append("draft tokenize started")
        self.started.set()
        self.release.wait(timeout=10)   # a safety net only: the test asserts the order of events
        self.events.append("draft tokenize finished")
        return self.tokenizer.encode(text, **kwargs)


def test_health_answers_while_a_batch_of_large_drafts_is_tokenised(served):
    """`draft_text` is tokenised where the request is built, on the engine's builder threads, not
    on the event loop: /health answers while it runs."""
    app, engine = served
    policy = engine.engine.drafts
    held = HeldDraftTokenizer(policy.tokenizer)
    policy.tokenizer = held
    lines = [{"prompt": f"Line {i}:", "max_tokens": 2, "draft_text": "\U0001F600" * 65536} for i in range(4)]

    async def run() -> tuple[httpx.Response, list[httpx.Response], threading.Thread]:
        loop_thread = threading.current_thread()
        async with _client(app) as client:
            posts = [asyncio.create_task(client.post("/v1/completions", json=line)) for line in lines]
            assert await asyncio.to_thread(held.started.wait, 30)
            health = await client.get("/health")
            held.events.append("health answered")
            held.release.set()
            return health, await asyncio.gather(*posts), loop_thread

    try:
        health, completions, loop_thread = asyncio.run(run())
    finally:
        policy.tokenizer = held.tokenizer
        held.release.set()
    assert health.status_code == 200
    assert held.events[:3] == ["draft tokenize started", "health answered", "draft tokenize finished"]
    assert held.threads and loop_thread not in held.threads
    assert [c.status_code for c in completions] == [200] * len(lines), [c.text for c in completions]
