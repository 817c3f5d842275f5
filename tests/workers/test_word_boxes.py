"""Word boxes of recognised lines on a page set like a book (Times, justified: spaces stretched
line by line), recognised by real Tesseract through the page pipeline and measured against where
the PDF put each word: spread by character widths (`interpolated`), then moved onto the gaps of
the line's ink (the default), and aligned on the line image (`ctc`, `Settings.word_alignment`)."""
from __future__ import annotations

import statistics

import numpy as np
import pymupdf
import pytest

from vision.document import Document
from workers.ink_gaps import snapped_to_gaps
from workers.line_words import interpolated_words
from workers.page_pipeline import PagePipeline
from workers.page_result import WordResult
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


def _edge_errors(word_alignment: bool) -> tuple[set[str], list[float], list[float]]:
    """The box sources of the page's words, and how far their left and right edges are from the
    printed word's (in line heights), for the pipeline's words and for plain interpolation."""
    pdf = _justified_pdf()
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        printed = [(w[4], tuple(v * DPI / 72 for v in w[:4])) for w in doc[0].get_text("words")]
    document = Document.open(pdf, "page")
    result = PagePipeline(TesseractRecognizer(), vision_num_threads=1, word_alignment=word_alignment).process(
        document, document.render_page(0, DPI), 0, text_layer="never")
    sources, errors, plain = set(), [], []
    for line in (line for region in result.regions for line in region.lines if len(line.text.split()) > 1):
        x0, y0, x1, y1 = line.bbox
        sources |= {word.box_source for word in line.words}
        for found, words in ((errors, line.words), (plain, interpolated_words(line.bbox, line.text, None))):
            for word in words:
                same = [box for text, box in printed if text == word.text and y0 <= (box[1] + box[3]) / 2 <= y1]
                if same:   # Tesseract read it as printed
                    box = min(same, key=lambda b: abs(b[0] - word.bbox[0]))
                    found.append(max(abs(word.bbox[0] - box[0]), abs(word.bbox[2] - box[2])) / (y1 - y0))
    assert len(errors) >= 30
    return sources, errors, plain


@pytest.mark.parametrize("word_alignment", [False, True])
def test_word_boxes_are_near_the_printed_words(word_alignment):
    sources, errors, plain = _edge_errors(word_alignment)
    assert sources == ({"ctc"} if word_alignment else {"interpolated"})
    # measured: plain interpolation 0.15 on average (worst 0.38); on the ink's gaps 0.05 (worst 0.10),
    # aligned or not (aligned alone, before the gaps: 0.08, worst 0.16)
    assert statistics.mean(errors) < 0.5 * statistics.mean(plain)
    assert statistics.mean(errors) < 0.08 and max(errors) < 0.2, sorted(errors)[-5:]


def _word(x0: float, x1: float) -> WordResult:
    return WordResult((x0, 10.0, x1, 30.0), "w", None, "interpolated", None)


def test_edges_move_onto_the_gaps_nearest_their_estimates():
    grey = np.full((40, 200), 255, dtype=np.uint8)
    for start, end in ((20, 60), (63, 70), (90, 130), (150, 180)):   # ink: a word, a letter 3 px on, two words
        grey[12:28, start:end] = 0
    words = [_word(20, 84), _word(88, 140), _word(146, 180)]   # estimates a few pixels off
    snapped = snapped_to_gaps(words, (15.0, 10.0, 185.0, 30.0), grey)
    # the 3-pixel gap between letters is no space (under 0.12 of the line's 20 pixels)
    assert [w.bbox[0] for w in snapped] == [20, 90, 150] and [w.bbox[2] for w in snapped] == [70, 130, 180]
    blank = np.full((40, 200), 255, dtype=np.uint8)
    assert snapped_to_gaps(words, (15.0, 10.0, 185.0, 30.0), blank) == words, "no ink: nothing to go by"
