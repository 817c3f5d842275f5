"""Jobs as the API and the batch CLI see them: submit uploads, read state and
results, cancel. Everything a user sends is checked here, once, before any
heavy work: options, byte cap, file type from magic bytes, encryption, damage,
page count, page selection (`vision.Document.open` does the document checks
without rendering a page). Office, HTML and EPUB documents are converted to
PDF first (`vision.office`, under its time and size budget), and that PDF is
what the job reads. A refused upload raises an `InputError` whose
message can be shown to the user as it is; nothing is stored for it.

Tasks are sent by name, so this module never loads the pipeline.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from celery import Celery
from kombu.exceptions import KombuError

from vision.document import Document
from vision.formats import PDF_HEADER_WINDOW, DocumentKind, sniff_kind
from vision.limits import DocumentTooLargeError, InputError, InvalidOptionError, PageSelectionError, VisionLimits
from vision.office import convert_to_pdf
from vision.pages import parse_page_selection
from vision.text_layer import TEXT_LAYER_MODES
from workers.celery_app import PROCESS_JOB, build_celery_app
from workers.blob_store import blob_store_for, prune_local_copies
from workers.data_dir import DataDir, move_into_place, write_atomically
from workers.extraction_schema import ExtractionSchema
from workers.job_model import JobFile, JobListing, JobOptions, JobRecord, JobState
from workers.job_store import JobStore
from workers.recognizers.languages import LanguagesError, parse_languages
from workers.settings import ALL_FORMATS, DEFAULT_FORMATS, Settings
from workers.webhook_urls import WebhookAllowlist, check_callback_url


class QueueUnavailableError(RuntimeError):
    """The broker could not be reached; the job was recorded as failed."""


class TooManyFilesError(InputError):
    code = "too_many_files"


class TooManyPagesError(DocumentTooLargeError):
    """More pages in one job than `max_pages_per_job` (413, like a document over its page cap)."""


@dataclass(frozen=True)
class Upload:
    """One document: its bytes, or (`received`) a file the API streamed into the data directory's
    incoming area, which `submit` moves into the job (the caller deletes it if `submit` refuses).
    An office, HTML or EPUB document is read as the PDF made from it (`converted`): that PDF's
    upload keeps the document as its `original`, stored beside it."""
    filename: str
    data: bytes | None = None
    received: Path | None = None
    original: Upload | None = None
    original_kind: str | None = None

    def open(self, limits: VisionLimits) -> Document:
        if self.received is not None:
            return Document.open_path(self.received, limits, filename=self.filename)
        assert self.data is not None
        return Document.open(self.data, self.filename, limits)

    def converted(self, limits: VisionLimits, work_dir: Path) -> Upload:
        """The upload of the PDF made from this document, in `work_dir` (the caller deletes it if
        no job takes it); this upload itself when it is a PDF or an image (or refused: `open` says why)."""
        kind = _kind_to_convert(self, limits)
        if kind is None:
            return self
        if self.received is not None:
            pdf = convert_to_pdf(self.received, kind, work_dir, limits)
        else:
            fd, name = tempfile.mkstemp(dir=work_dir, prefix="upload-", suffix=f".{kind.value}")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(self.data or b"")
                pdf = convert_to_pdf(Path(name), kind, work_dir, limits)
            finally:
                os.unlink(name)
        return Upload(self.filename, received=pdf, original=self, original_kind=kind.value)

    def sha256(self) -> str:
        if self.original is not None:   # the document the user sent, not the PDF made from it
            return self.original.sha256()
        if self.received is None:
            return hashlib.sha256(self.data or b"").hexdigest()
        with open(self.received, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()

    def store(self, path: Path) -> None:
        if self.received is not None:
            move_into_place(self.received, path)
        else:
            write_atomically(path, self.data or b"")


def _kind_to_convert(upload: Upload, limits: VisionLimits) -> DocumentKind | None:
    """The kind of a document read through a converter; None for anything else, whose own checks
    (size, type, damage) run when it is opened."""
    if upload.received is not None:
        size = upload.received.stat().st_size
        with open(upload.received, "rb") as f:
            head = f.read(PDF_HEADER_WINDOW)
    else:
        head = upload.data or b""
        size = len(head)
    if size == 0 or size > limits.max_upload_bytes:
        return None
    kind = sniff_kind(head, upload.filename, source=upload.received, limits=limits)
    return kind if kind.is_converted else None


class JobService:
    def __init__(self, settings: Settings, celery_app: Celery | None = None, migrate_schema: bool = True):
        self.settings = settings
        self.data_dir = DataDir(settings.data_dir).ensure()
        self.store = JobStore(settings.job_store_location, migrate_schema)
        self.blobs = blob_store_for(settings, self.data_dir)
        self._celery_app = celery_app
        # Jobs whose uploads are being stored before their row exists: a sweep of this host's
        # copies (`prune_deleted_jobs`) must not take them for deleted jobs.
        self._submitting: set[str] = set()
        self._submitting_lock = threading.Lock()

    @property
    def celery_app(self) -> Celery:
        if self._celery_app is None:
            self._celery_app = build_celery_app(self.settings)
        return self._celery_app

    def submit(self, owner: str, uploads: Sequence[Upload], pages: str | None = None,
               formats: str | Sequence[str] | None = None, dpi: float | None = None,
               clamp_pages: bool = False, extraction: ExtractionSchema | None = None,
               text_layer: str | None = None, keep_furniture: bool = False,
               callback_url: str | None = None, languages: str | None = None) -> JobRecord:
        """Check and store the uploads as one job and queue it. With `clamp_pages`
        (batch runs over documents of mixed length) selected pages past a
        document's end are left out instead of refused. `extraction`, a schema
        already checked, adds extraction.json to the job's results. `text_layer`
        is auto, never or verify (None: the service's default, OCRSERVE_TEXT_LAYER). `keep_furniture`
        keeps page furniture (headers, footers, page numbers...) in the Markdown and text. `callback_url`
        gets the job's webhook events, if the deployment's rules let it be called (workers/webhook_urls.py).
        `languages` is "detect" (None too) or Tesseract codes such as "pol+eng", each one installed here."""
        if callback_url is not None and callback_url.strip():
            check_callback_url(callback_url, WebhookAllowlist.parse(self.settings.webhook_allowed_hosts))
            callback_url = callback_url.strip()
        else:
            callback_url = None
        options = JobOptions(parse_formats(formats), self._checked_dpi(dpi), pages.strip() if pages else None,
                             extraction, parse_text_layer(text_layer, self.settings.text_layer),
                             keep_furniture=keep_furniture, callback_url=callback_url,
                             languages=self._checked_languages(languages))
        if not uploads:
            raise InputError("no file was uploaded")
        if len(uploads) > self.settings.max_files_per_job:
            raise TooManyFilesError(f"{len(uploads)} files in one job; the limit is {self.settings.max_files_per_job}")
        limits = self.settings.vision_limits()
        converted: list[Upload] = []
        try:
            # Office, HTML and EPUB documents become PDFs now (in the caller's thread: the API runs
            # submit off its event loop), so their pages are counted and a bad one refused at once.
            for upload in uploads:
                converted.append(upload.converted(limits, self.data_dir.incoming_dir))
            return self._submit_checked(owner, converted, options, limits, clamp_pages)
        finally:
            for upload in converted:   # a PDF the job took was moved away already
                if upload.original is not None and upload.received is not None:
                    upload.received.unlink(missing_ok=True)

    def _submit_checked(self, owner: str, uploads: Sequence[Upload], options: JobOptions, limits: VisionLimits,
                        clamp_pages: bool) -> JobRecord:
        files = []
        for upload in uploads:
            with upload.open(limits) as document:
                page_indices = _select_pages(document, options.pages, clamp_pages)
                _check_pages_per_job(sum(len(f.page_indices) for f in files) + len(page_indices),
                                     self.settings.max_pages_per_job)
                files.append(JobFile(_display_name(upload.filename), document.kind.value, document.num_pages,
                                     upload.sha256(), tuple(page_indices)))
        job_id = self.store.new_job_id()
        with self._submitting_lock:
            self._submitting.add(job_id)
        try:
            for file_index, (upload, job_file) in enumerate(zip(uploads, files)):
                path = self.data_dir.upload_path(job_id, file_index, job_file.kind)
                upload.store(path)
                self.blobs.publish(path)
                if upload.original is not None:   # kept for the record: N.docx beside the N.pdf read
                    original = self.data_dir.upload_path(job_id, file_index, upload.original_kind or "original")
                    upload.original.store(original)
                    self.blobs.publish(original)
            job = self.store.create_job(job_id, owner, files, options)
        except BaseException:   # no job: nothing may stay behind under its id
            self.remove_job_files(job_id)
            raise
        finally:
            with self._submitting_lock:
                self._submitting.discard(job_id)
        try:
            self.celery_app.send_task(PROCESS_JOB, args=[job_id])
        except (KombuError, OSError) as exc:
            self.store.finish_job(job_id, JobState.FAILED, "the job queue is unreachable; submit the job again later")
            raise QueueUnavailableError(f"the job queue is unreachable ({type(exc).__name__})") from exc
        self.store.mark_job_sent(job_id)   # a job left unsent by a crash is sent by the workers' recovery sweep
        return job

    def get(self, owner: str, job_id: str) -> JobRecord | None:
        """The job if it exists and belongs to `owner` (others' jobs look absent)."""
        job = self.store.get_job(job_id) if _looks_like_job_id(job_id) else None
        return job if job is not None and job.owner == owner else None

    def list(self, owner: str, limit: int, offset: int = 0) -> list[JobListing]:
        """Newest first, with page counts but not the pages (the web page polls this every second)."""
        return self.store.list_jobs(owner, min(limit, self.settings.max_jobs_listed), offset)

    def cancel(self, owner: str, job_id: str) -> JobRecord | None:
        job = self.get(owner, job_id)
        if job is None:
            return None
        if self.store.cancel_job(job_id):   # its page tasks skip it from now on; its page PDFs are not needed
            shutil.rmtree(self.data_dir.results_dir(job_id) / "pages", ignore_errors=True)
            self.blobs.remove_folder(self.data_dir.results_dir(job_id) / "pages")
        return self.store.get_job(job_id)

    def result_path(self, job: JobRecord, fmt: str) -> Path:
        """A local copy of the job's output (fetched from the blob store when it is shared)."""
        path = self.data_dir.result_path(job.id, fmt)
        self.blobs.fetch(path)
        return path

    def stored_result(self, job: JobRecord, fmt: str) -> Path:
        """Where the output is, to stream with `self.blobs` (nothing copied here)."""
        return self.data_dir.result_path(job.id, fmt)

    def read_result(self, job: JobRecord, fmt: str) -> bytes | None:
        """A small output (extraction.json) whole, from wherever it is stored; None when absent."""
        chunks = self.blobs.stream(self.data_dir.result_path(job.id, fmt))
        return None if chunks is None else b"".join(chunks)

    def figure_path(self, job: JobRecord, name: str) -> Path | None:
        folder = self.data_dir.figures_dir(job.id)
        path = (folder / name).resolve()
        return path if path.parent == folder and self.blobs.exists(path) else None

    def prune_deleted_jobs(self) -> int:
        """With a shared blob store, drop this host's copies of jobs the store no longer has
        (deleted by retention on another host, or by their owner); returns how many."""
        def gone(job_ids: list[str]) -> list[str]:
            with self._submitting_lock:
                submitting = set(self._submitting)
            existing = self.store.existing_job_ids(job_ids)
            return [job_id for job_id in job_ids if job_id not in existing and job_id not in submitting]
        return prune_local_copies(self.blobs, gone)

    def remove_job_files(self, job_id: str) -> None:
        """Everything stored for the job: this host's files and the shared store's."""
        self.data_dir.remove_job_files(job_id)
        self.blobs.remove_job(job_id)

    def _checked_dpi(self, dpi: float | None) -> float | None:
        return None if dpi is None else self.settings.vision_limits().check_dpi(dpi)

    def _checked_languages(self, languages: str | None) -> str:
        return checked_languages(languages, self.settings.tesseract_cmd)


def parse_formats(formats: str | Sequence[str] | None) -> tuple[str, ...]:
    """'md,json' or ['md', 'json'] -> ('md', 'json'); None or blank -> md, json, txt and pdf
    (hOCR and ALTO only when named)."""
    if formats is None:
        return DEFAULT_FORMATS
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    chosen = [item.strip().lower() for item in items if item.strip()]
    if not chosen:
        return DEFAULT_FORMATS
    unknown = [item for item in chosen if item not in ALL_FORMATS]
    if unknown:
        raise InvalidOptionError(f"unknown format {unknown[0][:20]!r}; choose from {', '.join(ALL_FORMATS)}")
    return tuple(fmt for fmt in ALL_FORMATS if fmt in chosen)


def checked_languages(value: str | None, tesseract_cmd: str) -> str:
    """The `languages` option as workers.recognizers.languages spells it; a bad one refused here."""
    try:
        return parse_languages(value, tesseract_cmd)
    except LanguagesError as exc:
        raise InvalidOptionError(str(exc)) from None


def parse_text_layer(mode: str | None, default: str) -> str:
    """'auto', 'never' or 'verify' (any case); None or blank -> `default`."""
    if mode is None or not mode.strip():
        return default
    chosen = mode.strip().lower()
    if chosen not in TEXT_LAYER_MODES:
        raise InvalidOptionError(f"unknown text_layer {mode.strip()[:20]!r}; choose auto (take a PDF page's own "
                                 "text when it passes checks), never (always recognise) or verify (recognise, "
                                 "with the text layer as the model's draft)")
    return chosen


def parse_flag(name: str, value: str | None) -> bool:
    """A form's yes/no option: true/false, yes/no, 1/0, on/off (any case); None or blank -> False."""
    if value is None or not value.strip():
        return False
    chosen = value.strip().lower()
    if chosen in ("true", "yes", "1", "on"):
        return True
    if chosen in ("false", "no", "0", "off"):
        return False
    raise InvalidOptionError(f"{name} must be true or false, got {value.strip()[:20]!r}")


def _select_pages(document: Document, selection: str | None, clamp: bool) -> list[int]:
    if not clamp:
        return document.select_pages(selection)
    wanted = parse_page_selection(selection, document.limits.max_pages, document.limits)
    kept = [index for index in wanted if index < document.num_pages]
    if not kept:
        raise PageSelectionError(f"none of pages {selection!r} exist: the document has {document.num_pages} "
                                 f"page{'s' * (document.num_pages != 1)}")
    return kept


def _check_pages_per_job(num_pages: int, limit: int) -> None:
    if num_pages > limit:
        raise TooManyPagesError(f"the job has more than {limit:,} pages, the limit for one job; "
                                "send the documents (or page ranges of them) as several jobs")


def _display_name(filename: str) -> str:
    name = filename.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch if ch.isprintable() else "?" for ch in name).strip()
    return name[:200] or "upload"


def _looks_like_job_id(job_id: str) -> bool:
    return len(job_id) == 32 and all(ch in "0123456789abcdef" for ch in job_id)
