"""Event streams on PostgreSQL hold no database connection while they wait: eight streams
open on an `ocrserve api` process whose job store is a real PostgreSQL cluster, and the
server sees no more of the API's connections than its pool keeps idle, none of them in
a transaction between reads; a new event still reaches its stream."""
from __future__ import annotations

import json
import time
from contextlib import ExitStack

import httpx
import psycopg
from httpx_sse import connect_sse
from sqlalchemy.engine import make_url

from live_services import ApiProcess
from service_harness import service_env

KEY = "events-pg-key"
NUM_STREAMS = 8
POOL_SIZE = 4   # workers/database.py: what the API's pool keeps open at most when idle


def _api_connections(url: str) -> list[str]:
    """States of the API process's connections to the database (its application_name is ocrserve)."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, application_name="probe") as db:
        return [state for (state,) in db.execute(
            "SELECT state FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'ocrserve'")]


def test_waiting_streams_hold_no_postgres_connection(postgres_url, tmp_path):
    from app.api_keys import hash_key
    from workers.job_model import JobFile, JobOptions
    from workers.job_store import JobStore

    store = JobStore(postgres_url)
    job_ids = []
    for _ in range(NUM_STREAMS):
        job_ids.append(store.new_job_id())
        store.create_job(job_ids[-1], hash_key(KEY), [JobFile("a.pdf", "pdf", 1, "0" * 64, (0,))], JobOptions(("md",)))
    store.engine.dispose()   # from here on, every ocrserve connection the server sees is the API's
    env = service_env(tmp_path / "data", api_keys=KEY, database_url=postgres_url, event_stream_poll_s=1.0,
                      max_event_streams_per_key=NUM_STREAMS)
    api = ApiProcess(env, tmp_path / "api.log").wait_ready()
    try:
        with httpx.Client(base_url=api.base_url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as client, \
                ExitStack() as streams:
            sources = [streams.enter_context(connect_sse(client, "GET", f"/v1/jobs/{job_id}/events"))
                       for job_id in job_ids]
            readers = [(event for event in source.iter_sse() if event.data) for source in sources]
            assert all(json.loads(next(reader).data)["type"] == "job.queued" for reader in readers)
            samples = []
            for _ in range(6):
                samples.append(_api_connections(postgres_url))
                time.sleep(0.4)
            assert all(len(states) <= POOL_SIZE for states in samples), samples
            busy = [sum(state != "idle" for state in states) for states in samples]
            assert sum(1 for count in busy if count) <= 1, samples   # a read takes milliseconds of each second
            JobStore(postgres_url).mark_job_running(job_ids[3])
            assert json.loads(next(readers[3]).data)["type"] == "job.running"
    finally:
        api.stop()
