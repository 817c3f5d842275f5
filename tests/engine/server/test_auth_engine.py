"""The engine behind a key and behind loopback that is not taken on trust: it refuses to bind
beyond loopback without a key, admin routes always need one, and a web page cannot reach it
through DNS rebinding (Host check) or a cross-site text/plain post (415). The official
openai client and our own workers keep working."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import httpx
import openai
import pytest
from PIL import Image

from tests.engine.server.conftest import API_KEY, REPO_ROOT, EngineServer
from vision.layout import RecognitionTask
from workers.recognizers.base import RecognitionItem
from workers.recognizers.openai_compatible import OpenAIVisionRecognizer
from workers.tenant import engine_tenant, tenant_scope

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def open_engine():
    """The house model on loopback with no key at all (a local no-key install)."""
    server = EngineServer(["--kv-tokens", "8192"], model="house-ocr")
    server.start()
    try:
        server.wait_ready()
        yield server.base_url
    finally:
        assert server.stop() == 0


def test_a_non_loopback_bind_without_a_key_is_refused_before_loading(tmp_path):
    done = subprocess.run([sys.executable, "-m", "engine.server", "--model", "house-ocr", "--host", "0.0.0.0",
                           "--port", "0"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 2, done.stderr
    assert "without an API key" in done.stderr and "ready on" not in done.stdout


def test_flush_cache_is_refused_when_no_key_is_configured(open_engine):
    answer = httpx.post(f"{open_engine}/flush_cache", timeout=30)
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "admin_key_not_configured"
    guessed = httpx.post(f"{open_engine}/flush_cache", headers={"Authorization": "Bearer anything"}, timeout=30)
    assert guessed.status_code == 403


@pytest.mark.parametrize("host", ["attacker.example", "127.0.0.1.attacker.example:80", "localhost.evil"])
def test_a_rebound_host_name_is_refused(open_engine, host):
    for method, path in (("GET", "/v1/models"), ("GET", "/health"), ("POST", "/v1/chat/completions")):
        answer = httpx.request(method, f"{open_engine}{path}", headers={"Host": host}, json={}, timeout=30)
        assert answer.status_code == 400, (path, answer.text)
        assert answer.json()["error"]["code"] == "host_not_allowed"
    port = open_engine.rsplit(":", 1)[1]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
        assert httpx.get(f"{open_engine}/v1/models", headers={"Host": host}, timeout=30).status_code == 200


def test_a_cross_site_text_plain_post_is_refused(open_engine):
    body = json.dumps({"model": "house-ocr", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})
    for path in ("/v1/chat/completions", "/v1/completions", "/v1/batch"):
        for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                             None):
            headers = {"Content-Type": content_type} if content_type else {}
            answer = httpx.post(f"{open_engine}{path}", content=body, headers=headers, timeout=30)
            assert answer.status_code == 415, (path, content_type, answer.text)
            assert answer.json()["error"]["code"] == "unsupported_media_type"


def test_the_openai_client_and_our_recogniser_still_work(open_engine):
    client = openai.OpenAI(base_url=f"{open_engine}/v1", api_key="unused", max_retries=0, timeout=120)
    assert [model.id for model in client.models.list().data] == ["house-ocr"]
    recognizer = OpenAIVisionRecognizer(f"{open_engine}/v1", "house-ocr", reads_single_lines=True)
    crop = RecognitionItem(Image.new("RGB", (64, 24), "white"), RecognitionTask.TEXT, is_single_line=True)
    with tenant_scope("owner-a"):
        assert recognizer.recognize([crop])[0].error is None
    assert recognizer.uses_batch is True, "the batch route took our JSON Lines"
    per_request = OpenAIVisionRecognizer(f"{open_engine}/v1", "house-ocr", reads_single_lines=True)
    per_request.uses_batch = False
    with tenant_scope("owner-a"):
        assert per_request.recognize([crop])[0].error is None


def test_requests_carry_the_owners_hashed_tenant_and_tenants_share_no_cache(engine_server):
    """Bodies built by the worker code under two owners' scopes, against the keyed SmolLM2 engine:
    the same prompt is a cache hit for its owner only, and a client holding the engine key that
    names the tenant it can compute from an owner id (the old unkeyed hash) probes nothing."""
    recognizer = OpenAIVisionRecognizer(f"{engine_server.base_url}/v1", "smollm2-135m", api_key=API_KEY)
    item = RecognitionItem(Image.new("RGB", (8, 8)), RecognitionTask.TEXT, is_single_line=True)
    prompt = "Invoice 4711 for Alice Example, 12 Long Street, due 2026-12-31. " * 8

    def body(owner: str) -> dict:
        with tenant_scope(owner):
            chat = recognizer._chat_body(item, "unused", 0.0)
        assert chat["user"] == engine_tenant(owner, recognizer.tenant_secret) and owner not in chat["user"]
        assert chat["user"] != unkeyed_tenant(owner)
        chat["messages"] = [{"role": "user", "content": prompt}]
        chat["max_tokens"] = 1
        return chat

    def cached(owner: str, tenant: str | None = None) -> int:
        chat = body(owner)
        if tenant is not None:
            chat["user"] = tenant
        answer = httpx.post(f"{engine_server.base_url}/v1/chat/completions", json=chat, timeout=120,
                            headers={"Authorization": f"Bearer {API_KEY}"})
        assert answer.status_code == 200, answer.text
        return answer.json()["usage"]["prompt_tokens_details"]["cached_tokens"]

    cached("alice")
    assert cached("alice") > 0, "the owner's own repeat hits the cache"
    assert cached("bob") == 0, "another owner's identical prompt does not"
    assert cached("mallory", tenant=unkeyed_tenant("alice")) == 0, "a tenant guessed from alice's id probes nothing"
    assert engine_tenant("alice", recognizer.tenant_secret) != engine_tenant("bob", recognizer.tenant_secret)


def unkeyed_tenant(owner: str) -> str:
    """The tenant the workers sent before it was keyed: anyone knowing the owner id could form it."""
    return "owner-" + hashlib.sha256(b"ocrserve-tenant:" + owner.encode()).hexdigest()[:32]
