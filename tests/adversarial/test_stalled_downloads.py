"""Stalled and vanishing downloads (issue 33, finding 1): with the blob store in PostgreSQL
(`OCRSERVE_BLOB_STORE=database`), clients that start downloading a large result and then stop
reading, or disappear, must not hold the API's database connections, must not starve other
keys, and are ended by the configured idle timeout.

Real PostgreSQL (tests/postgres_server.py), a real `ocrserve api` (uvicorn) process, raw
sockets with a 4 KiB receive buffer that read the status line and then nothing. Before the
fix each stalled download held a pooled connection "idle in transaction" inside its stream,
so 13 of them exhausted the pool (4 + 8) and every other key's GET /v1/jobs got 500.

No timing threshold but the configured one: the only clock read checks that a stalled
download was not cut before its idle timeout; the other waits are hang guards.
"""
from __future__ import annotations

import hashlib
import os
import socket
import struct
import time

import httpx
import pytest
from sqlalchemy import text

from .conftest import report, scaled
from .services import ApiProcess, service_env, wait_for

pytestmark = pytest.mark.slow

KEYS = {"alice": "alice-download-key", "bob": "bob-download-key"}
RESULT_BYTES = 12 * 1024 * 1024
IDLE_TIMEOUT_S = 8           # OCRSERVE_DOWNLOAD_IDLE_TIMEOUT_S here
PER_KEY = 4                  # OCRSERVE_MAX_CONCURRENT_DOWNLOADS_PER_KEY here
NUM_STALLED = 13             # one more than the API's database pool (4 + 8 overflow)
GUARD_S = 120
ENDED_LINE = "a download of "


@pytest.fixture(scope="module")
def deployment(tmp_path_factory, postgres_server):
    """An API in database-blob mode and one finished job per key, each with a 12 MiB result."""
    from app.api_keys import KeyRing
    from workers.blob_store import DatabaseBlobStore
    from workers.data_dir import DataDir
    from workers.job_model import JobFile, JobOptions, JobState
    from workers.job_store import JobStore

    root = tmp_path_factory.mktemp("stalled-downloads")
    url = postgres_server.new_database()
    store = JobStore(url)
    ring = KeyRing(",".join(KEYS.values()), root / "no-keys-file", "keys")
    seed = DatabaseBlobStore(DataDir(root / "seed").ensure(), store.engine)
    jobs = {}
    for name, key in KEYS.items():
        job_id = store.new_job_id()
        store.create_job(job_id, ring.owner_for(key), [JobFile("a.pdf", "pdf", 1, "0" * 64, (0,))],
                         JobOptions(formats=("md",)))
        assert store.finish_job(job_id, JobState.DONE)
        body = os.urandom(RESULT_BYTES)
        path = seed.data_dir.result_path(job_id, "md")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        seed.publish(path)
        jobs[name] = (job_id, hashlib.sha256(body).hexdigest())
    env = service_env(root / "api-data", api_keys=",".join(KEYS.values()), blob_store="database", database_url=url,
                      download_idle_timeout_s=IDLE_TIMEOUT_S, max_concurrent_downloads_per_key=PER_KEY)
    api = ApiProcess(env, root / "api.log").wait_ready()
    try:
        yield api, store, url.rsplit("/", 1)[1], jobs
    finally:
        api.stop()


def start_download(port: int, key: str, job_id: str) -> tuple[socket.socket, bytes]:
    """A download over a raw socket that reads the status line, then stops reading."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(GUARD_S)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET /v1/jobs/{job_id}/result?format=md HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 f"Authorization: Bearer {key}\r\nConnection: close\r\n\r\n".encode())
    status = b""
    while len(status) < 12:
        status += sock.recv(12 - len(status))
    return sock, status


def read_to_end(sock: socket.socket, first: bytes = b"") -> bytes:
    chunks = [first]
    while chunk := sock.recv(1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def vanish(sock: socket.socket) -> None:
    """Close with a reset, as a client that crashed or lost its network does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def idle_in_transaction(store, database: str) -> int:
    with store.engine.connect() as db:
        return db.execute(text("SELECT count(*) FROM pg_stat_activity WHERE datname = :db "
                               "AND state LIKE 'idle in transaction%'"), {"db": database}).scalar()


