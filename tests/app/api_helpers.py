"""Helpers for the API tests: keys, headers, upload fields, waiting for a job."""
from __future__ import annotations

import time

KEY_ALICE = "alice-test-key"
KEY_BOB = "bob-test-key"


def auth(key: str = KEY_ALICE) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def upload(*named: tuple[str, bytes]) -> list[tuple[str, tuple[str, bytes, str]]]:
    """Multipart `files` fields for (filename, bytes) pairs."""
    return [("files", (name, data, "application/octet-stream")) for name, data in named]


def wait_for_job(client, job_id: str, key: str = KEY_ALICE, timeout_s: float = 180) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}", headers=auth(key)).json()
        if job["state"] in ("done", "failed", "cancelled"):
            return job
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} did not finish in {timeout_s} s: {job}")
