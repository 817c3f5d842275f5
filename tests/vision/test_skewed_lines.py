"""Pages that are not quite straight (every scan): lines keep their angle, are cut
out upright, and are still told apart by row; dense text the layout model calls
a figure is read; separate columns of lines the layout model missed stay apart."""
from __future__ import annotations

import cv2
import numpy as np
import pytest
from PIL import Image

from vision.crops import crop_image, crop_line
from vision.layout import RecognitionTask, Region
from vision.line_assignment import assign_lines, group_lines
from vision.lines import LineDetector, TextLine
from vision.reading_order import line_rows

SKEW = 0.8   # degrees counter-clockwise; the scan-like benchmark pages use up to 0.8


def _rotated(pixels: np.ndarray, degrees: float) -> np.ndarray:
    height, width = pixels.shape[:2]
    matrix = cv2.getRotationMatrix2D((width / 2, height / 2), degrees, 1.0)
    return cv2.warpAffine(pixels, matrix, (width, height), borderValue=(255, 255, 255))


def _ink_extent(pixels: np.ndarray, axis: int) -> int:
    """Rows (axis=1) or columns (axis=0) of a crop that hold dark pixels."""
    dark = (np.asarray(pixels).min(axis=2) < 128).any(axis=axis)
    return int(dark.sum())


@pytest.mark.parametrize("degrees", [SKEW, -SKEW])
def test_lines_of_a_skewed_page_carry_its_angle(one_column_page, degrees):
    pixels = _rotated(one_column_page.to_array(), degrees)
    lines = LineDetector().detect(pixels)
    long_lines = [line for line in lines if line.bbox[2] - line.bbox[0] > 300]
    assert len(long_lines) >= 10
    assert np.median([line.angle for line in long_lines]) == pytest.approx(degrees, abs=0.2)
    for line in long_lines:
        assert abs(line.angle - degrees) < 0.5, line
        length, thickness = line.upright_size
        assert thickness < line.height and length > line.bbox[2] - line.bbox[0] - 1


def test_upright_crop_keeps_one_line_where_the_box_holds_its_neighbours(one_column_page):
    straight = LineDetector().detect(one_column_page.to_array())
    pixels = _rotated(one_column_page.to_array(), 1.5)   # a 500-px line drifts by 13 px: half a line pitch
    skewed = LineDetector().detect(pixels)
    image = Image.fromarray(pixels)

    def body(lines):   # the paragraphs' long lines, not the 20-point title
        return [ln for ln in lines if ln.bbox[2] - ln.bbox[0] > 300 and ln.bbox[1] > 150]

    straight_crops = [crop_image(one_column_page.image, s.bbox) for s in body(straight)]
    straight_height = max(crop.height for crop in straight_crops)
    straight_ink = max(_ink_extent(crop, axis=1) for crop in straight_crops)
    assert len(body(skewed)) >= 10
    for line in body(skewed):
        boxed, upright = crop_image(image, line.bbox), crop_line(image, line)
        assert boxed.height > straight_height + 8        # the axis-aligned box reaches into the next lines
        assert upright.height <= straight_height + 2     # the upright crop is as tall as a straight line's
        assert upright.width >= boxed.width - 1
        assert _ink_extent(upright, axis=1) <= straight_ink + 2   # and holds no more ink rows


def test_a_level_line_is_a_plain_crop(one_column_page):
    line = TextLine((50, 60, 400, 80), 0.9, 0.0)
    assert np.array_equal(np.asarray(crop_line(one_column_page.image, line)),
                          np.asarray(crop_image(one_column_page.image, line.bbox)))


def test_a_drawn_rotated_bar_comes_out_level():
    canvas = np.full((300, 600, 3), 255, np.uint8)
    corners = cv2.boxPoints(((300, 150), (400, 12), -2.0))   # OpenCV: -2 degrees is 2 degrees counter-clockwise
    cv2.fillPoly(canvas, [np.round(corners).astype(np.int32)], (0, 0, 0))
    x0, y0 = corners.min(axis=0)
    x1, y1 = corners.max(axis=0)
    line = TextLine((int(x0), int(y0), int(np.ceil(x1)), int(np.ceil(y1))), 0.9, 2.0)
    upright = np.asarray(crop_line(Image.fromarray(canvas), line, margin_px=4))
    assert _ink_extent(upright, axis=1) <= 14          # 12 rows of bar, a row of antialiasing each side
    assert _ink_extent(upright, axis=0) >= 396
    assert upright.shape[0] == pytest.approx(12 + 8, abs=2)