def download(api: ApiProcess, key: str, job_id: str) -> httpx.Response:
    return httpx.get(f"{api.base_url}/v1/jobs/{job_id}/result", params={"format": "md"},
                     headers={"Authorization": f"Bearer {key}"}, timeout=GUARD_S)


def test_stalled_downloads_hold_no_connection_starve_no_one_and_end_by_the_idle_timeout(deployment):
    api, store, database, jobs = deployment
    alice_job, alice_sha = jobs["alice"]
    bob_job, bob_sha = jobs["bob"]
    num_stalled = scaled(NUM_STALLED)
    started = time.monotonic()
    stalled = [start_download(api.port, KEYS["alice"], alice_job) for _ in range(num_stalled)]
    try:
        # Everyone else is served while they stall: listings, and a whole download of another key.
        for key in (KEYS["bob"], KEYS["alice"], KEYS["bob"]):
            listing = httpx.get(f"{api.base_url}/v1/jobs", headers={"Authorization": f"Bearer {key}"},
                                timeout=GUARD_S)
            assert listing.status_code == 200, listing.text
        whole = download(api, KEYS["bob"], bob_job)
        assert whole.status_code == 200 and hashlib.sha256(whole.content).hexdigest() == bob_sha
        # ... and no stalled download keeps a transaction (or a pooled connection) open.
        for _ in range(3):
            assert idle_in_transaction(store, database) == 0
            time.sleep(0.2)
        statuses = [status for _, status in stalled]
        assert statuses.count(b"HTTP/1.1 200") == PER_KEY, statuses
        assert statuses.count(b"HTTP/1.1 429") == num_stalled - PER_KEY, statuses
        # The stalled ones are ended by the idle timeout (the log says so), not before it.
        wait_for(lambda: api.log_text().count(ENDED_LINE) >= PER_KEY, GUARD_S, what="the idle timeout")
        for sock, status in stalled:
            body = read_to_end(sock, status)
            if status == b"HTTP/1.1 200":
                assert len(body) < RESULT_BYTES and not body.endswith(b"\r\n0\r\n\r\n"), "sent whole"
            else:
                assert b"too_many_downloads" in body and b"retry-after" in body.lower(), body[:400]
        assert time.monotonic() - started >= IDLE_TIMEOUT_S - 0.5, "cut before the configured idle timeout"
    finally:
        for sock, _ in stalled:
            sock.close()
    # The slots are free again: the same key downloads its whole result.
    again = download(api, KEYS["alice"], alice_job)
    assert again.status_code == 200 and hashlib.sha256(again.content).hexdigest() == alice_sha
    assert "Traceback" not in api.log_text()
    report("stalled downloads", stalled=num_stalled, served=PER_KEY, refused_429=num_stalled - PER_KEY,
           idle_in_transaction=0, ended_by=f"idle timeout {IDLE_TIMEOUT_S} s", result_mib=RESULT_BYTES >> 20)


def test_vanishing_readers_free_their_slots_at_once(deployment):
    api, store, database, jobs = deployment
    alice_job, alice_sha = jobs["alice"]
    ended_before = api.log_text().count(ENDED_LINE)
    for _ in range(scaled(3)):
        readers = [start_download(api.port, KEYS["alice"], alice_job) for _ in range(PER_KEY)]
        assert [status for _, status in readers] == [b"HTTP/1.1 200"] * PER_KEY
        for sock, _ in readers:
            vanish(sock)
        # Each vanished reader's slot is freed by its disconnect: the key downloads again.
        again = wait_for(lambda: (r := download(api, KEYS["alice"], alice_job)).status_code == 200 and r,
                         GUARD_S, what="the slots of vanished readers")
        assert hashlib.sha256(again.content).hexdigest() == alice_sha
        assert idle_in_transaction(store, database) == 0
    assert api.log_text().count(ENDED_LINE) == ended_before, "freed by the idle timeout, not by the disconnect"
    assert "Traceback" not in api.log_text()
    report("vanishing downloads", rounds=scaled(3), readers_per_round=PER_KEY, idle_in_transaction=0)
