"""The extraction endpoint over HTTP: one OpenAI chat-completions request per
document whose answer is constrained to the job's JSON schema
(`response_format: {"type": "json_schema", ...}`), so an engine with grammar
support (ours, vLLM, SGLang) can only answer JSON that validates.

Where requests go (`ExtractionEndpoint.from_settings`):

| route  | OCRSERVE_EXTRACTION_URL unset                     | model unset       | frequency penalty unset |
|--------|---------------------------------------------------|-------------------|-------------------------|
| text   | our engine on loopback at OCRSERVE_EXTRACTION_PORT (`run` starts it) | smollm2-135m | 0.5 |
| vision | the recogniser's endpoint (OCRSERVE_ENGINE_URL)  | OCRSERVE_ENGINE_MODEL | 0 |

Keys: the vision route uses the recogniser's key (OCRSERVE_ENGINE_API_KEY) unless it
has a URL of its own; the text route uses OCRSERVE_EXTRACTION_API_KEY, else, on our
own engine, OCRSERVE_ENGINE_API_KEY, the variable that engine reads (`serve` and `run`
start it with exactly this key).

Answers are greedy. The penalty on the text route keeps SmolLM2-135M from
repeating an array item until the schema's maxItems (measured on the example
invoice: 30 empty line items and a 900-token answer without it, 3 lines and
150 tokens with it); a strong model reading a long table of alike rows needs none.

Route `auto` is `vision` when the recogniser is `openai` (it then serves a
vision-language model, checked at start-up) and `text` otherwise.

Every failure is one `ExtractionError` whose message is the reason stored in
the result. Refused connections, 429 and 503 are retried (bounded, with
backoff); a request that times out is not, because it would only time out again.
"""
from __future__ import annotations

import asyncio
import re
import secrets
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from workers.extraction_schema import ExtractionSchema
from workers.settings import EXTRACTION_RETRY_BACKOFF_S, Settings
from workers.tenant import SECRET_BYTES, current_tenant, tenant_secret

DEFAULT_TEXT_MODEL = "smollm2-135m"
TEXT_ROUTE_FREQUENCY_PENALTY = 0.5
_RETRIED_STATUSES = (429, 503)


class ExtractionError(RuntimeError):
    """The endpoint gave no usable answer; the message says why, in a sentence."""


@dataclass(frozen=True)
class ExtractionAnswer:
    text: str                         # JSON, if the endpoint kept to the schema
    prompt_tokens: int | None         # from `usage`, when the endpoint reports it
    completion_tokens: int | None


@dataclass(frozen=True)
class ExtractionEndpoint:
    route: Literal["text", "vision"]
    base_url: str        # ends in /v1
    model: str
    api_key: str | None = None
    frequency_penalty: float = 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> ExtractionEndpoint:
        route = extraction_route(settings)
        if route == "vision":
            url = settings.extraction_url or settings.engine_base_url
            model = settings.extraction_model or settings.engine_model
            key = settings.extraction_api_key if settings.extraction_url else settings.engine_api_key
        else:
            url = settings.extraction_url or f"http://127.0.0.1:{settings.extraction_port}/v1"
            model = settings.extraction_model or DEFAULT_TEXT_MODEL
            # Our own engine reads OCRSERVE_ENGINE_API_KEY, so that key serves here too;
            # OCRSERVE_EXTRACTION_API_KEY (the older name) wins where both are set. An endpoint
            # of its own (OCRSERVE_EXTRACTION_URL) is never sent the recogniser's key.
            key = settings.extraction_api_key or (None if settings.extraction_url else settings.engine_api_key)
        url = url.rstrip("/")
        penalty = settings.extraction_frequency_penalty
        if penalty is None:
            penalty = TEXT_ROUTE_FREQUENCY_PENALTY if route == "text" else 0.0
        return cls(route, url if url.endswith("/v1") else url + "/v1", model, key, penalty)


def extraction_route(settings: Settings) -> Literal["text", "vision"]:
    if settings.extraction_route != "auto":
        return settings.extraction_route
    return "vision" if settings.recognizer == "openai" else "text"


