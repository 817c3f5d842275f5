"""Pages whose lines rise and fall across them (a page folded, curled, or bent on the scanner's
glass, as augraphy's folds make them): each line is found as one curved line, not a box over two or
three of them, and is cut out along its curve, so a recogniser gets one straight line of print."""
from __future__ import annotations

import math
import subprocess

import cv2
import numpy as np
import pytest
from PIL import Image

from photo_samples import page_lines, text_page
from vision.crops import crop_image, crop_line
from vision.lines import Curve, LineDetector
from vision.page_analysis import PageLayout
from vision.reading_order import line_rows

AMPLITUDE = 45.0   # px of rise and fall: about a line pitch (50 px), so a line's box holds its neighbours


def _waved(pixels: np.ndarray, amplitude: float = AMPLITUDE, periods: float = 1.25) -> np.ndarray:
    """The page with each column moved down by a sine of its x."""
    height, width = pixels.shape[:2]
    xs = np.arange(width, dtype=np.float32)
    shift = (amplitude * np.sin(2 * math.pi * periods * xs / width)).astype(np.float32)
    map_x = np.broadcast_to(xs[None, :], (height, width)).astype(np.float32)
    map_y = (np.arange(height, dtype=np.float32)[:, None] - shift[None, :]).astype(np.float32)
    return cv2.remap(pixels, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                     borderValue=(255, 255, 255))


def _tesseract(image: Image.Image) -> str:
    with_png = cv2.imencode(".png", np.asarray(image.convert("L")))[1].tobytes()
    return subprocess.run(["tesseract", "stdin", "stdout", "--psm", "7", "-l", "eng"], input=with_png,
                          capture_output=True, check=True).stdout.decode().strip()


def _recall(read: list[str], truth: list[str]) -> float:
    """Share of the truth's words found in the readings (as a multiset, case and full stops aside)."""
    def words(texts):
        return [w.strip(".,").lower() for text in texts for w in text.split()]
    left = words(read)
    found = 0
    for word in words(truth):
        if word in left:
            left.remove(word)
            found += 1
    return found / max(1, len(words(truth)))


@pytest.fixture(scope="module")
def waved():
    pixels = _waved(text_page(seed=3))
    return pixels, LineDetector().detect(pixels)


def test_a_waved_pages_lines_are_found_each_alone_and_read_along_their_curve(waved):
    pixels, lines = waved
    truth = page_lines(seed=3)
    curved = [line for line in lines if line.curve is not None]
    assert len(curved) >= 0.9 * len(truth) and len(lines) <= len(truth) + 2
    image = Image.fromarray(pixels)
    along = [_tesseract(crop_line(image, line)) for line in curved]
    boxed = [_tesseract(crop_image(image, line.bbox)) for line in curved]
    assert _recall(along, truth) >= 0.9
    assert _recall(boxed, truth) < 0.6      # what cutting their boxes gave: two or three lines in each
    for line in curved:
        crop = crop_line(image, line)
        assert crop.height <= line.curve.thickness + 10 < 0.6 * line.height
        assert crop.width == line.bbox[2] - line.bbox[0] + 8     # columns keep their x
    # each line its own row, top to bottom (rows go by the lines' bands, not their boxes)
    rows = line_rows(curved)
    assert len(rows) == len(curved)


def test_straight_and_skewed_pages_have_no_curved_lines():
    page = text_page(seed=4)
    height, width = page.shape[:2]
    skewed = cv2.warpAffine(page, cv2.getRotationMatrix2D((width / 2, height / 2), 1.5, 1.0), (width, height),
                            borderValue=(255, 255, 255))
    for pixels in (page, skewed):
        lines = LineDetector().detect(pixels)
        assert len(lines) >= 25 and all(line.curve is None for line in lines)


def test_a_curve_survives_the_layouts_json(waved):
    _, lines = waved
    line = next(line for line in lines if line.curve is not None)
    assert Curve.from_dict(line.curve.to_dict()).thickness == pytest.approx(line.curve.thickness, abs=0.05)
    assert Curve.from_dict(None) is None
    data = {"width": 1240, "height": 1754, "timings": {"render_s": 0.0, "layout_s": 0.0, "lines_s": 0.0,
                                                       "order_s": 0.0},
            "blocks": [{"reading_index": 0, "label": "text", "task": "text", "role": "body", "bbox": [0, 0, 1240, 1754],
                        "score": 1.0, "source": "layout",
                        "lines": [{"bbox": list(line.bbox), "score": line.score, "angle": 0.0, "vertical": False,
                                   "curve": line.curve.to_dict()}]}]}
    [block] = PageLayout.from_dict(data).blocks
    assert block.lines[0].curve is not None
    assert PageLayout.from_dict(data).to_dict()["blocks"][0]["lines"][0]["curve"] == line.curve.to_dict()
