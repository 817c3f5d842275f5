from __future__ import annotations

import cv2
import numpy as np
import pytest
import vision_samples as samples

from vision.layout import box_iou
from vision.lines import LineDetector
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
    """Detecting inside a region's box gives the same lines as the whole page, already offset."""
    pixels = one_column_page.to_array()
    block = next(b for b in one_column_layout.blocks if b.region.label == "text")
    in_region = LineDetector().detect(pixels, bbox=block.region.bbox)   # small: run at full resolution
    assert len(in_region) == len(block.lines) >= 3
    x0, y0, x1, y1 = block.region.bbox
    page_boxes = np.array([line.bbox for line in LineDetector(probe_side_len=None).detect(pixels)
                           if x0 <= (line.bbox[0] + line.bbox[2]) / 2 <= x1 and y0 <= (line.bbox[1] + line.bbox[3]) / 2 <= y1],
                          dtype=float)
    for line in in_region:   # the page runs scaled to the network's limit, the region at full size: a pixel or two
        assert box_iou(np.array(line.bbox, dtype=float), page_boxes).max() > 0.75


def test_our_decoding_matches_rapidocrs_detector(one_column_page, one_column_layout):
    """Same network, same input, rapidocr's own pre- and post-processing."""
    from rapidocr_onnxruntime.ch_ppocr_det import TextDetector

    block = next(b for b in one_column_layout.blocks if b.region.label == "text")
    x0, y0, x1, y1 = (int(v) for v in block.region.bbox)
    crop = np.ascontiguousarray(one_column_page.to_array()[y0:y1, x0:x1])
    ours = LineDetector(probe_side_len=None).detect(crop)   # one run at the reference's limit
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
    for line in ours:   # we grow the blob's rectangle, rapidocr offsets its polygon: a pixel or two apart
        assert box_iou(np.array(line.bbox, dtype=float), theirs).max() > 0.8


def test_blank_and_degenerate_inputs_give_no_lines():
    detector = LineDetector()
    assert detector.detect(np.full((300, 400, 3), 255, dtype=np.uint8)) == []
    assert detector.detect(np.zeros((500, 1, 3), dtype=np.uint8)) == []
    assert detector.detect(np.zeros((1, 1, 3), dtype=np.uint8)) == []
    assert detector.detect(np.full((300, 400, 3), 255, dtype=np.uint8), bbox=(50, 50, 50.5, 60)) == []


def _text_page(font_size: float) -> np.ndarray:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for i in range(int(600 / (font_size * 1.5))):
        page.insert_text((60, 80 + i * font_size * 1.5), f"Line {i}: the quick brown fox jumps over the lazy dog",
                         fontsize=font_size)
    pix = page.get_pixmap(dpi=150)
    return np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, 3).copy()


@pytest.mark.parametrize("font_size", [10.0, 5.0])
def test_lines_are_detected_at_the_resolution_the_text_needs(font_size, monkeypatch):
    """Body text is found on a page scaled down to the probe size, as at full resolution; small
    print makes the detector run again, larger, and is found too."""
    pixels = _text_page(font_size)
    full = LineDetector(probe_side_len=None).detect(pixels)
    runs = []
    detector = LineDetector()
    real_run = detector._detect_at
    monkeypatch.setattr(detector, "_detect_at", lambda padded, ratio, *rest: runs.append(ratio) or real_run(padded, ratio, *rest))
    adaptive = detector.detect(pixels)
    assert len(adaptive) == len(full) > 10
    truth = np.array([line.bbox for line in full], dtype=float)
    assert all(box_iou(np.array(line.bbox, dtype=float), truth).max() > 0.6 for line in adaptive)
    assert runs[0] < 0.7 and len(runs) == (1 if font_size == 10.0 else 2)
    assert len(runs) == 1 or runs[1] > runs[0]
