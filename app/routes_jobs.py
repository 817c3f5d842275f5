"""/v1/jobs: submit documents, follow them, fetch results, cancel.

Handlers stay thin: `JobService` (workers) does the checks and the storing.
The upload is parsed by hand (`app.uploads`), not by FastAPI parameters: each
file part is streamed to disk in the data directory, refused the moment it
passes the byte cap, and handed to `JobService` as a path, never as bytes in
memory; a bounded number of uploads are received at once.
"""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import FileResponse, StreamingResponse

from app.deps import ApiContext, Context, Jobs, Owner
from app.downloads import GuardedDownload, download_gate
from app.errors import ApiError
from app.job_schemas import JobList, JobSummary, JobView, extraction_view
from app.schemas_registry import SchemaRegistry, resolve_schema
from app.uploads import FormLimits, ReceivedForm, UploadGate, receive_form
from vision.limits import InvalidOptionError
from vision.text_layer import TEXT_LAYER_MODES
from workers.blob_store import BlobStore
from workers.extraction_schema import ExtractionSchema, SchemaError, parse_schema
from workers.job_model import JobRecord, JobState
from workers.job_service import JobService, Upload, parse_flag
from workers.settings import Settings

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

MEDIA_TYPES = {"md": "text/markdown; charset=utf-8", "json": "application/json",
               "txt": "text/plain; charset=utf-8", "pdf": "application/pdf", "extraction": "application/json",
               "hocr": "application/xhtml+xml; charset=utf-8", "alto": "application/xml; charset=utf-8"}
# SQLite binds OFFSET as a signed 64-bit integer; past it the query would fail (a 500): refuse it (400).
MAX_LIST_OFFSET = 2**63 - 1
FORM_OPTIONS = ("pages", "formats", "dpi", "schema", "text_layer", "keep_furniture", "callback_url", "languages")
_UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["files"],
    "properties": {
        "files": {"type": "array", "items": {"type": "string", "format": "binary"},
                  "description": "one or more PDF, PNG, JPEG or TIFF files, office documents (DOCX, ODT, RTF, "
                  "PPTX, ODP, XLSX, ODS), HTML pages or EPUB books, told apart by content; an office, HTML or EPUB "
                  "document is converted to PDF when the job is submitted (LibreOffice in a sandbox without "
                  "network or macros; MuPDF for HTML and EPUB, with only inline or packaged images), read from "
                  "its text layer with its pictures recognised, and kept beside that PDF; one that cannot be "
                  "converted within the server's time and size budget is refused (422 conversion_failed)"},
        "pages": {"type": "string", "description": "pages of each file, e.g. '1-5,8' (default: all)"},
        "formats": {"type": "string", "description": "comma-separated subset of md,json,txt,pdf,hocr,alto "
                    "(default: md,json,txt,pdf)"},
        "dpi": {"type": "number", "description": "render resolution for PDF pages (default: the server's)"},
        "schema": {"type": "string", "description": "extract fields into extraction.json: the name of a "
                   "registered schema (GET /v1/schemas) or a whole JSON schema, as text or as a file part"},
        "text_layer": {"type": "string", "enum": list(TEXT_LAYER_MODES), "description": "auto: a PDF page "
                       "whose own text layer passes checks (mapped characters, visible text, covering the detected "
                       "lines) takes its text from it, exact and fast; never: always recognise; verify: recognise "
                       "such a page with its layer's text as the model's draft (faster on our engine), each region "
                       "saying whether the reading agrees with the layer (default: the server's, auto unless "
                       "OCRSERVE_TEXT_LAYER says otherwise)"},
        "callback_url": {"type": "string", "format": "uri", "description": "POST the job's events here, signed "
                         "(X-Ocrserve-Signature; GET /v1/webhooks/secret): a failed page, and the job done, failed "
                         "or cancelled; only hosts the server allows (OCRSERVE_WEBHOOK_ALLOWED_HOSTS)"},
        "languages": {"type": "string", "description": "detect (default): each page's script is found and "
                      "lines the house model cannot write go to Tesseract with that script's language pack; or "
                      "Tesseract language codes joined by '+' (e.g. 'pol', 'rus+eng', 'chi_sim'), each one a pack "
                      "installed on the server"},
        "keep_furniture": {"type": "boolean", "description": "keep page furniture (running headers and footers, "
                           "page numbers, line numbers, margin notes) in the Markdown and text; the JSON always "
                           "has it, marked by role (default: false)"},
    }}}}}}


