"""Scan noise on a page, and line crops softened before a recogniser that misreads it.

A scanned or photographed page carries sensor grain and JPEG's ringing around every
glyph; a page rendered from a PDF carries none. At 150 DPI small print is 15-25
pixels a line, and the house model's frozen encoder (PP-OCRv4's recogniser) upscales
it to 48 rows, grain and all: on a scan-like copy of 7-pt references it read
"Committee" as "Cormnitee" and "Mathematical" as "Mathernatical". A light Gaussian
blur of the crop first (`SOFTEN_SIGMA` page pixels) removes the grain and ringing
the glyphs do not need (docs/BENCHMARKS.md has the figures, on the real-page set).
On a clean render it only costs sharpness, so crops are softened on noisy pages only,
and only small print (lines at most `SMALL_PRINT_PX` thick), which the encoder magnifies
most: on lines of 24-28 pixels the blur cost as many words as it saved.

`scan_noise` estimates the page's noise as the standard deviation of its grey levels
in the paper away from ink, from the mean absolute response of a second-difference
kernel that cancels constant and linearly varying shading (Immerkaer, "Fast noise
variance estimation", 1996). A rendered page's paper is flat and gives 0.0; the
scan-like copies of the benchmark, JPEG-smoothed, give 0.2-1.1.
"""
from __future__ import annotations

import math

import cv2
import numpy as np
from PIL import Image

NOISY_PAGE = 0.1      # grey levels of paper noise above which a page counts as scanned
SOFTEN_SIGMA = 1.0    # page pixels
SMALL_PRINT_PX = 23   # lines at most this thick (upright, page pixels) are softened: ~8 pt at 150 DPI
_INK_CONTRAST = 40    # grey levels below the page's median that count as ink
_NEAR_INK = 7         # pixels around ink left out of the estimate (glyph edges are not noise)
_KERNEL = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], np.float32)   # response std = 6 sigma


def scan_noise(image: Image.Image) -> float:
    """Standard deviation (grey levels) of the noise on the page's paper; 0.0 for a flat one."""
    grey = np.asarray(image.convert("L"), dtype=np.float32)
    if grey.shape[0] < 3 or grey.shape[1] < 3:
        return 0.0
    response = np.abs(cv2.filter2D(grey, -1, _KERNEL))[1:-1, 1:-1]
    ink = (grey < np.median(grey) - _INK_CONTRAST).astype(np.uint8)
    near_ink = cv2.dilate(ink, np.ones((_NEAR_INK, _NEAR_INK), np.uint8))[1:-1, 1:-1] > 0
    paper = response[~near_ink]
    if paper.size == 0:
        return 0.0
    return float(math.sqrt(math.pi / 2) * paper.mean() / 6)


def soften(crop: Image.Image, sigma: float = SOFTEN_SIGMA) -> Image.Image:
    """The crop blurred by a Gaussian of `sigma` pixels (the same size and mode)."""
    pixels = np.asarray(crop)
    return Image.fromarray(cv2.GaussianBlur(pixels, (0, 0), sigma), crop.mode)
