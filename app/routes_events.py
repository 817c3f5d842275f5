"""Live progress: `GET /v1/jobs/{id}/events`, a job's event log as Server-Sent Events.

    id: 7
    event: page
    data: {"id": 7, "type": "page.done", "file": 1, "page": 3, "state": "done", "pages_done": 3, ...}

The stream replays the job's log (workers/job_events.py) after the client's
`Last-Event-ID` (the header, or `?last_event_id=`; all of it without one), then sends each new event as it is
written, and ends after the job's last (done, failed or cancelled). A client
that reconnects with the last id it saw gets exactly the events it missed.

| bounded                              | by                                                       |
|--------------------------------------|----------------------------------------------------------|
| database connections of a stream     | none held while it waits: each read of new events is one short transaction on a worker thread, every `event_stream_poll_s` |
| streams of one key                   | `max_event_streams_per_key` in this API process; the next gets 429 + Retry-After, before anything is read |
| a client that stops reading          | `download_idle_timeout_s`, as downloads (app/downloads.py) |
| a silent connection cut by a proxy   | a comment line every `event_stream_keepalive_s`           |

Authentication: `Authorization: Bearer KEY` as every route, or `?token=` from
`POST /v1/jobs/{id}/events/token`, for the browser's `EventSource`, which
cannot send headers. A token names one job, lives a minute, and is an HMAC
with a secret the job store keeps (workers/service_secrets.py), so any API
process checks another's; the key itself never goes in a URL.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse
from sqlalchemy import Engine, text
from starlette.types import Receive, Scope, Send

from app.deps import Context, Owner, get_owner
from app.downloads import DownloadGate, GuardedDownload
from app.errors import ApiError, error_response
from workers import database, job_events, service_secrets
from workers.job_model import JobRecord
from workers.job_service import JobService

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])
TOKEN_TTL_S = 60
RETRY_AFTER_S = 5
RECONNECT_MS = 2000   # what EventSource waits before reconnecting (the stream's `retry:`)


@router.post("/{job_id}/events/token", summary="A one-minute token to open the job's event stream from a browser")
def stream_token(job_id: str, request: Request, context: Context, owner: Owner) -> dict[str, object]:
    job = _owned(context.jobs, owner, job_id)
    expires = int(time.time()) + TOKEN_TTL_S
    return {"token": f"{expires}.{_token_mac(_token_secret(request, context.jobs), job, expires)}",
            "expires_in": TOKEN_TTL_S}


@router.get("/{job_id}/events", summary="The job's progress as Server-Sent Events (resumable with Last-Event-ID)",
            responses={200: {"content": {"text/event-stream": {}}}})
async def job_events_stream(job_id: str, request: Request, context: Context,
                            token: str | None = Query(None, max_length=200),
                            last_event_id: str | None = Query(None, max_length=20, description=(
                                "where to resume, for a client that cannot send the Last-Event-ID header "
                                "(a browser opening a new EventSource); the header wins"))) -> Response:
    after = _last_event_id(request.headers.get("last-event-id") or last_event_id)
    jobs = context.jobs
    if token is None:
        owner = get_owner(request)
        job = await anyio.to_thread.run_sync(_owned, jobs, owner, job_id)
    else:
        job = await anyio.to_thread.run_sync(_job_for_token, jobs, job_id)
        if job is None or not _token_valid(token, await anyio.to_thread.run_sync(_token_secret, request, jobs), job):
            raise ApiError(401, "unauthorized", "the event-stream token is not valid for this job, or has expired")
    settings = context.settings
    stream = StreamingResponse(
        _events(jobs.store.engine, job.id, after, settings.event_stream_poll_s, settings.event_stream_keepalive_s),
        media_type="text/event-stream", headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
    return LimitedStream(stream, _stream_gate(request), job.owner, settings.download_idle_timeout_s)


async def _events(engine: Engine, job_id: str, after: int, poll_s: float, keepalive_s: float) -> AsyncIterator[bytes]:
    # The reconnection delay rides on the first event: a block with no data is no event, and some clients
    # would show it as one.
    retry = f"retry: {RECONNECT_MS}\n"
    quiet_since = time.monotonic()
    while True:
        state, events = await anyio.to_thread.run_sync(_read_new, engine, job_id, after)
        if state is None:   # deleted while watched
            yield b"event: gone\ndata: {}\n\n"
            return
        for event in events:
            payload = {"id": event.seq, "type": event.type, **event.data}
            yield f"{retry}id: {event.seq}\nevent: {event.kind}\ndata: {json.dumps(payload)}\n\n".encode()
            after, retry = event.seq, ""
            if event.is_terminal:
                return
        if not events and state in ("done", "failed", "cancelled"):
            # A job that ended before it had an event log: its end, without an id.
            yield f"event: job\ndata: {json.dumps({'type': f'job.{state}', 'state': state})}\n\n".encode()
            return
        if events:
            quiet_since = time.monotonic()
            if len(events) == job_events.MAX_EVENTS_READ:
                continue
        elif time.monotonic() - quiet_since >= keepalive_s:
            yield b": keep-alive\n\n"
            quiet_since = time.monotonic()
        await anyio.sleep(poll_s)


def _read_new(engine: Engine, job_id: str, after: int) -> tuple[str | None, list[job_events.JobEvent]]:
    """The job's state and its events after `after`, in one short transaction (the connection goes
    back before the stream waits)."""
    with database.read(engine) as db:
        state = db.execute(text("SELECT state FROM jobs WHERE id = :id"), {"id": job_id}).scalar()
        return state, job_events.events_after(db, job_id, after) if state is not None else []


class LimitedStream(GuardedDownload):
    """A stream under the key's stream slot (429 when it has none) and the idle timeout."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.gate is not None
        if not self.gate.enter(self.owner):
            refusal = error_response(429, "too_many_streams", f"this key has {self.gate.limit} event streams open "
                                     "already; close one, or try again in a few seconds",
                                     headers={"Retry-After": str(RETRY_AFTER_S)})
            await refusal(scope, receive, send)
            return
        try:
            await self._send_inner(scope, receive, send)
        finally:
            self.gate.leave(self.owner)


