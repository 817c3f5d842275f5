"""Read a JSON request body under a byte cap and the request's deadline, then validate it.

The cap is enforced while reading: a declared Content-Length over the cap is
refused before a byte is read, and a body sent without one (chunked) or with a
lying one is refused as soon as the bytes received pass the cap -- the server
never buffers more than `max_bytes` (+ one chunk) of anyone's upload.
"""
from __future__ import annotations

import asyncio
from typing import TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect

from engine.server.api_errors import ApiError, ClientDisconnected
from engine.server.request_lifetime import RequestDeadline

ModelT = TypeVar("ModelT", bound=BaseModel)


def too_large(max_bytes: int) -> ApiError:
    return ApiError(413, f"request body exceeds the limit of {max_bytes} bytes", "request_too_large",
                    headers={"Connection": "close"})


async def read_body(request: Request, max_bytes: int, deadline: RequestDeadline) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise too_large(max_bytes)
    chunks: list[bytes] = []
    num_bytes = 0
    try:
        async with asyncio.timeout(deadline.remaining_s()):
            async for chunk in request.stream():
                num_bytes += len(chunk)
                if num_bytes > max_bytes:
                    raise too_large(max_bytes)
                chunks.append(chunk)
    except ClientDisconnect:
        raise ClientDisconnected() from None
    except TimeoutError:
        raise ApiError(408, f"the request body did not arrive within request_timeout_s={deadline.timeout_s:g} s",
                       "timeout", headers={"Connection": "close"}) from None
    return b"".join(chunks)


async def read_json_body(request: Request, model: type[ModelT], max_bytes: int,
                         deadline: RequestDeadline) -> ModelT:
    raw = await read_body(request, max_bytes, deadline)
    if not raw.strip():
        raise ApiError(400, "the request body is empty; send a JSON object", "invalid_json")
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise validation_error(exc) from None


def validation_error(exc: ValidationError) -> ApiError:
    """The first problem of a pydantic ValidationError, said the way a client can act on it."""
    first = exc.errors(include_url=False)[0]
    if first["type"] == "json_invalid":
        return ApiError(400, f"the request body is not valid JSON: {first['msg']}", "invalid_json")
    location = ".".join(str(part) for part in first["loc"])
    if first["type"] == "extra_forbidden":
        return ApiError(400, f"unknown parameter {location!r}", "unknown_parameter", location)
    if first["type"] == "missing":
        return ApiError(400, f"missing required parameter {location!r}", "missing_parameter", location)
    num_more = exc.error_count() - 1
    more = f" (and {num_more} more problem{'s' if num_more > 1 else ''})" if num_more else ""
    return ApiError(400, f"invalid value for {location!r}: {first['msg']}{more}", "invalid_value", location)
