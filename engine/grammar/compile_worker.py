"""Compiles grammars in a child process, so that a compile can be stopped.

xgrammar compiles in C++ and cannot be interrupted from Python. A thread that
overran its timeout would keep a core busy, and its memory growing, until the
compile finished, which for some small inputs takes minutes (measured on the
build machine: a schema with 3000 string properties > 60 s; the 27-byte regex
`[^x]{0,20000}[^y]{0,20000}` 6 s and 10 MB). So compiles run in a child
process that is killed when it overruns and replaced; the compiled grammar
comes back in xgrammar's own JSON serialization.

Protocol over a socketpair; a frame is an 8-byte big-endian length and a body:

| direction      | frames                                                      |
|----------------|-------------------------------------------------------------|
| parent -> child| tokenizer-info JSON (once); then {"kind", "source"} per job |
| child -> parent| {"ready": true} (once); then {"ok": true} + compiled-grammar|
|                | JSON, or {"ok": false, "error": message}                    |

The child exits when the parent's end of the socket closes, so it never
outlives the engine.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import xgrammar as xgr

_FRAME_HEADER = struct.Struct(">Q")


class CompileTimeout(Exception):
    """The compile did not finish in time; the worker was killed."""


class CompileFailed(Exception):
    """xgrammar refused the source; the message is fit for the user."""


class WorkerDied(Exception):
    """The child exited or stopped answering outside a compile."""


def compile_source(compiler: xgr.GrammarCompiler, kind: str, source: str) -> xgr.CompiledGrammar:
    """Every xgrammar compile option the engine uses, in one place."""
    # JSON comes out on one line with json.dumps' separators (", " and ": "). Free
    # whitespace lets a small model loop on newlines, and bounding it instead
    # (max_whitespace_cnt=24) made a compiled grammar 40x larger (80 KB -> 3 MB).
    if kind == "json_schema":
        # strict_mode: properties and items the schema does not name are refused,
        # so an output is a subset of what the schema allows and always validates.
        return compiler.compile_json_schema(source, any_whitespace=False, strict_mode=True)
    if kind == "json_object":
        return compiler.compile_json_schema('{"type": "object"}', any_whitespace=False, strict_mode=False)
    if kind == "regex":
        return compiler.compile_regex(source)
    if kind == "ebnf":
        return compiler.compile_grammar(source, root_rule_name="root")
    raise AssertionError(f"unknown grammar kind {kind!r}")


def clean_error(exc: BaseException) -> str:
    """xgrammar's message without its log prefix, source location, or an echo of the input."""
    text = str(exc).strip().split("\n")[0]
    text = re.sub(r"^\[[^\]]*\]\s*", "", text)                 # "[13:49:45] "
    text = re.sub(r"^\S+\.(cc|h|py):\d+:\s*", "", text)        # "/project/cpp/x.cc:94: "
    text = re.sub(r"^Check failed: \(.*?\) is false:\s*", "", text)
    text = text.split(" The JSON string is:")[0]
    return text[:300] if text else type(exc).__name__


class CompileWorker:
    """Parent-side handle of one compile process. Not thread-safe: the backend serialises calls."""

    def __init__(self, tokenizer_info_json: str, max_threads: int, start_timeout_s: float):
        self._tokenizer_info_json = tokenizer_info_json.encode()
        self._start_timeout_s = start_timeout_s
        self._sock, child_sock = socket.socketpair()
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ, OMP_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p))
        self._process = subprocess.Popen(
            [sys.executable, "-c", "from engine.grammar.compile_worker import serve_from_argv; serve_from_argv()",
             str(child_sock.fileno()), str(max_threads)],
            pass_fds=[child_sock.fileno()], stdin=subprocess.DEVNULL, env=env)
        child_sock.close()
        self._is_ready = False

    @property
    def pid(self) -> int:
        return self._process.pid

    def compile(self, kind: str, source: str, timeout_s: float) -> str:
        """Return the compiled grammar as xgrammar JSON. The timeout counts from
        the request being sent; starting the child has its own timeout."""
        self._ensure_ready()
        deadline = time.monotonic() + timeout_s
        try:
            _send_frame(self._sock, json.dumps({"kind": kind, "source": source}).encode(), deadline)
            reply = json.loads(_recv_frame(self._sock, deadline))
            if not reply["ok"]:
                raise CompileFailed(reply["error"])
            return _recv_frame(self._sock, deadline).decode()
        except TimeoutError:
            self.close()
            raise CompileTimeout() from None
        except (EOFError, OSError) as exc:
            self.close()
            raise WorkerDied(f"grammar compile process exited ({self._exit_status()})") from exc

    def _ensure_ready(self) -> None:
        if self._is_ready:
            return
        deadline = time.monotonic() + self._start_timeout_s
        try:
            _send_frame(self._sock, self._tokenizer_info_json, deadline)
            assert json.loads(_recv_frame(self._sock, deadline)) == {"ready": True}
        except (TimeoutError, EOFError, OSError) as exc:
            self.close()
            raise WorkerDied(f"grammar compile process did not start ({self._exit_status()})") from exc
        self._is_ready = True

    def _exit_status(self) -> str:
        code = self._process.poll()
        return "still running" if code is None else f"exit code {code}"

    def close(self) -> None:
        self._sock.close()
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait(timeout=10)


def _send_frame(sock: socket.socket, body: bytes, deadline: float | None) -> None:
    sock.settimeout(_time_left(deadline))
    sock.sendall(_FRAME_HEADER.pack(len(body)) + body)


def _recv_frame(sock: socket.socket, deadline: float | None) -> bytes:
    (length,) = _FRAME_HEADER.unpack(_recv_exact(sock, _FRAME_HEADER.size, deadline))
    return _recv_exact(sock, length, deadline)


def _recv_exact(sock: socket.socket, num_bytes: int, deadline: float | None) -> bytes:
    buffer = bytearray(num_bytes)
    view = memoryview(buffer)
    received = 0
    while received < num_bytes:
        sock.settimeout(_time_left(deadline))
        count = sock.recv_into(view[received:])
        if count == 0:
            raise EOFError("peer closed the socket")
        received += count
    return bytes(buffer)


def _time_left(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError()
    return left


def _serve(sock: socket.socket, max_threads: int) -> None:
    info = xgr.TokenizerInfo.deserialize_json(_recv_frame(sock, None).decode())
    # The parent keeps the cache; one here would only grow without bound.
    compiler = xgr.GrammarCompiler(info, max_threads=max_threads, cache_enabled=False)
    _send_frame(sock, b'{"ready": true}', None)
    while True:
        try:
            request = json.loads(_recv_frame(sock, None))
        except EOFError:
            return
        try:
            payload = compile_source(compiler, request["kind"], request["source"]).serialize_json().encode()
        except Exception as exc:  # xgrammar reports every bad input as RuntimeError
            _send_frame(sock, json.dumps({"ok": False, "error": clean_error(exc)}).encode(), None)
            continue
        _send_frame(sock, b'{"ok": true}', None)
        _send_frame(sock, payload, None)


def serve_from_argv() -> None:
    """Child entry point: argv holds the socket's file descriptor and xgrammar's thread count."""
    # A Ctrl-C in a terminal reaches the whole process group; the parent decides when we stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _serve(socket.socket(fileno=int(sys.argv[1])), max_threads=int(sys.argv[2]))
