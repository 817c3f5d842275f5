"""32 concurrent requests are batched together and each gets exactly the answer it gets alone."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from .batching import hold_together
from .conftest import API_KEY, MODEL

TOPICS = ["rivers", "owls", "bridges", "tea", "volcanoes", "chess", "bicycles", "glaciers", "maps", "bees",
          "lighthouses", "clocks", "deserts", "violins", "comets", "bread", "tides", "ferns", "trains", "coral",
          "kites", "salt", "moss", "whales", "ink", "caves", "lanterns", "wool", "stars", "rain", "paper", "foxes"]
MAX_TOKENS = 12


def question(topic: str) -> dict:
    return {"model": MODEL, "messages": [{"role": "user", "content": f"Tell me one fact about {topic}."}],
            "max_tokens": MAX_TOKENS, "temperature": 0}


def ask(client: httpx.Client, topic: str) -> str:
    response = client.post("/v1/chat/completions", json=question(topic))
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]["content"]


def test_32_concurrent_greedy_requests_equal_each_alone(engine_server):
    assert len(TOPICS) == 32
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    with httpx.Client(base_url=engine_server.base_url, timeout=300, limits=limits,
                      headers={"Authorization": f"Bearer {API_KEY}"}) as client:
        alone = [ask(client, topic) for topic in TOPICS]
        with ThreadPoolExecutor(max_workers=32) as pool:
            together = list(pool.map(lambda topic: ask(client, topic), TOPICS))
    assert together == alone
    # Batched, not serialised by the HTTP layer: many requests run in one engine batch.
    held = hold_together(engine_server, [question(topic) for topic in TOPICS[:16]], API_KEY)
    assert held["ocrserve_requests_running"] >= 16
