"""Typed errors the engine raises to its callers.

The HTTP layer maps them to status codes without reading messages:

| error                  | meaning                                          | HTTP |
|------------------------|--------------------------------------------------|------|
| InvalidRequestError    | a request parameter is wrong (message says which | 400  |
|                        | and why; `.param` names it for OpenAI's `param`) |      |
| PromptTooLongError     | the prompt does not fit the context length       | 400  |
| EngineOverloadedError  | admission control refused the request for now    | 503  |

Messages are written for the person who sent the request: they name the
parameter and the accepted range, never internal state or a traceback.
`EngineStartupError` is the operator's: the engine cannot start with its configuration.
"""
from __future__ import annotations


class EngineError(Exception):
    """Base of every error the engine raises on purpose."""


class InvalidRequestError(EngineError, ValueError):
    """A request parameter is invalid; the message names it and says why."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


class PromptTooLongError(InvalidRequestError):
    """The prompt has more tokens than the engine can ever hold for one request.

    Rejected before any work (DESIGN invariant 2): never truncated."""

    def __init__(self, prompt_len: int, limit: int):
        super().__init__(
            f"the prompt has {prompt_len} tokens, more than the limit of {limit} tokens "
            f"for a prompt on this engine (the context length minus room for one generated token); "
            f"shorten the prompt",
            param="prompt",
        )
        self.prompt_len = prompt_len
        self.limit = limit


class EngineOverloadedError(EngineError):
    """Admission control turned the request away for now; the client may retry later."""


class EngineStartupError(RuntimeError):
    """The engine cannot run with this configuration (said before any request)."""
