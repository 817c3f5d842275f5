"""Each job's event log: what happened to it and its pages, in order, durable.

The job store appends an event in the same transaction as the state change it
records, so the log and the states never disagree, whichever process (a
worker, the API cancelling, a recovery sweep) made the change. Live progress
(`GET /v1/jobs/{id}/events`, Server-Sent Events) replays the log from a client's
`Last-Event-ID`, and webhooks (workers/webhook_deliveries.py) deliver the events
that matter to the job's `callback_url`, queued by the same transaction.

| kept here                                    | how                                                    |
|----------------------------------------------|--------------------------------------------------------|
| a job's events are numbered 1, 2, 3 ...      | `seq` is the job's last number + 1, taken under the job's lock |
| a reader never sees 5 before 4 is committed  | one writer per job at a time: SQLite's `BEGIN IMMEDIATE`; PostgreSQL's row lock on the job, taken before any page row (the store's lock order, so no deadlock) |
| events go when their job goes                | `ON DELETE CASCADE` from `jobs`                        |
| a reader holds no connection between reads   | `events_after` reads in one short transaction          |

Event kinds: `job` (data: state, error, page counts) and `page` (data: 1-based
file and page numbers, state, reason, page counts).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (Column, Connection, Double, ForeignKeyConstraint, Integer, MetaData, PrimaryKeyConstraint,
                        Table, Text, text)

from workers.webhook_deliveries import queue_delivery

METADATA = MetaData()
Table("jobs", METADATA, Column("id", Text, primary_key=True))   # what the foreign key names (job_store.py has it all)
JOB_EVENTS = Table(
    "job_events", METADATA,
    Column("job_id", Text, nullable=False), Column("seq", Integer, nullable=False),
    Column("kind", Text, nullable=False), Column("data", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    PrimaryKeyConstraint("job_id", "seq"),
    ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"))
# Events a job's callback_url hears of: a page that failed, and the job's end.
WEBHOOK_TYPES = frozenset({"page.failed", "job.done", "job.failed", "job.cancelled"})
MAX_EVENTS_READ = 500   # per read: a stream sends them and reads again


@dataclass(frozen=True)
class JobEvent:
    job_id: str
    seq: int
    kind: str            # "job" or "page"
    data: dict[str, Any]
    created_at: float

    @property
    def type(self) -> str:
        """`job.done`, `page.failed`, ...: the kind and the state it reached."""
        return f"{self.kind}.{self.data['state']}"

    @property
    def is_terminal(self) -> bool:
        return self.kind == "job" and self.data["state"] in ("done", "failed", "cancelled")


def create_tables(conn: Connection) -> None:
    METADATA.create_all(conn, tables=[JOB_EVENTS], checkfirst=True)


def lock_job(conn: Connection, job_id: str) -> None:
    """Take the job's row lock (PostgreSQL; SQLite's write lock is already the whole file's) before
    touching any of its page rows: every writer takes job, then page, so none waits in a circle."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT 1 FROM jobs WHERE id = :id FOR UPDATE"), {"id": job_id})


def append_job_event(conn: Connection, job_id: str, state: str, error: str | None = None) -> JobEvent:
    return _append(conn, job_id, "job", {"state": state, "error": error})


def append_page_event(conn: Connection, job_id: str, file_index: int, page_index: int, state: str,
                      reason: str | None) -> JobEvent:
    return _append(conn, job_id, "page", {"file": file_index + 1, "page": page_index + 1, "state": state,
                                          "reason": reason})


def _append(conn: Connection, job_id: str, kind: str, data: dict[str, Any]) -> JobEvent:
    """Inside the caller's write transaction, which holds the job's lock (`lock_job`, or an UPDATE of
    the job's row): the event numbered after the job's last, and its webhook delivery if it has one."""
    lock_job(conn, job_id)
    row = conn.execute(text(
        "SELECT options, (SELECT COALESCE(MAX(seq), 0) FROM job_events WHERE job_id = :job) AS last_seq, "
        "(SELECT COUNT(*) FROM pages WHERE job_id = :job) AS total, "
        "(SELECT COUNT(*) FROM pages WHERE job_id = :job AND state IN ('done', 'failed')) AS done, "
        "(SELECT COUNT(*) FROM pages WHERE job_id = :job AND state = 'failed') AS failed "
        "FROM jobs WHERE id = :job"), {"job": job_id}).one()
    data = {**data, "pages_total": row.total, "pages_done": row.done, "pages_failed": row.failed}
    event = JobEvent(job_id, row.last_seq + 1, kind, data, time.time())
    conn.execute(text("INSERT INTO job_events (job_id, seq, kind, data, created_at) "
                      "VALUES (:job, :seq, :kind, :data, :at)"),
                 {"job": job_id, "seq": event.seq, "kind": kind, "data": json.dumps(data), "at": event.created_at})
    callback_url = json.loads(row.options).get("callback_url")
    if callback_url and event.type in WEBHOOK_TYPES:
        queue_delivery(conn, event.job_id, event.seq, callback_url, event.created_at)
    return event


def events_after(conn: Connection, job_id: str, after_seq: int, limit: int = MAX_EVENTS_READ) -> list[JobEvent]:
    rows = conn.execute(text("SELECT seq, kind, data, created_at FROM job_events WHERE job_id = :job "
                             "AND seq > :after ORDER BY seq LIMIT :limit"),
                        {"job": job_id, "after": after_seq, "limit": limit}).fetchall()
    return [JobEvent(job_id, row.seq, row.kind, json.loads(row.data), row.created_at) for row in rows]


def event(conn: Connection, job_id: str, seq: int) -> JobEvent | None:
    row = conn.execute(text("SELECT kind, data, created_at FROM job_events WHERE job_id = :job AND seq = :seq"),
                       {"job": job_id, "seq": seq}).fetchone()
    return None if row is None else JobEvent(job_id, seq, row.kind, json.loads(row.data), row.created_at)
