"""Photos of pages made flat (vision/photo.py, vision/orientation.py), on photos made from
rendered pages (tests/vision/photo_samples.py says how), and a flat scan left alone."""
from __future__ import annotations

import io
import re
from collections import Counter

import numpy as np
import pytest
from PIL import Image

from photo_samples import make_photo, page_lines, text_page
from vision.document import Document
from vision.images import decode_frame
from vision.limits import VisionLimits
from vision.photo import find_page_quad, straighten_photo
from workers.page_pipeline import PagePipeline
from workers.recognizers.tesseract import TesseractRecognizer


@pytest.fixture(scope="module")
def page() -> np.ndarray:
    return text_page(seed=3)


def _png(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG", dpi=(150, 150))
    return buffer.getvalue()


def test_page_corners_are_found_within_one_percent(page):
    photo = make_photo(page, "corners", rotation=0)
    rgb = np.asarray(Image.open(io.BytesIO(photo.jpeg)).convert("RGB"))
    quad = find_page_quad(rgb)
    assert quad is not None
    diagonal = float(np.hypot(*rgb.shape[:2]))
    errors = np.linalg.norm(quad - photo.corners, axis=1)
    assert errors.max() < 0.01 * diagonal, errors


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_a_photo_comes_out_upright_and_flat(page, rotation):
    photo = make_photo(page, f"turned {rotation}", rotation=rotation)
    image = Image.open(io.BytesIO(photo.jpeg))
    flat, geometry = straighten_photo(image, num_threads=1)
    assert geometry is not None
    assert geometry.rotation == (360 - rotation) % 360   # turning it back undoes the camera's turn
    assert geometry.dewarped
    assert flat.height > flat.width                      # a portrait page, as it was printed
    # The aspect comes back within 15% only: it is taken from the sides' lengths, which foreshortening
    # shortens (no focal length is estimated).
    assert flat.height / flat.width == pytest.approx(page.shape[0] / page.shape[1], rel=0.15)


def _vertical_japanese_page() -> np.ndarray:
    """An A4 page of vertical Japanese at 150 DPI: columns of characters, the first at the right."""
    import pymupdf

    doc = pymupdf.open()
    sheet = doc.new_page(width=595, height=842)
    writer = pymupdf.TextWriter(sheet.rect)
    font = pymupdf.Font("japan")
    text = "吾輩は猫である名前はまだ無いどこで生れたかとんと見当がつかぬ何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している"
    per_column = 30
    for k in range(0, len(text), per_column):
        for i, char in enumerate(text[k:k + per_column]):
            writer.append((520 - 34 * (k // per_column), 70 + 23 * i), char, font=font, fontsize=20)
    writer.write_text(sheet)
    pixmap = sheet.get_pixmap(dpi=150)
    return np.frombuffer(pixmap.samples, np.uint8).reshape(pixmap.height, pixmap.width, 3).copy()


def test_a_photo_of_vertical_writing_is_not_turned_on_its_side():
    """Its columns run down the page, so the detector finds longer lines with the page turned, as on
    a page of Latin print lying on its side: the square glyph cells down the columns tell it apart."""
    vertical = _vertical_japanese_page()
    photo = make_photo(vertical, "tategaki", rotation=0)
    flat, geometry = straighten_photo(Image.open(io.BytesIO(photo.jpeg)), num_threads=1)
    assert geometry is not None and geometry.rotation == 0
    assert flat.height > flat.width


def test_a_flat_scan_is_left_byte_for_byte(page):
    rng = np.random.default_rng(0)
    scan = np.clip(page.astype(np.float32) * 0.97 + rng.normal(0, 2, page.shape), 0, 255).astype(np.uint8)
    data = _png(scan)
    with Document.open(data, "scan.png") as document:
        rendered = document.render_page(0)
    decoded, _ = decode_frame(data, document.kind, 0, VisionLimits())
    assert rendered.geometry is None
    assert rendered.image.tobytes() == decoded.tobytes()


def test_a_page_that_is_not_photographed_is_not_a_photo(page):
    """A scan with a dark figure in it: the page is its whole frame, so no outline is taken."""
    scan = page.copy()
    scan[900:1300, 200:1000] = 40
    assert find_page_quad(scan) is None


def _words(text: str) -> Counter:
    return Counter(re.findall(r"[a-z]+", text.lower()))


def _read(data: bytes, name: str) -> tuple[str, dict | None]:
    with Document.open(data, name) as document:
        rendered = document.render_page(0)
        result = PagePipeline(TesseractRecognizer(), vision_num_threads=1).process(document, rendered, 0)
    return " ".join(region.text for region in result.regions), result.to_dict().get("geometry")


def test_a_photo_reads_within_five_points_of_the_flat_page():
    page = text_page(seed=5, height=1000)                     # 15 lines: quick under Tesseract
    truth = _words(" ".join(page_lines(5, 1000)))
    flat_text, flat_geometry = _read(_png(page), "flat.png")
    photo_text, photo_geometry = _read(make_photo(page, "read", rotation=90).jpeg, "photo.jpg")
    assert flat_geometry is None
    assert photo_geometry is not None and photo_geometry["rotation"] == 270
    total = sum(truth.values())
    flat_recall = sum((truth & _words(flat_text)).values()) / total
    photo_recall = sum((truth & _words(photo_text)).values()) / total
    assert flat_recall > 0.9
    assert photo_recall >= flat_recall - 0.05, (flat_recall, photo_recall)
