"""Files that more than one host needs: uploads, per-page PDFs, figure crops and
the finished outputs.

Every process keeps working on files in its own data directory (`DataDir`'s
layout; the key of a file is its path under the data directory). A blob store
says what of that directory is shared:

- `LocalBlobStore` (the default, `OCRSERVE_BLOB_STORE=local`): the data
  directory itself is the shared place (one host, or one volume all hosts
  mount); publishing and fetching are no-ops.
- `DatabaseBlobStore` (`OCRSERVE_BLOB_STORE=database`): files are copied into the
  job store's database (`OCRSERVE_DATABASE_URL`, PostgreSQL) in chunks of
  `CHUNK_BYTES`, so an API host and worker hosts that share nothing but the
  database and the broker work. The local directory is then a cache: a file is
  published after it is written and fetched before it is read, streamed one chunk
  at a time both ways (never a whole file in memory), and a host's copies of a
  job are dropped once the job is final (`prune_local_copies`).

What writes where: the API publishes uploads; a page task fetches its upload and
publishes its page PDF and figures; the finisher fetches every page PDF afresh
(a redelivered page may have been written again on another host) and publishes
the outputs; the API streams outputs and figures from the store. An S3-compatible
store would be a third implementation of the same four methods.
"""
from __future__ import annotations

import hashlib
import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import (BigInteger, Column, Connection, Double, Engine, ForeignKeyConstraint, Index, Integer,
                        LargeBinary, MetaData, PrimaryKeyConstraint, Table, Text, text)

from workers import database
from workers.data_dir import JOB_ID_PATTERN, DataDir, write_atomically_with

CHUNK_BYTES = 1024 * 1024
METADATA = MetaData()
BLOBS = Table(
    "blobs", METADATA,
    Column("key", Text, primary_key=True), Column("job_id", Text, nullable=False),
    Column("size", BigInteger, nullable=False), Column("sha256", Text, nullable=False),
    Column("updated_at", Double, nullable=False), Index("blobs_by_job", "job_id"))
