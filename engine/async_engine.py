"""The async front of the engine: an Engine on its own thread, streaming
outputs to asyncio callers (the HTTP server) and taking aborts from them.

Image requests are built (decoded, preprocessed: for house-ocr, the line
encoder) on a pool of as many threads as the engine has cores, while the
engine thread steps the model. While that pool has work, every core is taken
by it, so the engine thread's torch runs on one thread: a second OpenMP thread
could only wait for a core and spin (measured on the house model's crops, two
cores: 5% less CPU and 8% less wall time a line than two torch threads
throughout). With nothing to build, the steps get all the configured threads."""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import threading
from typing import AsyncIterator, Sequence

import torch

from engine.config import EngineConfig
from engine.engine import Engine
from engine.errors import EngineOverloadedError, InvalidRequestError
from engine.multimodal.config import MultimodalConfig
from engine.multimodal.image_decode import ImageData
from engine.request import RequestOutput
from engine.sampling_params import SamplingParams


class AsyncEngine:
    """Runs an Engine on its own thread; `generate` streams outputs to asyncio callers."""

    def __init__(self, config: EngineConfig, metrics=None, multimodal_config: MultimodalConfig | None = None):
        self.config = config
        self.multimodal_config = multimodal_config
        if metrics is None:
            from engine.metrics import EngineMetrics

            metrics = EngineMetrics(model_name=config.model)
        self.metrics = metrics
        self.engine: Engine | None = None
        self.is_ready = False
        self._inbox: queue.Queue = queue.Queue()
        self._streams: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Queue]] = {}
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.startup_error: BaseException | None = None
        # Request building (image decoding and encoding, grammar compiles) runs on as many threads as
        # the engine has cores: more only makes them fight the engine loop for the same CPUs.
        self._builders = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, config.num_threads or os.cpu_count() or 1), thread_name_prefix="request-build")
        self._num_building = 0   # requests handed to the builders and not back yet (event loop writes)

    def start(self) -> None:
        try:
            self.engine = Engine(self.config, self.metrics, self.multimodal_config)
        except BaseException as exc:
            self.startup_error = exc
            raise
        e = self.engine
        self.tokenizer, self.context_length, self.vocab_size = e.tokenizer, e.context_length, e.vocab_size
        self.model_name = self.config.model
        self.supports_images = e.supports_images
        self.multimodal_config = e.multimodal_config
        self._thread = threading.Thread(target=self._loop, name="engine-loop", daemon=True)
        self._thread.start()
        e._report_state()
        self.is_ready = True

    def _loop(self) -> None:
        e = self.engine
        step_threads = threads_now = torch.get_num_threads()
        while not self._stopping.is_set():
            if e.has_work:
                try:
                    item = self._inbox.get_nowait()
                except queue.Empty:
                    item = None
            else:
                item = self._inbox.get()  # idle: sleep until a request (or stop) arrives
            while item is not None:
                self._handle(item)
                try:
                    item = self._inbox.get_nowait()
                except queue.Empty:
                    item = None
            if self._stopping.is_set():
                break
            threads = 1 if self._num_building and e.device.type == "cpu" else step_threads
            if threads != threads_now:   # this thread's own OpenMP team (and MKL's)
                torch.set_num_threads(threads)
                threads_now = threads
            try:
                outputs = e.step()
            except Exception as exc:  # a bug must not leave callers hanging
                for rid in list(e.requests):
                    self._deliver(rid, exc)
                    e.abort(rid)
                continue
            for out in outputs:
                self._deliver(out.request_id, out)
        for rid in list(e.requests):
            out = e.abort(rid)
            if out is not None:
                self._deliver(rid, out)

    def _handle(self, item) -> None:
        kind, payload = item
        if kind == "add":
            req = payload
            try:
                self.engine.add_request(req, req.params)
            except Exception as exc:
                self._deliver(req.request_id, exc)
        elif kind == "abort":
            out = self.engine.abort(payload)
            if out is not None:
                self._deliver(payload, out)
        elif kind == "flush":
            payload.set_result(self.engine.flush_cache())
        elif kind == "stop":
            self._stopping.set()

    def _deliver(self, request_id: str, item) -> None:
        stream = self._streams.get(request_id)
        if stream is None:
            return
        loop, q = stream
        try:
            loop.call_soon_threadsafe(q.put_nowait, item)
        except RuntimeError:
            pass  # the caller's loop is closed: nobody is listening any more
        if isinstance(item, BaseException) or item.finished:
            self._streams.pop(request_id, None)

    def tokenize(self, text: str) -> list[int]:
        """Engine.tokenize, for the event loop's thread (the engine loop detokenises with its own tokenizer)."""
        return self.engine.tokenize(text)

    async def generate(self, prompt: str | list[int], params: SamplingParams,
                       request_id: str | None = None, tenant: str = "",
                       images: Sequence[ImageData] | None = None) -> AsyncIterator[RequestOutput]:
        """images: see Engine.make_request (encoded bytes, one per image placeholder in the prompt)."""
        if not self.is_ready:
            raise EngineOverloadedError("the engine is still loading")
        if images or params.grammar is not None or params.draft_text is not None:
            # Decoding images, compiling a grammar or tokenising a client's draft (up to its output budget,
            # engine/spec/policy.py) takes a while: off the event loop, so /health and other streams go on. A string
            # prompt is tokenised here (the server sends ids, tokenised on its prompt thread).
            ids = self.tokenize(prompt) if isinstance(prompt, str) else prompt
            self._num_building += 1
            try:
                req = await asyncio.get_running_loop().run_in_executor(
                    self._builders, self.engine.make_request, ids, params, request_id, tenant, images)
            finally:
                self._num_building -= 1
        else:
            req = self.engine.make_request(prompt, params, request_id, tenant)
        rid = req.request_id
        if rid in self._streams:
            raise InvalidRequestError(f"request id {rid!r} is already in use")
        q: asyncio.Queue = asyncio.Queue()
        self._streams[rid] = (asyncio.get_running_loop(), q)
        self._inbox.put(("add", req))
        finished = False
        try:
            while True:
                item = await q.get()
                if isinstance(item, BaseException):
                    finished = True
                    raise item
                if item.finished:
                    finished = True
                yield item
                if finished:
                    return
        finally:
            if not finished:
                self._streams.pop(rid, None)
                self._inbox.put(("abort", rid))

    def abort(self, request_id: str) -> None:
        self._inbox.put(("abort", request_id))

    def flush_cache(self) -> bool:
        if not self.is_ready:
            return False
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._inbox.put(("flush", fut))
        return fut.result(timeout=30)

    def kv_usage(self) -> float:
        e = self.engine
        return 0.0 if e is None else e.scheduler.kv_used_tokens() / (e.pool.num_slots - 1)

    def shutdown(self) -> None:
        self._stopping.set()
        self._inbox.put(("stop", None))
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._builders.shutdown(wait=False, cancel_futures=True)
        if self.engine is not None:
            self.engine.close()
        self.is_ready = False