def starts_own_extraction_engine(settings: Settings) -> bool:
    """`run` starts our engine for extraction when the text route has no endpoint configured."""
    return extraction_route(settings) == "text" and not settings.extraction_url


class ExtractionClient:
    def __init__(self, endpoint: ExtractionEndpoint, timeout_s: float, connect_timeout_s: float, retries: int,
                 max_tokens: int, tenant_secret: bytes | None = None):
        self.endpoint = endpoint
        # keys the owners' tenants (workers.tenant); none given: one of this client's own
        self.tenant_secret = tenant_secret or secrets.token_bytes(SECRET_BYTES)
        # Explicit clocks for every phase: no library default may cut a long generation short.
        self.timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        self.retries = retries
        self.max_tokens = max_tokens

    @classmethod
    def from_settings(cls, settings: Settings) -> ExtractionClient:
        return cls(ExtractionEndpoint.from_settings(settings), settings.extraction_timeout_s,
                   settings.extraction_connect_timeout_s, settings.extraction_retries, settings.extraction_max_tokens,
                   tenant_secret(settings))

    def open(self, max_connections: int) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.endpoint.api_key}"} if self.endpoint.api_key else {}
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        return httpx.AsyncClient(base_url=self.endpoint.base_url, headers=headers, timeout=self.timeout,
                                 limits=limits)

    async def complete_json(self, client: httpx.AsyncClient, messages: list[dict[str, Any]],
                            schema: ExtractionSchema) -> ExtractionAnswer:
        """The model's answer; `ExtractionError` when there is none to use."""
        body = {"model": self.endpoint.model, "messages": messages, "max_tokens": self.max_tokens,
                "temperature": 0,
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": _format_name(schema.name), "schema": schema.schema, "strict": True}}}
        tenant = current_tenant(self.tenant_secret)   # the job owner's prefix-cache tenant (see workers.tenant)
        if tenant is not None:
            body["user"] = tenant
        if self.endpoint.frequency_penalty:
            body["frequency_penalty"] = self.endpoint.frequency_penalty
        where = f"the extraction endpoint at {self.endpoint.base_url} (model {self.endpoint.model!r})"
        for attempt in range(self.retries + 1):
            last_try = attempt == self.retries
            try:
                response = await client.post("/chat/completions", json=body)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if last_try:
                    raise ExtractionError(f"{where} is unreachable ({type(exc).__name__}, "
                                          f"{self.retries + 1} attempts)") from exc
                await asyncio.sleep(EXTRACTION_RETRY_BACKOFF_S * 2 ** attempt)
                continue
            except httpx.TimeoutException as exc:
                raise ExtractionError(f"{where} did not answer within {self.timeout.read:.0f} s") from exc
            except httpx.TransportError as exc:
                raise ExtractionError(f"{where} broke off the answer ({type(exc).__name__})") from exc
            if response.status_code in _RETRIED_STATUSES and not last_try:
                await asyncio.sleep(EXTRACTION_RETRY_BACKOFF_S * 2 ** attempt)
                continue
            if response.status_code != 200:
                raise ExtractionError(f"{where} answered {response.status_code}: {_error_message(response)}")
            return self._answer_text(response, where)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _answer_text(self, response: httpx.Response, where: str) -> ExtractionAnswer:
        try:
            reply = response.json()
            choice = reply["choices"][0]
            content = choice["message"].get("content") or ""
            usage = reply.get("usage") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise ExtractionError(f"{where} sent a reply that is not a chat completion") from None
        if choice.get("finish_reason") == "length":
            raise ExtractionError(f"the answer reached the {self.max_tokens}-token limit before its JSON was "
                                  "complete (OCRSERVE_EXTRACTION_MAX_TOKENS)")
        return ExtractionAnswer(content, usage.get("prompt_tokens"), usage.get("completion_tokens"))


def _format_name(name: str) -> str:
    """OpenAI restricts response_format names to [A-Za-z0-9_-]{1,64}."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "schema"


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return response.text[:300] or response.reason_phrase
    if isinstance(error, dict):
        return str(error.get("message") or response.reason_phrase)[:300]
    return str(error or response.reason_phrase)[:300]
