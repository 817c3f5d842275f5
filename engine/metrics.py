"""Prometheus metrics of one engine, fed by the engine loop through a few hooks.

Every series exists from construction with value zero (DESIGN invariant 6): a
scraper must never have to guess whether "missing" means zero or broken. Each
`EngineMetrics` owns its own `CollectorRegistry`, so a process (or a test) can
hold several engines without their series colliding.

The hooks are called from the engine-loop thread while `/metrics` renders from
the HTTP thread. Hooks are observers: they never raise into the engine loop.
prometheus_client metrics are individually thread-safe; the
prefix-cache hit rate is a ratio of two totals, so those two are kept under a
lock to be read as a consistent pair.

| series | kind | fed by |
|---|---|---|
| ocrserve_requests_received_total | counter | on_request_arrived |
| ocrserve_requests_running / _waiting | gauge | set_state |
| ocrserve_kv_cache_usage_ratio, _used_tokens, _total_tokens | gauge | set_state |
| ocrserve_prefix_cache_tokens | gauge: tokens held by the radix cache | set_state |
| ocrserve_prefix_cache_hit_rate | gauge: cached / admitted prompt tokens | on_prefill_admitted |
| ocrserve_cached_prompt_tokens_total | counter | on_prefill_admitted |
| ocrserve_prompt_tokens_total, ocrserve_generation_tokens_total | counter | on_request_finished |
| ocrserve_request_success_total{finish_reason} | counter | on_request_finished |
| ocrserve_loop_guard_requests_total | counter: finished requests that ran with the loop guard | on_request_finished |
| ocrserve_loop_guard_stops_total | counter: ... that it stopped (finish reason repetition, or stop where house-ocr kept its draft instead) | on_request_finished |
| ocrserve_time_to_first_token_seconds | histogram | on_first_token |
| ocrserve_inter_token_latency_seconds | histogram | on_inter_token |
| ocrserve_retractions_total | counter | on_retract |
| ocrserve_request_aborts_total | counter | on_abort |
| ocrserve_spec_draft_tokens_total, ocrserve_spec_accepted_tokens_total | counter: all methods | on_draft_verified |
| ocrserve_spec_draft_tokens_by_method_total{method} | counter | on_spec_verified |
| ocrserve_spec_accepted_tokens_by_method_total{method} | counter | on_spec_verified |
| ocrserve_spec_acceptance_length{method} | histogram: drafted tokens kept per verification | on_spec_verified |
| ocrserve_spec_rescored_lines_total{kept} | counter | on_rescored |

Speculative decoding's series by method (SPEC_METHODS: the drafters' names) sum to
the unlabelled totals: the drafting policy (engine/spec/policy.py) records each verdict
under the method the scheduler noted on the request (`DraftState.method`) when it handed
out the draft. House-ocr's rescoring (engine/spec/rescore.py) feeds on_rescored.
"""
from __future__ import annotations

import threading

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

METRICS_CONTENT_TYPE = CONTENT_TYPE_LATEST
# "stop_regex_timeout": engine.stop's regex budget; "repetition": the loop guard (engine/loop_guard.py)
FINISH_REASONS = ("stop", "length", "abort", "stop_regex_timeout", "repetition")

# Seconds. TTFT spans a cached short prompt on a GPU up to a long prefill queued
# behind others on a CPU; inter-token latency spans one small GPU step up to a
# large CPU batch.
TTFT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0)
# Drafted tokens kept in one verification step: 0 (the first was rejected) up to the draft size
# (n-grams and draft models: a few; house-ocr's CTC draft: up to 32 by default).
ACCEPTANCE_LENGTH_BUCKETS = (0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32)
SPEC_METHODS = ("ngram", "draft_model", "mtp", "grammar", "ctc", "text_layer")   # engine/spec's drafters' names
ITL_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0)


