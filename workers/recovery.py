"""Recovery: what a crash left unsent, lost or unfinished is found in the job
store and sent again; finished jobs past their retention are deleted.

Every worker runs `recover` when it starts and then every
`recovery_interval_s` (`RecoverySweeper`), on either broker:

| left behind                                         | found as                                 | done                   |
|-----------------------------------------------------|------------------------------------------|------------------------|
| a job stored but its start task never sent (crash)  | queued, never sent, older than a minute  | start task sent        |
| a start task lost on the way                        | queued, sent longer ago than the visibility timeout | sent again  |
| a page task lost, or killed past its hard limit     | sent and untaken past the visibility timeout, or running past the hard limit | sent again (new number) |
| a finisher that died                                | running, no page pending, lease expired  | finish task sent       |
| finished jobs past `job_retention_days`             | finished_at                              | rows and files deleted |

Sending again is always safe: a job's start task does nothing to a running
job, a page sent again carries a new dispatch number so its older task is
skipped, and one finisher at a time holds a job's lease. A page run again
after its worker died counts a lost run, so a page that kills workers ends.

The embedded broker (SQLite through kombu's SQLAlchemy transport) forgets a
message as soon as a worker takes it, so a worker killed mid-task loses it.
Its one worker therefore starts by emptying its queue and sending every
unfinished job's work again (`at_start`). With Redis the broker itself
redelivers a dead worker's tasks after the visibility timeout, and the
sweep's thresholds stay above it.
"""
from __future__ import annotations

import logging
import threading
import time

from celery import Celery

from workers.celery_app import FINISH_JOB, PROCESS_JOB
from workers.blob_store import BlobStore, blob_store_for, prune_local_copies
from workers.data_dir import DataDir
from workers.dispatch import dispatch_pages
from workers.job_model import JobState
from workers.job_store import JobStore
from workers.settings import HARD_LIMIT_GRACE_S, Settings

logger = logging.getLogger("ocrserve.workers")
UNSENT_GRACE_S = 60   # a job stored this long ago and still unsent was left by a crash, not in the middle of a submit
RUNNING_MARGIN_S = 30
DAY_S = 24 * 3600


def recover(app: Celery, store: JobStore, settings: Settings, at_start: bool = False) -> list[str]:
    """One sweep; returns the ids of the jobs it sent work for. `at_start`: the embedded
    broker's lone worker starting, which purges its queue and sends every unfinished job again."""
    now = time.time()
    if at_start:
        app.control.purge()
        store.forget_dispatches()
        store.release_finish()
        queued = store.job_ids_in_state(JobState.QUEUED)
    else:
        store.forget_dispatches(sent_before=now - settings.broker_visibility_timeout_s,
                                running_since_before=now - settings.page_time_limit_s - HARD_LIMIT_GRACE_S
                                - RUNNING_MARGIN_S)
        queued = store.queued_jobs_to_send(now - UNSENT_GRACE_S, now - settings.broker_visibility_timeout_s)
    for job_id in queued:
        app.send_task(PROCESS_JOB, args=[job_id])
        store.mark_job_sent(job_id)
    sent_pages = dispatch_pages(app, store, settings.max_pages_in_flight_per_key)
    finishing = store.unfinished_jobs_without_pages()
    for job_id in finishing:
        app.send_task(FINISH_JOB, args=[job_id])
    touched = queued + finishing
    if at_start:
        touched = store.unfinished_job_ids()
    if touched or sent_pages:
        logger.warning("re-queued %d unfinished job(s) from the job store (%d page(s) sent)", len(touched),
                       sent_pages)
    data_dir = DataDir(settings.data_dir)
    blobs = blob_store_for(settings, data_dir)
    delete_expired_jobs(store, data_dir, settings.job_retention_days, now, blobs)
    prune_local_copies(blobs, lambda job_ids: [job_id for job_id in job_ids if not store.is_active(job_id)])
    return touched


def delete_expired_jobs(store: JobStore, data_dir: DataDir, retention_days: float, now: float,
                        blobs: BlobStore | None = None) -> list[str]:
    """Delete jobs that finished more than `retention_days` ago, with their files (0 keeps them)."""
    if retention_days <= 0:
        return []
    job_ids = store.delete_finished_before(now - retention_days * DAY_S)
    for job_id in job_ids:
        data_dir.remove_job_files(job_id)
        if blobs is not None:
            blobs.remove_job(job_id)
    if job_ids:
        logger.info("deleted %d job(s) finished more than %g days ago", len(job_ids), retention_days)
    return job_ids


class RecoverySweeper(threading.Thread):
    """`recover` every `recovery_interval_s`, in the worker's main process."""

    def __init__(self, app: Celery, store: JobStore, settings: Settings):
        super().__init__(name="ocrserve-recovery", daemon=True)
        self.app, self.store, self.settings = app, store, settings
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.settings.recovery_interval_s):
            try:
                recover(self.app, self.store, self.settings)
            except Exception:   # a broker or disk hiccup: the next sweep tries again
                logger.exception("recovery sweep failed")
