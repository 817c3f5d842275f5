"""The job owner's prefix-cache tenant for every engine request made on its behalf.

A job's work runs inside `tenant_scope(owner)`; the recognisers and the
extraction client read `current_tenant()` and send it as the request's `user`
field, which our engine uses to key its radix cache (DESIGN "salted per
tenant"), so one key's documents never warm (or reveal, through
`cached_tokens`) another key's cache entries. Its own module because both the
job runner (which sets it) and the engine clients (which read it) import it,
and neither should import the other for it.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
from collections.abc import Iterator

_TENANT: contextvars.ContextVar[str | None] = contextvars.ContextVar("ocrserve_engine_tenant", default=None)


def engine_tenant(owner: str) -> str:
    """The prefix-cache tenant of a job owner: a hash, so the engine never sees owner ids (themselves
    key hashes), and one owner's requests share their cache entries with nobody else's."""
    return "owner-" + hashlib.sha256(b"ocrserve-tenant:" + owner.encode()).hexdigest()[:32]


@contextlib.contextmanager
def tenant_scope(owner: str) -> Iterator[None]:
    """Every engine request made inside (recognition, extraction) carries `owner`'s tenant."""
    token = _TENANT.set(engine_tenant(owner))
    try:
        yield
    finally:
        _TENANT.reset(token)


def current_tenant() -> str | None:
    return _TENANT.get()
