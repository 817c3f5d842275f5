from __future__ import annotations

import json
import subprocess
import sys

import vision_samples as samples
from PIL import Image

from vision.document import Document
from vision.layout import RecognitionTask
from vision.page_analysis import PageLayout, analyze_page
from vision.reading_order import PageRole


def test_layout_has_regions_lines_and_stage_timings(one_column_page, one_column_layout):
    layout = one_column_layout
    assert (layout.width, layout.height) == (one_column_page.width, one_column_page.height)
    assert layout.timings.render_s == one_column_page.render_s > 0
    assert layout.timings.layout_s > 0 and layout.timings.lines_s > 0 and layout.timings.order_s >= 0
    labels = [block.region.label for block in layout.blocks]
    assert labels == ["title", "text", "text", "text", "text"]
    assert all(block.task is RecognitionTask.TEXT and block.lines for block in layout.blocks)
    assert sum(len(block.lines) for block in layout.blocks) == len(
        samples.pdf_line_boxes(samples.one_column_pdf(), samples.TEST_DPI))


def test_layout_round_trips_through_json(header_footer_layout):
    as_json = json.dumps(header_footer_layout.to_dict())
    restored = PageLayout.from_dict(json.loads(as_json))
    assert restored == header_footer_layout
    first = json.loads(as_json)["blocks"][0]
    assert first["role"] == "header" and first["task"] == "text" and first["source"] == "layout"
    assert all(0 <= v <= 1000 for v in first["bbox_1000"])


def test_blank_page_has_no_blocks():
    layout = analyze_page(Image.new("RGB", (827, 1169), "white"))
    assert layout.blocks == ()


def test_one_pixel_wide_image_goes_through_the_whole_pipeline():
    with Document.open(samples.image_bytes(Image.new("L", (1, 500), 0), "PNG")) as document:
        page = document.render_page(0)
    layout = analyze_page(page.image, render_s=page.render_s)
    assert (layout.width, layout.height) == (1, 500)
    for block in layout.blocks:
        x0, y0, x1, y1 = block.region.bbox
        assert 0 <= x0 <= x1 <= 1 and 0 <= y0 <= y1 <= 500


def test_array_input_without_lines_gives_the_same_regions(header_footer_page, header_footer_layout):
    without_lines = analyze_page(header_footer_page.to_array(), detect_lines=False)
    # the line detector did not run: no region holds a line, where the full analysis finds them
    assert any(b.lines for b in header_footer_layout.blocks) and not any(b.lines for b in without_lines.blocks)
    assert [(b.region.label, b.role) for b in without_lines.blocks] == [
        (b.region.label, b.role) for b in header_footer_layout.blocks]
    for bare, grown in zip(without_lines.blocks, header_footer_layout.blocks):
        assert bare.lines == () and bare.region.score == grown.region.score
        # with lines, a text region only ever grows to hold them
        assert all(abs(a - b) < 1e-6 or (a > b if i < 2 else a < b)
                   for i, (a, b) in enumerate(zip(bare.region.bbox, grown.region.bbox)))


def test_vision_imports_neither_torch_nor_the_engine():
    code = ("import sys, vision.page_analysis, vision.document, vision.crops\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'engine', 'transformers'))\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_greyscale_images_are_accepted(header_footer_page):
    grey = header_footer_page.image.convert("L")
    layout = analyze_page(grey, detect_lines=False)
    assert layout.blocks and layout.blocks[0].role is PageRole.HEADER
    assert (layout.width, layout.height) == grey.size
