"""The durable job store: one SQLite file that the API, the batch CLI and every
worker process share. It is the source of truth for job and page state; the
broker only carries work.

| kept here                                    | how                                                 |
|----------------------------------------------|-----------------------------------------------------|
| a finished page is never lost or redone      | its result is committed before the task is acked; `claim_page` refuses final pages |
| a redelivered page overwrites, never adds    | one row per (job, file, page), written in place     |
| states only move forward                     | every update names the states it may move from     |
| many processes write safely                  | WAL journal, `BEGIN IMMEDIATE`, a busy timeout     |
| a page that kills its worker ends            | a claim that finds its page `running` counts a lost run; the runner gives up after a few |
| one key cannot fill the broker               | `admit_pages` sends at most a quota of each owner's pages; the rest wait here |
| a superseded send does nothing               | each send numbers the page (`dispatches`); a task with an older number is not claimed |
| one finisher at a time                       | `claim_finish` holds a lease on the job until it is released or expires |
| the job list never reads page results        | listings count pages in SQL and name their columns |

A connection is opened per call: cheap for SQLite, and nothing crosses a fork.
"""
from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import zip_longest
from pathlib import Path
from typing import Any

from workers.job_model import (JobFile, JobListing, JobOptions, JobRecord, JobState, PageClaim, PageDispatch,
                               PageRecord, PageState)

BUSY_TIMEOUT_S = 30.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, state TEXT NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, finished_at REAL,
    options TEXT NOT NULL, files TEXT NOT NULL, error TEXT);
