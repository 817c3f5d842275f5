"""Recognition through an OpenAI-compatible chat-completions endpoint serving a
vision-language model: our engine, or vLLM / SGLang serving GLM-OCR, chosen by
configuration alone (base URL, model name, API key).

Each crop is one chat request: a user message holding the crop as an
`image_url` data URL and GLM-OCR's task prompt. The image is a BMP (its raw
pixels: nothing to compress or inflate, ~1 ms less CPU a line between the two
processes) when the endpoint is on this machine's loopback, and a PNG
(zlib level 1) otherwise, where bytes on the wire matter; the OpenAI API itself
takes no BMP, but our engine, vLLM and SGLang decode data URLs with PIL, which
does. A page's requests are all sent
at once (up to `max_concurrency` in flight) so the engine can batch them with
other pages' requests; where the endpoint is our engine, they travel as a few
batch requests of many lines each instead of one HTTP request per crop
(`workers.chat_batch`: the same chat bodies, in the OpenAI Batch API's file
format). Greedy first; a reply cut off by the token limit (the
usual sign of a repetition loop) is asked again once at a higher temperature, with a seed made
from the crop's pixels (`crop_seed`), so the same crop is read the same way in every run.

OCR requests carry `loop_guard` (`Settings.loop_guard`, on by default; our engine's
extension, engine/loop_guard.py; vLLM and SGLang ignore a field they do not know): the
engine stops a reading that repeats one n-gram through half its token budget, with finish
reason "repetition". Such a reply is asked again warmer like one cut by the limit; if the
warmer reading loops too (or runs to the limit), the first looping reading is kept without
its loop (`repetition.cut_repetition`) and its outcome says `truncated_repetition`.

A crop with a `draft` (a PDF text layer's text, `text_layer="verify"`) sends it
as `draft_text`, our engine's extension: the engine drafts it and verifies it
token by token, so the reply is the model's own reading, only sooner when the
layer is right. Crops without one send no such field, so other servers never
see it unless a job asks for verify.

Every request carries the job owner's prefix-cache tenant as the standard
`user` field (our engine keys its radix cache by it, DESIGN "salted per
tenant"; other servers take it as an end-user id): a keyed hash of the owner
(HMAC with the deployment's tenant secret), set around a job's work by
`workers.tenant.tenant_scope`, so one key's documents never warm (or reveal,
through `cached_tokens`) another key's cache entries, and a client holding only
the engine key cannot name another owner's tenant.

Each reply's confidence is the geometric mean of its tokens' probabilities,
end-of-text included, from the standard `logprobs` field (our engine gives them
without giving up the house model's draft or rescoring; a server that sends
none leaves the confidence unknown).

How replies map to errors (see `workers.recognizers.base`):

| reply | error |
|---|---|
| connection refused / reset, timeout, 5xx, 429 | `RecognizerUnavailableError` (the page is retried) |
| 400 `model_does_not_accept_images`, 501, 401, 403, 404 | `RecognizerConfigError` |
| any other 4xx | that crop's outcome carries the error |
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import ipaddress
import itertools
import math
import secrets
from typing import Any
from urllib.parse import urlsplit

import httpx
from PIL import Image

from vision.layout import RecognitionTask
from workers.chat_batch import run_batches, supports_batch
from workers.recognizers.base import (TASK_PROMPTS, RecognitionItem, RecognitionOutcome, RecognizerConfigError,
                                      RecognizerUnavailableError)
from workers.recognizers.repetition import REPETITION_FINISH_REASON, cut_repetition, loop_guard_option
from workers.settings import Settings
from workers.tenant import SECRET_BYTES, current_tenant, tenant_secret

MAX_TOKENS = {RecognitionTask.TEXT: 512, RecognitionTask.TABLE: 4096, RecognitionTask.FORMULA: 1024}
TEMPERATURE_LADDER = (0.0, 0.4)
HOUSE_ALTERNATIVES = 4   # next likeliest characters asked for each one the house model reads (`lexicon`)
MAX_DRAFT_CHARS = 32768   # the engine refuses a draft_text over 65536; a draft's head drafts as well as the whole
_CONFIG_CODES = {"model_does_not_accept_images", "images_not_implemented", "model_not_found"}


class OpenAIVisionRecognizer:
    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 120.0,
                 connect_timeout_s: float = 5.0, max_concurrency: int = 16, reads_single_lines: bool = False,
                 name: str = "openai", tenant_secret: bytes | None = None,
                 loop_guard: bool | dict[str, int] = True, alternatives: int = 0):
        self.name = name
        # each token's next likeliest tokens asked for too (`top_logprobs`; 0: not asked): the house
        # model's, one character a token, let a word be read against the page language's lexicon
        self.alternatives = alternatives
        # True: the guard with limits for each task (repetition.loop_guard_option); a dict: those limits
        # on every request (tests, a model with another tokenizer); False: no guard
        self.loop_guard = loop_guard
        # keys the owners' tenants (workers.tenant); none given: one of this recogniser's own, so owners
        # stay apart, though its tenants are not the other workers'
        self.tenant_secret = tenant_secret or secrets.token_bytes(SECRET_BYTES)
        self.reads_single_lines = reads_single_lines
        # the house model (single lines) reads small print on scans better softened (vision.noise)
        self.softens_noisy_lines = reads_single_lines
        self.base_url = base_url.rstrip("/")
        self.image_format = "BMP" if is_loopback(self.base_url) else "PNG"
        self.model = model
        self.api_key = api_key
        # Every phase gets an explicit clock: no library default may cut a long generation short.
        self.timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        self.max_concurrency = max_concurrency
        self.uses_batch: bool | None = None   # does the endpoint take POST /batch? asked on first use

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIVisionRecognizer:
        house = settings.recognizer == "house"
        return cls(settings.engine_base_url, settings.recognizer_model, settings.engine_api_key,
                   settings.engine_timeout_s, settings.engine_connect_timeout_s, settings.recognizer_max_concurrency,
                   reads_single_lines=house, name=settings.recognizer, tenant_secret=tenant_secret(settings),
                   loop_guard=settings.loop_guard, alternatives=HOUSE_ALTERNATIVES if house else 0)

    def check(self) -> None:
        """Send one tiny image: a text-only model is refused here, before any document is touched."""
        probe = RecognitionItem(Image.new("RGB", (16, 16), "white"), RecognitionTask.TEXT, is_single_line=True)
        outcome = self.recognize([probe])[0]
        # a model that wrote to its token limit took the image (a random-weight one does, sampled or not)
        if not outcome.ok and outcome.error != _limit_error(probe.task):
            raise RecognizerConfigError(f"the recogniser at {self.base_url} refused a test image: {outcome.error}")

    def recognize(self, items: list[RecognitionItem]) -> list[RecognitionOutcome]:
        if not items:
            return []
        return asyncio.run(self._recognize_all(items))

    async def _recognize_all(self, items: list[RecognitionItem]) -> list[RecognitionOutcome]:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        limits = httpx.Limits(max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency)
        semaphore = asyncio.Semaphore(self.max_concurrency)
        async with httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=self.timeout,
                                     limits=limits) as client:
            if self.uses_batch is None:
                self.uses_batch = await supports_batch(client)
            if self.uses_batch:
                return await self._recognize_batched(client, items)

            async def one(item: RecognitionItem) -> RecognitionOutcome:
                async with semaphore:
                    return await self._recognize_one(client, item)

            results = await asyncio.gather(*(one(item) for item in items), return_exceptions=True)
        for wanted in (RecognizerConfigError, RecognizerUnavailableError):
            for result in results:
                if isinstance(result, wanted):
                    raise result
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return list(results)  # type: ignore[arg-type]

    def _chat_body(self, item: RecognitionItem, url: str, temperature: float) -> dict[str, Any]:
        content = [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": TASK_PROMPTS[item.task]}]
        body = {"model": self.model, "messages": [{"role": "user", "content": content}],
                "max_tokens": MAX_TOKENS[item.task], "temperature": temperature, "logprobs": True}
        if self.alternatives:
            body["top_logprobs"] = self.alternatives
        if temperature > 0:   # the same crop sampled the same way in every run: a job read twice reads alike
            body["seed"] = crop_seed(url)
        tenant = current_tenant(self.tenant_secret)
        if tenant is not None:
            body["user"] = tenant
        if item.draft is not None:
            body["draft_text"] = item.draft[:MAX_DRAFT_CHARS]
        if self.loop_guard:
            body["loop_guard"] = (dict(self.loop_guard) if isinstance(self.loop_guard, dict)
                                  else loop_guard_option(MAX_TOKENS[item.task]))
        return body

    async def _recognize_batched(self, client: httpx.AsyncClient,
                                 items: list[RecognitionItem]) -> list[RecognitionOutcome]:
        """The per-request path's rules, through batch requests: each round sends every crop still
        without an answer, greedy first, then the ones cut off by the token limit warmer."""
        urls = [data_url(item.image, self.image_format) for item in items]
        outcomes: dict[int, RecognitionOutcome] = {}
        looped: dict[int, RecognitionOutcome] = {}   # the first reading the loop guard stopped, per crop
        errors: list[Exception] = []
        pending = list(range(len(items)))
        for temperature in TEMPERATURE_LADDER:
            bodies = {i: self._chat_body(items[i], urls[i], temperature) for i in pending}
            replies, refused = await run_batches(client, bodies, max(1, self.max_concurrency // 2), 2)
            for indexes, response in refused:   # the whole batch: raises, or one outcome for each crop
                outcomes.update(dict.fromkeys(indexes, self._refusal(response)))
            pending = []
            for i, (status, body) in replies.items():
                if status != 200:
                    try:
                        outcomes[i] = self._refusal_of(status, *_error_of(body))
                    except (RecognizerConfigError, RecognizerUnavailableError) as exc:
                        errors.append(exc)
                elif self._asks_again(body["choices"][0], looped, i):
                    pending.append(i)
                else:
                    outcomes[i] = self._outcome(body["choices"][0])
            if not pending:
                break
        for wanted in (RecognizerConfigError, RecognizerUnavailableError):
            for error in errors:
                if isinstance(error, wanted):
                    raise error
        limit = {i: RecognitionOutcome(None, _limit_error(items[i].task)) for i in pending}
        missing = RecognitionOutcome(None, f"the recogniser at {self.base_url} sent no answer for this crop")
        return [outcomes.get(i) or looped.get(i) or limit.get(i) or missing for i in range(len(items))]

    def _asks_again(self, choice: dict[str, Any], looped: dict, key) -> bool:
        """Whether a reply goes up the temperature ladder: cut by the token limit or stopped by the
        loop guard (the first such reading is kept in `looped[key]`, for when no rung does better)."""
        reason = choice.get("finish_reason")
        if reason == REPETITION_FINISH_REASON and key not in looped:
            looped[key] = self._outcome(choice, truncated=True)
        return reason in ("length", REPETITION_FINISH_REASON)

    def _outcome(self, choice: dict[str, Any], truncated: bool = False) -> RecognitionOutcome:
        text = choice["message"].get("content") or ""
        tokens = _tokens(choice.get("logprobs"))
        alternatives = _alternatives(choice.get("logprobs")) if tokens is not None and self.alternatives else None
        if truncated:   # what was read before the loop, and the tokens that spell it
            text = cut_repetition(text)
            if tokens is not None:
                ends = list(itertools.accumulate(len(token) for token, _ in tokens))
                kept = sum(1 for end in ends if end <= len(text))
                tokens = tokens[:kept] or None
                alternatives = alternatives[:kept] if alternatives and tokens else None
        return RecognitionOutcome(text.strip(), confidence=_confidence(choice.get("logprobs")), tokens=tokens,
                                  truncated_repetition=truncated, alternatives=alternatives)

    async def _recognize_one(self, client: httpx.AsyncClient, item: RecognitionItem) -> RecognitionOutcome:
        url = data_url(item.image, self.image_format)
        looped: dict[int, RecognitionOutcome] = {}
        for temperature in TEMPERATURE_LADDER:
            body = self._chat_body(item, url, temperature)
            try:
                response = await client.post("/chat/completions", json=body)
            except httpx.TransportError as exc:   # connect/read/write errors and timeouts
                raise RecognizerUnavailableError(
                    f"the recogniser at {self.base_url} is unreachable ({type(exc).__name__})") from exc
            if response.status_code != 200:
                return self._refusal(response)
            choice = response.json()["choices"][0]
            if not self._asks_again(choice, looped, 0):
                return self._outcome(choice)
        if looped:
            return looped[0]
        return RecognitionOutcome(None, _limit_error(item.task))

    def _refusal(self, response: httpx.Response) -> RecognitionOutcome:
        return self._refusal_of(response.status_code, *_error_fields(response))

    def _refusal_of(self, status: int, message: str, code: str | None) -> RecognitionOutcome:
        where = f"the recogniser at {self.base_url} (model {self.model!r})"
        if status >= 500 and status != 501 or status == 429:
            raise RecognizerUnavailableError(f"{where} answered {status}: {message}")
        if code in _CONFIG_CODES or status in (401, 403, 404, 501):
            hint = ""
            if code in ("model_does_not_accept_images", "images_not_implemented"):
                hint = ("; serve a vision-language OCR model there (OCRSERVE_ENGINE_MODEL / OCRSERVE_ENGINE_URL) "
                        "or use OCRSERVE_RECOGNIZER=tesseract")
            raise RecognizerConfigError(f"{where} answered {status}: {message}{hint}")
        return RecognitionOutcome(None, f"{where} refused this crop ({status}): {message}")


def _limit_error(task: RecognitionTask) -> str:
    return f"the reply hit the {MAX_TOKENS[task]}-token limit at every temperature tried (a repetition loop)"


def _error_fields(response: httpx.Response) -> tuple[str, str | None]:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200] or response.reason_phrase, None
    return _error_of(body, response.reason_phrase)


def _error_of(body: Any, reason: str = "refused") -> tuple[str, str | None]:
    """(message, code) of an OpenAI-shaped error body."""
    error = (body.get("error") if isinstance(body, dict) else None) or {}
    if not isinstance(error, dict):
        return str(error)[:200], None
    return str(error.get("message") or reason)[:300], error.get("code")


def _confidence(logprobs: Any) -> float | None:
    """exp(mean log-prob) of the reply's tokens, or None when the reply carries none."""
    entries = logprobs.get("content") if isinstance(logprobs, dict) else None
    values = [entry.get("logprob") for entry in entries or () if isinstance(entry, dict)]
    values = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return math.exp(sum(values) / len(values)) if values else None


