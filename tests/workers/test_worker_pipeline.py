"""The page pipeline and result writing, in-process (`JobRunner` called directly,
as the Celery tasks call it), on real vision models and real Tesseract.

Recognition here is Tesseract: the engine serves only a text model until the
house OCR model lands (the OpenAI path is tested against the real engine in
test_worker_openai_recognizer.py). Jobs go into an embedded broker no worker
reads; this file runs the tasks' code itself. The born-digital samples are
recognised with `text_layer="never"`, and taken from their own text layer with
the default, `auto`; a counting Tesseract shows which crops were sent. `verify`
(the layer sent as each crop's draft) is shown with a recogniser double that
reads each crop as its draft says, or otherwise: there the pipeline is under test.
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
from workers.recognizers.base import RecognitionOutcome, RecognizerUnavailableError
from workers.recognizers.openai_compatible import OpenAIVisionRecognizer
from workers.recognizers.tesseract import TesseractRecognizer
from workers.settings import Settings


def _settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path, recognizer="tesseract", render_dpi=100, vision_num_threads=1)


class CountingTesseract(TesseractRecognizer):
    """Tesseract, counting the crops it is sent."""

    def __init__(self) -> None:
        super().__init__()
        self.crops = 0

    def recognize(self, items):
        self.crops += len(items)
        return super().recognize(items)


def _run(runner: JobRunner, job_id: str) -> None:
    for file_index, page_index in runner.start_job(job_id):
        runner.run_page(job_id, file_index, page_index, final_attempt=True)
    assert runner.finish_job(job_id)


@pytest.fixture(scope="module")
def finished_job(tmp_path_factory):
    """A three-page PDF and a two-column page in one job, recognised (text layer never), run to the end."""
    settings = _settings(tmp_path_factory.mktemp("pipeline"))
    service = JobService(settings)
    job = service.submit("tester", [Upload("report.pdf", samples.multi_page_pdf(3)),
                                    Upload("columns.pdf", samples.two_column_pdf())], text_layer="never")
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
            assert set(page["timings"]) == {"render", "layout", "lines", "order", "text_layer", "recognition",
                                            "assembly", "words"}
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
    job = service.submit("tester", [Upload("report.pdf", samples.multi_page_pdf(1))], text_layer="never")
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
    page = json.loads(service.result_path(read, "json").read_text())["documents"][0]["pages"][0]
    assert read.options.text_layer == "auto" and page["text_layer"] is None, "an image has no text layer"
    assert {region["source"] for region in page["regions"]} == {"ocr"}

    unread = service.submit("tester", [Upload("scan.png", samples.scanned_png())])
    dead = OpenAIVisionRecognizer(f"http://127.0.0.1:{free_port()}/v1", "glm-ocr", connect_timeout_s=1)
    _run(JobRunner(settings, dead), unread.id)
    job = service.store.get_job(unread.id)
    assert job.state is JobState.FAILED and job.pages[0].state is PageState.FAILED
    assert "no text layer" in job.error and "unreachable" in job.error


# --- the text layer (auto, the default) -------------------------------------------------------------------------

def _layer_words(pdf: bytes, page_no: int = 0) -> list[str]:
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        return [word[4] for word in doc[page_no].get_text("words")]


def _regions(result: dict, document: int = 0, page: int = 0) -> list[dict]:
    return result["documents"][document]["pages"][page]["regions"]


@pytest.fixture(scope="module")
def layer_job(tmp_path_factory):
    """finished_job's documents with the default text-layer mode."""
    settings = _settings(tmp_path_factory.mktemp("text-layer"))
    service = JobService(settings)
    job = service.submit("tester", [Upload("report.pdf", samples.multi_page_pdf(3)),
                                    Upload("columns.pdf", samples.two_column_pdf())])
    recogniser = CountingTesseract()
    _run(JobRunner(settings, recogniser), job.id)
    result = json.loads(service.result_path(job, "json").read_text())
    return service, service.store.get_job(job.id), result, recogniser


