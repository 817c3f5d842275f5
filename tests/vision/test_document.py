from __future__ import annotations


import numpy as np
import pytest
import vision_samples as samples
from PIL import Image

from vision.document import Document
from vision.formats import DocumentKind, sniff_kind
from vision.limits import (CorruptDocumentError, DocumentTooLargeError, EmptyDocumentError, EncryptedPDFError,
                           ImageTooLargeError, InputError, NotAPDFError, UnsupportedFormatError, VisionLimits)


def _page_image(width: int = 200, height: int = 100) -> Image.Image:
    image = Image.new("RGB", (width, height), "white")
    image.paste((0, 0, 0), (20, 40, 180, 60))
    return image


# --- type sniffing -----------------------------------------------------------------------

def test_kind_comes_from_the_bytes():
    png = samples.image_bytes(_page_image(), "PNG")
    assert sniff_kind(samples.one_column_pdf()) is DocumentKind.PDF
    assert sniff_kind(png) is DocumentKind.PNG
    assert sniff_kind(samples.image_bytes(_page_image(), "JPEG")) is DocumentKind.JPEG
    assert sniff_kind(samples.image_bytes(_page_image(), "TIFF")) is DocumentKind.TIFF
    assert sniff_kind(png, filename="photo.jpg") is DocumentKind.PNG   # content wins over a wrong image suffix
    assert sniff_kind(b"junk before the header %PDF-1.4 ...") is DocumentKind.PDF


@pytest.mark.parametrize("content", [b"GIF89a....", b"PK\x03\x04 a zip", b"#!/bin/sh\nrm -rf /\n", b"\x00" * 64])
def test_a_non_pdf_renamed_pdf_is_refused(content):
    with pytest.raises(NotAPDFError, match="named like a PDF"):
        Document.open(content, filename="invoice.PDF")


def test_an_image_renamed_pdf_says_what_it_is():
    with pytest.raises(NotAPDFError, match="its content is PNG"):
        Document.open(samples.image_bytes(_page_image(), "PNG"), filename="scan.pdf")


def test_unknown_formats_are_refused():
    with pytest.raises(UnsupportedFormatError, match="not a PDF, PNG, JPEG or TIFF") as raised:
        Document.open(b"GIF89a" + b"\x00" * 100, filename="anim.gif")
    assert not isinstance(raised.value, NotAPDFError)
    assert raised.value.code == "unsupported_format"


# --- PDF refusals ---------------------------------------------------------------------------

def test_encrypted_pdf_is_refused_clearly():
    with pytest.raises(EncryptedPDFError, match="password-protected") as raised:
        Document.open(samples.encrypted_pdf(), filename="secret.pdf")
    assert raised.value.code == "encrypted_pdf"


@pytest.mark.parametrize("cut", [0.5, 0.1])
def test_truncated_pdf_is_refused_as_corrupt(cut):
    data = samples.one_column_pdf()
    with pytest.raises(CorruptDocumentError, match="truncated or damaged"):
        Document.open(data[: int(len(data) * cut)], filename="cut.pdf")


def test_pdf_that_mupdf_cannot_parse_is_refused_as_corrupt():
    with pytest.raises(CorruptDocumentError, match="damaged and cannot be read"):
        Document.open(b"%PDF-1.7\n" + bytes(range(256)) * 8 + b"\n%%EOF\n")


def test_zero_page_pdf_is_refused():
    with pytest.raises(EmptyDocumentError, match="no pages"):
        Document.open(samples.zero_page_pdf(), filename="empty.pdf")


def test_empty_upload_is_refused():
    with pytest.raises(EmptyDocumentError, match="empty"):
        Document.open(b"", filename="nothing.pdf")


def test_byte_and_page_caps_are_checked_before_parsing(tmp_path):
    pdf = samples.multi_page_pdf(3)
    with pytest.raises(DocumentTooLargeError, match="bytes"):
        Document.open(pdf, limits=VisionLimits(max_upload_bytes=len(pdf) - 1))
    with pytest.raises(DocumentTooLargeError, match="3 pages; the limit is 2"):
        Document.open(pdf, limits=VisionLimits(max_pages=2))
    path = tmp_path / "big.pdf"
    path.write_bytes(pdf)
    with pytest.raises(DocumentTooLargeError, match="big.pdf is"):
        Document.open_path(path, limits=VisionLimits(max_upload_bytes=100))
    with Document.open_path(path) as document:
        assert document.num_pages == 3


