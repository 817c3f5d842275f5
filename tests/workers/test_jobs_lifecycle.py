"""Jobs that end, in-process (`JobRunner` called as the tasks call it): cancel and
delete stop a running page from writing, finishing resumes after a time limit
instead of starting over, per-page PDFs go once joined, the page cap refuses a
job at submission, and the job list never reads page results.
"""
from __future__ import annotations

import sqlite3
from contextlib import contextmanager

import pymupdf
import pytest
from celery.exceptions import SoftTimeLimitExceeded

import ocr_samples as samples
from workers import searchable_pdf
from workers.job_model import JobFile, JobOptions, JobState, PageState
from workers.job_runner import JobRunner
from workers.job_service import JobService, TooManyPagesError, Upload
from workers.job_store import JobStore
from workers.recognizers.tesseract import TesseractRecognizer
from workers.settings import Settings


def _settings(tmp_path, **overrides) -> Settings:
    return Settings(data_dir=tmp_path, recognizer="tesseract", render_dpi=100, vision_num_threads=1, **overrides)


class InterruptingTesseract(TesseractRecognizer):
    """Tesseract that runs `during()` (a cancel, a delete) while the page is being read."""

    def __init__(self, during) -> None:
        super().__init__()
        self.during = during

    def recognize(self, items):
        self.during()
        return super().recognize(items)


def _cancel_and_delete(service: JobService, job_id: str, delete: bool):
    def during() -> None:
        service.store.cancel_job(job_id)
        if delete:   # what DELETE /v1/jobs/{id}/record does
            assert service.store.delete_job(job_id, "tester")
            service.data_dir.remove_job_files(job_id)
    return during


@pytest.mark.parametrize("delete", [False, True], ids=["cancelled", "deleted"])
def test_a_page_running_when_its_job_is_cancelled_or_deleted_records_and_leaves_nothing(tmp_path, delete):
    settings = _settings(tmp_path)
    service = JobService(settings)
    job = service.submit("tester", [Upload("figure.pdf", samples.figure_pdf())], text_layer="never")
    runner = JobRunner(settings, InterruptingTesseract(_cancel_and_delete(service, job.id, delete)))
    [(file_index, page_index)] = runner.start_job(job.id)
    assert runner.run_page(job.id, file_index, page_index, final_attempt=True) == "skipped"
    results_dir = tmp_path / "results" / job.id
    if delete:
        assert service.store.get_job(job.id) is None
        assert not results_dir.exists(), "a deleted job's page wrote files again"
    else:
        page = service.store.get_job(job.id).pages[0]
        assert page.state is PageState.CANCELLED
        assert not (results_dir / "pages").exists() or not any((results_dir / "pages").iterdir())
    assert runner.finish_job(job.id), "nothing is left to finish"


def test_a_page_of_a_cancelled_job_does_not_start(tmp_path):
    settings = _settings(tmp_path)
    service = JobService(settings)
    job = service.submit("tester", [Upload("report.pdf", samples.multi_page_pdf(2))])
    runner = JobRunner(settings, TesseractRecognizer())
    runner.start_job(job.id)
    service.cancel("tester", job.id)
    assert runner.run_page(job.id, 0, 0, final_attempt=True) == "skipped"
    assert service.store.get_job(job.id).pages[0].attempts == 0


def test_a_job_over_the_page_cap_is_refused_at_submission(tmp_path):
    service = JobService(_settings(tmp_path, max_pages_per_job=5))
    with pytest.raises(TooManyPagesError, match="more than 5 pages"):
        service.submit("tester", [Upload("a.pdf", samples.multi_page_pdf(3)),
                                  Upload("b.pdf", samples.multi_page_pdf(3))])
    assert service.list("tester", 10) == [], "nothing is stored for a refused job"
    assert service.submit("tester", [Upload("a.pdf", samples.multi_page_pdf(5))]).pages_total == 5


NUM_PAGES = 7


def _job_with_page_pdfs(runner: JobRunner) -> str:
    """A job whose pages are all recorded, each with its own one-page PDF naming it."""
    job_id = runner.store.new_job_id()
    runner.store.create_job(job_id, "tester", [JobFile("a.pdf", "pdf", NUM_PAGES, "0" * 64, tuple(range(NUM_PAGES)))],
                            JobOptions(("md", "json", "pdf")))
    runner.store.mark_job_running(job_id)
    for page_index in range(NUM_PAGES):
        doc = pymupdf.open()
        doc.new_page().insert_text((72, 72), f"page-{page_index}")
        path = runner._page_pdf_path(job_id, 0, page_index)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc.save(path)
        runner.store.save_page(job_id, 0, page_index, PageState.DONE, None,
                               {"file_index": 0, "page": page_index + 1, "width": 10, "height": 10, "dpi": 72,
                                "regions": []})
    return job_id


