"""What the MCP server's tools do, apart from MCP: take a document from a caller (a path on this
machine for a local server, base64 bytes, or a URL on the deployment's list), submit it as a job
of that caller, wait for it within a bound, and read its results.

Every check an upload through the REST API passes is made here too, by the same code: the byte
cap (before decoding base64 or reading a file), file type, pages and pixels (`JobService.submit`),
schemas (`parse_schema` / the registry), URLs (`app.url_intake`). A refused input raises an
`InputError` whose message is shown to the caller as a tool error. Calls here block on the job
store: the server runs them on worker threads.
"""
from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from app.job_schemas import JobView, extraction_view
from app.schemas_registry import SchemaRegistry, resolve_schema
from app.url_intake import fetch_document
from vision.limits import DocumentTooLargeError, InputError
from workers.extraction_schema import ExtractionSchema, SchemaError, parse_schema
from workers.job_model import JobListing, JobRecord, JobState
from workers.job_service import JobService, Upload
from workers.settings import Settings

MCP_FORMATS = ("md", "json", "txt")   # no searchable PDF: an agent reads text, and the PDF costs time
POLL_INTERVAL_S = 0.5
Progress = Callable[[float, float | None, str], Awaitable[None]]


class RisingProgress:
    """A tool call's progress notifications, whose value must rise with each one (the protocol
    says so): a report that would not rise is dropped. Pages done are whole steps; what happens
    before the first page (services starting) takes fractions of the first step, each halfway
    to 1."""

    def __init__(self, send: Progress):
        self.send = send
        self.last: float | None = None

    async def report(self, value: float, total: float | None, message: str) -> None:
        if self.last is None or value > self.last:
            self.last = value
            await self.send(value, total, message)

    async def step(self, message: str) -> None:
        await self.report(0.0 if self.last is None else self.last + (1.0 - self.last) / 2, None, message)


class ToolInputError(InputError):
    code = "invalid_arguments"


class ServiceUnavailableError(RuntimeError):
    """Nothing can run the job (a local server's worker or engine did not start); the message says why."""


