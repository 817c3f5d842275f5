"""The callback-URL rules on their own: what the deployment's allowlist lets a job call,
and what a name may resolve to (the system resolver, with no network: loopback names)."""
from __future__ import annotations

import ipaddress

import pytest

from workers.webhook_urls import CallbackUrlError, WebhookAllowlist, check_callback_url

PUBLIC = "hooks.example.org, *.customer.example, 203.0.113.0/24"


@pytest.mark.parametrize("url, words", [
    ("http://evil.example.net/hook", "not one this server may call"),
    ("http://example.org/hook", "not one this server may call"),            # the parent of a listed name
    ("http://customer.example/hook", "not one this server may call"),       # `*.x` is x's subdomains only
    ("http://203.0.114.1/hook", "not one this server may call"),
    ("http://[::1]/hook", "not one this server may call"),
    ("ftp://hooks.example.org/hook", "http or https"),
    ("file:///etc/passwd", "http or https"),
    ("/relative/hook", "http or https"),
    ("https://user:secret@hooks.example.org/", "user name or password"),
    ("http://hooks.example.org:99999/", "not a valid URL"),
    ("http:///path-only", "names no host"),
    ("https://hooks.example.org/" + "a" * 2100, "longer than"),
])
def test_urls_outside_the_allowlist_or_of_other_schemes_are_refused(url, words):
    with pytest.raises(CallbackUrlError, match=words):
        check_callback_url(url, WebhookAllowlist.parse(PUBLIC), resolve=False)


@pytest.mark.parametrize("url", ["https://hooks.example.org/ocr?x=1", "https://a.customer.example/",
                                 "http://203.0.113.9:8080/hook", "HTTPS://HOOKS.EXAMPLE.ORG/"])
def test_listed_names_and_networks_pass_before_resolution(url):
    assert check_callback_url(url, WebhookAllowlist.parse(PUBLIC), resolve=False) is None


def test_no_allowlist_means_webhooks_are_off():
    with pytest.raises(CallbackUrlError, match="webhooks are off"):
        check_callback_url("https://hooks.example.org/", WebhookAllowlist.parse(None))


def test_a_listed_name_that_resolves_to_an_inner_address_is_refused():
    """`localhost` named, its loopback network not: the address decides (as a rebound name would)."""
    with pytest.raises(CallbackUrlError, match="resolves to .* an address this server may not call"):
        check_callback_url("http://localhost:8080/hook", WebhookAllowlist.parse("localhost"))
    target = check_callback_url("http://localhost:8080/hook", WebhookAllowlist.parse("localhost, 127.0.0.0/8, ::1"))
    assert target.host == "localhost" and target.port == 8080 and target.address.is_loopback


@pytest.mark.parametrize("address, reachable", [
    ("8.8.8.8", True), ("2001:4860:4860::8888", True),
    ("127.0.0.1", False), ("10.0.0.5", False), ("192.168.1.1", False), ("172.16.0.1", False),
    ("169.254.169.254", False), ("100.64.0.1", False), ("0.0.0.0", False), ("224.0.0.1", False),
    ("::1", False), ("fd00::1", False), ("fe80::1", False), ("::ffff:127.0.0.1", False), ("::ffff:8.8.8.8", True),
])
def test_only_public_addresses_are_reachable_unless_their_network_is_listed(address, reachable):
    assert WebhookAllowlist.parse("hooks.example.org").may_reach(ipaddress.ip_address(address)) is reachable
    assert WebhookAllowlist.parse(f"hooks.example.org, {address}").may_reach(ipaddress.ip_address(address))


def test_a_name_that_does_not_resolve_is_refused_with_its_reason():
    with pytest.raises(CallbackUrlError, match="does not resolve"):
        check_callback_url("https://nowhere.invalid/", WebhookAllowlist.parse("nowhere.invalid"))
