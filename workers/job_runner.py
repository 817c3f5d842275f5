"""What the Celery tasks do, as plain methods: start a job, run a page, finish a job.

| kept here                                        | how                                               |
|--------------------------------------------------|---------------------------------------------------|
| a page done once is never redone                 | `claim_page` refuses final pages; redelivery skips them |
| a page task never fails                          | every ending is recorded: ok, fallback or failed  |
| a page that kills its worker ends                | after `page_max_lost_runs` lost runs it is failed, with its text-layer fallback |
| a cancelled or deleted job gets no more files    | the job is checked before a page starts and before it is saved; files written too late are removed |
| finishing resumes, never restarts                | one finisher at a time (a lease); each output is skipped once written; the PDF join continues its partial file |
| a finished job keeps no per-page PDFs            | they are removed once the job's PDF is written    |
| only temporary recogniser errors are retried     | `RecognizerUnavailableError` escapes before the final attempt, nothing else |
| results are complete before a job says `done`    | files are written first, the state last           |
| a job is never stuck                             | an unreadable upload fails the job with the reason |
| a failed extraction never costs the OCR results  | it runs after they are written; failures go into extraction.json |
"""
from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

from celery.exceptions import SoftTimeLimitExceeded
from PIL import Image

from vision.document import Document, RenderedPage
from vision.limits import InputError
from workers.blob_store import blob_store_for
from workers.data_dir import DataDir, write_atomically
from workers.document_result import build_document_result, render_markdown, render_text
from workers.export_alto import render_alto
from workers.export_hocr import render_hocr
from workers.extraction import SchemaExtractor
from workers.job_model import JobRecord, JobState, PageState
from workers.job_store import JobStore
from workers.page_pipeline import PagePipeline, fallback_page
from workers.page_result import PageResult
from workers.recognizers.base import Recognizer, RecognizerUnavailableError
from workers.recognizers.last_attempt import LastAttempt
from workers.searchable_pdf import BLANK_PAGE_PT, blank_page_pdf, merge_page_files, page_pdf
from workers.settings import HARD_LIMIT_GRACE_S, Settings
from workers.tenant import tenant_scope

logger = logging.getLogger("ocrserve.workers")
FINISH_MARGIN_S = 10   # of the finish task's time limit, kept for writing extraction.json and closing the job


