"""The Host check the jobs API and the engine share (httpguard/hosts.py): which names are
allowed, how a Host header is read, and that both servers refuse the same names."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from httpguard.hosts import allowed_host_names, host_allowed, host_name


@pytest.mark.parametrize(("bound", "extra", "expected"), [
    ("127.0.0.1", [], {"localhost", "127.0.0.1", "::1"}),
    ("[::1]", [], {"localhost", "127.0.0.1", "::1"}),
    ("192.168.1.5", [" OCR.Example.org ", ""], {"localhost", "127.0.0.1", "::1", "192.168.1.5", "ocr.example.org"}),
    ("0.0.0.0", ["ocr.example.org"], {"localhost", "127.0.0.1", "::1", "ocr.example.org"}),
    ("::", ["[fd00::2]"], {"localhost", "127.0.0.1", "::1", "fd00::2"}),
    ("0.0.0.0", [], None),
    ("", ["  ", ""], None),
])
def test_the_allowed_names_are_loopback_the_bound_address_and_the_extras(bound, extra, expected):
    allowed = allowed_host_names(bound, extra)
    assert allowed == (None if expected is None else frozenset(expected))


@pytest.mark.parametrize(("header", "name"), [
    (b"example.org", "example.org"), (b"Example.ORG:8000", "example.org"), (b" localhost:80 ", "localhost"),
    (b"[::1]:8000", "::1"), (b"[::1]", "::1"), (b"[::1]x", None), (b"[::1]:", None), (b"[::1", None),
    (b"[]:80", None), (b"example.org:80x", None), (b":80", None), (b"", None), (None, None),
])
def test_a_host_header_is_read_as_its_name_without_port_or_brackets(header, name):
    assert host_name(header) == name


def test_no_allowed_names_means_no_check():
    assert host_allowed(None, b"attacker.example") and host_allowed(None, None)
    allowed = allowed_host_names("127.0.0.1", [])
    assert host_allowed(allowed, b"localhost:8000") and not host_allowed(allowed, None)


HOSTS = ["localhost:8000", "127.0.0.1", "[::1]:8000", "ocr.example.org", "attacker.example",
         "127.0.0.1.nip.io:8000", "localhost.attacker.example", "[::1", "localhost:port"]


def _statuses(client: TestClient) -> dict[str, int]:
    return {host: client.get("/v1/models", headers={"Host": host}).status_code for host in HOSTS}


def test_the_api_and_the_engine_refuse_the_same_hosts(tmp_path):
    from app.main import create_app
    from engine.server.app import RequestGuard
    from workers.settings import Settings

    settings = Settings(data_dir=tmp_path, api_keys_file=tmp_path / "absent", allowed_hosts="ocr.example.org")
    api = TestClient(create_app(settings, bound_host="127.0.0.1"))
    api_statuses = _statuses(api)   # no such route on the API: 404 when the Host passes
    inner = Starlette(routes=[Route("/v1/models", lambda request: PlainTextResponse("ok"))])
    engine = TestClient(RequestGuard(inner, allowed_hosts=allowed_host_names("127.0.0.1", ["ocr.example.org"])))
    engine_statuses = _statuses(engine)
    refused = {host for host, status in api_statuses.items() if status == 400}
    assert refused == {"attacker.example", "127.0.0.1.nip.io:8000", "localhost.attacker.example", "[::1",
                       "localhost:port"}
    assert {host for host, status in engine_statuses.items() if status == 400} == refused
    assert api.get("/v1/models", headers={"Host": "attacker.example"}).json()["error"]["code"] == "host_not_allowed"
    assert engine.get("/v1/models", headers={"Host": "attacker.example"}).json()["error"]["code"] == "host_not_allowed"
