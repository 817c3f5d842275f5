"""Live progress end to end: `GET /v1/jobs/{id}/events` from a real `ocrserve api`
process, read with httpx-sse (a Server-Sent Events client we did not write): every
event in order while a real worker runs the job, the stream's end after the job's,
exact resumption from Last-Event-ID, browser tokens, owner checks, the per-key cap,
and no open handle on the job store while streams wait."""
from __future__ import annotations

import json
import os
import time

import httpx
import pytest
from httpx_sse import connect_sse

from api_helpers import upload
from live_services import LIVE_KEY, LIVE_OTHER_KEY, LiveServices
from ocr_samples import multi_page_pdf
from service_harness import wait_for

KEY, OTHER_KEY = LIVE_KEY, LIVE_OTHER_KEY


@pytest.fixture(scope="module")
def services(live_services):
    return live_services


@pytest.fixture(scope="module")
def client(services):
    with httpx.Client(base_url=services.base_url, headers=services.headers, timeout=httpx.Timeout(30)) as api:
        yield api


def _read_all(client: httpx.Client, path: str, headers: dict[str, str] | None = None) -> list:
    with connect_sse(client, "GET", path, headers=headers or {}) as source:
        assert source.response.status_code == 200, source.response.read()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        return list(_dispatched(source.iter_sse()))


def _dispatched(events):
    """The events a browser would dispatch: httpx-sse also yields the blank line after a keep-alive
    comment as an event with no data (the specification dispatches none)."""
    return (event for event in events if event.data)


def _queued_job(services: LiveServices, key: str = KEY) -> str:
    return services.queued_job(key)


def test_a_running_job_streams_every_event_in_order_and_the_stream_ends_with_it(client):
    job_id = client.post("/v1/jobs", files=upload(("three.pdf", multi_page_pdf(3))),
                         data={"formats": "md"}).json()["id"]
    events = _read_all(client, f"/v1/jobs/{job_id}/events")   # opened while the job is queued or running
    data = [json.loads(e.data) for e in events]
    assert [int(e.id) for e in events] == list(range(1, len(events) + 1))
    assert data[0]["type"] == "job.queued" and data[-1]["type"] == "job.done"
    pages = [d for d, e in zip(data, events) if e.event == "page"]
    assert sorted(d["page"] for d in pages) == [1, 2, 3] and {d["state"] for d in pages} == {"done"}
    assert [d["pages_done"] for d in pages] == [1, 2, 3] and data[-1]["pages_total"] == 3
    assert client.get(f"/v1/jobs/{job_id}").json()["state"] == "done"


def test_last_event_id_resumes_with_exactly_the_missed_events(client):
    job_id = client.post("/v1/jobs", files=upload(("two.pdf", multi_page_pdf(2))), data={"formats": "md"}).json()["id"]
    everything = _read_all(client, f"/v1/jobs/{job_id}/events")
    for seen in (1, 3, len(everything) - 1):
        rest = _read_all(client, f"/v1/jobs/{job_id}/events", headers={"Last-Event-ID": str(seen)})
        assert [(e.id, e.event, e.data) for e in rest] == [(e.id, e.event, e.data) for e in everything[seen:]]
        by_query = _read_all(client, f"/v1/jobs/{job_id}/events?last_event_id={seen}")   # a new EventSource's way
        assert [e.data for e in by_query] == [e.data for e in everything[seen:]]
    assert client.get(f"/v1/jobs/{job_id}/events", headers={"Last-Event-ID": "x1"}).status_code == 400


def test_a_browser_token_opens_one_job_of_its_owner_only(client, services):
    job_id = client.post("/v1/jobs", files=upload(("one.pdf", multi_page_pdf(1))), data={"formats": "md"}).json()["id"]
    token = client.post(f"/v1/jobs/{job_id}/events/token").json()["token"]
    with httpx.Client(base_url=services.base_url, timeout=30) as browser:   # no key at all
        events = _read_all(browser, f"/v1/jobs/{job_id}/events?token={token}")
        assert json.loads(events[-1].data)["type"] == "job.done"
        expires, _, mac = token.partition(".")
        forged = f"{int(expires) + 3600}.{mac}"
        assert browser.get(f"/v1/jobs/{job_id}/events?token={forged}").status_code == 401
        other_job = _queued_job(services)
        assert browser.get(f"/v1/jobs/{other_job}/events?token={token}").status_code == 401
        assert browser.get(f"/v1/jobs/{job_id}/events").status_code == 401
    other = {"Authorization": f"Bearer {OTHER_KEY}"}
    assert client.get(f"/v1/jobs/{job_id}/events", headers=other).status_code == 404
    assert client.post(f"/v1/jobs/{job_id}/events/token", headers=other).status_code == 404


def _store_handles(pid: int) -> int:
    """Open file descriptors of the process on the job store's SQLite files."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += "jobs.sqlite" in os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass
    return count


def test_waiting_streams_hold_no_store_connection_are_capped_per_key_and_see_new_events(client, services):
    from workers.job_store import JobStore

    job_id = _queued_job(services)
    # The key may hold two streams (live_services.MAX_STREAMS).
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events") as first, \
            connect_sse(client, "GET", f"/v1/jobs/{job_id}/events") as second:
        assert first.response.status_code == second.response.status_code == 200
        refused = client.get(f"/v1/jobs/{job_id}/events")
        assert refused.status_code == 429 and refused.headers["retry-after"]
        assert refused.json()["error"]["code"] == "too_many_streams"
        with client.stream("GET", f"/v1/jobs/{_queued_job(services, OTHER_KEY)}/events",
                           headers={"Authorization": f"Bearer {OTHER_KEY}"}) as other:
            assert other.status_code == 200   # the cap is per key
        events = _dispatched(first.iter_sse())
        assert json.loads(next(events).data)["type"] == "job.queued"
        started = time.monotonic()
        lines = second.response.iter_lines()
        assert next(line for line in lines if line.startswith(":")) == ": keep-alive"   # a quiet stream says so
        assert time.monotonic() - started < 5
        samples = []
        for _ in range(6):   # streams poll every second; a read takes milliseconds
            samples.append(_store_handles(services.api.process.pid))
            time.sleep(0.4)
        assert sum(1 for held in samples if held) <= 1, samples
        JobStore(services.store_path).mark_job_running(job_id)
        assert json.loads(next(events).data)["type"] == "job.running"   # arrives live, within a poll
    # Both closed: the key's slots are free again.
    wait_for(lambda: _opens(client, job_id), 10, what="a stream slot freed by a closed stream")


def _opens(client: httpx.Client, job_id: str) -> bool:
    with client.stream("GET", f"/v1/jobs/{job_id}/events") as response:
        return response.status_code == 200
