"""The web page's Content-Security-Policy and other security headers go with every page route:
`/`, and everything under `/web/` (the same index served there, scripts, a missing file)."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.web_ui import SECURITY_HEADERS
from workers.settings import Settings


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(Settings(data_dir=tmp_path_factory.mktemp("web"), api_keys="k1")))


@pytest.mark.parametrize("path", ["/", "/web/index.html", "/web/", "/web/app.js", "/web/styles.css",
                                  "/web/no-such-file.html", "/web"])
def test_every_page_route_carries_the_security_headers(client, path):
    answer = client.get(path, follow_redirects=False)
    for name, value in SECURITY_HEADERS.items():
        assert answer.headers.get(name) == value, (path, name, answer.status_code)
    assert answer.headers.get_list("content-security-policy") == [SECURITY_HEADERS["Content-Security-Policy"]]


def test_a_revalidated_asset_keeps_the_headers(client):
    first = client.get("/web/app.js")
    again = client.get("/web/app.js", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert again.headers["content-security-policy"] == SECURITY_HEADERS["Content-Security-Policy"]


def test_api_routes_are_left_as_they_were(client):
    answer = client.get("/v1/jobs", headers={"Authorization": "Bearer k1"})
    assert answer.status_code == 200 and "content-security-policy" not in answer.headers
