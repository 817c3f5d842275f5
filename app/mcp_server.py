"""ocrserve as an MCP server (the official `mcp` SDK's low-level `Server`): tools to OCR a document
and extract fields, resources for the caller's finished jobs.

| tool       | does                                                                                 |
|------------|--------------------------------------------------------------------------------------|
| ocr_file   | a local path (stdio only) or base64 bytes -> a job; waits up to `wait_s` for its Markdown |
| ocr_url    | an http(s) URL on the deployment's list of document hosts -> the same                |
| extract    | a document + a JSON schema (or a registered name) -> fields that validate            |
| get_job    | a job's state and per-page progress, as GET /v1/jobs/{id}                            |
| get_result | a done job's md, json, txt or extraction, a slice of `max_chars` from `offset`        |

Resources: `ocrserve://jobs/{job_id}/result.md` and `.../result.json` for each of the caller's done
jobs (listed newest first; two templates say the form). Who the caller is comes from `owner_of`:
the one local owner on stdio, the API key's owner over HTTP (app/mcp_http.py), so a caller sees
only its own jobs, as in the REST API. While a tool waits it sends a progress notification each
time the job's count of pages done changes (when the caller asked for progress). Bad input is a
tool error with a sentence saying what to change; the server keeps serving.
"""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS
from pydantic import ValidationError

from app.mcp_tool_args import (TOOL_ARGS, TOOL_DESCRIPTIONS, ExtractArgs, GetJobArgs, GetResultArgs, OcrFileArgs,
                               OcrUrlArgs)
from app.mcp_tools import McpJobs, RisingProgress, ServiceUnavailableError
from vision.limits import InputError
from workers.job_model import JobRecord, JobState
from workers.job_service import QueueUnavailableError

logger = logging.getLogger("ocrserve.mcp")
VERSION = "0.1.0"
RESOURCE_URI = re.compile(r"^ocrserve://jobs/(?P<job_id>[A-Za-z0-9_-]{1,64})/result\.(?P<fmt>md|json)$")
MIME_TYPES = {"md": "text/markdown", "json": "application/json"}
INSTRUCTIONS = ("ocrserve reads PDFs and images (PNG, JPEG, TIFF) into Markdown, JSON and text, and extracts "
                "fields with a JSON schema. OCR a document with ocr_file or ocr_url; a long document returns its "
                "job id: follow it with get_job and read it with get_result or the job's resources.")
OwnerOf = Callable[[ServerRequestContext[Any]], str]


def resource_uri(job_id: str, fmt: str) -> str:
    return f"ocrserve://jobs/{job_id}/result.{fmt}"


def build_server(jobs: McpJobs, owner_of: OwnerOf) -> Server[Any]:
    """The MCP server over `jobs`; `owner_of(ctx)` names the caller of a request."""

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=name, description=TOOL_DESCRIPTIONS[name], input_schema=model.model_json_schema(),
                       annotations=types.ToolAnnotations(read_only_hint=name in ("get_job", "get_result"),
                                                         destructive_hint=False,
                                                         open_world_hint=name in ("ocr_url", "extract")))
            for name, model in TOOL_ARGS.items()])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        model = TOOL_ARGS.get(params.name)
        try:
            if model is None:
                raise InputError(f"unknown tool {params.name[:64]!r}; tools: {', '.join(TOOL_ARGS)}")
            args = model.model_validate(params.arguments or {})
            return await _run_tool(jobs, owner_of(ctx), args, ctx)
        except ValidationError as exc:
            return _error("invalid arguments: " + "; ".join(
                f"{'.'.join(map(str, err['loc'])) or 'arguments'}: {err['msg']}" for err in exc.errors()))
        except (InputError, QueueUnavailableError, ServiceUnavailableError) as exc:
            return _error(str(exc))
        except Exception:
            logger.exception("MCP tool %r failed", params.name)
            return _error("the tool failed on the server (its log says why); try again later")

    async def list_resources(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                             ) -> types.ListResourcesResult:
        finished = await anyio.to_thread.run_sync(jobs.finished_jobs, owner_of(ctx))
        resources = []
        for job in finished:
            names = ", ".join(f.filename for f in job.files)
            for fmt, label in (("md", "Markdown"), ("json", "JSON")):
                if fmt in job.options.formats or fmt == "json":
                    resources.append(types.Resource(
                        uri=resource_uri(job.id, fmt), name=f"{job.id}.{fmt}", title=f"{names} ({label})",
                        description=f"job {job.id}: {job.pages_total} page(s) of {names}", mime_type=MIME_TYPES[fmt]))
        return types.ListResourcesResult(resources=resources)

    async def list_templates(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=f"ocrserve://jobs/{{job_id}}/result.{fmt}", name=f"job-result-{fmt}",
                                   description=f"a done job's {label} result", mime_type=MIME_TYPES[fmt])
            for fmt, label in (("md", "Markdown"), ("json", "JSON"))])

    async def read_resource(ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        uri = str(params.uri)
        match = RESOURCE_URI.match(uri)
        if match is None:
            raise MCPError(INVALID_PARAMS, f"unknown resource {uri[:120]!r}; resources are "
                                           "ocrserve://jobs/{job_id}/result.md or .json")
        try:
            text = await anyio.to_thread.run_sync(jobs.result_text, owner_of(ctx), match["job_id"], match["fmt"])
        except InputError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, mime_type=MIME_TYPES[match["fmt"]], text=text)])

    return Server("ocrserve", version=VERSION, title="ocrserve document OCR", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
                  on_list_resource_templates=list_templates, on_read_resource=read_resource)


