"""A worker killed mid-job (SIGKILL, pool and all) and started again: on Redis
the unacknowledged page tasks come back after the visibility timeout (30 s
here), and the job finishes with every page exactly once. Its own Redis
database and data directory keep it apart from the session's worker.
"""
from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

import ocr_samples as samples
from api_helpers import auth, upload, wait_for_job
from service_harness import WorkerProcess, service_env, wait_for

pytestmark = pytest.mark.slow
NUM_PAGES = 6


def test_a_killed_worker_loses_and_duplicates_no_page(redis_server, api_settings, tmp_path):
    from fastapi.testclient import TestClient

    from app.main import create_app

    broker_url = redis_server.url.rsplit("/", 1)[0] + "/1"
    settings = api_settings.model_copy(update={"data_dir": tmp_path, "broker_url": broker_url})
    env = service_env(tmp_path, broker_url, page_time_limit_s=settings.page_time_limit_s,
                      broker_visibility_timeout_s=settings.broker_visibility_timeout_s)
    log = Path(tmp_path) / "worker.log"
    with TestClient(create_app(settings)) as client:
        answer = client.post("/v1/jobs", headers=auth(), files=upload(("report.pdf", samples.multi_page_pdf(NUM_PAGES))))
        assert answer.status_code == 202, answer.text
        job_id = answer.json()["id"]

        first = WorkerProcess(env, log).wait_ready()
        try:
            wait_for(lambda: client.get(f"/v1/jobs/{job_id}", headers=auth()).json()["pages_done"] >= 2, 120,
                     what="two pages done")
        finally:
            first.kill()
        at_kill = client.get(f"/v1/jobs/{job_id}", headers=auth()).json()
        assert at_kill["state"] == "running" and at_kill["pages_done"] < NUM_PAGES

        second = WorkerProcess(env, log).wait_ready()
        try:
            job = wait_for_job(client, job_id, timeout_s=150)
        finally:
            second.stop()
        assert job["state"] == "done", job
        assert [(p["page"], p["state"]) for p in job["pages"]] == [(n, "done") for n in range(1, NUM_PAGES + 1)]
        done_at_kill = {p["page"] for p in at_kill["pages"] if p["state"] == "done"}
        assert all(p["attempts"] == 1 for p in job["pages"] if p["page"] in done_at_kill), "a finished page was redone"

        result = client.get(f"/v1/jobs/{job_id}/result?format=json", headers=auth()).json()
        pages = result["documents"][0]["pages"]
        assert [p["page"] for p in pages] == list(range(1, NUM_PAGES + 1))
        for page_no, page in enumerate(pages):
            text = " ".join(region["text"] for region in page["regions"])
            assert text.count("page number") == 1 and samples.page_sentence(page_no) in text
        pdf_bytes = client.get(f"/v1/jobs/{job_id}/result?format=pdf", headers=auth()).content
    with pymupdf.open(stream=pdf_bytes, filetype="pdf") as pdf:
        assert [samples.PAGE_WORDS[n] in pdf[n].get_text() for n in range(pdf.page_count)] == [True] * NUM_PAGES
    stored = json.loads((Path(tmp_path) / "results" / job_id / "result.json").read_text())
    assert stored == result
