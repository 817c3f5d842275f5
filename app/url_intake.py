"""Documents fetched from a URL a caller names (the MCP server's `ocr_url` and `extract` tools).

The service fetching a URL on a caller's word is the classic server-side request forgery: the
caller picks an address only the server can reach (a metadata service, an admin port, a file).
So the rules of DESIGN's security stance hold here as for image URLs in the engine: no remote URL
unless the deployment names its host.

| url                                                    | verdict                                      |
|--------------------------------------------------------|----------------------------------------------|
| http(s) on a host in OCRSERVE_DOCUMENT_URL_HOSTS       | fetched (below)                              |
| http(s) on any other host, or with user:password@       | refused before any connection                |
| file://, a bare path, any other scheme                 | refused                                      |

A fetch follows no redirect (a redirect could lead anywhere: the caller is told to give the final
URL), sends no proxy settings or .netrc credentials from this process's environment, refuses a
body over `max_upload_bytes` from its Content-Length or the moment it passes the cap, and ends
after `document_url_timeout_s` whatever the server does (connect to last byte). What it returns
is then checked like any upload (type from magic bytes, pages, pixels).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import httpx

from vision.limits import DocumentTooLargeError, InputError
from workers.settings import Settings

CHUNK_BYTES = 64 * 1024
DEFAULT_NAME = "document"


class UrlRefusedError(InputError):
    code = "url_not_allowed"


class UrlFetchError(InputError):
    code = "url_unreachable"


@dataclass(frozen=True)
class FetchedDocument:
    filename: str     # the URL's last path segment: shown back and used for its extension only
    data: bytes


def allowed_hosts(settings: Settings) -> frozenset[str]:
    return frozenset(name.strip().lower().strip("[]") for name in (settings.document_url_hosts or "").split(",")
                     if name.strip())


def check_document_url(url: str, hosts: frozenset[str]) -> None:
    """Raise `UrlRefusedError` unless `url` may be fetched under the rules above."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme == "file":
        raise UrlRefusedError("file:// URLs are refused; send the document's bytes instead")
    if scheme == "" or len(scheme) == 1:   # one letter: a Windows drive, i.e. a path
        raise UrlRefusedError("the url must be an http(s) URL, not a file path")
    if scheme not in ("http", "https"):
        raise UrlRefusedError(f"URL scheme {scheme[:20]!r} is not supported; use http or https")
    if parts.username is not None or parts.password is not None:
        raise UrlRefusedError("URLs with credentials (user:password@) are refused")
    try:
        host = (parts.hostname or "").lower()
        parts.port   # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:
        raise UrlRefusedError("the URL's port is not valid") from None
    if not host:
        raise UrlRefusedError("the URL names no host")
    if host not in hosts:
        where = "no host is allowed" if not hosts else f"allowed hosts: {', '.join(sorted(hosts))}"
        raise UrlRefusedError(f"host {host[:100]!r} is not on this server's list of document hosts ({where}; "
                              "the deployment sets OCRSERVE_DOCUMENT_URL_HOSTS); send the document's bytes instead")


def fetch_document(url: str, settings: Settings) -> FetchedDocument:
    """The document at `url`, fetched under the rules above (blocking: run it off the event loop)."""
    check_document_url(url, allowed_hosts(settings))
    url = url.strip()
    max_bytes = settings.max_upload_bytes
    budget_s = settings.document_url_timeout_s
    deadline = time.monotonic() + budget_s
    # Each socket operation gets the whole budget at most; the deadline bounds their sum.
    timeout = httpx.Timeout(budget_s)
    try:
        with httpx.Client(follow_redirects=False, trust_env=False, timeout=timeout) as client, \
                client.stream("GET", url, headers={"Accept": "application/pdf, image/*;q=0.9, */*;q=0.1"}) as response:
            if response.is_redirect:
                raise UrlFetchError(f"the server answered with a redirect ({response.status_code}); redirects are "
                                    "not followed: give the document's final URL")
            if response.status_code != 200:
                raise UrlFetchError(f"the server answered {response.status_code} {response.reason_phrase}"[:200])
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise DocumentTooLargeError(f"the document is {int(declared):,} bytes; the limit is {max_bytes:,}")
            received = bytearray()
            for chunk in response.iter_bytes(CHUNK_BYTES):
                received += chunk
                if len(received) > max_bytes:
                    raise DocumentTooLargeError(f"the document is larger than the {max_bytes:,}-byte limit")
                if time.monotonic() > deadline:
                    raise UrlFetchError(f"the download took longer than {budget_s:g} s")
    except httpx.TimeoutException:
        raise UrlFetchError(f"the server did not answer within {budget_s:g} s") from None
    except httpx.HTTPError as exc:
        raise UrlFetchError(f"the document could not be fetched ({type(exc).__name__})") from None
    return FetchedDocument(_filename(url), bytes(received))


def _filename(url: str) -> str:
    name = unquote(urlsplit(url).path.rsplit("/", 1)[-1]).strip()
    return name[:200] or DEFAULT_NAME
