"""What `GET /health` and `ocrserve status` report: the job store, the broker, the workers.

- database: the job store (SQLite or PostgreSQL) answers a query (and how many jobs are
  queued or running);
- broker: a connection to it opens (Redis, or the embedded SQLite broker);
- workers: the Celery workers that answer a ping on the broker within the timeout. The
  embedded broker carries no broadcast (kombu's SQLAlchemy transport has no fanout), so
  there the workers are not known; `serve` and `run` start their own.

- children: under `ocrserve serve`, the worker and engines it supervises (app/supervisor.py
  writes `serve-children.json` in the data directory; a child down, being restarted, says
  why). Absent when no live `serve` runs on this data directory.

Each check is bounded by `timeout_s` and never raises: a failure is reported, with its
reason, as `ok: false`. `status` is "ok" when the job store and the broker answer and no
supervised child is down, else "degraded" (the API itself is up: it answered).
"""
from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from workers.job_service import JobService

DEFAULT_TIMEOUT_S = 2.0
CHILDREN_REPORT = "serve-children.json"


@dataclass
class ServiceStatus:
    database: dict[str, Any]
    broker: dict[str, Any]
    workers: dict[str, Any]
    worker_names: list[str] = field(default_factory=list)
    checked_at: float = field(default_factory=time.time)
    children: dict[str, dict[str, Any]] | None = None   # name -> {"ok", "detail", "restarts", ...}

    @property
    def ok(self) -> bool:
        children_ok = all(child["ok"] for child in (self.children or {}).values())
        return bool(self.database["ok"] and self.broker["ok"] and children_ok)

    def with_children_from(self, data_dir: Path) -> ServiceStatus:
        """This report with the supervised children as they are now (read afresh: cheap)."""
        return replace(self, children=read_children_report(data_dir))

    def to_dict(self, with_worker_names: bool = False) -> dict[str, Any]:
        workers = dict(self.workers)
        if with_worker_names:
            workers["names"] = self.worker_names
        report = {"status": "ok" if self.ok else "degraded", "database": self.database, "broker": self.broker,
                  "workers": workers}
        if self.children is not None:
            report["children"] = self.children
        return report


def write_children_report(data_dir: Path, children: dict[str, dict[str, Any]]) -> None:
    """What `serve`'s supervisor knows of its children, for /health and `ocrserve status`."""
    from workers.data_dir import write_atomically

    write_atomically(data_dir / CHILDREN_REPORT, json.dumps({"pid": os.getpid(), "children": children}).encode())


def read_children_report(data_dir: Path) -> dict[str, dict[str, Any]] | None:
    """The children of the `serve` running on `data_dir`; None when none runs (no report, an
    unreadable one, or one its dead writer left behind)."""
    try:
        report = json.loads((data_dir / CHILDREN_REPORT).read_text())
        pid, children = int(report["pid"]), dict(report["children"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass   # alive, another user's
    return children


def check_services(service: JobService, timeout_s: float = DEFAULT_TIMEOUT_S) -> ServiceStatus:
    embedded = service.settings.uses_embedded_broker
    database = _check_database(service, timeout_s)
    broker = _check_broker(service, timeout_s)
    broker["kind"] = "embedded" if embedded else "redis"
    names: list[str] = []
    if embedded:
        workers: dict[str, Any] = {"count": None, "detail": "not known with the embedded broker"}
    elif not broker["ok"]:
        workers = {"count": None, "detail": "the broker does not answer"}
    else:
        try:
            replies = service.celery_app.control.inspect(timeout=timeout_s).ping() or {}
            names = sorted(replies)
            workers = {"count": len(names)}
        except Exception as exc:   # noqa: BLE001 - reported, never raised
            workers = {"count": None, "detail": _reason(exc)}
    return ServiceStatus(database, broker, workers, names, children=read_children_report(service.data_dir.root))


def _check_database(service: JobService, timeout_s: float) -> dict[str, Any]:
    kind = "postgresql" if service.store.is_postgresql else "sqlite"
    # In a thread of its own, so a database host that does not answer costs the check
    # `timeout_s`, not the driver's connect timeout.
    pool = ThreadPoolExecutor(1, thread_name_prefix="health-db")
    try:
        return {"ok": True, "kind": kind, "jobs_active": pool.submit(service.store.num_active_jobs).result(timeout_s)}
    except FutureTimeout:
        return {"ok": False, "kind": kind, "detail": f"no answer within {timeout_s:g} s"}
    except Exception as exc:   # noqa: BLE001 - reported, never raised
        return {"ok": False, "kind": kind, "detail": _reason(exc)}
    finally:
        pool.shutdown(wait=False)


def _check_broker(service: JobService, timeout_s: float) -> dict[str, Any]:
    try:
        with service.celery_app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=timeout_s)
        return {"ok": True}
    except Exception as exc:   # noqa: BLE001 - reported, never raised
        return {"ok": False, "detail": _reason(exc)}


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:200]
