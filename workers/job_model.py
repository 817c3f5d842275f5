"""What the job store keeps: jobs, the files in them, and their pages.

A job holds one or more uploaded files; its pages are (file_index, page_index)
pairs, 0-based, for the pages selected in each file. States only move forward:

    job:   queued -> running -> done | failed        (any non-final state -> cancelled)
    page:  queued -> running -> done | failed        (queued/running -> cancelled)

A page that is `running` when its worker dies stays `running` until the task
is redelivered, which may run it again: `running` is not a lock, only progress.
A run that finds its page still `running` counts the one before it as lost;
after `page_max_lost_runs` lost runs the page is failed instead of run again.
A `done` page has a result; its regions say `ok`, `fallback` or `failed`, and
the counts here summarise them. A page is `failed` when nothing on it could be
read (or it could not be processed at all); `reason` says why in a sentence.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from workers.extraction_schema import ExtractionSchema


class JobState(StrEnum):
    """Where a job, or one of its pages, stands: both move through these states (above), and
    the value is what the job store keeps and the API returns."""
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        return self in (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


PageState = JobState   # the same type, named for the page's field it fills


@dataclass(frozen=True)
class JobFile:
    filename: str                   # as sent; shown back, never used as a path
    kind: str                       # vision DocumentKind value: pdf, png, jpeg, tiff
    num_pages: int                  # pages in the document
    sha256: str
    page_indices: tuple[int, ...]   # 0-based pages selected for this job

    def to_dict(self) -> dict[str, Any]:
        return {"filename": self.filename, "kind": self.kind, "num_pages": self.num_pages,
                "sha256": self.sha256, "page_indices": list(self.page_indices)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobFile:
        return cls(data["filename"], data["kind"], int(data["num_pages"]), data["sha256"],
                   tuple(int(i) for i in data["page_indices"]))


@dataclass(frozen=True)
class JobOptions:
    formats: tuple[str, ...]
    dpi: float | None = None        # None: the service's render DPI
    pages: str | None = None        # the selection as sent, e.g. "1-5,8"
    extraction: ExtractionSchema | None = None   # fields to extract into extraction.json, checked at submit
    text_layer: str = "auto"        # vision.text_layer.TextLayerMode: "auto" takes a PDF page's own text when it passes
                                    # its checks, "never" always recognises, "verify" recognises it with that text as
                                    # the model's draft
    keep_furniture: bool = False    # Markdown and text keep running headers, footers, page numbers, line numbers
                                    # and margin notes (workers.furniture); the JSON always has them, by role
    callback_url: str | None = None  # where the job's webhook events go (workers/webhooks.py), checked at submit
    languages: str = "detect"       # "detect" (script per page, language of a Latin page from its words) or Tesseract
                                    # codes joined by '+' ("pol+eng"), checked against the installed packs at submit

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"formats": list(self.formats), "dpi": self.dpi, "pages": self.pages,
                                "text_layer": self.text_layer, "keep_furniture": self.keep_furniture}
        if self.extraction is not None:
            data["extraction"] = self.extraction.to_dict()
        if self.callback_url is not None:
            data["callback_url"] = self.callback_url
        data["languages"] = self.languages
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobOptions:
        extraction = data.get("extraction")
        # A job stored before text_layer existed loads with the default.
        return cls(tuple(data["formats"]), data.get("dpi"), data.get("pages"),
                   ExtractionSchema.from_dict(extraction) if extraction else None, data.get("text_layer", "auto"),
                   bool(data.get("keep_furniture", False)), data.get("callback_url"),
                   data.get("languages", "detect"))


@dataclass(frozen=True)
class PageRecord:
    file_index: int
    page_index: int
    state: PageState
    reason: str | None = None
    attempts: int = 0
    regions_ok: int = 0
    regions_fallback: int = 0
    regions_failed: int = 0
    lost_runs: int = 0              # runs that ended without recording the page (their worker died)

    @property
    def page_number(self) -> int:
        return self.page_index + 1


@dataclass(frozen=True)
class JobRecord:
    id: str
    owner: str
    state: JobState
    created_at: float
    updated_at: float
    options: JobOptions
    files: tuple[JobFile, ...]
    pages: tuple[PageRecord, ...] = field(default=())
    finished_at: float | None = None
    error: str | None = None

    @property
    def pages_total(self) -> int:
        return len(self.pages)

    @property
    def pages_done(self) -> int:
        """Pages finished either way (done or failed): the progress figure."""
        return sum(page.state in (PageState.DONE, PageState.FAILED) for page in self.pages)

    @property
    def pages_failed(self) -> int:
        return sum(page.state is PageState.FAILED for page in self.pages)


@dataclass(frozen=True)
class JobListing:
    """A job as the job list shows it: its fields and page counts, without its pages
    (a list polled every second must not read every page, let alone page results)."""
    id: str
    owner: str
    state: JobState
    created_at: float
    updated_at: float
    options: JobOptions
    files: tuple[JobFile, ...]
    pages_total: int
    pages_done: int
    pages_failed: int
    finished_at: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class PageClaim:
    """A page task's hold on its page. `lost_runs`: earlier runs that ended without recording
    the page (their worker process died), which bounds how often a page that kills its worker
    is run again."""
    lost_runs: int


@dataclass(frozen=True)
class PageDispatch:
    """One page sent to the broker; `dispatch` numbers the send, so a task from an earlier,
    superseded send finds its number stale and does nothing."""
    job_id: str
    file_index: int
    page_index: int
    dispatch: int
