"""A 16-bit, 32-bit or float greyscale frame converts to 8 bits in bounded memory
(row strips, never a float64 copy of the whole frame), pixel-identical to the
whole-frame float64 scaling it replaces."""
from __future__ import annotations

import io
import tracemalloc

import numpy as np
import pytest
from PIL import Image

from vision.document import Document
from vision.images import wide_grey_to_l


def _whole_frame_float64(image: Image.Image) -> np.ndarray:
    """The conversion as it was: the whole frame through float64 at once."""
    values = np.asarray(image, dtype=np.float64)
    peak = values.max() if values.size else 0.0
    scale = 255.0 / peak if peak > 255.0 else 1.0
    return np.clip(values * scale, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("mode, values", [
    ("I;16", np.random.default_rng(0).integers(0, 65536, (37, 53)).astype(np.uint16)),
    ("I;16", np.random.default_rng(1).integers(0, 200, (37, 53)).astype(np.uint16)),     # already within 0..255
    ("I", np.random.default_rng(2).integers(-5000, 1 << 20, (37, 53)).astype(np.int32)),
    ("F", np.random.default_rng(3).normal(300.0, 400.0, (37, 53)).astype(np.float32)),
    ("F", np.random.default_rng(4).uniform(0.0, 1.0, (37, 53)).astype(np.float32)),
])
def test_strips_give_the_same_pixels_as_the_whole_frame(mode, values, monkeypatch):
    image = Image.fromarray(values)
    assert image.mode == mode
    expected = _whole_frame_float64(image)
    monkeypatch.setattr("vision.images.STRIP_PIXELS", 3 * 53 + 7)   # many strips, the last one short
    converted = wide_grey_to_l(image)
    assert converted.mode == "L" and converted.size == image.size
    assert np.array_equal(np.asarray(converted), expected)


def test_a_large_sixteen_bit_png_converts_without_a_float64_copy():
    width, height = 3000, 3000
    rows = np.linspace(0, 65535, height, dtype=np.uint16)[:, None]
    values = np.broadcast_to(rows, (height, width)).copy()
    values[100:200, 100:2900] = 0                                   # a dark band to keep
    data = io.BytesIO()
    Image.fromarray(values).save(data, format="PNG", compress_level=1)
    del values, rows
    with Document.open(data.getvalue(), "scan.png") as document:
        tracemalloc.start()
        try:
            page = document.render_page(0)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    num_pixels = width * height
    # numpy's buffers are traced (Pillow's are not): the 8-bit result (1 byte a pixel) and one strip.
    # A float64 copy of the frame alone would be 8 bytes a pixel.
    assert peak < 2 * num_pixels, f"peak {peak:,} bytes for {num_pixels:,} pixels"
    pixels = page.to_array()
    assert pixels[150, 1000, 0] == 0 and pixels[height - 1, 0, 0] == 255
