"""`has_text_ink`: line crops that hold no text are told apart from ones that do."""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from vision.ink import has_text_ink

FONT = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 16)


def _crop(width: int = 300, height: int = 28, paper: int = 255) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGB", (width, height), (paper, paper, paper))
    return image, ImageDraw.Draw(image)


def test_text_has_ink_on_white_and_on_a_grey_blurred_scan():
    image, draw = _crop()
    draw.text((4, 4), "The R environment", fill="black", font=FONT)
    assert has_text_ink(image)
    scan, draw = _crop(paper=205)
    draw.text((4, 4), "x <- c(10.4, 5.6)", fill=(70, 70, 70), font=FONT)
    noisy = np.asarray(scan.filter(ImageFilter.GaussianBlur(0.8))).astype(np.int16)
    noisy += np.random.default_rng(0).normal(0, 8, noisy.shape).astype(np.int16)
    assert has_text_ink(Image.fromarray(noisy.clip(0, 255).astype(np.uint8)))
    one_char, draw = _crop(width=20)
    draw.text((4, 4), "3", fill="black", font=FONT)      # a page number alone is text
    assert has_text_ink(one_char)


def test_blank_rules_dot_leaders_and_specks_have_none():
    blank, _ = _crop()
    assert not has_text_ink(blank)
    rule, draw = _crop()
    draw.line((0, 14, 300, 14), fill="black", width=2)
    assert not has_text_ink(rule)
    dots, draw = _crop()
    for x in range(4, 296, 8):
        draw.ellipse((x, 18, x + 2, 20), fill="black")
    assert not has_text_ink(dots)
    noise, _ = _crop(paper=230)
    pixels = np.asarray(noise).astype(np.int16) + np.random.default_rng(1).normal(0, 6, (28, 300, 3)).astype(np.int16)
    assert not has_text_ink(Image.fromarray(pixels.clip(0, 255).astype(np.uint8)))
    assert not has_text_ink(Image.new("RGB", (0, 0)))
