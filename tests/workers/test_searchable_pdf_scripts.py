"""Every script's text survives the searchable PDF: read back by two PDF readers we did not write
(MuPDF through PyMuPDF, and PDFium through pypdfium2), exactly as the result JSON holds it."""
from __future__ import annotations

import io

import pikepdf
import pymupdf
import pypdfium2
from PIL import Image

from workers.page_result import LineResult, PageResult, RegionResult, RegionStatus
from workers.searchable_pdf import page_pdf, text_layer_pdf

DPI = 100.0
LINES = {
    "Latin Extended": "Zażółć gęślą jaźń, Příliš žluťoučký kůň",
    "Vietnamese": "Tiếng Việt có dấu đầy đủ",
    "Greek": "Ελληνικά γράμματα και τόνοι",
    "Cyrillic": "Съешь же ещё этих мягких булок",
    "Arabic": "مرحبا بالعالم",
    "Hebrew": "שלום עולם",
    "Devanagari": "नमस्ते दुनिया",
    "Han": "中文文本识别测试",
    "Japanese": "日本語のテキストです",
    "Hangul": "한국어 텍스트",
}


def _page() -> PageResult:
    regions = []
    for k, text in enumerate(LINES.values()):
        box = (60.0, 60.0 + 60 * k, 700.0, 95.0 + 60 * k)
        regions.append(RegionResult(k, "text", "text", "body", box, (0, 0, 0, 0), text, RegionStatus.OK,
                                    lines=(LineResult(box, text),)))
    return PageResult(0, 0, 850, 1100, DPI, tuple(regions))


def _lines_mupdf(pdf: bytes) -> list[str]:
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        return [line.strip() for line in doc[0].get_text().splitlines() if line.strip()]


def _lines_pdfium(pdf: bytes) -> list[str]:
    doc = pypdfium2.PdfDocument(pdf)
    try:
        text = doc[0].get_textpage().get_text_range()
    finally:
        doc.close()
    return [line.strip() for line in text.replace("\r", "").splitlines() if line.strip()]


def test_every_script_comes_back_from_the_text_layer_exactly():
    pdf = page_pdf(Image.new("RGB", (850, 1100), "white"), _page())
    assert _lines_mupdf(pdf) == list(LINES.values())


def test_pdfium_reads_the_same_characters():
    """PDFium (Chrome's PDF engine) keeps the glyphs' left-to-right order for right-to-left lines;
    every other line, and every character of those, it reads as written."""
    pdf = page_pdf(Image.new("RGB", (850, 1100), "white"), _page())
    read = _lines_pdfium(pdf)
    assert len(read) == len(LINES)
    for (script, expected), got in zip(LINES.items(), read):
        if script in ("Arabic", "Hebrew"):
            assert sorted(got.replace(" ", "")) == sorted(expected.replace(" ", "")), script
        else:
            assert got == expected, script


def test_fonts_are_embedded_as_subsets():
    """A page carries the glyphs it uses, not whole fonts (the CJK font alone is megabytes)."""
    pdf = page_pdf(Image.new("RGB", (850, 1100), "white"), _page())
    assert len(pdf) < 200_000
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        fonts = doc[0].get_fonts()
    assert fonts and all("+" in font[3] for font in fonts), fonts   # subset names carry a "ABCDEF+" prefix


def test_the_ocrmypdf_text_layer_carries_every_script_too():
    assert _lines_mupdf(text_layer_pdf(_page())) == list(LINES.values())


def test_text_objects_hold_no_graphics_state_operators():
    """ISO 32000-1 8.2 (figure 9): inside BT ... ET only text, colour and general graphics state
    operators may stand; `q`, `Q` and `cm` belong outside. Parsed with pikepdf (qpdf), not our code,
    on a page of every script plus a column set down the page, and the text still reads back."""
    column = (760.0, 60.0, 790.0, 700.0)
    page = _page()
    page = PageResult(0, 0, 850, 1100, DPI, page.regions + (RegionResult(
        len(page.regions), "text", "text", "body", column, (0, 0, 0, 0), "縦書きの列", RegionStatus.OK,
        lines=(LineResult(column, "縦書きの列"),)),))
    for pdf in (page_pdf(Image.new("RGB", (850, 1100), "white"), page), text_layer_pdf(page)):
        with pikepdf.open(io.BytesIO(pdf)) as doc:
            operators = [str(op) for _, op in pikepdf.parse_content_stream(doc.pages[0])]
        assert operators.count("BT") == len(LINES) + 1
        inside = False
        for op in operators:
            if op in ("BT", "ET"):
                assert inside == (op == "ET")
                inside = op == "BT"
            elif inside:
                assert op not in ("q", "Q", "cm"), op
        assert _lines_mupdf(pdf)[-1] == "縦書きの列"
