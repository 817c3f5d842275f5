"""The one engine every page of an OCRmyPDF run is recognised on.

Our engine takes seconds to load its model, and OCRmyPDF reads pages in several
worker processes, so the main process starts it once, before the workers exist
(OCRmyPDF's `validate` hook), the way `ocrserve run` does: on loopback, a port
of its own, a random key that only this process tree knows (the plugin's
`validate` hands the address and key to the workers through the environment;
the key is never put on a command line or in OCRmyPDF's options). The engine is stopped
when the process exits (and, should the process be killed, it stops itself:
`engine/server/parent_watch.py`). Called through OCRmyPDF's Python API, one
engine serves every run of the process.

With an engine already running (`--ocrserve-engine-url`, or OCRSERVE_ENGINE_URL
with its OCRSERVE_ENGINE_API_KEY), nothing is started.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path

from app.local_services import ManagedProcess, child_env, start_engine, with_engine_keys
from workers.settings import Settings

_lock = threading.Lock()
_started: dict[str, tuple[ManagedProcess, str, str]] = {}   # model -> (engine, its /v1 URL, its key)


def with_engine(settings: Settings) -> Settings:
    """`settings` pointing at the engine the run's pages go to: the one they name, else one started
    now (once per process and model), with its key. Unchanged when the recogniser needs no engine
    of ours (OCRSERVE_RECOGNIZER=tesseract) or names one already running."""
    if not settings.starts_own_engine:
        return settings
    model = settings.recognizer_model
    with _lock:
        if model not in _started:
            _started[model] = _start(settings)
        _, url, key = _started[model]
    return settings.model_copy(update={"engine_url": url, "engine_api_key": key})


def _start(settings: Settings) -> tuple[ManagedProcess, str, str]:
    keyed = with_engine_keys(settings)
    log_dir = Path(tempfile.mkdtemp(prefix="ocrmypdf-ocrserve-"))
    engine, url = start_engine(keyed, child_env(keyed), 0, log_dir / "engine.log", api_key=keyed.engine_api_key)
    assert keyed.engine_api_key, "with_engine_keys always gives an engine it starts a key"
    atexit.register(_stop, engine, os.getpid(), log_dir)
    return engine, url, keyed.engine_api_key


def _stop(engine: ManagedProcess, owner_pid: int, log_dir: Path) -> None:
    # A worker forked from this process inherits the handler; only the process that started the
    # engine stops it (and waits for it, so its CPU time counts among its parent's children).
    if os.getpid() == owner_pid:
        engine.stop()
        shutil.rmtree(log_dir, ignore_errors=True)
