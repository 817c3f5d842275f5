"""Load the engine in the background and shut it down once.

The HTTP server binds and answers while weights load (503 on everything that
needs the model), so `AsyncEngine.start` -- which blocks for seconds -- runs in
a daemon thread. A daemon, because a SIGTERM during loading must not wait for
the weights to finish loading before the process can exit.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any

LOAD_POLL_S = 0.05


class EngineLifecycle:
    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.load_error: BaseException | None = None
        self._load_done = threading.Event()
        self._load_thread: threading.Thread | None = None
        self._shutdown_lock = threading.Lock()
        self._is_shut_down = False

    def start_loading(self) -> None:
        assert self._load_thread is None, "the engine is loaded once"
        self._load_thread = threading.Thread(target=self._load, name="engine-load", daemon=True)
        self._load_thread.start()

    def _load(self) -> None:
        try:
            self.engine.start()
        except BaseException as exc:   # reported through wait_loaded(); the process then exits non-zero
            self.load_error = exc
        finally:
            self._load_done.set()

    @property
    def is_loading(self) -> bool:
        return self._load_thread is not None and not self._load_done.is_set()

    @property
    def is_ready(self) -> bool:
        return self._load_done.is_set() and self.load_error is None and not self._is_shut_down \
            and bool(self.engine.is_ready)

    async def wait_loaded(self) -> bool:
        """Wait for loading to end; True when the engine is up."""
        while not self._load_done.is_set():
            await asyncio.sleep(LOAD_POLL_S)
        return self.load_error is None

    def shutdown_engine(self) -> None:
        """Abort in-flight requests and stop the engine loop; safe to call more than once.

        While the weights are still loading there is nothing in flight and nothing
        to stop, and `engine.shutdown` must not race `engine.start`: the caller
        simply exits, and the daemon loading thread dies with the process.
        """
        with self._shutdown_lock:
            if self._is_shut_down or not self._load_done.is_set() or self.load_error is not None:
                return
            self._is_shut_down = True
        self.engine.shutdown()