def _stream_gate(request: Request) -> DownloadGate:
    gate = getattr(request.app.state, "event_stream_gate", None)
    if gate is None:
        gate = request.app.state.event_stream_gate = DownloadGate(
            request.app.state.context.settings.max_event_streams_per_key)
    return gate


def _last_event_id(header: str | None) -> int:
    if header is None or not header.strip():
        return 0
    if not header.strip().isdigit() or len(header.strip()) > 18:
        raise ApiError(400, "invalid_last_event_id", "Last-Event-ID must be an event id this stream sent (a number)")
    return int(header.strip())


def _owned(jobs: JobService, owner: str, job_id: str) -> JobRecord:
    job = jobs.get(owner, job_id)
    if job is None:
        raise ApiError(404, "not_found", "no such job")
    return job


def _job_for_token(jobs: JobService, job_id: str) -> JobRecord | None:
    """The job a token request names, whoever owns it: the token, bound to its owner, says who may read it."""
    looks_like_id = len(job_id) == 32 and all(ch in "0123456789abcdef" for ch in job_id)
    return jobs.store.get_job(job_id) if looks_like_id else None


def _token_secret(request: Request, jobs: JobService) -> bytes:
    secret = getattr(request.app.state, "event_token_secret", None)
    if secret is None:
        secret = request.app.state.event_token_secret = service_secrets.get_secret(
            jobs.store.engine, service_secrets.EVENT_TOKEN_SECRET).encode()
    return secret


def _token_mac(secret: bytes, job: JobRecord, expires: int) -> str:
    return hmac.new(secret, f"events:{job.id}:{job.owner}:{expires}".encode(), hashlib.sha256).hexdigest()


def _token_valid(token: str, secret: bytes, job: JobRecord) -> bool:
    expires, _, mac = token.partition(".")
    if not expires.isdigit() or int(expires) < time.time():
        return False
    return hmac.compare_digest(mac, _token_mac(secret, job, int(expires)))
