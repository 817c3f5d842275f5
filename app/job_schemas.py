"""The JSON the jobs API answers with."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from workers.document_result import iso_time
from workers.job_model import JobRecord

JobStateName = Literal["queued", "running", "done", "failed", "cancelled"]


class PageView(BaseModel):
    file: int = Field(description="1-based position of the file in the job")
    page: int = Field(description="1-based page number in that file")
    state: JobStateName
    reason: str | None = Field(None, description="a sentence, when some or all of the page was not recognised")
    attempts: int = Field(description="times a worker started on this page (retries and redeliveries included)")
    regions_ok: int
    regions_fallback: int
    regions_failed: int


class FileView(BaseModel):
    filename: str
    kind: str
    num_pages: int
    pages_selected: int


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
    files: list[FileView]

    @classmethod
    def from_record(cls, job: JobRecord) -> JobSummary:
        return cls(**_summary_fields(job))


class JobView(JobSummary):
    pages: list[PageView]

    @classmethod
    def from_record(cls, job: JobRecord) -> JobView:
        pages = [PageView(file=p.file_index + 1, page=p.page_number, state=p.state.value, reason=p.reason,
                          attempts=p.attempts, regions_ok=p.regions_ok, regions_fallback=p.regions_fallback,
                          regions_failed=p.regions_failed) for p in job.pages]
        return cls(**_summary_fields(job), pages=pages)


class JobList(BaseModel):
    jobs: list[JobSummary]


def _summary_fields(job: JobRecord) -> dict[str, object]:
    return {
        "id": job.id, "state": job.state.value, "pages_done": job.pages_done, "pages_total": job.pages_total,
        "created_at": iso_time(job.created_at), "updated_at": iso_time(job.updated_at),
        "finished_at": iso_time(job.finished_at) if job.finished_at is not None else None,
        "error": job.error, "formats": list(job.options.formats),
        "files": [FileView(filename=f.filename, kind=f.kind, num_pages=f.num_pages,
                           pages_selected=len(f.page_indices)) for f in job.files],
    }
