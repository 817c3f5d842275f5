"""Settings of the engine's HTTP layer, every timeout among them.

DESIGN invariant 7: every timeout is explicit and configured here, in one place;
no library default may cut a stalled upload or a stream shorter than
`request_timeout_s`. The table is the complete list of clocks on the request path:

| setting | what it bounds | where it is applied |
|---|---|---|
| request_timeout_s | one request end to end: reading its body, waiting in the queue, generating | `RequestDeadline` (body read, every wait on the engine) |
| keep_alive_timeout_s | an idle keep-alive connection *between* requests (never a request in progress) | uvicorn `timeout_keep_alive` |
| shutdown_grace_s | on SIGTERM/SIGINT, how long in-flight requests may keep running; then the engine aborts them (clients get an error event or a 503) | `EngineHTTPServer.shutdown`; uvicorn `timeout_graceful_shutdown` = this + `SHUTDOWN_FLUSH_S` (2 s) to deliver those answers |

Nothing else on the path has a clock: uvicorn's h11 protocol has no body-read
or send timeout, and the server sets no socket options (no TCP_USER_TIMEOUT,
no SO_RCVTIMEO), so a stalled upload or a slow stream reader is bounded only by
`request_timeout_s`.
"""
from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PORT = 30000
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    api_key: str | None = None            # None: /v1/* is open, and the engine may bind to loopback only
    admin_key: str | None = None          # None: falls back to api_key; with neither, admin routes are refused
    allowed_hosts: tuple[str, ...] = ()   # Host names accepted besides loopback and `host` (DNS rebinding)
    served_model_names: tuple[str, ...] = ()   # empty: the engine's own model name
    # A page image as a base64 data: URL is a few MiB; 32 MiB leaves room for
    # several while still refusing absurd bodies before they are buffered.
    max_request_bytes: int = 32 * 1024 * 1024
    request_timeout_s: float = 600.0
    keep_alive_timeout_s: int = 5
    shutdown_grace_s: int = 10
    image_url_host_allowlist: tuple[str, ...] = ()   # hosts an http(s) image_url may name
    max_batch_lines: int = 1024           # requests in one POST /v1/batch
    # A text prompt longer than context length x this many UTF-8 bytes cannot fit the context, and
    # is refused by its size before it is tokenised (a token of real text is a few bytes; 64 is generous).
    prompt_bytes_per_token: int = 64
    log_level: str = "warning"

    def __post_init__(self) -> None:
        assert self.max_request_bytes > 0 and self.request_timeout_s > 0 and self.max_batch_lines > 0
        assert self.prompt_bytes_per_token > 0
        assert self.keep_alive_timeout_s > 0 and self.shutdown_grace_s >= 0

    @property
    def binds_loopback_only(self) -> bool:
        return self.host.strip("[]").lower() in LOOPBACK_HOSTS

    @property
    def effective_admin_key(self) -> str | None:
        return self.admin_key if self.admin_key is not None else self.api_key