async def _run_tool(jobs: McpJobs, owner: str, args: Any, ctx: ServerRequestContext[Any]) -> types.CallToolResult:
    if isinstance(args, GetJobArgs):
        view = await anyio.to_thread.run_sync(lambda: jobs.view(jobs.job(owner, args.job_id)))
        return types.CallToolResult(content=[_text(json.dumps(view, ensure_ascii=False, indent=1))],
                                    structured_content=view)
    if isinstance(args, GetResultArgs):
        text = await anyio.to_thread.run_sync(jobs.result_text, owner, args.job_id, args.format)
        return types.CallToolResult(content=[_text(_slice(text, args.offset, args.max_chars, args.job_id))])
    assert isinstance(args, (OcrFileArgs, OcrUrlArgs, ExtractArgs))

    progress = RisingProgress(ctx.session.report_progress)

    def say(message: str) -> None:   # from the submitting thread: a client hears why the first call waits
        anyio.from_thread.run(progress.step, message)

    def submit() -> JobRecord:
        # Everything is checked (schema first: a bad one costs no download) before the job exists.
        extraction = jobs.schema(args.schema_) if isinstance(args, ExtractArgs) else None
        return jobs.submit(owner, jobs.upload(**_source(args)), args.pages, args.text_layer, extraction, say)

    job = await anyio.to_thread.run_sync(submit)
    job = await jobs.wait(owner, job.id, args.wait_s, progress)
    if not job.state.is_final:
        return types.CallToolResult(content=[_text(
            f"job {job.id} is {job.state.value} ({job.pages_done} of {job.pages_total} pages done) after "
            f"{args.wait_s:g} s; follow it with get_job(job_id={job.id!r}) and read it with get_result once done")],
            structured_content=_summary(job))
    if job.state is not JobState.DONE:
        return _error(f"job {job.id} {job.state.value}: {job.error or 'no reason recorded'}")
    if isinstance(args, ExtractArgs):
        return await _extraction_result(jobs, owner, job)
    markdown = await anyio.to_thread.run_sync(jobs.result_text, owner, job.id, "md")
    return types.CallToolResult(content=[_text(_slice(markdown, 0, args.max_chars, job.id))],
                                structured_content=_summary(job))


def _source(args: OcrFileArgs | OcrUrlArgs | ExtractArgs) -> dict[str, Any]:
    """The document arguments a tool takes, for `McpJobs.upload`."""
    if isinstance(args, OcrUrlArgs):
        return {"url": args.url}
    source: dict[str, Any] = {"path": args.path, "content_base64": args.content_base64, "filename": args.filename,
                              "offered": ("path", "content_base64")}
    if isinstance(args, ExtractArgs):
        source.update(url=args.url, offered=("path", "content_base64", "url"))
    return source


async def _extraction_result(jobs: McpJobs, owner: str, job: JobRecord) -> types.CallToolResult:
    stored = json.loads(await anyio.to_thread.run_sync(jobs.result_text, owner, job.id, "extraction"))
    document = stored["documents"][0]   # one document per job here
    if document["state"] != "done":
        return _error(f"job {job.id}: the fields could not be extracted: {document['reason']}")
    return types.CallToolResult(content=[_text(json.dumps(document["data"], ensure_ascii=False, indent=1))],
                                structured_content={"job_id": job.id, "state": document["state"],
                                                    "fields": document["data"]})


def _summary(job: JobRecord) -> dict[str, Any]:
    done = job.state is JobState.DONE
    return {"job_id": job.id, "state": job.state.value, "pages_done": job.pages_done, "pages_total": job.pages_total,
            "pages_failed": job.pages_failed,
            "resources": [resource_uri(job.id, fmt) for fmt in ("md", "json")] if done else []}


def _slice(text: str, offset: int, max_chars: int, job_id: str) -> str:
    """`max_chars` characters from `offset`, saying how to read on when text is left."""
    piece = text[offset:offset + max_chars]
    if offset + max_chars < len(text):
        piece += (f"\n\n[{len(text) - offset - max_chars:,} more characters: call get_result with "
                  f"job_id={job_id!r} and offset={offset + max_chars}, or read {resource_uri(job_id, 'md')}]")
    return piece


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[_text(message)], is_error=True)
