"""Photographs of pages, made from page renders: what vision/photo.py is tested and
benchmarked on (bench/photos.py imports this file too).

How a photo is made from a page image (`make_photo`), seeded so the same page gives the same photo:
1. curl: every column of the page moved down by `bow * sin(pi * x / width)` pixels (a page
   bent about a vertical axis, as a book's page bows), by a remap; the corners stay put;
2. background: a canvas larger than the page (the page takes about `page_share` of it),
   a brownish colour gradient with noise, like a desk;
3. perspective: the page's corners sent to a jittered rectangle in the canvas (each corner
   moved by up to `tilt` of the page's size) by a homography, and composited on the canvas;
4. shading: the whole frame multiplied by a linear light falloff (to 0.7) and a soft shadow
   band across it (to 0.75);
5. rotation by 0, 90, 180 or 270 degrees clockwise (the camera held any way);
6. optics and sensor: Gaussian blur (sigma 0.7), grain (sigma 3 grey levels), JPEG quality 85.
The page's true corners in the photo are returned with it (TL, TR, BR, BL of the page as it reads).
"""
from __future__ import annotations

import io
import math
import random
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont


@dataclass(frozen=True)
class MadePhoto:
    jpeg: bytes
    corners: np.ndarray      # [4, 2] page corners TL, TR, BR, BL (of the page as it reads) in photo pixels
    rotation: int            # degrees the page was turned clockwise in the photo


def make_photo(page: np.ndarray, seed: str, rotation: int = 0, bow: float = 0.02, tilt: float = 0.08,
               page_share: float = 0.55) -> MadePhoto:
    """`page`: RGB [height, width, 3] uint8; `bow` of the page height; see the module docstring."""
    rng = random.Random(seed)
    height, width = page.shape[:2]
    lift = bow * height
    curled = _curl(page, lift)
    canvas_w = round(width / math.sqrt(page_share))
    canvas_h = round(height / math.sqrt(page_share))
    left, top = (canvas_w - width) / 2, (canvas_h - height) / 2
    square = np.float32([[left, top], [left + width, top], [left + width, top + height], [left, top + height]])
    jitter = np.float32([[rng.uniform(-tilt, tilt) * width, rng.uniform(-tilt, tilt) * height] for _ in range(4)])
    corners = square + jitter
    source = np.float32([[0, 0], [width, 0], [width, height], [0, height]])
    homography = cv2.getPerspectiveTransform(source, corners)
    warped = cv2.warpPerspective(curled, homography, (canvas_w, canvas_h), flags=cv2.INTER_LINEAR)
    coverage = cv2.warpPerspective(_curl_mask(page, lift),
                                   homography, (canvas_w, canvas_h)).astype(np.float32)[:, :, None] / 255
    frame = warped * coverage + _desk(canvas_h, canvas_w, rng) * (1 - coverage)
    frame *= _light(canvas_h, canvas_w, rng)[:, :, None]
    frame = cv2.GaussianBlur(frame, (0, 0), 0.7)
    frame += np.random.default_rng(rng.randrange(1 << 30)).normal(0, 3, frame.shape)
    photo = np.clip(frame, 0, 255).astype(np.uint8)
    photo, corners = _turn(photo, corners, rotation)
    buffer = io.BytesIO()
    Image.fromarray(photo).save(buffer, format="JPEG", quality=85)
    return MadePhoto(buffer.getvalue(), corners, rotation)


_VOCABULARY = ("the page photo camera light table shadow corner edge paper print reading line word river "
               "morning garden window letter number market station village winter summer history "
               "science music picture answer question example simple better").split()
_TOP, _PITCH = 120, 50


def page_lines(seed: int = 0, height: int = 1754) -> list[str]:
    """The lines of prose `text_page` draws on a page `height` pixels tall."""
    rng = random.Random(seed)
    num_lines = max(1, (height - 2 * _TOP) // _PITCH)
    return [" ".join(rng.choice(_VOCABULARY) for _ in range(9)).capitalize() + "." for _ in range(num_lines)]


def text_page(seed: int = 0, width: int = 1240, height: int = 1754) -> np.ndarray:
    """A page of plain English prose (DejaVu Sans, 150 DPI A4): a stand-in for a real page in tests."""
    font = ImageFont.truetype("DejaVuSans.ttf", 26)
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(page_lines(seed, height)):
        draw.text((110, _TOP + row * _PITCH), line, fill="black", font=font)
    return np.asarray(image)


def _curl(page: np.ndarray, lift: float) -> np.ndarray:
    """The page with each column moved down; taller by `lift` so its bottom edge bows too."""
    height, width = page.shape[:2]
    out_h = height + math.ceil(lift)
    xs = np.arange(width, dtype=np.float32)
    shift = (lift * np.sin(np.pi * xs / max(1, width - 1))).astype(np.float32)        # [width]
    map_x = np.broadcast_to(xs[None, :], (out_h, width)).astype(np.float32)
    map_y = (np.arange(out_h, dtype=np.float32)[:, None] - shift[None, :]).astype(np.float32)
    return cv2.remap(page, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0))


def _curl_mask(page: np.ndarray, lift: float) -> np.ndarray:
    return _curl(np.full(page.shape[:2] + (3,), 255, np.uint8), lift)[:, :, 0]


def _desk(height: int, width: int, rng: random.Random) -> np.ndarray:
    base = np.array([rng.uniform(90, 130), rng.uniform(70, 100), rng.uniform(50, 80)], np.float32)
    ramp = np.linspace(0.8, 1.2, width, dtype=np.float32)[None, :, None]
    noise = np.random.default_rng(rng.randrange(1 << 30)).normal(0, 8, (height, width, 1)).astype(np.float32)
    return base[None, None, :] * ramp + noise


def _light(height: int, width: int, rng: random.Random) -> np.ndarray:
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    angle = rng.uniform(0, 2 * np.pi)
    along = (np.cos(angle) * xs + np.sin(angle) * ys) / max(height, width)
    falloff = 1.0 - 0.3 * (along - along.min()) / (np.ptp(along) + 1e-6)
    across = (np.cos(angle + 1.2) * xs + np.sin(angle + 1.2) * ys) / max(height, width)
    centre = rng.uniform(across.min(), across.max())
    shadow = 1.0 - 0.25 * np.exp(-((across - centre) / 0.06) ** 2)
    return falloff * shadow


def _turn(photo: np.ndarray, corners: np.ndarray, rotation: int) -> tuple[np.ndarray, np.ndarray]:
    """The photo turned `rotation` degrees clockwise, and the corners with it."""
    height, width = photo.shape[:2]
    points = corners.astype(np.float64)
    for _ in range(rotation // 90 % 4):
        points = np.stack([height - points[:, 1], points[:, 0]], axis=1)   # (x, y) -> (H - y, x)
        height, width = width, height
    return np.ascontiguousarray(np.rot90(photo, k=-(rotation // 90))), points