def _tokens(logprobs: Any) -> tuple[tuple[str, float], ...] | None:
    """(token, log-prob) pairs of the reply, or None when it carries none or a malformed one."""
    entries = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(entries, list) or not entries:
        return None
    pairs = [(entry.get("token"), entry.get("logprob")) for entry in entries if isinstance(entry, dict)]
    if len(pairs) != len(entries) or not all(isinstance(t, str) and isinstance(v, (int, float)) for t, v in pairs):
        return None
    return tuple((token, float(value)) for token, value in pairs)


def _alternatives(logprobs: Any) -> tuple[tuple[tuple[str, float], ...], ...] | None:
    """Per token of the reply, its `top_logprobs` as (token, log-prob) pairs (the token itself among
    them as the server lists it), or None when any entry lacks them or is malformed."""
    alternatives = []
    for entry in logprobs["content"]:
        top = entry.get("top_logprobs")
        if not isinstance(top, list):
            return None
        pairs = tuple((item.get("token"), item.get("logprob")) for item in top if isinstance(item, dict))
        if len(pairs) != len(top) or not all(isinstance(t, str) and isinstance(v, (int, float)) for t, v in pairs):
            return None
        alternatives.append(tuple((token, float(value)) for token, value in pairs))
    return tuple(alternatives)


def crop_seed(url: str) -> int:
    """A sampling seed from a crop's pixels (its data URL): 31 bits, which every OpenAI-compatible
    server takes."""
    return int.from_bytes(hashlib.blake2b(url.encode(), digest_size=4).digest(), "big") & 0x7FFFFFFF


def is_loopback(base_url: str) -> bool:
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def data_url(image: Image.Image, image_format: str = "PNG") -> str:
    """`image` as a base64 data URL. BMP: uncompressed, 3.5x the bytes of a PNG of a line crop,
    but encoded and decoded ~4x faster; PNG: fast zlib (level 1 encodes 2.6x faster than the
    default 6 and is no larger on line crops, bench/line_encoder.py)."""
    buffer = io.BytesIO()
    if image_format == "BMP" and image.mode in ("1", "L", "RGB"):   # modes a BMP gives back exactly
        image.save(buffer, format="BMP")
    else:
        image_format = "PNG"
        image.save(buffer, format="PNG", compress_level=1)
    return f"data:image/{image_format.lower()};base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
