"""Documents generated for the vision tests with PyMuPDF and Pillow, and the
ground truth read back from them (PDF line boxes from PyMuPDF's own text layer,
so the truth is what was actually written, not what was meant to be)."""
from __future__ import annotations

import io
import struct
import zlib

import pymupdf
from PIL import Image

PAGE_W, PAGE_H = 595, 842   # A4 in points
TEST_DPI = 100              # lower than production's 200 to keep the tests fast on 2 cores
PARAGRAPH = ("Document analysis systems read scanned pages and turn them into structured text. "
             "Layout detection finds paragraphs, titles, tables and figures, and a recogniser reads "
             "each region in turn. ")


def one_column_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_text((72, 90), "Annual Report on Document Processing", fontname="hebo", fontsize=20)
    for i in range(4):
        top = 120 + 130 * i
        assert page.insert_textbox(pymupdf.Rect(72, top, 523, top + 110), PARAGRAPH * 2,
                                   fontname="tiro", fontsize=11) >= 0
    return doc.tobytes()


def two_column_pdf() -> bytes:
    """A full-width title over two columns of four paragraphs each; the left
    column's paragraphs start with LEFT, the right column's with RIGHT."""
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_text((72, 80), "Two Column Study of Layouts", fontname="hebo", fontsize=20)
    for side, x in (("LEFT", 60), ("RIGHT", 310)):
        for i in range(4):
            top = 110 + 170 * i
            assert page.insert_textbox(pymupdf.Rect(x, top, x + 225, top + 150), f"{side} {i}. " + PARAGRAPH * 2,
                                       fontname="helv", fontsize=10) >= 0
    return doc.tobytes()


def header_footer_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_text((72, 40), "ACME Quarterly - Internal", fontname="helv", fontsize=9)
    page.insert_text((72, 110), "Results Overview", fontname="hebo", fontsize=18)
    assert page.insert_textbox(pymupdf.Rect(72, 140, 523, 400), PARAGRAPH * 3, fontname="tiro", fontsize=11) >= 0
    assert page.insert_textbox(pymupdf.Rect(72, 420, 523, 680), PARAGRAPH * 3, fontname="cour", fontsize=10) >= 0
    page.insert_text((270, 812), "Page 3 of 12", fontname="helv", fontsize=9)
    return doc.tobytes()


def multi_page_pdf(num_pages: int) -> bytes:
    doc = pymupdf.open()
    for i in range(num_pages):
        page = doc.new_page(width=PAGE_W, height=PAGE_H)
        page.insert_text((72, 100), f"Page number {i + 1}", fontname="helv", fontsize=14)
    return doc.tobytes()


def encrypted_pdf() -> bytes:
    doc = pymupdf.open(stream=one_column_pdf(), filetype="pdf")
    return doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user-secret", owner_pw="owner-secret")


def zero_page_pdf() -> bytes:
    """PyMuPDF will not save a document without pages, so the bytes are written
    by hand: a catalog whose page tree is empty, with a correct xref table."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_at = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref_at)
    return bytes(out)


def pdf_line_boxes(pdf: bytes, dpi: float, page_index: int = 0) -> list[tuple[str, tuple[float, ...]]]:
    """(text, box in pixels at `dpi`) for every text line PyMuPDF finds on the page."""
    scale = dpi / 72
    page = pymupdf.open(stream=pdf, filetype="pdf")[page_index]
    lines = []
    for block in page.get_text("dict")["blocks"]:
        for line in block.get("lines", []):
            text = "".join(span["text"] for span in line["spans"])
            lines.append((text, tuple(v * scale for v in line["bbox"])))
    return lines


def image_bytes(image: Image.Image, fmt: str, **save_args) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **save_args)
    return out.getvalue()


def png_header_bomb(width: int, height: int) -> bytes:
    """A few dozen bytes declaring a width x height RGB PNG: a valid signature
    and IHDR, one tiny IDAT, no real pixel data. Decoding it would fail (or
    allocate width*height*3 bytes); only a header check refuses it correctly."""
    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
            + chunk(b"IEND", b""))