def test_born_digital_pages_take_their_own_text_and_send_nothing(layer_job):
    service, job, result, recogniser = layer_job
    assert job.options.text_layer == "auto" and job.state is JobState.DONE
    assert recogniser.crops == 0, "no crop was sent to the recogniser"
    documents = [(samples.multi_page_pdf(3), 3), (samples.two_column_pdf(), 1)]
    for document, (pdf, num_pages) in zip(result["documents"], documents):
        for page_no, page in enumerate(document["pages"]):
            assert page["text_layer"].startswith("text layer used: "), page["text_layer"]
            regions = page["regions"]
            assert regions and {(r["source"], r["status"]) for r in regions} == {("text_layer", "ok")}
            assert all(line["confidence"] is None for r in regions for line in r["lines"])
            words = " ".join(r["text"] for r in regions).split()
            assert sorted(words) == sorted(_layer_words(pdf, page_no)), "exactly the layer's words, each once"
    lines = [line["text"] for r in _regions(result) for line in r["lines"]]
    assert lines == ["Quarterly Report", samples.page_sentence(0), "The results were good this time"]
    assert _regions(result)[0]["label"] == "title"
    assert "## Quarterly Report" in service.result_path(job, "md").read_text()


def test_the_same_pages_with_never_are_recognised(finished_job, layer_job):
    _, _, recognised = finished_job
    _, _, from_layer, _ = layer_job
    for document in recognised["documents"]:
        for page in document["pages"]:
            assert page["text_layer"] is None and {r["source"] for r in page["regions"]} == {"ocr"}
    # Downstream is the same: two columns in order, and the searchable PDF finds the words.
    text = "\n".join(region["text"] for region in _regions(from_layer, 1))
    positions = [text.index(word) for word in ("Household", *samples.LEFT_WORDS, *samples.RIGHT_WORDS)]
    assert positions == sorted(positions), text


def test_the_searchable_pdf_of_a_layer_page_has_the_words_in_place(layer_job):
    service, job, _, _ = layer_job
    original = samples.word_boxes(samples.two_column_pdf())
    with pymupdf.open(service.result_path(job, "pdf")) as pdf:
        layer = {w[4]: w[:4] for w in pdf[3].get_text("words")}
    for word in ("Household", *samples.LEFT_WORDS, *samples.RIGHT_WORDS):
        found, expected = layer[word], original[word]
        assert abs((found[1] + found[3]) / 2 - (expected[1] + expected[3]) / 2) < 5, word
        assert found[0] - 8 < expected[0] < found[2], word


def test_an_invisible_layer_over_a_scan_is_not_taken_and_the_image_is_read(tmp_path):
    settings = _settings(tmp_path)
    service = JobService(settings)
    job = service.submit("tester", [Upload("scan.pdf", samples.hidden_layer_scan_pdf())])
    recogniser = CountingTesseract()
    _run(JobRunner(settings, recogniser), job.id)
    page = json.loads(service.result_path(job, "json").read_text())["documents"][0]["pages"][0]
    assert page["text_layer"].startswith("text layer not used: ") and "invisible" in page["text_layer"]
    assert recogniser.crops >= 2 and {r["source"] for r in page["regions"]} == {"ocr"}
    text = " ".join(r["text"] for r in page["regions"])
    assert samples.SCAN_SENTENCE in text and "Delivery Note" in text
    assert not set(samples.HIDDEN_SENTENCE.split()) & set(text.split()), text


def test_a_layer_whose_glyphs_map_to_no_letters_is_recognised(tmp_path):
    settings = _settings(tmp_path)
    service = JobService(settings)
    job = service.submit("tester", [Upload("report.pdf", samples.unmapped_font_pdf())])
    _run(JobRunner(settings, TesseractRecognizer()), job.id)
    page = json.loads(service.result_path(job, "json").read_text())["documents"][0]["pages"][0]
    assert "not mapped to Unicode" in page["text_layer"]
    assert {r["source"] for r in page["regions"]} == {"ocr"}
    text = " ".join(r["text"] for r in page["regions"])
    assert samples.page_sentence(0) in text and "Quarterly Report" in text


