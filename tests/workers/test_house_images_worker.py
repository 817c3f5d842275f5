"""A real Celery worker process (embedded broker) recognising page IMAGES with the house model on
our engine (its own `engine.server` process, with a key), not Tesseract: every region `ok` and
recognised, the text within a character error rate of the page's (house_pages.py)."""
from __future__ import annotations

import json

import pytest

import house_pages as pages
from service_harness import WorkerProcess, service_env, wait_for
from service_harness import house_engine as start_house_engine
from workers.job_model import JobState, PageState
from workers.job_service import JobService, Upload
from workers.settings import Settings

pytestmark = pytest.mark.slow

ENGINE_KEY = "house-worker-engine-key"


@pytest.fixture(scope="module")
def house_engine():
    with start_house_engine("--api-key", ENGINE_KEY) as url:
        yield url


def test_a_worker_reads_png_and_jpeg_pages_with_the_house_model(tmp_path, house_engine):
    env = service_env(tmp_path, recognizer="house", engine_url=house_engine, engine_api_key=ENGINE_KEY,
                      render_dpi=150, worker_concurrency=1)
    worker = WorkerProcess(env, tmp_path / "worker.log").wait_ready()
    try:
        service = JobService(Settings(data_dir=tmp_path, render_dpi=150))
        job = service.submit("tester", [Upload("report.png", pages.report_png()),
                                        Upload("report-scan.jpg", pages.report_jpeg())], formats="json")
        done = wait_for(lambda: (j := service.store.get_job(job.id)).state.is_final and j, 480, what="the job")
    finally:
        worker.stop()
    assert done.state is JobState.DONE, (done.error, worker.log_text()[-3000:])
    assert [page.state for page in done.pages] == [PageState.DONE, PageState.DONE]
    data = json.loads(service.result_path(done, "json").read_text())
    assert len(data["documents"]) == 2
    for document in data["documents"]:
        pages.assert_read_by_the_model({"documents": [document]})


def test_a_worker_host_with_its_own_engine_reads_pages_and_stops_the_engine_with_it(tmp_path):
    """`ocrserve worker --with-engine`: a worker host that starts the house engine on its loopback
    (as `serve` does), with a key of its own making, and ends it when the worker ends."""
    env = service_env(tmp_path, recognizer="house", render_dpi=150, worker_concurrency=1,
                      extraction_url="http://127.0.0.1:9/v1")   # extraction elsewhere: only the OCR engine here
    worker = WorkerProcess(env, tmp_path / "worker.log", extra_args=("--with-engine",)).wait_ready(300)
    try:
        assert "starting the engine (house-ocr)" in worker.log_text()
        service = JobService(Settings(data_dir=tmp_path, render_dpi=150))
        job = service.submit("tester", [Upload("report.png", pages.report_png())], formats="json")
        done = wait_for(lambda: (j := service.store.get_job(job.id)).state.is_final and j, 480, what="the job")
        engines = _engine_pids(worker.process.pid)
        assert len(engines) == 1, "one engine, the worker's child"
    finally:
        worker.stop()
    assert done.state is JobState.DONE, (done.error, worker.log_text()[-3000:])
    pages.assert_read_by_the_model(json.loads(service.result_path(done, "json").read_text()))
    wait_for(lambda: not _alive(engines[0]), 30, what="the engine to stop with its worker")


def _engine_pids(parent: int) -> list[int]:
    import psutil

    return [child.pid for child in psutil.Process(parent).children()
            if "engine.server" in " ".join(child.cmdline())]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
