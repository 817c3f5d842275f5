"""`ocrserve serve` supervises its children (issue 33, finding 2): SIGKILL of its worker, then of
its engine (the house model on our engine), each seen at once in GET /health as `degraded` with
the reason, each started again; a job submitted afterwards is read through the restarted engine
and completes. Before the fix /health said `ok` with the worker dead and new jobs stayed queued.
`ocrserve status` reports the children from the report `serve` writes."""
from __future__ import annotations

import json
import os
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

KEY = "supervision-key"
HEADERS = {"Authorization": f"Bearer {KEY}"}


def _health(base: str) -> dict | None:
    try:
        return httpx.get(f"{base}/health", timeout=5).json()
    except httpx.TransportError:
        return None


def _child_is(base: str, name: str, ok: bool, restarts: int) -> dict | None:
    health = _health(base)
    child = (health or {}).get("children", {}).get(name)
    if child is None or child["ok"] != ok or child["restarts"] != restarts:
        return None
    return health


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False


def test_serve_restarts_a_killed_worker_and_engine_and_reports_degraded_meanwhile(tmp_path):
    port = free_port()
    data = tmp_path / "data"
    env = service_env(data, api_keys=KEY, recognizer="house", engine_port=free_port(),
                      extraction_url="http://127.0.0.1:9/v1", page_retry_backoff_s=1)
    log = open(tmp_path / "serve.log", "wb")   # noqa: SIM115
    serve = subprocess.Popen([sys.executable, "-m", "app.commands.serve", "--port", str(port)],
                             env=env, cwd=REPO_ROOT, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    pids: list[int] = []
    try:
        def up() -> dict | None:
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            health = _health(base)
            return health if health and health["status"] == "ok" and "children" in health else None

        health = wait_for(up, 300, what="serve")
        assert set(health["children"]) == {"engine", "worker"}, health
        for name, signalled in (("worker", "the worker was killed by SIGKILL"),
                                ("engine", "the engine was killed by SIGKILL")):
            pid = json.loads((data / "serve-children.json").read_text())["children"][name]["pid"]
            pids.append(pid)
            os.kill(pid, signal.SIGKILL)
            down = wait_for(lambda: _child_is(base, name, False, 0), 60, interval_s=0.05,
                            what=f"/health to report the dead {name}")
            assert down["status"] == "degraded" and signalled in down["children"][name]["detail"], down
            back = wait_for(lambda: _child_is(base, name, True, 1), 300, what=f"the {name} to be started again")
            assert back["status"] == "ok", back
            pids.append(back["children"][name]["pid"])

        status = subprocess.run([sys.executable, "-m", "app.cli", "status"], env=env, cwd=REPO_ROOT,
                                capture_output=True, text=True, timeout=120)
        assert "engine:" in status.stdout and "restarted 1 time(s)" in status.stdout, status.stdout + status.stderr

        # Submitted after both restarts: read through the new engine by the new worker.
        answer = httpx.post(f"{base}/v1/jobs", headers=HEADERS, data={"text_layer": "never"},
                            files=[("files", ("r.pdf", samples.multi_page_pdf(1), "application/pdf"))], timeout=60)
        assert answer.status_code == 202, answer.text
        job_id = answer.json()["id"]
        job = wait_for(lambda: (j := httpx.get(f"{base}/v1/jobs/{job_id}", headers=HEADERS, timeout=10).json())
                       ["state"] in ("done", "failed") and j, 300, what="the job")
        assert job["state"] == "done" and job["pages"][0]["state"] == "done", job
    finally:
        serve.send_signal(signal.SIGTERM)
        code = serve.wait(90)
        log.close()
    output = (tmp_path / "serve.log").read_text()
    assert code == 0, output
    assert "the worker was killed by SIGKILL; starting it again" in output, output
    assert "the engine is running again" in output, output
    time.sleep(0.5)
    assert not [pid for pid in pids if _alive(pid)], "serve left a child behind"
    assert not (data / "serve-children.json").exists()
