"""`"speculative": false` through the HTTP API of an n-gram drafting SmolLM2 engine, built from the
real command line (vLLM's --speculative-config) and served in process: the switched-off request
drafts nothing (per-method series on /metrics stay at zero) and gets the tokens the drafted one
gets; a value that is not a JSON boolean is a 400 naming the field."""
from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from engine.async_engine import AsyncEngine
from engine.errors import InvalidRequestError
from engine.metrics import SPEC_METHODS, EngineMetrics
from engine.sampling_params import SamplingParams
from engine.server.app import create_app
from engine.server.cli_args import build_parser, engine_config_from_args, settings_from_args
from tests.engine.server.conftest import read_metrics
from tests.engine.test_spec_ngram import TEXT

ARGS = ["--model", "smollm2-135m", "--context-length", "512", "--kv-tokens", "4096", "--num-threads", "1",
        "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 6}']
LOAD_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def http():
    args = build_parser().parse_args(ARGS)
    config = engine_config_from_args(args)
    assert (config.speculative_algorithm, config.draft_tokens) == ("ngram", 6)
    app = create_app(AsyncEngine(config, metrics=EngineMetrics("smollm2-135m")), settings_from_args(args))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while client.get("/health").status_code != 200:
            assert time.monotonic() < deadline, "the engine did not load"
            time.sleep(0.1)
        yield client


def drafted_by_method(client) -> dict[str, float]:
    samples = read_metrics(client.get("/metrics").text)
    return {m: samples[f'ocrserve_spec_draft_tokens_by_method_total{{method="{m}"}}'] for m in SPEC_METHODS}


def test_speculative_false_drafts_nothing_and_changes_no_token(http):
    assert drafted_by_method(http) == dict.fromkeys(SPEC_METHODS, 0.0)   # present at zero from start-up
    body = {"prompt": "Copy this text exactly: " + TEXT + "\nCopy: Invoice", "max_tokens": 16, "temperature": 0,
            "logprobs": 0}
    off = http.post("/v1/completions", json={**body, "speculative": False})
    assert off.status_code == 200, off.text
    assert drafted_by_method(http) == dict.fromkeys(SPEC_METHODS, 0.0)
    on = http.post("/v1/completions", json=body)
    assert on.status_code == 200, on.text
    assert drafted_by_method(http)["ngram"] > 0
    tokens = [r.json()["choices"][0]["logprobs"]["tokens"] for r in (off, on)]
    assert tokens[0] == tokens[1] and len(tokens[0]) == 16

    chat = {"messages": [{"role": "user", "content": "Repeat: " + TEXT}], "max_tokens": 8, "temperature": 0}
    before = drafted_by_method(http)
    off = http.post("/v1/chat/completions", json={**chat, "speculative": False})
    assert off.status_code == 200, off.text
    assert drafted_by_method(http) == before
    on = http.post("/v1/chat/completions", json={**chat, "speculative": True})
    assert on.json()["choices"][0]["message"] == off.json()["choices"][0]["message"]


@pytest.mark.parametrize("value", ["false", 0, 1, "no", [], {}])
def test_a_speculative_that_is_not_a_boolean_is_a_400(http, value):
    response = http.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "Hi"}],
                                                       "max_tokens": 1, "speculative": value})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "speculative" and "valid boolean" in error["message"]


def test_the_python_api_checks_the_switch_too():
    assert SamplingParams(speculative=False).validate().speculative is False
    with pytest.raises(InvalidRequestError, match="speculative must be true or false"):
        SamplingParams(speculative="no").validate()
