"""Which way up a page is: 0, 90, 180 or 270 degrees, from its text lines.

Two questions, two cheap answers:

- Sideways or not: ink profiles. Across lines of print, ink comes and goes with
  every line; along them, many lines average out (`_line_contrast`). The
  PP-OCRv4 line detector cannot answer this one: it finds no lines at all on a
  page turned by 90 degrees.
- Which end up: PP-OCR's text direction classifier (the mobile v2.0 "cls" model
  shipped in rapidocr-onnxruntime 1.4.4, two classes: a line image upright or
  turned by 180) reads the page's `_NUM_VOTES` longest lines; their mean
  probability of "180" decides.

Lines are found on a copy at most `_DETECT_SIDE` pixels long.
"""
from __future__ import annotations

import math

import cv2
import numpy as np

from vision.lines import LineDetector
from vision.onnx_models import TEXT_DIRECTION_PPOCR, get_session

_DETECT_SIDE = 1280        # longest side the lines are detected at
_PROFILE_SIDE = 1000       # longest side the ink profiles are taken at
_ELONGATED = 2.0           # a box this many times longer one way than the other counts as a line
_NUM_VOTES = 24            # longest lines sent to the direction classifier
_CLS_HEIGHT, _CLS_WIDTH = 48, 192   # the classifier's input: [batch, 3, 48, 192]
_TURNED_FROM = 0.5         # mean probability of "180" from which the page is turned


def is_sideways(page: np.ndarray) -> bool:
    """Whether the page's lines of text run up and down (the page turned by 90 or 270)."""
    return _line_contrast(page, axis=1) < _line_contrast(page, axis=0)


def is_upside_down(page: np.ndarray, num_threads: int = 2) -> bool:
    """Whether the page (RGB [height, width, 3] uint8, lines running across) is turned by 180;
    False when it holds no lines to go by."""
    boxes = [line.bbox for line in LineDetector(num_threads, max_side_len=_DETECT_SIDE).detect(page)]
    lines = sorted((box for box in boxes if box[2] - box[0] >= _ELONGATED * (box[3] - box[1])),
                   key=lambda box: box[2] - box[0], reverse=True)[:_NUM_VOTES]
    return bool(lines) and turned_probability(page, lines, num_threads) >= _TURNED_FROM


def _line_contrast(page: np.ndarray, axis: int) -> float:
    """How strongly ink comes and goes across the page's rows (axis 1: a profile over rows)
    or its columns (axis 0): lines of print alternate with blank leading across their
    direction, while along it the ink of many lines averages out. Mean absolute step of the
    ink profile, per unit of ink."""
    height, width = page.shape[:2]
    scale = min(1.0, _PROFILE_SIDE / max(height, width))
    grey = cv2.resize(cv2.cvtColor(page, cv2.COLOR_RGB2GRAY), (max(1, round(width * scale)),
                      max(1, round(height * scale))), interpolation=cv2.INTER_AREA)
    ink = cv2.adaptiveThreshold(grey, 1, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV, 31, 15)
    profile = cv2.GaussianBlur(ink.sum(axis=axis).astype(np.float32)[None, :], (0, 0), 1.0)[0]
    return float(np.abs(np.diff(profile)).sum() / (profile.sum() + 1e-6))


def turned_probability(page: np.ndarray, boxes: list[tuple[int, int, int, int]], num_threads: int = 2) -> float:
    """Mean probability, over the line crops at `boxes`, that the text is upside down."""
    batch = np.stack([_classifier_input(page[y0:y1, x0:x1]) for x0, y0, x1, y1 in boxes])
    session = get_session(TEXT_DIRECTION_PPOCR, num_threads)
    probabilities = session.run(None, {session.get_inputs()[0].name: batch})[0]   # [lines, 2]: 0, 180
    return float(probabilities[:, 1].mean())


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
