"""A page that kills its worker process ends: real Celery workers, on the embedded
broker and on a real Redis, whose pool process really dies (`os._exit`) on a
page carrying a marker word. Without a bound it is redelivered for ever; with
one it is failed after `page_max_lost_runs` deaths, with its PDF text layer as
fallback text, and the job finishes.

The worker is `ocrserve worker` started through a test launcher that wraps the
page pipeline before the pool forks (the product code carries no test hook).
"""
from __future__ import annotations

import json
import subprocess
import sys

import pymupdf
import pytest

import ocr_samples as samples
from service_harness import REPO_ROOT, RedisServer, WorkerProcess, service_env, wait_for
from workers.job_model import JobState, PageState
from workers.job_service import JobService, Upload
from workers.settings import Settings

pytestmark = pytest.mark.slow
MARKER = "POISONPAGE"
MAX_LOST_RUNS = 2
LAUNCHER = f"""
import os, sys
from workers.page_pipeline import PagePipeline

_process = PagePipeline.process

def process(self, document, rendered, *args, **kwargs):
    if any(word.text == {MARKER!r} for word in document.text_words(rendered.page_index, rendered.dpi)):
        os._exit(1)   # a crash of the pool process, as a segfault or the OOM killer would end it
    return _process(self, document, rendered, *args, **kwargs)

PagePipeline.process = process
from app.commands import run_subcommand
sys.exit(run_subcommand("worker", sys.argv[1:]))
"""


class CrashingWorker(WorkerProcess):
    """`ocrserve worker` whose pool process dies on any page that carries MARKER."""

    def __init__(self, env, log_path):
        self.log_path = log_path
        self._log = open(log_path, "ab")   # noqa: SIM115 - closed in stop()
        self._log_start = log_path.stat().st_size
        self.process = subprocess.Popen([sys.executable, "-c", LAUNCHER, "--loglevel", "info"], env=env,
                                        cwd=REPO_ROOT, stdout=self._log, stderr=self._log, start_new_session=True)


def _poisoned_pdf() -> bytes:
    """Three pages; the second carries the marker (and a sentence the text layer still has)."""
    doc = pymupdf.open(stream=samples.multi_page_pdf(3), filetype="pdf")
    doc[1].insert_text((72, 300), f"{MARKER} kills the reader", fontname="helv", fontsize=16)
    return doc.tobytes()


@pytest.fixture(params=["embedded", "redis"])
def broker_url(request, tmp_path_factory):
    if request.param == "embedded":
        yield None
        return
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server.url
    server.stop()


def test_a_page_that_kills_its_worker_is_failed_after_a_few_deaths_and_the_job_ends(tmp_path, broker_url):
    settings = Settings(data_dir=tmp_path, broker_url=broker_url, render_dpi=100, page_max_lost_runs=MAX_LOST_RUNS)
    service = JobService(settings)
    job = service.submit("tester", [Upload("poisoned.pdf", _poisoned_pdf())])
    worker = CrashingWorker(service_env(tmp_path, broker_url, worker_concurrency=1,
                                        page_max_lost_runs=MAX_LOST_RUNS), tmp_path / "worker.log").wait_ready()
    try:
        finished = wait_for(lambda: (j := service.store.get_job(job.id)).state.is_final and j, 240, what="job end")
    finally:
        worker.stop()
    log = worker.log_text()
    assert log.count("WorkerLostError") >= MAX_LOST_RUNS, log[-3000:]

    assert finished.state is JobState.DONE
    first, poisoned, third = finished.pages
    assert (first.state, third.state) == (PageState.DONE, PageState.DONE)
    assert poisoned.state is PageState.FAILED
    assert (poisoned.lost_runs, poisoned.attempts) == (MAX_LOST_RUNS, MAX_LOST_RUNS + 1)
    assert f"died {MAX_LOST_RUNS} times" in poisoned.reason and "text layer" in poisoned.reason
    assert poisoned.regions_fallback > 0, "the page's own text layer stands in for it"

    result = json.loads(service.result_path(finished, "json").read_text())
    page = result["documents"][0]["pages"][1]
    assert page["state"] == "failed"
    assert samples.page_sentence(1) in " ".join(region["text"] for region in page["regions"])
    assert {region["status"] for region in page["regions"]} == {"fallback"}
    with pymupdf.open(service.result_path(finished, "pdf")) as pdf:
        assert pdf.page_count == 3
    assert not (tmp_path / "results" / job.id / "pages").exists(), "per-page PDFs are removed once joined"
