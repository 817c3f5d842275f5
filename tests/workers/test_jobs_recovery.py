"""Recovery on a real Redis: a job a crash left stored but unsent is sent by the
next worker's start-up sweep and finishes; the sweep also sends again a page
whose task was lost, a finisher that never came, and deletes jobs past their
retention with their files.
"""
from __future__ import annotations

import time

import pytest
from sqlalchemy import text

import ocr_samples as samples
from service_harness import RedisServer, WorkerProcess, service_env, wait_for
from workers.celery_app import build_celery_app
from workers.job_model import JobState, PageState
from workers.job_service import JobService, Upload
from workers.recovery import UNSENT_GRACE_S, recover
from workers.settings import Settings


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server.url
    server.stop()


def _age(service: JobService, job_id: str, **columns_s_ago: float) -> None:
    """Move the job's timestamps into the past (what time and a crash would have done)."""
    now = time.time()
    with service.store.engine.begin() as db:
        for column, seconds_ago in columns_s_ago.items():
            table = "pages" if column == "dispatched_at" else "jobs"
            key = "job_id" if table == "pages" else "id"
            db.execute(text(f"UPDATE {table} SET {column} = :t WHERE {key} = :id"),
                       {"t": now - seconds_ago, "id": job_id})


def _stored_but_never_sent(service: JobService, data: bytes) -> str:
    """What `JobService.submit` leaves when the process dies between storing the job and sending it."""
    class NoBroker:
        def send_task(self, *args, **kwargs):
            raise SystemExit("killed between storing the job and sending it")

    service._celery_app = NoBroker()
    with pytest.raises(SystemExit):
        service.submit("tester", [Upload("report.pdf", data)])
    service._celery_app = None
    [job] = service.list("tester", 1)
    assert job.state is JobState.QUEUED
    return job.id


@pytest.mark.slow
def test_a_job_a_crash_left_unsent_is_sent_by_the_next_worker_and_finishes(tmp_path, redis_url):
    broker_url = redis_url.rsplit("/", 1)[0] + "/2"
    service = JobService(Settings(data_dir=tmp_path, broker_url=broker_url, render_dpi=100))
    job_id = _stored_but_never_sent(service, samples.multi_page_pdf(2))
    _age(service, job_id, created_at=UNSENT_GRACE_S + 1)
    worker = WorkerProcess(service_env(tmp_path, broker_url), tmp_path / "worker.log").wait_ready()
    try:
        job = wait_for(lambda: (j := service.store.get_job(job_id)).state.is_final and j, 180, what="job end")
    finally:
        worker.stop()
    assert job.state is JobState.DONE and [p.attempts for p in job.pages] == [1, 1]
    assert "re-queued 1 unfinished job" in worker.log_text()


def test_the_sweep_sends_lost_pages_again_and_deletes_expired_jobs(tmp_path, redis_url):
    broker_url = redis_url.rsplit("/", 1)[0] + "/3"
    settings = Settings(data_dir=tmp_path, broker_url=broker_url, render_dpi=100, max_pages_in_flight_per_key=1,
                        job_retention_days=30)
    service = JobService(settings)
    app = build_celery_app(settings)
    lost = service.submit("tester", [Upload("lost.pdf", samples.multi_page_pdf(2))])
    service.store.mark_job_running(lost.id)
    [first] = service.store.admit_pages(quota=1)   # marked sent; the message never reached the broker
    old = service.submit("tester", [Upload("old.pdf", samples.multi_page_pdf(1))])
    service.store.cancel_job(old.id)
    recent = service.submit("tester", [Upload("recent.pdf", samples.multi_page_pdf(1))])
    service.store.cancel_job(recent.id)
    _age(service, old.id, finished_at=31 * 24 * 3600)

    recover(app, service.store, settings)
    assert service.store.get_job(lost.id).pages[0].state is PageState.QUEUED
    assert service.store.admit_pages(quota=1) == [], "the page sent recently is still in flight"
    _age(service, lost.id, dispatched_at=settings.broker_visibility_timeout_s + 1)
    recover(app, service.store, settings)
    assert service.store.admit_pages(quota=1) == [], "the sweep sent page 1 again: it is in flight"
    assert service.store.claim_page(lost.id, 0, 0, first.dispatch) is None, "the lost send, if it ever came, is void"
    assert service.store.claim_page(lost.id, 0, 0, first.dispatch + 1) is not None

    assert service.store.get_job(old.id) is None and not (tmp_path / "uploads" / old.id).exists()
    assert service.store.get_job(recent.id) is not None and (tmp_path / "uploads" / recent.id).exists()
    kept = settings.model_copy(update={"job_retention_days": 0})
    _age(service, recent.id, finished_at=365 * 24 * 3600)
    recover(app, service.store, kept)
    assert service.store.get_job(recent.id) is not None, "retention 0 keeps every job"


def test_a_page_task_killed_past_its_hard_limit_is_sent_again_and_counts_a_lost_run(tmp_path, redis_url):
    """Celery acknowledges a task its hard time limit killed, so nothing redelivers it: the sweep does."""
    broker_url = redis_url.rsplit("/", 1)[0] + "/4"
    settings = Settings(data_dir=tmp_path, broker_url=broker_url, render_dpi=100, page_time_limit_s=20,
                        broker_visibility_timeout_s=60)
    service = JobService(settings)
    app = build_celery_app(settings)
    job = service.submit("tester", [Upload("slow.pdf", samples.multi_page_pdf(1))])
    service.store.mark_job_running(job.id)
    [sent] = service.store.admit_pages(quota=1)
    assert service.store.claim_page(job.id, 0, 0, sent.dispatch).lost_runs == 0
    recover(app, service.store, settings)
    assert service.store.admit_pages(quota=1) == [], "a page within its time limit may still be running"

    with service.store.engine.begin() as db:   # its task started longer ago than any task may run
        db.execute(text("UPDATE pages SET updated_at = :t WHERE job_id = :id"),
                   {"t": time.time() - 20 - 10 - 31, "id": job.id})
    recover(app, service.store, settings)
    claim = service.store.claim_page(job.id, 0, 0, sent.dispatch + 1)
    assert claim is not None and claim.lost_runs == 1
