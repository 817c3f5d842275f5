"""The CTC forced alignment of known text on a line image (vision.ctc_align), against where
PyMuPDF set each glyph on a page it rendered."""
from __future__ import annotations

import pymupdf
import pytest
from PIL import Image

from vision.ctc_align import REC_PPOCRV4, LineAligner

DPI = 150


def _line(text: str, fontname: str = "tiro") -> tuple[Image.Image, list[tuple[str, float]]]:
    """A rendered line and each glyph's centre x in its pixels."""
    doc = pymupdf.open()
    page = doc.new_page(width=40 + 13 * len(text), height=50)
    page.insert_text((12, 34), text, fontname=fontname, fontsize=20)
    raw = page.get_text("rawdict")
    chars = [(c["c"], (c["bbox"][0] + c["bbox"][2]) / 2 * DPI / 72)
             for block in raw["blocks"] for line in block["lines"] for span in line["spans"] for c in span["chars"]]
    pixmap = page.get_pixmap(dpi=DPI)
    return Image.frombytes("RGB", (pixmap.width, pixmap.height), pixmap.samples), chars


def test_the_model_file_is_the_released_one():
    REC_PPOCRV4.verify()


@pytest.mark.parametrize("fontname", ["tiro", "cour", "helv"])
def test_each_character_is_placed_where_it_is_printed(fontname):
    text = "The quick brown fox jumps over the lazy dog, 2026."
    image, glyphs = _line(text, fontname)
    centres = LineAligner(1).char_centres(image, text)
    printed = [x for char, x in glyphs if not char.isspace()]
    assert centres is not None and len(centres) == len(printed)
    height = 20 * DPI / 72   # the font size in pixels
    errors = [abs(found - expected) / height for found, expected in zip(centres, printed)]
    # A frame is 8 pixels of the line at 48 high, a sixth of an em; CTC fires on a character
    # somewhere over it (in a run of thin letters, "illi", later than this: up to 0.8 em).
    assert max(errors) < 0.6 and sum(errors) / len(errors) < 0.2, [round(e, 2) for e in errors]


def test_a_text_the_frames_cannot_hold_or_an_empty_one_is_not_aligned():
    image, _ = _line("ab")
    aligner = LineAligner(1)
    assert aligner.char_centres(image.crop((0, 0, 40, image.height)), "a much longer reading than the image") is None
    assert aligner.char_centres(image, "   ") is None


def test_characters_outside_the_alphabet_still_take_their_place():
    text = "Café Zürich"
    image, glyphs = _line(text)
    centres = LineAligner(1).char_centres(image, text)
    printed = [x for char, x in glyphs if not char.isspace()]
    assert centres is not None
    assert all(abs(found - expected) < 20 * DPI / 72 * 0.5 for found, expected in zip(centres, printed))
