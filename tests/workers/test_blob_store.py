"""The blob store (workers/blob_store.py) in the job store's database, on SQLite and on a real
PostgreSQL: what one host publishes another host fetches byte for byte, in chunks."""
from __future__ import annotations

import os

import pytest
from sqlalchemy import text

import ocr_samples as samples
from workers import blob_store
from workers.blob_store import CHUNK_BYTES, DatabaseBlobStore, LocalBlobStore, blob_store_for
from workers.data_dir import DataDir
from workers.job_service import JobService, Upload
from workers.job_store import JobStore
from workers.settings import Settings

JOB = "0123456789abcdef0123456789abcdef"


@pytest.fixture()
def hosts(tmp_path, store_location):
    """Two hosts' blob stores: their own data directories, one database."""
    engine = JobStore(store_location).engine   # migrated: the blob tables exist
    return (DatabaseBlobStore(DataDir(tmp_path / "host-a").ensure(), engine),
            DatabaseBlobStore(DataDir(tmp_path / "host-b").ensure(), engine))


def _write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_file_published_on_one_host_is_fetched_whole_on_another(hosts):
    a, b = hosts
    data = os.urandom(2 * CHUNK_BYTES + 12345)
    _write(a.data_dir.upload_path(JOB, 0, "pdf"), data)
    a.publish(a.data_dir.upload_path(JOB, 0, "pdf"))
    there = b.data_dir.upload_path(JOB, 0, "pdf")
    assert not there.exists() and b.exists(there)
    assert b.fetch(there) and there.read_bytes() == data
    assert oct(there.stat().st_mode & 0o777) == "0o600"
    chunks = list(b.stream(there))
    assert [len(c) for c in chunks] == [CHUNK_BYTES, CHUNK_BYTES, 12345], "streamed a chunk at a time"


def test_publishing_again_replaces_and_a_refresh_fetches_the_new_bytes(hosts):
    a, b = hosts
    path_a = _write(a.data_dir.results_dir(JOB) / "pages" / "0-0.pdf", b"first run" * 1000)
    a.publish(path_a)
    path_b = b.data_dir.results_dir(JOB) / "pages" / "0-0.pdf"
    assert b.fetch(path_b) and path_b.read_bytes() == b"first run" * 1000
    _write(path_a, b"second run")   # the page ran again on host a
    a.publish(path_a)
    assert b.fetch(path_b) and path_b.read_bytes() == b"first run" * 1000, "a local copy is used as it is"
    assert b.fetch(path_b, refresh=True) and path_b.read_bytes() == b"second run"


def test_an_empty_file_and_a_missing_one(hosts):
    a, b = hosts
    a.publish(_write(a.data_dir.result_path(JOB, "txt"), b""))
    assert b.fetch(b.data_dir.result_path(JOB, "txt")) and b.data_dir.result_path(JOB, "txt").read_bytes() == b""
    assert not b.fetch(b.data_dir.result_path(JOB, "md")) and b.stream(b.data_dir.result_path(JOB, "md")) is None
    assert not b.exists(b.data_dir.result_path(JOB, "md"))


def test_removing_a_job_removes_its_files_and_no_others(hosts):
    a, b = hosts
    other = "f" * 32
    for job in (JOB, other):
        a.publish(_write(a.data_dir.figures_dir(job) / "p1.png", job.encode()))
    a.remove_job(JOB)
    assert not b.exists(b.data_dir.figures_dir(JOB) / "p1.png")
    assert b.fetch(b.data_dir.figures_dir(other) / "p1.png")


def test_a_file_outside_a_jobs_folders_has_no_key(hosts):
    a, _ = hosts
    with pytest.raises(ValueError):
        a.publish(_write(a.data_dir.root / "api-keys", b"secret"))


def test_a_hosts_copies_of_final_jobs_are_dropped_and_the_store_keeps_them(hosts):
    a, b = hosts
    a.publish(_write(a.data_dir.result_path(JOB, "md"), b"# done"))
    running = "a" * 32
    _write(a.data_dir.upload_path(running, 0, "png"), b"still needed")
    assert blob_store.prune_local_copies(a, lambda ids: [i for i in ids if i != running]) == 1
    assert not a.data_dir.results_dir(JOB).exists() and a.data_dir.upload_path(running, 0, "png").exists()
    assert b.fetch(b.data_dir.result_path(JOB, "md"))
    assert blob_store.prune_local_copies(LocalBlobStore(a.data_dir), lambda ids: ids) == 0, \
        "the data directory is the only copy when it is the shared place"


def test_settings_choose_the_store_and_refuse_a_database_store_without_a_database(tmp_path, store_location):
    with pytest.raises(ValueError, match="OCRSERVE_DATABASE_URL"):
        Settings(data_dir=tmp_path, blob_store="database")
    data_dir = DataDir(tmp_path).ensure()
    assert isinstance(blob_store_for(Settings(data_dir=tmp_path), data_dir), LocalBlobStore)
    chosen = blob_store_for(Settings(data_dir=tmp_path, blob_store="database", database_url=str(store_location)
                                     if "://" in str(store_location) else f"sqlite:///{store_location}"), data_dir)
    assert isinstance(chosen, DatabaseBlobStore) and chosen.shared


def test_a_jobs_page_pdfs_are_forgotten_alone(hosts):
    a, b = hosts
    pages = a.data_dir.results_dir(JOB) / "pages"
    a.publish(_write(pages / "0-0.pdf", b"page"))
    a.publish(_write(a.data_dir.result_path(JOB, "pdf"), b"joined"))
    a.publish(_write(a.data_dir.results_dir("b" * 32) / "pages" / "0-0.pdf", b"another job's page"))
    a.remove_folder(pages)
    assert not b.exists(b.data_dir.results_dir(JOB) / "pages" / "0-0.pdf")
    assert b.exists(b.data_dir.result_path(JOB, "pdf"))
    assert b.exists(b.data_dir.results_dir("b" * 32) / "pages" / "0-0.pdf")


def test_a_submission_that_fails_after_its_uploads_were_published_leaves_nothing(tmp_path, postgres_url,
                                                                                  monkeypatch):
    service = JobService(Settings(data_dir=tmp_path, database_url=postgres_url, blob_store="database"))

    def broken_create(*args, **kwargs):
        raise RuntimeError("the database went away")
    monkeypatch.setattr(service.store, "create_job", broken_create)
    with pytest.raises(RuntimeError):
        service.submit("alice", [Upload("a.pdf", samples.multi_page_pdf(1))])
    with service.store.engine.connect() as db:
        assert db.execute(text("SELECT count(*) FROM blobs")).scalar_one() == 0
    assert [p.name for p in (tmp_path / "uploads").iterdir()] == [".incoming"], "no job folder left"
