"""What a local engine can read of the service's secrets: only its own key. The engines `serve`,
`run` and `worker --with-engine` start used to inherit every OCRSERVE_* setting (the users' API
keys, the database URL with its password, the broker's URL with its password, the other engine's
key), readable by anything that reads the engine process's environment or a crash dump of it."""
from __future__ import annotations

import pytest

from app.local_services import ENGINE_VARIABLES, child_env, engine_env, start_engine, with_engine_keys
from workers.settings import Settings

SECRETS = {"api_keys": "alice-key-f00d,bob-key-beef", "database_url": "postgresql://app:db-pass-c0ffee@db/ocr",
           "broker_url": "redis://:redis-pass-cafe@redis:6379/0", "extraction_api_key": "other-engine-key-5eed"}


def _settings(tmp_path) -> Settings:
    return with_engine_keys(Settings(data_dir=tmp_path, recognizer="house", **SECRETS))


def test_an_engines_environment_keeps_only_what_an_engine_reads(tmp_path):
    env = engine_env({**child_env(_settings(tmp_path)), "OCRSERVE_CACHE_DIR": "/models", "PATH": "/usr/bin"})
    assert {key for key in env if key.startswith("OCRSERVE_")} <= ENGINE_VARIABLES
    assert env["OCRSERVE_CACHE_DIR"] == "/models" and env["PATH"] == "/usr/bin"
    assert not any(secret in value for value in env.values() for secret in SECRETS.values())


@pytest.mark.slow
def test_a_started_engine_holds_its_own_key_and_no_other_secret(tmp_path):
    settings = _settings(tmp_path)
    engine, url = start_engine(settings, child_env(settings), 0, tmp_path / "engine.log", ready_timeout_s=300,
                               extra_args=("--kv-tokens", "4096"), api_key=settings.engine_api_key)
    try:
        environ = open(f"/proc/{engine.popen.pid}/environ", "rb").read().decode()
    finally:
        engine.stop()
    variables = dict(item.split("=", 1) for item in environ.split("\0") if "=" in item)
    assert variables["OCRSERVE_ENGINE_API_KEY"] == settings.engine_api_key
    leaked = [secret for secret in SECRETS.values() if secret in environ]
    assert not leaked, f"the engine's environment holds {leaked}"
    assert {key for key in variables if key.startswith("OCRSERVE_")} <= ENGINE_VARIABLES | {"OCRSERVE_PARENT_PID"}
