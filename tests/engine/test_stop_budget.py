"""Stop regexes share one time budget per request: however many tokens a request
makes, its regex searches together are charged no more than `regex_budget_s`,
and a request whose budget runs out ends with finish reason "stop_regex_timeout"
and only the text it had already streamed. Real SmolLM2 tokenizer, real `regex`."""
from __future__ import annotations

import pytest

from engine.sampling_params import SamplingParams
from engine.stop import REGEX_BUDGET_FINISH_REASON, REGEX_SEARCH_TIMEOUT_S, StopChecker
from tests.engine.test_stop import tokenizer  # noqa: F401  (the module-scoped real tokenizer fixture)

MAX_TOKENS = 100_000


def _feed(checker: StopChecker, token_id: int) -> tuple[int, str, str | None]:
    """Append `token_id` until the request finishes: (tokens taken, streamed text, finish reason)."""
    streamed = ""
    for i in range(1, MAX_TOKENS + 1):
        result = checker.append(token_id, i)
        streamed += result.delta_text
        if result.finish_reason is not None:
            return i, streamed, result.finish_reason
    raise AssertionError("the request never finished")


def test_a_backtracking_regex_over_many_tokens_is_bounded_by_the_request_budget(tokenizer):  # noqa: F811
    a_id = tokenizer.encode("a", add_special_tokens=False)[0]
    params = SamplingParams(max_tokens=MAX_TOKENS, stop_regex=[r"(a|a)+c"]).validate()
    budget = REGEX_SEARCH_TIMEOUT_S / 2           # below one search's own limit: the budget, not that, ends it
    checker = StopChecker(params, set(), tokenizer, regex_hold_back_len=64, regex_budget_s=budget)
    num_tokens, streamed, reason = _feed(checker, a_id)
    assert reason == REGEX_BUDGET_FINISH_REASON and checker.finish_reason == REGEX_BUDGET_FINISH_REASON
    assert num_tokens < 200                        # (a|a)+c doubles its work with every 'a' it scans
    # Charged in full, and never more: each search was given only what was left.
    assert checker.regex_time_s == pytest.approx(budget)
    # The text is what was streamed: the held-back tail a stop could still have cut is not handed out.
    assert checker.text == streamed == "a" * len(streamed)
    assert len(streamed) == max(0, num_tokens - checker.hold_back_len)


def test_cheap_searches_add_up_to_the_budget_too(tokenizer):  # noqa: F811
    """Each search alone is fast; a budget far smaller than one search's limit still ends the
    request once their sum reaches it, instead of charging each token afresh."""
    x_id = tokenizer.encode("x", add_special_tokens=False)[0]
    params = SamplingParams(max_tokens=MAX_TOKENS, stop_regex=[r"(x|xx)+y"]).validate()
    budget = 0.002
    checker = StopChecker(params, set(), tokenizer, regex_hold_back_len=16, regex_budget_s=budget)
    num_tokens, _, reason = _feed(checker, x_id)
    assert reason == REGEX_BUDGET_FINISH_REASON
    assert num_tokens < MAX_TOKENS
    assert checker.regex_time_s == pytest.approx(budget)


def test_a_regex_within_budget_still_stops_and_trims(tokenizer):  # noqa: F811
    params = SamplingParams(max_tokens=50, stop_regex=[r"\d+"]).validate()
    checker = StopChecker(params, set(), tokenizer)
    text = ""
    for i, token in enumerate(tokenizer.encode("total is 42 euros", add_special_tokens=False)):
        result = checker.append(token, i + 1)
        text += result.delta_text
        if result.finish_reason is not None:
            break
    assert result.finish_reason == "stop" and checker.text == "total is "
    assert 0 < checker.regex_time_s < checker.regex_budget_s


def test_no_regex_no_budget(tokenizer):  # noqa: F811
    params = SamplingParams(max_tokens=3, stop=["zz"]).validate()
    checker = StopChecker(params, set(), tokenizer, regex_budget_s=1e-9)
    a_id = tokenizer.encode("a", add_special_tokens=False)[0]
    num_tokens, _, reason = _feed(checker, a_id)
    assert (num_tokens, reason, checker.regex_time_s) == (3, "length", 0.0)


def test_the_budget_finish_reason_has_its_metric_from_start_up():
    from engine.metrics import EngineMetrics

    rendered = EngineMetrics("m").render().decode()
    assert f'ocrserve_request_success_total{{finish_reason="{REGEX_BUDGET_FINISH_REASON}"}} 0.0' in rendered
