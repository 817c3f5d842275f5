"""Documents generated for the workers and app tests with PyMuPDF, with the
words each page carries, so recognised text can be checked against them.

Text is set large (16 pt Helvetica) so Tesseract reads it reliably at the
tests' 100 DPI; each page has a word unique to it (`PAGE_WORDS`).
"""
from __future__ import annotations

import io

import pymupdf
from PIL import Image, ImageDraw

PAGE_W, PAGE_H = 595, 842   # A4 in points
PAGE_WORDS = ("Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel")
LEFT_WORDS = ("Apples", "Bananas", "Cherries")
RIGHT_WORDS = ("Tables", "Chairs", "Lamps")


def page_sentence(page_no: int) -> str:
    return f"{PAGE_WORDS[page_no % len(PAGE_WORDS)]} page number {page_no + 1}"


def multi_page_pdf(num_pages: int) -> bytes:
    """Each page: a title line and two body lines, the first naming the page's word."""
    doc = pymupdf.open()
    for page_no in range(num_pages):
        page = doc.new_page(width=PAGE_W, height=PAGE_H)
        page.insert_text((72, 120), "Quarterly Report", fontname="hebo", fontsize=22)
        page.insert_text((72, 200), page_sentence(page_no), fontname="helv", fontsize=16)
        page.insert_text((72, 240), "The results were good this time", fontname="helv", fontsize=16)
    return doc.tobytes()


def two_column_pdf() -> bytes:
    """A full-width title over two columns; each column has three paragraphs,
    each starting with one of LEFT_WORDS / RIGHT_WORDS."""
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_text((72, 90), "Household Inventory Summary", fontname="hebo", fontsize=22)
    for words, x in ((LEFT_WORDS, 60), (RIGHT_WORDS, 315)):
        for i, word in enumerate(words):
            top = 140 + 200 * i
            text = f"{word} are listed here. " + "Each item was counted by hand and checked twice. " * 3
            assert page.insert_textbox(pymupdf.Rect(x, top, x + 220, top + 170), text, fontname="helv",
                                       fontsize=14) >= 0
    return doc.tobytes()


def figure_pdf() -> bytes:
    """A title, a bar chart (a picture, which layout calls a figure), a caption and a paragraph."""
    chart = Image.new("RGB", (600, 400), "white")
    draw = ImageDraw.Draw(chart)
    for i, height in enumerate((120, 250, 180, 320, 90, 200)):
        draw.rectangle((40 + i * 90, 380 - height, 100 + i * 90, 380), fill=(40 + 30 * i, 90, 200 - 20 * i))
    draw.line((30, 380, 580, 380), fill="black", width=3)
    draw.line((30, 20, 30, 380), fill="black", width=3)
    png = io.BytesIO()
    chart.save(png, format="PNG")
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_text((72, 90), "Sales by Region", fontname="hebo", fontsize=22)
    page.insert_image(pymupdf.Rect(72, 130, 523, 430), stream=png.getvalue())
    page.insert_text((72, 460), "Figure 1. Sales per region in units", fontname="helv", fontsize=12)
    page.insert_textbox(pymupdf.Rect(72, 500, 523, 700), "The chart above shows the sales. " * 12,
                        fontname="helv", fontsize=12)
    return doc.tobytes()


SCAN_SENTENCE = "Shipment arrived on Monday morning"
HIDDEN_SENTENCE = "Zebra quilts jump over vexed wizards"
DEJAVU_SANS = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def hidden_layer_scan_pdf() -> bytes:
    """A 'scan' (a page image of a title and SCAN_SENTENCE) under an invisible text layer
    (render mode 3) that says something else: HIDDEN_SENTENCE where the image shows the sentence."""
    printed = pymupdf.open()
    page = printed.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_text((72, 120), "Delivery Note", fontname="hebo", fontsize=22)
    page.insert_text((72, 200), SCAN_SENTENCE, fontname="helv", fontsize=16)
    scan = page.get_pixmap(dpi=150).tobytes("png")
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_image(page.rect, stream=scan)
    page.insert_text((72, 120), "Delivery Note", fontname="hebo", fontsize=22, render_mode=3)
    page.insert_text((72, 200), HIDDEN_SENTENCE, fontname="helv", fontsize=16, render_mode=3)
    return doc.tobytes()


def pasted_scan_pdf() -> bytes:
    """A born-digital page (a title and three paragraphs) with a scanned snippet pasted in below
    them: a picture of SCAN_SENTENCE under an invisible OCR layer that says HIDDEN_SENTENCE."""
    printed = pymupdf.open()
    snippet = printed.new_page(width=300, height=30)
    snippet.insert_text((4, 21), SCAN_SENTENCE, fontname="helv", fontsize=16)
    scan = snippet.get_pixmap(dpi=150).tobytes("png")
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_text((72, 90), "Household Inventory Summary", fontname="hebo", fontsize=22)
    for i, word in enumerate(LEFT_WORDS):
        top = 130 + 125 * i
        text = f"{word} are listed here. " + "Each item was counted by hand and checked twice. " * 5
        assert page.insert_textbox(pymupdf.Rect(72, top, 523, top + 115), text, fontname="helv", fontsize=14) >= 0
    page.insert_image(pymupdf.Rect(72, 520, 372, 550), stream=scan)
    page.insert_text((76, 541), HIDDEN_SENTENCE, fontname="helv", fontsize=16, render_mode=3)
    return doc.tobytes()


def unmapped_font_pdf() -> bytes:
    """multi_page_pdf's first page set in an embedded font whose ToUnicode map was removed,
    as some PDF producers write them: the text is drawn right, but its layer maps to no letters."""
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_font(fontname="dejavu", fontfile=DEJAVU_SANS)
    page.insert_text((72, 120), "Quarterly Report", fontname="dejavu", fontsize=22)
    page.insert_text((72, 200), page_sentence(0), fontname="dejavu", fontsize=16)
    page.insert_text((72, 240), "The results were good this time", fontname="dejavu", fontsize=16)
    for xref, _, kind, *_ in page.get_fonts(full=True):
        if kind == "Type0":
            doc.xref_set_key(xref, "ToUnicode", "null")
    return doc.tobytes()


def scanned_png() -> bytes:
    """A page image with no text layer (a 'scan'): a PDF page rasterised to PNG."""
    doc = pymupdf.open(stream=multi_page_pdf(1), filetype="pdf")
    return doc[0].get_pixmap(dpi=100).tobytes("png")


def encrypted_pdf() -> bytes:
    doc = pymupdf.open(stream=multi_page_pdf(1), filetype="pdf")
    return doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret-user", owner_pw="secret-owner")


def truncated_pdf() -> bytes:
    data = multi_page_pdf(2)
    return data[: len(data) // 2]


def zero_page_pdf() -> bytes:
    """PyMuPDF refuses to save a page-less PDF, so this one is written by hand,
    with a correct cross-reference table."""
    bodies = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(bodies, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref_at = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(bodies) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(bodies) + 1, xref_at)
    return bytes(out)


def word_boxes(pdf: bytes, page_no: int = 0) -> dict[str, tuple[float, float, float, float]]:
    """Each word of a page's text layer and its box in PDF points (the first occurrence)."""
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        boxes: dict[str, tuple[float, float, float, float]] = {}
        for x0, y0, x1, y1, text, *_ in doc[page_no].get_text("words"):
            boxes.setdefault(text, (x0, y0, x1, y1))
        return boxes
