"""What the web page needs beyond /v1/jobs: the service's limits, a job's page
rendered as an image (to draw its regions over), and deleting a finished job.

    GET    /v1/limits                                   caps and options to show before an upload
    GET    /v1/jobs/{job_id}/pages/{file}/{page}/image  the page as PNG, as the worker saw it
    DELETE /v1/jobs/{job_id}/record                     a finished job, its uploads and its results

The page image is rendered from the stored upload at the job's DPI, the same
call the worker makes, so region boxes (page pixels of that render) fall on
it; the web page scales them by the result's `width` and `height` anyway, so
the image could be any size. It is rendered once, on the first request, and
stored with the job's results (`DataDir.page_image_path`, removed with the
job); later requests are served from that file. At most
`max_concurrent_page_renders` first renders run at once in the API process (a
request waits up to `RENDER_WAIT_S` for a turn, then gets 503 with
Retry-After), so a burst of requests costs bounded memory and CPU. Rendering
here, on demand, rather than in the worker at page time: only pages someone
opens in the web page pay for a PNG (most jobs come through the API or the
CLI and are never viewed), and a job's pages need no second image while it runs.
`DELETE /v1/jobs/{id}` cancels and keeps the job; `.../record` removes a job
that has ended, so the list stays short.
"""
from __future__ import annotations

import threading
from pathlib import Path as FilePath

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import FileResponse
from pydantic import BaseModel, Field

from app.deps import Context, Jobs, Owner
from app.errors import ApiError
from vision.document import Document
from vision.formats import DocumentKind
from vision.limits import InputError
from vision.text_layer import TEXT_LAYER_MODES
from workers.job_model import JobRecord
from workers.job_service import JobService
from workers.data_dir import write_atomically_with
from workers.settings import ALL_FORMATS, DEFAULT_FORMATS, Settings

router = APIRouter(prefix="/v1", tags=["web page"])

FILE_EXTENSIONS = {"pdf": [".pdf"], "png": [".png"], "jpeg": [".jpg", ".jpeg"], "tiff": [".tif", ".tiff"],
                   "docx": [".docx", ".docm"], "odt": [".odt"], "rtf": [".rtf"], "pptx": [".pptx", ".pptm"],
                   "odp": [".odp"], "xlsx": [".xlsx", ".xlsm"], "ods": [".ods"], "html": [".html", ".htm", ".xhtml"],
                   "epub": [".epub"]}
IMAGE_CACHE_CONTROL = "private, max-age=3600"   # an upload never changes under its job id
RENDER_WAIT_S = 10.0           # a first render waits this long for a free slot, then 503
RENDER_RETRY_AFTER_S = 2
_SLOTS_LOCK = threading.Lock()


class ServiceLimits(BaseModel):
    max_upload_bytes: int = Field(description="largest file accepted, in bytes")
    max_files_per_job: int
    max_pages: int = Field(description="most pages in one document")
    max_page_pixels: int
    render_dpi: float = Field(description="resolution PDF pages are rendered at unless a job asks otherwise")
    max_render_dpi: float
    formats: list[str] = Field(description="result formats a job may ask for")
    default_formats: list[str] = Field(description="the formats a job gets unless it names some")
    file_types: list[str] = Field(description="document kinds accepted, decided by content")
    file_extensions: list[str]
    text_layer: str = Field(description="the text-layer mode a job gets unless it names one")
    text_layer_modes: list[str] = Field(description="text-layer modes a job may ask for")


@router.get("/limits", response_model=ServiceLimits, summary="Upload caps and job options of this service")
def get_limits(context: Context, _owner: Owner) -> ServiceLimits:
    settings = context.settings
    limits = settings.vision_limits()
    return ServiceLimits(
        max_upload_bytes=settings.max_upload_bytes, max_files_per_job=settings.max_files_per_job,
        max_pages=settings.max_pages, max_page_pixels=settings.max_page_pixels, render_dpi=settings.render_dpi,
        max_render_dpi=limits.max_render_dpi, formats=list(ALL_FORMATS),
        default_formats=list(DEFAULT_FORMATS), file_types=[k.value for k in DocumentKind],
        file_extensions=[ext for kind in DocumentKind for ext in FILE_EXTENSIONS[kind.value]],
        text_layer=settings.text_layer, text_layer_modes=list(TEXT_LAYER_MODES))


