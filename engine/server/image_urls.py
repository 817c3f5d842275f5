"""Rules for `image_url` content parts (DESIGN, security stance).

| url | verdict |
|---|---|
| `data:image/<type>;base64,<payload>` | accepted when the payload is valid base64 |
| `http(s)://host/...` | refused unless `host` is on the configured allowlist |
| `file://...` | refused |
| a bare path (`/x.png`, `x.png`, `C:\\x.png`) | refused |
| any other scheme | refused |

A URL that passes these rules still needs a model that accepts images; the
caller checks that after the rules, so a client learns about a refused URL
scheme whichever model it talks to.
"""
from __future__ import annotations

import base64
import binascii
from urllib.parse import urlsplit

from engine.server.api_errors import ApiError

PARAM = "messages.content.image_url"
INLINE_HINT = "send the image inline as a data:image/...;base64 URL"


def check_image_url(url: str, host_allowlist: tuple[str, ...]) -> bytes | None:
    """Raise a 400 `ApiError` unless `url` is an acceptable image reference.
    Returns the decoded bytes of a data: URL, None for an allowlisted http(s) URL."""
    url = url.strip()
    if url[:5].lower() == "data:":   # before urlsplit, which would hash and scan the whole payload
        return check_data_url(url)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        host = (parts.hostname or "").lower()
        if host not in {allowed.lower() for allowed in host_allowlist}:
            raise ApiError(400, f"image_url host {host!r} is not on this server's allowlist; {INLINE_HINT}",
                           "image_url_not_allowed", PARAM)
    elif scheme == "file":
        raise ApiError(400, f"file:// image URLs are refused; {INLINE_HINT}", "image_url_not_allowed", PARAM)
    elif scheme == "" or len(scheme) == 1:   # one letter: a Windows drive, i.e. a path
        raise ApiError(400, f"image_url must be a URL, not a file path; {INLINE_HINT}",
                       "image_url_not_allowed", PARAM)
    else:
        raise ApiError(400, f"image_url scheme {scheme!r} is not supported; {INLINE_HINT}",
                       "image_url_not_allowed", PARAM)


def check_data_url(url: str) -> bytes:
    header, comma, payload = url.partition(",")
    if not comma:
        raise ApiError(400, "malformed data: URL (no comma before the payload)", "invalid_image", PARAM)
    media_type, *attributes = header[len("data:"):].split(";")
    if not media_type.lower().startswith("image/"):
        raise ApiError(400, f"data: URL media type must be image/*, got {media_type or 'none'!r}",
                       "invalid_image", PARAM)
    if "base64" not in (attribute.lower() for attribute in attributes):
        raise ApiError(400, "data: URL must be base64-encoded (data:image/...;base64,...)", "invalid_image",
                       PARAM)
    try:
        decoded = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, "data: URL payload is not valid base64", "invalid_image", PARAM) from None
    if not decoded:
        raise ApiError(400, "data: URL payload is empty", "invalid_image", PARAM)
    return decoded


async def fetch_image(url: str, max_bytes: int, timeout_s: float) -> bytes:
    """Download an allowlisted http(s) image, refusing redirects and anything over `max_bytes`
    (counted while reading: a missing or false Content-Length changes nothing)."""
    import httpx

    timeout = httpx.Timeout(timeout_s)  # connect, read, write and pool: explicit, not the library's default
    try:
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client:
            async with client.stream("GET", url) as response:
                if response.status_code != 200:
                    raise ApiError(400, f"image_url answered HTTP {response.status_code}", "invalid_image", PARAM)
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > max_bytes:
                        raise ApiError(400, f"image_url body is larger than {max_bytes} bytes", "invalid_image",
                                       PARAM)
                    chunks.append(chunk)
    except httpx.HTTPError as exc:
        raise ApiError(400, f"image_url could not be fetched: {type(exc).__name__}", "invalid_image",
                       PARAM) from None
    return b"".join(chunks)
