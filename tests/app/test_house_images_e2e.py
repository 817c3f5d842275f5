"""The default recogniser end to end on page IMAGES (PNG and JPEG, no text layer to fall back to):
through `ocrserve run` and through `ocrserve serve` (REST), every region `ok` and recognised, and a
character error rate against the page's known text (tests/workers/house_pages.py).

No OCRSERVE_RECOGNIZER is set, so both commands use the house model on our engine, which they
start and stop themselves, as a fresh checkout does. `run` is also forced (`--force` redoes an
input already done).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx
import pytest

import house_pages as pages
from service_harness import REPO_ROOT, free_port, wait_for

pytestmark = pytest.mark.slow

KEY = "house-images-key"


def _clean_env(**settings: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("OCRSERVE_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["OMP_NUM_THREADS"] = "1"
    env.update({f"OCRSERVE_{name.upper()}": value for name, value in settings.items()})
    return env


def _run(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.commands.run", *argv, "--quiet"], env=_clean_env(),
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)


def test_run_reads_png_and_jpeg_pages_with_the_house_model(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "report.png").write_bytes(pages.report_png())
    (folder / "report-scan.jpg").write_bytes(pages.report_jpeg())
    out = tmp_path / "out"

    first = _run(tmp_path, str(folder), "--out", str(out), "--formats", "json,md")
    assert first.returncode == 0, first.stderr
    assert "2 input(s): 2 done, 0 failed, 0 skipped" in first.stderr, first.stderr
    for name in ("report", "report-scan"):
        pages.assert_read_by_the_model((out / f"{name}.json").read_text())
        assert pages.TITLE in (out / f"{name}.md").read_text()

    # Done inputs are skipped on a second run (test_app_cli_run.py) unless forced.
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("*.json")}
    forced = _run(tmp_path, str(folder / "report.png"), "--out", str(out), "--formats", "json,md", "--force")
    assert forced.returncode == 0 and "1 input(s): 1 done, 0 failed, 0 skipped" in forced.stderr, forced.stderr
    assert (out / "report.json").stat().st_mtime_ns != stamps[out / "report.json"], "--force did not redo it"
    pages.assert_read_by_the_model((out / "report.json").read_text())


def test_serve_reads_png_and_jpeg_uploads_with_the_house_model(tmp_path):
    port = free_port()
    log_path = tmp_path / "serve.log"
    env = _clean_env(data_dir=str(tmp_path / "data"), api_keys=KEY, worker_concurrency="1", render_dpi="150")
    with open(log_path, "wb") as log:
        serve = subprocess.Popen([sys.executable, "-m", "app.commands.serve", "--host", "127.0.0.1",
                                  "--port", str(port)], env=env, cwd=tmp_path, stdout=log, stderr=log,
                                 start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {KEY}"}
    try:
        def healthy() -> bool:
            assert serve.poll() is None, log_path.read_text()
            try:
                return httpx.get(f"{base}/health", timeout=5).status_code == 200
            except httpx.TransportError:
                return False

        wait_for(healthy, 300, what="serve")
        answer = httpx.post(f"{base}/v1/jobs", headers=headers, timeout=60, data={"formats": "json,md"},
                            files=[("files", ("report.png", pages.report_png(), "image/png")),
                                   ("files", ("report-scan.jpg", pages.report_jpeg(), "image/jpeg"))])
        assert answer.status_code == 202, answer.text
        job_id = answer.json()["id"]

        def finished():
            job = httpx.get(f"{base}/v1/jobs/{job_id}", headers=headers, timeout=30).json()
            return job["state"] in ("done", "failed", "cancelled") and job

        job = wait_for(finished, 480, what="the job")
        assert job["state"] == "done", job
        result = httpx.get(f"{base}/v1/jobs/{job_id}/result", params={"format": "json"}, headers=headers,
                           timeout=60)
        assert result.status_code == 200, result.text
        data = result.json()
        assert len(data["documents"]) == 2
        for document in data["documents"]:
            pages.assert_read_by_the_model({"documents": [document]})
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        code = serve.wait(120)
    assert code == 0, log_path.read_text()[-4000:]
