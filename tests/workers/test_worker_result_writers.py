"""The result writers on a hand-built page: searchable PDF text placement, Markdown, plain text."""
from __future__ import annotations

import pymupdf
from PIL import Image

from workers.document_result import render_markdown, render_text
from workers.page_result import LineResult, PageResult, RegionResult, RegionStatus
from workers.searchable_pdf import merge_pdfs, page_pdf
from workers.structure import with_structure

DPI = 100.0
POINTS_PER_PIXEL = 72.0 / DPI


def _region(index: int, label: str, text: str, bbox, status=RegionStatus.OK, lines=(), task="text", role="body",
            reason=None, figure=None) -> RegionResult:
    return RegionResult(index, label, task, role, bbox, (0, 0, 0, 0), text, status, reason=reason,
                        lines=tuple(lines), figure=figure)


def _page() -> PageResult:
    lines = (LineResult((100, 200, 520, 230), "Quarterly results improved"),
             LineResult((100, 235, 380, 265), "across every region"))
    return PageResult(0, 0, 850, 1100, DPI, (
        _region(0, "header", "ACME internal", (100, 20, 300, 40), role="header"),
        _region(1, "title", "Annual Report", (100, 100, 400, 140)),
        _region(2, "text", "Quarterly results improved\nacross every region", (100, 200, 520, 265), lines=lines),
        _region(3, "table", "Name Value\nApples 4", (100, 300, 500, 360), task="table"),
        _region(4, "figure", "Revenue\n2024", (100, 400, 300, 500), task="skip", figure="file1-page1-region5.png",
                lines=(LineResult((120, 410, 200, 425), "Revenue"), LineResult((240, 480, 290, 495), "2024"))),
        _region(5, "text", "", (100, 520, 500, 560), status=RegionStatus.FAILED, reason="engine said no"),
        _region(6, "text", "From the layer", (100, 600, 500, 630), status=RegionStatus.FALLBACK, reason="x"),
    ))


def test_invisible_words_sit_on_their_recognised_boxes():
    pdf = page_pdf(Image.new("RGB", (850, 1100), "white"), _page())
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        page = doc[0]
        assert (round(page.rect.width), round(page.rect.height)) == (612, 792)   # 850 x 1100 px at 100 DPI
        words = {w[4]: w[:4] for w in page.get_text("words")}
        assert page.get_images(), "the page image is there"
    # First and last words of a recognised line start and end where the line does.
    x0, y0, _, y1 = words["Quarterly"]
    assert abs(x0 - 100 * POINTS_PER_PIXEL) < 1 and abs(y0 - 200 * POINTS_PER_PIXEL) < 1.5
    assert abs(y1 - 230 * POINTS_PER_PIXEL) < 1.5
    assert abs(words["improved"][2] - 520 * POINTS_PER_PIXEL) < 1
    assert abs(words["region"][2] - 380 * POINTS_PER_PIXEL) < 1
    # A region without line boxes spreads its lines over its height.
    assert words["Name"][1] < words["Apples"][1] < 360 * POINTS_PER_PIXEL
    assert "engine" not in words, "reasons are not page text"


def test_the_text_layer_is_invisible():
    pdf = page_pdf(Image.new("RGB", (850, 1100), "white"), _page())
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        pixels = doc[0].get_pixmap(dpi=30).samples
    assert set(pixels) == {255}, "nothing but the (white) page image is drawn"


def test_pages_merge_in_order():
    one = page_pdf(Image.new("RGB", (850, 1100), "white"), _page())
    two = page_pdf(Image.new("RGB", (1100, 850), "white"), PageResult(0, 1, 1100, 850, DPI, ()))
    with pymupdf.open(stream=merge_pdfs([one, two]), filetype="pdf") as doc:
        assert doc.page_count == 2
        assert doc[0].rect.width < doc[1].rect.width
        assert "Annual" in doc[0].get_text() and not doc[1].get_text().strip()


def _result() -> dict:
    page = _page().to_dict()
    page.update({"page": 1, "state": "done"})
    return {"job_id": "j", "created_at": "now", "documents": [
        {"filename": "a.pdf", "kind": "pdf", "num_pages": 1, "sha256": "0", "pages": [page]}]}


def test_markdown_keeps_every_region_but_furniture_and_says_what_failed():
    markdown = render_markdown(_result(), figure_prefix="out.figures/")
    assert "ACME internal" not in markdown, "a running header is furniture: left out by default"
    kept = render_markdown(_result(), figure_prefix="out.figures/", keep_furniture=True)
    assert kept.index("ACME internal") < kept.index("## Annual Report")
    assert "<!--" not in kept.split("## Annual Report")[0].replace("<!-- page 1 -->", ""), "kept as text"
    assert "Quarterly results improved across every region" in markdown
    assert "Name Value\nApples 4" in markdown
    assert "![figure](out.figures/file1-page1-region5.png)\n\n> Text in the figure: Revenue · 2024" in markdown
    assert "<!-- region 6 (text) could not be read: engine said no -->" in markdown
    assert "From the layer" in markdown


def test_plain_text_is_regions_in_reading_order():
    text = render_text(_result())
    assert text.startswith("Annual Report\n\nQuarterly results improved\nacross every region")
    assert render_text(_result(), keep_furniture=True).startswith("ACME internal\n\nAnnual Report\n\n")
    assert "Apples 4\n\nRevenue\n2024\n\n" in text     # a figure's labels are text too
    assert text.endswith("From the layer\n")


def _structured_result() -> dict:
    page = _page()
    page = PageResult(page.file_index, page.page_index, page.width, page.height, page.dpi,
                      tuple(with_structure(page.regions, page.width, page.height, page.dpi))).to_dict()
    page.update({"page": 1, "state": "done"})
    return {"job_id": "j", "created_at": "now", "documents": [
        {"filename": "a.pdf", "kind": "pdf", "num_pages": 1, "sha256": "0", "pages": [page]}]}


def test_markdown_from_blocks_renders_the_page_as_before():
    """With blocks, furniture stays out, figures images, unread regions notes; only structure is added."""
    assert render_markdown(_structured_result(), figure_prefix="out.figures/") == (
        "<!-- page 1 -->\n\n## Annual Report\n\n"
        "Quarterly results improved across every region\n\nName Value\nApples 4\n\n"
        "![figure](out.figures/file1-page1-region5.png)\n\n> Text in the figure: Revenue · 2024\n\n"
        "<!-- region 6 (text) could not be read: engine said no -->\n\nFrom the layer\n")
    assert render_text(_structured_result()) == render_text(_result())
