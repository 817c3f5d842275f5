"""An uploaded document, opened under caps: pages rendered to RGB images, and
(for PDFs) the text layer, with how it is painted: taken instead of
recognition where it passes its checks (`vision.text_layer`), and the fallback
when recognition fails.

`Document.open` does every check that is cheap — type from magic bytes, byte
cap, encryption, page count, every image frame's declared pixel count — so a
bad upload is refused before any page is rendered or any pixel decoded.
`Document.open_path` does the same on a file without reading it into memory:
MuPDF and Pillow read what they need from the file.

| kept by `Document`                         | how                                         |
|--------------------------------------------|---------------------------------------------|
| a page image never exceeds max_page_pixels | PDFs render at a lowered DPI; images shrink |
| boxes are in page pixels of the render     | text-layer words are scaled by dpi / 72     |

A `Document` is not thread-safe (PyMuPDF documents are not): open one per task.
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pymupdf
from PIL import Image

from vision.formats import PDF_HEADER_WINDOW, DocumentKind, sniff_kind
from vision.images import ImageInfo, decode_frame, inspect_image
from vision.layer_math import PageMaths, big_symbol_text, is_big_symbol_font
from vision.limits import (POINTS_PER_INCH, CorruptDocumentError, DocumentTooLargeError, EmptyDocumentError,
                           EncryptedPDFError, InputError, UnsupportedFormatError, VisionLimits)
from vision.pages import parse_page_selection
from vision.photo import PageGeometry, straighten_photo
from vision.text_normal import is_unmapped, normalise_text

Box = tuple[float, float, float, float]  # x0, y0, x1, y1
PDF_EOF_MARKER = b"%%EOF"
PDF_TRAILER_WINDOW = 1024  # where readers look for the end-of-file marker


@dataclass(frozen=True)
class RenderedPage:
    page_index: int      # 0-based
    image: Image.Image   # RGB
    dpi: float           # pixels per inch of `image`; PDF points = pixels * 72 / dpi
    render_s: float      # seconds spent rendering or decoding
    geometry: PageGeometry | None = None   # a photo of a page: how it was made flat (`image` is the result)

    @property
    def width(self) -> int:
        return self.image.width

    @property
    def height(self) -> int:
        return self.image.height

    def to_array(self) -> np.ndarray:
        return np.asarray(self.image)  # [height, width, 3] uint8, RGB


@dataclass(frozen=True)
class TextWord:
    text: str
    bbox: Box            # page pixels at the DPI asked for
    block_no: int
    line_no: int
    word_no: int


@dataclass(frozen=True)
class PaintedText:
    """One span of the text layer as the page paints it (PyMuPDF's text trace)."""
    bbox: Box            # page pixels at the DPI asked for
    invisible: bool      # render mode 3 or 7 (neither filled nor stroked), or fully transparent
    seqno: int           # position in the page's painting order


@dataclass(frozen=True)
class PaintedImage:
    bbox: Box            # page pixels at the DPI asked for
    seqno: int           # position in the page's painting order (comparable with PaintedText.seqno)


class Document:
    def __init__(self, kind: DocumentKind, num_pages: int, limits: VisionLimits,
                 pdf: pymupdf.Document | None = None, image_data: bytes | Path | None = None,
                 image_info: ImageInfo | None = None):
        assert (pdf is None) != (image_data is None)
        self.kind = kind
        self.num_pages = num_pages
        self.limits = limits
        self._pdf = pdf
        self._image_data = image_data
        self._image_info = image_info

    @classmethod
    def open(cls, data: bytes, filename: str | None = None,
             limits: VisionLimits = VisionLimits()) -> Document:
        if len(data) > limits.max_upload_bytes:
            raise DocumentTooLargeError(
                f"the upload is {len(data):,} bytes; the limit is {limits.max_upload_bytes:,}")
        if not data:
            raise EmptyDocumentError("the upload is empty (0 bytes)")
        kind = sniff_kind(data, filename, limits=limits)
        _check_opened_as_is(kind)
        if kind is DocumentKind.PDF:
            pdf = _open_pdf(data, limits, data[-PDF_TRAILER_WINDOW:])
            return cls(kind, pdf.page_count, limits, pdf=pdf)
        info = inspect_image(data, kind, limits)
        return cls(kind, info.num_frames, limits, image_data=data, image_info=info)

    @classmethod
    def open_path(cls, path: str | os.PathLike[str], limits: VisionLimits = VisionLimits(),
                  filename: str | None = None) -> Document:
        """Open a file, checking its size first; its bytes are never all in memory at once.
        `filename`: the name the user gave it (default: the file's own)."""
        path = Path(path)
        size = os.stat(path).st_size
        shown = filename if filename is not None else path.name
        if size > limits.max_upload_bytes:
            raise DocumentTooLargeError(f"{shown} is {size:,} bytes; the limit is {limits.max_upload_bytes:,}")
        if size == 0:
            raise EmptyDocumentError("the upload is empty (0 bytes)")
        with open(path, "rb") as f:
            head = f.read(PDF_HEADER_WINDOW)
            f.seek(max(0, size - PDF_TRAILER_WINDOW))
            tail = f.read(PDF_TRAILER_WINDOW)
        kind = sniff_kind(head, shown, source=path, limits=limits)
        _check_opened_as_is(kind)
        if kind is DocumentKind.PDF:
            pdf = _open_pdf(path, limits, tail)
            return cls(kind, pdf.page_count, limits, pdf=pdf)
        info = inspect_image(path, kind, limits)
        return cls(kind, info.num_frames, limits, image_data=path, image_info=info)

    def select_pages(self, selection: str | None) -> list[int]:
        """0-based page indices for a selection like "1-5,8" (None: all pages)."""
        return parse_page_selection(selection, self.num_pages, self.limits)

    def page_size_points(self, page_index: int) -> tuple[float, float]:
        """Page width and height in PDF points (images: at their stated or assumed DPI)."""
        self._check_index(page_index)
        if self._pdf is not None:
            rect = self._pdf[page_index].rect
            return rect.width, rect.height
        assert self._image_info is not None
        width, height = self._image_info.frame_sizes[page_index]
        points_per_pixel = POINTS_PER_INCH / self._image_info.frame_dpis[page_index]
        return width * points_per_pixel, height * points_per_pixel

    def render_page(self, page_index: int, dpi: float | None = None) -> RenderedPage:
        """The page as an RGB image within `max_page_pixels`. For PDFs `dpi`
        defaults to the limits' render DPI; images keep their own resolution, and a
        photo of a page is made flat and upright (`vision.photo`; `geometry` says how)."""
        self._check_index(page_index)
        if dpi is not None:
            dpi = self.limits.check_dpi(dpi)
        started = time.perf_counter()
        geometry = None
        if self._pdf is not None:
            image, used_dpi = self._render_pdf_page(page_index, dpi)
        else:
            image, used_dpi = self._decode_image_page(page_index)
            image, geometry = straighten_photo(image)   # flat scans come back as they are
        return RenderedPage(page_index, image, used_dpi, time.perf_counter() - started, geometry)

    def text_words(self, page_index: int, dpi: float, unmapped_as_replacement: bool = False) -> list[TextWord]:
        """The PDF text layer of a page, boxes in pixels at `dpi` (empty for images), its text as
        `vision.text_normal` spells it (accents on their letters, NFC, ligatures as letters). With
        `unmapped_as_replacement`, a glyph its font maps to no Unicode character comes out as
        U+FFFD instead of its glyph number (which reads like letters: "+HOOR" for "Hello")."""
        self._check_index(page_index)
        if self._pdf is None:
            return []
        page = self._pdf[page_index]
        to_pixels = self._to_pixels(page, dpi)
        flags = pymupdf.TEXTFLAGS_WORDS
        if unmapped_as_replacement:
            flags &= ~pymupdf.TEXT_CID_FOR_UNKNOWN_UNICODE
        words = []
        raw_words = page.get_text("words", flags=flags)
        if unmapped_as_replacement:
            raw_words = _with_big_symbols(page, raw_words, flags)
        for x0, y0, x1, y1, text, block_no, line_no, word_no in raw_words:
            box = pymupdf.Rect(x0, y0, x1, y1) * to_pixels
            words.append(TextWord(normalise_text(text), (box.x0, box.y0, box.x1, box.y1), block_no, line_no,
                                  word_no))
        return words

    def paint_order(self, page_index: int, dpi: float) -> tuple[list[PaintedText], list[PaintedImage]]:
        """The text spans and raster images a PDF page paints, in painting order, boxes in
        pixels at `dpi` (both empty for images): what tells visible text from an invisible
        OCR layer, and text painted over or under a picture."""
        self._check_index(page_index)
        if self._pdf is None:
            return [], []
        page = self._pdf[page_index]
        to_pixels = self._to_pixels(page, dpi)

        def pixels(bbox: Sequence[float]) -> Box:
            box = pymupdf.Rect(bbox) * to_pixels
            return box.x0, box.y0, box.x1, box.y1

        texts = [PaintedText(pixels(span["bbox"]), span["type"] in (3, 7) or span["opacity"] == 0, span["seqno"])
                 for span in page.get_texttrace()]
        # The bbox log lists everything painted in order; its index is the text trace's seqno.
        images = [PaintedImage(pixels(bbox), seqno) for seqno, (kind, bbox) in enumerate(page.get_bboxlog())
                  if kind in ("fill-image", "fill-imgmask")]
        return texts, images

    def page_maths(self, page_index: int, dpi: float) -> PageMaths | None:
        """The PDF page's glyphs and rules, for formulas as LaTeX (`vision.layer_math`), asked
        about in pixels at `dpi`; None for images."""
        self._check_index(page_index)
        if self._pdf is None:
            return None
        page = self._pdf[page_index]
        return PageMaths(page, ~self._to_pixels(page, dpi))

    def has_text_layer(self, page_index: int) -> bool:
        self._check_index(page_index)
        return self._pdf is not None and bool(self._pdf[page_index].get_text("text").strip())

    def close(self) -> None:
        if self._pdf is not None:
            self._pdf.close()

    def __enter__(self) -> Document:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @staticmethod
    def _to_pixels(page: pymupdf.Page, dpi: float) -> pymupdf.Matrix:
        # Text comes out in unrotated page space; the render shows the page rotated.
        return page.rotation_matrix * pymupdf.Matrix(dpi / POINTS_PER_INCH, dpi / POINTS_PER_INCH)

    def _check_index(self, page_index: int) -> None:
        if not 0 <= page_index < self.num_pages:
            raise IndexError(f"page index {page_index} out of range for {self.num_pages} pages")

    def _render_pdf_page(self, page_index: int, dpi: float | None) -> tuple[Image.Image, float]:
        assert self._pdf is not None
        try:
            page = self._pdf[page_index]
            rect = page.rect
            if not (rect.width >= 1 and rect.height >= 1 and math.isfinite(rect.width * rect.height)):
                raise CorruptDocumentError(f"page {page_index + 1} has no usable size ({rect.width}x{rect.height} pt)")
            used_dpi = self.limits.dpi_for_page(rect.width, rect.height, dpi)
            zoom = used_dpi / POINTS_PER_INCH
            pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csRGB, alpha=False)
        except InputError:
            raise
        except _MUPDF_ERRORS as exc:
            raise CorruptDocumentError(f"page {page_index + 1} of the PDF cannot be rendered ({exc})") from exc
        image = Image.frombytes("RGB", (pixmap.width, pixmap.height), pixmap.samples)
        return image, used_dpi

    def _decode_image_page(self, page_index: int) -> tuple[Image.Image, float]:
        assert self._image_data is not None
        image, stated_dpi = decode_frame(self._image_data, self.kind, page_index, self.limits)
        num_pixels = image.width * image.height
        if num_pixels <= self.limits.max_page_pixels:
            return image, stated_dpi
        shrink = math.sqrt(self.limits.max_page_pixels / num_pixels)
        size = (max(1, int(image.width * shrink)), max(1, int(image.height * shrink)))
        return image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0), stated_dpi * size[0] / image.width


