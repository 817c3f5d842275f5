"""Cutting regions and lines out of a page image, and boxes in the 0-1000 grid.

A crop gets a small margin so that glyphs touching the detected box keep their
edges (recognisers read clipped descenders badly), and is clamped to the page.
The 0-1000 grid is the page-size-independent form of a box that GLM-OCR-style
outputs use: x scaled by 1000 / page width, y by 1000 / page height.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import cv2
import numpy as np
from PIL import Image

from vision.curve import Curve, band_rows
from vision.orientation import line_is_turned

DEFAULT_MARGIN_PX = 4
NORMALISED_SCALE = 1000


def crop_box(bbox: Sequence[float], page_width: int, page_height: int,
             margin_px: int = DEFAULT_MARGIN_PX) -> tuple[int, int, int, int]:
    """Integer pixel box (x1, y1 exclusive) covering `bbox` plus a margin, inside the page."""
    assert page_width >= 1 and page_height >= 1 and margin_px >= 0
    x0, y0, x1, y1 = bbox
    assert x1 >= x0 and y1 >= y0, f"malformed box {tuple(bbox)}"
    left = min(max(0, math.floor(x0) - margin_px), page_width - 1)
    top = min(max(0, math.floor(y0) - margin_px), page_height - 1)
    right = max(min(page_width, math.ceil(x1) + margin_px), left + 1)
    bottom = max(min(page_height, math.ceil(y1) + margin_px), top + 1)
    return left, top, right, bottom


def crop_image(image: Image.Image, bbox: Sequence[float], margin_px: int = DEFAULT_MARGIN_PX) -> Image.Image:
    """The part of a PIL page image under `bbox` (page pixels), with a margin; never empty."""
    return image.crop(crop_box(bbox, image.width, image.height, margin_px))


def crop_line(image: Image.Image, line, margin_px: int = DEFAULT_MARGIN_PX) -> Image.Image:
    """A text line (`vision.lines.TextLine`) cut out upright: a skewed line is rotated about
    its centre so its baseline is level, and only its own rectangle (plus the margin) is kept,
    not the slices of neighbouring lines its axis-aligned box holds. Pixels beyond the page
    repeat its edge. A level line is a plain `crop_image`; a vertical one (`TextLine.vertical`)
    is turned to run across, its top at the left, and turned round where it was printed the
    other way (`vision.orientation.line_is_turned`); a curved one (`TextLine.curve`) is cut out
    along its middle (`_curved_crop`)."""
    if getattr(line, "vertical", False):
        return _vertical_crop(image, line, margin_px)
    if getattr(line, "curve", None) is not None:
        return _curved_crop(image, line, margin_px)
    if abs(line.angle) < 0.05:
        return crop_image(image, line.bbox, margin_px)
    length, thickness = line.upright_size
    width, height = max(1, round(length) + 2 * margin_px), max(1, round(thickness) + 2 * margin_px)
    # Only the neighbourhood of the line is converted and warped, not the page: the levelled
    # rectangle plus its margin lies within the box grown by margin * (cos + sin) < 2 * margin.
    left, top, right, bottom = crop_box(line.bbox, image.width, image.height, 2 * margin_px + 2)
    local = image.crop((left, top, right, bottom))
    pixels = np.asarray(local if local.mode == "RGB" else local.convert("RGB"))
    centre_x = (line.bbox[0] + line.bbox[2]) / 2 - left
    centre_y = (line.bbox[1] + line.bbox[3]) / 2 - top
    # Rotating clockwise by the line's angle levels it; then move its centre to the crop's.
    matrix = cv2.getRotationMatrix2D((centre_x, centre_y), -line.angle, 1.0)
    matrix[0, 2] += width / 2 - centre_x
    matrix[1, 2] += height / 2 - centre_y
    upright = cv2.warpAffine(pixels, matrix, (width, height), flags=cv2.INTER_LINEAR,
                             borderMode=cv2.BORDER_REPLICATE)
    return Image.fromarray(upright)


def _curved_crop(image: Image.Image, line, margin_px: int) -> Image.Image:
    """A curved line straightened (`curved_band`): only its band (its thickness plus the margin)
    is kept, not the neighbours its box spans; columns keep their x, so what is read at a crop's
    column stands at the page's."""
    # Only the neighbourhood of the line is converted, not the page.
    left, top, right, bottom = crop_box(line.bbox, image.width, image.height, margin_px + 1)
    local = image.crop((left, top, right, bottom))
    pixels = np.asarray(local if local.mode == "RGB" else local.convert("RGB"))
    height = max(1, round(line.curve.thickness) + 2 * margin_px)
    return Image.fromarray(curved_band(pixels, line.curve, line.bbox[0] - margin_px, line.bbox[2] + margin_px,
                                       height, (left, top)))


def curved_band(pixels: np.ndarray, curve: Curve, x0: int, x1: int, height: int,
                origin: tuple[int, int] = (0, 0)) -> np.ndarray:
    """The band `height` rows tall along a curved line's middle (`vision.curve.Curve`), page
    columns x0..x1-1, straightened: each column of the result is the page's column at that x,
    moved so the middle runs level through the result's middle. `pixels` is the page, or the
    part of it whose top left pixel is page pixel `origin`; pixels beyond it repeat its edge."""
    xs, tops = band_rows(curve, x0, max(x1, x0 + 1), height)
    map_x = np.broadcast_to(xs[None, :] - origin[0], (height, len(xs))).astype(np.float32)
    map_y = (tops[None, :] + np.arange(height, dtype=np.float32)[:, None] - origin[1]).astype(np.float32)
    return cv2.remap(pixels, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def _vertical_crop(image: Image.Image, line, margin_px: int) -> Image.Image:
    across = crop_image(image, line.bbox, margin_px).transpose(Image.Transpose.ROTATE_90)   # anticlockwise
    if line_is_turned(np.asarray(across if across.mode == "RGB" else across.convert("RGB"))):
        return across.transpose(Image.Transpose.ROTATE_180)
    return across


def crop_array(image: np.ndarray, bbox: Sequence[float], margin_px: int = DEFAULT_MARGIN_PX) -> np.ndarray:
    """The same for an array page image [height, width, channels]; a view, not a copy."""
    left, top, right, bottom = crop_box(bbox, image.shape[1], image.shape[0], margin_px)
    return image[top:bottom, left:right]


def normalise_box(bbox: Sequence[float], page_width: int, page_height: int) -> tuple[int, int, int, int]:
    """`bbox` in page pixels -> integers on the 0-1000 grid, clamped."""
    assert page_width >= 1 and page_height >= 1
    x0, y0, x1, y1 = bbox

    def scale(value: float, size: int) -> int:
        return int(min(NORMALISED_SCALE, max(0, round(value * NORMALISED_SCALE / size))))

    return scale(x0, page_width), scale(y0, page_height), scale(x1, page_width), scale(y1, page_height)


def denormalise_box(box: Sequence[float], page_width: int, page_height: int) -> tuple[float, float, float, float]:
    """A 0-1000 grid box -> page pixels (the inverse of `normalise_box`, up to rounding)."""
    x0, y0, x1, y1 = box
    return (x0 * page_width / NORMALISED_SCALE, y0 * page_height / NORMALISED_SCALE,
            x1 * page_width / NORMALISED_SCALE, y1 * page_height / NORMALISED_SCALE)
