"""PP-OCRv6's line recogniser from the rapidocr wheel, on lines typeset here (PyMuPDF's own CJK
font, DejaVu Sans), as the router sends them."""
from __future__ import annotations

import pymupdf
import pytest
from PIL import Image

from vision.layout import RecognitionTask
from workers.recognizers import ppocr
from workers.recognizers.base import RecognitionItem

pytestmark = pytest.mark.skipif(ppocr.model_path() is None, reason="needs the rapidocr wheel (scripts/setup.sh)")


def _line(text: str, fontname: str, fontfile: str | None = None) -> Image.Image:
    doc = pymupdf.open()
    page = doc.new_page(width=40 + 14 * len(text), height=30)
    if fontfile:
        page.insert_font(fontname=fontname, fontfile=fontfile)
    page.insert_text((10, 21), text, fontname=fontname, fontsize=13)
    pix = page.get_pixmap(dpi=200)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


@pytest.mark.parametrize("text, font, file", [
    ("中文文本识别测试", "china-s", None),
    ("日本語のテキストです", "japan", None),
    ("Zażółć gęślą jaźń", "dejavu", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
])
def test_it_reads_a_line_exactly_and_says_how_sure_it_is(text, font, file):
    item = RecognitionItem(_line(text, font, file), RecognitionTask.TEXT, is_single_line=True)
    [outcome] = ppocr.PPOCRLineRecognizer(num_threads=1).recognize([item])
    assert outcome.text == text
    assert 0.8 < outcome.confidence <= 1.0


def test_it_reads_only_the_languages_it_was_trained_on():
    assert ppocr.reads("chi_sim+eng") and ppocr.reads("pol") and ppocr.reads("jpn")
    assert not ppocr.reads("rus+eng") and not ppocr.reads("vie") and not ppocr.reads("eng+ell")
