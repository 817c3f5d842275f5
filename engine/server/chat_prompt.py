"""Render OpenAI chat messages into one prompt string with the model's own chat template."""
from __future__ import annotations

from typing import Any

import jinja2

from engine.server.api_errors import ApiError
from engine.server.image_urls import check_image_url
from engine.server.protocol import ChatMessage, ImageUrlPart, TextPart

# Templates written before OpenAI's `developer` role know it as `system`.
TEMPLATE_ROLE = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def render_chat_prompt(tokenizer: Any, messages: list[ChatMessage], model_name: str, supports_images: bool,
                       image_host_allowlist: tuple[str, ...]) -> str:
    """The prompt text for `messages`, ending with the assistant turn's opening."""
    if not messages:
        raise ApiError(400, "messages must hold at least one message", "invalid_request", "messages")
    template_messages = [template_message(message, model_name, supports_images, image_host_allowlist)
                         for message in messages]
    if not getattr(tokenizer, "chat_template", None):
        raise ApiError(400, f"model {model_name!r} has no chat template; use /v1/completions with a prompt",
                       "no_chat_template", "messages")
    try:
        return tokenizer.apply_chat_template(template_messages, add_generation_prompt=True, tokenize=False)
    except jinja2.TemplateError as exc:
        # Templates reject conversations they cannot render (e.g. roles out of order) with raise_exception().
        raise ApiError(400, f"the chat template refused these messages: {exc}", "invalid_messages",
                       "messages") from None


def template_message(message: ChatMessage, model_name: str, supports_images: bool,
                     image_host_allowlist: tuple[str, ...]) -> dict[str, str]:
    content = message.content
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    else:
        image_parts = [part for part in content if isinstance(part, ImageUrlPart)]
        for part in image_parts:
            check_image_url(part.image_url.url, image_host_allowlist)
        if image_parts and not supports_images:
            raise ApiError(400, f"model {model_name!r} does not accept images", "model_does_not_accept_images",
                           "messages.content")
        if image_parts:
            # The engine API takes no pixels yet; the vision-language issue wires them through here.
            raise ApiError(501, "image inputs are not wired into this engine yet", "images_not_implemented",
                           "messages.content")
        text = "\n".join(part.text for part in content if isinstance(part, TextPart))
    rendered = {"role": TEMPLATE_ROLE[message.role], "content": text}
    if message.name:
        rendered["name"] = message.name
    return rendered
