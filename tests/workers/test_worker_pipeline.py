"""The page pipeline and result writing, in-process (`JobRunner` called directly,
as the Celery tasks call it), on real vision models and real Tesseract.

Recognition here is Tesseract: the engine serves only a text model until the
house OCR model lands (the OpenAI path is tested against the real engine in
test_worker_openai_recognizer.py). Jobs go into an embedded broker no worker
reads; this file runs the tasks' code itself.
"""
from __future__ import annotations

import json

import pymupdf
import pytest

import ocr_samples as samples
from service_harness import free_port
from workers.job_model import JobState, PageState
from workers.job_runner import JobRunner
from workers.job_service import JobService, Upload
from workers.openai_recognizer import OpenAIVisionRecognizer
from workers.recognizer import RecognizerUnavailableError
from workers.settings import Settings
from workers.tesseract_recognizer import TesseractRecognizer


def _settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path, recognizer="tesseract", render_dpi=100, vision_num_threads=1)


def _run(runner: JobRunner, job_id: str) -> None:
    for file_index, page_index in runner.start_job(job_id):
        runner.run_page(job_id, file_index, page_index, final_attempt=True)
    assert runner.finish_job(job_id)


@pytest.fixture(scope="module")
def finished_job(tmp_path_factory):
    """A three-page PDF and a two-column page in one job, run to the end."""
    settings = _settings(tmp_path_factory.mktemp("pipeline"))
    service = JobService(settings)
    job = service.submit("tester", [Upload("report.pdf", samples.multi_page_pdf(3)),
                                    Upload("columns.pdf", samples.two_column_pdf())])
    _run(JobRunner(settings, TesseractRecognizer()), job.id)
    result = json.loads(service.result_path(job, "json").read_text())
    return service, service.store.get_job(job.id), result


def test_every_page_is_read_and_recorded(finished_job):
    _, job, result = finished_job
    assert job.state is JobState.DONE and job.pages_done == job.pages_total == 4
    assert all(page.state is PageState.DONE and page.regions_ok > 0 and page.reason is None for page in job.pages)
    report = result["documents"][0]
    for page_no, page in enumerate(report["pages"]):
        text = " ".join(region["text"] for region in page["regions"])
        assert samples.page_sentence(page_no) in text
        assert "Quarterly Report" in text


def test_json_has_documents_pages_regions_with_boxes_and_order(finished_job):
    _, _, result = finished_job
    assert [d["filename"] for d in result["documents"]] == ["report.pdf", "columns.pdf"]
    for document in result["documents"]:
        for page in document["pages"]:
            width, height = page["width"], page["height"]
            assert page["dpi"] == 100 and abs(width - 827) <= 1 and abs(height - 1169) <= 1   # A4 at 100 DPI
            assert set(page["timings"]) == {"render", "layout", "lines", "order", "recognition", "assembly"}
            assert [r["reading_index"] for r in page["regions"]] == list(range(len(page["regions"])))
            for region in page["regions"]:
                assert region["status"] == "ok" and region["label"] in ("text", "title", "header")
                x0, y0, x1, y1 = region["bbox"]
                assert 0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height
                expected = [x0 * 1000 / width, y0 * 1000 / height, x1 * 1000 / width, y1 * 1000 / height]
                assert all(abs(a - b) <= 0.6 for a, b in zip(region["bbox_1000"], expected))
                assert region["lines"] and "\n".join(line["text"] for line in region["lines"]) == region["text"]


def test_two_columns_are_read_column_by_column(finished_job):
    _, _, result = finished_job
    regions = result["documents"][1]["pages"][0]["regions"]
    text = "\n".join(region["text"] for region in regions)
    positions = [text.index(word) for word in ("Household", *samples.LEFT_WORDS, *samples.RIGHT_WORDS)]
    assert positions == sorted(positions), text


def test_searchable_pdf_has_the_words_where_the_original_has_them(finished_job):
    service, job, _ = finished_job
    originals = [samples.word_boxes(samples.multi_page_pdf(3), n) for n in range(3)]
    originals.append(samples.word_boxes(samples.two_column_pdf()))
    with pymupdf.open(service.result_path(job, "pdf")) as pdf:
        assert pdf.page_count == 4
        for page_no, (page, original) in enumerate(zip(pdf, originals)):
            assert abs(page.rect.width - samples.PAGE_W) < 1 and abs(page.rect.height - samples.PAGE_H) < 1
            layer = {w[4]: w[:4] for w in page.get_text("words")}
            checked = [word for word in ("Quarterly", samples.PAGE_WORDS[page_no], "Apples", "Lamps") if word in original]
            assert len(checked) >= 2
            for word in checked:
                assert word in layer, (word, sorted(layer))
                centre = lambda box: ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)  # noqa: E731
                (ax, ay), (bx, by) = centre(layer[word]), centre(original[word])
                assert abs(ax - bx) < 8 and abs(ay - by) < 5, (word, layer[word], original[word])


def test_markdown_and_text_follow_reading_order(finished_job):
    service, job, _ = finished_job
    markdown = service.result_path(job, "md").read_text()
    text = service.result_path(job, "txt").read_text()
    assert markdown.count("<!-- page 1 -->") == 2 and "# columns.pdf" in markdown
    assert text.count("\f") == 3
    for output in (markdown, text):
        assert output.index("Alpha page number 1") < output.index("Bravo page number 2") < output.index("Apples")


def test_unreachable_recogniser_retries_then_falls_back_to_the_text_layer(tmp_path):
    settings = _settings(tmp_path)
    service = JobService(settings)
    job = service.submit("tester", [Upload("report.pdf", samples.multi_page_pdf(1))])
    dead = OpenAIVisionRecognizer(f"http://127.0.0.1:{free_port()}/v1", "glm-ocr", connect_timeout_s=1)
    runner = JobRunner(settings, dead)
    assert runner.start_job(job.id) == [(0, 0)]
    with pytest.raises(RecognizerUnavailableError, match="unreachable"):
        runner.run_page(job.id, 0, 0, final_attempt=False)
    assert runner.run_page(job.id, 0, 0, final_attempt=True) == "done"
    assert runner.finish_job(job.id)
    page = service.store.get_job(job.id).pages[0]
    assert page.attempts == 2 and page.regions_ok == 0 and page.regions_fallback > 0
    assert "from the PDF text layer" in page.reason and "unreachable" in page.reason
    result = json.loads(service.result_path(job, "json").read_text())
    regions = result["documents"][0]["pages"][0]["regions"]
    assert {region["status"] for region in regions} == {"fallback"}
    assert samples.page_sentence(0) in " ".join(region["text"] for region in regions)


def test_a_scan_is_read_and_without_a_recogniser_it_fails_with_the_reason(tmp_path):
    settings = _settings(tmp_path)
    service = JobService(settings)
    read = service.submit("tester", [Upload("scan.png", samples.scanned_png())])
    _run(JobRunner(settings, TesseractRecognizer()), read.id)
    assert samples.page_sentence(0) in service.result_path(read, "txt").read_text()

    unread = service.submit("tester", [Upload("scan.png", samples.scanned_png())])
    dead = OpenAIVisionRecognizer(f"http://127.0.0.1:{free_port()}/v1", "glm-ocr", connect_timeout_s=1)
    _run(JobRunner(settings, dead), unread.id)
    job = service.store.get_job(unread.id)
    assert job.state is JobState.FAILED and job.pages[0].state is PageState.FAILED
    assert "no text layer" in job.error and "unreachable" in job.error
