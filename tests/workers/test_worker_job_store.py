"""The job store's state rules: forward-only states, claims, duplicate writes, cancellation."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from workers.job_model import JobFile, JobOptions, JobState, PageState
from workers.job_store import JobStore


@pytest.fixture()
def store(store_location):
    return JobStore(store_location)


def _job(store: JobStore, owner: str = "alice", pages: tuple[int, ...] = (0, 1, 2)) -> str:
    job_id = store.new_job_id()
    files = [JobFile("a.pdf", "pdf", 5, "0" * 64, pages), JobFile("b.png", "png", 1, "1" * 64, (0,))]
    store.create_job(job_id, owner, files, JobOptions(("md", "json")))
    return job_id


def test_a_new_job_is_queued_with_its_pages_in_order(store):
    job = store.get_job(_job(store))
    assert job.state is JobState.QUEUED
    assert [(p.file_index, p.page_index) for p in job.pages] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert all(p.state is PageState.QUEUED for p in job.pages)
    assert (job.pages_done, job.pages_total) == (0, 4)
    assert job.options.formats == ("md", "json")


def test_a_recorded_page_is_never_claimed_or_written_again(store):
    job_id = _job(store)
    assert store.claim_page(job_id, 0, 1)
    assert store.claim_page(job_id, 0, 1), "a running page can be claimed again (its worker may have died)"
    assert store.save_page(job_id, 0, 1, PageState.DONE, None, {"n": 1}, (3, 0, 0))
    assert not store.claim_page(job_id, 0, 1)
    assert not store.save_page(job_id, 0, 1, PageState.DONE, None, {"n": 2}, (3, 0, 0))
    assert store.page_results(job_id) == {(0, 1): {"n": 1}}
    page = store.get_job(job_id).pages[1]
    assert (page.state, page.attempts, page.regions_ok) == (PageState.DONE, 2, 3)
    assert store.pending_pages(job_id) == [(0, 0), (0, 2), (1, 0)]


def test_cancelling_stops_claims_and_is_final(store):
    job_id = _job(store)
    store.mark_job_running(job_id)
    assert store.claim_page(job_id, 0, 0)
    assert store.cancel_job(job_id)
    assert not store.claim_page(job_id, 0, 1)
    assert not store.save_page(job_id, 0, 0, PageState.DONE, None, {}), "a page running when cancelled is not recorded"
    assert not store.finish_job(job_id, JobState.DONE)
    job = store.get_job(job_id)
    assert job.state is JobState.CANCELLED and job.finished_at is not None
    assert {p.state for p in job.pages} == {PageState.CANCELLED}
    assert not store.cancel_job(job_id)
    assert job_id not in store.unfinished_job_ids()


def test_a_failed_job_fails_its_unfinished_pages_with_the_reason(store):
    job_id = _job(store)
    store.save_page(job_id, 0, 0, PageState.DONE, None, {})
    assert store.finish_job(job_id, JobState.FAILED, "a.pdf cannot be read")
    job = store.get_job(job_id)
    assert job.error == "a.pdf cannot be read"
    assert [p.state for p in job.pages] == [PageState.DONE] + [PageState.FAILED] * 3
    assert job.pages[1].reason == "a.pdf cannot be read"


def test_jobs_are_listed_per_owner_newest_first(store):
    first, second = _job(store, "alice"), _job(store, "alice")
    _job(store, "bob")
    assert [job.id for job in store.list_jobs("alice", limit=10)] == [second, first]
    assert [job.id for job in store.list_jobs("alice", limit=1, offset=1)] == [first]
    assert len(store.list_jobs("bob", limit=10)) == 1
    assert store.unfinished_job_ids()[:2] == [first, second]


def test_the_store_survives_reopening(store_location):
    job_id = _job(JobStore(store_location))
    assert JobStore(store_location).get_job(job_id).pages_total == 4


def test_a_page_left_running_past_the_hard_limit_is_failed_by_the_rescue(tmp_path):
    """What the chord's error callback does after a page task was killed by its hard time limit."""
    import time

    from workers.job_runner import JobRunner
    from workers.recognizers.tesseract import TesseractRecognizer
    from workers.settings import HARD_LIMIT_GRACE_S, Settings

    settings = Settings(data_dir=tmp_path, page_time_limit_s=60)
    runner = JobRunner(settings, TesseractRecognizer())
    job_id = runner.store.new_job_id()
    runner.store.create_job(job_id, "alice", [JobFile("a.pdf", "pdf", 2, "0" * 64, (0, 1))], JobOptions(("txt",)))
    runner.store.mark_job_running(job_id)
    assert runner.store.claim_page(job_id, 0, 0) and runner.store.claim_page(job_id, 0, 1)
    assert not runner.rescue_job(job_id), "pages still within their time limit may yet finish"
    with runner.store.engine.begin() as db:   # page 1 started longer ago than any task may run
        db.execute(text("UPDATE pages SET updated_at = :t WHERE page_index = 0"),
                   {"t": time.time() - settings.page_time_limit_s - HARD_LIMIT_GRACE_S - 1})
    assert not runner.rescue_job(job_id)
    runner.store.save_page(job_id, 0, 1, PageState.DONE, None, {"file_index": 0, "page": 2, "width": 10, "height": 10,
                                                                 "dpi": 72, "regions": []})
    assert runner.rescue_job(job_id)
    job = runner.store.get_job(job_id)
    assert job.state is JobState.DONE and [p.state for p in job.pages] == [PageState.FAILED, PageState.DONE]
    assert "hard time limit" in job.pages[0].reason
    assert runner.data_dir.result_path(job_id, "txt").exists()


def test_a_job_stored_before_the_text_layer_option_loads_with_auto(store):
    job_id = _job(store)
    assert store.get_job(job_id).options.text_layer == "auto"
    never = store.new_job_id()
    store.create_job(never, "alice", [JobFile("a.pdf", "pdf", 1, "0" * 64, (0,))], JobOptions(("md",), text_layer="never"))
    assert store.get_job(never).options.text_layer == "never"
    # A record written before the option existed has no text_layer in its options.
    with store.engine.begin() as db:
        db.execute(text("UPDATE jobs SET options = :o WHERE id = :id"),
                   {"o": json.dumps({"formats": ["md"], "dpi": None}), "id": never})
    old = store.get_job(never)
    assert old.options == JobOptions(("md",)) and old.options.text_layer == "auto"
