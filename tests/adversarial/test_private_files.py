"""Another local user reading the data directory: the embedded broker holds every task's
payload, the children's logs what they read and where, the keys file's folder its name.
Everything the service creates there is the owner's alone from the moment it exists (0700
folders, 0600 files), whatever the umask: each test runs under umask 000, where a file made
by the default mode would be readable and writable by anyone."""
from __future__ import annotations

import io
import os
import stat
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from app.api_keys import add_key
from app.commands import run_subcommand
from app.local_services import ManagedProcess
from app.main import create_app
from workers.settings import Settings


@pytest.fixture
def permissive_umask():
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _loose(root: Path) -> list[str]:
    """Everything under `root` (itself included) wider than owner-only."""
    paths = [root, *root.rglob("*")]
    return [f"{path} {_mode(path):o}" for path in paths
            if _mode(path) != (0o700 if path.is_dir() else 0o600)]


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 20), "white").save(buffer, format="PNG")
    return buffer.getvalue()


def test_an_api_with_the_embedded_broker_creates_nothing_others_can_read(tmp_path, permissive_umask):
    data = tmp_path / "data"
    client = TestClient(create_app(Settings(data_dir=data, api_keys="k1")))
    answer = client.post("/v1/jobs", files=[("files", ("page.png", _png(), "image/png"))],
                         headers={"Authorization": "Bearer k1"})
    assert answer.status_code == 202, answer.text
    assert (data / "broker.sqlite").stat().st_size > 0, "the job went through the embedded broker"
    assert (data / "celery-results.sqlite").exists()
    assert _loose(data) == []


def test_a_childs_log_is_created_owner_only(tmp_path, permissive_umask):
    log = tmp_path / "worker.log"
    child = ManagedProcess("worker", [sys.executable, "-c", "import sys; sys.stderr.write('x')"], os.environ, log)
    child.popen.wait(60)
    assert child.stop() == 0
    assert log.read_bytes() == b"x" and _mode(log) == 0o600
    os.chmod(log, 0o644)   # left by an older version
    ManagedProcess("worker", [sys.executable, "-c", "pass"], os.environ, log).stop()
    assert _mode(log) == 0o600


def test_keys_add_creates_the_data_directory_owner_only(tmp_path, permissive_umask, monkeypatch, capsys):
    data = tmp_path / "new" / "data"
    monkeypatch.setenv("OCRSERVE_DATA_DIR", str(data))
    assert run_subcommand("keys", ["add", "alice"]) == 0
    assert capsys.readouterr().out.startswith("ocr_")
    assert _mode(tmp_path / "new") == 0o700 and _loose(data) == []
    add_key(tmp_path / "elsewhere" / "api-keys", "bob")
    assert _loose(tmp_path / "elsewhere") == []
