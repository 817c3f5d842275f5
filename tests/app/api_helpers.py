"""Helpers for the API tests: keys, headers, upload fields, waiting for a job."""
from __future__ import annotations

from job_polling import wait_for_job_view

KEY_ALICE = "alice-test-key"
KEY_BOB = "bob-test-key"


def auth(key: str = KEY_ALICE) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def upload(*named: tuple[str, bytes]) -> list[tuple[str, tuple[str, bytes, str]]]:
    """Multipart `files` fields for (filename, bytes) pairs."""
    return [("files", (name, data, "application/octet-stream")) for name, data in named]


def wait_for_job(client, job_id: str, key: str = KEY_ALICE, timeout_s: float = 180) -> dict:
    return wait_for_job_view(client, job_id, auth(key), timeout_s)
