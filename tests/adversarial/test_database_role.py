"""The compose deployment's database role: deploy/postgres-init.sh (run by the postgres image on
first start) makes a role that owns the application's database and is no superuser, and the job
store migrates and works as that role. Before, every api and worker host (other machines
included) connected as the cluster's superuser. Run here against the tests' throw-away cluster,
with the same psql the image runs."""
from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest

from postgres_server import SUPERUSER
from workers.job_store import JobStore

INIT = Path(__file__).resolve().parents[2] / "deploy" / "postgres-init.sh"


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed (scripts/setup.sh installs it)")
def test_the_app_role_owns_its_database_and_is_no_superuser(postgres_server):
    role, database = f"app_{uuid.uuid4().hex[:8]}", f"appdb_{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "PGHOST": "127.0.0.1", "PGPORT": str(postgres_server.port),
           "POSTGRES_USER": SUPERUSER,
           "OCRSERVE_DB_USER": role, "OCRSERVE_DB_NAME": database, "OCRSERVE_DB_PASSWORD": "app-pass-1f2e"}
    done = subprocess.run(["sh", str(INIT)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    url = f"postgresql://{role}@127.0.0.1:{postgres_server.port}/{database}"
    with psycopg.connect(url) as conn:
        superuser, create_db, create_role = conn.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user").fetchone()
        owner = conn.execute("SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()"
                             ).fetchone()[0]
    assert (superuser, create_db, create_role) == (False, False, False)
    assert owner == role
    store = JobStore(url)   # numbered migrations, advisory lock and all, as the app's role
    assert store.existing_job_ids(["nope"]) == set()
    with psycopg.connect(url) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE ROLE intruder SUPERUSER")
