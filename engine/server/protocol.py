"""Request bodies of the OpenAI-compatible endpoints, as pydantic models.

Unknown fields are refused (`extra="forbid"`): a misspelt `stop_regexp` must be a
400, not a silently ignored option. OpenAI fields the engine does not implement
are accepted only at their neutral value (`n=1`, no tools, no logit bias, no
echo), so a client that relies on them gets a clear 400. Values (temperature >= 0,
top_p in (0, 1], ...) are checked once, by `SamplingParams.validate`, and grammar
sources by the engine's `GrammarSpec.validate`, not here.

Extensions beyond OpenAI: `top_k`, `min_p`, `repetition_penalty`, `stop_regex`,
`stop_token_ids`, `ignore_eos`, `include_stop_str_in_output`,
`skip_special_tokens`, `tenant` (prefix-cache isolation; `user` is the fallback),
`response_format` on text completions too, SGLang's `regex` / `ebnf`
constraints (see `grammar_request`), `speculative` (false: no speculative
drafts for this request; a JSON boolean, not 0/1 or "false"), and `draft_text`
(what the client expects the output to be, e.g. a PDF text layer's line: drafted
and verified, never trusted; the output is the model's own), and `loop_guard`
(true, or an object of `max_repeats`, `min_run_tokens`, `max_ngram_size`: stop
with finish reason "repetition" once the output repeats itself past those
limits, engine/loop_guard.py; off unless asked for).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StreamOptions(StrictModel):
    include_usage: bool = False


class ImageUrl(StrictModel):
    url: str
    detail: Literal["auto", "low", "high"] | None = None


class TextPart(StrictModel):
    type: Literal["text"]
    text: str


class ImageUrlPart(StrictModel):
    type: Literal["image_url"]
    image_url: ImageUrl


ContentPart = Annotated[TextPart | ImageUrlPart, Field(discriminator="type")]


class ChatMessage(StrictModel):
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[ContentPart] | None = None
    name: str | None = None


class JsonSchemaFormat(StrictModel):
    """OpenAI's `response_format.json_schema`. Output always conforms to `schema`,
    whatever `strict` says (the grammar is compiled in strict mode)."""

    name: str = Field(min_length=1, max_length=64)
    description: str | None = None
    # Named "schema" on the wire; as a Python name it would shadow a BaseModel attribute.
    schema_object: dict[str, Any] = Field(alias="schema")
    strict: bool | None = None


class ResponseFormat(StrictModel):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class GenerationFields(StrictModel):
    """Fields shared by chat and text completions."""

    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    repetition_penalty: float | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    stop_regex: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool | None = None
    include_stop_str_in_output: bool | None = None
    skip_special_tokens: bool | None = None
    n: int | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    user: str | None = None
    tenant: str | None = None
    logit_bias: dict[str, float] | None = None
    # Constrained output: at most one of these (see grammar_request).
    response_format: ResponseFormat | None = None
    regex: str | None = None
    ebnf: str | None = None
    speculative: StrictBool | None = None
    draft_text: StrictStr | None = None
    # true, false or an object of limits: checked by the engine (`LoopGuardSpec.from_option`), whose
    # errors name the field, where a union type here would answer "not a valid boolean" for a bad limit
    loop_guard: Any = None

    @property
    def tenant_key(self) -> str:
        return self.tenant or self.user or ""

    @property
    def is_stream(self) -> bool:
        return bool(self.stream)

    @property
    def include_usage_in_stream(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage


class ChatCompletionRequest(GenerationFields):
    messages: list[ChatMessage]
    max_completion_tokens: int | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: Literal["none", "auto"] | None = None   # harmless without tools
    parallel_tool_calls: bool | None = None


class CompletionRequest(GenerationFields):
    # One prompt: text, or token ids. A batch of exactly one is unwrapped.
    prompt: str | list[int] | list[str] | list[list[int]]
    logprobs: int | None = None
    echo: bool | None = None
    suffix: str | None = None
    best_of: int | None = None
