"""The data directory is the owner's alone whatever the umask: directories 0700,
the job store (and SQLite's side files) and written results 0600."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from workers.data_dir import DataDir, fsync_dir, write_atomically
from workers.job_store import JobStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def permissive_umask():
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


def test_a_new_data_dir_and_its_store_are_owner_only(tmp_path, permissive_umask):
    data_dir = DataDir(tmp_path / "data").ensure()
    store = JobStore(data_dir.job_store_path)
    store.new_job_id()
    for folder in (data_dir.root, data_dir.root / "uploads", data_dir.incoming_dir, data_dir.root / "results"):
        assert _mode(folder) == 0o700, folder
    sqlite_files = [p for p in data_dir.root.iterdir() if p.name.startswith("jobs.sqlite")]
    assert data_dir.job_store_path in sqlite_files
    for path in sqlite_files:
        assert _mode(path) == 0o600, path


def test_results_and_their_folders_are_owner_only(tmp_path, permissive_umask):
    data_dir = DataDir(tmp_path / "data").ensure()
    job_id = "ab" * 16
    target = data_dir.figures_dir(job_id) / "page.png"
    write_atomically(target, b"png bytes")
    assert target.read_bytes() == b"png bytes"
    assert _mode(target) == 0o600
    assert _mode(data_dir.figures_dir(job_id)) == 0o700 and _mode(data_dir.results_dir(job_id)) == 0o700
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


def test_an_existing_open_data_dir_is_closed_on_start(tmp_path):
    root = tmp_path / "data"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    (root / "jobs.sqlite").touch()
    os.chmod(root / "jobs.sqlite", 0o644)
    (root / "jobs.sqlite-wal").touch()
    os.chmod(root / "jobs.sqlite-wal", 0o644)
    DataDir(root).ensure()
    assert _mode(root) == 0o700
    assert _mode(root / "jobs.sqlite") == 0o600 and _mode(root / "jobs.sqlite-wal") == 0o600


def test_fsync_dir_accepts_a_directory(tmp_path):
    fsync_dir(tmp_path)   # the rename sites call it after os.replace


def test_stale_parts_of_cut_off_uploads_are_removed_on_start(tmp_path):
    data_dir = DataDir(tmp_path / "data").ensure()
    stale, fresh = data_dir.incoming_dir / "upload-old.part", data_dir.incoming_dir / "upload-new.part"
    stale.write_bytes(b"cut off by a crash")
    fresh.write_bytes(b"still arriving")
    day_and_more = stale.stat().st_mtime - 25 * 3600
    os.utime(stale, (day_and_more, day_and_more))
    DataDir(data_dir.root).ensure()
    assert not stale.exists() and fresh.exists()