# What MuPDF raises for a damaged file or page: its FzError* classes (a malformed page tree met
# only when the page loads, say) derive from Exception, not from RuntimeError like FileDataError;
# IndexError when a page the page tree counted cannot be found (the caller's index was checked).
_MUPDF_ERRORS = (RuntimeError, ValueError, IndexError, pymupdf.mupdf.FzErrorBase)


def _check_opened_as_is(kind: DocumentKind) -> None:
    if kind.is_converted:   # the job service converts these first (vision/office.py) and opens the PDF
        raise UnsupportedFormatError(f"{kind.value.upper()} documents are read from the PDF they are converted to, "
                                     "not opened as they are")


def _open_pdf(source: bytes | Path, limits: VisionLimits, tail: bytes) -> pymupdf.Document:
    """`source`: the bytes or the file; `tail`: its last PDF_TRAILER_WINDOW bytes."""
    # MuPDF "repairs" a cut-off file into whatever pages survive; a truncated
    # upload is refused instead of silently losing its end.
    if PDF_EOF_MARKER not in tail:
        raise CorruptDocumentError("the PDF is truncated or damaged: it has no end-of-file marker")
    try:
        if isinstance(source, Path):
            pdf = pymupdf.open(str(source), filetype="pdf")
        else:
            pdf = pymupdf.open(stream=source, filetype="pdf")
    except _MUPDF_ERRORS as exc:  # pymupdf.FileDataError is a RuntimeError
        raise CorruptDocumentError("the PDF is damaged and cannot be read") from exc
    if pdf.needs_pass:
        pdf.close()
        raise EncryptedPDFError("the PDF is password-protected; remove the password and upload it again")
    try:
        num_pages = pdf.page_count
    except _MUPDF_ERRORS as exc:   # e.g. a page tree whose count is invalid ("code=7")
        pdf.close()
        raise CorruptDocumentError("the PDF is damaged and cannot be read: its page tree is invalid") from exc
    if num_pages == 0:
        pdf.close()
        raise EmptyDocumentError("the PDF has no pages")
    if num_pages > limits.max_pages:
        pdf.close()
        raise DocumentTooLargeError(f"the PDF has {num_pages:,} pages; the limit is {limits.max_pages:,}")
    return pdf


