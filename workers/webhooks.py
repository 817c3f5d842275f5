"""Webhook delivery: sign a job's event, POST it to its `callback_url`, record the attempt.

Each worker runs one `WebhookSender` thread (started beside the recovery sweep,
workers/tasks.py). It takes due deliveries from the job store's outbox
(workers/webhook_deliveries.py) by lease, so it serves deliveries queued by any
process on either broker, and retries a failed one later with exponential
backoff and jitter, up to `webhook_max_attempts`; a delivery that ends failed
is recorded and leaves its job as it was.

The request, as a receiver checks it:

    POST <callback_url>    (never a redirect followed; the address checked just before, connected to)
    Content-Type: application/json
    X-Ocrserve-Event: job.done            X-Ocrserve-Delivery: <delivery id>
    X-Ocrserve-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body, keyed with the key's secret>

    {"id": "<job id>.<event number>", "type": "job.done", "created_at": ..., "job_id": ..., "data": {...}}

The secret is the job owner's (`GET /v1/webhooks/secret` shows it to its key);
a receiver recomputes the HMAC over the raw body, compares in constant time
and refuses a `t` far from its clock (a replayed old delivery). Delivery is at
least once (a sender that dies after the POST, or an attempt that outlives its
lease, sends again): a receiver keys on the body's `id`.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from sqlalchemy import text

from workers import database, job_events, service_secrets, webhook_deliveries
from workers.job_store import JobStore
from workers.settings import Settings
from workers.webhook_urls import CallbackUrlError, ResolvedTarget, WebhookAllowlist, check_callback_url

logger = logging.getLogger("ocrserve.workers")
SIGNATURE_HEADER = "X-Ocrserve-Signature"
MAX_BACKOFF_S = 3600.0
BATCH = 16          # deliveries taken per round
NUM_SENDERS = 4     # sent at once: one slow receiver does not hold the others up
LEASE_MARGIN_S = 30.0


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def event_body(event: job_events.JobEvent) -> bytes:
    return json.dumps({"id": f"{event.job_id}.{event.seq}", "type": event.type, "created_at": event.created_at,
                       "job_id": event.job_id, "data": event.data}, ensure_ascii=False).encode()


def post_signed(target: ResolvedTarget, body: bytes, headers: dict[str, str], timeout_s: float) -> int:
    """POST to the checked address with the URL's own Host (and, for https, its name for SNI and the
    certificate check); no redirect followed, no proxy from the environment, the body not read."""
    parts = urlsplit(target.url)
    address = f"[{target.address}]" if target.address.version == 6 else str(target.address)
    default_port = 443 if target.scheme == "https" else 80
    host_header = target.host if target.port == default_port else f"{target.host}:{target.port}"
    if ":" in target.host:
        host_header = f"[{target.host}]" if target.port == default_port else f"[{target.host}]:{target.port}"
    pinned = urlunsplit((target.scheme, f"{address}:{target.port}", parts.path or "/", parts.query, ""))
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    with httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=False, trust_env=False) as client:
        with client.stream("POST", pinned, content=body, extensions=extensions,
                           headers={**headers, "Host": host_header, "Content-Type": "application/json",
                                    "User-Agent": "ocrserve-webhooks"}) as response:
            return response.status_code


class WebhookSender:
    def __init__(self, store: JobStore, settings: Settings):
        self.store = store
        self.settings = settings
        self.allowlist = WebhookAllowlist.parse(settings.webhook_allowed_hosts)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="webhook-sender", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.settings.webhook_timeout_s + 5)

    def _loop(self) -> None:
        with ThreadPoolExecutor(NUM_SENDERS, thread_name_prefix="webhook") as pool:
            while not self._stop.is_set():
                try:
                    sent = list(pool.map(self.deliver, self.claim_due()))
                except Exception:   # the store is away for a moment: the next round tries again
                    logger.exception("webhook round failed")
                    sent = []
                if not sent:
                    self._stop.wait(self.settings.webhook_poll_interval_s)

    def claim_due(self) -> list[int]:
        now = time.time()
        lease_s = self.settings.webhook_timeout_s + LEASE_MARGIN_S
        with database.read(self.store.engine) as db:
            candidates = webhook_deliveries.due_ids(db, now, BATCH)
        claimed = []
        for delivery_id in candidates:
            with database.write(self.store.engine) as db:
                if webhook_deliveries.claim(db, delivery_id, now, lease_s):
                    claimed.append(delivery_id)
        return claimed

    def deliver(self, delivery_id: int) -> dict[str, Any] | None:
        """One attempt of a claimed delivery, recorded; returns the attempt (None: its job is gone)."""
        with database.read(self.store.engine) as db:
            delivery = webhook_deliveries.get(db, delivery_id)
            event = None if delivery is None else job_events.event(db, delivery.job_id, delivery.event_seq)
            owner = None if delivery is None else db.execute(
                text("SELECT owner FROM jobs WHERE id = :id"), {"id": delivery.job_id}).scalar()
        if delivery is None or event is None or owner is None:
            return None
        secret = service_secrets.get_secret(self.store.engine, service_secrets.webhook_secret_name(owner),
                                            service_secrets.WEBHOOK_SECRET_PREFIX)
        body = event_body(event)
        started = time.time()
        attempt: dict[str, Any] = {"at": started, "status": None, "error": None}
        final = False
        try:
            target = check_callback_url(delivery.url, self.allowlist)
            assert target is not None
            timestamp = int(time.time())
            status = post_signed(target, body, {SIGNATURE_HEADER: signature(secret, timestamp, body),
                                                "X-Ocrserve-Event": event.type,
                                                "X-Ocrserve-Delivery": str(delivery.id)},
                                 self.settings.webhook_timeout_s)
            attempt["status"] = status
            if 300 <= status < 400:
                attempt["error"] = f"HTTP {status}: redirects are not followed"
            elif not 200 <= status < 300:
                attempt["error"] = f"HTTP {status}"
        except CallbackUrlError as exc:   # the deployment's rules refuse it now: no retry changes that
            attempt["error"] = str(exc)
            final = True
        except httpx.HTTPError as exc:
            attempt["error"] = f"{type(exc).__name__}: {str(exc)[:200]}" if str(exc) else type(exc).__name__
        attempt["duration_s"] = round(time.time() - started, 3)
        attempts = delivery.attempts + 1
        if attempt["error"] is None:
            state, next_at = webhook_deliveries.DELIVERED, None
        elif final or attempts >= self.settings.webhook_max_attempts:
            state, next_at = webhook_deliveries.FAILED, None
        else:
            state, next_at = webhook_deliveries.PENDING, time.time() + self.backoff_s(attempts)
        with database.write(self.store.engine) as db:
            webhook_deliveries.record_attempt(db, delivery.id, attempt, state, next_at)
        if state == webhook_deliveries.FAILED:
            logger.warning("webhook delivery %d of job %s failed after %d attempts: %s", delivery.id,
                           delivery.job_id, attempts, attempt["error"])
        return attempt

    def backoff_s(self, attempts: int) -> float:
        """Exponential from `webhook_retry_backoff_s`, with jitter (half to all of it), capped."""
        base = min(self.settings.webhook_retry_backoff_s * 2 ** (attempts - 1), MAX_BACKOFF_S)
        return base * random.uniform(0.5, 1.0)
