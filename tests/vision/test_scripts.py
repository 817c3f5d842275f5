"""Scripts of text by their characters, and the glyph order of right-to-left lines."""
from __future__ import annotations

import pymupdf
import pytest

from vision.scripts import script_of_text, visual_order


@pytest.mark.parametrize("text, script", [
    ("Zażółć gęślą jaźń", "Latin"), ("Tiếng Việt", "Latin"), ("Ελληνικά", "Greek"), ("Руководство", "Cyrillic"),
    ("مرحبا بالعالم", "Arabic"), ("שלום", "Hebrew"), ("नमस्ते", "Devanagari"), ("中文文本", "Han"),
    ("日本語のテキスト", "Japanese"), ("한국어", "Hangul"), ("2024 - 3.5 %", None),
    ("dh_make это программа", "Cyrillic"),   # most letters win
])
def test_the_script_of_a_text_is_that_of_most_of_its_letters(text, script):
    assert script_of_text(text) == script


def test_left_to_right_text_is_left_as_it_is():
    assert visual_order("Zażółć gęślą (jaźń) 42") == "Zażółć gęślą (jaźń) 42"


@pytest.mark.parametrize("logical", ["مرحبا بالعالم", "שלום עולם", "كتابة مواضيع الامتحانات"])
def test_a_right_to_left_line_set_in_glyph_order_is_extracted_in_logical_order(logical):
    """MuPDF's text extraction (a reader we did not write) turns the glyph order back."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_font(fontname="uni", fontfile="/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    page.insert_text((50, 100), visual_order(logical), fontname="uni", fontsize=12)
    assert pymupdf.open(stream=doc.tobytes())[0].get_text().strip() == logical
