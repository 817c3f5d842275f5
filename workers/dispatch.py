"""Fair admission of page tasks: the broker holds at most a quota of each key's pages.

A job's pages wait in the job store until `dispatch_pages` sends them. It is
called when a job starts, whenever a page ends, and by the recovery sweep;
each call tops every owner (API key) up to `max_pages_in_flight_per_key` pages
sent and not yet final, owners taking turns. So one key's 20,000 pages are
never all in the queue in front of another key's work: the broker's FIFO
interleaves every key's few pages, and each finished page releases its
owner's next one.

Every send carries the page's dispatch number (`JobStore.admit_pages`); a page
sent again (recovery) gets a new number, and a task carrying an older one finds
its page not claimable and does nothing, so a page is never run twice at once.
"""
from __future__ import annotations

from celery import Celery
from kombu.exceptions import KombuError

from workers.celery_app import PROCESS_PAGE
from workers.job_store import JobStore


def dispatch_pages(app: Celery, store: JobStore, quota: int) -> int:
    """Send the pages the quota admits; returns how many."""
    admitted = store.admit_pages(quota)
    for sent, page in enumerate(admitted):
        try:
            app.send_task(PROCESS_PAGE, args=[page.job_id, page.file_index, page.page_index, page.dispatch])
        except (KombuError, OSError):
            store.forget_dispatch(admitted[sent:])   # sent later, by the next page's end or the sweep
            raise
    return len(admitted)