class EngineMetrics:
    """The engine's Prometheus series and the hooks the engine loop calls."""

    def __init__(self, model_name: str = "") -> None:
        self.model_name = model_name
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self._lock = threading.Lock()
        self._num_admitted_prompt_tokens = 0
        self._num_cached_prompt_tokens = 0

        self.model_info = Gauge("ocrserve_model_info", "The served model (value is always 1).",
                                ["model_name"], registry=r)
        self.model_info.labels(model_name=model_name).set(1)

        self.requests_received = Counter("ocrserve_requests_received", "Requests that reached the engine.",
                                         registry=r)
        self.requests_running = Gauge("ocrserve_requests_running", "Requests in the running batch.", registry=r)
        self.requests_waiting = Gauge("ocrserve_requests_waiting", "Requests queued for admission.", registry=r)

        self.kv_usage_ratio = Gauge("ocrserve_kv_cache_usage_ratio",
                                    "Fraction of KV pool slots in use (0..1).", registry=r)
        self.kv_used_tokens = Gauge("ocrserve_kv_cache_used_tokens", "KV pool slots in use.", registry=r)
        self.kv_total_tokens = Gauge("ocrserve_kv_cache_total_tokens", "KV pool capacity in tokens.", registry=r)
        self.prefix_cache_tokens = Gauge("ocrserve_prefix_cache_tokens",
                                         "Tokens currently held by the radix prefix cache.", registry=r)

        self.prefix_cache_hit_rate = Gauge("ocrserve_prefix_cache_hit_rate",
                                           "Cached prompt tokens / admitted prompt tokens, since start.", registry=r)
        self.cached_prompt_tokens = Counter("ocrserve_cached_prompt_tokens",
                                            "Prompt tokens served from the prefix cache.", registry=r)
        self.prompt_tokens = Counter("ocrserve_prompt_tokens", "Prompt tokens of finished requests.", registry=r)
        self.generation_tokens = Counter("ocrserve_generation_tokens",
                                         "Generated tokens of finished requests.", registry=r)
        self.request_success = Counter("ocrserve_request_success", "Finished requests by finish reason.",
                                       ["finish_reason"], registry=r)
        for reason in FINISH_REASONS:
            self.request_success.labels(finish_reason=reason)
        # the guard's figures: how many requests it watched and how many it stopped
        self.loop_guard_requests = Counter("ocrserve_loop_guard_requests",
                                           "Finished requests that ran with the loop guard.", registry=r)
        self.loop_guard_stops = Counter("ocrserve_loop_guard_stops",
                                        "Requests the loop guard stopped (their finish reason is repetition, or stop "
                                        "where the model kept its own draft instead).", registry=r)

        self.time_to_first_token = Histogram("ocrserve_time_to_first_token_seconds",
                                             "Seconds from arrival to the first generated token.",
                                             buckets=TTFT_BUCKETS, registry=r)
        self.inter_token_latency = Histogram("ocrserve_inter_token_latency_seconds",
                                             "Seconds between consecutive generated tokens of a request.",
                                             buckets=ITL_BUCKETS, registry=r)
        self.retractions = Counter("ocrserve_retractions", "Requests preempted under KV memory pressure.",
                                   registry=r)
        self.aborts = Counter("ocrserve_request_aborts", "Requests aborted (client gone, timeout, shutdown).",
                              registry=r)
        self.draft_tokens = Counter("ocrserve_spec_draft_tokens",
                                    "Drafted tokens verified by speculative decoding.", registry=r)
        self.accepted_draft_tokens = Counter("ocrserve_spec_accepted_tokens",
                                             "Drafted tokens the model agreed with (kept).", registry=r)
        self.method_draft_tokens = Counter("ocrserve_spec_draft_tokens_by_method",
                                           "Drafted tokens verified, by drafting method.", ["method"], registry=r)
        self.method_accepted_tokens = Counter("ocrserve_spec_accepted_tokens_by_method",
                                              "Drafted tokens the model agreed with (kept), by drafting method.",
                                              ["method"], registry=r)
        self.acceptance_length = Histogram("ocrserve_spec_acceptance_length",
                                           "Drafted tokens kept by one verification step (the step also adds the "
                                           "model's own next token), by drafting method.", ["method"],
                                           buckets=ACCEPTANCE_LENGTH_BUCKETS, registry=r)
        for method in SPEC_METHODS:
            self.method_draft_tokens.labels(method=method)
            self.method_accepted_tokens.labels(method=method)
            self.acceptance_length.labels(method=method)
        self.rescored_lines = Counter("ocrserve_spec_rescored_lines",
                                      "Finished greedy lines rescored against their draft (house-ocr), by the "
                                      "output kept.", ["kept"], registry=r)
        for kept in ("decoder", "draft"):
            self.rescored_lines.labels(kept=kept)

    # ---- hooks called by the engine loop ----

    def on_request_arrived(self) -> None:
        self.requests_received.inc()

    def on_prefill_admitted(self, num_prompt_tokens: int, num_cached_tokens: int) -> None:
        with self._lock:
            self._num_admitted_prompt_tokens += num_prompt_tokens
            self._num_cached_prompt_tokens += num_cached_tokens
            hit_rate = self._num_cached_prompt_tokens / max(self._num_admitted_prompt_tokens, 1)
            self.cached_prompt_tokens.inc(num_cached_tokens)
            self.prefix_cache_hit_rate.set(hit_rate)

    def on_first_token(self, seconds_since_arrival: float) -> None:
        self.time_to_first_token.observe(seconds_since_arrival)

    def on_inter_token(self, seconds: float) -> None:
        self.inter_token_latency.observe(seconds)

    def on_request_finished(self, num_prompt_tokens: int, num_output_tokens: int, finish_reason: str,
                            loop_guarded: bool = False, loop_stopped: bool = False) -> None:
        self.prompt_tokens.inc(num_prompt_tokens)
        self.generation_tokens.inc(num_output_tokens)
        self.request_success.labels(finish_reason=finish_reason).inc()
        if loop_guarded:
            self.loop_guard_requests.inc()
            if loop_stopped:
                self.loop_guard_stops.inc()

    def on_abort(self) -> None:
        self.aborts.inc()

    def on_retract(self, num_requests: int = 1) -> None:
        self.retractions.inc(num_requests)

    def on_draft_verified(self, num_drafted: int, num_accepted: int) -> None:
        self.draft_tokens.inc(num_drafted)
        self.accepted_draft_tokens.inc(num_accepted)

    def on_spec_verified(self, method: str, num_drafted: int, num_accepted: int) -> None:
        """One verification step of a draft made by `method` (one of SPEC_METHODS)."""
        self.method_draft_tokens.labels(method=method).inc(num_drafted)
        self.method_accepted_tokens.labels(method=method).inc(num_accepted)
        self.acceptance_length.labels(method=method).observe(num_accepted)

    def on_rescored(self, kept_draft: bool) -> None:
        self.rescored_lines.labels(kept="draft" if kept_draft else "decoder").inc()

    def set_state(self, num_running: int, num_waiting: int, kv_used_tokens: int, kv_total_tokens: int,
                  num_cached_tokens: int) -> None:
        self.requests_running.set(num_running)
        self.requests_waiting.set(num_waiting)
        self.kv_used_tokens.set(kv_used_tokens)
        self.kv_total_tokens.set(kv_total_tokens)
        self.kv_usage_ratio.set(kv_used_tokens / kv_total_tokens if kv_total_tokens else 0.0)
        self.prefix_cache_tokens.set(num_cached_tokens)

    # ---- exposition ----

    def render(self) -> bytes:
        """Prometheus text exposition of every series."""
        return generate_latest(self.registry)