def _with_big_symbols(page: pymupdf.Page, words: list[tuple], flags: int) -> list[tuple]:
    """`words` with the glyphs of TeX's big-symbol fonts (cmex: sums, integrals, radicals, tall
    brackets) as the characters they stand for. pdfTeX maps them to no Unicode, so they come out
    as raw codes ("\\x12" for a tall parenthesis, "X" for a display sum): read as such, a page of
    formulas looks like a layer of glyph numbers and is recognised from its pixels instead.
    Only the words holding such a glyph are looked at again."""
    if not any(is_unmapped(char) for word in words for char in word[4]) or \
            not any(is_big_symbol_font(font[3]) for font in page.get_fonts()):
        return words   # nothing unreadable, or no font whose glyphs can be read here
    chars = []     # (centre x, centre y, char, its text when a big symbol else None), in extraction order
    # with the raw codes of the characters a font maps to no Unicode, as `vision.layer_math` reads them
    for block in page.get_text("rawdict", flags=flags | pymupdf.TEXT_CID_FOR_UNKNOWN_UNICODE).get("blocks", []):
        for line in block.get("lines", []):
            for span in line["spans"]:
                for char in span["chars"]:
                    symbol = big_symbol_text(char["c"], span["font"])
                    if not char["c"].isspace() or symbol is not None:
                        x0, y0, x1, y1 = char["bbox"]
                        chars.append(((x0 + x1) / 2, (y0 + y1) / 2, char["c"], symbol))

    def inside(word: tuple, cx: float, cy: float) -> bool:
        return word[0] <= cx <= word[2] and word[1] <= cy <= word[3]

    holding = {k for cx, cy, _, symbol in chars if symbol is not None
               for k, word in enumerate(words) if inside(word, cx, cy)}
    if not holding:
        return words
    out = []
    for k, (x0, y0, x1, y1, text, *numbers) in enumerate(words):
        if k in holding:
            symbols = [symbol for cx, cy, _, symbol in chars if inside(words[k], cx, cy)]
            letters = [c for c in text if not c.isspace()]
            if len(letters) == len(symbols):
                text = "".join(c if symbol is None else symbol for c, symbol in zip(letters, symbols))
            else:   # the word holds characters the rawdict split otherwise: replace its unreadable ones
                pending = iter([symbol for symbol in symbols if symbol is not None])
                text = "".join(next(pending, c) if is_unmapped(c) else c for c in text)
        text = text.replace("\u21a6\u2192", "\u21a6")   # "↦" is its bar and the arrow after it
        if text.strip():
            out.append((x0, y0, x1, y1, text, *numbers))
    return out
