"""API keys: `ocrserve keys`, the keys file read by a running API, and the open
(no key) mode that only ever binds to loopback."""
from __future__ import annotations

import argparse

import pytest
from fastapi.testclient import TestClient

from app.api_keys import hash_key
from app.commands import api as api_command
from app.commands import build_parser
from app.commands import keys as keys_command
from app.main import create_app
from workers.settings import Settings


def _keys(capsys, *argv: str) -> tuple[int, str, str]:
    code = keys_command.main(build_parser("keys").parse_args(list(argv)))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture()
def keys_file(tmp_path, monkeypatch):
    path = tmp_path / "api-keys"
    monkeypatch.setenv("OCRSERVE_API_KEYS_FILE", str(path))
    return path


def test_keys_add_prints_the_key_once_and_stores_only_its_hash(keys_file, capsys):
    code, out, err = _keys(capsys, "add", "alice")
    key = out.strip()
    assert code == 0 and key.startswith("ocr_") and len(key) > 40 and "shown only this once" in err
    assert keys_file.read_text() == f"alice:{hash_key(key)}\n" and key not in keys_file.read_text()
    assert oct(keys_file.stat().st_mode & 0o777) == "0o600"
    assert _keys(capsys, "add", "alice")[0] == 2, "names are unique"
    assert _keys(capsys, "add", "bad name!")[0] == 2
    _keys(capsys, "add", "bob")
    assert _keys(capsys, "list")[1].split() == ["alice", "bob"]
    assert _keys(capsys, "remove", "alice")[0] == 0 and _keys(capsys, "remove", "alice")[0] == 1
    assert _keys(capsys, "list")[1].split() == ["bob"]


def test_the_api_follows_the_keys_file_while_running(keys_file, tmp_path, capsys):
    _, out, _ = _keys(capsys, "add", "alice")
    alice = out.strip()
    client = TestClient(create_app(Settings(data_dir=tmp_path / "data", api_keys_file=keys_file)))
    assert client.get("/v1/jobs", headers={"Authorization": f"Bearer {alice}"}).status_code == 200
    assert client.get("/v1/jobs", headers={"Authorization": "Bearer ocr_guess"}).status_code == 401
    assert client.get("/v1/jobs").status_code == 401
    assert client.get("/health").status_code == 200, "the probe needs no key"

    _, out, _ = _keys(capsys, "add", "carol")
    assert client.get("/v1/jobs", headers={"Authorization": f"Bearer {out.strip()}"}).status_code == 200
    _keys(capsys, "remove", "alice")
    assert client.get("/v1/jobs", headers={"Authorization": f"Bearer {alice}"}).status_code == 401


def test_without_keys_the_api_is_open_and_binds_to_loopback_only(tmp_path, capsys):
    settings = Settings(data_dir=tmp_path, api_keys_file=tmp_path / "no-such-file")
    client = TestClient(create_app(settings))
    assert client.get("/v1/jobs").status_code == 200
    assert api_command.bind_host(settings, "0.0.0.0") == "127.0.0.1"
    assert "no API key is configured" in capsys.readouterr().err
    keyed = settings.model_copy(update={"api_keys": "k1"})
    assert api_command.bind_host(keyed, "0.0.0.0") == "0.0.0.0"
    assert isinstance(build_parser("serve").parse_args(["--host", "0.0.0.0"]), argparse.Namespace)
