"""Polling a job through the REST API until it ends (any client with `.get`: TestClient, httpx)."""
from __future__ import annotations

import time

FINAL_STATES = ("done", "failed", "cancelled")


def wait_for_job_view(client, job_id: str, headers: dict[str, str], timeout_s: float = 180) -> dict:
    deadline = time.monotonic() + timeout_s
    job: dict = {}
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if job["state"] in FINAL_STATES:
            return job
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} did not finish in {timeout_s} s: {job}")
