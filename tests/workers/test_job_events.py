"""The job event log on both databases: every state change in order, numbered
without gaps even with many writers, never seen out of order by a reader, gone
with its job; webhook deliveries queued only for the events that matter."""
from __future__ import annotations

import threading

from workers import database, job_events, webhook_deliveries
from workers.job_model import JobFile, JobOptions, JobState, PageState
from workers.job_store import JobStore

NUM_PAGES = 12


def _job(store: JobStore, callback_url: str | None = None, num_pages: int = 3) -> str:
    job_id = store.new_job_id()
    store.create_job(job_id, "alice", [JobFile("a.pdf", "pdf", num_pages, "0" * 64, tuple(range(num_pages)))],
                     JobOptions(("md",), callback_url=callback_url))
    return job_id


def _events(store: JobStore, job_id: str, after: int = 0) -> list[job_events.JobEvent]:
    with database.read(store.engine) as db:
        return job_events.events_after(db, job_id, after)


def _save(store: JobStore, job_id: str, page_index: int, state: PageState = PageState.DONE) -> bool:
    assert store.claim_page(job_id, 0, page_index) is not None
    return store.save_page(job_id, 0, page_index, state, "unreadable" if state is PageState.FAILED else None, {})


def test_a_jobs_life_is_logged_in_order_with_page_counts(store_location):
    store = JobStore(store_location)
    job_id = _job(store)
    store.mark_job_running(job_id)
    _save(store, job_id, 0)
    _save(store, job_id, 1, PageState.FAILED)
    assert not store.save_page(job_id, 0, 1, PageState.DONE, None, {})   # a duplicate run: no event
    _save(store, job_id, 2)
    store.finish_job(job_id, JobState.DONE)
    events = _events(store, job_id)
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6]
    assert [e.type for e in events] == ["job.queued", "job.running", "page.done", "page.failed", "page.done",
                                        "job.done"]
    assert events[3].data == {"file": 1, "page": 2, "state": "failed", "reason": "unreadable", "pages_total": 3,
                              "pages_done": 2, "pages_failed": 1}
    assert events[-1].is_terminal and events[-1].data["pages_done"] == 3
    assert [e.seq for e in _events(store, job_id, after=4)] == [5, 6]


def test_cancel_and_stale_pages_are_logged_and_events_go_with_their_job(store_location):
    store = JobStore(store_location)
    job_id = _job(store)
    store.mark_job_running(job_id)
    store.claim_page(job_id, 0, 0)
    store.claim_page(job_id, 0, 2)
    assert store.fail_stale_pages(job_id, older_than_s=-1, reason="killed") == 2
    store.cancel_job(job_id)
    assert [(e.type, e.data.get("page")) for e in _events(store, job_id)][2:] == [
        ("page.failed", 1), ("page.failed", 3), ("job.cancelled", None)]
    assert store.delete_job(job_id, "alice")
    assert _events(store, job_id) == []


def test_many_writers_number_a_jobs_events_without_gaps_and_readers_never_see_a_hole(store_location):
    """Page saves from several threads at once (each its own transaction), while a reader reads
    as a stream would: every read it makes is a gap-free run after what it had."""
    store = JobStore(store_location)
    job_id = _job(store, num_pages=NUM_PAGES)
    store.mark_job_running(job_id)
    seen: list[int] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set() or len(seen) < NUM_PAGES + 2:
            for event in _events(store, job_id, seen[-1] if seen else 0):
                assert event.seq == (seen[-1] if seen else 0) + 1, f"event {event.seq} read after {seen[-1:]}"
                seen.append(event.seq)

    def write(pages: range) -> None:
        for page_index in pages:
            _save(store, job_id, page_index)

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(range(k, NUM_PAGES, 4),)) for k in range(4)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    reader.join(30)
    assert seen == list(range(1, NUM_PAGES + 3))
    assert sorted(e.data["pages_done"] for e in _events(store, job_id) if e.kind == "page") == list(
        range(1, NUM_PAGES + 1))


def test_only_failed_pages_and_the_jobs_end_are_queued_for_its_callback(store_location):
    store = JobStore(store_location)
    job_id = _job(store, callback_url="https://hooks.example.org/ocr")
    silent = _job(store)
    for job in (job_id, silent):
        store.mark_job_running(job)
        _save(store, job, 0)
        _save(store, job, 1, PageState.FAILED)
        _save(store, job, 2)
        store.finish_job(job, JobState.DONE)
    with database.read(store.engine) as db:
        queued = webhook_deliveries.for_job(db, job_id)
        assert webhook_deliveries.for_job(db, silent) == []
        types = [job_events.event(db, job_id, d.event_seq).type for d in queued]
    assert types == ["page.failed", "job.done"]
    assert {(d.url, d.state, d.attempts) for d in queued} == {("https://hooks.example.org/ocr", "pending", 0)}