def test_every_refusal_is_an_input_error_with_a_code():
    for error in (NotAPDFError, EncryptedPDFError, CorruptDocumentError, EmptyDocumentError,
                  ImageTooLargeError, UnsupportedFormatError, DocumentTooLargeError):
        assert issubclass(error, InputError) and issubclass(error, ValueError)
        assert error.code != InputError.code


# --- PDF rendering and text layer ----------------------------------------------------------------

def test_pdf_page_renders_at_the_asked_dpi():
    with Document.open(samples.multi_page_pdf(2), filename="two.pdf") as document:
        assert document.kind is DocumentKind.PDF and document.num_pages == 2
        page = document.render_page(1)                  # default: 200 DPI
        assert (page.width, page.height) == (1653, 2339) and page.dpi == 200   # 842 pt = 2338.9 px, rounded up
        assert page.image.mode == "RGB" and page.to_array().shape == (2339, 1653, 3)
        assert document.render_page(0, dpi=72).width == 595
        assert document.page_size_points(0) == (595, 842)
        with pytest.raises(IndexError):
            document.render_page(2)


def test_huge_pdf_page_is_rendered_at_a_lower_dpi():
    import pymupdf

    doc = pymupdf.open()
    doc.new_page(width=14400, height=14400)   # 200 x 200 inches
    limits = VisionLimits(max_page_pixels=1_000_000)
    with Document.open(doc.tobytes(), limits=limits) as document:
        page = document.render_page(0)
    assert page.width * page.height <= 1_000_000 and page.dpi < 6


def test_text_layer_words_are_in_page_pixels():
    with Document.open(samples.header_footer_pdf()) as document:
        assert document.has_text_layer(0)
        words = document.text_words(0, dpi=144)          # 2 pixels per point
    first = words[0]
    assert first.text == "ACME"
    x0, y0, x1, y1 = first.bbox
    assert x0 == pytest.approx(144) and y1 > 2 * 30 and y0 < 2 * 40 < y1
    assert [w.text for w in words if w.bbox[1] > 2 * 800] == ["Page", "3", "of", "12"]


def test_text_layer_words_follow_page_rotation():
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 100), "Rotated words here", fontname="helv", fontsize=20)
    page.set_rotation(90)
    with Document.open(doc.tobytes()) as document:
        rendered = document.render_page(0, dpi=72)
        words = document.text_words(0, dpi=72)
    assert rendered.image.size == (842, 595)                  # landscape once rotated
    ink_ys, ink_xs = np.nonzero(rendered.to_array().min(axis=2) < 128)
    x0 = min(w.bbox[0] for w in words)
    y0 = min(w.bbox[1] for w in words)
    x1 = max(w.bbox[2] for w in words)
    y1 = max(w.bbox[3] for w in words)
    assert x0 <= ink_xs.min() and ink_xs.max() <= x1 and y0 <= ink_ys.min() and ink_ys.max() <= y1
    assert (x1 - x0) < (y1 - y0)                              # the line now runs down the page


# --- images ------------------------------------------------------------------------------------------

def test_png_and_jpeg_pages_decode_to_rgb():
    for fmt in ("PNG", "JPEG"):
        with Document.open(samples.image_bytes(_page_image(), fmt, dpi=(300, 300))) as document:
            assert document.num_pages == 1 and not document.has_text_layer(0)
            assert document.text_words(0, dpi=300) == []
            page = document.render_page(0)
            assert page.image.mode == "RGB" and page.image.size == (200, 100)
            assert page.dpi == pytest.approx(300, abs=1)
            assert document.page_size_points(0) == pytest.approx((48, 24), abs=0.5)


def test_multi_page_tiff_gives_one_page_per_frame():
    frames = [_page_image(300 + 10 * i, 200) for i in range(3)]
    data = samples.image_bytes(frames[0], "TIFF", save_all=True, append_images=frames[1:], compression="tiff_lzw")
    with Document.open(data, filename="scan.tif") as document:
        assert document.kind is DocumentKind.TIFF and document.num_pages == 3
        assert [document.render_page(i).width for i in range(3)] == [300, 310, 320]
        assert document.select_pages("2-3") == [1, 2]
    with pytest.raises(DocumentTooLargeError, match="more than 2 pages"):
        Document.open(data, limits=VisionLimits(max_pages=2))


