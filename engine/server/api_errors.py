"""OpenAI-shaped errors and the handlers that guarantee no response carries a traceback.

Every error leaves the server as `{"error": {"message", "type", "param", "code"}}`
with a status that says whose fault it is. Engine errors map as:

| raised | status | code |
|---|---|---|
| PromptTooLongError | 400 | context_length_exceeded |
| InvalidRequestError | 400 | invalid_request |
| GrammarError (an InvalidRequestError: bad, oversized or too slow grammar) | 400 | invalid_request, `param` response_format / regex / ebnf |
| EngineOverloadedError (also: the grammar compiler stayed busy) | 503 | engine_overloaded |
| anything unexpected | 500 | internal_error (traceback logged, never sent) |
"""
from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from engine.errors import EngineOverloadedError, InvalidRequestError, PromptTooLongError

ERROR_TYPE_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "timeout_error",
    409: "conflict_error",
    413: "invalid_request_error",
    500: "internal_error",
    501: "not_implemented_error",
    503: "service_unavailable_error",
    504: "timeout_error",
}


class ApiError(Exception):
    """An error the HTTP layer answers with; `message` is shown to the client as is."""

    def __init__(self, status: int, message: str, code: str | None = None, param: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.headers = headers

    def to_body(self) -> dict:
        return error_body(self.status, self.message, self.code, self.param)


class ClientDisconnected(Exception):
    """The client went away mid-request; there is nobody left to answer."""


def error_body(status: int, message: str, code: str | None = None, param: str | None = None) -> dict:
    error_type = ERROR_TYPE_BY_STATUS.get(status, "invalid_request_error" if status < 500 else "internal_error")
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.to_body(), status_code=error.status, headers=error.headers)


def api_error_from_engine(exc: Exception) -> ApiError:
    """Translate an engine exception raised while admitting a request."""
    param = getattr(exc, "param", None)
    if isinstance(exc, PromptTooLongError):
        return ApiError(400, str(exc), "context_length_exceeded", param)
    if isinstance(exc, InvalidRequestError):
        return ApiError(400, str(exc), "invalid_request", param)
    if isinstance(exc, EngineOverloadedError):
        return ApiError(503, str(exc) or "the engine is overloaded; retry later", "engine_overloaded",
                        headers={"Retry-After": "1"})
    raise TypeError(f"not an engine error: {type(exc).__name__}")


def install_error_handlers(app: FastAPI) -> None:
    async def on_api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc)

    async def on_engine_error(request: Request, exc: Exception) -> JSONResponse:
        return error_response(api_error_from_engine(exc))

    async def on_http_exception(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        code = "not_found" if exc.status_code == 404 else None
        return JSONResponse(error_body(exc.status_code, message, code), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    async def on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(ApiError(400, "invalid request parameters", "invalid_request"))

    async def on_client_disconnected(request: Request, exc: ClientDisconnected) -> Response:
        return Response(status_code=400)   # never delivered: the connection is gone

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Starlette re-raises after this response is sent, so uvicorn logs the traceback to stderr.
        return JSONResponse(error_body(500, "internal server error", "internal_error"), status_code=500)

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(ClientDisconnected, on_client_disconnected)
    app.add_exception_handler(InvalidRequestError, on_engine_error)
    app.add_exception_handler(EngineOverloadedError, on_engine_error)
    app.add_exception_handler(StarletteHTTPException, on_http_exception)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(Exception, on_unexpected)
