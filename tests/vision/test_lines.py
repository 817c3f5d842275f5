from __future__ import annotations

import cv2
import numpy as np
import pytest
import vision_samples as samples

from vision.layout import box_iou
from vision.lines import LONE_GLYPH_SCORE, LineDetector, inked_extent
from vision.onnx_models import LINE_DETECTOR_PPOCRV4


def _all_lines(layout):
    return [line for block in layout.blocks for line in block.lines]


@pytest.mark.parametrize("sample", ["one_column", "two_column", "header_footer"])
def test_detected_lines_align_with_the_written_lines(sample, request):
    layout = request.getfixturevalue(f"{sample}_layout")
    pdf = getattr(samples, f"{sample}_pdf")()
    truth = samples.pdf_line_boxes(pdf, samples.TEST_DPI)
    detected = np.array([line.bbox for line in _all_lines(layout)], dtype=float)
    assert len(detected) == len(truth)
    ious = []
    for text, box in truth:
        overlaps = box_iou(np.array(box), detected)
        best = int(overlaps.argmax())
        ious.append(overlaps[best])
        assert overlaps[best] >= 0.5, f"line {text!r} at {box} is not detected (best IoU {overlaps[best]:.2f})"
        height = box[3] - box[1]   # PDF line boxes span the font's full ascent and descent
        assert abs((detected[best][1] + detected[best][3]) / 2 - (box[1] + box[3]) / 2) < 0.3 * height
    assert np.mean(ious) > 0.65


def test_lines_in_a_region_are_found_in_page_coordinates(one_column_page, one_column_layout):
    """Detecting inside a region's box gives the same lines as the whole page, already offset.
    The box is given a margin: cut at the first line's glyph tops, a crop has the detector draw
    that line's box thinner (by two pixels in twenty, depending on where the layout model put it)."""
    pixels = one_column_page.to_array()
    block = next(b for b in one_column_layout.blocks if b.region.label == "text")
    x0, y0, x1, y1 = block.region.bbox
    in_region = LineDetector().detect(pixels, bbox=(x0 - 12, y0 - 12, x1 + 12, y1 + 12))
    assert len(in_region) == len(block.lines) >= 3
    page_boxes = np.array([line.bbox for line in block.lines], dtype=float)
    for line in in_region:
        assert box_iou(np.array(line.bbox, dtype=float), page_boxes).max() > 0.85


def test_our_decoding_matches_rapidocrs_detector(one_column_page, one_column_layout):
    """Same network, same input, rapidocr's own pre- and post-processing."""
    from rapidocr_onnxruntime.ch_ppocr_det import TextDetector

    block = next(b for b in one_column_layout.blocks if b.region.label == "text")
    x0, y0, x1, y1 = (int(v) for v in block.region.bbox)
    crop = np.ascontiguousarray(one_column_page.to_array()[y0:y1, x0:x1])
    ours = LineDetector().detect(crop)
    reference = TextDetector({
        "model_path": str(LINE_DETECTOR_PPOCRV4.path()), "limit_side_len": 2048, "limit_type": "max",
        "mean": [0.5] * 3, "std": [0.5] * 3, "thresh": 0.3, "box_thresh": 0.5, "unclip_ratio": 1.6,
        "use_dilation": True, "score_mode": "fast", "intra_op_num_threads": 2})
    pad = 16   # ours pads by 16 white pixels; give the reference the identical input
    padded = cv2.copyMakeBorder(crop[:, :, ::-1], pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=(255, 255, 255))
    quads, _ = reference(padded)
    theirs = np.array([[q[:, 0].min() - pad, q[:, 1].min() - pad, q[:, 0].max() - pad, q[:, 1].max() - pad]
                       for q in quads], dtype=float)
    assert len(ours) == len(theirs) >= 3
    for line in ours:   # rapidocr grows a line with pyclipper, we with the rectangle's offset: a pixel apart
        nearest = theirs[box_iou(np.array(line.bbox, dtype=float), theirs).argmax()]
        assert np.abs(np.array(line.bbox) - nearest).max() <= 2, (line.bbox, nearest)


