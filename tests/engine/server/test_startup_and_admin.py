"""Start-up (503 while loading, one ready line, every metric at zero), /health, /v1/models, /flush_cache."""
from __future__ import annotations

import httpx
import openai
import pytest

from .conftest import ADMIN_KEY, ALIAS, API_KEY, CONTEXT_LENGTH, MODEL, read_metrics
from .test_engine_metrics import SERIES_AT_ZERO


def test_answers_503_while_the_model_loads(engine_server):
    loading = [r for r in engine_server.loading_responses if r.status_code == 503]
    assert loading, "the server was never seen loading"
    for response in loading:
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert error["code"] == "model_loading"
        assert "loading" in error["message"]
    assert {r.status_code for r in engine_server.loading_responses} <= {200, 503}


def test_prints_exactly_one_line_when_ready(engine_server):
    assert engine_server.stdout_lines == [
        f"ocrserve engine ready on http://127.0.0.1:{engine_server.port} model={MODEL}"]


def test_every_metric_series_is_there_at_zero_before_the_first_request(engine_server):
    samples = read_metrics(engine_server.metrics_at_start)
    for name in SERIES_AT_ZERO:
        if name != "ocrserve_kv_cache_total_tokens":
            assert samples.get(name) == 0.0, name
    assert samples["ocrserve_kv_cache_total_tokens"] == pytest.approx(8192, abs=64)


def test_health(engine_server):
    response = httpx.get(f"{engine_server.base_url}/health", timeout=10)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_models_lists_every_served_name(client):
    models = client.models.list()
    assert [model.id for model in models.data] == [MODEL, ALIAS]
    assert models.data[0].model_extra["max_model_len"] == CONTEXT_LENGTH


def test_an_alias_is_answered_under_its_own_name(client):
    completion = client.completions.create(model=ALIAS, prompt="Hello", max_tokens=2, temperature=0)
    assert completion.model == ALIAS


def test_unknown_model_is_404(client):
    with pytest.raises(openai.NotFoundError) as caught:
        client.completions.create(model="gpt-17", prompt="Hello", max_tokens=2)
    assert caught.value.body["code"] == "model_not_found"


def test_flush_cache_needs_the_admin_key(engine_server):
    url = f"{engine_server.base_url}/flush_cache"
    assert httpx.post(url, timeout=30).status_code == 401
    with_api_key = httpx.post(url, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30)
    assert with_api_key.status_code == 401
    assert with_api_key.json()["error"]["code"] == "invalid_api_key"
    with_admin_key = httpx.post(url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30)
    assert with_admin_key.status_code == 200
    assert with_admin_key.json() == {"flushed": True}


def test_unknown_path_is_an_openai_shaped_404(http):
    response = http.get("/v1/engines")
    assert response.status_code == 404
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}
