"""The Celery tasks: thin wrappers over `JobRunner`, each with its time limits,
acks_late (a task is acknowledged only after it has run, so a worker killed
mid-task leaves it to be redelivered) and JSON payloads of ids only.

    process_job(job_id) --chord--> process_page(job_id, file, page) x N --> finish_job(job_id)
                                                            (on chord error) --> rescue_job(job_id)

Only `RecognizerUnavailableError` is retried (page tasks, bounded, exponential
backoff with full jitter). The last attempt does not raise: the page's regions
fall back to the text layer or are marked failed, and anything else a page task
raises is recorded as a failed page, so the chord completes. Only the hard time
limit (the pool kills the process) can still fail a page task; `rescue_job`, the
chord's error callback, then fails the pages left running and finishes the job.
`finish_job` retries itself (for up to a visibility timeout and a page time limit)
if it ever runs while a redelivered page is still pending.

This module is imported by worker processes only: the API and the CLI send
tasks by name (`workers.job_service`) and never load the pipeline.
"""
from __future__ import annotations

import logging
import threading

from celery import chord
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_init, worker_ready

from workers.celery_app import FINISH_JOB, PROCESS_JOB, PROCESS_PAGE, RESCUE_JOB, build_celery_app
from workers.data_dir import DataDir
from workers.job_runner import JobRunner
from workers.job_store import JobStore
from workers.recognizer import RecognizerUnavailableError, build_recognizer
from workers.recovery import requeue_unfinished_jobs
from workers.settings import HARD_LIMIT_GRACE_S, Settings

logger = logging.getLogger("ocrserve.workers")

settings = Settings()
celery_app = build_celery_app(settings)
FINISH_RETRY_S = 5
# Long enough for a page the chord counted early (a task redelivered after it
# had already stored its result) to come back from the broker and finish.
FINISH_MAX_RETRIES = (settings.broker_visibility_timeout_s + settings.page_time_limit_s + HARD_LIMIT_GRACE_S) \
    // FINISH_RETRY_S + 12

_runner: JobRunner | None = None


@worker_process_init.connect
def _load_vision_models(**_: object) -> None:
    """Each pool process loads the layout and line models as it starts, while it waits for its
    first page (and `ocrserve run`'s engine loads), not inside that page. In a thread: Celery
    gives a starting process a few seconds to report in; a page that comes first waits on the
    models' load lock."""
    def load() -> None:
        from vision.layout import LayoutDetector
        from vision.lines import LineDetector

        try:
            LayoutDetector(settings.vision_num_threads)
            LineDetector(settings.vision_num_threads)
        except Exception:   # the first page loads them again and reports what is wrong
            logger.exception("could not load the vision models at start-up")

    threading.Thread(target=load, name="load-vision-models", daemon=True).start()


def runner() -> JobRunner:
    """One per worker process, made on first use (after the prefork fork)."""
    global _runner
    if _runner is None:
        _runner = JobRunner(settings, build_recognizer(settings))
    return _runner


@celery_app.task(name=PROCESS_JOB, acks_late=True, ignore_result=True,
                 soft_time_limit=settings.job_time_limit_s, time_limit=settings.job_time_limit_s + HARD_LIMIT_GRACE_S)
def process_job(job_id: str) -> None:
    pending = runner().start_job(job_id)
    if pending is None:
        return
    if not pending:   # every page already recorded (a redelivered job task)
        finish_job.delay(job_id)
        return
    finish = finish_job.si(job_id)
    finish.link_error(rescue_job.si(job_id))
    chord(process_page.si(job_id, file_index, page_index) for file_index, page_index in pending)(finish)


@celery_app.task(name=PROCESS_PAGE, bind=True, acks_late=True,
                 autoretry_for=(RecognizerUnavailableError,), max_retries=settings.page_max_retries,
                 retry_backoff=settings.page_retry_backoff_s, retry_backoff_max=120, retry_jitter=True,
                 soft_time_limit=settings.page_time_limit_s,
                 time_limit=settings.page_time_limit_s + HARD_LIMIT_GRACE_S)
def process_page(self, job_id: str, file_index: int, page_index: int) -> str:
    final_attempt = self.request.retries >= self.max_retries
    try:
        return runner().run_page(job_id, file_index, page_index, final_attempt)
    except RecognizerUnavailableError:
        raise   # retried by the decorator
    except Exception as exc:   # a failed header task would stop the chord: record the page instead
        logger.exception("page %d of file %d in job %s could not be recorded", page_index + 1, file_index + 1, job_id)
        reason = (f"the page took longer than its {settings.page_time_limit_s} s time limit"
                  if isinstance(exc, SoftTimeLimitExceeded) else f"internal error ({type(exc).__name__})")
        runner().give_up_page(job_id, file_index, page_index, reason)
        return "failed"


@celery_app.task(name=FINISH_JOB, bind=True, acks_late=True, ignore_result=True, max_retries=FINISH_MAX_RETRIES,
                 soft_time_limit=settings.job_time_limit_s, time_limit=settings.job_time_limit_s + HARD_LIMIT_GRACE_S)
def finish_job(self, job_id: str) -> None:
    if not runner().finish_job(job_id):
        raise self.retry(countdown=FINISH_RETRY_S)


@celery_app.task(name=RESCUE_JOB, bind=True, acks_late=True, ignore_result=True, max_retries=FINISH_MAX_RETRIES,
                 soft_time_limit=settings.job_time_limit_s, time_limit=settings.job_time_limit_s + HARD_LIMIT_GRACE_S)
def rescue_job(self, job_id: str) -> None:
    """The chord's error callback: a page task failed outright (only a hard time limit can do that)."""
    if not runner().rescue_job(job_id):
        raise self.retry(countdown=FINISH_RETRY_S)


@worker_ready.connect
def _requeue_after_restart(sender, **_: object) -> None:
    if settings.uses_embedded_broker:
        requeue_unfinished_jobs(celery_app, JobStore(DataDir(settings.data_dir).job_store_path))
