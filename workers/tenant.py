"""The job owner's prefix-cache tenant for every engine request made on its behalf.

A job's work runs inside `tenant_scope(owner)`; the recognisers and the
extraction client read `current_tenant(secret)` and send it as the request's
`user` field, which our engine uses to key its radix cache (DESIGN "salted per
tenant"), so one key's documents never warm (or reveal, through
`cached_tokens`) another key's cache entries. Its own module because both the
job runner (which sets it) and the engine clients (which read it) import it,
and neither should import the other for it.

The engine takes the tenant a request names on trust: its key is the trust
boundary, and whoever holds it may name any tenant. So a tenant is a keyed hash
(HMAC-SHA256) of the owner with the deployment's tenant secret, which only the
workers hold: a client with the engine key alone cannot form another owner's
tenant from the owner id (a plain hash of the owner, the old form, it could).

The secret: `OCRSERVE_TENANT_SECRET`, else one generated once and kept
owner-only in the data directory (`tenant-secret`), so every worker sharing
that directory forms the same tenants (hosts that share no data directory set
the setting, or their caches are kept apart per host as well).
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import hmac
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from workers.data_dir import make_private_dirs, private_file

if TYPE_CHECKING:
    from workers.settings import Settings

SECRET_FILE = "tenant-secret"
SECRET_BYTES = 32

_OWNER: contextvars.ContextVar[str | None] = contextvars.ContextVar("ocrserve_engine_tenant_owner", default=None)


def engine_tenant(owner: str, secret: bytes) -> str:
    """The prefix-cache tenant of a job owner: a keyed hash, so the engine never sees owner ids
    (themselves key hashes), one owner's requests share their cache entries with nobody else's, and
    nobody without `secret` can name the tenant of an owner whose id they know."""
    if not secret:
        raise ValueError("a tenant needs the deployment's tenant secret")
    return "owner-" + hmac.new(secret, b"ocrserve-tenant:" + owner.encode(), hashlib.sha256).hexdigest()[:32]


def tenant_secret(settings: Settings) -> bytes:
    """The deployment's tenant secret: the setting, else the data directory's, made on first use."""
    if settings.tenant_secret is not None and settings.tenant_secret.get_secret_value():
        return settings.tenant_secret.get_secret_value().encode()
    return data_dir_secret(Path(settings.data_dir))


def data_dir_secret(data_dir: Path) -> bytes:
    """`data_dir/tenant-secret`, created owner-only with a random secret if there is none. Workers
    starting together agree: each writes a candidate aside and links it into place, and a link
    that finds the file already there loses to it."""
    path = data_dir / SECRET_FILE
    if not path.exists():
        make_private_dirs(data_dir)
        candidate = data_dir / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        private_file(candidate)
        candidate.write_text(secrets.token_hex(SECRET_BYTES))
        try:
            os.link(candidate, path)
        except FileExistsError:
            pass
        finally:
            candidate.unlink()
    secret = path.read_text().strip()
    if len(secret) < 2 * SECRET_BYTES:
        raise RuntimeError(f"{path} holds no tenant secret; remove it to make a new one")
    return secret.encode()


@contextlib.contextmanager
def tenant_scope(owner: str) -> Iterator[None]:
    """Every engine request made inside (recognition, extraction) carries `owner`'s tenant."""
    token = _OWNER.set(owner)
    try:
        yield
    finally:
        _OWNER.reset(token)


def current_owner() -> str | None:
    return _OWNER.get()


def current_tenant(secret: bytes) -> str | None:
    """The tenant of the owner in scope, keyed with `secret`; None outside any owner's scope."""
    owner = _OWNER.get()
    return None if owner is None else engine_tenant(owner, secret)