class McpJobs:
    """The jobs of MCP callers, over one `JobService`. `local_paths`: whether a tool may read a
    path on this machine (a stdio server run by its user; never the shared HTTP endpoint).
    `ensure_workers(needs_extraction, say)`: makes sure something will run the job (a stdio server
    starts its worker, and the extraction engine when a job needs it, the first time, telling
    `say` what it starts), else raises `ServiceUnavailableError`."""

    def __init__(self, jobs: JobService, settings: Settings, *, local_paths: bool,
                 ensure_workers: Callable[[bool, Callable[[str], None]], None] | None = None):
        self.jobs = jobs
        self.settings = settings
        self.local_paths = local_paths
        self.ensure_workers = ensure_workers

    # -- taking a document -------------------------------------------------------------------
    def upload(self, path: str | None = None, content_base64: str | None = None, filename: str | None = None,
               url: str | None = None, *, offered: tuple[str, ...] = ("path", "content_base64", "url")) -> Upload:
        """One document from exactly one of `path`, `content_base64` (+ `filename`) and `url`;
        `offered` names those the tool takes, for the message."""
        given = [name for name, value in (("path", path), ("content_base64", content_base64), ("url", url))
                 if value is not None]
        if len(given) != 1:
            raise ToolInputError(f"give exactly one of {', '.join(offered)}" +
                                 (f" (got {' and '.join(given)})" if given else ""))
        if path is not None:
            return self._local_file(path)
        if url is not None:
            fetched = fetch_document(url, self.settings)
            return Upload(filename or fetched.filename, data=fetched.data)
        assert content_base64 is not None
        return Upload(filename or "document", data=self._decoded(content_base64))

    def _local_file(self, text: str) -> Upload:
        if not self.local_paths:
            raise ToolInputError("this server does not read files on its machine (only a local `ocrserve mcp` "
                                 "does): send the document as content_base64, with its filename")
        path = Path(text).expanduser()
        if not path.is_absolute():
            raise ToolInputError(f"give an absolute path (got {text[:200]!r})")
        try:
            if not path.is_file():
                raise ToolInputError(f"{text[:200]!r} is not a file")
            size = path.stat().st_size
            if size > self.settings.max_upload_bytes:
                raise DocumentTooLargeError(f"{path.name} is {size:,} bytes; the limit is "
                                            f"{self.settings.max_upload_bytes:,}")
            return Upload(path.name, data=path.read_bytes())
        except OSError as exc:
            raise ToolInputError(f"{text[:200]!r} cannot be read ({exc.strerror})") from None

    def _decoded(self, text: str) -> bytes:
        max_bytes = self.settings.max_upload_bytes
        if len(text) > (max_bytes + 2) // 3 * 4 + 4:   # checked before decoding anything
            raise DocumentTooLargeError(f"the document is larger than the {max_bytes:,}-byte limit")
        try:
            return base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            raise ToolInputError("content_base64 is not valid base64") from None

    def schema(self, value: str | dict[str, Any]) -> ExtractionSchema:
        """A registered schema's name, or a whole JSON schema (an object, or its JSON text)."""
        if isinstance(value, dict):
            return parse_schema(json.dumps(value, ensure_ascii=False), self.settings.max_schema_bytes)
        if not isinstance(value, str):
            raise SchemaError("schema must be a registered name or a JSON schema object")
        return resolve_schema(value, SchemaRegistry.from_settings(self.settings))

    def submit(self, owner: str, upload: Upload, pages: str | None, text_layer: str | None,
               extraction: ExtractionSchema | None = None, say: Callable[[str], None] = lambda _: None) -> JobRecord:
        """`say` is told what starts meanwhile (a local server's first job waits for its services)."""
        if extraction is not None and self.ensure_workers is not None:
            # Before the job: its extraction must find the engine serving, not loading (a 503 it gives up on).
            self.ensure_workers(True, say)
        job = self.jobs.submit(owner, [upload], pages, MCP_FORMATS, extraction=extraction, text_layer=text_layer)
        # After the document's checks, so a refused document starts nothing; the job waits in the broker.
        if self.ensure_workers is not None:
            self.ensure_workers(False, say)
        return job

    # -- reading jobs ------------------------------------------------------------------------
    def job(self, owner: str, job_id: str) -> JobRecord:
        job = self.jobs.get(owner, job_id)
        if job is None:   # another owner's job looks absent, as in the REST API
            raise ToolInputError(f"no such job: {job_id[:64]!r}")
        return job

    def view(self, job: JobRecord) -> dict[str, Any]:
        """The job as GET /v1/jobs/{id} shows it."""
        stored = self.jobs.read_result(job, "extraction") if job.options.extraction and job.state.is_final else None
        return JobView.from_record(job, extraction_view(job, stored)).model_dump(mode="json")

    def result_text(self, owner: str, job_id: str, fmt: str) -> str:
        job = self.job(owner, job_id)
        if job.state is not JobState.DONE:
            detail = f": {job.error}" if job.error else f" ({job.pages_done} of {job.pages_total} pages done)"
            raise ToolInputError(f"job {job.id} is {job.state.value}{detail}; results exist once it is done")
        if fmt != "extraction" and fmt not in job.options.formats:
            raise ToolInputError(f"format {fmt!r} was not made for job {job.id} (made: "
                                 f"{', '.join(job.options.formats)})")
        if fmt == "extraction" and job.options.extraction is None:
            raise ToolInputError(f"job {job.id} was submitted without a schema, so it has no extraction")
        data = self.jobs.read_result(job, fmt)
        if data is None:
            raise ToolInputError(f"the {fmt} result of job {job.id} is missing")
        return data.decode("utf-8", errors="replace")

    def finished_jobs(self, owner: str) -> list[JobListing]:
        """The owner's done jobs, newest first, as many as a listing shows."""
        listed = self.jobs.list(owner, self.settings.max_jobs_listed)
        return [job for job in listed if job.state is JobState.DONE]

    async def wait(self, owner: str, job_id: str, wait_s: float, progress: RisingProgress) -> JobRecord:
        """The job once it ends, or as it is after `wait_s`; each page done is reported."""
        deadline = time.monotonic() + wait_s
        while True:
            job = await anyio.to_thread.run_sync(self.job, owner, job_id)
            await progress.report(job.pages_done, job.pages_total or None,
                                  f"job {job.id}: {job.state.value}, {job.pages_done} of {job.pages_total} pages")
            if job.state.is_final or time.monotonic() >= deadline:
                return job
            await anyio.sleep(min(POLL_INTERVAL_S, max(0.0, deadline - time.monotonic())))
