"""The workers' side of the loop guard, against the real engine server (house-ocr): the
recogniser sends `loop_guard` on OCR requests, a reading the engine stops with finish reason
"repetition" is asked again warmer once and then kept without its loop, marked
`truncated_repetition` (batched and one request a crop alike); the page pipeline marks the line
and its region in the page JSON, the region staying `ok`; `loop_guard=False` sends no guard.
The guard here is set tight enough (16 tokens) to call a line of 40 zeros a loop: the defaults
let every real line through (tests/engine/test_loop_guard_house.py, bench/loop_guard.py)."""
from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw, ImageFont

from tests.engine.server.conftest import EngineServer
from tests.engine.test_house_ocr import render
from vision.layout import RecognitionTask
from workers.recognizers.base import RecognitionItem
from workers.recognizers.openai_compatible import OpenAIVisionRecognizer
from workers.recognizers.repetition import cut_repetition

pytestmark = pytest.mark.slow

TIGHT = {"max_repeats": 3, "min_run_tokens": 16, "max_ngram_size": 4}
ZEROS = ("0" * 40, "DejaVuSansMono.ttf", 20)
WORDS = ("Invoice No. 2024-117", "DejaVuSans.ttf", 26)
STOPS = "ocrserve_loop_guard_stops_total"
GUARDED = "ocrserve_loop_guard_requests_total"


@pytest.fixture(scope="module")
def server():
    engine = EngineServer(["--kv-tokens", "8192", "--num-threads", "1"], model="house-ocr")
    engine.start()
    try:
        engine.wait_ready()
        yield engine
    finally:
        assert engine.stop() == 0


def items() -> list[RecognitionItem]:
    return [RecognitionItem(render(*line), RecognitionTask.TEXT, is_single_line=True) for line in (ZEROS, WORDS)]


@pytest.mark.parametrize("batched", [True, False])
def test_a_looping_reading_is_asked_again_then_kept_cut_and_marked(server, batched):
    recognizer = OpenAIVisionRecognizer(server.base_url + "/v1", "house-ocr", reads_single_lines=True,
                                        loop_guard=TIGHT)
    recognizer.uses_batch = batched
    before = server.metrics()
    zeros, words = recognizer.recognize(items())
    after = server.metrics()
    assert zeros.ok and zeros.truncated_repetition and zeros.text == "0"
    assert words.ok and not words.truncated_repetition and words.text == WORDS[0]
    # greedy: both lines; the warmer rung: the zeros again, which loop again
    assert after[GUARDED] - before[GUARDED] == 3
    assert after[STOPS] - before[STOPS] == 2


def test_without_the_guard_the_zeros_are_read_whole(server):
    recognizer = OpenAIVisionRecognizer(server.base_url + "/v1", "house-ocr", reads_single_lines=True,
                                        loop_guard=False)
    before = server.metrics()
    zeros, _ = recognizer.recognize(items())
    assert zeros.text == "0" * 40 and not zeros.truncated_repetition
    assert server.metrics()[GUARDED] == before[GUARDED]


def test_the_page_json_marks_the_line_and_its_region(server):
    from vision.document import Document
    from workers.page_pipeline import PagePipeline

    page = Image.new("RGB", (1000, 400), "white")
    draw = ImageDraw.Draw(page)
    draw.text((60, 80), WORDS[0], font=ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 30),
              fill="black")
    draw.text((60, 220), ZEROS[0], font=ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf", 24),
              fill="black")
    buffer = io.BytesIO()
    page.save(buffer, format="PNG")
    document = Document.open(buffer.getvalue(), "page.png")
    recognizer = OpenAIVisionRecognizer(server.base_url + "/v1", "house-ocr", reads_single_lines=True,
                                        loop_guard=TIGHT)
    result = PagePipeline(recognizer, vision_num_threads=1).process(document, document.render_page(0, 100), 0,
                                                                     text_layer="never").to_dict()
    lines = [(region, line) for region in result["regions"] for line in region["lines"]]
    marked = [(region, line) for region, line in lines if line["truncated_repetition"]]
    assert len(marked) == 1, lines
    region, line = marked[0]
    assert region["truncated_repetition"] and region["status"] == "ok"
    assert line["text"].startswith("0") and len(line["text"]) < 16 and line["text"] in region["text"]
    assert any(WORDS[0] in text and not other["truncated_repetition"]
               for other, text in ((r, r["text"]) for r in result["regions"]))


def test_cut_repetition_keeps_what_came_before_and_one_copy():
    assert cut_repetition("cally. You can place \\cite{" + ". " * 120) == "cally. You can place \\cite{. "
    assert cut_repetition("Total: the sum the sum the sum the sum the sum") == "Total: the sum"
    assert cut_repetition("Total: " + " " * 300).strip() == "Total:"
    assert cut_repetition("a line that ends well") == "a line that ends well"
    assert cut_repetition("1000") == "1000", "a short repeated end is the text's own"
