"""The durable job store: the API, the batch CLI and every worker process
share it. It is the source of truth for job and page state; the broker only
carries work. It lives in the embedded SQLite file in the data directory, or in
PostgreSQL when `OCRSERVE_DATABASE_URL` names one (`workers/database.py`): one
schema, one set of statements, the same invariants on both.

| kept here                                    | how                                                 |
|----------------------------------------------|-----------------------------------------------------|
| a finished page is never lost or redone      | its result is committed before the task is acked; `claim_page` refuses final pages |
| a redelivered page overwrites, never adds    | one row per (job, file, page), written in place     |
| states only move forward                     | every update names the states it may move from     |
| many processes write safely                  | SQLite: WAL, `BEGIN IMMEDIATE`, a busy timeout; PostgreSQL: row locks (`FOR UPDATE`), and one advisory lock for writes that span jobs |
| a page that kills its worker ends            | a claim that finds its page `running` counts a lost run; the runner gives up after a few |
| one key cannot fill the broker               | `admit_pages` sends at most a quota of each owner's pages; the rest wait here |
| a superseded send does nothing               | each send numbers the page (`dispatches`); a task with an older number is not claimed |
| one finisher at a time                       | `claim_finish` holds a lease on the job until it is released or expires |
| the job list never reads page results        | listings count pages in SQL and name their columns |
| the schema moves forward at start-up         | numbered migrations in `_MIGRATIONS`, applied once under a lock, recorded in `schema_version` |
| every state change is in the job's event log | appended in the change's own transaction (workers/job_events.py); a writer locks the job before its pages |
"""
from __future__ import annotations

import json
import time
import uuid
from itertools import zip_longest
from os import PathLike
from typing import Any

from sqlalchemy import (Column, Connection, Double, ForeignKeyConstraint, Index, Integer, MetaData,
                        PrimaryKeyConstraint, Table, Text, inspect, text)
from sqlalchemy.engine import Row

from workers import database, job_events
from workers.job_model import (JobFile, JobListing, JobOptions, JobRecord, JobState, PageClaim, PageDispatch,
                               PageRecord, PageState)

METADATA = MetaData()
JOBS = Table(
    "jobs", METADATA,
    Column("id", Text, primary_key=True), Column("owner", Text, nullable=False), Column("state", Text, nullable=False),
    Column("created_at", Double, nullable=False), Column("updated_at", Double, nullable=False),
    Column("finished_at", Double), Column("options", Text, nullable=False), Column("files", Text, nullable=False),
    Column("error", Text), Column("finishing_until", Double), Column("sent_at", Double),
    Index("jobs_by_owner", "owner", "created_at"), Index("jobs_by_state", "state", "created_at"))