def test_a_pasted_scan_on_a_born_digital_page_is_the_only_thing_recognised(tmp_path):
    settings = _settings(tmp_path)
    service = JobService(settings)
    job = service.submit("tester", [Upload("notes.pdf", samples.pasted_scan_pdf())])
    recogniser = CountingTesseract()
    _run(JobRunner(settings, recogniser), job.id)
    page = json.loads(service.result_path(job, "json").read_text())["documents"][0]["pages"][0]
    assert page["text_layer"].startswith("text layer used: ") and "1 line without trusted words recognised" in \
        page["text_layer"]
    assert recogniser.crops == 1, "only the pasted scan's line"
    [scanned] = [r for r in page["regions"] if samples.SCAN_SENTENCE in r["text"]]
    assert scanned["source"] == "ocr"
    others = [r for r in page["regions"] if r is not scanned]
    assert len(others) == 4 and {r["source"] for r in others} == {"text_layer"}
    text = " ".join(r["text"] for r in page["regions"])
    assert not set(samples.HIDDEN_SENTENCE.split()) & set(text.split()), "the invisible words are not taken"
    assert all(word in text for word in ("Household", *samples.LEFT_WORDS))


class ClippedTesseract(TesseractRecognizer):
    """Tesseract that hands back only each crop's first character: a recogniser gone wrong."""

    def recognize(self, items):
        return [RecognitionOutcome(outcome.text[:1]) if outcome.ok else outcome
                for outcome in super().recognize(items)]


def test_a_page_read_far_shorter_than_its_lines_says_so():
    from vision.document import Document
    from workers.page_pipeline import PagePipeline

    document = Document.open(samples.two_column_pdf(), "two.pdf")
    rendered = document.render_page(0, 100)
    whole = PagePipeline(TesseractRecognizer(), vision_num_threads=1).process(document, rendered, 0)
    assert whole.reason is None
    clipped = PagePipeline(ClippedTesseract(), vision_num_threads=1).process(document, rendered, 0)
    assert "characters were read from" in clipped.reason and "text may be missing" in clipped.reason


# --- the text layer as the model's draft (verify) -------------------------------------------------------------------

class DraftReader:
    """A recogniser double for verify mode, where the pipeline is under test, not a model: it reads each
    crop as `read(draft)` (a model reading what a right draft says, or something else) and keeps what
    it was sent."""
    name = "draft-reader"
    reads_single_lines = False
    softens_noisy_lines = False

    def __init__(self, read=lambda draft: draft):
        self.read = read
        self.items = []

    def recognize(self, items):
        self.items += items
        return [RecognitionOutcome(self.read(item.draft or "")) for item in items]

    def check(self):
        pass


def _page(data: bytes, reader, text_layer: str):
    from vision.document import Document
    from workers.page_pipeline import PagePipeline

    document = Document.open(data, "page")
    return PagePipeline(reader, vision_num_threads=1).process(document, document.render_page(0, 100), 0,
                                                               text_layer=text_layer)


def test_verify_sends_every_line_with_its_layer_text_as_the_draft_and_keeps_the_reading():
    trusting, reader = DraftReader(), DraftReader()
    auto = _page(samples.multi_page_pdf(1), trusting, "auto")
    verified = _page(samples.multi_page_pdf(1), reader, "verify")
    assert trusting.items == [], "auto sends nothing"
    layer_lines = [line.text for region in auto.regions for line in region.lines]
    assert [item.draft for item in reader.items] == layer_lines, "every line, its layer text as the draft"
    assert all(item.is_single_line for item in reader.items)
    assert [r.text for r in verified.regions] == [r.text for r in auto.regions]
    assert {(r.source, r.status.value, r.text_layer_check) for r in verified.regions} == {("ocr", "ok", "agrees")}
    assert all(line.layer_text is None for r in verified.regions for line in r.lines)
    assert verified.text_layer.startswith("text layer verified"), verified.text_layer
    assert verified.text_layer.endswith(f"differs from it in 0 of {len(verified.regions)} regions verified")
    assert all(r.text_layer_check is None for r in auto.regions), "auto verifies nothing"