def test_the_detector_looks_at_the_part_of_the_page_that_holds_ink():
    page = np.full((2200, 1700, 3), 255, dtype=np.uint8)
    assert inked_extent(page) == (0, 0, 1700, 2200)          # nothing on it: looked at whole
    page[600:700, 300:1300] = 40                              # a block of print
    x0, y0, x1, y1 = inked_extent(page)
    assert abs(x0 - 268) <= 4 and abs(x1 - 1332) <= 4         # its columns, and a margin of 32
    assert y1 - y0 == 640 and y0 < 568 and y1 > 732           # grown to the least side the network needs
    rng = np.random.default_rng(0)
    speckled = np.clip(page.astype(int) - 20 + rng.normal(0, 8, page.shape[:2])[..., None], 0, 255).astype(np.uint8)
    assert inked_extent(speckled) == (x0, y0, x1, y1)         # a scan's grain is not print
    page[2100:2110, 100:110] = 0                              # a speck of real ink far away is
    assert inked_extent(page) == (68, 568, x1, 2144)


def test_blank_and_degenerate_inputs_give_no_lines():
    detector = LineDetector()
    assert detector.detect(np.full((300, 400, 3), 255, dtype=np.uint8)) == []
    assert detector.detect(np.zeros((500, 1, 3), dtype=np.uint8)) == []
    assert detector.detect(np.zeros((1, 1, 3), dtype=np.uint8)) == []
    assert detector.detect(np.full((300, 400, 3), 255, dtype=np.uint8), bbox=(50, 50, 50.5, 60)) == []


def _contents_page() -> tuple[np.ndarray, list[tuple[int, str]]]:
    """A contents page: titles, dot leaders, and page numbers alone at the right edge, at 200 DPI."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    entries = [("Preface", "1"), ("Acknowledgements", "3"), ("A Brief Introduction", "7"), ("Running the Program", "7"),
               ("Simple Examples", "8"), ("Getting Started", "15"), ("Invoking from the Command Line", "16")]
    numbers = []
    for row, (title, number) in enumerate(entries):
        y = 100 + 14 * row
        page.insert_text((72, y), title, fontname="tiro", fontsize=10)
        x = 78 + pymupdf.get_text_length(title, fontname="tiro", fontsize=10)
        while x < 520:
            page.insert_text((x, y), ".", fontname="tiro", fontsize=10)
            x += 6
        page.insert_text((535, y), number, fontname="tiro", fontsize=10)
        numbers.append((round((y - 3.5) * 200 / 72), number))     # the number's middle, in pixels
    pixmap = page.get_pixmap(dpi=200)
    return np.frombuffer(pixmap.samples, np.uint8).reshape(pixmap.height, pixmap.width, 3).copy(), numbers


def test_a_page_number_standing_alone_is_a_line():
    """The detector passes over some lone glyphs (here the first page number); every number
    comes back as a line of its own, and nothing else is added (not the dot leaders)."""
    image, numbers = _contents_page()
    at_right = lambda lines: [line for line in lines if line.bbox[0] > 1400]
    detected = at_right(LineDetector(lone_glyphs=False).detect(image))
    lines = at_right(LineDetector().detect(image))
    assert len(detected) < len(numbers) == len(lines)
    for middle, number in numbers:
        assert sum(line.bbox[1] < middle < line.bbox[3] for line in lines) == 1, number
    everything = LineDetector().detect(image)
    assert len(everything) == 2 * len(numbers), "titles and numbers; no line of dots"


def test_a_noisy_page_gets_no_lone_glyphs():
    """Specks everywhere (more lone blobs than a quarter of the lines): none are taken for glyphs."""
    image, numbers = _contents_page()
    rng = np.random.default_rng(0)
    for _ in range(300):
        x, y = int(rng.integers(100, 1500)), int(rng.integers(800, 2000))
        cv2.rectangle(image, (x, y), (x + 8, y + 14), (0, 0, 0), -1)
    lines = LineDetector().detect(image)
    assert all(line.score != LONE_GLYPH_SCORE for line in lines)
