"""The MCP server over streamable HTTP at /mcp of the API, behind the API's keys, driven by the MCP
SDK's own client (`streamable_http_client` with an `Authorization` header) against the app served
by uvicorn on a free port, with the session's Redis and worker (conftest).

Checked: a key's owner scopes the tools and resources as in the REST API (Bob never sees Alice's
job), a missing or wrong key is refused before MCP, a local path is never read over HTTP, and a
URL is fetched only from a listed host, with no redirect followed.
"""
from __future__ import annotations

import base64
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import ocr_samples as samples
from api_helpers import KEY_ALICE, KEY_BOB
from service_harness import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
PDF = samples.multi_page_pdf(2)
OVER_CAP_BYTES = 3_000_000   # conftest's api_settings cap uploads at 2 MB


class DocumentHost:
    """A web server with the PDF at /report.pdf, a redirect to it at /moved, and bodies over the
    tests' 2 MB upload cap: /big says so in its Content-Length, /endless only by sending it."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:   # noqa: N802 - the standard library's name
                if self.path == "/report.pdf":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/pdf")
                    self.send_header("Content-Length", str(len(PDF)))
                    self.end_headers()
                    self.wfile.write(PDF)
                elif self.path in ("/big", "/endless"):
                    self.send_response(200)
                    if self.path == "/big":
                        self.send_header("Content-Length", str(OVER_CAP_BYTES))
                    self.end_headers()   # HTTP/1.0: without a length the body ends when the connection does
                    try:
                        for _ in range(OVER_CAP_BYTES // 65536 + 1):
                            self.wfile.write(PDF[:1024] * 64)
                    except OSError:   # the client stopped reading at the cap
                        pass
                else:
                    self.send_response(302)
                    self.send_header("Location", "/report.pdf")
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def mcp_url(api_settings, worker):
    from app.main import create_app

    settings = api_settings.model_copy(update={"document_url_hosts": "127.0.0.1"})
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings, bound_host="127.0.0.1"), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(10)


def _client(url: str, key: str | None, statuses: list[int] | None = None, **options: Any) -> Client:
    """The SDK's client with `key`; `statuses` collects the HTTP status of every response it gets."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    http_client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120),
                                     event_hooks={"response": [record]})
    return Client(streamable_http_client(url, http_client=http_client), **options)


def test_tools_and_resources_are_scoped_to_the_key(mcp_url):
    host = DocumentHost()
    progress: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    async def scenario() -> dict:
        seen: dict = {}
        async with _client(mcp_url, KEY_ALICE) as alice:
            seen["tools"] = await alice.list_tools()
            seen["ocr"] = await alice.call_tool("ocr_file", {"content_base64": base64.b64encode(PDF).decode(),
                                                             "filename": "report.pdf"}, progress_callback=on_progress)
            seen["url"] = await alice.call_tool("ocr_url", {"url": f"{host.url}/report.pdf", "pages": "2"})
            seen["moved"] = await alice.call_tool("ocr_url", {"url": f"{host.url}/moved"})
            seen["other_host"] = await alice.call_tool("ocr_url", {"url": "http://localhost:1/report.pdf"})
            seen["path"] = await alice.call_tool("ocr_file", {"path": "/etc/passwd"})
            seen["big"] = await alice.call_tool("ocr_url", {"url": f"{host.url}/big"})
            seen["endless"] = await alice.call_tool("ocr_url", {"url": f"{host.url}/endless"})
            seen["no_wait"] = await alice.call_tool("ocr_file", {"content_base64": base64.b64encode(PDF).decode(),
                                                                 "pages": "1", "wait_s": 0})
            seen["later"] = await alice.call_tool("get_job", {"job_id": seen["no_wait"].structured_content["job_id"]})
            seen["alice_resources"] = await alice.list_resources(cache_mode="refresh")
            job_id = seen["ocr"].structured_content["job_id"]
            seen["alice_md"] = await alice.read_resource(f"ocrserve://jobs/{job_id}/result.md")
        async with _client(mcp_url, KEY_BOB, mode="legacy") as bob:   # the handshake-era protocol too
            seen["bob_job"] = await bob.call_tool("get_job", {"job_id": job_id})
            seen["bob_result"] = await bob.call_tool("get_result", {"job_id": job_id})
            seen["bob_resources"] = await bob.list_resources(cache_mode="refresh")
            with pytest.raises(Exception) as refused:
                await bob.read_resource(f"ocrserve://jobs/{job_id}/result.md")
            seen["bob_read"] = refused.value
        seen["job_id"] = job_id
        return seen

    seen = anyio.run(scenario)
    assert {tool.name for tool in seen["tools"].tools} == {"ocr_file", "ocr_url", "extract", "get_job", "get_result"}
    ocr = seen["ocr"]
    assert not ocr.is_error, ocr.content
    assert all(samples.page_sentence(n) in ocr.content[0].text for n in range(2))
    assert progress and progress[-1] == (2, 2), "progress notifications travel on the POST's event stream"
    fetched = seen["url"]
    assert not fetched.is_error, fetched.content
    assert samples.page_sentence(1) in fetched.content[0].text and samples.page_sentence(0) not in fetched.content[0].text
    assert seen["moved"].is_error and "redirects are not followed" in seen["moved"].content[0].text
    assert seen["other_host"].is_error and "not on this server's list" in seen["other_host"].content[0].text
    assert seen["path"].is_error and "send the document as content_base64" in seen["path"].content[0].text
    assert seen["big"].is_error and "is 3,000,000 bytes; the limit is 2,000,000" in seen["big"].content[0].text
    assert seen["endless"].is_error and "larger than the 2,000,000-byte limit" in seen["endless"].content[0].text
    assert not seen["no_wait"].is_error and seen["no_wait"].structured_content["state"] in ("queued", "running")
    assert "follow it with get_job" in seen["no_wait"].content[0].text
    assert seen["later"].structured_content["id"] == seen["no_wait"].structured_content["job_id"]

    job_id = seen["job_id"]
    alice_uris = {str(resource.uri) for resource in seen["alice_resources"].resources}
    assert f"ocrserve://jobs/{job_id}/result.md" in alice_uris
    assert seen["alice_md"].contents[0].text == ocr.content[0].text
    assert seen["bob_job"].is_error and "no such job" in seen["bob_job"].content[0].text
    assert seen["bob_result"].is_error and "no such job" in seen["bob_result"].content[0].text
    assert not {str(resource.uri) for resource in seen["bob_resources"].resources} & alice_uris
    assert "no such job" in str(seen["bob_read"])


def test_a_missing_or_wrong_key_is_refused(mcp_url):
    async def connect(key: str | None, statuses: list[int]) -> None:
        async with _client(mcp_url, key, statuses) as client:
            await client.list_tools()

    for key in (None, "not-a-key"):
        statuses: list[int] = []
        with pytest.raises(Exception):   # the SDK raises its MCPError "Server returned an error response"
            anyio.run(connect, key, statuses)
        assert statuses and set(statuses) == {401}, statuses
    # What the refusal is, on the wire: the REST API's 401, before the MCP SDK sees the request.
    response = httpx.post(mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Authorization": "Bearer not-a-key", "Accept": "application/json, text/event-stream"})
    assert response.status_code == 401
    assert response.json() == {"error": {"code": "unauthorized", "message": "unknown API key"}}
    assert response.headers["www-authenticate"] == "Bearer"
