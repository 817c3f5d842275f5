"""A client that goes away aborts its request: the engine stops working on it and its KV slots
return to the pool (seen from outside, through /metrics)."""
from __future__ import annotations

import time

import httpx
import pytest

from .conftest import API_KEY, MODEL

LONG_ANSWER = {"model": MODEL, "messages": [{"role": "user", "content": "Write a long story about a lighthouse."}],
               "max_tokens": 400, "temperature": 0, "ignore_eos": True}


def wait_until_idle(engine_server, aborts_before: float, timeout_s: float = 20) -> dict[str, float]:
    """Metrics once the abort is counted and nothing runs or waits any more."""
    deadline = time.monotonic() + timeout_s
    while True:
        samples = engine_server.metrics()
        if samples["ocrserve_request_aborts_total"] > aborts_before and samples["ocrserve_requests_running"] == 0 \
                and samples["ocrserve_requests_waiting"] == 0:
            return samples
        if time.monotonic() > deadline:
            pytest.fail(f"request not aborted within {timeout_s} s: {samples}")
        time.sleep(0.1)


def test_disconnect_mid_stream_aborts_and_frees_the_kv_slots(engine_server):
    before = engine_server.metrics()
    with httpx.Client(base_url=engine_server.base_url, timeout=60,
                      headers={"Authorization": f"Bearer {API_KEY}"}) as client:
        with client.stream("POST", "/v1/chat/completions", json={**LONG_ANSWER, "stream": True}) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            num_events = 0
            for line in lines:
                num_events += line.startswith("data: ")
                if num_events == 4:
                    break
            during = engine_server.metrics()
            assert during["ocrserve_requests_running"] == 1
            assert during["ocrserve_kv_cache_used_tokens"] > 0
        # Leaving the blocks closes the connection mid-stream.
    after = wait_until_idle(engine_server, before["ocrserve_request_aborts_total"])
    assert after["ocrserve_kv_cache_used_tokens"] == 0
    assert after['ocrserve_request_success_total{finish_reason="abort"}'] == \
        before['ocrserve_request_success_total{finish_reason="abort"}'] + 1
    assert after['ocrserve_request_success_total{finish_reason="length"}'] == \
        before['ocrserve_request_success_total{finish_reason="length"}']
    # It stopped consuming compute: far fewer than max_tokens were generated in all.
    generated = after["ocrserve_generation_tokens_total"] - before["ocrserve_generation_tokens_total"]
    assert generated < LONG_ANSWER["max_tokens"] // 2


def test_disconnect_while_waiting_for_a_whole_answer_aborts(engine_server):
    before = engine_server.metrics()
    with httpx.Client(base_url=engine_server.base_url, timeout=httpx.Timeout(60, read=1.5),
                      headers={"Authorization": f"Bearer {API_KEY}"}) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.post("/v1/chat/completions", json=LONG_ANSWER)
    after = wait_until_idle(engine_server, before["ocrserve_request_aborts_total"])
    assert after["ocrserve_kv_cache_used_tokens"] == 0
    generated = after["ocrserve_generation_tokens_total"] - before["ocrserve_generation_tokens_total"]
    assert generated < LONG_ANSWER["max_tokens"] // 2
