"""The real service for the browser tests, and the browser.

`ApiProcess` runs `python -m app.commands.api` (what `ocrserve api` runs) on a
free port, next to the Redis server and Celery worker from the workers'
service harness; `launch_browser` starts Debian's Chromium through
Playwright (never a downloaded browser) with a fresh profile.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
from playwright.sync_api import BrowserContext, Page, Playwright, expect

from service_harness import REPO_ROOT, free_port, wait_for

KEY = "web-test-key"
OTHER_KEY = "web-other-key"
UPLOAD_CAP_BYTES = 300_000
CHROMIUM = "/usr/bin/chromium"
# Headless, offline, and no sandbox: the tests run as root, where Chromium's sandbox cannot start.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS_DIR = REPO_ROOT / "artifacts" / "web"
LAPTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


class ApiProcess:
    def __init__(self, env: dict[str, str], log_path: Path):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = open(log_path, "ab")   # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app.commands.api", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env, cwd=REPO_ROOT, stdout=self._log, stderr=self._log)

    def wait_ready(self, timeout_s: float = 60) -> ApiProcess:
        def healthy() -> bool:
            assert self.process.poll() is None, f"the API exited:\n{self.log_path.read_text()[-3000:]}"
            try:
                return httpx.get(f"{self.base_url}/health", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        wait_for(healthy, timeout_s, what="the API")
        return self

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log.close()


def assert_web_libraries() -> None:
    """The page's Markdown libraries are installed (node_modules, by scripts/setup.sh's npm ci)."""
    from app.web_ui import NODE_MODULES, VENDOR_DIRS

    missing = [folder for folder in VENDOR_DIRS.values() if not (NODE_MODULES / folder).is_dir()]
    assert not missing, f"{', '.join(missing)} missing under {NODE_MODULES}: run scripts/setup.sh (npm ci)"


def launch_browser(playwright: Playwright, profile_dir: Path) -> BrowserContext:
    assert Path(CHROMIUM).is_file(), f"{CHROMIUM} is missing: scripts/setup.sh installs Debian's chromium package"
    return playwright.chromium.launch_persistent_context(
        str(profile_dir), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, viewport=LAPTOP,
        accept_downloads=True, locale="en-GB", timezone_id="UTC")


def screenshot(page: Page, name: str, full_page: bool = False) -> Path:
    """Keep a screenshot as a test artefact (artifacts/web/NAME.png, gitignored)."""
    SCREENSHOTS_DIR.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS_DIR / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def sign_in(page: Page, base_url: str, key: str = KEY) -> None:
    page.goto(f"{base_url}/")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#workspace")).to_be_visible()


def region_index_with(page: Page, words: str) -> str:
    """The data-region index of the text item that contains `words`."""
    item = page.locator("#region-list > li", has_text=words)
    expect(item).to_have_count(1)
    return item.get_attribute("data-region")


def page_problems(page: Page) -> list[str]:
    """Uncaught errors and console errors, except the browser's own note on each non-2xx answer."""
    return [text for text in page.problems if "Failed to load resource" not in text]


def finished_job(base_url: str, filename: str, content: bytes, timeout_s: float = 120, **form: str) -> dict:
    """Sends one file as a job through the API and waits for it to be done; returns the job."""
    import time

    headers = {"Authorization": f"Bearer {KEY}"}
    answer = httpx.post(f"{base_url}/v1/jobs", headers=headers, timeout=30, data=form,
                        files=[("files", (filename, content, "application/pdf"))])
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["id"]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = httpx.get(f"{base_url}/v1/jobs/{job_id}", headers=headers, timeout=10).json()
        if job["state"] in ("done", "failed", "cancelled"):
            assert job["state"] == "done", job
            return job
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} ({filename}) did not finish in {timeout_s} s")


def result_json(base_url: str, job_id: str) -> dict:
    answer = httpx.get(f"{base_url}/v1/jobs/{job_id}/result?format=json", headers={"Authorization": f"Bearer {KEY}"},
                       timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def delete_job(base_url: str, job_id: str) -> None:
    """Removes a finished job, so the next test's list starts as it found it."""
    httpx.delete(f"{base_url}/v1/jobs/{job_id}/record", headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
