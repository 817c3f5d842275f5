"""HTTP errors: one JSON shape, a status per kind of refusal, never a traceback.

    {"error": {"code": "encrypted_pdf", "message": "the PDF is password-protected; ..."}}

| refusal | status |
|---|---|
| no key or an unknown key | 401 |
| a job that does not exist or belongs to another key | 404 |
| too many bytes, pages, pixels or files | 413 |
| not a supported file type (including a non-PDF named .pdf) | 415 |
| an encrypted, damaged or empty document, or one its converter could not turn into a PDF | 422 |
| a bad option (pages, formats, dpi) | 400 |
| asking for results of a job that has not finished | 409 |
| a key downloading more results at once than allowed | 429 (Retry-After) |
| the job queue is down | 503 |
"""
from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from vision.limits import InputError
from workers.job_service import QueueUnavailableError

logger = logging.getLogger("ocrserve.app")

STATUS_BY_INPUT_CODE = {
    "document_too_large": 413, "image_too_large": 413, "too_many_files": 413,
    "unsupported_format": 415, "not_a_pdf": 415,
    "encrypted_pdf": 422, "corrupt_document": 422, "empty_document": 422, "conversion_failed": 422,
    "invalid_pages": 400, "invalid_option": 400, "invalid_input": 400,
}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    @app.exception_handler(InputError)
    async def _input_error(_: Request, exc: InputError) -> JSONResponse:
        return error_response(STATUS_BY_INPUT_CODE.get(exc.code, 400), exc.code, str(exc))

    @app.exception_handler(QueueUnavailableError)
    async def _queue_down(_: Request, exc: QueueUnavailableError) -> JSONResponse:
        return error_response(503, "queue_unavailable", f"{exc}; try again later")

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        return error_response(400, "invalid_request", f"{where or 'request'}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, "http_error", str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "internal_error", "internal error; the server log has the details")
