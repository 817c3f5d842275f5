"""Real services for the browser tests: Redis, one Celery worker (Tesseract as
the recogniser, see tests/workers/service_harness.py), the API as its own
process with the web UI, and headless Chromium driven by Playwright.

The API runs with a small upload cap (web_harness.UPLOAD_CAP_BYTES), so the oversized-file
test needs no large file; the generated documents are far below it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workers"))

from service_harness import RedisServer, WorkerProcess, free_port, service_env  # noqa: E402
from web_harness import KEY, OTHER_KEY, UPLOAD_CAP_BYTES, ApiProcess, launch_browser  # noqa: E402


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def service_data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("web-data")


@pytest.fixture(scope="session")
def worker(service_data_dir, redis_server):
    # Schema extraction goes to a port where nothing listens, tried once: its failure must reach the page in words.
    env = service_env(service_data_dir, redis_server.url, extraction_url=f"http://127.0.0.1:{free_port()}/v1",
                      extraction_retries=0)
    process = WorkerProcess(env, service_data_dir / "worker.log")
    process.wait_ready()
    yield process
    process.stop()


@pytest.fixture(scope="session")
def api(service_data_dir, redis_server):
    """The API alone; a test whose jobs must run asks for `worker` as well."""
    env = service_env(service_data_dir, redis_server.url, api_keys=f"{KEY},{OTHER_KEY}",
                      max_upload_bytes=UPLOAD_CAP_BYTES, max_pages=20)
    process = ApiProcess(env, service_data_dir / "api.log").wait_ready()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory):
    # Module scope, not session: Playwright's sync API keeps an event loop running in
    # this thread while it lives, and later tests' asyncio.run() would refuse to start.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = launch_browser(playwright, tmp_path_factory.mktemp("chromium-profile"))
        context.set_default_timeout(15_000)
        yield context
        context.close()


@pytest.fixture
def page(browser_context):
    """A fresh tab: sessionStorage (where the key is kept) starts empty."""
    tab = browser_context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
    tab.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    tab.problems = problems
    yield tab
    tab.close()
