"""EngineMetrics on its own: every series at zero from construction, hooks move the right series."""
from __future__ import annotations

import threading

from engine.metrics import SPEC_METHODS, EngineMetrics
from engine.spec import DraftModelDrafter, GrammarDrafter, ModelDrafter, MtpDrafter, NgramDrafter, TextDrafter

from .conftest import read_metrics

SERIES_AT_ZERO = [
    "ocrserve_requests_received_total",
    "ocrserve_requests_running",
    "ocrserve_requests_waiting",
    "ocrserve_kv_cache_usage_ratio",
    "ocrserve_kv_cache_used_tokens",
    "ocrserve_kv_cache_total_tokens",
    "ocrserve_prefix_cache_tokens",
    "ocrserve_prefix_cache_hit_rate",
    "ocrserve_cached_prompt_tokens_total",
    "ocrserve_prompt_tokens_total",
    "ocrserve_generation_tokens_total",
    'ocrserve_request_success_total{finish_reason="stop"}',
    'ocrserve_request_success_total{finish_reason="length"}',
    'ocrserve_request_success_total{finish_reason="abort"}',
    "ocrserve_time_to_first_token_seconds_count",
    "ocrserve_time_to_first_token_seconds_sum",
    'ocrserve_time_to_first_token_seconds_bucket{le="+Inf"}',
    "ocrserve_inter_token_latency_seconds_count",
    "ocrserve_inter_token_latency_seconds_sum",
    'ocrserve_inter_token_latency_seconds_bucket{le="+Inf"}',
    "ocrserve_retractions_total",
    "ocrserve_request_aborts_total",
    "ocrserve_spec_draft_tokens_total",
    "ocrserve_spec_accepted_tokens_total",
    'ocrserve_spec_rescored_lines_total{kept="decoder"}',
    'ocrserve_spec_rescored_lines_total{kept="draft"}',
] + [series.format(method=method) for method in SPEC_METHODS for series in (
    'ocrserve_spec_draft_tokens_by_method_total{{method="{method}"}}',
    'ocrserve_spec_accepted_tokens_by_method_total{{method="{method}"}}',
    'ocrserve_spec_acceptance_length_count{{method="{method}"}}',
    'ocrserve_spec_acceptance_length_sum{{method="{method}"}}',
    'ocrserve_spec_acceptance_length_bucket{{le="0.0",method="{method}"}}',
    'ocrserve_spec_acceptance_length_bucket{{le="+Inf",method="{method}"}}',
)]


def test_every_series_exists_at_zero_from_construction():
    samples = read_metrics(EngineMetrics("m").render().decode())
    for name in SERIES_AT_ZERO:
        assert samples.get(name) == 0.0, name
    assert samples['ocrserve_model_info{model_name="m"}'] == 1.0


def test_hooks_move_their_series():
    metrics = EngineMetrics("m")
    metrics.on_request_arrived()
    metrics.on_prefill_admitted(num_prompt_tokens=100, num_cached_tokens=0)
    metrics.on_prefill_admitted(num_prompt_tokens=100, num_cached_tokens=60)
    metrics.on_first_token(0.3)
    metrics.on_inter_token(0.03)
    metrics.on_inter_token(0.05)
    metrics.on_request_finished(num_prompt_tokens=100, num_output_tokens=7, finish_reason="length")
    metrics.on_abort()
    metrics.on_retract(2)
    metrics.set_state(num_running=3, num_waiting=1, kv_used_tokens=256, kv_total_tokens=1024, num_cached_tokens=90)
    samples = read_metrics(metrics.render().decode())
    assert samples["ocrserve_requests_received_total"] == 1
    assert samples["ocrserve_cached_prompt_tokens_total"] == 60
    assert samples["ocrserve_prefix_cache_hit_rate"] == 0.3
    assert samples["ocrserve_time_to_first_token_seconds_count"] == 1
    assert samples['ocrserve_time_to_first_token_seconds_bucket{le="0.25"}'] == 0
    assert samples['ocrserve_time_to_first_token_seconds_bucket{le="0.5"}'] == 1
    assert samples["ocrserve_inter_token_latency_seconds_count"] == 2
    assert samples["ocrserve_prompt_tokens_total"] == 100
    assert samples["ocrserve_generation_tokens_total"] == 7
    assert samples['ocrserve_request_success_total{finish_reason="length"}'] == 1
    assert samples['ocrserve_request_success_total{finish_reason="stop"}'] == 0
    assert samples["ocrserve_request_aborts_total"] == 1
    assert samples["ocrserve_retractions_total"] == 2
    assert samples["ocrserve_requests_running"] == 3
    assert samples["ocrserve_requests_waiting"] == 1
    assert samples["ocrserve_kv_cache_used_tokens"] == 256
    assert samples["ocrserve_kv_cache_total_tokens"] == 1024
    assert samples["ocrserve_kv_cache_usage_ratio"] == 0.25
    assert samples["ocrserve_prefix_cache_tokens"] == 90


def test_draft_verdicts_are_counted_by_method():
    metrics = EngineMetrics("m")
    metrics.on_spec_verified("ngram", num_drafted=4, num_accepted=0)
    metrics.on_spec_verified("ngram", num_drafted=4, num_accepted=3)
    metrics.on_spec_verified("grammar", num_drafted=6, num_accepted=6)
    samples = read_metrics(metrics.render().decode())
    assert samples['ocrserve_spec_draft_tokens_by_method_total{method="ngram"}'] == 8
    assert samples['ocrserve_spec_accepted_tokens_by_method_total{method="ngram"}'] == 3
    assert samples['ocrserve_spec_acceptance_length_count{method="ngram"}'] == 2
    assert samples['ocrserve_spec_acceptance_length_bucket{le="0.0",method="ngram"}'] == 1
    assert samples['ocrserve_spec_acceptance_length_bucket{le="2.0",method="ngram"}'] == 1
    assert samples['ocrserve_spec_acceptance_length_bucket{le="3.0",method="ngram"}'] == 2
    assert samples['ocrserve_spec_acceptance_length_sum{method="grammar"}'] == 6
    assert samples['ocrserve_spec_draft_tokens_by_method_total{method="ctc"}'] == 0


def test_every_drafter_counts_under_a_method_present_from_start():
    names = {ModelDrafter.name, NgramDrafter.name, GrammarDrafter.name, DraftModelDrafter.name, MtpDrafter.name,
             TextDrafter.name}
    assert names == set(SPEC_METHODS)


def test_engines_have_separate_registries():
    first, second = EngineMetrics("a"), EngineMetrics("b")
    first.on_abort()
    assert read_metrics(first.render().decode())["ocrserve_request_aborts_total"] == 1
    assert read_metrics(second.render().decode())["ocrserve_request_aborts_total"] == 0


def test_hit_rate_stays_consistent_under_concurrent_hooks():
    metrics = EngineMetrics()

    def admit() -> None:
        for _ in range(2000):
            metrics.on_prefill_admitted(num_prompt_tokens=4, num_cached_tokens=1)

    threads = [threading.Thread(target=admit) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    samples = read_metrics(metrics.render().decode())
    assert samples["ocrserve_cached_prompt_tokens_total"] == 8000
    assert samples["ocrserve_prefix_cache_hit_rate"] == 0.25