def test_verify_flags_a_line_read_otherwise_and_keeps_the_layers_text_beside_it():
    from workers.page_result import LineResult, RegionResult

    # Whitespace aside, every line but one reads as its layer says.
    reader = DraftReader(lambda draft: "  ".join(draft.split(" ")).replace("good", "bad"))
    page = _page(samples.multi_page_pdf(1), reader, "verify")
    [differs] = [r for r in page.regions if r.text_layer_check == "differs"]
    assert {r.text_layer_check for r in page.regions if r is not differs} == {"agrees"}
    [line] = [line for line in differs.lines if line.layer_text is not None]
    assert line.text == "The  results  were  bad  this  time", "the reading is kept"
    assert line.layer_text == "The results were good this time"
    assert differs.source == "ocr" and "bad" in differs.text and "good" not in differs.text
    assert f"differs from it in 1 of {len(page.regions)} regions verified" in page.text_layer
    # Stored and loaded again; a result stored before verify existed loads as not verified.
    stored = differs.to_dict()
    assert stored["text_layer_check"] == "differs"
    assert RegionResult.from_dict(stored).lines == differs.lines
    assert RegionResult.from_dict(stored).text_layer_check == "differs"
    older = {key: value for key, value in stored.items() if key != "text_layer_check"}
    older["lines"] = [{key: value for key, value in line.items() if key != "layer_text"} for line in stored["lines"]]
    assert RegionResult.from_dict(older).text_layer_check is None
    assert all(line.layer_text is None for line in RegionResult.from_dict(older).lines)
    assert LineResult.from_dict(line.to_dict()) == line


def test_verify_sends_no_drafts_where_there_is_no_trusted_layer():
    for pdf, note in ((samples.scanned_png(), None), (samples.hidden_layer_scan_pdf(), "text layer not used: ")):
        reader = DraftReader(lambda draft: draft or "read")
        page = _page(pdf, reader, "verify")
        assert reader.items and all(item.draft is None for item in reader.items)
        assert page.text_layer is None if note is None else page.text_layer.startswith(note), page.text_layer
        assert {r.text_layer_check for r in page.regions} == {None}, "nothing was verified"


def test_a_region_read_whole_goes_whole_with_the_layers_lines_as_its_draft():
    from PIL import Image

    from vision.document import RenderedPage, TextWord
    from vision.layout import Region
    from vision.page_analysis import LayoutBlock
    from vision.reading_order import PageRole
    from vision.text_layer import BlockText
    from workers.pipeline.assemble import region_of
    from workers.pipeline.page import BlockWork
    from workers.pipeline.plan_crops import plan_block
    from workers.pipeline.text_layer_policy import TextLayerPolicy

    block = LayoutBlock(0, Region("equation", (10, 10, 190, 70), 0.9), PageRole.BODY, ())
    words = (TextWord("E", (20, 12, 40, 30), 0, 0, 0), TextWord("=mc2", (42, 12, 90, 30), 0, 0, 1),
             TextWord("x+1", (20, 40, 60, 60), 0, 1, 0))
    page = RenderedPage(0, Image.new("RGB", (200, 80), "white"), 100, 0.0)
    auto, verify = TextLayerPolicy.for_mode("auto"), TextLayerPolicy.for_mode("verify")
    assert plan_block(BlockWork(block, False, BlockText((), words)), page.image, auto) == [], "auto: from the layer"
    [item] = plan_block(BlockWork(block, False, BlockText((), words)), page.image, verify)
    for policy in (auto, verify):   # a usable layer with no word there, and no detected line: nothing is sent
        assert plan_block(BlockWork(block, False, BlockText((), ())), page.image, policy) == []
    assert item.draft == "E =mc2\nx+1" and not item.is_single_line and item.task.value == "formula"
    agrees = region_of(BlockWork(block, False, crops=[item], outcomes=[RecognitionOutcome("E =mc2 x+1")]), [], 200, 80)
    differs = region_of(BlockWork(block, False, crops=[item], outcomes=[RecognitionOutcome("E=mc^2 x+1")]),
                        [], 200, 80)
    assert (agrees.text_layer_check, differs.text_layer_check) == ("agrees", "differs")
    assert differs.text == "E=mc^2 x+1" and differs.source == "ocr"