def test_skewed_neighbours_are_separate_rows():
    # Two full-width lines 20 px apart, skewed so each box is 35 px tall: the boxes overlap
    # by 15 px (more than half of the shorter box would be needed to join them, but only the bands count).
    angle = 1.0
    first = TextLine((100, 100, 1000, 135), 0.9, angle)
    second = TextLine((100, 120, 1000, 155), 0.9, angle)
    cell_a, cell_b = TextLine((100, 300, 300, 320), 0.9), TextLine((400, 302, 600, 322), 0.9)
    assert line_rows([second, cell_b, first, cell_a]) == [[first], [second], [cell_a, cell_b]]


def test_a_figure_that_is_all_text_lines_is_read_as_text():
    figure = Region("figure", (100, 100, 500, 300), 0.8)
    chart = Region("figure", (100, 400, 500, 700), 0.8)
    dense = [TextLine((100, 105 + 20 * i, 500, 122 + 20 * i), 0.9) for i in range(9)]
    labels = [TextLine((110, 410 + 60 * i, 160, 425 + 60 * i), 0.9) for i in range(4)]
    assigned = assign_lines([figure, chart], dense + labels)
    # a chart's few labels stay with the figure, which keeps them to be read as its text
    assert assigned[0].region == chart and set(assigned[0].lines) == set(labels)
    # the "figure" of text is dropped: its lines make a text block of their own
    assert assigned[1].region.label == "text" and assigned[1].region.task is RecognitionTask.TEXT
    assert set(assigned[1].lines) == set(dense)
    assert len(assigned) == 2


def test_columns_a_little_more_than_a_line_height_apart_stay_apart():
    # 20-px lines, columns 30 px apart (what two columns of 8-point text at 150 DPI look like)
    left = [TextLine((100, 100 + 25 * i, 400, 120 + 25 * i), 0.9) for i in range(4)]
    right = [TextLine((430, 100 + 25 * i, 730, 120 + 25 * i), 0.9) for i in range(4)]
    assert sorted(len(group) for group in group_lines(left + right)) == [4, 4]
    # words of one row 10 px apart are one block
    words = [TextLine((100, 500, 200, 520), 0.9), TextLine((210, 500, 300, 520), 0.9)]
    assert len(group_lines(words)) == 1


def test_a_line_less_text_box_over_lines_read_elsewhere_is_dropped():
    """The layout model boxed the start of a line ("(b)") and a stray strip over two lines of a
    paragraph; read whole, each would repeat text read line by line. A text box over nothing
    the detector found is kept (faint print)."""
    paragraph = Region("text", (100, 100, 900, 160), 0.9)
    stub = Region("text", (100, 200, 150, 230), 0.7)           # covers the first 50 px of an orphan line
    strip = Region("text", (100, 125, 700, 165), 0.6)          # over the paragraph's lines
    faint = Region("text", (100, 400, 500, 440), 0.6)          # no detected line under it
    lines = [TextLine((100, 105, 900, 125), 0.9), TextLine((100, 135, 900, 155), 0.9),
             TextLine((100, 200, 700, 230), 0.9)]
    assigned = assign_lines([paragraph, stub, strip, faint], lines)
    regions = [a.region for a in assigned]
    assert paragraph in regions and faint in regions
    assert stub not in regions and strip not in regions
    assert [a.lines for a in assigned if a.region.source == "lines"] == [(lines[2],)]


def test_a_text_box_inside_a_larger_one_is_folded_into_it():
    """The layout model boxed three lines of a paragraph again; the lines stay one block."""
    paragraph = Region("reference", (100, 100, 900, 400), 0.9)
    nested = Region("reference", (100, 150, 890, 230), 0.6)
    title = Region("title", (100, 100, 400, 130), 0.9)     # a title inside the block keeps its box and line
    heading = TextLine((105, 103, 395, 127), 0.9)
    lines = [TextLine((100, 140 + 25 * i, 880, 157 + 25 * i), 0.9) for i in range(10)]
    assigned = assign_lines([nested, paragraph, title], [heading, *lines])
    regions = [a.region for a in assigned]
    assert nested not in regions and len(assigned) == 2
    assert next(a for a in assigned if a.region.label == "title").lines == (heading,)
    assert set(next(a for a in assigned if a.region.label == "reference").lines) == set(lines)
