"""The API host's own sweep of its local copies, when files are shared through the job store's
database (`OCRSERVE_BLOB_STORE=database`).

The API keeps files in its data directory that the shared store also holds: each upload (written
here, then published), uploads fetched back to render page images for the web page, and those
images. The workers' retention sweep deletes a job's rows and blobs, and its own host's files,
but cannot reach another host's disk; so every `recovery_interval_s` this API drops its copies of
jobs the store no longer has (`JobService.prune_deleted_jobs`). Copies of jobs that still exist
are kept (the web page's page images are rendered once), and so are those of a submission still
storing its uploads.
"""
from __future__ import annotations

import logging
import threading

from workers.job_service import JobService

logger = logging.getLogger("ocrserve.app")


class LocalCopySweeper(threading.Thread):
    def __init__(self, jobs: JobService, interval_s: float):
        super().__init__(name="ocrserve-local-copies", daemon=True)
        self.jobs, self.interval_s = jobs, interval_s
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.interval_s):
            try:
                removed = self.jobs.prune_deleted_jobs()
                if removed:
                    logger.info("dropped this host's copies of %d deleted job(s)", removed)
            except Exception:   # a database hiccup: the next sweep tries again
                logger.exception("sweeping this host's copies of deleted jobs failed")

    def stop(self) -> None:
        self.stopped.set()
