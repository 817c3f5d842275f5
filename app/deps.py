"""What request handlers depend on, as FastAPI dependency aliases."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from app.api_keys import KeyRing, KeysUnavailableError
from app.errors import ApiError
from workers.job_service import JobService
from workers.settings import Settings


@dataclass(frozen=True)
class ApiContext:
    settings: Settings
    jobs: JobService
    keys: KeyRing


def get_context(request: Request) -> ApiContext:
    return request.app.state.context


def get_jobs(request: Request) -> JobService:
    return get_context(request).jobs


def get_owner(request: Request) -> str:
    """The caller's owner id from `Authorization: Bearer KEY`; 401 without a known key, 503 when
    the API requires keys and none can be read (emptied, deleted or unreadable keys file)."""
    header = request.headers.get("authorization", "")
    scheme, _, presented = header.partition(" ")
    presented = presented.strip() if scheme.lower() == "bearer" else ""
    try:
        owner = get_context(request).keys.owner_for(presented or None)
    except KeysUnavailableError as exc:   # keyed, but no key can be read: refuse, never open up
        raise ApiError(503, "keys_unavailable", str(exc), headers={"Retry-After": "5"}) from None
    if owner is None:
        message = "an API key is required: send 'Authorization: Bearer KEY'" if not presented else "unknown API key"
        raise ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})
    return owner


Context = Annotated[ApiContext, Depends(get_context)]
Jobs = Annotated[JobService, Depends(get_jobs)]
Owner = Annotated[str, Depends(get_owner)]
