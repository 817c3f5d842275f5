"""The loop guard through the engine's OpenAI-compatible HTTP API (house-ocr server, official
`openai` client): `loop_guard` as an extra body field, true or an object of limits; a reading it
stops ends with finish reason "repetition", plain and streamed, and /metrics counts it; bad
limits are a 400 naming `loop_guard`; a request without the field is unguarded."""
from __future__ import annotations

import base64

import httpx
import openai
import pytest

from tests.engine.server.conftest import EngineServer, read_metrics
from tests.engine.test_house_ocr import png, render

pytestmark = pytest.mark.slow

TIGHT = {"max_repeats": 3, "min_run_tokens": 16, "max_ngram_size": 4}
ZEROS = ("0" * 40, "DejaVuSansMono.ttf", 20)      # read as 40 zeros (test_loop_guard_house.py)


@pytest.fixture(scope="module")
def server():
    engine = EngineServer(["--kv-tokens", "8192", "--num-threads", "1"], model="house-ocr")
    engine.start()
    try:
        engine.wait_ready()
        yield engine
    finally:
        assert engine.stop() == 0


def messages(line) -> list[dict]:
    url = "data:image/png;base64," + base64.b64encode(png(render(*line))).decode()
    return [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                         {"type": "text", "text": "Text Recognition:"}]}]


def test_a_guarded_reading_stops_with_finish_reason_repetition(server):
    client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="unused", max_retries=0, timeout=120)
    before = server.metrics()
    free = client.chat.completions.create(model="house-ocr", messages=messages(ZEROS), max_tokens=512, temperature=0)
    assert free.choices[0].finish_reason == "stop" and free.choices[0].message.content == "0" * 40
    cut = client.chat.completions.create(model="house-ocr", messages=messages(ZEROS), max_tokens=512, temperature=0,
                                         logprobs=True, extra_body={"loop_guard": TIGHT})
    assert cut.choices[0].finish_reason == "repetition"
    assert cut.choices[0].message.content == "0" * 16 and cut.usage.completion_tokens == 16
    assert len(cut.choices[0].logprobs.content) == 16
    stream = client.chat.completions.create(model="house-ocr", messages=messages(ZEROS), max_tokens=512,
                                            temperature=0, stream=True, extra_body={"loop_guard": TIGHT})
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "0" * 16
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["repetition"]
    # the defaults (true) let 40 zeros through
    plain = client.chat.completions.create(model="house-ocr", messages=messages(ZEROS), max_tokens=512,
                                           temperature=0, extra_body={"loop_guard": True})
    assert plain.choices[0].finish_reason == "stop" and plain.choices[0].message.content == "0" * 40
    after = server.metrics()
    delta = {name: after[name] - before.get(name, 0.0) for name in (
        "ocrserve_loop_guard_requests_total", "ocrserve_loop_guard_stops_total",
        'ocrserve_request_success_total{finish_reason="repetition"}')}
    assert delta == {"ocrserve_loop_guard_requests_total": 3, "ocrserve_loop_guard_stops_total": 2,
                     'ocrserve_request_success_total{finish_reason="repetition"}': 2}


@pytest.mark.parametrize("option, says", [
    ({"max_repeats": 0}, "loop_guard.max_repeats must be between 1 and"),
    ({"min_run_tokens": "many"}, "min_run_tokens"),
    ({"ngram_size": 4}, "ngram_size"),
    ("yes", "loop_guard"),
    (1, "loop_guard"),
])
def test_bad_limits_are_a_400_naming_loop_guard(server, option, says):
    body = {"model": "house-ocr", "messages": messages(ZEROS), "max_tokens": 8, "loop_guard": option}
    response = httpx.post(server.base_url + "/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert says in error["message"] and "loop_guard" in (error.get("param") or error["message"])
    assert "Traceback" not in response.text


def test_the_series_exist_at_zero_from_start_up(server):
    at_start = read_metrics(server.metrics_at_start)
    for name in ("ocrserve_loop_guard_requests_total", "ocrserve_loop_guard_stops_total",
                 'ocrserve_request_success_total{finish_reason="repetition"}'):
        assert at_start[name] == 0
