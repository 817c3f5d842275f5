"""One grammar backend per engine/model: compiles specs, caches them, makes matchers.

| kept here          | invariant                                                       |
|--------------------|-----------------------------------------------------------------|
| tokenizer_info     | xgrammar's view of the vocabulary, `vocab_size` = logits width  |
| _cache             | LRU of compiled grammars; sum of their sizes <= max_cache_bytes |
| _failures          | LRU of specs that failed (bad, too big, too slow): a repeat is  |
|                    | refused at once instead of costing another compile timeout      |
| _worker            | the one compile process; used under _worker_lock only           |

`compile` is thread-safe and may block for up to `compile_timeout_s` (plus
the worker's start the first time): call it off the engine loop, when a request
is admitted, not inside a step. `warm_up` starts the worker and compiles the
json_object grammar, for start-up.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import xgrammar as xgr

from engine.errors import EngineOverloadedError
from engine.grammar.compile_worker import CompileFailed, CompileTimeout, CompileWorker, WorkerDied
from engine.grammar.spec import DEFAULT_GRAMMAR_LIMITS, GrammarError, GrammarLimits, GrammarSpec
from engine.grammar.state import GrammarState

_MAX_REMEMBERED_FAILURES = 256


class GrammarBackend:
    def __init__(self, tokenizer, vocab_size: int, max_cache_bytes: int = 64 << 20,
                 compile_timeout_s: float = 10.0, max_threads: int = 1, *,
                 stop_token_ids: list[int] | None = None,
                 limits: GrammarLimits = DEFAULT_GRAMMAR_LIMITS,
                 max_grammar_bytes: int | None = None,
                 worker_start_timeout_s: float = 60.0):
        """tokenizer: a Hugging Face tokenizer. vocab_size: the model's logits
        width, which may exceed len(tokenizer) (padded) or fall short of it (added
        tokens the model never emits). stop_token_ids: the ids that end generation
        (default: the tokenizer's EOS); a grammar allows them once it is complete."""
        assert vocab_size > 0 and max_cache_bytes > 0 and compile_timeout_s > 0
        self.vocab_size = vocab_size
        self.tokenizer_info = xgr.TokenizerInfo.from_huggingface(
            tokenizer, vocab_size=vocab_size, stop_token_ids=stop_token_ids)
        self.stop_token_ids = list(self.tokenizer_info.stop_token_ids)
        self.max_cache_bytes = max_cache_bytes
        self.max_grammar_bytes = max_grammar_bytes if max_grammar_bytes is not None else max_cache_bytes // 4
        assert self.max_grammar_bytes <= max_cache_bytes, "a grammar must fit the cache it goes into"
        self.compile_timeout_s = compile_timeout_s
        self.limits = limits
        self._max_threads = max_threads
        self._worker_start_timeout_s = worker_start_timeout_s
        self._tokenizer_info_json = self.tokenizer_info.serialize_json()

        self._cache: OrderedDict[tuple[str, str], tuple[xgr.CompiledGrammar, int]] = OrderedDict()
        self._failures: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._worker_lock = threading.Lock()
        self._worker: CompileWorker | None = self._start_worker()

        self.cache_bytes = 0
        self.num_cache_hits = 0
        self.num_compiles = 0        # compiles that reached the worker (cache misses)
        self.num_evictions = 0
        self.num_timeouts = 0

    # ------------------------------------------------------------------ public

    def compile(self, spec: GrammarSpec) -> xgr.CompiledGrammar:
        """Validate and compile `spec`, from the cache when possible.

        Raises GrammarError (400: invalid, unsupported, too big, too slow to
        compile) or EngineOverloadedError (503: the compiler stayed busy with
        other requests for a whole timeout)."""
        # A cached source passed validation when it was compiled: skip the checks.
        if spec.has_one_source():
            with self._cache_lock:
                entry = self._cache.get(spec.key)
                if entry is not None:
                    self._cache.move_to_end(spec.key)
                    self.num_cache_hits += 1
                    return entry[0]
        spec.validate(self.limits)
        key = spec.key
        with self._cache_lock:
            if key in self._failures:
                self._failures.move_to_end(key)
                raise GrammarError(self._failures[key], param=spec.param)
        try:
            compiled = self._compile_in_worker(spec)
        except GrammarError as exc:
            self._remember_failure(key, str(exc))
            raise
        self._insert(key, compiled)
        return compiled

    def new_matcher(self, spec: GrammarSpec) -> GrammarState:
        """A fresh per-request matcher for `spec` (compiled or taken from the cache)."""
        compiled = self.compile(spec)
        return GrammarState(xgr.GrammarMatcher(compiled), self.vocab_size)

    def warm_up(self) -> None:
        self.compile(GrammarSpec(json_object=True))

    def close(self) -> None:
        with self._worker_lock:
            if self._worker is not None:
                self._worker.close()
                self._worker = None

    # ---------------------------------------------------------------- internal

    def _compile_in_worker(self, spec: GrammarSpec) -> xgr.CompiledGrammar:
        # Waiting behind other compiles is bounded by the same timeout.
        if not self._worker_lock.acquire(timeout=self.compile_timeout_s):
            raise EngineOverloadedError("the grammar compiler is busy; retry the request later")
        try:
            if self._worker is None:
                self._worker = self._start_worker()
            self.num_compiles += 1
            try:
                serialized = self._worker.compile(spec.kind, spec.source, self.compile_timeout_s)
            except CompileFailed as exc:
                raise GrammarError(f"invalid {spec.kind}: {exc}", param=spec.param) from None
            except CompileTimeout:
                self.num_timeouts += 1
                self._worker = self._start_worker()   # boots while the error goes back
                raise GrammarError(
                    f"compiling the {spec.kind} took longer than {self.compile_timeout_s:g} s; "
                    "simplify it (fewer properties, smaller repetition counts)", param=spec.param) from None
            except WorkerDied as exc:
                self._worker = self._start_worker()
                raise GrammarError(f"the {spec.kind} could not be compiled: {exc}", param=spec.param) from None
        finally:
            self._worker_lock.release()
        compiled = xgr.CompiledGrammar.deserialize_json(serialized, self.tokenizer_info)
        if compiled.memory_size_bytes > self.max_grammar_bytes:
            raise GrammarError(
                f"the compiled {spec.kind} needs {_format_bytes(compiled.memory_size_bytes)}, more than the "
                f"limit of {_format_bytes(self.max_grammar_bytes)}; simplify it", param=spec.param)
        return compiled

    def _start_worker(self) -> CompileWorker:
        return CompileWorker(self._tokenizer_info_json, self._max_threads, self._worker_start_timeout_s)

    def _insert(self, key: tuple[str, str], compiled: xgr.CompiledGrammar) -> None:
        num_bytes = compiled.memory_size_bytes
        with self._cache_lock:
            if key in self._cache:      # another thread compiled it meanwhile
                return
            self._cache[key] = (compiled, num_bytes)
            self.cache_bytes += num_bytes
            while self.cache_bytes > self.max_cache_bytes:
                _, (_, evicted_bytes) = self._cache.popitem(last=False)
                self.cache_bytes -= evicted_bytes
                self.num_evictions += 1

    def _remember_failure(self, key: tuple[str, str], message: str) -> None:
        with self._cache_lock:
            self._failures[key] = message
            while len(self._failures) > _MAX_REMEMBERED_FAILURES:
                self._failures.popitem(last=False)

    @property
    def num_cached(self) -> int:
        return len(self._cache)


def _format_bytes(num_bytes: int) -> str:
    return f"{num_bytes / (1 << 20):.1f} MiB" if num_bytes >= 1 << 20 else f"{num_bytes / 1024:.0f} KiB"