PAGES = Table(
    "pages", METADATA,
    Column("job_id", Text, nullable=False), Column("file_index", Integer, nullable=False),
    Column("page_index", Integer, nullable=False), Column("position", Integer, nullable=False),
    Column("state", Text, nullable=False), Column("reason", Text),
    *(Column(name, Integer, nullable=False, server_default="0")
      for name in ("attempts", "regions_ok", "regions_fallback", "regions_failed", "lost_runs", "dispatches")),
    Column("dispatched_at", Double), Column("result", Text), Column("updated_at", Double, nullable=False),
    PrimaryKeyConstraint("job_id", "file_index", "page_index"),
    ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"))
SCHEMA_VERSION = Table("schema_version", METADATA, Column("version", Integer, nullable=False))
# Columns added after the first release, for SQLite stores made before there were migrations.
_ADDED_COLUMNS = (("pages", "lost_runs", "INTEGER NOT NULL DEFAULT 0"),
                  ("pages", "dispatches", "INTEGER NOT NULL DEFAULT 0"), ("pages", "dispatched_at", "REAL"),
                  ("jobs", "finishing_until", "REAL"), ("jobs", "sent_at", "REAL"))


def _migration_1(conn: Connection) -> None:
    """The schema as first versioned; a SQLite store older than that gains its missing columns."""
    existing = set(inspect(conn).get_table_names())
    for table, column, definition in _ADDED_COLUMNS:
        if table in existing and column not in {c["name"] for c in inspect(conn).get_columns(table)}:
            conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
    METADATA.create_all(conn, tables=[JOBS, PAGES], checkfirst=True)


def _migration_2(conn: Connection) -> None:
    """Files any host can read: the database blob store's tables (workers/blob_store.py)."""
    from workers.blob_store import create_tables

    create_tables(conn)


def _migration_3(conn: Connection) -> None:
    """Each job's event log (live progress, webhooks), the webhook outbox and the shared secrets."""
    from workers import service_secrets, webhook_deliveries

    job_events.create_tables(conn)
    webhook_deliveries.create_tables(conn)
    service_secrets.create_tables(conn)


# Append only: migration k takes a store at version k - 1 to version k.
_MIGRATIONS = (_migration_1, _migration_2, _migration_3)
_PAGE_COLUMNS = ("file_index, page_index, state, reason, attempts, lost_runs, regions_ok, regions_fallback, "
                 "regions_failed")   # everything a job's view shows: never `result`
_JOB_COLUMNS = "id, owner, state, created_at, updated_at, finished_at, options, files, error"
_ACTIVE_JOB = (JobState.QUEUED.value, JobState.RUNNING.value)
_ACTIVE_PAGE = (PageState.QUEUED.value, PageState.RUNNING.value)
_FINAL_JOB = (JobState.DONE.value, JobState.FAILED.value, JobState.CANCELLED.value)
_PAGE_KEY = "job_id = :job AND file_index = :file AND page_index = :page"


def migrate(engine) -> int:
    """Bring the store's schema to the newest version; returns it. Safe to call from many
    processes at once: the first applies what is missing, the others find it done."""
    with database.write(engine, serial=True) as conn:
        SCHEMA_VERSION.create(conn, checkfirst=True)
        row = conn.execute(text("SELECT version FROM schema_version")).fetchone()
        version = 0 if row is None else row[0]
        for number, step in enumerate(_MIGRATIONS[version:], start=version + 1):
            step(conn)
            version = number
        if row is None:
            conn.execute(text("INSERT INTO schema_version (version) VALUES (:v)"), {"v": version})
        else:
            conn.execute(text("UPDATE schema_version SET version = :v"), {"v": version})
        return version


class JobStore:
    def __init__(self, location: str | PathLike[str], migrate_schema: bool = True):
        """`location`: a SQLite file's path, or a database URL (`postgresql://user@host/db`).
        `migrate_schema=False` opens it as it is (a status check must not fail on a store it
        cannot reach before it has asked anything)."""
        self.location = location
        self.engine = database.engine_for(location)
        if migrate_schema:
            migrate(self.engine)

    @property
    def is_postgresql(self) -> bool:
        return database.is_postgresql(self.engine)

    @staticmethod
    def new_job_id() -> str:
        return uuid.uuid4().hex

    def create_job(self, job_id: str, owner: str, files: list[JobFile], options: JobOptions) -> JobRecord:
        assert files and all(f.page_indices for f in files)
        now = time.time()
        with database.write(self.engine) as db:
            db.execute(text("INSERT INTO jobs (id, owner, state, created_at, updated_at, options, files) "
                            "VALUES (:id, :owner, :state, :now, :now, :options, :files)"),
                       {"id": job_id, "owner": owner, "state": JobState.QUEUED.value, "now": now,
                        "options": json.dumps(options.to_dict()), "files": json.dumps([f.to_dict() for f in files])})
            rows = [{"job": job_id, "file": file_index, "page": page_index, "position": position,
                     "state": PageState.QUEUED.value, "now": now}
                    for position, (file_index, page_index) in enumerate(
                        (fi, pi) for fi, f in enumerate(files) for pi in f.page_indices)]
            db.execute(text("INSERT INTO pages (job_id, file_index, page_index, position, state, updated_at) "
                            "VALUES (:job, :file, :page, :position, :state, :now)"), rows)
            job_events.append_job_event(db, job_id, JobState.QUEUED.value)
        job = self.get_job(job_id)
        assert job is not None
        return job

    def get_job(self, job_id: str) -> JobRecord | None:
        with self._connect() as db:
            row = db.execute(text(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = :id"), {"id": job_id}).fetchone()
            return None if row is None else self._job_from_row(db, row)

    def list_jobs(self, owner: str, limit: int, offset: int = 0) -> list[JobListing]:
        """The owner's jobs, newest first, with page counts: no page rows, no page results."""
        done = (PageState.DONE.value, PageState.FAILED.value)
        with self._connect() as db:
            rows = db.execute(text(
                f"SELECT {_JOB_COLUMNS}, "
                f"(SELECT COUNT(*) FROM pages WHERE job_id = jobs.id) AS pages_total, "
                f"(SELECT COUNT(*) FROM pages WHERE job_id = jobs.id AND state IN {done}) AS pages_done, "
                f"(SELECT COUNT(*) FROM pages WHERE job_id = jobs.id AND state = :failed) AS pages_failed "
                f"FROM jobs WHERE owner = :owner ORDER BY created_at DESC, id LIMIT :limit OFFSET :offset"),
                {"failed": PageState.FAILED.value, "owner": owner, "limit": limit, "offset": offset}).fetchall()
            return [JobListing(id=row.id, owner=row.owner, state=JobState(row.state),
                               created_at=row.created_at, updated_at=row.updated_at,
                               options=JobOptions.from_dict(json.loads(row.options)),
                               files=tuple(JobFile.from_dict(f) for f in json.loads(row.files)),
                               pages_total=row.pages_total, pages_done=row.pages_done,
                               pages_failed=row.pages_failed, finished_at=row.finished_at, error=row.error)
                    for row in rows]

    def num_active_jobs(self) -> int:
        """Jobs queued or running (a health check's query: it also shows the store answers)."""
        with self._connect() as db:
            return db.execute(text(f"SELECT count(*) FROM jobs WHERE state NOT IN {_FINAL_JOB}")).scalar_one()

    def existing_job_ids(self, job_ids: list[str]) -> set[str]:
        """Which of `job_ids` the store still has (a host's sweep asks about the jobs it holds files of)."""
        found: set[str] = set()
        with self._connect() as db:
            for start in range(0, len(job_ids), 500):
                batch = {f"id{i}": job_id for i, job_id in enumerate(job_ids[start:start + 500])}
                names = ", ".join(f":{name}" for name in batch)
                found.update(db.execute(text(f"SELECT id FROM jobs WHERE id IN ({names})"), batch).scalars())
        return found

    def job_ids_in_state(self, state: JobState) -> list[str]:
        with self._connect() as db:
            return list(db.execute(text("SELECT id FROM jobs WHERE state = :state ORDER BY created_at"),
                                   {"state": state.value}).scalars())

    def unfinished_job_ids(self) -> list[str]:
        with self._connect() as db:
            return list(db.execute(text(f"SELECT id FROM jobs WHERE state IN {_ACTIVE_JOB} ORDER BY created_at"))
                        .scalars())

    def pending_pages(self, job_id: str) -> list[tuple[int, int]]:
        """(file_index, page_index) of pages not yet final, in job order."""
        with self._connect() as db:
            rows = db.execute(text(f"SELECT file_index, page_index FROM pages WHERE job_id = :job "
                                   f"AND state IN {_ACTIVE_PAGE} ORDER BY position"), {"job": job_id}).fetchall()
            return [(row.file_index, row.page_index) for row in rows]

    def mark_job_running(self, job_id: str) -> bool:
        with database.write(self.engine) as db:
            changed = db.execute(text("UPDATE jobs SET state = :running, updated_at = :now WHERE id = :id "
                                      "AND state = :queued"),
                                 {"running": JobState.RUNNING.value, "now": time.time(), "id": job_id,
                                  "queued": JobState.QUEUED.value}).rowcount == 1
            if changed:
                job_events.append_job_event(db, job_id, JobState.RUNNING.value)
            return changed

    def claim_page(self, job_id: str, file_index: int, page_index: int,
                   dispatch: int | None = None) -> PageClaim | None:
        """Mark a page running, if it still needs work, its job is active and `dispatch` (when
        given) is its latest send; None means skip it. A page found `running` was left so by a
        run that ended without recording it (its worker died): that run counts as lost."""
        key = {"job": job_id, "file": file_index, "page": page_index}
        lock = " FOR UPDATE" if self.is_postgresql else ""   # two workers with one redelivered page
        with database.write(self.engine) as db:
            row = db.execute(text(
                f"SELECT state, lost_runs, dispatches FROM pages WHERE {_PAGE_KEY} AND state IN {_ACTIVE_PAGE} "
                f"AND (SELECT state FROM jobs WHERE id = :job) IN {_ACTIVE_JOB}{lock}"), key).fetchone()
            if row is None or (dispatch is not None and row.dispatches != dispatch):
                return None
            lost_runs = row.lost_runs + (row.state == PageState.RUNNING.value)
            db.execute(text(f"UPDATE pages SET state = :running, attempts = attempts + 1, lost_runs = :lost, "
                            f"updated_at = :now WHERE {_PAGE_KEY}"),
                       {**key, "running": PageState.RUNNING.value, "lost": lost_runs, "now": time.time()})
            return PageClaim(lost_runs)

    def release_page(self, job_id: str, file_index: int, page_index: int) -> bool:
        """A running page back to queued (its task will retry): the run ended, it was not lost."""
        with database.write(self.engine) as db:
            return db.execute(text(f"UPDATE pages SET state = :queued, updated_at = :now WHERE {_PAGE_KEY} "
                                   f"AND state = :running"),
                              {"job": job_id, "file": file_index, "page": page_index, "now": time.time(),
                               "queued": PageState.QUEUED.value, "running": PageState.RUNNING.value}).rowcount == 1

    def is_active(self, job_id: str) -> bool:
        """Whether the job still exists and is queued or running (not cancelled, finished or deleted)."""
        with self._connect() as db:
            state = db.execute(text("SELECT state FROM jobs WHERE id = :id"), {"id": job_id}).scalar()
            return state in _ACTIVE_JOB

    def admit_pages(self, quota: int) -> list[PageDispatch]:
        """Send-ready pages of running jobs, at most `quota` in flight per owner (sent and not
        yet final), oldest job first within an owner and owners taking turns; each is marked
        sent with a new dispatch number before the caller sends it."""
        running = JobState.RUNNING.value
        unsent = f"pages.state IN {_ACTIVE_PAGE} AND pages.dispatched_at IS NULL"
        now = time.time()
        with database.write(self.engine, serial=True) as db:
            in_flight = {owner: count for owner, count in db.execute(text(
                f"SELECT jobs.owner, COUNT(*) FROM pages JOIN jobs ON jobs.id = pages.job_id WHERE jobs.state = :running "
                f"AND pages.state IN {_ACTIVE_PAGE} AND pages.dispatched_at IS NOT NULL GROUP BY jobs.owner"),
                {"running": running})}
            owners = list(db.execute(text(
                f"SELECT DISTINCT owner FROM jobs WHERE state = :running AND EXISTS "
                f"(SELECT 1 FROM pages WHERE pages.job_id = jobs.id AND {unsent}) ORDER BY owner"),
                {"running": running}).scalars())
            by_owner = []
            for owner in owners:
                free = quota - in_flight.get(owner, 0)
                if free > 0:
                    by_owner.append([PageDispatch(job_id, file_index, page_index, dispatches + 1)
                                     for job_id, file_index, page_index, dispatches in db.execute(text(
                        f"SELECT pages.job_id, pages.file_index, pages.page_index, pages.dispatches FROM jobs "
                        f"JOIN pages ON pages.job_id = jobs.id WHERE jobs.owner = :owner AND jobs.state = :running "
                        f"AND {unsent} ORDER BY jobs.created_at, jobs.id, pages.position LIMIT :free"),
                        {"owner": owner, "running": running, "free": free})])
            admitted = [page for turn in zip_longest(*by_owner) for page in turn if page is not None]
            if admitted:
                db.execute(text(f"UPDATE pages SET dispatches = :dispatch, dispatched_at = :now WHERE {_PAGE_KEY}"),
                           [{"dispatch": p.dispatch, "now": now, "job": p.job_id, "file": p.file_index,
                             "page": p.page_index} for p in admitted])
            return admitted

    def forget_dispatches(self, sent_before: float | None = None, running_since_before: float | None = None) -> int:
        """Mark unfinished pages of running jobs unsent, so `admit_pages` sends them again under
        a new number: all of them (None: the embedded broker, emptied at start-up), or those
        sent before `sent_before` and not taken since, and those taken before
        `running_since_before` (a task that can no longer be running: killed past its hard limit)."""
        with database.write(self.engine, serial=True) as db:
            if sent_before is None:
                return db.execute(text(f"UPDATE pages SET dispatched_at = NULL WHERE state IN {_ACTIVE_PAGE} "
                                       f"AND dispatched_at IS NOT NULL")).rowcount
            return db.execute(text(
                "UPDATE pages SET dispatched_at = NULL WHERE dispatched_at IS NOT NULL "
                "AND ((state = :queued AND dispatched_at < :sent_before) OR (state = :running AND updated_at < :since)) "
                "AND (SELECT state FROM jobs WHERE id = pages.job_id) = :job_running"),
                {"queued": PageState.QUEUED.value, "sent_before": sent_before, "running": PageState.RUNNING.value,
                 "since": running_since_before if running_since_before is not None else sent_before,
                 "job_running": JobState.RUNNING.value}).rowcount

    def unfinished_jobs_without_pages(self) -> list[str]:
        """Running jobs whose every page is final: they wait for their finisher."""
        with self._connect() as db:
            return list(db.execute(text(
                f"SELECT id FROM jobs WHERE state = :running "
                f"AND (finishing_until IS NULL OR finishing_until < :now) AND NOT EXISTS "
                f"(SELECT 1 FROM pages WHERE job_id = jobs.id AND state IN {_ACTIVE_PAGE}) "
                f"ORDER BY created_at"), {"running": JobState.RUNNING.value, "now": time.time()}).scalars())

    def claim_finish(self, job_id: str, lease_s: float) -> bool:
        """Take the job's finishing lease (one finisher at a time); False if another holds it."""
        now = time.time()
        with database.write(self.engine) as db:
            return db.execute(text(f"UPDATE jobs SET finishing_until = :until WHERE id = :id "
                                   f"AND state IN {_ACTIVE_JOB} AND (finishing_until IS NULL OR finishing_until < :now)"),
                              {"until": now + lease_s, "id": job_id, "now": now}).rowcount == 1

    def has_pending_pages(self, job_id: str) -> bool:
        with self._connect() as db:
            return db.execute(text(f"SELECT 1 FROM pages WHERE job_id = :job AND state IN {_ACTIVE_PAGE} LIMIT 1"),
                              {"job": job_id}).fetchone() is not None

    def mark_job_sent(self, job_id: str) -> None:
        """The job's start task went to the broker (a queued job never sent is sent by the sweep)."""
        with database.write(self.engine) as db:
            db.execute(text("UPDATE jobs SET sent_at = :now WHERE id = :id"), {"now": time.time(), "id": job_id})

    def queued_jobs_to_send(self, created_before: float, sent_before: float) -> list[str]:
        """Queued jobs whose start task was never sent (created before `created_before`) or was
        sent before `sent_before` and has not started them: lost on the way."""
        with self._connect() as db:
            return list(db.execute(text(
                "SELECT id FROM jobs WHERE state = :queued AND ((sent_at IS NULL AND created_at < :created_before) "
                "OR sent_at < :sent_before) ORDER BY created_at"),
                {"queued": JobState.QUEUED.value, "created_before": created_before,
                 "sent_before": sent_before}).scalars())

    def forget_dispatch(self, pages: list[PageDispatch]) -> None:
        """Pages marked sent that could not be sent: unsent again."""
        if not pages:
            return
        with database.write(self.engine, serial=True) as db:
            db.execute(text(f"UPDATE pages SET dispatched_at = NULL WHERE {_PAGE_KEY} AND dispatches = :dispatch"),
                       [{"job": p.job_id, "file": p.file_index, "page": p.page_index, "dispatch": p.dispatch}
                        for p in pages])

    def release_finish(self, job_id: str | None = None) -> None:
        """Give up the job's finishing lease; None: every job's (a lone worker starting again)."""
        with database.write(self.engine, serial=job_id is None) as db:
            if job_id is None:
                db.execute(text("UPDATE jobs SET finishing_until = NULL WHERE finishing_until IS NOT NULL"))
                return
            db.execute(text("UPDATE jobs SET finishing_until = NULL WHERE id = :id"), {"id": job_id})

    def delete_finished_before(self, finished_before: float) -> list[str]:
        """Delete jobs (and their pages) that ended before `finished_before`; returns their ids."""
        with database.write(self.engine, serial=True) as db:
            ids = list(db.execute(text(f"SELECT id FROM jobs WHERE state IN {_FINAL_JOB} AND finished_at < :before"),
                                  {"before": finished_before}).scalars())
            if ids:
                db.execute(text("DELETE FROM jobs WHERE id = :id"), [{"id": job_id} for job_id in ids])
            return ids

    def save_page(self, job_id: str, file_index: int, page_index: int, state: PageState, reason: str | None,
                  result: dict[str, Any] | None, region_counts: tuple[int, int, int] = (0, 0, 0)) -> bool:
        """Record a page's outcome; False when the page was already final (cancelled, or a duplicate run)."""
        assert state in (PageState.DONE, PageState.FAILED)
        regions_ok, regions_fallback, regions_failed = region_counts
        with database.write(self.engine) as db:
            job_events.lock_job(db, job_id)   # the job before its page: the store's lock order
            saved = db.execute(text(
                f"UPDATE pages SET state = :state, reason = :reason, result = :result, regions_ok = :ok, "
                f"regions_fallback = :fallback, regions_failed = :failed, updated_at = :now "
                f"WHERE {_PAGE_KEY} AND state IN {_ACTIVE_PAGE} "
                f"AND (SELECT state FROM jobs WHERE id = :job) IN {_ACTIVE_JOB}"),
                {"state": state.value, "reason": reason, "result": None if result is None else json.dumps(result),
                 "ok": regions_ok, "fallback": regions_fallback, "failed": regions_failed, "now": time.time(),
                 "job": job_id, "file": file_index, "page": page_index}).rowcount == 1
            if saved:
                job_events.append_page_event(db, job_id, file_index, page_index, state.value, reason)
            return saved

    def fail_stale_pages(self, job_id: str, older_than_s: float, reason: str) -> int:
        """Fail pages left `running` longer than any live task may run (their worker was
        killed by the hard time limit); returns how many."""
        now = time.time()
        with database.write(self.engine, serial=True) as db:
            job_events.lock_job(db, job_id)
            failed = db.execute(text("UPDATE pages SET state = :failed, reason = :reason, updated_at = :now "
                                     "WHERE job_id = :job AND state = :running AND updated_at < :before "
                                     "RETURNING file_index, page_index"),
                                {"failed": PageState.FAILED.value, "reason": reason, "now": now, "job": job_id,
                                 "running": PageState.RUNNING.value, "before": now - older_than_s}).fetchall()
            for file_index, page_index in sorted(failed):
                job_events.append_page_event(db, job_id, file_index, page_index, PageState.FAILED.value, reason)
            return len(failed)

    def page_results(self, job_id: str) -> dict[tuple[int, int], dict[str, Any]]:
        with self._connect() as db:
            rows = db.execute(text("SELECT file_index, page_index, result FROM pages WHERE job_id = :job "
                                   "AND result IS NOT NULL"), {"job": job_id}).fetchall()
            return {(row.file_index, row.page_index): json.loads(row.result) for row in rows}

    def finish_job(self, job_id: str, state: JobState, error: str | None = None) -> bool:
        assert state in (JobState.DONE, JobState.FAILED)
        now = time.time()
        with database.write(self.engine, serial=True) as db:
            changed = db.execute(text(f"UPDATE jobs SET state = :state, error = :error, updated_at = :now, "
                                      f"finished_at = :now WHERE id = :id AND state IN {_ACTIVE_JOB}"),
                                 {"state": state.value, "error": error, "now": now, "id": job_id}).rowcount == 1
            if changed and state is JobState.FAILED:
                db.execute(text(f"UPDATE pages SET state = :failed, reason = COALESCE(reason, :error), "
                                f"updated_at = :now WHERE job_id = :job AND state IN {_ACTIVE_PAGE}"),
                           {"failed": PageState.FAILED.value, "error": error, "now": now, "job": job_id})
            if changed:
                job_events.append_job_event(db, job_id, state.value, error)
            return changed

    def cancel_job(self, job_id: str) -> bool:
        now = time.time()
        with database.write(self.engine, serial=True) as db:
            changed = db.execute(text(f"UPDATE jobs SET state = :cancelled, updated_at = :now, finished_at = :now "
                                      f"WHERE id = :id AND state IN {_ACTIVE_JOB}"),
                                 {"cancelled": JobState.CANCELLED.value, "now": now, "id": job_id}).rowcount == 1
            if changed:
                db.execute(text(f"UPDATE pages SET state = :cancelled, updated_at = :now WHERE job_id = :job "
                                f"AND state IN {_ACTIVE_PAGE}"),
                           {"cancelled": PageState.CANCELLED.value, "now": now, "job": job_id})
                job_events.append_job_event(db, job_id, JobState.CANCELLED.value)
            return changed

    def delete_job(self, job_id: str, owner: str) -> bool:
        """Remove a finished job of `owner` and (by cascade) its pages; False if it is
        not final any more, not the owner's, or already gone."""
        with database.write(self.engine, serial=True) as db:
            return db.execute(text(f"DELETE FROM jobs WHERE id = :id AND owner = :owner "
                                   f"AND state NOT IN {_ACTIVE_JOB}"), {"id": job_id, "owner": owner}).rowcount == 1

    def _connect(self):
        """A connection for reads."""
        return database.read(self.engine)

    def _job_from_row(self, db: Connection, row: Row) -> JobRecord:
        pages = tuple(PageRecord(p.file_index, p.page_index, PageState(p.state), p.reason, p.attempts,
                                 p.regions_ok, p.regions_fallback, p.regions_failed, p.lost_runs)
                      for p in db.execute(text(f"SELECT {_PAGE_COLUMNS} FROM pages WHERE job_id = :job "
                                               f"ORDER BY position"), {"job": row.id}))
        return JobRecord(
            id=row.id, owner=row.owner, state=JobState(row.state), created_at=row.created_at,
            updated_at=row.updated_at, options=JobOptions.from_dict(json.loads(row.options)),
            files=tuple(JobFile.from_dict(f) for f in json.loads(row.files)), pages=pages,
            finished_at=row.finished_at, error=row.error)
