"""`ocrserve serve`'s watch over its children (the worker, the engines): a child that dies is
logged, reported and started again with backoff.

| a child ...                 | done                                                       |
|-----------------------------|------------------------------------------------------------|
| exits or is killed          | seen within `POLL_S`; its group's leftovers killed; one line on stderr; `serve-children.json` says it is down and why, so GET /health and `ocrserve status` say `degraded` |
| waits to be started again   | `BACKOFF_S` doubling up to `MAX_BACKOFF_S`; back to the first step once a child ran `STABLE_S` |
| is started again            | same command, environment and log; an engine on the same port and waited for until ready; reported up again |
| fails to start again        | reported down with the error; tried again after the next backoff |

Restarting is safe for jobs: the embedded broker's new worker sends every unfinished job again
at start (workers/recovery.py), and a page whose engine died is retried by its task.
One thread per child, so an engine loading its model does not keep a dead worker waiting.
"""
from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from app.local_services import ManagedProcess
from workers.service_status import write_children_report

POLL_S = 0.5
BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
STABLE_S = 60.0


class Supervisor:
    def __init__(self, data_dir: Path, children: list[ManagedProcess]):
        self.data_dir = data_dir
        self.stopped = threading.Event()
        self._lock = threading.Lock()   # guards `_state` and the report
        self._state: dict[str, dict[str, Any]] = {child.name: {"ok": True, "pid": child.popen.pid, "restarts": 0}
                                                  for child in children}
        self._watches = [_ChildWatch(self, child) for child in children]

    @property
    def children(self) -> list[ManagedProcess]:
        return [watch.child for watch in self._watches]

    def start(self) -> Supervisor:
        self._write_report()
        for watch in self._watches:
            watch.start()
        return self

    def stop(self, stop_timeout_s: float = 20.0) -> None:
        """Stop watching, then stop every child in reverse order of start; the report goes."""
        self.stopped.set()
        for watch in reversed(self._watches):
            with watch.lock:   # a child being started again meanwhile is stopped by its watch
                watch.child.stop(stop_timeout_s)
        (self.data_dir / "serve-children.json").unlink(missing_ok=True)

    def update(self, name: str, **fields: Any) -> None:
        with self._lock:
            self._state[name].update(fields)
            if fields.get("ok"):
                self._state[name].pop("detail", None)
            self._write_report()

    def _write_report(self) -> None:
        write_children_report(self.data_dir, self._state)


class _ChildWatch(threading.Thread):
    def __init__(self, supervisor: Supervisor, child: ManagedProcess):
        super().__init__(name=f"ocrserve-watch-{child.name}", daemon=True)
        self.supervisor, self.child = supervisor, child
        self.lock = threading.Lock()   # held while the child is reaped or replaced
        self.restarts = 0

    def run(self) -> None:
        stopped = self.supervisor.stopped
        backoff_s = BACKOFF_S
        started_at = self.child.started_at
        while not stopped.wait(POLL_S):
            if self.child.is_running:
                continue
            with self.lock:
                if stopped.is_set():
                    return
                code = self.child.stop(0)   # reaps it and kills whatever is left in its group
            if time.monotonic() - started_at >= STABLE_S:
                backoff_s = BACKOFF_S
            reason = f"the {self.child.name} {describe_exit(code)}"
            self._down(f"{reason}; starting it again in {backoff_s:g} s")
            if stopped.wait(backoff_s):
                return
            backoff_s = min(backoff_s * 2, MAX_BACKOFF_S)
            self._down(f"{reason}; starting it again now")
            started_at = time.monotonic()
            try:
                new = self.child.respawn()   # an engine: waited for until ready, outside the lock
            except Exception as exc:   # noqa: BLE001 - reported; tried again after the next backoff
                self._down(f"{reason}; starting it again failed: {exc}")
                continue
            with self.lock:
                self.child = new
                if stopped.is_set():   # `serve` is stopping: so does the new child
                    new.stop()
                    return
            self.restarts += 1
            self.supervisor.update(new.name, ok=True, pid=new.popen.pid, restarts=self.restarts)
            _say(f"the {new.name} is running again (pid {new.popen.pid}, restart {self.restarts})")

    def _down(self, detail: str) -> None:
        self.supervisor.update(self.child.name, ok=False, detail=detail, restarts=self.restarts)
        _say(detail)


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _say(line: str) -> None:
    print(f"ocrserve serve: {line}", file=sys.stderr, flush=True)
