"""Live progress in the real browser: the jobs list follows a running job through
its EventSource (page chips and state change as the job store changes, with no
detail poll that could have brought them), and falls back to polling every second
when the stream cannot be opened.

The API runs alone on a data directory of its own, with no worker: the test moves
its job through the job store itself, so every change the page shows is one the
test made, at a moment it chose.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from service_harness import service_env
from web_harness import KEY, ApiProcess, page_problems, screenshot, sign_in

pytestmark = pytest.mark.slow
NUM_PAGES = 3
LIVE_MS = 4000   # a stream reads new events every 0.5 s; the list's own poll, with streams live, every 5 s


@pytest.fixture(scope="module")
def lone_api(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("live-web")
    process = ApiProcess(service_env(data_dir, api_keys=KEY), data_dir / "api.log").wait_ready()
    process.data_dir = data_dir
    yield process
    process.stop()


@pytest.fixture
def store(lone_api):
    from workers.job_store import JobStore

    return JobStore(lone_api.data_dir / "jobs.sqlite")


def _queued_job(store, name: str) -> str:
    from app.api_keys import hash_key
    from workers.job_model import JobFile, JobOptions

    job_id = store.new_job_id()
    store.create_job(job_id, hash_key(KEY), [JobFile(name, "pdf", NUM_PAGES, "0" * 64, tuple(range(NUM_PAGES)))],
                     JobOptions(("md",)))
    return job_id


def _save(store, job_id: str, page_index: int, state) -> None:
    assert store.claim_page(job_id, 0, page_index) is not None
    assert store.save_page(job_id, 0, page_index, state, "nothing could be read" if state.value == "failed" else None,
                           {})


def test_the_jobs_list_follows_a_running_job_through_its_event_stream(lone_api, store, page: Page):
    from workers.job_model import JobState, PageState

    streams = []
    page.on("request", lambda request: streams.append(request.url) if request.resource_type == "eventsource" else None)
    job_id = _queued_job(store, "live-report.pdf")
    sign_in(page, lone_api.base_url)
    job = page.locator("#job-list > li.job", has_text="live-report.pdf")
    expect(job).to_have_attribute("data-progress", "stream")
    assert any(f"/v1/jobs/{job_id}/events?token=" in url for url in streams)
    store.mark_job_running(job_id)
    expect(job).to_have_attribute("data-state", "running", timeout=LIVE_MS)
    # Saving a page changes no job field the list shows, so the page chip can only come from the stream.
    _save(store, job_id, 0, PageState.DONE)
    expect(job.locator(".page-chips > li").nth(0)).to_have_class("chip page-done", timeout=LIVE_MS)
    expect(job.locator(".job-count")).to_have_text("1 of 3 pages done")
    _save(store, job_id, 1, PageState.FAILED)
    expect(job.locator(".page-chips > li").nth(1)).to_have_class("chip page-failed", timeout=LIVE_MS)
    expect(job.locator(".job-count")).to_have_text("2 of 3 pages done · 1 failed")
    screenshot(page, "live-progress-streaming")
    _save(store, job_id, 2, PageState.DONE)
    store.finish_job(job_id, JobState.DONE)
    expect(job).to_have_attribute("data-state", "done", timeout=LIVE_MS)
    expect(job.get_by_role("button", name="Open result of live-report.pdf")).to_be_visible()
    assert page_problems(page) == []


def test_a_stream_that_cannot_be_opened_falls_back_to_polling(lone_api, store, page: Page):
    from workers.job_model import PageState

    page.route("**/v1/jobs/*/events?*", lambda route: route.fulfill(status=503, body=""))
    job_id = _queued_job(store, "polled-report.pdf")
    store.mark_job_running(job_id)
    sign_in(page, lone_api.base_url)
    job = page.locator("#job-list > li.job", has_text="polled-report.pdf")
    expect(job).to_have_attribute("data-state", "running")
    expect(job).to_have_attribute("data-progress", "poll")
    _save(store, job_id, 0, PageState.DONE)
    expect(job.locator(".page-chips > li").nth(0)).to_have_class("chip page-done", timeout=LIVE_MS)
    expect(job.locator(".job-count")).to_have_text("1 of 3 pages done")
    store.cancel_job(job_id)
    expect(job).to_have_attribute("data-state", "cancelled", timeout=LIVE_MS)


def test_a_cut_stream_resumes_from_the_last_event_it_saw(lone_api, store, page: Page):
    """The first stream ends after one event: the browser's EventSource reconnects by itself; that
    answer is refused (as an expired token would be), so the page opens a new stream with a fresh
    token and ?last_event_id=, and the job's progress goes on from there."""
    from workers.job_model import PageState

    job_id = _queued_job(store, "resumed-report.pdf")
    seen: list[str] = []

    def cut(route) -> None:
        request = route.request
        seen.append(request.url)
        if len(seen) == 1:
            body = 'id: 1\nevent: job\ndata: {"id": 1, "type": "job.queued", "state": "queued", "error": null, ' \
                   '"pages_total": 3, "pages_done": 0, "pages_failed": 0}\n\n'
            route.fulfill(status=200, body=body, headers={"Content-Type": "text/event-stream"})
        elif len(seen) == 2:
            route.fulfill(status=401, body="")
        else:
            route.continue_()

    page.route(f"**/v1/jobs/{job_id}/events?*", cut)
    sign_in(page, lone_api.base_url)
    job = page.locator("#job-list > li.job", has_text="resumed-report.pdf")
    expect(job).to_have_attribute("data-state", "queued")
    store.mark_job_running(job_id)
    _save(store, job_id, 0, PageState.DONE)
    expect(job.locator(".page-chips > li").nth(0)).to_have_class("chip page-done", timeout=LIVE_MS)
    # On a loaded machine the list's own poll can bring the chip before the EventSource's retry
    # delay is over: wait for the three requests themselves (their order is what is checked).
    for _ in range(LIVE_MS // 100):
        if len(seen) >= 3:
            break
        page.wait_for_timeout(100)
    assert len(seen) >= 3, seen
    assert seen[1] == seen[0]   # the browser reconnected by itself
    assert "last_event_id=1" in seen[2] and seen[2] != seen[0]   # the page reopened it, with a fresh token
    expect(job).to_have_attribute("data-progress", "stream")


def test_past_three_running_jobs_the_rest_are_polled_until_a_stream_frees(lone_api, store, page: Page):
    """The page keeps under the key's stream cap: three streams, the fourth job polled, streamed
    once one of the three ends."""
    for earlier in store.unfinished_job_ids():
        store.cancel_job(earlier)
    job_ids = [_queued_job(store, f"batch-{n}.pdf") for n in range(4)]
    sign_in(page, lone_api.base_url)
    active = page.locator("#job-list > li.job[data-state='queued']")
    expect(active).to_have_count(4)
    expect(page.locator("#job-list > li.job[data-state='queued'][data-progress='stream']")).to_have_count(3)
    polled = page.locator("#job-list > li.job[data-state='queued'][data-progress='poll']")
    expect(polled).to_have_count(1)
    waiting = polled.get_attribute("data-job-id")
    store.cancel_job(next(job_id for job_id in job_ids if job_id != waiting))
    expect(page.locator(f"#job-list > li.job[data-job-id='{waiting}']")).to_have_attribute(
        "data-progress", "stream", timeout=LIVE_MS + 5000)   # the list's next poll gives it the freed stream
    assert page_problems(page) == []
