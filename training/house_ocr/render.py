"""Typesetting a line of text the way the page pipeline will crop it, then ageing
it like a scan.

Sizes follow print: 7-14 pt at 100-300 DPI (9-58 pixels per em). The crop keeps
the margins the line detector leaves (its boxes are grown by the DB unclip ratio
and `vision.crops` adds a few pixels), sometimes with a sliver of the line above
or below. Scan-likeness: paper tone and ink colour, small rotation, blur,
resolution loss, sensor noise, JPEG, the odd binarised (fax-like) crop.
"""
from __future__ import annotations

import functools
import io
import random

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from training.house_ocr.fonts import Font


@functools.lru_cache(maxsize=512)
def _pil_font(path: str, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(path, size)


def font_pixels(rng: random.Random, points_range: tuple[float, float] = (7.0, 14.0)) -> int:
    points = rng.uniform(*points_range)
    dpi = rng.choice([100, 120, 150, 150, 150, 200, 200, 240, 300, 300])
    return max(8, int(round(points * dpi / 72.0)))


def render_line(text: str, font: Font, size_px: int, rng: random.Random,
                paper: int = 255, ink: int = 0, word_gap: float = 1.0) -> np.ndarray:
    """A clean RGB crop [h, w, 3] uint8 of `text` with detector-like margins. `word_gap` > 1
    widens every space by that factor, as justified text does."""
    pil_font = _pil_font(font.path, size_px)
    extra = 0
    if word_gap > 1.0 and " " in text.strip():
        extra = int(round(pil_font.getlength(" ") * (word_gap - 1.0)))
    left, top, right, bottom = pil_font.getbbox(text)
    right += extra * text.count(" ")
    ascent, descent = pil_font.getmetrics()
    # the detector boxes ink, but never less than about an x-height
    top = min(top, ascent - int(0.55 * size_px))
    bottom = max(bottom, ascent)
    pad_x = [int(rng.uniform(0.1, 0.6) * size_px) + rng.randint(2, 6) for _ in range(2)]
    pad_y = [int(rng.uniform(0.08, 0.45) * size_px) + rng.randint(2, 6) for _ in range(2)]
    width = max(4, right - left + pad_x[0] + pad_x[1])
    height = max(4, bottom - top + pad_y[0] + pad_y[1])
    image = Image.new("L", (width, height), paper)
    draw = ImageDraw.Draw(image)
    if extra:
        x = pad_x[0] - left
        for word in text.split(" "):
            draw.text((x, pad_y[0] - top), word, font=pil_font, fill=ink)
            x += pil_font.getlength(word + " ") + extra
    else:
        draw.text((pad_x[0] - left, pad_y[0] - top), text, font=pil_font, fill=ink)
    if rng.random() < 0.12:   # a sliver of the neighbouring line
        other = "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
                        for _ in range(max(1, len(text))))
        shift = int(rng.uniform(0.75, 1.0) * (bottom - top + pad_y[0] + pad_y[1]))
        draw.text((pad_x[0] - left, pad_y[0] - top + (shift if rng.random() < 0.5 else -shift)), other,
                  font=pil_font, fill=ink)
    if rng.random() < 0.05:   # underline
        y = min(height - 1, pad_y[0] - top + ascent + max(1, size_px // 10))
        draw.line([(pad_x[0], y), (width - pad_x[1], y)], fill=ink, width=max(1, size_px // 14))
    return np.asarray(image.convert("RGB"))


def age(image: np.ndarray, rng: random.Random) -> np.ndarray:
    """Scan-like version of a crop (uint8 RGB in, uint8 RGB out)."""
    out = image.astype(np.float32)
    height, width = out.shape[:2]
    if rng.random() < 0.5:
        angle = rng.uniform(-1.2, 1.2)
        matrix = cv2.getRotationMatrix2D((width / 2, height / 2), angle, 1.0)
        out = cv2.warpAffine(out, matrix, (width, height), borderMode=cv2.BORDER_REPLICATE)
    if rng.random() < 0.3:
        factor = rng.uniform(0.45, 0.9)
        small = cv2.resize(out, (max(2, int(width * factor)), max(2, int(height * factor))),
                           interpolation=cv2.INTER_AREA)
        out = cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR)
    if rng.random() < 0.45:
        out = cv2.GaussianBlur(out, (0, 0), rng.uniform(0.3, 1.1))
    if rng.random() < 0.07:
        gray = out.mean(axis=2, keepdims=True)
        threshold = rng.uniform(110, 170)
        out = np.repeat(np.where(gray > threshold, 255.0, 0.0), 3, axis=2)
    if rng.random() < 0.5:
        out = out + np.random.default_rng(rng.getrandbits(32)).normal(0, rng.uniform(2, 14), out.shape)
    if rng.random() < 0.3:   # uneven illumination
        ramp = np.linspace(rng.uniform(-25, 0), rng.uniform(-25, 0), width, dtype=np.float32)[None, :, None]
        out = out + ramp
    out = np.clip(out, 0, 255).astype(np.uint8)
    if rng.random() < 0.45:
        buffer = io.BytesIO()
        Image.fromarray(out).save(buffer, format="JPEG", quality=rng.randint(25, 88))
        out = np.asarray(Image.open(io.BytesIO(buffer.getvalue())).convert("RGB"))
    return out


def tint(image: np.ndarray, rng: random.Random) -> np.ndarray:
    """Paper tone and ink colour: map white -> paper, black -> ink, per channel."""
    paper = np.array([rng.uniform(215, 255)] * 3) - np.array([0, rng.uniform(0, 12), rng.uniform(0, 30)])
    ink = np.array([rng.uniform(0, 90)] * 3) + (np.array([0, 0, rng.uniform(0, 90)]) if rng.random() < 0.15 else 0)
    scale = image.astype(np.float32) / 255.0
    return np.clip(ink + (paper - ink) * scale, 0, 255).astype(np.uint8)


def sample_crop(text: str, fonts: tuple[Font, ...], rng: random.Random, scan_probability: float = 0.6,
                points_range: tuple[float, float] = (7.0, 14.0)) -> tuple[np.ndarray, str]:
    """(crop, text) for `text` in a random font that covers it (text may be trimmed to the font)."""
    candidates = [font for font in fonts if font.covers(text)]
    if not candidates:
        font = rng.choice(fonts)
        text = "".join(ch for ch in text if ch in font.covered) or "."
    else:
        font = rng.choice(candidates)
    word_gap = rng.uniform(1.0, 2.2) if len(text) > 50 and rng.random() < 0.3 else 1.0
    crop = render_line(text, font, font_pixels(rng, points_range), rng, word_gap=word_gap)
    if rng.random() < 0.7:
        crop = tint(crop, rng)
    if rng.random() < scan_probability:
        crop = age(crop, rng)
    return crop, text
