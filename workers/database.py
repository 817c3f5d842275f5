"""The database the job store (and, when asked, the blob store) lives in: the
embedded SQLite file in the data directory, or PostgreSQL when
`OCRSERVE_DATABASE_URL=postgresql://...` is set, so that an API host and worker
hosts that share no disk can share one store.

One SQLAlchemy engine per process and URL. Engines hold pooled connections, and
a connection must never cross a fork (Celery's prefork pool forks after the
parent may have used the store): the child drops the parent's pool without
closing its sockets (`dispose(close=False)`) and opens its own.

Transactions, `write()`:
- SQLite: `BEGIN IMMEDIATE` takes the file's write lock up front, so two
  writers never deadlock upgrading a read lock; a busy timeout waits for it.
- PostgreSQL: READ COMMITTED. Statements that write one row (claim, save,
  release a page) rely on the row lock their UPDATE or `SELECT ... FOR UPDATE`
  takes; a transaction that writes many rows of several jobs (admission,
  cancellation, sweeps) passes `serial=True` and first takes one transaction-
  level advisory lock, so those run one at a time. A single-row writer waits on
  nothing while it holds its row, and serial writers never wait on each other,
  so no lock cycle, no deadlock.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

BUSY_TIMEOUT_S = 30.0
SERIAL_LOCK_KEY = 0x6F63727365727665   # "ocrserve": the advisory lock serial writers take on PostgreSQL
_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def database_url(location: str | os.PathLike[str]) -> str:
    """A SQLAlchemy URL for a store location: a `postgresql://` URL (driven by psycopg), any
    other URL as given, or a file path (SQLite)."""
    text = os.fspath(location)
    if "://" not in text:
        return f"sqlite:///{Path(text).resolve()}"
    url = make_url(text)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    elif url.drivername not in ("postgresql+psycopg", "sqlite", "sqlite+pysqlite"):
        raise ValueError(f"unsupported database {url.drivername!r}: use postgresql://... or a SQLite file")
    return url.render_as_string(hide_password=False)


def redacted(location: str | os.PathLike[str]) -> str:
    """The location without its password, for logs and `ocrserve status`."""
    text = os.fspath(location)
    return make_url(text).render_as_string(hide_password=True) if "://" in text else text


def is_postgresql(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


def engine_for(location: str | os.PathLike[str]) -> Engine:
    url = database_url(location)
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _engines[url] = _make_engine(url)
        return engine


def _make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        # A connection per checkout (cheap for SQLite); autocommit at the driver, so `write()`
        # alone says where a transaction begins and ends.
        engine = create_engine(url, poolclass=NullPool,
                               connect_args={"timeout": BUSY_TIMEOUT_S, "isolation_level": None,
                                             "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection, _record) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.close()
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=4, max_overflow=8, pool_recycle=1800,
                         connect_args={"connect_timeout": 10, "application_name": "ocrserve"})


@contextmanager
def read(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as conn:
        if is_postgresql(engine):
            with conn.begin():
                yield conn
        else:
            yield conn


@contextmanager
def write(engine: Engine, serial: bool = False) -> Iterator[Connection]:
    """A write transaction (see the module's docstring for how each database keeps writers apart)."""
    with engine.connect() as conn:
        if is_postgresql(engine):
            with conn.begin():
                if serial:
                    conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SERIAL_LOCK_KEY})")
                yield conn
            return
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.exec_driver_sql("ROLLBACK")
            raise
        conn.exec_driver_sql("COMMIT")


def _after_fork_in_child() -> None:
    global _engines_lock
    _engines_lock = threading.Lock()   # a thread of the parent may have held it at the fork
    for engine in list(_engines.values()):
        engine.dispose(close=False)   # the parent's sockets stay the parent's
    _engines.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)
