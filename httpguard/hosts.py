"""The `Host` names an HTTP server answers: its defence against DNS rebinding.

A web page whose DNS name is rebound to 127.0.0.1 reaches a loopback server with
its own name in `Host`; a server that answers only the names it is bound to
(loopback, the bound address, names configured as its own) refuses it, with a
400 each server words in its own error shape.

| bound to                     | extra names | allowed `Host` names                     |
|------------------------------|-------------|------------------------------------------|
| loopback or one address      | any         | loopback names, that address, the extras |
| a wildcard (`0.0.0.0`, `::`) | some        | loopback names, the extras               |
| a wildcard                   | none        | any: no check (its names are unknown,    |
|                              |             | and such a bind needs an API key)        |

Names compare lower-cased, IPv6 addresses without their brackets, ports ignored.
"""
from __future__ import annotations

from collections.abc import Iterable

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})


def allowed_host_names(bound_host: str, extra_names: Iterable[str]) -> frozenset[str] | None:
    """The names a request's Host may carry; None (no check) for a wildcard bind with no extra names."""
    extra = {name.strip().lower().strip("[]") for name in extra_names if name.strip()}
    host = bound_host.strip().lower().strip("[]")
    if host in WILDCARD_HOSTS and not extra:
        return None
    return frozenset(LOOPBACK_NAMES | extra | ({host} - WILDCARD_HOSTS))


def host_name(header: bytes | None) -> str | None:
    """`example.org:8000` -> `example.org`, `[::1]:8000` -> `::1`; None when absent or malformed."""
    if not header:
        return None
    text = header.decode("latin-1").strip().lower()
    if text.startswith("["):
        name, closed, rest = text[1:].partition("]")
        port_ok = not rest or (rest.startswith(":") and rest[1:].isdigit())
        return name if closed and name and port_ok else None
    name, _, port = text.partition(":")
    return name if name and (not port or port.isdigit()) else None


def host_allowed(allowed: frozenset[str] | None, header: bytes | None) -> bool:
    """Whether a request whose raw Host header is `header` may be answered (always, when None)."""
    return allowed is None or host_name(header) in allowed
