"""Fixtures shared by the workers tests live in `service_harness` and `ocr_samples`
(imported by name: pytest puts this folder on sys.path)."""

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request, tmp_path):
    """Where a job store under test lives: the embedded SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return tmp_path / "jobs.sqlite"
    return request.getfixturevalue("postgres_url")
