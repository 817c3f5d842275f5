"""kill -9 loops: the worker, the API and the engine are SIGKILLed at random points while
multi-page jobs run, again and again, and restarted each time; every page ends exactly once
(nothing lost, nothing duplicated) and every job finishes.

Real processes on one data directory and the embedded broker: `ocrserve api` (jobs are
submitted and polled over HTTP), one Celery worker (`app.commands.worker`, its pool killed
with it: a crash, not a shutdown) and our engine serving the house OCR model (`--text-layer
never`, so every page is recognised through it; a page whose engine died under it is retried
and, past its retries, takes its text layer and says so). The API comes back on its port, the
engine on its port, so clients need no new address.

KILLS (x OCRSERVE_ADVERSARIAL_SCALE) kills in CI, spread over the three; the seed is printed.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import httpx
import pytest

from .conftest import report, scaled
from .services import REPO_ROOT, ApiProcess, free_port, service_env, wait_for

pytestmark = pytest.mark.slow

sys.path.insert(0, str(REPO_ROOT / "tests" / "workers"))
import ocr_samples as samples  # noqa: E402
from service_harness import WorkerProcess  # noqa: E402

KILLS = scaled(6)
PAGES_PER_JOB = 6
API_KEY = "kill-loop-key"
ENGINE_KEY = "kill-loop-engine-key"
SEED = int(os.environ.get("OCRSERVE_ADVERSARIAL_SEED", "9"))


class Engine:
    """`python -m engine.server --model house-ocr` on a fixed port, restartable."""

    def __init__(self, port: int):
        self.port = port
        self.log = tempfile.NamedTemporaryFile("w+", prefix="kill-loop-engine-", suffix=".log", delete=False)  # noqa: SIM115
        self.process: subprocess.Popen | None = None

    def start(self) -> Engine:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "engine.server", "--model", "house-ocr", "--host", "127.0.0.1", "--port",
             str(self.port), "--num-threads", "1", "--api-key", ENGINE_KEY],
            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=self.log, text=True, start_new_session=True)
        ready = self.process.stdout.readline()
        assert "ready" in ready, open(self.log.name).read()[-3000:]
        return self

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()


def submit(api: ApiProcess, name: str) -> str:
    answer = httpx.post(f"{api.base_url}/v1/jobs", headers={"Authorization": f"Bearer {API_KEY}"}, timeout=60,
                        data={"text_layer": "never", "formats": "json,md"},
                        files=[("files", (name, samples.multi_page_pdf(PAGES_PER_JOB), "application/pdf"))])
    assert answer.status_code == 202, answer.text
    return answer.json()["id"]


def get_job(api: ApiProcess, job_id: str) -> dict | None:
    try:
        return httpx.get(f"{api.base_url}/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {API_KEY}"},
                         timeout=30).json()
    except httpx.TransportError:
        return None     # the API is down (being killed or restarted)


def test_kill_9_of_worker_api_and_engine_mid_job_loses_and_duplicates_nothing(tmp_path):
    rng = random.Random(SEED)
    engine = Engine(free_port()).start()
    env = service_env(tmp_path / "data", api_keys=API_KEY, recognizer="house",
                      engine_url=f"http://127.0.0.1:{engine.port}/v1", engine_api_key=ENGINE_KEY,
                      worker_concurrency=2, page_retry_backoff_s=1, engine_connect_timeout_s=2)
    api = ApiProcess(env, tmp_path / "api.log").wait_ready()
    worker = WorkerProcess(env, tmp_path / "worker.log").wait_ready()
    victims = (["worker", "api", "engine"] * KILLS)[:KILLS]
    rng.shuffle(victims)
    jobs: list[str] = []
    kills_mid_job = {"worker": 0, "api": 0, "engine": 0}
    try:
        for victim in victims:
            unfinished = [j for j in jobs if (job := get_job(api, j)) is None or job["state"] not in
                          ("done", "failed", "cancelled")]
            if not unfinished:
                jobs.append(submit(api, f"job-{len(jobs)}.pdf"))
            time.sleep(rng.uniform(0.5, 4.0))      # a random point in the job
            running = any((job := get_job(api, j)) is not None and job["state"] in ("queued", "running")
                          for j in jobs)
            kills_mid_job[victim] += running
            if victim == "worker":
                worker.kill()
                worker = WorkerProcess(env, tmp_path / "worker.log").wait_ready()
            elif victim == "api":
                port = api.port
                api.kill()
                api = ApiProcess(env, tmp_path / "api.log", port=port).wait_ready()
            else:
                engine.kill()
                engine.start()

        def all_final():
            states = [get_job(api, j) for j in jobs]
            return all(s is not None and s["state"] in ("done", "failed", "cancelled") for s in states) and states

        finals = wait_for(all_final, 900, interval_s=1, what="every job to finish")
        results = [httpx.get(f"{api.base_url}/v1/jobs/{job_id}/result", params={"format": "json"}, timeout=60,
                             headers={"Authorization": f"Bearer {API_KEY}"}) for job_id in jobs]
    finally:
        worker.stop()
        api.stop()
        engine.stop()

    num_pages = num_fallback = 0
    for job, result in zip(finals, results):
        assert job["state"] == "done", job
        # Each page once in the store: no page lost, none recorded twice; each done (read, or from its
        # text layer past its retries, which says so): a page failed by the kills is a lost page.
        assert sorted((p["file"], p["page"]) for p in job["pages"]) == [(1, n) for n in range(1, PAGES_PER_JOB + 1)]
        assert all(p["state"] == "done" for p in job["pages"]), job
        # ... and once in the result, in order, each page's own text there exactly once.
        assert result.status_code == 200, result.text
        pages = result.json()["documents"][0]["pages"]
        assert [p["page"] for p in pages] == list(range(1, PAGES_PER_JOB + 1))
        for page_no, page in enumerate(pages):
            text = " ".join(region["text"] for region in page["regions"])
            assert text.count(samples.PAGE_WORDS[page_no % len(samples.PAGE_WORDS)]) == 1, (page_no + 1, text)
        num_pages += len(pages)
        num_fallback += sum(p["regions_fallback"] > 0 for p in job["pages"])
    assert sum(kills_mid_job.values()) >= KILLS // 2, kills_mid_job
    report("kill -9 loops", kills=KILLS, kills_mid_job=json.dumps(kills_mid_job), jobs=len(jobs), pages=num_pages,
           pages_with_fallback=num_fallback, seed=SEED)
