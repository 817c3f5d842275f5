"""Real services for the API tests: a Redis server (session), one Celery worker
process on it (session), and the FastAPI app through TestClient on the same
data directory and broker. Two API keys, so isolation can be checked.

The service harness and the sample documents live beside the workers tests.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workers"))

from api_helpers import KEY_ALICE, KEY_BOB  # noqa: E402
from service_harness import RedisServer, WorkerProcess, service_env  # noqa: E402


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def api_settings(tmp_path_factory, redis_server):
    from workers.settings import Settings

    return Settings(data_dir=tmp_path_factory.mktemp("api-data"), broker_url=redis_server.url,
                    api_keys=f"{KEY_ALICE},{KEY_BOB}", render_dpi=100, max_upload_bytes=2_000_000, max_pages=20,
                    page_time_limit_s=18, broker_visibility_timeout_s=30)


@pytest.fixture(scope="session")
def worker(api_settings, redis_server):
    process = WorkerProcess(service_env(api_settings.data_dir, redis_server.url),
                            Path(api_settings.data_dir) / "worker.log")
    process.wait_ready()
    yield process
    process.stop()


@pytest.fixture(scope="session")
def client(api_settings, worker):
    from fastapi.testclient import TestClient

    from app.main import create_app

    with TestClient(create_app(api_settings)) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def live_services(tmp_path_factory):
    """`ocrserve api` and a worker of their own (embedded broker), shared by the webhook and
    live-progress tests (tests/app/live_services.py)."""
    from live_services import start_live_services

    services = start_live_services(tmp_path_factory.mktemp("live"))
    yield services
    services.stop()
