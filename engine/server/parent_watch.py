"""Ending with the process that started us.

`ocrserve run` and `ocrserve serve` start the engine and the worker in sessions of
their own (so a Ctrl-C in the terminal reaches only the parent, which stops them
in order). A parent killed with SIGKILL stops nothing, and its children would run
on, holding CPU, ports and a temporary data directory. So the parent names itself
in `OCRSERVE_PARENT_PID`, and the child asks the kernel for SIGTERM when that
parent dies (Linux `PR_SET_PDEATHSIG`; elsewhere a thread watches `getppid`).
SIGTERM, not SIGKILL: the engine and the worker shut down as they do for Ctrl-C.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PARENT_PID_ENV = "OCRSERVE_PARENT_PID"
_PR_SET_PDEATHSIG = 1
_POLL_S = 1.0


def parent_env() -> dict[str, str]:
    """What a parent adds to a child's environment so the child ends with it."""
    return {PARENT_PID_ENV: str(os.getpid())}


def exit_with_parent(sig: signal.Signals = signal.SIGTERM) -> bool:
    """Arrange for `sig` when the parent named in OCRSERVE_PARENT_PID dies; False if none is named.
    The variable is removed, so processes this one starts do not watch our parent."""
    value = os.environ.pop(PARENT_PID_ENV, None)
    if not value:
        return False
    try:
        parent = int(value)
    except ValueError:
        return False
    if not _ask_the_kernel(sig):
        threading.Thread(target=_watch, args=(parent, sig), name="parent-watch", daemon=True).start()
    if os.getppid() != parent:      # it died before we asked: nothing would ever tell us
        os.kill(os.getpid(), sig)
    return True


def _ask_the_kernel(sig: signal.Signals) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int, sig: signal.Signals) -> None:
    while os.getppid() == parent:
        time.sleep(_POLL_S)
    os.kill(os.getpid(), sig)
