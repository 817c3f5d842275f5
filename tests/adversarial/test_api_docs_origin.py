"""A script on the API's documentation pages runs on the origin where the web page keeps its
key (sessionStorage), so a changed CDN file, a page that frames them, or a sniffed response
could take it. The pages are off unless OCRSERVE_API_DOCS is on; when on, they load only
pinned, integrity-checked files, run no inline script, and carry the web page's headers."""
from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.web_ui import SECURITY_HEADERS
from workers.settings import Settings

DOCS_PAGES = ("/docs", "/redoc")


def _client(tmp_path, **settings) -> TestClient:
    return TestClient(create_app(Settings(data_dir=tmp_path, api_keys="k1", **settings)))


def test_the_docs_pages_are_off_by_default_and_the_spec_is_not(tmp_path):
    client = _client(tmp_path)
    for path in (*DOCS_PAGES, "/docs/oauth2-redirect", "/docs/swagger-ui-init.js"):
        assert client.get(path).status_code == 404, path
    spec = client.get("/openapi.json")
    assert spec.status_code == 200 and spec.json()["info"]["title"] == "ocrserve"


def test_api_docs_setting_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("OCRSERVE_API_DOCS", "1")
    assert Settings().api_docs is True


@pytest.mark.parametrize("path", DOCS_PAGES)
def test_docs_pages_load_only_pinned_integrity_checked_files(tmp_path, path):
    page = _client(tmp_path, api_docs=True).get(path)
    assert page.status_code == 200
    tags = re.findall(r"<(script|link)\b([^>]*)>", page.text)
    external = [attrs for _, attrs in tags if re.search(r'(src|href)="https?://', attrs)]
    assert external, "the page loads its UI"
    for attrs in external:
        assert re.search(r'(src|href)="https://cdn\.jsdelivr\.net/npm/[a-z-]+@\d+\.\d+\.\d+/', attrs), attrs
        assert re.search(r'integrity="sha384-[A-Za-z0-9+/]{64}"', attrs) and 'crossorigin="anonymous"' in attrs, attrs
    inline = [attrs for kind, attrs in tags if kind == "script" and "src=" not in attrs]
    assert not inline, "no inline script: the CSP allows none"


@pytest.mark.parametrize("path", [*DOCS_PAGES, "/docs/swagger-ui-init.js"])
def test_docs_pages_carry_the_web_pages_security_headers(tmp_path, path):
    answer = _client(tmp_path, api_docs=True).get(path)
    assert answer.status_code == 200
    for name, value in SECURITY_HEADERS.items():
        if name != "Content-Security-Policy":
            assert answer.headers.get(name) == value, (path, name)
    policy = dict(part.strip().split(" ", 1) for part in answer.headers["content-security-policy"].split(";"))
    assert policy["default-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
    assert policy["base-uri"] == "'none'" and policy["form-action"] == "'none'"
    assert "unsafe" not in policy["script-src"] and "*" not in policy["script-src"]
    assert all(source == "'self'" or re.fullmatch(r"https://cdn\.jsdelivr\.net/npm/[a-z-]+@\d+\.\d+\.\d+/\S+\.js",
                                                  source) for source in policy["script-src"].split()), policy


def test_the_oauth2_redirect_page_is_never_served(tmp_path):
    """The API takes keys, not OAuth2: its redirect page (an inline script that posts what it is
    given to its opener) has nothing to do."""
    assert _client(tmp_path, api_docs=True).get("/docs/oauth2-redirect").status_code == 404