def test_a_tiff_frame_over_the_pixel_cap_is_refused_at_open():
    frames = [_page_image(100, 100), Image.new("1", (3000, 3000), 1)]   # bilevel: compresses to almost nothing
    data = samples.image_bytes(frames[0], "TIFF", save_all=True, append_images=frames[1:], compression="tiff_lzw")
    with pytest.raises(ImageTooLargeError, match="page 2 of the image is 3000x3000"):
        Document.open(data, limits=VisionLimits(max_image_pixels=5_000_000))


def test_png_header_bomb_is_refused_before_decoding():
    bomb = samples.png_header_bomb(20000, 20000)   # 400M pixels declared in ~100 bytes
    assert len(bomb) < 200
    # If any pixel were decoded first, the missing image data would surface as a
    # CorruptDocumentError (or a 1.2 GB allocation) instead of this error.
    with pytest.raises(ImageTooLargeError):
        Document.open(bomb, filename="bomb.png")
    with pytest.raises(ImageTooLargeError, match="too many pixels"):
        Document.open(bomb, limits=VisionLimits(max_image_pixels=10**12))  # past ours: Pillow's own check
    with pytest.raises(ImageTooLargeError, match="5000x5000"):
        Document.open(samples.png_header_bomb(5000, 5000), limits=VisionLimits(max_image_pixels=1_000_000))


def test_compressed_large_png_is_refused_by_our_cap():
    blank = Image.new("L", (4000, 4000), 255)        # 16M pixels in a few kilobytes
    data = samples.image_bytes(blank, "PNG", optimize=True)
    assert len(data) < 100_000
    with pytest.raises(ImageTooLargeError, match="the limit is 10,000,000"):
        Document.open(data, limits=VisionLimits(max_image_pixels=10_000_000))


def test_large_image_is_downscaled_to_the_page_pixel_cap():
    data = samples.image_bytes(Image.new("RGB", (3000, 2000), "white"), "PNG", dpi=(300, 300))
    with Document.open(data, limits=VisionLimits(max_page_pixels=1_500_000)) as document:
        page = document.render_page(0)
    assert page.width * page.height <= 1_500_000 and page.width / page.height == pytest.approx(1.5, rel=0.01)
    assert page.dpi == pytest.approx(300 * page.width / 3000, rel=1e-3)   # PNG stores dots per metre


def test_truncated_png_is_refused_at_open():
    data = samples.image_bytes(_page_image(400, 300), "PNG")
    with pytest.raises(CorruptDocumentError, match="damaged or truncated"):
        Document.open(data[: len(data) // 2], filename="cut.png")


def test_truncated_jpeg_fails_its_page_clearly():
    noisy = Image.fromarray(np.random.default_rng(0).integers(0, 255, (300, 400, 3), dtype=np.uint8))
    data = samples.image_bytes(noisy, "JPEG")
    with Document.open(data[: len(data) // 3]) as document:   # JPEG headers are intact: it opens
        with pytest.raises(CorruptDocumentError, match="page 1 is damaged or truncated"):
            document.render_page(0)


def test_one_pixel_wide_image_opens_and_renders():
    with Document.open(samples.image_bytes(Image.new("L", (1, 500), 0), "PNG")) as document:
        page = document.render_page(0)
    assert page.image.size == (1, 500) and page.image.mode == "RGB"


def test_transparent_png_is_flattened_onto_white():
    image = Image.new("RGBA", (50, 20), (0, 0, 0, 0))       # fully transparent "black"
    image.paste((10, 10, 10, 255), (5, 5, 15, 15))
    with Document.open(samples.image_bytes(image, "PNG")) as document:
        pixels = document.render_page(0).to_array()
    assert tuple(pixels[0, 0]) == (255, 255, 255) and tuple(pixels[10, 10]) == (10, 10, 10)


def test_exif_rotation_is_applied():
    image = _page_image(200, 100)
    exif = Image.Exif()
    exif[0x0112] = 6                                         # rotate 90 degrees clockwise to display
    with Document.open(samples.image_bytes(image, "JPEG", exif=exif)) as document:
        assert document.render_page(0).image.size == (100, 200)
        assert document.page_size_points(0)[0] < document.page_size_points(0)[1]


def test_sixteen_bit_greyscale_keeps_its_contrast():
    values = np.full((40, 60), 65535, dtype=np.uint16)
    values[10:20, 10:50] = 0
    with Document.open(samples.image_bytes(Image.fromarray(values), "PNG")) as document:
        pixels = document.render_page(0).to_array()
    assert pixels[0, 0, 0] == 255 and pixels[15, 20, 0] == 0
