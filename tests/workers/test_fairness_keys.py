"""Keys share the workers: a key's pages go to the broker a quota at a time
(`JobStore.admit_pages`, `workers.dispatch`), so a big job sent first does not
sit in front of another key's small one. The store's admission rules, then a
real worker on the embedded broker, where the order in which jobs end is checked
(not how long they took).
"""
from __future__ import annotations

import pytest

import ocr_samples as samples
from service_harness import WorkerProcess, service_env, wait_for
from workers.job_model import JobFile, JobOptions, JobState, PageState
from workers.job_service import JobService, Upload
from workers.job_store import JobStore
from workers.settings import Settings


def _job(store: JobStore, owner: str, num_pages: int) -> str:
    job_id = store.new_job_id()
    store.create_job(job_id, owner, [JobFile("a.pdf", "pdf", num_pages, "0" * 64, tuple(range(num_pages)))],
                     JobOptions(("md",)))
    store.mark_job_running(job_id)
    return job_id


def test_each_key_gets_its_quota_in_turn_and_a_finished_page_releases_the_next(store_location):
    store = JobStore(store_location)
    big, second_big = _job(store, "alice", 50), _job(store, "alice", 5)
    small = _job(store, "bob", 2)
    admitted = store.admit_pages(quota=3)
    assert [(p.job_id, p.page_index) for p in admitted] == [
        (big, 0), (small, 0), (big, 1), (small, 1), (big, 2)], "owners take turns, oldest job first"
    assert store.admit_pages(quota=3) == [], "nothing more until a page ends"

    page = admitted[0]
    assert store.claim_page(page.job_id, page.file_index, page.page_index, page.dispatch)
    store.save_page(page.job_id, page.file_index, page.page_index, PageState.DONE, None, {})
    assert [(p.job_id, p.page_index) for p in store.admit_pages(quota=3)] == [(big, 3)]

    store.cancel_job(big)   # a cancelled job's pages stop counting: the key's next job goes on
    assert [(p.job_id, p.page_index) for p in store.admit_pages(quota=3)] == [(second_big, 0), (second_big, 1),
                                                                               (second_big, 2)]


def test_a_page_sent_again_makes_its_earlier_task_a_no_op(store_location):
    store = JobStore(store_location)
    job_id = _job(store, "alice", 1)
    [first] = store.admit_pages(quota=1)
    assert store.forget_dispatches() == 1   # e.g. the embedded broker emptied at start-up
    [again] = store.admit_pages(quota=1)
    assert again.dispatch == first.dispatch + 1
    assert store.claim_page(job_id, 0, 0, first.dispatch) is None, "the superseded task does nothing"
    assert store.claim_page(job_id, 0, 0, again.dispatch) is not None


@pytest.mark.slow
def test_a_small_job_of_one_key_ends_before_a_big_job_another_key_sent_first(tmp_path):
    settings = Settings(data_dir=tmp_path, render_dpi=100, max_pages_in_flight_per_key=2)
    service = JobService(settings)
    # Both are queued before the worker starts: the big job's start task is first in the queue.
    big = service.submit("alice", [Upload("big.pdf", samples.multi_page_pdf(8))], formats="md")
    small = service.submit("bob", [Upload("small.pdf", samples.multi_page_pdf(1))], formats="md")
    worker = WorkerProcess(service_env(tmp_path, worker_concurrency=1, max_pages_in_flight_per_key=2),
                           tmp_path / "worker.log").wait_ready()
    try:
        small_done = wait_for(lambda: (j := service.store.get_job(small.id)).state.is_final and j, 240,
                              what="the small job's end")
        big_at_small_end = service.store.get_job(big.id)
        big_done = wait_for(lambda: (j := service.store.get_job(big.id)).state.is_final and j, 240,
                            what="the big job's end")
    finally:
        worker.stop()
    assert small_done.state is JobState.DONE and big_done.state is JobState.DONE
    assert big_at_small_end.pages_done < big_at_small_end.pages_total, "the small job waited for the whole big one"
    assert small_done.finished_at < big_done.finished_at
    assert max(p.attempts for p in big_done.pages) == 1
