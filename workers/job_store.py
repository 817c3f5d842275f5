"""The durable job store: one SQLite file that the API, the batch CLI and every
worker process share. It is the source of truth for job and page state; the
broker only carries work.

| kept here                                    | how                                                 |
|----------------------------------------------|-----------------------------------------------------|
| a finished page is never lost or redone      | its result is committed before the task is acked; `claim_page` refuses final pages |
| a redelivered page overwrites, never adds    | one row per (job, file, page), written in place     |
| states only move forward                     | every update names the states it may move from     |
| many processes write safely                  | WAL journal, `BEGIN IMMEDIATE`, a busy timeout     |

A connection is opened per call: cheap for SQLite, and nothing crosses a fork.
"""
from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from workers.job_model import JobFile, JobOptions, JobRecord, JobState, PageRecord, PageState

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
    regions_failed INTEGER NOT NULL DEFAULT 0, result TEXT, updated_at REAL NOT NULL,
    PRIMARY KEY (job_id, file_index, page_index));
"""
_ACTIVE_JOB = (JobState.QUEUED.value, JobState.RUNNING.value)
_ACTIVE_PAGE = (PageState.QUEUED.value, PageState.RUNNING.value)


class JobStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        with self._connect() as db:
            db.executescript(_SCHEMA)

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
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
            return None if row is None else self._job_from_row(db, row)

    def list_jobs(self, owner: str, limit: int, offset: int = 0) -> list[JobRecord]:
        with self._connect() as db:
            rows = db.execute("SELECT * FROM jobs WHERE owner = ? ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
                              (owner, limit, offset)).fetchall()
            return [self._job_from_row(db, row) for row in rows]

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

    def claim_page(self, job_id: str, file_index: int, page_index: int) -> bool:
        """Mark a page running, if it still needs work and its job is active; False means skip it."""
        with self._write() as db:
            return db.execute(
                f"UPDATE pages SET state = ?, attempts = attempts + 1, updated_at = ? "
                f"WHERE job_id = ? AND file_index = ? AND page_index = ? AND state IN {_ACTIVE_PAGE} "
                f"AND (SELECT state FROM jobs WHERE id = ?) IN {_ACTIVE_JOB}",
                (PageState.RUNNING.value, time.time(), job_id, file_index, page_index, job_id)).rowcount == 1

    def save_page(self, job_id: str, file_index: int, page_index: int, state: PageState, reason: str | None,
                  result: dict[str, Any] | None, region_counts: tuple[int, int, int] = (0, 0, 0)) -> bool:
        """Record a page's outcome; False when the page was already final (cancelled, or a duplicate run)."""
        assert state in (PageState.DONE, PageState.FAILED)
        regions_ok, regions_fallback, regions_failed = region_counts
        with self._write() as db:
            return db.execute(
                f"UPDATE pages SET state = ?, reason = ?, result = ?, regions_ok = ?, regions_fallback = ?, "
                f"regions_failed = ?, updated_at = ? "
                f"WHERE job_id = ? AND file_index = ? AND page_index = ? AND state IN {_ACTIVE_PAGE}",
                (state.value, reason, None if result is None else json.dumps(result), regions_ok, regions_fallback,
                 regions_failed, time.time(), job_id, file_index, page_index)).rowcount == 1

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
                                 p["regions_ok"], p["regions_fallback"], p["regions_failed"])
                      for p in db.execute("SELECT * FROM pages WHERE job_id = ? ORDER BY position", (row["id"],)))
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
