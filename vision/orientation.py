"""Which way up a page is: 0, 90, 180 or 270 degrees, from its text lines.

Two questions, two cheap answers:

- Sideways or not: the PP-OCRv4 line detector (`vision.lines`) finds next to no
  lines on a page turned by 90 degrees (none at all on our test pages), so it runs
  on the page as it is and turned, and the way with the greater length of lines
  wins. (Ink profiles, tried first, took a title page's rules and a table of
  contents' column of page numbers for lines.)
- Which end up: PP-OCR's text direction classifier (the mobile v2.0 "cls" model
  shipped in rapidocr-onnxruntime 1.4.4, two classes: a line image upright or
  turned by 180) reads the page's `_NUM_VOTES` longest lines, as they are and
  turned; the way with the higher mean probability of "180" is the turned one.

Lines are found on copies at most `_DETECT_SIDE` pixels long: two detector passes a page.

A page of vertical writing (Chinese, Japanese) has its lines running down the page as it is,
so the detector finds longer lines turned, as on a page lying on its side. What tells the two
apart is the glyphs: down a column of vertical writing they are square cells (each about as
tall as the column is wide), down a line of Latin print turned on its side they are letters,
about half as long as the line is high. Where the page turned would win, the columns of the
page as it is are measured (`_writes_down`), and a page of square cells stays as it is.
"""
from __future__ import annotations

import math

import cv2
import numpy as np

from vision.lines import LineDetector
from vision.onnx_models import TEXT_DIRECTION_PPOCR, get_session

_DETECT_SIDE = 1280        # longest side the lines are detected at
_ELONGATED = 2.0           # a box this many times longer one way than the other counts as a line
_NUM_VOTES = 24            # longest lines sent to the direction classifier
_PIECES_PER_LINE = 3       # pieces of the classifier's aspect cut from each
# vertical writing: down its columns, the median glyph cell is at least this long for the
# column's width (measured: 0.89 on a page of Japanese, 0.48 on Latin print on its side), over
# at least `_MIN_CELLS` cells
_SQUARE_CELLS = 0.7
_MIN_CELLS = 12
_CLS_HEIGHT, _CLS_WIDTH = 48, 192   # the classifier's input: [batch, 3, 48, 192]


def upright_rotation(page: np.ndarray, num_threads: int = 2) -> int:
    """Degrees (0, 90, 180, 270) to turn `page` (RGB [height, width, 3] uint8) clockwise so its
    text reads upright; 0 when it holds no lines to go by."""
    detector = LineDetector(num_threads, max_side_len=_DETECT_SIDE, lone_glyphs=False)
    turned = np.ascontiguousarray(np.rot90(page, k=-1))            # clockwise
    found = [line.bbox for line in detector.detect(page)]
    as_is, sideways = _lines(found), _lines([line.bbox for line in detector.detect(turned)])
    if _length(sideways) > _length(as_is) and _writes_down(page, found):
        return 0
    rotation, lines, page = (90, sideways, turned) if _length(sideways) > _length(as_is) else (0, as_is, page)
    if lines and _upside_down(page, lines[:_NUM_VOTES], num_threads):
        rotation += 180
    return rotation


def _upside_down(page: np.ndarray, boxes: list[tuple[int, int, int, int]], num_threads: int) -> bool:
    """The classifier asked both ways, the page as it is and turned by 180: it leans to
    "turned" on some pages either way (a letter on a photo read 0.73 one way, above 0.5
    the other), so the way it finds more turned is the turned one."""
    height, width = page.shape[:2]
    flipped = np.ascontiguousarray(page[::-1, ::-1])
    flipped_boxes = [(width - x1, height - y1, width - x0, height - y0) for x0, y0, x1, y1 in boxes]
    return turned_probability(page, boxes, num_threads) > turned_probability(flipped, flipped_boxes, num_threads)


def line_is_turned(crop: np.ndarray, num_threads: int = 2) -> bool:
    """Whether one line's crop (RGB, running across) reads upside down: the classifier asked
    both ways, as for a page. A vertical line is cut out turned a quarter anticlockwise, which
    sets a column of Chinese or Japanese and a label printed bottom to top upright, and one
    printed top to bottom upside down."""
    height, width = crop.shape[:2]
    if height < 2 or width < 2:
        return False
    box = [(0, 0, width, height)]
    flipped = np.ascontiguousarray(crop[::-1, ::-1])
    return turned_probability(crop, box, num_threads) > turned_probability(flipped, box, num_threads)