def test_verify_is_a_text_layer_mode_like_the_others():
    from vision.limits import InvalidOptionError
    from workers.job_service import parse_text_layer

    assert [parse_text_layer(mode, "auto") for mode in ("verify", " Verify ", "never", None, "")] == \
        ["verify", "verify", "never", "auto", "auto"]
    with pytest.raises(InvalidOptionError, match=r"unknown text_layer 'check'; choose auto .*never .*verify"):
        parse_text_layer("check", "auto")


# --- small print on a scanned page goes softened to a recogniser that asks for it (vision.noise) ----------------------

class LineKeeper(DraftReader):
    """Keeps the crops it is sent; reads nothing useful (the crops are what is under test)."""
    reads_single_lines = True

    def __init__(self, softens: bool):
        super().__init__(read=lambda draft: "x")
        self.softens_noisy_lines = softens


def _image_page(image, reader):
    import io

    from vision.document import Document
    from workers.page_pipeline import PagePipeline

    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    document = Document.open(buffer.getvalue(), "page.png")
    return PagePipeline(reader, vision_num_threads=1).process(document, document.render_page(0), 0)


def test_small_print_of_a_scanned_page_is_softened_and_a_clean_page_is_sent_as_cut():
    import numpy as np
    from PIL import Image

    from vision.document import Document
    from vision.noise import SMALL_PRINT_PX, scan_noise, soften

    # at 70 DPI its lines are 16-26 pixels thick: small print and not
    clean = Document.open(samples.multi_page_pdf(1), "page.pdf").render_page(0, 70).image
    rng = np.random.default_rng(0)
    grain = np.asarray(clean, np.float32) * 0.85 + 20 + rng.normal(0, 8, (clean.height, clean.width, 3))
    scanned = Image.fromarray(np.clip(grain, 0, 255).astype(np.uint8))
    assert scan_noise(clean) == 0.0 and scan_noise(scanned) > 1.0

    for image, expect_softened in ((clean, False), (scanned, True)):
        plain, asking = LineKeeper(softens=False), LineKeeper(softens=True)
        _image_page(image, plain)
        _image_page(image, asking)
        assert len(plain.items) == len(asking.items) > 0
        softened = 0
        for cut, sent in zip(plain.items, asking.items):
            same = np.array_equal(np.asarray(cut.image), np.asarray(sent.image))
            if not same:
                assert np.array_equal(np.asarray(soften(cut.image)), np.asarray(sent.image))
                assert cut.image.height <= SMALL_PRINT_PX + 12, "only small print is softened"
                softened += 1
        assert (softened > 0) == expect_softened, (softened, expect_softened)


def test_a_letter_o_read_inside_a_number_comes_out_as_zero():
    doc = pymupdf.open()
    doc.new_page(width=400, height=120).insert_text((30, 60), "p < 0.01 for 105 items", fontsize=14)
    reader = DraftReader(read=lambda draft: "p < O.01 for 1O5 items")
    page = _page(doc.tobytes(), reader, text_layer="never")
    assert reader.items, "the line was sent to the recogniser"
    assert [region.text for region in page.regions] == ["p < 0.01 for 105 items"]
