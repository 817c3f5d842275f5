"""Word boxes of recognised lines on a page set like a book (Times, justified: spaces stretched
line by line), recognised by real Tesseract through the page pipeline and measured against where
the PDF put each word: the boxes aligned on the line image (`ctc`, `Settings.word_alignment`)
against the ones spread by character widths (`interpolated`, the default)."""
from __future__ import annotations

import statistics

import pymupdf

from vision.document import Document
from workers.line_words import interpolated_words
from workers.page_pipeline import PagePipeline
from workers.recognizers.tesseract import TesseractRecognizer

DPI = 100
TEXT = ("Minutes of the annual meeting, held in the library on Tuesday. The treasurer reported that "
        "membership fees covered maintenance; the committee thanked volunteers, welcomed William Mayhew "
        "and minuted illumination works at the quay. Any further motions were withdrawn.")


def _justified_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 90), "Minutes", fontname="tibo", fontsize=20)
    assert page.insert_textbox(pymupdf.Rect(72, 120, 400, 400), TEXT, fontname="tiro", fontsize=14,
                               align=pymupdf.TEXT_ALIGN_JUSTIFY) >= 0
    return doc.tobytes()


def test_aligned_word_boxes_are_nearer_the_printed_words_than_interpolated_ones():
    pdf = _justified_pdf()
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        printed = [(w[4], tuple(v * DPI / 72 for v in w[:4])) for w in doc[0].get_text("words")]
    document = Document.open(pdf, "page")
    result = PagePipeline(TesseractRecognizer(), vision_num_threads=1, word_alignment=True).process(
        document, document.render_page(0, DPI), 0, text_layer="never")
    errors: dict[str, list[float]] = {"ctc": [], "interpolated": []}
    for line in (line for region in result.regions for line in region.lines if len(line.text.split()) > 1):
        x0, y0, x1, y1 = line.bbox
        assert {word.box_source for word in line.words} == {"ctc"}, line
        for kind, words in (("ctc", line.words), ("interpolated", interpolated_words(line.bbox, line.text, None))):
            for word in words:
                same = [box for text, box in printed if text == word.text and y0 <= (box[1] + box[3]) / 2 <= y1]
                if same:   # Tesseract read it as printed: how far its left and right edges are, in line heights
                    box = min(same, key=lambda b: abs(b[0] - word.bbox[0]))
                    errors[kind].append(max(abs(word.bbox[0] - box[0]), abs(word.bbox[2] - box[2])) / (y1 - y0))
    assert len(errors["ctc"]) >= 30
    # measured: aligned 0.08 on average (worst 0.16), interpolated 0.15 (worst 0.38)
    assert statistics.mean(errors["ctc"]) < 0.6 * statistics.mean(errors["interpolated"])
    assert statistics.mean(errors["ctc"]) < 0.12 and max(errors["ctc"]) < 0.3, sorted(errors["ctc"])[-5:]


def test_by_default_recognised_words_are_interpolated():
    document = Document.open(_justified_pdf(), "page")
    result = PagePipeline(TesseractRecognizer(), vision_num_threads=1).process(
        document, document.render_page(0, DPI), 0, text_layer="never")
    assert {word.box_source for region in result.regions for line in region.lines for word in line.words} == \
        {"interpolated"}
