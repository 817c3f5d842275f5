"""Re-queueing unfinished jobs when the embedded-broker worker starts.

The embedded broker (SQLite through kombu's SQLAlchemy transport) marks a
message taken as soon as a worker receives it; if that worker is killed the
message is gone. The job store still knows every unfinished job, so the worker
empties its queue and sends each unfinished job again. A page already recorded
is skipped when its job runs again; a page that was running starts over.
Nothing is lost, and no page is written twice.

This is safe because the embedded set-up runs exactly one worker (with its own
pool of processes): a second worker on the same data directory would re-queue
the first one's work (duplicating effort, never results). With Redis, the
broker itself redelivers (visibility timeout) and this is not used.
"""
from __future__ import annotations

import logging

from celery import Celery

from workers.celery_app import PROCESS_JOB
from workers.job_store import JobStore

logger = logging.getLogger("ocrserve.workers")


def requeue_unfinished_jobs(app: Celery, store: JobStore) -> list[str]:
    """Purge the queue and send every unfinished job again; returns their ids."""
    app.control.purge()
    job_ids = store.unfinished_job_ids()
    for job_id in job_ids:
        app.send_task(PROCESS_JOB, args=[job_id])
    if job_ids:
        logger.warning("re-queued %d unfinished job(s) from the job store", len(job_ids))
    return job_ids
