"""`ocrserve serve` as a user starts it: one command, embedded broker, its own
worker; a job goes through over HTTP; SIGTERM stops it and everything it
started. No API key configured, so it must bind to loopback and say so.
Recognition: Tesseract (see service_harness)."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import ocr_samples as samples
from service_harness import REPO_ROOT, free_port, service_env, wait_for

pytestmark = pytest.mark.slow


def _descendants(pid: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            child = int(stat.parent.name)
            children += [child, *_descendants(child)]
    return children


def _is_alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False


def test_serve_runs_api_and_worker_and_stops_them(tmp_path):
    port = free_port()
    env = service_env(tmp_path / "data", api_keys_file=tmp_path / "no-keys")
    log = open(tmp_path / "serve.log", "wb")   # noqa: SIM115
    serve = subprocess.Popen([sys.executable, "-m", "app.commands.serve", "--host", "0.0.0.0", "--port", str(port)],
                             env=env, cwd=REPO_ROOT, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        def healthy() -> bool:
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                return httpx.get(f"{base}/health", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        wait_for(healthy, 90, what="the API")
        children = _descendants(serve.pid)
        assert children, "serve started a worker"
        answer = httpx.post(f"{base}/v1/jobs", files=[("files", ("r.pdf", samples.multi_page_pdf(2)))], timeout=30)
        assert answer.status_code == 202, answer.text
        job_id = answer.json()["id"]
        job = wait_for(lambda: (j := httpx.get(f"{base}/v1/jobs/{job_id}", timeout=10).json())["state"] in
                       ("done", "failed") and j, 120, what="the job")
        assert job["state"] == "done"
        assert samples.page_sentence(1) in httpx.get(f"{base}/v1/jobs/{job_id}/result?format=md", timeout=10).text
    finally:
        serve.send_signal(signal.SIGTERM)
        code = serve.wait(60)
        log.close()
    output = (tmp_path / "serve.log").read_text()
    assert code == 0, output
    assert "no API key is configured, so the API binds to 127.0.0.1 only, not 0.0.0.0" in output
    assert "broker: embedded SQLite" in output
    time.sleep(0.5)
    alive = [pid for pid in children if _is_alive(pid)]
    assert not alive, f"serve left processes behind: {alive}"
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{base}/health", timeout=2)