@router.post("", status_code=202, response_model=JobView, openapi_extra=_UPLOAD_BODY,
             summary="Submit one or more documents as a job")
async def create_job(request: Request, context: Context, owner: Owner) -> JobView:
    settings = context.settings
    with _upload_gate(request, settings).admit():
        form = await receive_form(request, context.jobs.data_dir.incoming_dir, FormLimits(
            max_file_bytes=settings.max_upload_bytes, max_files=settings.max_files_per_job,
            max_field_bytes=settings.max_schema_bytes, max_fields=len(FORM_OPTIONS) + 3,
            idle_timeout_s=settings.upload_idle_timeout_s))
        try:
            return await _submit(context, owner, form)
        finally:
            form.discard()   # files the job took were moved away; the rest of a refused upload goes


async def _submit(context: ApiContext, owner: str, form: ReceivedForm) -> JobView:
    settings = context.settings
    fields = dict(form.fields)
    unknown = sorted(set(fields) - set(FORM_OPTIONS))
    if unknown:
        raise InvalidOptionError(f"unknown option {unknown[0][:30]!r}; options are {', '.join(FORM_OPTIONS)}")
    dpi = _parse_dpi(fields.get("dpi"))
    keep_furniture = parse_flag("keep_furniture", fields.get("keep_furniture"))
    # Checked before any document is opened: a bad schema costs no work.
    extraction = _extraction_schema(fields.get("schema"), form.schema_files, settings)
    uploads = [Upload(received.filename or "upload", received=received.path) for received in form.files]
    # Opening documents (parsing PDFs) is blocking work: keep it off the event loop.
    job = await asyncio.to_thread(context.jobs.submit, owner, uploads, fields.get("pages"), fields.get("formats"), dpi,
                                  extraction=extraction, text_layer=fields.get("text_layer"),
                                  keep_furniture=keep_furniture, callback_url=fields.get("callback_url"),
                                  languages=fields.get("languages"))
    return _view(context.jobs, job)


def _upload_gate(request: Request, settings: Settings) -> UploadGate:
    """This app's bound on uploads at once (made on first use, on the event loop: no race)."""
    gate = getattr(request.app.state, "upload_gate", None)
    if gate is None:
        gate = request.app.state.upload_gate = UploadGate(settings.max_concurrent_uploads)
    return gate


@router.get("", response_model=JobList, summary="The caller's jobs, newest first")
def list_jobs(jobs: Jobs, owner: Owner, limit: int = Query(20, ge=1, le=100),
              offset: int = Query(0, ge=0, le=MAX_LIST_OFFSET)) -> JobList:
    return JobList(jobs=[JobSummary.from_record(job) for job in jobs.list(owner, limit, offset)])


@router.get("/{job_id}", response_model=JobView, summary="A job's state and per-page progress")
def get_job(job_id: str, jobs: Jobs, owner: Owner) -> JobView:
    return _view(jobs, _owned_job(jobs, owner, job_id))


@router.get("/{job_id}/result",
            summary="A finished job's result as md, json, txt, pdf, hocr, alto or extraction (JSON)",
            responses={200: {"content": {media: {} for media in MEDIA_TYPES.values()}}})