def _lines(boxes: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Of the detected `boxes`, the lines that run across the page, longest first."""
    return sorted((box for box in boxes if box[2] - box[0] >= _ELONGATED * (box[3] - box[1])),
                  key=lambda box: box[2] - box[0], reverse=True)


def _writes_down(page: np.ndarray, boxes: list[tuple[int, int, int, int]]) -> bool:
    """Whether the lines running down the page (of `boxes`, all it holds), as it is, are columns
    of square glyph cells (vertical writing) rather than lines of letters on their side."""
    cells: list[float] = []
    for x0, y0, x1, y1 in boxes:
        if y1 - y0 < _ELONGATED * (x1 - x0):
            continue
        grey = cv2.cvtColor(page[y0:y1, x0:x1], cv2.COLOR_RGB2GRAY)
        if int(grey.max()) - int(grey.min()) < 40:
            continue
        _, ink = cv2.threshold(grey, 0, 255, cv2.THRESH_BINARY_INV | cv2.THRESH_OTSU)
        inked_columns = np.flatnonzero(ink.any(axis=0))
        if inked_columns.size == 0:
            continue
        rows = ink.any(axis=1).astype(np.int8)
        edges = np.flatnonzero(np.diff(np.concatenate([[0], rows, [0]])))   # starts and ends of inked runs
        width = inked_columns[-1] - inked_columns[0] + 1
        cells += [(end - start) / width for start, end in zip(edges[::2], edges[1::2])]
    return len(cells) >= _MIN_CELLS and float(np.median(cells)) >= _SQUARE_CELLS


def _length(boxes: list[tuple[int, int, int, int]]) -> int:
    return sum(x1 - x0 for x0, _, x1, _ in boxes)


def turned_probability(page: np.ndarray, boxes: list[tuple[int, int, int, int]], num_threads: int = 2) -> float:
    """Mean probability, over pieces of the lines at `boxes`, that the text is upside down."""
    batch = np.stack([_classifier_input(page[y0:y1, x0:x1]) for x0, y0, x1, y1 in _pieces(boxes)])
    session = get_session(TEXT_DIRECTION_PPOCR, num_threads)
    probabilities = session.run(None, {session.get_inputs()[0].name: batch})[0]   # [lines, 2]: 0, 180
    return float(probabilities[:, 1].mean())


def _pieces(boxes: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Each line cut into up to `_PIECES_PER_LINE` pieces of the classifier's aspect (4:1), from
    its middle: a whole line squeezed into 192 columns is a smear it reads either way (a
    letter's 880 x 28 lines, squeezed eightfold, came out "turned" both ways)."""
    pieces = []
    for x0, y0, x1, y1 in boxes:
        piece_w = _CLS_WIDTH * (y1 - y0) // _CLS_HEIGHT
        count = max(1, min(_PIECES_PER_LINE, (x1 - x0) // max(1, piece_w)))
        left = (x0 + x1 - count * piece_w) // 2
        pieces += [(max(x0, left + i * piece_w), y0, min(x1, left + (i + 1) * piece_w), y1) for i in range(count)]
    return pieces


def _classifier_input(crop: np.ndarray) -> np.ndarray:
    """A line crop as PP-OCR's classifier takes it: BGR, 48 rows, at most 192 columns keeping
    its aspect, scaled to [-1, 1], zero-padded on the right. [3, 48, 192] float32."""
    height, width = crop.shape[:2]
    resized_w = min(_CLS_WIDTH, max(1, math.ceil(_CLS_HEIGHT * width / max(1, height))))
    bgr = np.ascontiguousarray(crop[:, :, ::-1])
    resized = cv2.resize(bgr, (resized_w, _CLS_HEIGHT)).astype(np.float32)
    scaled = (resized.transpose(2, 0, 1) / 255.0 - 0.5) / 0.5                    # [3, 48, w]
    out = np.zeros((3, _CLS_HEIGHT, _CLS_WIDTH), np.float32)
    out[:, :, :resized_w] = scaled
    return out
