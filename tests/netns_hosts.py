"""Hosts for multi-host tests, made of Linux network namespaces (iproute2).

Each host is a namespace joined to this one by its own veth pair: 10.77.K.1 on
this side, 10.77.K.2 in the host. Services started here (PostgreSQL, Redis)
listen on the .1 addresses, and each host reaches them at its own gateway. IP
forwarding stays off, so hosts cannot reach one another: what they share is what
is listening here, and, given a data directory each, no disk. Creating
namespaces needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN); `unavailable()` says
why not, for the test to say so and skip.
"""
from __future__ import annotations

import os
import subprocess

SUBNET = "10.77"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def unavailable() -> str | None:
    """None when hosts can be made here (a namespace, a veth pair, one end moved into it), else
    the reason they cannot."""
    tag = os.getpid() % 10000
    name, here, there = f"ocrprobe{tag}", f"vp{tag}a", f"vp{tag}b"
    try:
        steps = [("netns", "add", name), ("link", "add", here, "type", "veth", "peer", "name", there),
                 ("link", "set", there, "netns", name)]
        for step in steps:
            done = _ip(*step, check=False)
            if done.returncode != 0:
                return f"`ip {' '.join(step)}` failed: {done.stderr.strip() or done.returncode}"
        return None
    except FileNotFoundError:
        return "iproute2's `ip` is not installed"
    finally:
        try:
            _ip("link", "del", here, check=False)
            _ip("netns", "del", name, check=False)
        except FileNotFoundError:
            pass


class Hosts:
    def __init__(self, names: list[str]):
        self.names = names
        self._tag = f"{os.getpid() % 10000}"
        self.made: list[str] = []
        try:
            for index, name in enumerate(names, start=1):
                ns, here, there = self.namespace(name), f"vo{self._tag}h{index}", f"vo{self._tag}n{index}"
                _ip("netns", "add", ns)
                self.made.append(ns)
                _ip("link", "add", here, "type", "veth", "peer", "name", there)
                _ip("link", "set", there, "netns", ns)
                _ip("addr", "add", f"{self.gateway(name)}/30", "dev", here)
                _ip("link", "set", here, "up")
                _ip("netns", "exec", ns, "ip", "addr", "add", f"{self.address(name)}/30", "dev", there)
                _ip("netns", "exec", ns, "ip", "link", "set", there, "up")
                _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        except BaseException:
            self.remove()
            raise

    def namespace(self, name: str) -> str:
        return f"ocr{self._tag}{name}"

    def _index(self, name: str) -> int:
        return self.names.index(name) + 1

    def gateway(self, name: str) -> str:
        """This side's address on the host's link: where the host finds the shared services."""
        return f"{SUBNET}.{self._index(name)}.1"

    def address(self, name: str) -> str:
        return f"{SUBNET}.{self._index(name)}.2"

    def gateways(self) -> list[str]:
        return [self.gateway(name) for name in self.names]

    def prefix(self, name: str) -> tuple[str, ...]:
        """Run a command on the host."""
        return ("ip", "netns", "exec", self.namespace(name))

    def remove(self) -> None:
        for ns in self.made:   # deleting a namespace deletes its end of the veth, and so the pair
            _ip("netns", "del", ns, check=False)
        self.made.clear()