class JobRunner:
    def __init__(self, settings: Settings, recognizer: Recognizer):
        self.settings = settings
        self.data_dir = DataDir(settings.data_dir).ensure()
        self.store = JobStore(settings.job_store_location)
        self.blobs = blob_store_for(settings, self.data_dir)
        self.pipeline = PagePipeline(recognizer, settings.page_threads, word_alignment=settings.word_alignment,
                                     mark_handwriting=settings.mark_handwriting)

    def start_job(self, job_id: str) -> list[tuple[int, int]] | None:
        """Pages still to run, or None when the job is gone, final, or failed to open."""
        job = self.store.get_job(job_id)
        if job is None or job.state.is_final:
            return None
        for file_index, job_file in enumerate(job.files):
            try:
                with Document.open_path(self._upload_path(job, file_index), self.settings.vision_limits()):
                    pass
            except (InputError, OSError) as exc:
                self.store.finish_job(job_id, JobState.FAILED, f"{job_file.filename} cannot be read: {_sentence(exc)}")
                return None
        self.store.mark_job_running(job_id)
        return self.store.pending_pages(job_id)

    def run_page(self, job_id: str, file_index: int, page_index: int, final_attempt: bool,
                 dispatch: int | None = None) -> str:
        """Process one page and record it; returns the page's state ("skipped" when it is not
        this task's to run). Raises `RecognizerUnavailableError` (only) when the task should retry."""
        claim = self.store.claim_page(job_id, file_index, page_index, dispatch)
        job = self.store.get_job(job_id) if claim is not None else None
        if claim is None or job is None:
            return "skipped"
        if claim.lost_runs >= self.settings.page_max_lost_runs:
            return self._give_up_lost_page(job, file_index, page_index, claim.lost_runs)
        dpi = job.options.dpi
        pdf_path = self._page_pdf_path(job_id, file_index, page_index)
        try:
            with Document.open_path(self._upload_path(job, file_index), self.settings.vision_limits()) as document:
                result, image = self._process(document, job, file_index, page_index, dpi, final_attempt)
                if "pdf" in job.options.formats and self.store.is_active(job_id):
                    data = page_pdf(image, result) if image is not None else blank_page_pdf(
                        *document.page_size_points(page_index))
                    write_atomically(pdf_path, data)
                    self.blobs.publish(pdf_path)
                for region in result.regions:   # a figure the Markdown links to, for every host to serve
                    if region.figure:
                        self.blobs.publish(self.data_dir.figures_dir(job_id) / region.figure)
        except (InputError, OSError) as exc:
            reason = f"the page could not be read: {_sentence(exc)}"
            self._save(job_id, file_index, page_index, PageState.FAILED, reason, None)
            return PageState.FAILED.value
        failed = result.nothing_read or (not result.regions and result.reason is not None)
        state = PageState.FAILED if failed else PageState.DONE
        if not self._save(job_id, file_index, page_index, state, result.reason, result.to_dict(),
                          result.region_counts):
            return "skipped"
        return state.value

    def give_up_page(self, job_id: str, file_index: int, page_index: int, reason: str) -> None:
        """Record a page as failed when processing it broke outside the pipeline's own handling."""
        self._save(job_id, file_index, page_index, PageState.FAILED, reason, None)

    def _give_up_lost_page(self, job: JobRecord, file_index: int, page_index: int, lost_runs: int) -> str:
        """A page whose runs keep dying with their worker: failed, with the PDF text layer as its
        text where it has one. If that fallback itself killed a worker, without it."""
        reason = (f"the worker process died {lost_runs} times while reading this page (a crash, or killed "
                  f"at the page's time limit), so it was not tried again")
        result, size = None, BLANK_PAGE_PT
        if lost_runs == self.settings.page_max_lost_runs:
            try:
                with Document.open_path(self._upload_path(job, file_index), self.settings.vision_limits()) as document:
                    size = document.page_size_points(page_index)
                    result = fallback_page(document, file_index, page_index,
                                           job.options.dpi or self.settings.render_dpi, reason)
            except Exception:   # nothing more can be done for this page; it is recorded as failed
                logger.exception("no fallback for page %d of file %d in job %s", page_index + 1, file_index + 1,
                                 job.id)
        if "pdf" in job.options.formats and self.store.is_active(job.id):
            blank = self._page_pdf_path(job.id, file_index, page_index)
            write_atomically(blank, blank_page_pdf(*size))
            self.blobs.publish(blank)
        logger.warning("page %d of file %d in job %s: %s", page_index + 1, file_index + 1, job.id, reason)
        if result is None:
            self._save(job.id, file_index, page_index, PageState.FAILED, reason, None)
        else:
            self._save(job.id, file_index, page_index, PageState.FAILED, result.reason, result.to_dict(),
                       result.region_counts)
        return PageState.FAILED.value

    def _save(self, job_id: str, file_index: int, page_index: int, state: PageState, reason: str | None,
              result: dict | None, region_counts: tuple[int, int, int] = (0, 0, 0)) -> bool:
        """Record the page; when its job was cancelled or deleted meanwhile, remove what the page wrote."""
        if self.store.save_page(job_id, file_index, page_index, state, reason, result, region_counts):
            return True
        if self.store.get_job(job_id) is None:   # deleted: everything it had is gone, and stays gone
            self.data_dir.remove_job_files(job_id)
            self.blobs.remove_job(job_id)
        else:
            self._page_pdf_path(job_id, file_index, page_index).unlink(missing_ok=True)
        return False

    def rescue_job(self, job_id: str) -> bool:
        """Fail the pages no task can still be running (killed by their hard time limit), then
        finish; False while others may still run. (The task of the same name serves chords sent
        before pages were dispatched one quota at a time; the recovery sweep does this now.)"""
        limit_s = self.settings.page_time_limit_s + HARD_LIMIT_GRACE_S
        self.store.fail_stale_pages(job_id, limit_s, f"the page task was stopped after {limit_s} s (hard time limit)")
        return self.finish_job(job_id)

    def finish_job(self, job_id: str) -> bool:
        """Write the results and close the job; False while pages are still pending. One
        finisher at a time: while another holds the job's lease this returns True at once.
        Steps already done by an earlier, interrupted finisher are not done again."""
        started = time.monotonic()
        job = self.store.get_job(job_id)
        if job is None or job.state.is_final:
            return True
        if self.store.has_pending_pages(job_id):
            return False
        if not self.store.claim_finish(job_id, self.settings.job_time_limit_s + HARD_LIMIT_GRACE_S + FINISH_MARGIN_S):
            return True
        try:
            result = build_document_result(job, self.store.page_results(job_id))
            self._write_results(job, result)
            extraction_path = self.data_dir.result_path(job_id, "extraction")
            if job.options.extraction is not None and job.pages_failed < job.pages_total \
                    and not self.blobs.exists(extraction_path):
                # What is left of the task's soft time limit, less a margin to write the file and close the job.
                budget_s = self.settings.job_time_limit_s - FINISH_MARGIN_S - (time.monotonic() - started)
                self._write_extraction(job, result, max(budget_s, 1.0))
            if job.pages_failed == job.pages_total:
                first_reason = next((p.reason for p in job.pages if p.reason), "no page could be read")
                self.store.finish_job(job_id, JobState.FAILED, f"no page could be read: {first_reason}")
            else:
                self.store.finish_job(job_id, JobState.DONE)
        finally:
            self.store.release_finish(job_id)
        shutil.rmtree(self._page_pdf_dir(job_id), ignore_errors=True)
        self.blobs.remove_folder(self._page_pdf_dir(job_id))   # joined into result.pdf: not needed
        if self.blobs.shared:   # every output is in the shared store: this host's copies were a cache
            self.data_dir.remove_job_files(job_id)
        return True

    def fail_unfinishable(self, job_id: str, reason: str) -> None:
        """Close a job whose results could not be written in the tries it was given."""
        if self.store.finish_job(job_id, JobState.FAILED, reason):
            shutil.rmtree(self._page_pdf_dir(job_id), ignore_errors=True)
            self.blobs.remove_folder(self._page_pdf_dir(job_id))

    def _process(self, document: Document, job: JobRecord, file_index: int, page_index: int, dpi: float | None,
                 final_attempt: bool) -> tuple[PageResult, Image.Image | None]:
        rendered: RenderedPage | None = None
        fallback_dpi = dpi or self.settings.render_dpi
        try:
            rendered = document.render_page(page_index, dpi)
            # Retries are this task's: before the last attempt an unreachable recogniser raises out of
            # the pipeline (the page task retries); on the last, every crop counts as failed.
            recognizer = LastAttempt(self.pipeline.recognizer) if final_attempt else None
            with tenant_scope(job.owner):   # the engine's prefix cache is kept apart per owner
                result = self.pipeline.process(document, rendered, file_index, self.data_dir.figures_dir(job.id),
                                               text_layer=job.options.text_layer, recognizer=recognizer,
                                               languages=job.options.languages)
        except RecognizerUnavailableError:
            raise
        except InputError as exc:
            result = fallback_page(document, file_index, page_index, fallback_dpi, _sentence(exc))
        except SoftTimeLimitExceeded:
            reason = f"the page took longer than its {self.settings.page_time_limit_s} s time limit"
            result = fallback_page(document, file_index, page_index, rendered.dpi if rendered else fallback_dpi, reason)
        except Exception as exc:   # a bug or a broken page must not crash the worker or stall the chord
            logger.exception("page %d of file %d in job %s failed", page_index + 1, file_index + 1, job.id)
            result = fallback_page(document, file_index, page_index, rendered.dpi if rendered else fallback_dpi,
                                   f"internal error while processing the page ({type(exc).__name__})")
        return result, rendered.image if rendered is not None else None

    def _write_results(self, job: JobRecord, result: dict) -> None:
        """Each output once: one already written by an interrupted finisher is kept."""
        formats = set(job.options.formats) | {"json"}
        pdf_path = self.data_dir.result_path(job.id, "pdf")
        if "pdf" in formats and not self.blobs.exists(pdf_path):
            page_pdfs = [self._page_pdf_path(job.id, page.file_index, page.page_index) for page in job.pages]
            for path in page_pdfs:   # afresh: a page run again elsewhere may have written its PDF again
                self.blobs.fetch(path, refresh=self.blobs.shared)
            merge_page_files(page_pdfs, pdf_path)
            self.blobs.publish(pdf_path)
        keep = job.options.keep_furniture
        writers = {"md": lambda: render_markdown(result, keep_furniture=keep).encode(),
                   "txt": lambda: render_text(result, keep_furniture=keep).encode(),
                   "json": lambda: json.dumps(result, ensure_ascii=False, indent=1).encode(),
                   "hocr": lambda: render_hocr(result).encode(), "alto": lambda: render_alto(result).encode()}
        for fmt, render in writers.items():
            path = self.data_dir.result_path(job.id, fmt)
            if fmt in formats and not self.blobs.exists(path):
                write_atomically(path, render())
                self.blobs.publish(path)

    def _write_extraction(self, job: JobRecord, result: dict, budget_s: float) -> None:
        extractor = SchemaExtractor(self.settings)
        upload_paths = [self._upload_path(job, i) for i in range(len(job.files))]
        try:
            with tenant_scope(job.owner):
                extraction = extractor.extract(job, result, upload_paths, budget_s)
        except SoftTimeLimitExceeded:
            limit_s = self.settings.job_time_limit_s
            extraction = extractor.failed(job, f"the extraction was stopped by the job's {limit_s} s time limit")
        except Exception as exc:   # the OCR results are written: a bug here must not fail the job
            logger.exception("extraction for job %s failed", job.id)
            extraction = extractor.failed(job, f"internal error while extracting ({type(exc).__name__})")
        path = self.data_dir.result_path(job.id, "extraction")
        write_atomically(path, json.dumps(extraction, ensure_ascii=False, indent=1).encode())
        self.blobs.publish(path)

    def _upload_path(self, job: JobRecord, file_index: int) -> Path:
        """The upload, copied here from the shared blob store first when this host lacks it."""
        path = self.data_dir.upload_path(job.id, file_index, job.files[file_index].kind)
        self.blobs.fetch(path)
        return path

    def _page_pdf_dir(self, job_id: str) -> Path:
        return self.data_dir.results_dir(job_id) / "pages"

    def _page_pdf_path(self, job_id: str, file_index: int, page_index: int) -> Path:
        return self._page_pdf_dir(job_id) / f"{file_index}-{page_index}.pdf"


def _sentence(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text[:1].lower() + text[1:] if not text[:2].isupper() else text
