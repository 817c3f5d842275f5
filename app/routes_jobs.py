"""/v1/jobs: submit documents, follow them, fetch results, cancel.

Handlers stay thin: `JobService` (workers) does the checks and the storing.
The upload is parsed by hand, not by FastAPI parameters, so that each file is
read in chunks and refused the moment it passes the byte cap.
"""
from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import FileResponse
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException

from app.deps import Context, Jobs, Owner
from app.errors import ApiError
from app.job_schemas import JobList, JobSummary, JobView
from vision.limits import DocumentTooLargeError, InvalidOptionError
from workers.job_model import JobRecord, JobState
from workers.job_service import TooManyFilesError, Upload

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

MEDIA_TYPES = {"md": "text/markdown; charset=utf-8", "json": "application/json",
               "txt": "text/plain; charset=utf-8", "pdf": "application/pdf"}
READ_CHUNK_BYTES = 1024 * 1024
_UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["files"],
    "properties": {
        "files": {"type": "array", "items": {"type": "string", "format": "binary"},
                  "description": "one or more PDF, PNG, JPEG or TIFF files"},
        "pages": {"type": "string", "description": "pages of each file, e.g. '1-5,8' (default: all)"},
        "formats": {"type": "string", "description": "comma-separated subset of md,json,txt,pdf (default: all)"},
        "dpi": {"type": "number", "description": "render resolution for PDF pages (default: the server's)"},
    }}}}}}


@router.post("", status_code=202, response_model=JobView, openapi_extra=_UPLOAD_BODY,
             summary="Submit one or more documents as a job")
async def create_job(request: Request, context: Context, owner: Owner) -> JobView:
    settings = context.settings
    try:
        form = await request.form(max_files=settings.max_files_per_job, max_fields=8)
    except (MultiPartException, HTTPException) as exc:   # Starlette reports parse errors as a 400 HTTPException
        detail = str(getattr(exc, "detail", None) or exc)
        if "too many files" in detail.lower():
            raise TooManyFilesError(f"too many files in one job; the limit is {settings.max_files_per_job}") from exc
        raise ApiError(400, "invalid_request", f"the upload is not valid multipart form data ({detail})") from exc
    try:
        uploads = [await _read_capped(part, settings.max_upload_bytes)
                   for _, part in form.multi_items() if isinstance(part, UploadFile)]
        fields = {name: value for name, value in form.multi_items() if isinstance(value, str)}
    finally:
        await form.close()
    unknown = sorted(set(fields) - {"pages", "formats", "dpi"})
    if unknown:
        raise InvalidOptionError(f"unknown option {unknown[0][:30]!r}; options are pages, formats and dpi")
    dpi = _parse_dpi(fields.get("dpi"))
    # Opening documents (parsing PDFs) is blocking work: keep it off the event loop.
    job = await asyncio.to_thread(context.jobs.submit, owner, uploads, fields.get("pages"), fields.get("formats"), dpi)
    return JobView.from_record(job)


@router.get("", response_model=JobList, summary="The caller's jobs, newest first")
def list_jobs(jobs: Jobs, owner: Owner, limit: int = Query(20, ge=1, le=100),
              offset: int = Query(0, ge=0)) -> JobList:
    return JobList(jobs=[JobSummary.from_record(job) for job in jobs.list(owner, limit, offset)])


@router.get("/{job_id}", response_model=JobView, summary="A job's state and per-page progress")
def get_job(job_id: str, jobs: Jobs, owner: Owner) -> JobView:
    return JobView.from_record(_owned_job(jobs, owner, job_id))


@router.get("/{job_id}/result", summary="A finished job's result as md, json, txt or pdf",
            responses={200: {"content": {media: {} for media in MEDIA_TYPES.values()}}})
def get_result(job_id: str, jobs: Jobs, owner: Owner,
               format: Literal["md", "json", "txt", "pdf"] = Query("md")) -> Response:  # noqa: A002
    job = _owned_job(jobs, owner, job_id)
    if job.state is not JobState.DONE:
        if job.state is JobState.FAILED:
            raise ApiError(409, "job_failed", f"the job failed: {job.error}")
        raise ApiError(409, "job_not_finished",
                       f"the job is {job.state.value} ({job.pages_done} of {job.pages_total} pages done)")
    if format != "json" and format not in job.options.formats:
        raise ApiError(404, "format_not_requested", f"format {format!r} was not requested for this job")
    path = jobs.result_path(job, format)
    if not path.exists():
        raise ApiError(404, "result_missing", f"the {format} result of this job is missing")
    return FileResponse(path, media_type=MEDIA_TYPES[format], filename=f"{job.id}.{format}")


@router.get("/{job_id}/figures/{name}", summary="A figure crop the Markdown links to")
def get_figure(job_id: str, name: str, jobs: Jobs, owner: Owner) -> Response:
    path = jobs.figure_path(_owned_job(jobs, owner, job_id), name)
    if path is None:
        raise ApiError(404, "not_found", "no such figure")
    return FileResponse(path, media_type="image/png")


@router.delete("/{job_id}", response_model=JobView, summary="Cancel a queued or running job")
def cancel_job(job_id: str, jobs: Jobs, owner: Owner) -> JobView:
    job = _owned_job(jobs, owner, job_id)
    if job.state.is_final:
        raise ApiError(409, "job_finished", f"the job is already {job.state.value}")
    cancelled = jobs.cancel(owner, job_id)
    assert cancelled is not None
    return JobView.from_record(cancelled)


def _owned_job(jobs: Jobs, owner: str, job_id: str) -> JobRecord:
    job = jobs.get(owner, job_id)
    if job is None:
        raise ApiError(404, "not_found", "no such job")
    return job


async def _read_capped(part: UploadFile, max_bytes: int) -> Upload:
    chunks, size = [], 0
    while chunk := await part.read(READ_CHUNK_BYTES):
        size += len(chunk)
        if size > max_bytes:
            raise DocumentTooLargeError(f"{part.filename or 'an upload'} is larger than the {max_bytes:,}-byte limit")
        chunks.append(chunk)
    return Upload(part.filename or "upload", b"".join(chunks))


def _parse_dpi(text: str | None) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        raise InvalidOptionError(f"dpi must be a number, got {text[:20]!r}") from None
