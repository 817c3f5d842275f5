"""The Celery tasks: thin wrappers over `JobRunner`, each with its time limits,
acks_late (a task is acknowledged only after it has run, so a worker killed
mid-task leaves it to be redelivered) and JSON payloads of ids only.

    process_job(job_id) -> dispatch_pages: each key's pages up to its quota -> process_page(job_id, file, page, n)
    process_page ends -> dispatch_pages again (the owner's next page) -> finish_job(job_id) once none is pending

Pages are sent a quota per key at a time (`workers.dispatch`), not all at once,
so keys share the workers. Only `RecognizerUnavailableError` is retried (page
tasks, bounded, exponential backoff with full jitter). The last attempt does not
raise: the page's regions fall back to the text layer or are marked failed, and
anything else a page task raises is recorded as a failed page. A page whose
worker process dies is redelivered, and after `page_max_lost_runs` such deaths
it is failed instead (`JobRunner.run_page`). A page task killed by its hard time
limit, a send lost in a crash and a finisher that died are found by the
recovery sweep each worker runs (`workers.recovery`). `finish_job` writes the
results in resumable steps; cut short by its time limit it sends itself again
to go on from where it stopped, a bounded number of times.

This module is imported by worker processes only: the API and the CLI send
tasks by name (`workers.job_service`) and never load the pipeline.
"""
from __future__ import annotations

import logging
import threading

from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_init, worker_ready
from kombu.exceptions import KombuError

from workers.celery_app import FINISH_JOB, PROCESS_JOB, PROCESS_PAGE, RESCUE_JOB, build_celery_app
from workers.data_dir import DataDir
from workers.dispatch import dispatch_pages
from workers.job_runner import JobRunner
from workers.job_store import JobStore
from workers.recognizers.base import RecognizerUnavailableError
from workers.recognizers.registry import build_recognizer
from workers.recovery import RecoverySweeper, recover
from workers.settings import HARD_LIMIT_GRACE_S, Settings
from workers.webhooks import WebhookSender

logger = logging.getLogger("ocrserve.workers")

settings = Settings()
celery_app = build_celery_app(settings)
# Tries of a finish task cut short by its time limit (each goes on from where the last stopped).
FINISH_MAX_RETRIES = 5

_runner: JobRunner | None = None


@worker_process_init.connect
def _load_vision_models(**_: object) -> None:
    """Each pool process loads the layout and line models as it starts, while it waits for its
    first page (and `ocrserve run`'s engine loads), not inside that page. In a thread: Celery
    gives a starting process a few seconds to report in; a page that comes first waits on the
    models' load lock. OpenCV's own threads are held to the process's share of the cores as
    well (`Settings.page_threads`; OpenBLAS's by OMP_NUM_THREADS, which `start_worker` sets)."""
    import cv2

    cv2.setNumThreads(settings.page_threads)

    def load() -> None:
        from vision.layout import LayoutDetector
        from vision.lines import LineDetector

        try:
            LayoutDetector(settings.page_threads)
            LineDetector(settings.page_threads)
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
    if not pending:   # every page already recorded (a job task sent again)
        finish_job.delay(job_id)
        return
    dispatch_pages(celery_app, runner().store, settings.max_pages_in_flight_per_key)


@celery_app.task(name=PROCESS_PAGE, bind=True, acks_late=True, ignore_result=True,
                 autoretry_for=(RecognizerUnavailableError,), max_retries=settings.page_max_retries,
                 retry_backoff=settings.page_retry_backoff_s, retry_backoff_max=120, retry_jitter=True,
                 soft_time_limit=settings.page_time_limit_s,
                 time_limit=settings.page_time_limit_s + HARD_LIMIT_GRACE_S)
def process_page(self, job_id: str, file_index: int, page_index: int, dispatch: int | None = None) -> str:
    """`dispatch`: the send this task carries (None in tasks sent before sends were numbered)."""
    final_attempt = self.request.retries >= self.max_retries
    try:
        state = runner().run_page(job_id, file_index, page_index, final_attempt, dispatch)
    except RecognizerUnavailableError:
        runner().store.release_page(job_id, file_index, page_index)   # a retry, not a lost run
        raise   # retried by the decorator
    except Exception as exc:   # a failed page task would hold its job open: record the page instead
        logger.exception("page %d of file %d in job %s could not be recorded", page_index + 1, file_index + 1, job_id)
        reason = (f"the page took longer than its {settings.page_time_limit_s} s time limit"
                  if isinstance(exc, SoftTimeLimitExceeded) else f"internal error ({type(exc).__name__})")
        runner().give_up_page(job_id, file_index, page_index, reason)
        state = "failed"
    _page_ended(job_id)
    return state


def _page_ended(job_id: str) -> None:
    """Release the owner's next pages; the task that sees its job's last page end sends the finisher."""
    store = runner().store
    try:
        dispatch_pages(celery_app, store, settings.max_pages_in_flight_per_key)
        if store.is_active(job_id) and not store.has_pending_pages(job_id):
            finish_job.delay(job_id)
    except (KombuError, OSError):   # the page is recorded; the recovery sweep sends what could not be sent
        logger.warning("could not send the next tasks after a page of job %s", job_id, exc_info=True)


@celery_app.task(name=FINISH_JOB, bind=True, acks_late=True, ignore_result=True, max_retries=FINISH_MAX_RETRIES,
                 soft_time_limit=settings.job_time_limit_s, time_limit=settings.job_time_limit_s + HARD_LIMIT_GRACE_S)
def finish_job(self, job_id: str) -> None:
    try:
        runner().finish_job(job_id)   # False (pages pending): the last page's task sends this again
    except SoftTimeLimitExceeded:
        if self.request.retries >= self.max_retries:
            runner().fail_unfinishable(job_id, f"the results could not be written in {self.max_retries + 1} tries "
                                               f"of {settings.job_time_limit_s} s")
            return
        raise self.retry(countdown=0) from None


@celery_app.task(name=RESCUE_JOB, bind=True, acks_late=True, ignore_result=True, max_retries=30,
                 soft_time_limit=settings.job_time_limit_s, time_limit=settings.job_time_limit_s + HARD_LIMIT_GRACE_S)
def rescue_job(self, job_id: str) -> None:
    """The error callback of chords sent before pages were dispatched by quota."""
    if not runner().rescue_job(job_id):
        raise self.retry(countdown=settings.page_time_limit_s // 10 + 1)


@worker_ready.connect
def _recover_after_start(sender, **_: object) -> None:
    """Send what a crash left unsent (and, on the embedded broker, everything unfinished: its
    queue forgets messages a dead worker had taken), then sweep again every interval."""
    DataDir(settings.data_dir).ensure()
    store = JobStore(settings.job_store_location)
    try:
        recover(celery_app, store, settings, at_start=settings.uses_embedded_broker)
    except Exception:   # the sweep tries again
        logger.exception("recovery at start-up failed")
    RecoverySweeper(celery_app, store, settings).start()
    WebhookSender(store, settings).start()   # jobs' webhook deliveries, queued by whichever process changed the job
