"""Render OpenAI chat messages into one prompt string with the model's own chat template."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jinja2

from engine.server.api_errors import ApiError
from engine.server.image_urls import check_image_url
from engine.server.prompt_cache import PromptCache
from engine.server.protocol import ChatMessage, ImageUrlPart, TextPart

# Templates written before OpenAI's `developer` role know it as `system`.
TEMPLATE_ROLE = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


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
    same texts around different images) are neither rendered nor tokenised again."""
    if not messages:
        raise ApiError(400, "messages must hold at least one message", "invalid_request", "messages")
    images: list[bytes | str] = []
    template_messages = [template_message(message, model_name, supports_images, image_host_allowlist, images)
                         for message in messages]
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        raise ApiError(400, f"model {model_name!r} has no chat template; use /v1/completions with a prompt",
                       "no_chat_template", "messages")
    key = cache.key(template, template_messages) if cache is not None else None
    cached = cache.get(key) if key is not None else None
    if cached is not None:
        return ChatPrompt(cached[0], cached[1], images)
    try:
        text = tokenizer.apply_chat_template(template_messages, add_generation_prompt=True, tokenize=False)
    except jinja2.TemplateError as exc:
        # Templates reject conversations they cannot render (e.g. roles out of order) with raise_exception().
        raise ApiError(400, f"the chat template refused these messages: {exc}", "invalid_messages",
                       "messages") from None
    ids = tokenize(text)
    if key is not None:
        cache.put(key, text, ids)
    return ChatPrompt(text, ids, images)


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