def test_finishing_cut_short_by_its_time_limit_goes_on_where_it_stopped(tmp_path, monkeypatch):
    runner = JobRunner(_settings(tmp_path), TesseractRecognizer())
    job_id = _job_with_page_pdfs(runner)
    monkeypatch.setattr(searchable_pdf.merge_page_files, "__defaults__", (2,))
    appended = []
    real_append = searchable_pdf._append_page

    def append_until_the_limit(doc, path):
        if len(appended) == 5:   # the soft time limit fires in the third batch
            raise SoftTimeLimitExceeded()
        appended.append(path.name)
        real_append(doc, path)

    monkeypatch.setattr(searchable_pdf, "_append_page", append_until_the_limit)
    with pytest.raises(SoftTimeLimitExceeded):
        runner.finish_job(job_id)
    assert runner.store.get_job(job_id).state is JobState.RUNNING
    assert not runner.data_dir.result_path(job_id, "pdf").exists()

    monkeypatch.setattr(searchable_pdf, "_append_page", real_append)
    for page_index in range(4):   # the pages already joined: a join that started over would find them gone
        runner._page_pdf_path(job_id, 0, page_index).unlink()
    assert runner.finish_job(job_id), "the next try takes the lease the interrupted one gave back"
    job = runner.store.get_job(job_id)
    assert job.state is JobState.DONE
    with pymupdf.open(runner.data_dir.result_path(job_id, "pdf")) as pdf:
        assert [pdf[n].get_text().strip() for n in range(pdf.page_count)] == [f"page-{n}" for n in range(NUM_PAGES)]
    assert runner.data_dir.result_path(job_id, "md").exists() and runner.data_dir.result_path(job_id, "json").exists()
    assert not (runner.data_dir.results_dir(job_id) / "pages").exists(), "per-page PDFs are removed once joined"


def test_one_finisher_at_a_time(tmp_path):
    runner = JobRunner(_settings(tmp_path), TesseractRecognizer())
    job_id = _job_with_page_pdfs(runner)
    assert runner.store.claim_finish(job_id, lease_s=60)   # another finisher is at work
    assert runner.finish_job(job_id) and runner.store.get_job(job_id).state is JobState.RUNNING
    assert not runner.data_dir.result_path(job_id, "json").exists()
    runner.store.release_finish(job_id)
    assert runner.finish_job(job_id) and runner.store.get_job(job_id).state is JobState.DONE


class ColumnWatchingStore(JobStore):
    """The job store, noting every (table, column) its queries read (SQLite's authorizer)."""

    reads: set[tuple[str, str]] = set()

    @contextmanager
    def _connect(self):
        with super()._connect() as db:
            sqlite_connection = db.connection.driver_connection
            sqlite_connection.set_authorizer(self._note)
            try:
                yield db
            finally:
                sqlite_connection.set_authorizer(None)

    def _note(self, action, table, column, *_):
        if action == sqlite3.SQLITE_READ:
            self.reads.add((table, column))
        return sqlite3.SQLITE_OK


def test_listing_and_viewing_jobs_never_read_page_results(tmp_path):
    store = ColumnWatchingStore(tmp_path / "jobs.sqlite")
    job_id = store.new_job_id()
    store.create_job(job_id, "alice", [JobFile("a.pdf", "pdf", 3, "0" * 64, (0, 1, 2))], JobOptions(("md",)))
    big_result = {"regions": [{"text": "x" * 1000}] * 500}
    store.save_page(job_id, 0, 0, PageState.DONE, None, big_result)
    store.save_page(job_id, 0, 1, PageState.FAILED, "unreadable", big_result)

    store.reads.clear()
    [listed] = store.list_jobs("alice", limit=10)
    assert ("pages", "result") not in store.reads
    assert (listed.id, listed.pages_total, listed.pages_done, listed.pages_failed) == (job_id, 3, 2, 1)
    store.reads.clear()
    job = store.get_job(job_id)
    assert ("pages", "result") not in store.reads, "a job's view shows page states, not their results"
    assert (job.pages_total, job.pages_done, job.pages_failed) == (3, 2, 1)
    assert store.page_results(job_id)[(0, 0)] == big_result and ("pages", "result") in store.reads