def get_result(job_id: str, request: Request, context: Context, owner: Owner,
               format: Literal["md", "json", "txt", "pdf", "hocr", "alto", "extraction"] = Query("md")  # noqa: A002
               ) -> Response:
    jobs = context.jobs
    job = _owned_job(jobs, owner, job_id)
    if job.state is not JobState.DONE:
        if job.state is JobState.FAILED:
            raise ApiError(409, "job_failed", f"the job failed: {job.error}")
        raise ApiError(409, "job_not_finished",
                       f"the job is {job.state.value} ({job.pages_done} of {job.pages_total} pages done)")
    if format == "extraction" and job.options.extraction is None:
        raise ApiError(404, "format_not_requested", "this job was submitted without a schema, so it has no extraction")
    if format not in ("json", "extraction") and format not in job.options.formats:
        raise ApiError(404, "format_not_requested", f"format {format!r} was not requested for this job")
    filename = f"{job.id}.extraction.json" if format == "extraction" else f"{job.id}.{format}"
    response = stored_file_response(jobs.blobs, jobs.stored_result(job, format), MEDIA_TYPES[format], filename)
    if response is None:
        raise ApiError(404, "result_missing", f"the {format} result of this job is missing")
    return _guarded(request, context, owner, response)


@router.get("/{job_id}/figures/{name}", summary="A figure crop the Markdown links to")
def get_figure(job_id: str, name: str, context: Context, owner: Owner) -> Response:
    jobs = context.jobs
    path = jobs.figure_path(_owned_job(jobs, owner, job_id), name)
    response = None if path is None else stored_file_response(jobs.blobs, path, "image/png")
    if response is None:
        raise ApiError(404, "not_found", "no such figure")
    # Not counted against the key's downloads: a page of Markdown loads its figures all at once.
    return _guarded(None, context, owner, response)


def _guarded(request: Request | None, context: ApiContext, owner: str, response: Response) -> GuardedDownload:
    """The download under the idle timeout and, given the request, the owner's download slot
    (app/downloads.py)."""
    chunks = getattr(response, "source_chunks", None)
    gate = download_gate(request) if request is not None else None
    return GuardedDownload(response, gate, owner, context.settings.download_idle_timeout_s,
                           close=getattr(chunks, "close", None))


@router.delete("/{job_id}", response_model=JobView, summary="Cancel a queued or running job")
def cancel_job(job_id: str, jobs: Jobs, owner: Owner) -> JobView:
    job = _owned_job(jobs, owner, job_id)
    if job.state.is_final:
        raise ApiError(409, "job_finished", f"the job is already {job.state.value}")
    cancelled = jobs.cancel(owner, job_id)
    assert cancelled is not None
    return _view(jobs, cancelled)


def stored_file_response(blobs: BlobStore, path: Path, media_type: str, filename: str | None = None
                         ) -> Response | None:
    """A stored file as a response: from disk when the data directory is the shared place (with
    ranges and validators), else streamed from the blob store chunk by chunk; None when absent."""
    if not blobs.shared:
        return FileResponse(path, media_type=media_type, filename=filename) if path.is_file() else None
    chunks = blobs.stream(path)
    if chunks is None:
        return None
    headers = {"Content-Disposition": f'attachment; filename="{filename}"'} if filename else None
    response = StreamingResponse(chunks, media_type=media_type, headers=headers)
    response.source_chunks = chunks   # closed by whoever sends it, ended or not (GuardedDownload)
    return response


def _view(jobs: JobService, job: JobRecord) -> JobView:
    extraction = jobs.read_result(job, "extraction") if job.options.extraction is not None and job.state.is_final \
        else None
    return JobView.from_record(job, extraction_view(job, extraction))


def _owned_job(jobs: Jobs, owner: str, job_id: str) -> JobRecord:
    job = jobs.get(owner, job_id)
    if job is None:
        raise ApiError(404, "not_found", "no such job")
    return job


def _extraction_schema(field: str | None, files: list[bytes], settings: Settings) -> ExtractionSchema | None:
    """The `schema` option: a registered name or inline JSON as a form field, or a JSON file part."""
    if len(files) + (field is not None) > 1:
        raise SchemaError("send one schema: as a form field or as a file part, once")
    if files:
        return parse_schema(files[0], settings.max_schema_bytes)
    return None if field is None else resolve_schema(field, SchemaRegistry.from_settings(settings))


def _parse_dpi(text: str | None) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        raise InvalidOptionError(f"dpi must be a number, got {text[:20]!r}") from None
