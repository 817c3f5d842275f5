"""Vertical lines: columns of Chinese or Japanese, and labels set on their side (a tax form's
section names). They are told by their boxes, cut out turned to run across, the right way up
whichever way they were printed, and read in columns right to left."""
from __future__ import annotations

import numpy as np
import pymupdf
from PIL import Image, ImageDraw, ImageFont

from vision.crops import crop_line
from vision.lines import LineDetector, TextLine
from vision.reading_order import joined_column_pieces, order_text_lines

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
LABEL = "Adjusted Gross Income"


def _label() -> Image.Image:
    font = ImageFont.truetype(FONT, 36)
    left, top, right, bottom = font.getbbox(LABEL)
    image = Image.new("RGB", (right - left + 40, bottom - top + 40), "white")
    ImageDraw.Draw(image).text((20 - left, 20 - top), LABEL, font=font, fill="black")
    return image


def _on_page(label: Image.Image) -> Image.Image:
    page = Image.new("RGB", (400, 900), "white")
    page.paste(label, (150, 100))
    return page


def _grey(image: Image.Image, size: tuple[int, int]) -> np.ndarray:
    return np.asarray(image.convert("L").resize(size), np.float32)


def _looks_like(crop: Image.Image, upright: Image.Image) -> bool:
    """The crop matches the label upright better than turned round."""
    size = upright.size
    a = _grey(crop, size) - _grey(crop, size).mean()
    same = _grey(upright, size) - _grey(upright, size).mean()
    turned = _grey(upright.rotate(180), size) - _grey(upright.rotate(180), size).mean()
    return float((a * same).sum()) > float((a * turned).sum())


def test_a_label_printed_either_way_up_the_page_is_cut_out_reading_upright():
    upright = _label()
    for printed in (upright.rotate(90, expand=True), upright.rotate(-90, expand=True)):   # bottom to top; top to bottom
        page = _on_page(printed)
        lines = [line for line in LineDetector().detect(np.asarray(page)) if line.vertical]
        assert len(lines) == 1, lines
        crop = crop_line(page, lines[0])
        assert crop.width > 4 * crop.height
        assert _looks_like(crop, upright)


def test_a_lone_glyph_is_not_a_vertical_line():
    page = Image.new("RGB", (200, 200), "white")
    ImageDraw.Draw(page).text((90, 80), "1", font=ImageFont.truetype(FONT, 30), fill="black")
    [line] = LineDetector().detect(np.asarray(page))
    assert not line.vertical


def test_columns_are_read_right_to_left_each_top_to_bottom():
    # the middle column split by the detector at a full stop, its pieces overlapping a little
    right, middle_top, middle_bottom, left = (
        TextLine((900, 100, 960, 900), 0.9, vertical=True), TextLine((800, 100, 860, 320), 0.9, vertical=True),
        TextLine((805, 300, 858, 900), 0.9, vertical=True), TextLine((700, 100, 760, 600), 0.9, vertical=True))
    lines = [left, middle_bottom, right, middle_top]
    assert order_text_lines(lines) == [right, middle_top, middle_bottom, left]
    # a region that is mostly horizontal keeps its rows top to bottom, a label on its side beside them
    rows = [TextLine((100, 100 + 40 * i, 700, 130 + 40 * i), 0.9) for i in range(3)]
    ordered = order_text_lines(list(reversed(rows)) + [TextLine((20, 100, 50, 400), 0.9, vertical=True)])
    assert [line for line in ordered if line in rows] == rows


def test_a_japanese_column_is_detected_as_vertical_lines():
    doc = pymupdf.open()
    page = doc.new_page(width=300, height=400)
    font = pymupdf.Font("japan")
    writer = pymupdf.TextWriter(page.rect)
    for k, char in enumerate("吾輩は猫である名前はまだ無い"):
        writer.append((150, 40 + 22 * k), char, font=font, fontsize=18)
    writer.write_text(page)
    pix = page.get_pixmap(dpi=200)
    image = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, 3)
    lines = LineDetector().detect(image)
    assert lines and all(line.vertical for line in lines), lines


def test_the_pieces_of_a_column_split_at_a_full_stop_are_joined():
    top, bottom = TextLine((826, 115, 896, 320), 0.8, vertical=True), TextLine((831, 287, 892, 910), 0.7, vertical=True)
    beside = TextLine((722, 123, 780, 644), 0.9, vertical=True)   # the next column: kept apart
    below = TextLine((828, 940, 894, 1200), 0.9, vertical=True)   # a gap down the column: a new paragraph, kept apart
    level = TextLine((100, 1300, 900, 1340), 0.9)
    joined = joined_column_pieces([level, bottom, beside, top, below])
    assert level in joined and beside in joined and below in joined
    assert TextLine((826, 115, 896, 910), 0.8, vertical=True) in joined and len(joined) == 4
