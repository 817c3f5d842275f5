"""Scan noise: a rendered page has none, a scanned copy of it has some; softening keeps a crop's shape."""
from __future__ import annotations

import io
import random

import cv2
import numpy as np
import pytest
from PIL import Image

import vision_samples as samples
from vision.document import Document
from vision.noise import NOISY_PAGE, scan_noise, soften


def _rendered(pdf: bytes) -> Image.Image:
    return Document.open(pdf, "page.pdf").render_page(0, samples.TEST_DPI).image


def _scanned(image: Image.Image, seed: int) -> Image.Image:
    """A scanner's copy: blur, paper tone, sensor grain, JPEG (what bench/real_pages.py's scan-like copies do)."""
    rng = random.Random(seed)
    pixels = cv2.GaussianBlur(np.asarray(image, np.float32), (0, 0), rng.uniform(0.5, 0.9))
    paper, ink = np.float32(rng.uniform(222, 240)), np.float32(rng.uniform(20, 60))
    pixels = ink + (paper - ink) * (pixels / 255.0)
    pixels += np.random.default_rng(seed).normal(0, rng.uniform(5, 10), pixels.shape)
    buffer = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, format="JPEG", quality=rng.randint(45, 70))
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


@pytest.mark.parametrize("make", [samples.one_column_pdf, samples.two_column_pdf])
def test_a_rendered_page_has_no_noise_and_its_scanned_copy_has(make):
    page = _rendered(make())
    assert scan_noise(page) == 0.0
    for seed in range(3):
        assert scan_noise(_scanned(page, seed)) > 2 * NOISY_PAGE


def test_flat_shading_and_a_smooth_gradient_are_not_noise():
    flat = Image.new("RGB", (300, 200), (235, 228, 210))
    ramp = np.repeat(np.linspace(200, 250, 300, dtype=np.float32)[None, :, None], 200, axis=0).repeat(3, axis=2)
    gradient = Image.fromarray(ramp.round().astype(np.uint8))
    assert scan_noise(flat) == 0.0
    assert scan_noise(gradient) < NOISY_PAGE


def test_the_estimate_follows_the_grain_and_ignores_the_ink():
    rng = np.random.default_rng(0)
    page = np.full((400, 400), 230.0, np.float32)
    page[100:110, 40:360] = 20.0     # a bar of ink: its edges are not grain
    for sigma in (2.0, 6.0):
        noisy = np.clip(page + rng.normal(0, sigma, page.shape), 0, 255).astype(np.uint8)
        estimate = scan_noise(Image.fromarray(noisy).convert("RGB"))
        assert abs(estimate - sigma) < 0.25 * sigma, (sigma, estimate)


def test_tiny_and_all_ink_images_give_zero():
    assert scan_noise(Image.new("RGB", (2, 2), "white")) == 0.0
    assert scan_noise(Image.new("RGB", (50, 20), "black")) == 0.0


def test_soften_keeps_size_and_mode_and_removes_grain():
    rng = np.random.default_rng(1)
    crop = Image.fromarray(np.clip(200 + rng.normal(0, 10, (30, 120, 3)), 0, 255).astype(np.uint8))
    softened = soften(crop)
    assert softened.size == crop.size and softened.mode == crop.mode
    assert np.asarray(softened, np.float32).std() < 0.5 * np.asarray(crop, np.float32).std()
