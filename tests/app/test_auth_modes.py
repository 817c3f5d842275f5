"""Auth that cannot switch itself off: the mode (`keys` or `none`) is decided once at start-up,
a keyed API refuses everything (503) when its keys cannot be read, `none` binds to loopback
only, the keys file is replaced atomically, and a bound API refuses foreign Host headers."""
from __future__ import annotations

import os

import pytest
from fastapi.testclient import TestClient

from app.api_keys import KeyRing, add_key, remove_key
from app.commands import api as api_command
from app.main import create_app
from workers.settings import Settings


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture()
def keyed(tmp_path):
    """An API started with one key in its keys file, and that key."""
    keys_file = tmp_path / "api-keys"
    key = add_key(keys_file, "alice")
    client = TestClient(create_app(Settings(data_dir=tmp_path / "data", api_keys_file=keys_file)))
    return client, keys_file, key


def test_removing_the_last_key_refuses_everyone_instead_of_opening_up(keyed):
    client, keys_file, key = keyed
    assert client.get("/v1/jobs", headers=bearer(key)).status_code == 200
    assert remove_key(keys_file, "alice")
    for headers in ({}, bearer(key), bearer("ocr_guess")):
        answer = client.get("/v1/jobs", headers=headers)
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"]["code"] == "keys_unavailable"
        assert "ocrserve keys add" in answer.json()["error"]["message"]
    assert client.get("/health").status_code == 200


@pytest.mark.parametrize("damage", ["delete", "empty", "malformed", "unreadable"])
def test_a_damaged_keys_file_refuses_every_request_until_it_is_repaired(keyed, damage):
    client, keys_file, key = keyed
    good = keys_file.read_text()
    if damage == "delete":
        keys_file.unlink()
    elif damage == "empty":
        keys_file.write_text("")
    elif damage == "malformed":
        keys_file.write_text(good + "not a key line\n")
    else:   # a directory where the file was: reading it fails (as root, mode bits would not)
        keys_file.unlink()
        keys_file.mkdir()
    for headers in ({}, bearer(key)):
        answer = client.get("/v1/jobs", headers=headers)
        assert answer.status_code == 503, (damage, answer.text)
        assert str(keys_file.parent) not in answer.text, "the client is not told the server's paths"
    if keys_file.is_dir():
        keys_file.rmdir()
    keys_file.write_text(good)
    assert client.get("/v1/jobs", headers=bearer(key)).status_code == 200
    assert client.get("/v1/jobs").status_code == 401


def test_env_keys_keep_working_when_the_file_goes(tmp_path):
    keys_file = tmp_path / "api-keys"
    add_key(keys_file, "alice")
    client = TestClient(create_app(Settings(data_dir=tmp_path, api_keys="k-env", api_keys_file=keys_file)))
    keys_file.unlink()
    assert client.get("/v1/jobs", headers=bearer("k-env")).status_code == 200
    assert client.get("/v1/jobs").status_code == 401


def test_the_mode_is_decided_once_at_start(tmp_path):
    keys_file = tmp_path / "api-keys"
    assert KeyRing(None, keys_file).mode == "none"
    keys_file.write_text("")
    assert KeyRing(None, keys_file).mode == "keys", "an existing (even empty) keys file means keys"
    assert KeyRing("k1", tmp_path / "absent").mode == "keys"
    assert KeyRing("k1", keys_file, "none").mode == "none"
    assert KeyRing(None, tmp_path / "absent", "keys").mode == "keys"

    open_app = TestClient(create_app(Settings(data_dir=tmp_path, api_keys_file=tmp_path / "later")))
    assert open_app.get("/v1/jobs").status_code == 200
    add_key(tmp_path / "later", "bob")
    assert open_app.get("/v1/jobs").status_code == 200, "an open API stays open until restarted"
    restarted = TestClient(create_app(Settings(data_dir=tmp_path, api_keys_file=tmp_path / "later")))
    assert restarted.get("/v1/jobs").status_code == 401


def test_keys_mode_with_no_key_at_all_refuses_rather_than_opens(tmp_path):
    client = TestClient(create_app(Settings(data_dir=tmp_path, auth="keys", api_keys_file=tmp_path / "none")))
    assert client.get("/v1/jobs").status_code == 503


def test_no_auth_binds_to_loopback_only_and_keys_mode_binds_where_asked(tmp_path, capsys):
    settings = Settings(data_dir=tmp_path, api_keys_file=tmp_path / "absent")
    assert api_command.bind_host(api_command.with_auth_decided(settings), "0.0.0.0") == "127.0.0.1"
    assert "auth mode 'none'" in capsys.readouterr().err
    explicit_none = settings.model_copy(update={"auth": "none", "api_keys": "k1"})
    assert api_command.bind_host(explicit_none, "0.0.0.0") == "127.0.0.1"
    (tmp_path / "empty-keys").write_text("")
    keyed = api_command.with_auth_decided(settings.model_copy(update={"api_keys_file": tmp_path / "empty-keys"}))
    assert keyed.auth == "keys" and api_command.bind_host(keyed, "0.0.0.0") == "0.0.0.0"


def test_keys_remove_and_add_replace_the_file_atomically_and_owner_only(tmp_path):
    keys_file = tmp_path / "api-keys"
    add_key(keys_file, "alice")
    add_key(keys_file, "bob")
    os.chmod(keys_file, 0o644)   # e.g. made by hand, or by an older version
    before = keys_file.stat().st_ino
    assert remove_key(keys_file, "alice")
    after = keys_file.stat()
    assert after.st_ino != before, "a new file renamed over the old one, never rewritten in place"
    assert after.st_mode & 0o777 == 0o600
    assert keys_file.read_text().startswith("bob:")
    add_key(keys_file, "carol")
    assert keys_file.stat().st_ino != after.st_ino and keys_file.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == [], "no temp file left behind"


@pytest.mark.parametrize(("host", "allowed"), [
    ("localhost:8000", True), ("127.0.0.1:8000", True), ("[::1]:8000", True), ("ocr.example.org", True),
    ("attacker.example", False), ("127.0.0.1.nip.io:8000", False), ("localhost.attacker.example", False),
])
def test_a_bound_api_answers_only_its_own_host_names(tmp_path, host, allowed):
    settings = Settings(data_dir=tmp_path, api_keys_file=tmp_path / "absent", allowed_hosts="ocr.example.org")
    client = TestClient(create_app(settings, bound_host="127.0.0.1"))
    answer = client.get("/v1/jobs", headers={"Host": host})
    if allowed:
        assert answer.status_code == 200, answer.text
    else:
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "host_not_allowed"
        assert client.get("/", headers={"Host": host}).status_code == 400


def test_a_wildcard_bind_checks_hosts_only_when_names_are_given(tmp_path):
    settings = Settings(data_dir=tmp_path, api_keys="k1")
    anything = TestClient(create_app(settings, bound_host="0.0.0.0"))
    assert anything.get("/v1/jobs", headers={"Host": "ocr.internal", **bearer("k1")}).status_code == 200
    named = TestClient(create_app(settings.model_copy(update={"allowed_hosts": "ocr.example.org"}),
                                  bound_host="0.0.0.0"))
    assert named.get("/v1/jobs", headers={"Host": "ocr.internal", **bearer("k1")}).status_code == 400
    assert named.get("/v1/jobs", headers={"Host": "ocr.example.org", **bearer("k1")}).status_code == 200
