"""Words of a curved line (a folded or curled page): their boxes stand on the line's band where
they are, not over the whole bend its box holds; the line keeps its curve through the JSON, and
the searchable PDF sets its invisible text word by word along the bend."""
from __future__ import annotations

import math

import cv2
import numpy as np
import pymupdf
from PIL import Image, ImageDraw, ImageFont

from vision.lines import LineDetector
from workers.line_words import with_words
from workers.page_result import LineResult, PageResult, RegionResult, RegionStatus
from workers.searchable_pdf import text_boxes

WIDTH, HEIGHT, LEFT, TOP, PITCH, SIZE = 1240, 700, 110, 120, 50, 26
AMPLITUDE, PERIODS = 45.0, 1.25
LINES = ["Morning light on the river reached the old station before the market opened.",
         "Every window of the village showed a garden and a picture of the winter.",
         "The letter answered a simple question about the history of music and science.",
         "Better examples were printed on paper with a wide corner for each number.",
         "A shadow crossed the table as the camera found the edge of the last page."]


def _shift(x):
    return AMPLITUDE * np.sin(2 * math.pi * PERIODS * np.asarray(x, dtype=np.float64) / WIDTH)


def _waved_page() -> tuple[np.ndarray, list[list[tuple[str, float, float]]]]:
    """The lines drawn level, then each column moved down by `_shift`; and per line its words
    with the x where each starts and ends."""
    font = ImageFont.truetype("DejaVuSans.ttf", SIZE)
    image = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)
    words = []
    for row, text in enumerate(LINES):
        draw.text((LEFT, TOP + row * PITCH), text, fill="black", font=font)
        placed, at = [], 0
        for word in text.split(" "):
            start = text.index(word, at)
            placed.append((word, LEFT + draw.textlength(text[:start], font=font),
                           LEFT + draw.textlength(text[:start + len(word)], font=font)))
            at = start + len(word)
        words.append(placed)
    pixels = np.asarray(image)
    xs = np.arange(WIDTH, dtype=np.float32)
    map_x = np.broadcast_to(xs[None, :], (HEIGHT, WIDTH)).astype(np.float32)
    map_y = (np.arange(HEIGHT, dtype=np.float32)[:, None] - _shift(xs).astype(np.float32)[None, :])
    return cv2.remap(pixels, map_x, map_y.astype(np.float32), cv2.INTER_LINEAR, borderValue=(255, 255, 255)), words


def test_a_curved_lines_words_stand_on_its_band_and_follow_it_into_the_pdf():
    pixels, truth = _waved_page()
    detected = sorted((line for line in LineDetector().detect(pixels) if line.curve is not None),
                      key=lambda line: line.band[0])
    assert len(detected) == len(LINES)
    lines = tuple(LineResult(tuple(float(v) for v in line.bbox), text, 0.95, curve=line.curve)
                  for line, text in zip(detected, LINES))
    region = RegionResult(0, "text", "text", "body", (0, 0, WIDTH, HEIGHT), (0, 0, 1000, 1000), "\n".join(LINES),
                          RegionStatus.OK, lines=lines)
    grey = cv2.cvtColor(pixels, cv2.COLOR_RGB2GRAY)
    worded = with_words(region, grey=grey)
    placed_right = 0
    for row, (line, words) in enumerate(zip(worded.lines, truth)):
        assert [word.text for word in line.words] == [word for word, _, _ in words]
        for word, (_, start, end) in zip(line.words, words):
            x0, y0, x1, y1 = word.bbox
            middle = TOP + row * PITCH + 0.6 * SIZE + _shift((start + end) / 2)   # the glyphs' middle, about
            assert y0 < middle < y1, (word, middle)
            assert y1 - y0 < 0.6 * (line.bbox[3] - line.bbox[1])     # the band, not the bend
            placed_right += abs((x0 + x1) / 2 - (start + end) / 2) < 0.25 * (end - start) + 3
    assert placed_right >= 0.9 * sum(len(words) for words in truth)
    # the curve survives the JSON; a level line's JSON has no curve key
    line = worded.lines[0]
    assert LineResult.from_dict(line.to_dict()) == line
    assert "curve" not in LineResult((0.0, 0.0, 10.0, 5.0), "a").to_dict()
    # the searchable PDF's text goes word by word, each in its box
    page = PageResult(0, 0, WIDTH, HEIGHT, 150.0, (worded,))
    pieces = text_boxes(page)
    assert len(pieces) == sum(len(words) for words in truth)
    assert all(box[3] - box[1] < 0.6 * (line.bbox[3] - line.bbox[1]) for box, _ in pieces)