BLOB_CHUNKS = Table(
    "blob_chunks", METADATA,
    Column("key", Text, nullable=False), Column("seq", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
    PrimaryKeyConstraint("key", "seq"), ForeignKeyConstraint(["key"], ["blobs.key"], ondelete="CASCADE"))


def create_tables(conn: Connection) -> None:
    """The job store's migration 2 (workers/job_store.py)."""
    METADATA.create_all(conn, checkfirst=True)


class BlobStore:
    """The interface (see the module's docstring); `shared` says whether files must be published."""

    shared = False

    def __init__(self, data_dir: DataDir):
        self.data_dir = data_dir

    def publish(self, path: Path) -> None:
        """Make the local file at `path` what every host reads under its key."""

    def fetch(self, path: Path, refresh: bool = False) -> bool:
        """Have the file locally at `path` (from the store when there is no local copy, or
        always with `refresh`); False when it exists nowhere."""
        return path.is_file()

    def exists(self, path: Path) -> bool:
        return path.is_file()

    def stream(self, path: Path) -> Iterator[bytes] | None:
        """The file's bytes in chunks, without keeping a local copy; None when it does not exist."""
        if not path.is_file():
            return None
        return _file_chunks(path)

    def remove_job(self, job_id: str) -> None:
        """Forget every file of the job (the local directory is the caller's to clean)."""

    def remove_folder(self, folder: Path) -> None:
        """Forget every file under a job's folder (its page PDFs once they are not needed)."""


class LocalBlobStore(BlobStore):
    """The data directory is the one shared place."""


class DatabaseBlobStore(BlobStore):
    shared = True

    def __init__(self, data_dir: DataDir, engine: Engine):
        super().__init__(data_dir)
        self.engine = engine

    def publish(self, path: Path) -> None:
        key, job_id = self._key(path)
        digest = hashlib.sha256()
        size = 0
        with database.write(self.engine) as db:
            # The row first: on PostgreSQL its lock keeps two publishers of one key (a redelivered
            # page) apart; the chunks are replaced under it.
            db.execute(text("INSERT INTO blobs (key, job_id, size, sha256, updated_at) VALUES (:key, :job, 0, '', :now) "
                            "ON CONFLICT (key) DO UPDATE SET size = 0, sha256 = '', updated_at = :now"),
                       {"key": key, "job": job_id, "now": time.time()})
            db.execute(text("DELETE FROM blob_chunks WHERE key = :key"), {"key": key})
            with open(path, "rb") as source:
                for seq, chunk in enumerate(iter(lambda: source.read(CHUNK_BYTES), b"")):
                    db.execute(text("INSERT INTO blob_chunks (key, seq, data) VALUES (:key, :seq, :data)"),
                               {"key": key, "seq": seq, "data": chunk})
                    digest.update(chunk)
                    size += len(chunk)
            db.execute(text("UPDATE blobs SET size = :size, sha256 = :sha WHERE key = :key"),
                       {"size": size, "sha": digest.hexdigest(), "key": key})

    def fetch(self, path: Path, refresh: bool = False) -> bool:
        if path.is_file() and not refresh:
            return True
        chunks = self.stream(path)
        if chunks is None:
            return False

        def write(out) -> None:
            for chunk in chunks:
                out.write(chunk)
        write_atomically_with(path, write)
        return True

    def exists(self, path: Path) -> bool:
        key, _ = self._key(path)
        with database.read(self.engine) as db:
            return db.execute(text("SELECT 1 FROM blobs WHERE key = :key"), {"key": key}).fetchone() is not None

    def stream(self, path: Path) -> Iterator[bytes] | None:
        key, _ = self._key(path)
        with database.read(self.engine) as db:
            row = db.execute(text("SELECT size, sha256 FROM blobs WHERE key = :key"), {"key": key}).fetchone()
        if row is None or not row.sha256:   # absent, or still being published
            return None
        return self._chunks(key, row.size, row.sha256)

    def _chunks(self, key: str, size: int, sha256: str) -> Iterator[bytes]:
        """One chunk at a time, each read in a short transaction of its own: no pooled connection
        is held while the caller waits (a download whose client stops reading would otherwise
        keep one for ever). A chunk is read only while the file's row still carries the digest
        it was published with, and the whole is checked against it: a file re-published or
        deleted meanwhile is an error, not a mix of two."""
        digest, seen = hashlib.sha256(), 0
        for seq in itertools.count():
            with database.read(self.engine) as db:
                row = db.execute(text("SELECT c.data FROM blob_chunks c JOIN blobs b ON b.key = c.key "
                                      "WHERE c.key = :key AND c.seq = :seq AND b.sha256 = :sha"),
                                 {"key": key, "seq": seq, "sha": sha256}).fetchone()
            if row is None:
                break
            chunk = bytes(row.data)
            digest.update(chunk)
            seen += len(chunk)
            yield chunk
        if seen != size or digest.hexdigest() != sha256:
            raise OSError(f"{key} changed while it was read; read it again")

    def remove_job(self, job_id: str) -> None:
        with database.write(self.engine) as db:
            db.execute(text("DELETE FROM blobs WHERE job_id = :job"), {"job": job_id})

    def remove_folder(self, folder: Path) -> None:
        key, job_id = self._key(folder / "x")
        prefix = key[:-1]   # "results/JOB/pages/"; compared as a prefix, not a LIKE pattern
        with database.write(self.engine) as db:
            db.execute(text("DELETE FROM blobs WHERE job_id = :job AND substr(key, 1, :n) = :prefix"),
                       {"job": job_id, "n": len(prefix), "prefix": prefix})

    def _key(self, path: Path) -> tuple[str, str]:
        """The file's key (its path under the data directory) and the job it belongs to."""
        relative = Path(os.path.abspath(path)).relative_to(self.data_dir.root)
        parts = relative.parts
        if len(parts) < 3 or parts[0] not in ("uploads", "results"):
            raise ValueError(f"{path} is not a job's file in the data directory")
        return relative.as_posix(), parts[1]


def blob_store_for(settings, data_dir: DataDir) -> BlobStore:
    """The store `OCRSERVE_BLOB_STORE` names, in the job store's database for `database`."""
    if settings.blob_store == "database":
        return DatabaseBlobStore(data_dir, database.engine_for(settings.job_store_location))
    return LocalBlobStore(data_dir)


def prune_local_copies(blobs: BlobStore, job_ids_final_or_gone) -> int:
    """With a shared store, drop this host's copies of jobs that are final or deleted
    (`job_ids_final_or_gone(ids)` picks them from the job ids found locally); returns how many."""
    if not blobs.shared:
        return 0
    data_dir = blobs.data_dir
    local = sorted({p.name for folder in (data_dir.root / "uploads", data_dir.root / "results")
                    if folder.is_dir() for p in folder.iterdir() if p.is_dir() and JOB_ID_PATTERN.match(p.name)})
    done = job_ids_final_or_gone(local) if local else []
    for job_id in done:
        data_dir.remove_job_files(job_id)
    return len(done)


def _file_chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as source:
        yield from iter(lambda: source.read(CHUNK_BYTES), b"")

