"""Errors are OpenAI-shaped, carry the right status, and never a traceback: 401, 400, 404, 413."""
from __future__ import annotations

import base64

import httpx
import openai
import pytest

from .conftest import ALLOWED_IMAGE_HOST, CONTEXT_LENGTH, MAX_REQUEST_BYTES, MODEL

USER = [{"role": "user", "content": "Hello"}]
PNG_DATA_URL = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(32)).decode()


def assert_openai_error(response: httpx.Response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"] and "Traceback" not in error["message"]
    if code is not None:
        assert error["code"] == code, error
    return error


def test_without_a_key_is_401(engine_server):
    # (the openai client refuses to send a request without a key, so plain HTTP)
    response = httpx.post(f"{engine_server.base_url}/v1/chat/completions", json={"messages": USER}, timeout=30)
    assert_openai_error(response, 401, "invalid_api_key")


def test_with_a_wrong_key_is_401(engine_server):
    wrong_key = openai.OpenAI(base_url=f"{engine_server.base_url}/v1", api_key="not-the-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong_key.completions.create(model=MODEL, prompt="Hello", max_tokens=1)
    with pytest.raises(openai.AuthenticationError):
        wrong_key.models.list()


@pytest.mark.parametrize("extra, param", [
    ({"temperature": -1.0}, None),
    ({"top_p": 0.0}, None),
    ({"n": 2}, "n"),
    ({"max_tokens": "many"}, "max_tokens"),
    ({"stop_regexp": ["x"]}, "stop_regexp"),
    ({"stop_regex": ["(unclosed"]}, None),
    ({"logprobs": True, "top_logprobs": 50}, None),
    ({"top_logprobs": 2}, "top_logprobs"),
    ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "tool", "content": "x"}]}, None),
])
def test_bad_chat_parameters_are_400(http, extra, param):
    response = http.post("/v1/chat/completions", json={"model": MODEL, "messages": USER, "max_tokens": 1, **extra})
    error = assert_openai_error(response, 400)
    if param is not None:
        assert error["param"] == param


def test_n_above_one_says_why(client):
    with pytest.raises(openai.BadRequestError) as caught:
        client.completions.create(model=MODEL, prompt="Hello", max_tokens=1, n=3)
    assert "n=3 is not supported" in caught.value.body["message"]


def test_prompt_over_the_context_length_is_400_with_the_numbers(client):
    too_long = [1000 + (i % 500) for i in range(CONTEXT_LENGTH + 50)]
    with pytest.raises(openai.BadRequestError) as caught:
        client.completions.create(model=MODEL, prompt=too_long, max_tokens=1)
    message = caught.value.body["message"]
    assert str(CONTEXT_LENGTH + 50) in message and str(CONTEXT_LENGTH - 1) in message
    assert caught.value.body["code"] == "context_length_exceeded"


def test_token_ids_outside_the_vocabulary_are_400(http):
    response = http.post("/v1/completions", json={"prompt": [1, 2, 10**9], "max_tokens": 1})
    assert "outside the vocabulary" in assert_openai_error(response, 400)["message"]


def test_malformed_json_is_400(http):
    response = http.post("/v1/chat/completions", content=b'{"messages": [', headers={"Content-Type": "application/json"})
    assert_openai_error(response, 400, "invalid_json")


@pytest.mark.parametrize("url, needle", [
    (PNG_DATA_URL, "does not accept images"),
    ("file:///etc/passwd", "file://"),
    ("/etc/passwd", "not a file path"),
    ("page.png", "not a file path"),
    ("https://example.com/page.png", "not on this server's allowlist"),
    (f"https://{ALLOWED_IMAGE_HOST}/page.png", "does not accept images"),
    ("ftp://example.com/page.png", "scheme 'ftp'"),
    ("data:text/plain;base64,aGVsbG8=", "image/*"),
    ("data:image/png;base64,@@@", "not valid base64"),
])
def test_image_urls_follow_the_rules(http, url, needle):
    messages = [{"role": "user", "content": [{"type": "text", "text": "Read this page."},
                                             {"type": "image_url", "image_url": {"url": url}}]}]
    response = http.post("/v1/chat/completions", json={"model": MODEL, "messages": messages, "max_tokens": 1})
    assert needle in assert_openai_error(response, 400)["message"]


def test_oversized_body_with_content_length_is_413(http):
    big = {"model": MODEL, "prompt": "x" * (MAX_REQUEST_BYTES + 1000), "max_tokens": 1}
    assert_openai_error(http.post("/v1/completions", json=big), 413, "request_too_large")


def test_oversized_chunked_body_is_413_while_reading(engine_server, http):
    def body():   # no Content-Length: the server has to count
        yield b'{"prompt": "'
        for _ in range(MAX_REQUEST_BYTES // 8192 + 2):
            yield b"x" * 8192
        yield b'", "max_tokens": 1}'

    response = http.post("/v1/completions", content=body(), headers={"Content-Type": "application/json"})
    assert "content-length" not in response.request.headers
    assert_openai_error(response, 413, "request_too_large")
    assert httpx.get(f"{engine_server.base_url}/health", timeout=10).status_code == 200
