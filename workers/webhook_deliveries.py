"""Webhook deliveries as the job store keeps them: an outbox row per event a job's
`callback_url` must hear of, written in the event's own transaction
(workers/job_events.py), so no event is lost between its state change and its
delivery, whichever process made the change.

| state       | meaning                                                               |
|-------------|-----------------------------------------------------------------------|
| `pending`   | to send at `next_attempt_at` (the first at once, retries with backoff) |
| `delivered` | the receiver answered 2xx                                             |
| `failed`    | given up: out of attempts, or refused by the deployment's address rules |

A sender takes a due row by a lease (`claim_due`): two workers never send the
same attempt, and a sender that dies mid-attempt leaves a lease that expires,
so the row is sent again. Every attempt is recorded (time, HTTP status or
error, duration) in the row's `attempts_log`, which `GET /v1/jobs/{id}/deliveries`
shows. A delivery never changes its job.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (Column, Connection, Double, ForeignKeyConstraint, Index, Integer, MetaData, Table, Text,
                        text)

METADATA = MetaData()
Table("jobs", METADATA, Column("id", Text, primary_key=True))   # what the foreign key names (job_store.py has it all)
WEBHOOK_DELIVERIES = Table(
    "webhook_deliveries", METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", Text, nullable=False), Column("event_seq", Integer, nullable=False),
    Column("url", Text, nullable=False), Column("state", Text, nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("next_attempt_at", Double, nullable=False), Column("lease_until", Double),
    Column("last_status", Integer), Column("last_error", Text),
    Column("attempts_log", Text, nullable=False, server_default="[]"),
    Column("created_at", Double, nullable=False), Column("updated_at", Double, nullable=False),
    ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"),
    Index("webhook_deliveries_due", "state", "next_attempt_at"),
    Index("webhook_deliveries_by_job", "job_id", "id"))
PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


@dataclass(frozen=True)
class Delivery:
    id: int
    job_id: str
    event_seq: int
    url: str
    state: str
    attempts: int
    next_attempt_at: float
    last_status: int | None
    last_error: str | None
    attempts_log: tuple[dict[str, Any], ...]
    created_at: float
    updated_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "event_id": self.event_seq, "url": self.url, "state": self.state,
                "attempts": self.attempts, "next_attempt_at": self.next_attempt_at if self.state == PENDING else None,
                "last_status": self.last_status, "last_error": self.last_error,
                "attempts_log": list(self.attempts_log), "created_at": self.created_at,
                "updated_at": self.updated_at}


def create_tables(conn: Connection) -> None:
    METADATA.create_all(conn, tables=[WEBHOOK_DELIVERIES], checkfirst=True)


def queue_delivery(conn: Connection, job_id: str, event_seq: int, url: str, now: float) -> None:
    """Inside the event's transaction: the delivery, due at once."""
    conn.execute(WEBHOOK_DELIVERIES.insert().values(job_id=job_id, event_seq=event_seq, url=url, state=PENDING,
                                                    next_attempt_at=now, created_at=now, updated_at=now))


def due_ids(conn: Connection, now: float, limit: int) -> list[int]:
    """Pending deliveries due by `now` and not leased to a sender, oldest first."""
    return list(conn.execute(text(
        "SELECT id FROM webhook_deliveries WHERE state = :pending AND next_attempt_at <= :now "
        "AND (lease_until IS NULL OR lease_until < :now) ORDER BY next_attempt_at, id LIMIT :limit"),
        {"pending": PENDING, "now": now, "limit": limit}).scalars())


def claim(conn: Connection, delivery_id: int, now: float, lease_s: float) -> bool:
    """Lease a due delivery to this sender; False when another took it first."""
    return conn.execute(text(
        "UPDATE webhook_deliveries SET lease_until = :until WHERE id = :id AND state = :pending "
        "AND (lease_until IS NULL OR lease_until < :now)"),
        {"until": now + lease_s, "id": delivery_id, "pending": PENDING, "now": now}).rowcount == 1


def record_attempt(conn: Connection, delivery_id: int, attempt: dict[str, Any], state: str,
                   next_attempt_at: float | None, max_logged: int = 20) -> None:
    """One attempt's outcome; the row's new state (pending again with its next time, or final)."""
    row = conn.execute(text("SELECT attempts_log FROM webhook_deliveries WHERE id = :id"),
                       {"id": delivery_id}).fetchone()
    if row is None:   # its job was deleted meanwhile
        return
    log = (json.loads(row.attempts_log) + [attempt])[-max_logged:]
    now = time.time()
    conn.execute(text(
        "UPDATE webhook_deliveries SET attempts = attempts + 1, state = :state, lease_until = NULL, "
        "next_attempt_at = :next_at, last_status = :status, last_error = :error, attempts_log = :log, "
        "updated_at = :now WHERE id = :id"),
        {"state": state, "next_at": next_attempt_at if next_attempt_at is not None else now,
         "status": attempt.get("status"), "error": attempt.get("error"), "log": json.dumps(log), "now": now,
         "id": delivery_id})


def get(conn: Connection, delivery_id: int) -> Delivery | None:
    row = conn.execute(text(f"SELECT {_COLUMNS} FROM webhook_deliveries WHERE id = :id"),
                       {"id": delivery_id}).fetchone()
    return None if row is None else _delivery(row)


def for_job(conn: Connection, job_id: str, limit: int = 200) -> list[Delivery]:
    rows = conn.execute(text(f"SELECT {_COLUMNS} FROM webhook_deliveries WHERE job_id = :job ORDER BY id "
                             f"LIMIT :limit"), {"job": job_id, "limit": limit}).fetchall()
    return [_delivery(row) for row in rows]


_COLUMNS = ("id, job_id, event_seq, url, state, attempts, next_attempt_at, last_status, last_error, attempts_log, "
            "created_at, updated_at")


def _delivery(row: Any) -> Delivery:
    return Delivery(row.id, row.job_id, row.event_seq, row.url, row.state, row.attempts, row.next_attempt_at,
                    row.last_status, row.last_error, tuple(json.loads(row.attempts_log)), row.created_at,
                    row.updated_at)
