"""A prefix-cache tenant cannot be formed by whoever holds only the engine key: the workers send a
keyed hash (HMAC-SHA256) of the job owner with the deployment's tenant secret, never the plain hash
anyone knowing the owner id could compute. The secret is the setting, else one made once, owner-only,
in the data directory, the same for every worker that shares it. (Against the real engine: a guessed
tenant gets no cached tokens, tests/engine/server/test_auth_engine.py.)"""
from __future__ import annotations

import hashlib
import stat
import threading

from PIL import Image

from vision.layout import RecognitionTask
from workers.extraction_client import ExtractionClient
from workers.recognizers.base import RecognitionItem
from workers.recognizers.openai_compatible import OpenAIVisionRecognizer
from workers.settings import Settings
from workers.tenant import SECRET_FILE, current_tenant, engine_tenant, tenant_scope, tenant_secret


def unkeyed(owner: str) -> str:
    """What the workers sent before: a plain hash of the owner id."""
    return "owner-" + hashlib.sha256(b"ocrserve-tenant:" + owner.encode()).hexdigest()[:32]


def test_tenants_are_keyed_by_the_secret():
    secret = b"s" * 32
    assert engine_tenant("alice", secret) != engine_tenant("bob", secret)
    assert engine_tenant("alice", secret) != engine_tenant("alice", b"t" * 32)   # no secret, no tenant
    assert engine_tenant("alice", secret) != unkeyed("alice")
    assert "alice" not in engine_tenant("alice", secret)
    with tenant_scope("alice"):
        assert current_tenant(secret) == engine_tenant("alice", secret)
    assert current_tenant(secret) is None


def test_the_data_dir_secret_is_made_once_owner_only_and_shared(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    seen: list[bytes] = []
    workers = [threading.Thread(target=lambda: seen.append(tenant_secret(settings))) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(set(seen)) == 1 and len(seen[0]) >= 64
    path = tmp_path / "data" / SECRET_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == [SECRET_FILE]   # no candidate left behind
    assert tenant_secret(Settings(data_dir=tmp_path / "other")) != seen[0]   # another deployment, another key
    assert tenant_secret(Settings(data_dir=tmp_path / "data", tenant_secret="configured")) == b"configured"


def test_the_engine_clients_send_the_keyed_tenant_not_the_unkeyed_one(tmp_path):
    settings = Settings(data_dir=tmp_path, recognizer="openai", engine_url="http://127.0.0.1:9/v1",
                        tenant_secret="deployment-secret")
    recognizer = OpenAIVisionRecognizer.from_settings(settings)
    extraction = ExtractionClient.from_settings(settings)
    item = RecognitionItem(Image.new("RGB", (8, 8)), RecognitionTask.TEXT, is_single_line=True)
    with tenant_scope("alice"):
        sent = recognizer._chat_body(item, "unused", 0.0)["user"]
    assert sent == engine_tenant("alice", b"deployment-secret") != unkeyed("alice")
    assert extraction.tenant_secret == recognizer.tenant_secret == b"deployment-secret"
    # built without settings (tests, tools): a secret of its own, never the unkeyed form
    bare = OpenAIVisionRecognizer("http://127.0.0.1:9/v1", "m")
    with tenant_scope("alice"):
        assert bare._chat_body(item, "unused", 0.0)["user"] not in (unkeyed("alice"), sent)
