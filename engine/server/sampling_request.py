"""Turn a validated request body into `SamplingParams`, refusing what the engine does not do.

Only the fields a client actually sent are passed on; everything else keeps the
`SamplingParams` default, so there is exactly one place that defines defaults.
"""
from __future__ import annotations

from engine.sampling_params import SamplingParams
from engine.server.api_errors import ApiError
from engine.server.grammar_request import grammar_spec
from engine.server.protocol import ChatCompletionRequest, CompletionRequest, GenerationFields

# Request field -> SamplingParams field, for the fields that carry over unchanged.
PASSTHROUGH_FIELDS = (
    "max_tokens", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "frequency_penalty",
    "presence_penalty", "seed", "stop_token_ids", "ignore_eos", "include_stop_str_in_output",
    "skip_special_tokens", "speculative", "draft_text",
)


def as_list(value: str | list[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def refuse_unsupported_common(body: GenerationFields) -> None:
    if body.n is not None and body.n != 1:
        raise ApiError(400, f"n={body.n} is not supported: this server returns one choice per request "
                            "(n=1); send separate requests instead", "unsupported_parameter", "n")
    if body.logit_bias:
        raise ApiError(400, "logit_bias is not supported", "unsupported_parameter", "logit_bias")
    if body.stream_options is not None and not body.is_stream:
        raise ApiError(400, "stream_options is only allowed when stream=true", "invalid_request",
                       "stream_options")


def common_sampling_kwargs(body: GenerationFields) -> dict:
    kwargs = {name: getattr(body, name) for name in PASSTHROUGH_FIELDS if getattr(body, name) is not None}
    if body.stop is not None:
        kwargs["stop"] = as_list(body.stop)
    if body.stop_regex is not None:
        kwargs["stop_regex"] = as_list(body.stop_regex)
    if body.loop_guard is not None:
        kwargs["loop_guard"] = body.loop_guard
    grammar = grammar_spec(body)
    if grammar is not None:
        kwargs["grammar"] = grammar
    return kwargs


def chat_sampling_params(body: ChatCompletionRequest, vocab_size: int) -> SamplingParams:
    refuse_unsupported_common(body)
    if body.tools:
        raise ApiError(400, "tools are not supported by this server", "unsupported_parameter", "tools")
    kwargs = common_sampling_kwargs(body)
    if body.max_completion_tokens is not None:
        if body.max_tokens is not None and body.max_tokens != body.max_completion_tokens:
            raise ApiError(400, f"max_tokens={body.max_tokens} and max_completion_tokens="
                                f"{body.max_completion_tokens} disagree; send one of them",
                           "invalid_request", "max_completion_tokens")
        kwargs["max_tokens"] = body.max_completion_tokens
    if body.top_logprobs is not None and not body.logprobs:
        raise ApiError(400, "top_logprobs requires logprobs=true", "invalid_request", "top_logprobs")
    if body.logprobs:
        kwargs["logprobs"] = body.top_logprobs or 0
    return SamplingParams(**kwargs).validate(vocab_size)


def completion_sampling_params(body: CompletionRequest, vocab_size: int) -> SamplingParams:
    refuse_unsupported_common(body)
    if body.echo:
        raise ApiError(400, "echo is not supported", "unsupported_parameter", "echo")
    if body.suffix:
        raise ApiError(400, "suffix is not supported", "unsupported_parameter", "suffix")
    if body.best_of is not None and body.best_of != 1:
        raise ApiError(400, f"best_of={body.best_of} is not supported (only 1)", "unsupported_parameter",
                       "best_of")
    kwargs = common_sampling_kwargs(body)
    if body.logprobs is not None:
        kwargs["logprobs"] = body.logprobs
    return SamplingParams(**kwargs).validate(vocab_size)


def completion_prompt(body: CompletionRequest, vocab_size: int) -> str | list[int]:
    """The single prompt of a completion request: text or token ids."""
    prompt = body.prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)):
        if len(prompt) != 1:
            raise ApiError(400, f"got {len(prompt)} prompts; this server takes one prompt per request",
                           "unsupported_parameter", "prompt")
        prompt = prompt[0]
    if len(prompt) == 0:
        raise ApiError(400, "prompt must not be empty", "invalid_request", "prompt")
    if isinstance(prompt, list):
        bad_ids = [token_id for token_id in prompt if not 0 <= token_id < vocab_size]
        if bad_ids:
            raise ApiError(400, f"prompt token id {bad_ids[0]} is outside the vocabulary [0, {vocab_size})",
                           "invalid_request", "prompt")
    return prompt
