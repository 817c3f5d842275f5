"""The engines `serve`, `run` and docker compose start always require a key, and the workers
are given the same one: a random internal key when none is configured, through the
environment; the extraction client uses the key its engine reads."""
from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import yaml

from app.local_services import child_env, start_engine, with_engine_keys
from workers.extraction_client import ExtractionEndpoint
from workers.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_serve_and_run_make_an_internal_key_for_each_engine_they_start(tmp_path):
    settings = with_engine_keys(Settings(data_dir=tmp_path, recognizer="house"))
    assert settings.engine_api_key and len(settings.engine_api_key) > 40
    assert with_engine_keys(Settings(data_dir=tmp_path)).engine_api_key != settings.engine_api_key, "random"
    extraction = ExtractionEndpoint.from_settings(settings)
    assert extraction.route == "text" and extraction.api_key == settings.extraction_api_key
    env = child_env(settings)
    assert env["OCRSERVE_ENGINE_API_KEY"] == settings.engine_api_key
    assert env["OCRSERVE_EXTRACTION_API_KEY"] == extraction.api_key
    given = with_engine_keys(Settings(data_dir=tmp_path, engine_api_key="mine"))
    assert given.engine_api_key == "mine" and ExtractionEndpoint.from_settings(given).api_key == "mine"
    external = Settings(data_dir=tmp_path, recognizer="tesseract", extraction_url="http://10.0.0.9:8000/v1")
    assert with_engine_keys(external) == external, "nothing is started, so no key is made"


def test_the_extraction_client_reads_the_key_its_engine_reads(tmp_path):
    # Our engine reads OCRSERVE_ENGINE_API_KEY; setting only that must not give 401s.
    only_engine_key = Settings(data_dir=tmp_path, engine_api_key="shared")
    assert ExtractionEndpoint.from_settings(only_engine_key).api_key == "shared"
    both = Settings(data_dir=tmp_path, engine_api_key="shared", extraction_api_key="own")
    assert ExtractionEndpoint.from_settings(both).api_key == "own", "the older name still works"
    elsewhere = Settings(data_dir=tmp_path, engine_api_key="shared", extraction_url="https://llm.example/v1")
    assert ExtractionEndpoint.from_settings(elsewhere).api_key is None, "never sent to another endpoint"


@pytest.mark.slow
def test_an_engine_started_with_a_key_refuses_requests_without_it(tmp_path):
    settings = with_engine_keys(Settings(data_dir=tmp_path, recognizer="house"))
    engine, url = start_engine(settings, child_env(settings), 0, tmp_path / "engine.log", ready_timeout_s=300,
                               extra_args=("--kv-tokens", "4096"), api_key=settings.engine_api_key)
    try:
        assert httpx.get(f"{url}/models", timeout=30).status_code == 401
        assert httpx.get(f"{url}/models", timeout=30, headers={"Authorization": "Bearer wrong"}).status_code == 401
        good = httpx.get(f"{url}/models", timeout=30, headers={"Authorization": f"Bearer {settings.engine_api_key}"})
        assert good.status_code == 200
        flush = httpx.post(url.removesuffix("/v1") + "/flush_cache", timeout=30)
        assert flush.status_code == 401
    finally:
        engine.stop()
    assert settings.engine_api_key not in (tmp_path / "engine.log").read_text()


def test_compose_gives_both_engines_and_the_worker_one_required_key():
    services = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())["services"]
    required = "${OCRSERVE_ENGINE_API_KEY:?"
    for name in ("engine", "extraction", "worker"):
        assert services[name]["environment"]["OCRSERVE_ENGINE_API_KEY"].startswith(required), name
    assert services["worker"]["environment"]["OCRSERVE_EXTRACTION_API_KEY"] == "${OCRSERVE_ENGINE_API_KEY}"
    assert "OCRSERVE_ENGINE_API_KEY" not in services["api"]["environment"], "the api never needs it"
    for name, host in (("engine", "engine"), ("extraction", "extraction")):
        command = services[name]["command"]
        assert command[command.index("--allowed-host") + 1] == host
