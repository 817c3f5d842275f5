"""Retention reaches the API host's disk (issue 33, finding 3): with files shared through the job
store's database (`OCRSERVE_BLOB_STORE=database`, real PostgreSQL), the API keeps each upload in
its own data directory; once the workers' retention sweep (on another host) has deleted the job,
its rows and its blobs, the API's own sweep drops its copy. A job the store still has keeps its
copies. Before the fix nothing on the API host ever removed them."""
from __future__ import annotations

import time

from fastapi.testclient import TestClient

import ocr_samples as samples
from api_helpers import KEY_ALICE, auth, upload
from service_harness import wait_for
from workers.data_dir import DataDir
from workers.job_model import JobState
from workers.recovery import delete_expired_jobs
from workers.settings import Settings


def test_the_api_drops_its_copies_of_jobs_the_retention_sweep_deleted(tmp_path, postgres_url):
    from app.main import create_app

    settings = Settings(data_dir=tmp_path / "api-host", database_url=postgres_url, blob_store="database",
                        api_keys=KEY_ALICE, recovery_interval_s=1, job_retention_days=1)
    app = create_app(settings)
    jobs = app.state.context.jobs
    with TestClient(app) as client:
        ids = []
        for _ in range(2):   # embedded broker, no worker: the jobs stay queued
            answer = client.post("/v1/jobs", headers=auth(KEY_ALICE), files=upload(("a.png", samples.scanned_png())))
            assert answer.status_code == 202, answer.text
            ids.append(answer.json()["id"])
        expired, kept = ids
        uploads = {job_id: jobs.data_dir.uploads_dir(job_id) for job_id in ids}
        assert all(any(folder.iterdir()) for folder in uploads.values()), "the API keeps its uploads locally"

        # A worker host's retention sweep, with a data directory of its own: the job ended long ago.
        assert jobs.store.finish_job(expired, JobState.FAILED, "ended long ago")
        worker_dir = DataDir(tmp_path / "worker-host").ensure()
        assert delete_expired_jobs(jobs.store, worker_dir, 1, time.time() + 2 * 86400, jobs.blobs) == [expired]
        assert not jobs.blobs.exists(jobs.data_dir.upload_path(expired, 0, "png"))

        wait_for(lambda: not uploads[expired].exists(), 30, what="the API host's copy of the deleted job to go")
        time.sleep(2 * settings.recovery_interval_s)   # more sweeps: the job the store still has keeps its copy
        assert any(uploads[kept].iterdir())
        assert client.get(f"/v1/jobs/{kept}", headers=auth(KEY_ALICE)).status_code == 200
