"""Which addresses a job's `callback_url` may reach: the deployment says, nobody else.

The rule of image URLs (DESIGN, security stance): no remote URL unless an
allowlist names the host. `OCRSERVE_WEBHOOK_ALLOWED_HOSTS` is that list: host
names (`hooks.example.org`, or `*.example.org` for its subdomains) and IP
addresses or networks (`203.0.113.7`, `10.20.0.0/16`). Unset, webhooks are off.

| checked                                   | verdict                                                  |
|-------------------------------------------|----------------------------------------------------------|
| scheme                                    | `http` or `https` only (no `file:`, no other scheme)     |
| user:password in the URL                  | refused (credentials do not belong in a stored URL)      |
| the host                                  | a listed name, or an IP literal inside a listed network |
| every address the name resolves to        | inside a listed network, or globally routable: loopback, private, link-local (cloud metadata at 169.254.169.254), shared, reserved and multicast addresses only when a listed network holds them |

The check runs at submit (a refused URL is a 400 and no job) and again at
every delivery, on the addresses resolved then, and the delivery connects to
the address it checked (`ResolvedTarget`), not to whatever a second lookup
returns: a name rebound to an inner address after submit reaches nothing.
Redirects are never followed (workers/webhooks.py).
"""
from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from vision.limits import InvalidOptionError

MAX_URL_LEN = 2048
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class CallbackUrlError(InvalidOptionError):
    code = "callback_url_not_allowed"


@dataclass(frozen=True)
class WebhookAllowlist:
    names: frozenset[str]          # exact host names, lower case
    suffixes: tuple[str, ...]      # from `*.example.org`: ".example.org"
    networks: tuple[Network, ...]

    @classmethod
    def parse(cls, setting: str | None) -> WebhookAllowlist:
        names, suffixes, networks = set(), [], []
        for entry in (setting or "").split(","):
            entry = entry.strip().lower()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            if entry.startswith("*."):
                suffixes.append(entry[1:])
            else:
                names.add(entry)
        return cls(frozenset(names), tuple(suffixes), tuple(networks))

    @property
    def empty(self) -> bool:
        return not (self.names or self.suffixes or self.networks)

    def names_host(self, host: str) -> bool:
        literal = _ip_literal(host)
        if literal is not None:
            return self.holds(literal)
        return host in self.names or any(host.endswith(suffix) for suffix in self.suffixes)

    def holds(self, address: Address) -> bool:
        """In a listed network, as written or as the IPv4 address an IPv4-mapped IPv6 one stands for."""
        forms = [address, _unmapped(address)]
        return any(form in network for form in forms for network in self.networks)

    def may_reach(self, address: Address) -> bool:
        """A listed network's address, or one on the public internet."""
        plain = _unmapped(address)
        return self.holds(address) or (plain.is_global and not plain.is_multicast)


@dataclass(frozen=True)
class ResolvedTarget:
    """A checked URL and the address to connect to (the one that was checked)."""
    url: str
    scheme: str
    host: str
    port: int
    address: Address


def check_callback_url(url: str, allowlist: WebhookAllowlist, resolve: bool = True) -> ResolvedTarget | None:
    """Raise `CallbackUrlError` unless `url` may be called; with `resolve`, the address to call."""
    url = url.strip()
    if allowlist.empty:
        raise CallbackUrlError("webhooks are off on this server: it allows no callback host "
                               "(OCRSERVE_WEBHOOK_ALLOWED_HOSTS)")
    if len(url) > MAX_URL_LEN:
        raise CallbackUrlError(f"callback_url is longer than {MAX_URL_LEN} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise CallbackUrlError("callback_url is not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise CallbackUrlError(f"callback_url must be an http or https URL, not {scheme or 'a path'!r}")
    if parts.username is not None or parts.password is not None:
        raise CallbackUrlError("callback_url must not carry a user name or password")
    host = (parts.hostname or "").lower()
    if not host:
        raise CallbackUrlError("callback_url names no host")
    if not allowlist.names_host(host):
        raise CallbackUrlError(f"callback_url host {host[:100]!r} is not one this server may call "
                               "(OCRSERVE_WEBHOOK_ALLOWED_HOSTS)")
    if not resolve:
        return None
    port = port or (443 if scheme == "https" else 80)
    addresses = _resolve(host, port)
    refused = [address for address in addresses if not allowlist.may_reach(address)]
    if refused:
        raise CallbackUrlError(f"callback_url host {host[:100]!r} resolves to {refused[0]}, an address this server "
                               "may not call (list its network in OCRSERVE_WEBHOOK_ALLOWED_HOSTS if it is meant)")
    return ResolvedTarget(url, scheme, host, port, addresses[0])


def _resolve(host: str, port: int) -> list[Address]:
    literal = _ip_literal(host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise CallbackUrlError(f"callback_url host {host[:100]!r} does not resolve ({exc})") from None
    addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos))
    if not addresses:
        raise CallbackUrlError(f"callback_url host {host[:100]!r} has no address")
    return addresses


def _unmapped(address: Address) -> Address:
    """::ffff:127.0.0.1 is 127.0.0.1 on the wire: judged as that."""
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped if mapped is not None else address


def _ip_literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
