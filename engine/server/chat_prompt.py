"""Render OpenAI chat messages into one prompt string with the model's own chat template,
and turn prompt text into token ids without stalling the event loop.

A text prompt is checked by its size before any work that grows with it: one
longer than `max_prompt_bytes` (the context length x `prompt_bytes_per_token`)
could never fit the context, so it is refused with a 400 before it is rendered
or tokenised. What is tokenised runs on one dedicated thread (`PROMPT_TOKENIZER`,
so the tokenizer is never encoding on two threads at once), never on the event
loop: a large prompt being tokenised does not hold up other streams or /health.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import jinja2

from engine.server.api_errors import ApiError
from engine.server.image_urls import check_image_url
from engine.server.prompt_cache import PromptCache
from engine.server.protocol import ChatMessage, ImageUrlPart, TextPart

# Templates written before OpenAI's `developer` role know it as `system`.
TEMPLATE_ROLE = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
UTF8_MAX_BYTES_PER_CHAR = 4
PROMPT_TOKENIZER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prompt-tokenize")


def max_prompt_bytes(context_length: int, bytes_per_token: int) -> int:
    """The most UTF-8 bytes a text prompt of at most `context_length` tokens can plausibly have."""
    return context_length * bytes_per_token


def check_prompt_size(text: str, max_bytes: int, param: str) -> None:
    """400 `context_length_exceeded` when `text` is over `max_bytes` UTF-8 bytes (no tokenising)."""
    if len(text) * UTF8_MAX_BYTES_PER_CHAR <= max_bytes:
        return
    num_bytes = len(text) if len(text) > max_bytes else len(text.encode("utf-8", "surrogatepass"))
    if num_bytes > max_bytes:
        raise ApiError(400, f"the prompt is {'over ' if len(text) > max_bytes else ''}{num_bytes:,} bytes; "
                       f"the limit is {max_bytes:,} (the context length in tokens x prompt_bytes_per_token): "
                       "it cannot fit the model's context", "context_length_exceeded", param)


async def tokenize_off_loop(tokenize: Callable[[str], list[int]], text: str) -> list[int]:
    """`tokenize(text)` on the prompt tokenizer's thread."""
    return await asyncio.get_running_loop().run_in_executor(PROMPT_TOKENIZER, tokenize, text)


@dataclass
class ChatPrompt:
    text: str
    ids: list[int]   # `text` tokenised as the engine tokenises a prompt
    # One entry per image placeholder, in prompt order: decoded bytes of a data: URL,
    # or an allowlisted http(s) URL still to fetch.
    images: list[bytes | str] = field(default_factory=list)


def render_chat_prompt(tokenizer: Any, messages: list[ChatMessage], model_name: str, supports_images: bool,
                       image_host_allowlist: tuple[str, ...], tokenize: Callable[[str], list[int]],
                       cache: PromptCache | None = None) -> ChatPrompt:
    """The prompt for `messages`, ending with the assistant turn's opening, as text and token ids
    (`tokenize`: the engine's own rule). With `cache`, messages of a structure seen before (the
    same texts around different images) are neither rendered nor tokenised again. Synchronous;
    the server uses `build_chat_prompt`."""
    template, template_messages, images = _template_inputs(tokenizer, messages, model_name, supports_images,
                                                           image_host_allowlist)
    key = cache.key(template, template_messages) if cache is not None else None
    cached = cache.get(key) if key is not None else None
    if cached is not None:
        return ChatPrompt(cached[0], cached[1], images)
    text = apply_template(tokenizer, template_messages)
    ids = tokenize(text)
    if key is not None:
        cache.put(key, text, ids)
    return ChatPrompt(text, ids, images)


async def build_chat_prompt(tokenizer: Any, messages: list[ChatMessage], model_name: str, supports_images: bool,
                            image_host_allowlist: tuple[str, ...], tokenize: Callable[[str], list[int]],
                            cache: PromptCache | None, max_bytes: int) -> ChatPrompt:
    """`render_chat_prompt` for the event loop: messages too large to fit the context are refused by
    their size before anything else, and rendering and tokenising run on the prompt tokenizer's thread."""
    template, template_messages, images = _template_inputs(tokenizer, messages, model_name, supports_images,
                                                           image_host_allowlist)
    # The rendered prompt holds every message text, so their sum alone may already be too large.
    check_prompt_size("".join(_texts(template_messages)), max_bytes, "messages")
    key = cache.key(template, template_messages) if cache is not None else None
    cached = cache.get(key) if key is not None else None
    if cached is not None:
        return ChatPrompt(cached[0], cached[1], images)
    loop = asyncio.get_running_loop()
    text = await loop.run_in_executor(PROMPT_TOKENIZER, apply_template, tokenizer, template_messages)
    check_prompt_size(text, max_bytes, "messages")
    ids = await tokenize_off_loop(tokenize, text)
    if key is not None:
        cache.put(key, text, ids)
    return ChatPrompt(text, ids, images)


def _template_inputs(tokenizer: Any, messages: list[ChatMessage], model_name: str, supports_images: bool,
                     image_host_allowlist: tuple[str, ...]) -> tuple[str, list[dict[str, Any]], list[bytes | str]]:
    if not messages:
        raise ApiError(400, "messages must hold at least one message", "invalid_request", "messages")
    images: list[bytes | str] = []
    template_messages = [template_message(message, model_name, supports_images, image_host_allowlist, images)
                         for message in messages]
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        raise ApiError(400, f"model {model_name!r} has no chat template; use /v1/completions with a prompt",
                       "no_chat_template", "messages")
    return template, template_messages, images


def apply_template(tokenizer: Any, template_messages: list[dict[str, Any]]) -> str:
    try:
        return tokenizer.apply_chat_template(template_messages, add_generation_prompt=True, tokenize=False)
    except jinja2.TemplateError as exc:
        # Templates reject conversations they cannot render (e.g. roles out of order) with raise_exception().
        raise ApiError(400, f"the chat template refused these messages: {exc}", "invalid_messages",
                       "messages") from None


def _texts(template_messages: list[dict[str, Any]]) -> list[str]:
    texts = []
    for message in template_messages:
        body = message["content"]
        if isinstance(body, str):
            texts.append(body)
        else:
            texts.extend(part.get("text", "") for part in body)
    return texts


def template_message(message: ChatMessage, model_name: str, supports_images: bool,
                     image_host_allowlist: tuple[str, ...], images: list[bytes | str]) -> dict[str, Any]:
    content = message.content
    body: str | list[dict[str, str]]
    if content is None:
        body = ""
    elif isinstance(content, str):
        body = content
    else:
        image_parts = [part for part in content if isinstance(part, ImageUrlPart)]
        sources = [check_image_url(part.image_url.url, image_host_allowlist) for part in image_parts]
        if image_parts and not supports_images:
            raise ApiError(400, f"model {model_name!r} does not accept images", "model_does_not_accept_images",
                           "messages.content")
        if image_parts:
            # The template writes one placeholder per image part, in order; the engine
            # takes the images' bytes in the same order.
            images.extend(data if data is not None else part.image_url.url.strip()
                          for part, data in zip(image_parts, sources))
            body = [{"type": "image"} if isinstance(part, ImageUrlPart) else {"type": "text", "text": part.text}
                    for part in content]
        else:
            body = "\n".join(part.text for part in content if isinstance(part, TextPart))
    rendered: dict[str, Any] = {"role": TEMPLATE_ROLE[message.role], "content": body}
    if message.name:
        rendered["name"] = message.name
    return rendered
