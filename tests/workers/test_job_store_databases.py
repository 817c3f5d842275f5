"""The job store on both of its databases: migrations at start-up, and the
invariants that need more than one writer (real processes, real PostgreSQL)."""
from __future__ import annotations

import multiprocessing
import sqlite3
from collections import Counter

import pytest
from sqlalchemy import text

from workers.job_model import JobFile, JobOptions, JobState, PageState
from workers.job_store import _MIGRATIONS, JobStore, migrate

# The schema a store had before the job store kept a version (its first release).
_FIRST_RELEASE = """
CREATE TABLE jobs (id TEXT PRIMARY KEY, owner TEXT NOT NULL, state TEXT NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, finished_at REAL,
    options TEXT NOT NULL, files TEXT NOT NULL, error TEXT);
CREATE TABLE pages (job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    file_index INTEGER NOT NULL, page_index INTEGER NOT NULL, position INTEGER NOT NULL,
    state TEXT NOT NULL, reason TEXT, attempts INTEGER NOT NULL DEFAULT 0,
    regions_ok INTEGER NOT NULL DEFAULT 0, regions_fallback INTEGER NOT NULL DEFAULT 0,
    regions_failed INTEGER NOT NULL DEFAULT 0, result TEXT, updated_at REAL NOT NULL,
    PRIMARY KEY (job_id, file_index, page_index));
INSERT INTO jobs VALUES ('0123456789abcdef0123456789abcdef', 'alice', 'running', 1.0, 1.0, NULL,
    '{"formats": ["md"], "dpi": null}', '[{"filename": "a.pdf", "kind": "pdf", "num_pages": 1, "sha256": "%s",
    "page_indices": [0]}]', NULL);
INSERT INTO pages (job_id, file_index, page_index, position, state, updated_at)
    VALUES ('0123456789abcdef0123456789abcdef', 0, 0, 0, 'queued', 1.0);
""" % ("0" * 64)


def test_a_store_from_before_migrations_gains_its_columns_and_keeps_its_jobs(tmp_path):
    path = tmp_path / "jobs.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(_FIRST_RELEASE)
    store = JobStore(path)
    job = store.get_job("0123456789abcdef0123456789abcdef")
    assert job.state is JobState.RUNNING and [p.state for p in job.pages] == [PageState.QUEUED]
    [sent] = store.admit_pages(quota=2)   # uses the columns the first release lacked
    assert sent.dispatch == 1 and store.claim_page(job.id, 0, 0, sent.dispatch).lost_runs == 0
    with store.engine.connect() as db:
        assert db.execute(text("SELECT version FROM schema_version")).scalar_one() == len(_MIGRATIONS)


def _open_and_migrate(location: str) -> int:
    return migrate(JobStore(location).engine)


def test_migrations_run_once_when_many_processes_start_together(store_location):
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        versions = pool.map(_open_and_migrate, [str(store_location)] * 8)
    assert versions == [len(_MIGRATIONS)] * 8
    with JobStore(store_location).engine.connect() as db:
        assert db.execute(text("SELECT count(*) FROM schema_version")).scalar_one() == 1


def _jobs(store: JobStore, owners: list[str], pages_each: int) -> list[str]:
    ids = []
    for owner in owners:
        job_id = store.new_job_id()
        store.create_job(job_id, owner, [JobFile("a.pdf", "pdf", pages_each, "0" * 64, tuple(range(pages_each)))],
                         JobOptions(("txt",)))
        assert store.mark_job_running(job_id)
        ids.append(job_id)
    return ids


def _admit_many(args: tuple[str, int, int]) -> list[tuple[str, int, int]]:
    location, quota, rounds = args
    store = JobStore(location)
    admitted = []
    for _ in range(rounds):
        admitted += [(p.job_id, p.page_index, p.dispatch) for p in store.admit_pages(quota)]
    return admitted


def test_admitters_running_at_once_never_exceed_a_keys_quota_or_send_a_page_twice(store_location):
    """Four dispatchers on four hosts admit at the same moment: without one lock around
    admission, each would see nothing in flight and send a full quota."""
    store = JobStore(store_location)
    owner_of = dict(zip(_jobs(store, ["alice", "bob", "carol"], 30), ["alice", "bob", "carol"]))
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(_admit_many, [(str(store_location), 5, 10)] * 4)
    admitted = [page for result in results for page in result]
    assert len(admitted) == len(set(admitted)) == 15, "each key's quota of 5, once"
    assert Counter(owner_of[job_id] for job_id, _, _ in admitted) == {"alice": 5, "bob": 5, "carol": 5}


def _work(args: tuple[str, int]) -> int:
    """A worker's loop: admit, claim, record, until nothing is left; returns pages it recorded."""
    location, quota = args
    store = JobStore(location)
    recorded = idle = 0
    while idle < 20:
        sent = store.admit_pages(quota)
        idle = 0 if sent else idle + 1
        for page in sent:
            if store.claim_page(page.job_id, page.file_index, page.page_index, page.dispatch) is None:
                continue
            recorded += store.save_page(page.job_id, page.file_index, page.page_index, PageState.DONE, None,
                                        {"page": page.page_index})
    return recorded


def test_workers_racing_on_one_store_record_every_page_exactly_once(store_location):
    store = JobStore(store_location)
    job_ids = _jobs(store, ["alice", "bob"], 40)
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        recorded = pool.map(_work, [(str(store_location), 3)] * 4)
    assert sum(recorded) == 80
    for job_id in job_ids:
        job = store.get_job(job_id)
        assert [p.state for p in job.pages] == [PageState.DONE] * 40
        assert all(p.attempts == 1 and p.lost_runs == 0 for p in job.pages)
        assert store.page_results(job_id) == {(0, i): {"page": i} for i in range(40)}


def test_a_cancel_racing_with_workers_leaves_no_page_recorded_after_it(store_location):
    store = JobStore(store_location)
    [job_id] = _jobs(store, ["alice"], 60)
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        running = pool.map_async(_work, [(str(store_location), 4)] * 3)
        while store.get_job(job_id).pages_done < 5:
            pass
        assert store.cancel_job(job_id)
        recorded = sum(running.get(timeout=120))
    job = store.get_job(job_id)
    states = Counter(p.state for p in job.pages)
    assert job.state is JobState.CANCELLED
    assert states[PageState.DONE] == recorded and states[PageState.CANCELLED] == 60 - recorded
    assert set(states) <= {PageState.DONE, PageState.CANCELLED}


def test_a_bad_database_url_is_refused_with_a_clear_message():
    from workers.settings import Settings

    with pytest.raises(ValueError, match="OCRSERVE_DATABASE_URL"):
        Settings(database_url="mysql://root@localhost/ocr")