CREATE INDEX IF NOT EXISTS jobs_by_owner ON jobs (owner, created_at);
CREATE TABLE IF NOT EXISTS pages (
    job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    file_index INTEGER NOT NULL, page_index INTEGER NOT NULL, position INTEGER NOT NULL,
    state TEXT NOT NULL, reason TEXT, attempts INTEGER NOT NULL DEFAULT 0,
    regions_ok INTEGER NOT NULL DEFAULT 0, regions_fallback INTEGER NOT NULL DEFAULT 0,
    regions_failed INTEGER NOT NULL DEFAULT 0,
    lost_runs INTEGER NOT NULL DEFAULT 0, dispatches INTEGER NOT NULL DEFAULT 0, dispatched_at REAL,
    result TEXT, updated_at REAL NOT NULL,
    PRIMARY KEY (job_id, file_index, page_index));
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, created_at);
"""
# Columns added after the first release, for stores made before them: (table, column, definition).
_ADDED_COLUMNS = (("pages", "lost_runs", "INTEGER NOT NULL DEFAULT 0"),
                  ("pages", "dispatches", "INTEGER NOT NULL DEFAULT 0"), ("pages", "dispatched_at", "REAL"), ("jobs", "finishing_until", "REAL"), ("jobs", "sent_at", "REAL"))
_PAGE_COLUMNS = ("file_index, page_index, state, reason, attempts, lost_runs, regions_ok, regions_fallback, "
                 "regions_failed")   # everything a job's view shows: never `result`
_JOB_COLUMNS = "id, owner, state, created_at, updated_at, finished_at, options, files, error"
_ACTIVE_JOB = (JobState.QUEUED.value, JobState.RUNNING.value)
_ACTIVE_PAGE = (PageState.QUEUED.value, PageState.RUNNING.value)
_FINAL_JOB = (JobState.DONE.value, JobState.FAILED.value, JobState.CANCELLED.value)


class JobStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        with self._connect() as db:
            db.executescript(_SCHEMA)
            for table, column, definition in _ADDED_COLUMNS:
                if column not in {row["name"] for row in db.execute(f"PRAGMA table_info({table})")}:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")

    @staticmethod
    def new_job_id() -> str:
        return uuid.uuid4().hex

    def create_job(self, job_id: str, owner: str, files: list[JobFile], options: JobOptions) -> JobRecord:
        assert files and all(f.page_indices for f in files)
        now = time.time()
        with self._write() as db:
            db.execute("INSERT INTO jobs (id, owner, state, created_at, updated_at, options, files) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (job_id, owner, JobState.QUEUED.value, now, now, json.dumps(options.to_dict()),
                        json.dumps([f.to_dict() for f in files])))
            rows = [(job_id, file_index, page_index, position, PageState.QUEUED.value, now)
                    for position, (file_index, page_index) in enumerate(
                        (fi, pi) for fi, f in enumerate(files) for pi in f.page_indices)]
            db.executemany("INSERT INTO pages (job_id, file_index, page_index, position, state, updated_at) "
                           "VALUES (?, ?, ?, ?, ?, ?)", rows)
        job = self.get_job(job_id)
        assert job is not None
        return job

    def get_job(self, job_id: str) -> JobRecord | None:
        with self._connect() as db:
            row = db.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
            return None if row is None else self._job_from_row(db, row)

    def list_jobs(self, owner: str, limit: int, offset: int = 0) -> list[JobListing]:
        """The owner's jobs, newest first, with page counts: no page rows, no page results."""
        done = (PageState.DONE.value, PageState.FAILED.value)
        with self._connect() as db:
            rows = db.execute(
                f"SELECT {_JOB_COLUMNS}, "
                f"(SELECT COUNT(*) FROM pages WHERE job_id = jobs.id) AS pages_total, "
                f"(SELECT COUNT(*) FROM pages WHERE job_id = jobs.id AND state IN {done}) AS pages_done, "
                f"(SELECT COUNT(*) FROM pages WHERE job_id = jobs.id AND state = ?) AS pages_failed "
                f"FROM jobs WHERE owner = ? ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
                (PageState.FAILED.value, owner, limit, offset)).fetchall()
            return [JobListing(id=row["id"], owner=row["owner"], state=JobState(row["state"]),
                               created_at=row["created_at"], updated_at=row["updated_at"],
                               options=JobOptions.from_dict(json.loads(row["options"])),
                               files=tuple(JobFile.from_dict(f) for f in json.loads(row["files"])),
                               pages_total=row["pages_total"], pages_done=row["pages_done"],
                               pages_failed=row["pages_failed"], finished_at=row["finished_at"], error=row["error"])
                    for row in rows]

    def num_active_jobs(self) -> int:
        """Jobs queued or running (a health check's query: it also shows the store answers)."""
        with self._connect() as db:
            return db.execute(f"SELECT count(*) FROM jobs WHERE state NOT IN {_FINAL_JOB}").fetchone()[0]

    def job_ids_in_state(self, state: JobState) -> list[str]:
        with self._connect() as db:
            rows = db.execute("SELECT id FROM jobs WHERE state = ? ORDER BY created_at", (state.value,)).fetchall()
            return [row["id"] for row in rows]

    def unfinished_job_ids(self) -> list[str]:
        with self._connect() as db:
            rows = db.execute(f"SELECT id FROM jobs WHERE state IN {_ACTIVE_JOB} ORDER BY created_at").fetchall()
            return [row["id"] for row in rows]

    def pending_pages(self, job_id: str) -> list[tuple[int, int]]:
        """(file_index, page_index) of pages not yet final, in job order."""
        with self._connect() as db:
            rows = db.execute(f"SELECT file_index, page_index FROM pages WHERE job_id = ? AND state IN {_ACTIVE_PAGE} "
                              "ORDER BY position", (job_id,)).fetchall()
            return [(row["file_index"], row["page_index"]) for row in rows]

    def mark_job_running(self, job_id: str) -> bool:
        with self._write() as db:
            return db.execute("UPDATE jobs SET state = ?, updated_at = ? WHERE id = ? AND state = ?",
                              (JobState.RUNNING.value, time.time(), job_id, JobState.QUEUED.value)).rowcount == 1

    def claim_page(self, job_id: str, file_index: int, page_index: int,
                   dispatch: int | None = None) -> PageClaim | None:
        """Mark a page running, if it still needs work, its job is active and `dispatch` (when
        given) is its latest send; None means skip it. A page found `running` was left so by a
        run that ended without recording it (its worker died): that run counts as lost."""
        with self._write() as db:
            row = db.execute(
                f"SELECT state, lost_runs, dispatches FROM pages WHERE job_id = ? AND file_index = ? "
                f"AND page_index = ? AND state IN {_ACTIVE_PAGE} AND (SELECT state FROM jobs WHERE id = ?) IN "
                f"{_ACTIVE_JOB}", (job_id, file_index, page_index, job_id)).fetchone()
            if row is None or (dispatch is not None and row["dispatches"] != dispatch):
                return None
            lost_runs = row["lost_runs"] + (row["state"] == PageState.RUNNING.value)
            db.execute("UPDATE pages SET state = ?, attempts = attempts + 1, lost_runs = ?, updated_at = ? "
                       "WHERE job_id = ? AND file_index = ? AND page_index = ?",
                       (PageState.RUNNING.value, lost_runs, time.time(), job_id, file_index, page_index))
            return PageClaim(lost_runs)

    def release_page(self, job_id: str, file_index: int, page_index: int) -> bool:
        """A running page back to queued (its task will retry): the run ended, it was not lost."""
        with self._write() as db:
            return db.execute("UPDATE pages SET state = ?, updated_at = ? WHERE job_id = ? AND file_index = ? "
                              "AND page_index = ? AND state = ?",
                              (PageState.QUEUED.value, time.time(), job_id, file_index, page_index,
                               PageState.RUNNING.value)).rowcount == 1

    def is_active(self, job_id: str) -> bool:
        """Whether the job still exists and is queued or running (not cancelled, finished or deleted)."""
        with self._connect() as db:
            row = db.execute("SELECT state FROM jobs WHERE id = ?", (job_id,)).fetchone()
            return row is not None and row["state"] in _ACTIVE_JOB

    def admit_pages(self, quota: int) -> list[PageDispatch]:
        """Send-ready pages of running jobs, at most `quota` in flight per owner (sent and not
        yet final), oldest job first within an owner and owners taking turns; each is marked
        sent with a new dispatch number before the caller sends it."""
        running = JobState.RUNNING.value
        unsent = f"pages.state IN {_ACTIVE_PAGE} AND pages.dispatched_at IS NULL"
        now = time.time()
        with self._write() as db:
            in_flight = dict(db.execute(
                f"SELECT jobs.owner, COUNT(*) FROM pages JOIN jobs ON jobs.id = pages.job_id WHERE jobs.state = ? "
                f"AND pages.state IN {_ACTIVE_PAGE} AND pages.dispatched_at IS NOT NULL GROUP BY jobs.owner",
                (running,)).fetchall())
            owners = [row[0] for row in db.execute(
                f"SELECT DISTINCT owner FROM jobs WHERE state = ? AND EXISTS "
                f"(SELECT 1 FROM pages WHERE pages.job_id = jobs.id AND {unsent})", (running,))]
            by_owner = []
            for owner in owners:
                free = quota - in_flight.get(owner, 0)
                if free > 0:
                    by_owner.append([PageDispatch(job_id, file_index, page_index, dispatches + 1)
                                     for job_id, file_index, page_index, dispatches in db.execute(
                        f"SELECT pages.job_id, pages.file_index, pages.page_index, pages.dispatches FROM jobs "
                        f"JOIN pages ON pages.job_id = jobs.id WHERE jobs.owner = ? AND jobs.state = ? AND {unsent} "
                        f"ORDER BY jobs.created_at, jobs.id, pages.position LIMIT ?", (owner, running, free))])
            admitted = [page for turn in zip_longest(*by_owner) for page in turn if page is not None]
            db.executemany("UPDATE pages SET dispatches = ?, dispatched_at = ? WHERE job_id = ? AND file_index = ? "
                           "AND page_index = ?",
                           [(p.dispatch, now, p.job_id, p.file_index, p.page_index) for p in admitted])
            return admitted

    def forget_dispatches(self, sent_before: float | None = None, running_since_before: float | None = None) -> int:
        """Mark unfinished pages of running jobs unsent, so `admit_pages` sends them again under
        a new number: all of them (None: the embedded broker, emptied at start-up), or those
        sent before `sent_before` and not taken since, and those taken before
        `running_since_before` (a task that can no longer be running: killed past its hard limit)."""
        with self._write() as db:
            if sent_before is None:
                return db.execute(f"UPDATE pages SET dispatched_at = NULL WHERE state IN {_ACTIVE_PAGE} "
                                  f"AND dispatched_at IS NOT NULL").rowcount
            return db.execute(
                f"UPDATE pages SET dispatched_at = NULL WHERE dispatched_at IS NOT NULL "
                f"AND ((state = ? AND dispatched_at < ?) OR (state = ? AND updated_at < ?)) "
                f"AND (SELECT state FROM jobs WHERE id = pages.job_id) = ?",
                (PageState.QUEUED.value, sent_before, PageState.RUNNING.value,
                 running_since_before if running_since_before is not None else sent_before,
                 JobState.RUNNING.value)).rowcount

    def unfinished_jobs_without_pages(self) -> list[str]:
        """Running jobs whose every page is final: they wait for their finisher."""
        with self._connect() as db:
            rows = db.execute(f"SELECT id FROM jobs WHERE state = ? "
                              f"AND (finishing_until IS NULL OR finishing_until < ?) AND NOT EXISTS "
                              f"(SELECT 1 FROM pages WHERE job_id = jobs.id AND state IN {_ACTIVE_PAGE}) "
                              f"ORDER BY created_at", (JobState.RUNNING.value, time.time())).fetchall()
            return [row["id"] for row in rows]

    def claim_finish(self, job_id: str, lease_s: float) -> bool:
        """Take the job's finishing lease (one finisher at a time); False if another holds it."""
        now = time.time()
        with self._write() as db:
            return db.execute(f"UPDATE jobs SET finishing_until = ? WHERE id = ? AND state IN {_ACTIVE_JOB} "
                              f"AND (finishing_until IS NULL OR finishing_until < ?)",
                              (now + lease_s, job_id, now)).rowcount == 1

    def has_pending_pages(self, job_id: str) -> bool:
        with self._connect() as db:
            return db.execute(f"SELECT 1 FROM pages WHERE job_id = ? AND state IN {_ACTIVE_PAGE} LIMIT 1",
                              (job_id,)).fetchone() is not None

    def mark_job_sent(self, job_id: str) -> None:
        """The job's start task went to the broker (a queued job never sent is sent by the sweep)."""
        with self._write() as db:
            db.execute("UPDATE jobs SET sent_at = ? WHERE id = ?", (time.time(), job_id))

    def queued_jobs_to_send(self, created_before: float, sent_before: float) -> list[str]:
        """Queued jobs whose start task was never sent (created before `created_before`) or was
        sent before `sent_before` and has not started them: lost on the way."""
        with self._connect() as db:
            rows = db.execute("SELECT id FROM jobs WHERE state = ? AND ((sent_at IS NULL AND created_at < ?) "
                              "OR sent_at < ?) ORDER BY created_at",
                              (JobState.QUEUED.value, created_before, sent_before)).fetchall()
            return [row["id"] for row in rows]

    def forget_dispatch(self, pages: list[PageDispatch]) -> None:
        """Pages marked sent that could not be sent: unsent again."""
        with self._write() as db:
            db.executemany("UPDATE pages SET dispatched_at = NULL WHERE job_id = ? AND file_index = ? "
                           "AND page_index = ? AND dispatches = ?",
                           [(p.job_id, p.file_index, p.page_index, p.dispatch) for p in pages])

    def release_finish(self, job_id: str | None = None) -> None:
        """Give up the job's finishing lease; None: every job's (a lone worker starting again)."""
        with self._write() as db:
            if job_id is None:
                db.execute("UPDATE jobs SET finishing_until = NULL WHERE finishing_until IS NOT NULL")
                return
            db.execute("UPDATE jobs SET finishing_until = NULL WHERE id = ?", (job_id,))

    def delete_finished_before(self, finished_before: float) -> list[str]:
        """Delete jobs (and their pages) that ended before `finished_before`; returns their ids."""
        with self._write() as db:
            rows = db.execute(f"SELECT id FROM jobs WHERE state IN {_FINAL_JOB} AND finished_at < ?",
                              (finished_before,)).fetchall()
            ids = [row["id"] for row in rows]
            db.executemany("DELETE FROM jobs WHERE id = ?", [(job_id,) for job_id in ids])
            return ids

    def save_page(self, job_id: str, file_index: int, page_index: int, state: PageState, reason: str | None,
                  result: dict[str, Any] | None, region_counts: tuple[int, int, int] = (0, 0, 0)) -> bool:
        """Record a page's outcome; False when the page was already final (cancelled, or a duplicate run)."""
        assert state in (PageState.DONE, PageState.FAILED)
        regions_ok, regions_fallback, regions_failed = region_counts
        with self._write() as db:
            return db.execute(
                f"UPDATE pages SET state = ?, reason = ?, result = ?, regions_ok = ?, regions_fallback = ?, "
                f"regions_failed = ?, updated_at = ? "
                f"WHERE job_id = ? AND file_index = ? AND page_index = ? AND state IN {_ACTIVE_PAGE} "
                f"AND (SELECT state FROM jobs WHERE id = ?) IN {_ACTIVE_JOB}",
                (state.value, reason, None if result is None else json.dumps(result), regions_ok, regions_fallback,
                 regions_failed, time.time(), job_id, file_index, page_index, job_id)).rowcount == 1

    def fail_stale_pages(self, job_id: str, older_than_s: float, reason: str) -> int:
        """Fail pages left `running` longer than any live task may run (their worker was
        killed by the hard time limit); returns how many."""
        now = time.time()
        with self._write() as db:
            return db.execute("UPDATE pages SET state = ?, reason = ?, updated_at = ? "
                              "WHERE job_id = ? AND state = ? AND updated_at < ?",
                              (PageState.FAILED.value, reason, now, job_id, PageState.RUNNING.value,
                               now - older_than_s)).rowcount

    def page_results(self, job_id: str) -> dict[tuple[int, int], dict[str, Any]]:
        with self._connect() as db:
            rows = db.execute("SELECT file_index, page_index, result FROM pages WHERE job_id = ? AND result IS NOT NULL",
                              (job_id,)).fetchall()
            return {(row["file_index"], row["page_index"]): json.loads(row["result"]) for row in rows}

    def finish_job(self, job_id: str, state: JobState, error: str | None = None) -> bool:
        assert state in (JobState.DONE, JobState.FAILED)
        now = time.time()
        with self._write() as db:
            changed = db.execute(f"UPDATE jobs SET state = ?, error = ?, updated_at = ?, finished_at = ? "
                                 f"WHERE id = ? AND state IN {_ACTIVE_JOB}",
                                 (state.value, error, now, now, job_id)).rowcount == 1
            if changed and state is JobState.FAILED:
                db.execute(f"UPDATE pages SET state = ?, reason = COALESCE(reason, ?), updated_at = ? "
                           f"WHERE job_id = ? AND state IN {_ACTIVE_PAGE}",
                           (PageState.FAILED.value, error, now, job_id))
            return changed

    def cancel_job(self, job_id: str) -> bool:
        now = time.time()
        with self._write() as db:
            changed = db.execute(f"UPDATE jobs SET state = ?, updated_at = ?, finished_at = ? "
                                 f"WHERE id = ? AND state IN {_ACTIVE_JOB}",
                                 (JobState.CANCELLED.value, now, now, job_id)).rowcount == 1
            if changed:
                db.execute(f"UPDATE pages SET state = ?, updated_at = ? WHERE job_id = ? AND state IN {_ACTIVE_PAGE}",
                           (PageState.CANCELLED.value, now, job_id))
            return changed

    def delete_job(self, job_id: str, owner: str) -> bool:
        """Remove a finished job of `owner` and (by cascade) its pages; False if it is
        not final any more, not the owner's, or already gone."""
        with self._write() as db:
            return db.execute(f"DELETE FROM jobs WHERE id = ? AND owner = ? AND state NOT IN {_ACTIVE_JOB}",
                              (job_id, owner)).rowcount == 1

    def _job_from_row(self, db: sqlite3.Connection, row: sqlite3.Row) -> JobRecord:
        pages = tuple(PageRecord(p["file_index"], p["page_index"], PageState(p["state"]), p["reason"], p["attempts"],
                                 p["regions_ok"], p["regions_fallback"], p["regions_failed"], p["lost_runs"])
                      for p in db.execute(f"SELECT {_PAGE_COLUMNS} FROM pages WHERE job_id = ? ORDER BY position",
                                          (row["id"],)))
        return JobRecord(
            id=row["id"], owner=row["owner"], state=JobState(row["state"]), created_at=row["created_at"],
            updated_at=row["updated_at"], options=JobOptions.from_dict(json.loads(row["options"])),
            files=tuple(JobFile.from_dict(f) for f in json.loads(row["files"])), pages=pages,
            finished_at=row["finished_at"], error=row["error"])

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA foreign_keys = ON")
            yield db
        finally:
            db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the lock up front, so two writers never deadlock on upgrade."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
