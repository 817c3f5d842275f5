"""SamplingParams.validate: every bad value is an InvalidRequestError that names
its parameter; good values pass and are normalised."""
from __future__ import annotations

import pytest

from engine.errors import EngineError, InvalidRequestError, PromptTooLongError
from engine.sampling_params import (MAX_NUM_STOP_REGEXES, MAX_NUM_STOP_STRINGS, MAX_NUM_STOP_TOKEN_IDS,
                                    MAX_STOP_REGEX_LEN, MAX_STOP_STRING_LEN, SamplingParams)

VOCAB = 1000

BAD_VALUES = [
    ("max_tokens", 0), ("max_tokens", -3), ("max_tokens", 2.5), ("max_tokens", True), ("max_tokens", "10"),
    ("temperature", -0.1), ("temperature", 2.01), ("temperature", float("nan")), ("temperature", "hot"),
    ("top_p", 0.0), ("top_p", 1.5), ("top_p", -1), ("top_p", float("inf")),
    ("top_k", -2), ("top_k", 1.5), ("top_k", None),
    ("min_p", -0.01), ("min_p", 1.01),
    ("repetition_penalty", 0.0), ("repetition_penalty", -1.0), ("repetition_penalty", float("inf")),
    ("frequency_penalty", 2.5), ("frequency_penalty", -2.01),
    ("presence_penalty", 3), ("presence_penalty", -7.0),
    ("seed", 1.5), ("seed", "42"), ("seed", 2**64), ("seed", -(2**63) - 1),
    ("logprobs", -1), ("logprobs", 21), ("logprobs", 1.0),
    ("ignore_eos", "yes"), ("include_stop_str_in_output", 1), ("skip_special_tokens", None),
    ("stop", [""]), ("stop", ["ok", 5]), ("stop", ["x" * (MAX_STOP_STRING_LEN + 1)]),
    ("stop", [f"s{i}" for i in range(MAX_NUM_STOP_STRINGS + 1)]), ("stop", 42),
    ("stop_regex", ["(unclosed"]), ("stop_regex", ["a*"]), ("stop_regex", ["x|"]), ("stop_regex", [3]),
    ("stop_regex", ["a" * (MAX_STOP_REGEX_LEN + 1)]),
    ("stop_regex", [f"r{i}" for i in range(MAX_NUM_STOP_REGEXES + 1)]),
    ("stop_token_ids", [VOCAB]), ("stop_token_ids", [-1]), ("stop_token_ids", ["5"]),
    ("stop_token_ids", list(range(MAX_NUM_STOP_TOKEN_IDS + 1))), ("stop_token_ids", "12"),
]


@pytest.mark.parametrize("name,value", BAD_VALUES, ids=[f"{n}={v!r}"[:40] for n, v in BAD_VALUES])
def test_bad_value_is_rejected_naming_the_parameter(name, value):
    params = SamplingParams(**{name: value})
    with pytest.raises(InvalidRequestError) as info:
        params.validate(VOCAB)
    assert info.value.param == name
    assert name in str(info.value)


def test_messages_say_why():
    with pytest.raises(InvalidRequestError, match=r"temperature must be between 0 and 2, got 3"):
        SamplingParams(temperature=3).validate()
    with pytest.raises(InvalidRequestError, match=r"stop_regex\[1\] is not a valid Python regular expression"):
        SamplingParams(stop_regex=["ok", "[a-"]).validate()
    with pytest.raises(InvalidRequestError, match=r"matches the empty string"):
        SamplingParams(stop_regex=["(foo)?"]).validate()
    with pytest.raises(InvalidRequestError, match=r"stop_token_ids\[0\] must be between 0 and 999, got 1000"):
        SamplingParams(stop_token_ids=[VOCAB]).validate(VOCAB)
    with pytest.raises(InvalidRequestError, match=r"stop\[0\] is empty"):
        SamplingParams(stop=[""]).validate()


def test_good_values_pass_and_normalise():
    params = SamplingParams(
        max_tokens=1, temperature=0, top_p=1, top_k=-1, min_p=1.0, repetition_penalty=1.3,
        frequency_penalty=-2, presence_penalty=2.0, seed=-5, stop="END", stop_regex=None,
        stop_token_ids=(3, 999), ignore_eos=True, include_stop_str_in_output=True, logprobs=20,
        skip_special_tokens=False,
    )
    assert params.validate(VOCAB) is params
    assert params.stop == ["END"] and params.stop_regex == [] and params.stop_token_ids == [3, 999]
    assert params.is_greedy
    SamplingParams().validate()                    # the defaults are valid, with or without a vocab
    SamplingParams(stop_token_ids=[10**6]).validate()  # no vocab given: only non-negativity is checked
    assert not SamplingParams(temperature=0.7).is_greedy


def test_error_hierarchy():
    err = PromptTooLongError(5000, 4095)
    assert isinstance(err, InvalidRequestError) and isinstance(err, ValueError) and isinstance(err, EngineError)
    assert (err.prompt_len, err.limit) == (5000, 4095)
    assert "5000" in str(err) and "4095" in str(err)


def test_drafts_are_for_plain_greedy_requests_whether_or_not_they_ask_for_logprobs():
    for logprobs in (None, 0, 5):   # verified tokens get the logprobs one-token-a-step decoding gives
        assert SamplingParams(temperature=0, logprobs=logprobs).allows_draft
    for changed in ({"temperature": 0.7}, {"repetition_penalty": 1.2}, {"frequency_penalty": 0.5},
                    {"presence_penalty": -0.5}, {"grammar": object()}):
        assert not SamplingParams(**{"temperature": 0, "logprobs": 0, **changed}).allows_draft
