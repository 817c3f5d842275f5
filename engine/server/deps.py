"""What every handler shares (`ServerContext`) and the checks that run before a handler.

Order of checks on a protected endpoint: key (401) -> model loaded (503) -> body.
So an unauthenticated client learns nothing about the model, and a body is
never read for a request that would be refused anyway.
"""
from __future__ import annotations

import hmac
import time
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from engine.server.api_errors import ApiError
from engine.server.engine_lifecycle import EngineLifecycle
from engine.server.logprobs_format import TokenTexts
from engine.server.prompt_cache import PromptCache
from engine.server.settings import ServerSettings


@dataclass
class ServerContext:
    engine: Any                       # engine.async_engine.AsyncEngine (duck-typed: the server never imports torch)
    settings: ServerSettings
    lifecycle: EngineLifecycle
    created: int = field(default_factory=lambda: int(time.time()))
    prompt_cache: PromptCache = field(default_factory=PromptCache)   # chat prompts by message structure
    _token_texts: TokenTexts | None = None

    @property
    def token_texts(self) -> TokenTexts:
        """Token id -> text for logprob listings, one cache for every request (the vocabulary is fixed)."""
        if self._token_texts is None:
            self._token_texts = TokenTexts(self.engine.tokenizer)
        return self._token_texts

    def served_model_names(self) -> tuple[str, ...]:
        return self.settings.served_model_names or (self.engine.model_name,)

    def resolve_model(self, requested: str | None) -> str:
        """The model name to answer with; 404 when the client asked for a model not served here."""
        names = self.served_model_names()
        if requested is None or requested == "":
            return names[0]
        if requested not in names:
            raise ApiError(404, f"model {requested!r} is not served here; available: {', '.join(names)}",
                           "model_not_found", "model")
        return requested


def get_context(request: Request) -> ServerContext:
    return request.app.state.context


def bearer_token(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def check_key(request: Request, expected: str | None, what: str) -> None:
    if expected is None:
        return
    token = bearer_token(request)
    if token is None:
        raise ApiError(401, f"missing {what}: send 'Authorization: Bearer <key>'", "invalid_api_key",
                       headers={"WWW-Authenticate": "Bearer"})
    if not hmac.compare_digest(token.encode(), expected.encode()):
        raise ApiError(401, f"invalid {what}", "invalid_api_key", headers={"WWW-Authenticate": "Bearer"})


async def require_api_key(request: Request) -> None:
    check_key(request, get_context(request).settings.api_key, "API key")


async def require_admin_key(request: Request) -> None:
    """Admin routes always need a key: with none configured they are refused, even on loopback."""
    expected = get_context(request).settings.effective_admin_key
    if expected is None:
        raise ApiError(403, "admin routes are disabled: start the engine with --api-key or --admin-key",
                       "admin_key_not_configured")
    check_key(request, expected, "admin key")


async def require_ready(request: Request) -> None:
    context = get_context(request)
    if not context.lifecycle.is_ready:
        message = "the model is still loading; retry shortly" if context.lifecycle.is_loading \
            else "the engine is not running"
        raise ApiError(503, message, "model_loading", headers={"Retry-After": "1"})