@router.get("/jobs/{job_id}/pages/{file}/{page}/image", summary="A page of a job, rendered as PNG",
            responses={200: {"content": {"image/png": {}}}})
def get_page_image(request: Request, job_id: str, jobs: Jobs, owner: Owner,
                   file: int = Path(ge=1, description="1-based file"),
                   page: int = Path(ge=1, description="1-based page in that file")) -> Response:
    job = _owned_job(jobs, owner, job_id)
    if file > len(job.files) or page - 1 not in job.files[file - 1].page_indices:
        raise ApiError(404, "not_found", f"file {file}, page {page} is not part of this job")
    stored = jobs.data_dir.page_image_path(job.id, file - 1, page - 1)
    if not stored.is_file():
        _render_and_store(_render_slots(request, jobs.settings), jobs, job, file - 1, page - 1, stored)
        if jobs.get(owner, job.id) is None:   # deleted while rendering: leave nothing behind it
            jobs.remove_job_files(job.id)
            raise ApiError(404, "not_found", "no such job")
    return FileResponse(stored, media_type="image/png", headers={"Cache-Control": IMAGE_CACHE_CONTROL})


def _render_slots(request: Request, settings: Settings) -> threading.BoundedSemaphore:
    with _SLOTS_LOCK:   # handlers run on the thread pool: made once per app, under a lock
        slots = getattr(request.app.state, "page_render_slots", None)
        if slots is None:
            slots = request.app.state.page_render_slots = threading.BoundedSemaphore(
                settings.max_concurrent_page_renders)
        return slots


def _render_and_store(slots: threading.BoundedSemaphore, jobs: JobService, job: JobRecord, file_index: int,
                      page_index: int, stored: FilePath) -> None:
    """Render the page from the stored upload and write it to `stored` (atomically), in one of
    the bounded render slots."""
    if not slots.acquire(timeout=RENDER_WAIT_S):
        raise ApiError(503, "busy_rendering", "the server is rendering other pages; try again in a moment",
                       headers={"Retry-After": str(RENDER_RETRY_AFTER_S)})
    try:
        if stored.is_file():   # rendered by another request while this one waited
            return
        upload = jobs.data_dir.upload_path(job.id, file_index, job.files[file_index].kind)
        jobs.blobs.fetch(upload)   # a copy from the shared store, kept to render the job's other pages
        try:
            with Document.open_path(upload, jobs.settings.vision_limits()) as document:
                rendered = document.render_page(page_index, job.options.dpi)
        except FileNotFoundError:
            raise ApiError(404, "upload_missing", "the uploaded document of this job is no longer stored") from None
        except InputError as exc:
            raise ApiError(422, exc.code, f"the page cannot be rendered: {exc}") from None
        write_atomically_with(stored, lambda out: rendered.image.save(out, format="PNG", optimize=False,
                                                                      compress_level=3))
    finally:
        slots.release()


@router.delete("/jobs/{job_id}/record", status_code=204, summary="Delete a finished job and everything stored for it")
def delete_job(job_id: str, jobs: Jobs, owner: Owner) -> Response:
    job = _owned_job(jobs, owner, job_id)
    if not job.state.is_final:
        raise ApiError(409, "job_not_finished", f"the job is {job.state.value}; cancel it before deleting it")
    if not jobs.store.delete_job(job.id, job.owner):
        raise ApiError(409, "job_not_finished", "the job changed while it was being deleted; try again")
    jobs.remove_job_files(job.id)
    return Response(status_code=204)


def _owned_job(jobs: JobService, owner: str, job_id: str) -> JobRecord:
    job = jobs.get(owner, job_id)
    if job is None:
        raise ApiError(404, "not_found", "no such job")
    return job
