"""Webhooks as a key sees them: its signing secret, and each job's deliveries.

A job sent with `callback_url` (POST /v1/jobs) has its events delivered by the
workers (workers/webhooks.py), signed with its key's secret, which only that
key can read or replace here. `GET /v1/jobs/{id}/deliveries` lists every
delivery of the job with each attempt: time, HTTP status or error, duration.
"""
from __future__ import annotations

from fastapi import APIRouter

from app.deps import Jobs, Owner
from app.errors import ApiError
from workers import database, service_secrets, webhook_deliveries
from workers.webhooks import SIGNATURE_HEADER

router = APIRouter(tags=["webhooks"])
SCHEME = ("t=<unix seconds>,v1=<hex HMAC-SHA256 of '<t>.' followed by the raw body, keyed with the secret as "
          "UTF-8>; refuse a t far from your clock")


def _secret_view(secret: str) -> dict[str, str]:
    return {"secret": secret, "header": SIGNATURE_HEADER, "scheme": SCHEME}


@router.get("/v1/webhooks/secret", summary="This key's webhook signing secret (made on first use)")
def get_webhook_secret(jobs: Jobs, owner: Owner) -> dict[str, str]:
    return _secret_view(service_secrets.get_secret(jobs.store.engine, service_secrets.webhook_secret_name(owner),
                                                   service_secrets.WEBHOOK_SECRET_PREFIX))


@router.post("/v1/webhooks/secret", summary="Replace this key's webhook signing secret")
def replace_webhook_secret(jobs: Jobs, owner: Owner) -> dict[str, str]:
    return _secret_view(service_secrets.replace_secret(jobs.store.engine, service_secrets.webhook_secret_name(owner),
                                                       service_secrets.WEBHOOK_SECRET_PREFIX))


@router.get("/v1/jobs/{job_id}/deliveries", tags=["jobs"], summary="The job's webhook deliveries and their attempts")
def list_deliveries(job_id: str, jobs: Jobs, owner: Owner) -> dict[str, object]:
    job = jobs.get(owner, job_id)
    if job is None:
        raise ApiError(404, "not_found", "no such job")
    with database.read(jobs.store.engine) as db:
        deliveries = webhook_deliveries.for_job(db, job.id)
    return {"callback_url": job.options.callback_url, "deliveries": [d.to_dict() for d in deliveries]}
