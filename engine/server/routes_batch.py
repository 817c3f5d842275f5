"""POST /v1/batch: many chat completions in one HTTP request, in the OpenAI Batch API's file format.

The body is an OpenAI batch *input file* (JSON Lines, one request a line):

    {"custom_id": "line-7", "method": "POST", "url": "/v1/chat/completions", "body": {...}}

and the answer is the matching *output file*, one line per input line, in input order:

    {"id": "batch_req_...", "custom_id": "line-7", "error": null,
     "response": {"status_code": 200, "request_id": "chatcmpl-...", "body": {a chat.completion}}}

OpenAI runs such a file asynchronously (upload, create a batch, poll); this
endpoint runs it at once, every line in the engine together, and answers when
all are done. It exists for clients that send many small requests at a time
(the OCR recogniser: a page's line crops): one HTTP exchange instead of one per
line. Each line is exactly a /v1/chat/completions body and behaves as one (the
same checks, the same answer); a line the engine refuses gets that refusal as
its `response` (its status code and `{"error": ...}` body) and does not affect
the others.

| refused for the whole request (400) | why |
|---|---|
| a line not a JSON object with `custom_id`, `method`, `url`, `body` | the file is malformed (line named) |
| `method` other than POST, `url` other than /v1/chat/completions | only chat completions are batched |
| a `custom_id` used twice | answers are matched to requests by it |
| more than `max_batch_lines` lines, or none | bounded work per request |
| a line with `"stream": true` | per line (400 in its response): there is nothing to stream into |

One deadline (`request_timeout_s`) covers the whole batch; a client that
disconnects, or a deadline that passes, aborts every line still running.
"""
from __future__ import annotations

import asyncio
import json
import uuid

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from pydantic import ValidationError

from engine.errors import EngineOverloadedError, InvalidRequestError
from engine.server.api_errors import ApiError, api_error_from_engine
from engine.server.deps import ServerContext, get_context, require_api_key, require_ready
from engine.server.generation import close_outputs
from engine.server.logprobs_format import chat_logprobs
from engine.server.protocol import ChatCompletionRequest
from engine.server.request_body import read_body, validation_error
from engine.server.request_lifetime import DisconnectWatcher, RequestDeadline
from engine.server.routes_chat import chat_response_body, prepare_chat

router = APIRouter()

BATCHED_URL = "/v1/chat/completions"
MEDIA_TYPE = "application/jsonl"


@router.post("/v1/batch", dependencies=[Depends(require_api_key), Depends(require_ready)])
async def run_batch(request: Request) -> Response:
    context = get_context(request)
    settings = context.settings
    deadline = RequestDeadline(settings.request_timeout_s)
    lines = parse_batch(await read_body(request, settings.max_request_bytes, deadline), settings.max_batch_lines)
    watcher = DisconnectWatcher(request.receive)
    try:
        results = await watcher.race(run_lines(context, lines, deadline, f"batch_req_{uuid.uuid4().hex}"),
                                     deadline)
    finally:
        await watcher.stop()
    text = "".join(json.dumps(result, ensure_ascii=False, separators=(",", ":")) + "\n" for result in results)
    return Response(text, media_type=MEDIA_TYPE)


async def run_lines(context: ServerContext, lines: list[dict], deadline: RequestDeadline,
                    batch_id: str) -> list[dict]:
    # A task group: when one line fails unexpectedly (a 500 for the batch) or the batch is
    # abandoned, every other line is cancelled, and so aborted in the engine, before this returns.
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(run_line(context, line, deadline, f"{batch_id}_{number}"))
                 for number, line in enumerate(lines)]
    return [task.result() for task in tasks]


def parse_batch(raw: bytes, max_lines: int) -> list[dict]:
    """The input file's lines, checked as a whole (see the module's table). Lines end at a line
    feed only (JSON Lines), never at the other line breaks a JSON string may hold."""
    lines, seen = [], set()
    for number, text in enumerate(raw.split(b"\n"), start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except ValueError:   # also bytes that are not UTF-8
            raise bad_line(number, "is not valid JSON") from None
        if not isinstance(line, dict) or not {"custom_id", "method", "url", "body"} <= line.keys():
            raise bad_line(number, "must be an object with custom_id, method, url and body")
        if not isinstance(line["custom_id"], str) or not isinstance(line["body"], dict):
            raise bad_line(number, "needs a string custom_id and an object body")
        if line["method"] != "POST" or line["url"] != BATCHED_URL:
            raise bad_line(number, f"must be a POST to {BATCHED_URL} (the only batched endpoint)")
        if line["custom_id"] in seen:
            raise bad_line(number, f"repeats custom_id {line['custom_id']!r}; each must be unique")
        seen.add(line["custom_id"])
        lines.append(line)
        if len(lines) > max_lines:
            raise ApiError(400, f"the batch has more than {max_lines} lines; split it", "batch_too_large")
    if not lines:
        raise ApiError(400, "the batch is empty: send JSON Lines, one request a line", "invalid_batch")
    return lines


def bad_line(number: int, problem: str) -> ApiError:
    return ApiError(400, f"batch line {number} {problem}", "invalid_batch", f"line {number}")


async def run_line(context: ServerContext, line: dict, deadline: RequestDeadline, line_id: str) -> dict:
    """One output-file line: the chat completion of `line`, or the error a lone request would get."""
    request_id = None
    try:
        try:
            body = ChatCompletionRequest.model_validate(line["body"])
        except ValidationError as exc:
            raise validation_error(exc) from None
        if body.is_stream:
            raise ApiError(400, "stream=true is not supported in a batch line", "unsupported_parameter", "stream")
        call = await prepare_chat(context, body, deadline)
        request_id = call.header.response_id
        outputs = context.engine.generate(call.prompt_ids, call.params, request_id=request_id,
                                          tenant=body.tenant_key, images=call.images)
        logprobs, last = [], None
        try:
            async for output in outputs:
                logprobs.extend(output.delta_logprobs)
                last = output
        finally:
            await close_outputs(outputs)
        answer = chat_response_body(call, last, chat_logprobs(context.token_texts, logprobs) if body.logprobs
                                    else None)
        return output_line(line_id, line["custom_id"], 200, request_id, answer)
    except (InvalidRequestError, EngineOverloadedError) as exc:
        error = api_error_from_engine(exc)
    except ApiError as exc:
        error = exc
    return output_line(line_id, line["custom_id"], error.status, request_id, error.to_body())


def output_line(line_id: str, custom_id: str, status: int, request_id: str | None, body: dict) -> dict:
    return {"id": line_id, "custom_id": custom_id, "error": None,
            "response": {"status_code": status, "request_id": request_id, "body": body}}
