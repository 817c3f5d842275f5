"""Real Celery worker processes on the embedded broker (SQLite, no Redis):
the job -> pages chord, retries of a temporary recogniser error, and a worker
killed mid-job (SIGKILL) then restarted. Recognition: Tesseract (see
service_harness), or an OpenAI endpoint that is not there for the retry test.
"""
from __future__ import annotations

import json

import pymupdf
import pytest

import ocr_samples as samples
from service_harness import WorkerProcess, free_port, service_env, wait_for
from workers.job_model import JobState, PageState
from workers.job_service import JobService, Upload
from workers.settings import Settings

pytestmark = pytest.mark.slow
NUM_PAGES = 6


def _service(data_dir) -> JobService:
    return JobService(Settings(data_dir=data_dir, render_dpi=100))


def _final(service: JobService, job_id: str, timeout_s: float = 180):
    return wait_for(lambda: (job := service.store.get_job(job_id)).state.is_final and job, timeout_s, what="job end")


def test_temporary_recogniser_errors_are_retried_then_fall_back(tmp_path):
    env = service_env(tmp_path, recognizer="openai", engine_url=f"http://127.0.0.1:{free_port()}/v1",
                      engine_connect_timeout_s=1, page_max_retries=1)
    worker = WorkerProcess(env, tmp_path / "worker.log", ("--skip-check",)).wait_ready()
    try:
        service = _service(tmp_path)
        # Recognised (text layer never), so the unreachable recogniser is asked, then its text layer is the fallback.
        with_layer = service.submit("tester", [Upload("report.pdf", samples.multi_page_pdf(1))], text_layer="never")
        scan = service.submit("tester", [Upload("scan.png", samples.scanned_png())])
        done = _final(service, with_layer.id)
        failed = _final(service, scan.id)
    finally:
        worker.stop()
    assert done.state is JobState.DONE
    [page] = done.pages
    assert page.attempts == 2, "one retry, then the final attempt falls back"
    assert page.regions_fallback > 0 and "unreachable" in page.reason
    assert "Retry in" in worker.log_text()
    assert failed.state is JobState.FAILED and failed.pages[0].state is PageState.FAILED
    assert "no text layer" in failed.error


def test_a_killed_worker_loses_no_page_and_duplicates_none(tmp_path):
    env = service_env(tmp_path)
    service = _service(tmp_path)
    job = service.submit("tester", [Upload("report.pdf", samples.multi_page_pdf(NUM_PAGES))])
    first = WorkerProcess(env, tmp_path / "worker.log").wait_ready()
    try:
        wait_for(lambda: service.store.get_job(job.id).pages_done >= 2, 120, what="two pages done")
    finally:
        first.kill()
    killed_at = service.store.get_job(job.id)
    assert not killed_at.state.is_final and killed_at.pages_done < NUM_PAGES

    second = WorkerProcess(env, tmp_path / "worker.log").wait_ready()
    try:
        finished = _final(service, job.id)
    finally:
        second.stop()
    assert "re-queued 1 unfinished job" in second.log_text()
    assert finished.state is JobState.DONE
    assert [p.state for p in finished.pages] == [PageState.DONE] * NUM_PAGES
    done_before = {(p.file_index, p.page_index): p.attempts for p in killed_at.pages if p.state is PageState.DONE}
    for page in finished.pages:
        if (page.file_index, page.page_index) in done_before:
            assert page.attempts == done_before[(page.file_index, page.page_index)], "a finished page was redone"

    result = json.loads(service.result_path(finished, "json").read_text())
    pages = result["documents"][0]["pages"]
    assert [p["page"] for p in pages] == list(range(1, NUM_PAGES + 1))
    for page_no, page in enumerate(pages):
        text = " ".join(region["text"] for region in page["regions"])
        assert text.count("page number") == 1 and samples.page_sentence(page_no) in text
    with pymupdf.open(service.result_path(finished, "pdf")) as pdf:
        assert pdf.page_count == NUM_PAGES
        assert [samples.PAGE_WORDS[n] in pdf[n].get_text() for n in range(NUM_PAGES)] == [True] * NUM_PAGES
