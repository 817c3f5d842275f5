"""The JSON the jobs API answers with."""
from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field

from workers.document_result import iso_time
from workers.job_model import JobListing, JobRecord, JobState

JobStateName = Literal["queued", "running", "done", "failed", "cancelled"]
ExtractionStateName = Literal["pending", "done", "partial", "failed", "skipped"]


class PageView(BaseModel):
    file: int = Field(description="1-based position of the file in the job")
    page: int = Field(description="1-based page number in that file")
    state: JobStateName
    reason: str | None = Field(None, description="a sentence, when some or all of the page was not recognised")
    attempts: int = Field(description="times a worker started on this page (retries and redeliveries included)")
    lost_runs: int = Field(0, description="times the page's worker process died before recording it; after a "
                           "few the page is failed instead of run again")
    regions_ok: int
    regions_fallback: int
    regions_failed: int


class FileView(BaseModel):
    filename: str
    kind: str
    num_pages: int
    pages_selected: int


class ExtractionView(BaseModel):
    schema_name: str = Field(description="the registered schema's name, or 'inline'")
    state: ExtractionStateName = Field(description="pending until the job ends; then done, partial (some "
                                       "documents failed), failed, or skipped (the job ended without results)")
    reason: str | None = Field(None, description="a sentence, when some or all of the extraction failed")


class JobSummary(BaseModel):
    id: str
    state: JobStateName
    pages_done: int = Field(description="pages finished, done or failed")
    pages_total: int
    created_at: str
    updated_at: str
    finished_at: str | None
    error: str | None = Field(None, description="a sentence, when the job failed")
    formats: list[str]
    text_layer: str = Field(description="auto: PDF pages take their own text layer where it passes checks; "
                            "never: every page is recognised; verify: recognised, the text layer (where it "
                            "passes checks) sent as the model's draft and compared with the reading")
    keep_furniture: bool = Field(False, description="whether the Markdown and text keep page furniture "
                                 "(running headers and footers, page numbers, line numbers, margin notes)")
    languages: str = Field("detect", description="detect: each page's script and language found and routed to "
                           "a recogniser that reads it; or the Tesseract language codes the job named ('pol+eng')")
    files: list[FileView]
    schema_name: str | None = Field(None, description="the schema the job extracts with, when it has one")

    @classmethod
    def from_record(cls, job: JobRecord | JobListing) -> JobSummary:
        return cls(**_summary_fields(job))


class JobView(JobSummary):
    pages: list[PageView]
    extraction: ExtractionView | None = Field(None, description="present when the job was sent with a schema; "
                                              "the fields are at /result?format=extraction")
    callback_url: str | None = Field(None, description="where the job's webhook events go, when it was sent with "
                                     "one; each delivery is at /v1/jobs/{id}/deliveries")

    @classmethod
    def from_record(cls, job: JobRecord, extraction: ExtractionView | None = None) -> JobView:
        pages = [PageView(file=p.file_index + 1, page=p.page_number, state=p.state.value, reason=p.reason,
                          attempts=p.attempts, lost_runs=p.lost_runs, regions_ok=p.regions_ok,
                          regions_fallback=p.regions_fallback, regions_failed=p.regions_failed) for p in job.pages]
        return cls(**_summary_fields(job), pages=pages, extraction=extraction, callback_url=job.options.callback_url)


def extraction_view(job: JobRecord, stored_json: bytes | None) -> ExtractionView | None:
    """The extraction's state for a job sent with a schema, read from its extraction.json once written."""
    if job.options.extraction is None:
        return None
    name = job.options.extraction.name
    if not job.state.is_final:
        return ExtractionView(schema_name=name, state="pending")
    try:
        if stored_json is None:
            raise ValueError("no extraction.json")
        stored = json.loads(stored_json)
    except (OSError, ValueError):
        reason = "the job was cancelled" if job.state is JobState.CANCELLED else "the job ended without results"
        return ExtractionView(schema_name=name, state="skipped", reason=reason)
    return ExtractionView(schema_name=name, state=stored["state"], reason=stored.get("reason"))


class JobList(BaseModel):
    jobs: list[JobSummary]


def _summary_fields(job: JobRecord | JobListing) -> dict[str, object]:
    """What a job's summary shows: fields a `JobListing` has too (no page rows)."""
    return {
        "id": job.id, "state": job.state.value, "pages_done": job.pages_done, "pages_total": job.pages_total,
        "created_at": iso_time(job.created_at), "updated_at": iso_time(job.updated_at),
        "finished_at": iso_time(job.finished_at) if job.finished_at is not None else None,
        "error": job.error, "formats": list(job.options.formats), "text_layer": job.options.text_layer,
        "keep_furniture": job.options.keep_furniture, "languages": job.options.languages,
        "schema_name": job.options.extraction.name if job.options.extraction else None,
        "files": [FileView(filename=f.filename, kind=f.kind, num_pages=f.num_pages,
                           pages_selected=len(f.page_indices)) for f in job.files],
    }
