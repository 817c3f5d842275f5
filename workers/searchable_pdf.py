"""The searchable PDF: each page is the page image with the recognised text laid
over it invisibly (PDF text render mode 3), line by line at the recognised
boxes, so a viewer's search and selection find words where they are seen.

Each line is set in a Unicode font that has its characters (`workers.pdf_fonts`:
DejaVu Sans, FreeSerif, or PyMuPDF's CJK font; embedded, cut to the glyphs used) sized
so the font's ascender-to-descender height fills the line box, its baseline on the
box's descender line, and stretched horizontally to the box's width. Regions without line boxes (tables,
formulas) spread their text lines evenly over the region's height.

Pages are built one at a time by the page tasks (`page_pdf`) and joined when
the job finishes (`merge_page_files`), so no single task renders a whole
document. The join holds one batch of pages in memory at a time, and a join
cut short (a time limit, a killed worker) resumes where it stopped.
Every script's text is in the text layer as it is in the JSON: right-to-left lines
come back from a PDF reader's text extraction in logical order.
"""
from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import pymupdf
from PIL import Image

from vision.lines import reads_down
from vision.scripts import visual_order
from workers.data_dir import fsync_dir
from workers.page_result import Box, PageResult
from workers.pdf_fonts import ensure_on_page, font_for

JPEG_QUALITY = 80
INVISIBLE = 3                             # PDF text render mode: neither fill nor stroke
MERGE_BATCH_PAGES = 50                    # pages a join holds in memory at once
BLANK_PAGE_PT = (612, 792)                # US Letter, for a page with no PDF of its own


def page_pdf(image: Image.Image, page: PageResult) -> bytes:
    """A one-page PDF: `image` filling the page, the page's text invisible on top."""
    points_per_pixel = 72.0 / page.dpi
    doc = pymupdf.open()
    pdf_page = doc.new_page(width=image.width * points_per_pixel, height=image.height * points_per_pixel)
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="JPEG", quality=JPEG_QUALITY)
    pdf_page.insert_image(pdf_page.rect, stream=buffer.getvalue())
    _insert_text(pdf_page, page, points_per_pixel)
    doc.subset_fonts()   # each font cut to the glyphs the page uses
    return doc.tobytes(garbage=3, deflate=True)


def text_layer_pdf(page: PageResult) -> bytes:
    """A one-page PDF the size of the page (its pixels at its DPI) holding only the page's
    invisible text, nothing visible: what OCRmyPDF grafts onto its own page (ocrmypdf-ocrserve)."""
    points_per_pixel = 72.0 / page.dpi
    doc = pymupdf.open()
    pdf_page = doc.new_page(width=page.width * points_per_pixel, height=page.height * points_per_pixel)
    _insert_text(pdf_page, page, points_per_pixel)
    doc.subset_fonts()
    return doc.tobytes(garbage=3, deflate=True)


def _insert_text(pdf_page: pymupdf.Page, page: PageResult, points_per_pixel: float) -> None:
    fonts: set[str] = set()   # the fonts already embedded in this page
    for box, text in text_boxes(page):
        _insert_invisible_line(pdf_page, tuple(v * points_per_pixel for v in box), text, fonts)  # type: ignore[arg-type]
    _matrices_before_text_objects(pdf_page)


# PyMuPDF's `insert_text(..., morph=...)` writes its stretch (and turn) as `cm` right after `BT`,
# but `cm` is a special graphics state operator, which ISO 32000 (8.2, figure 9) does not allow
# inside a text object; strict readers and PDF/A validators refuse it. Before `BT`, inside the same
# `q ... Q`, it sets the same matrix for everything the text object draws.
_CM_AFTER_BT = re.compile(rb"BT\n((?:[-+.\d]+ [-+.\d]+ [-+.\d]+ [-+.\d]+ [-+.\d]+ [-+.\d]+ cm\n)+)")


def _matrices_before_text_objects(pdf_page: pymupdf.Page) -> None:
    doc = pdf_page.parent
    for xref in pdf_page.get_contents():
        stream = doc.xref_stream(xref)
        moved = _CM_AFTER_BT.sub(lambda match: match.group(1) + b"BT\n", stream)
        if moved != stream:
            doc.update_stream(xref, moved)


def merge_pdfs(pages: Iterable[bytes]) -> bytes:
    merged = pymupdf.open()
    for data in pages:
        with pymupdf.open(stream=data, filetype="pdf") as part:
            merged.insert_pdf(part)
    assert merged.page_count > 0, "a job always has at least one page"
    return merged.tobytes(garbage=3, deflate=True)


def merge_page_files(page_files: Sequence[Path], target: Path, batch_pages: int = MERGE_BATCH_PAGES) -> None:
    """Join one-page PDF files into `target`, in order; a missing or unreadable file becomes a
    blank Letter page, so page numbers still line up. Batches of `batch_pages` are appended to
    a partial file by incremental saves, the document closed and reopened from disk between
    them (memory holds one batch); a partial file left by an earlier, interrupted join is
    continued from its page count. It becomes `target` by a rename once complete."""
    assert page_files, "a job always has at least one page"
    partial = target.with_name(f".{target.name}.partial")
    done = _page_count(partial)
    if not 0 < done <= len(page_files):
        partial.unlink(missing_ok=True)
        done = 0
    for start in range(done, len(page_files), batch_pages):
        doc = pymupdf.open(partial) if start else pymupdf.open()
        try:
            for path in page_files[start:start + batch_pages]:
                _append_page(doc, path)
            _save(doc, partial, incremental=start > 0)
        finally:
            doc.close()
    with open(partial, "rb") as written:
        os.fsync(written.fileno())
    os.replace(partial, target)
    fsync_dir(target.parent)   # the finished PDF's name survives a crash


def _append_page(doc: pymupdf.Document, path: Path) -> None:
    try:
        with pymupdf.open(path) as part:
            doc.insert_pdf(part)
            return
    except (OSError, RuntimeError, ValueError):   # absent, or damaged by a crash: the page stays, blank
        pass
    doc.new_page(width=BLANK_PAGE_PT[0], height=BLANK_PAGE_PT[1])


def _save(doc: pymupdf.Document, path: Path, incremental: bool) -> None:
    if incremental and doc.can_save_incrementally():
        doc.save(path, incremental=True, encryption=pymupdf.PDF_ENCRYPT_KEEP)
        return
    tmp = path.with_name(path.name + ".tmp")   # a whole save (the first, or of a repaired file) replaces it whole
    doc.save(tmp, garbage=1, deflate=True)
    os.replace(tmp, path)


def _page_count(path: Path) -> int:
    """Pages in a partial join; 0 when there is none or it cannot be read."""
    if not path.exists():
        return 0
    try:
        with pymupdf.open(path) as doc:
            return doc.page_count
    except (RuntimeError, ValueError):
        return 0


def blank_page_pdf(width_pt: float, height_pt: float) -> bytes:
    """Stands in for a page that failed before it was rendered, so page numbers still line up."""
    doc = pymupdf.open()
    doc.new_page(width=width_pt, height=height_pt)
    return doc.tobytes()


def text_boxes(page: PageResult) -> list[tuple[Box, str]]:
    """(box in page pixels, one line of text) for every piece of text on the page: each line, but
    each word of a curved line (`LineResult.curve`), whose box holds the whole bend: set in it, the
    line's text would stand two or three lines tall; word by word it follows the bend."""
    boxes: list[tuple[Box, str]] = []
    for region in page.regions:
        if region.lines:
            for line in region.lines:
                if not line.text.strip():
                    continue
                if line.curve is not None and line.words:
                    boxes += [(word.bbox, word.text) for word in line.words if word.text.strip()]
                else:
                    boxes.append((line.bbox, line.text))
        elif region.text.strip():
            boxes += _spread(region.bbox, [t for t in region.text.splitlines() if t.strip()])
    return boxes


def _spread(box: Box, lines: Sequence[str]) -> list[tuple[Box, str]]:
    x0, y0, x1, y1 = box
    step = (y1 - y0) / len(lines)
    return [((x0, y0 + i * step, x1, y0 + (i + 1) * step), text) for i, text in enumerate(lines)]


def _insert_invisible_line(page: pymupdf.Page, box: Box, text: str, fonts: set[str]) -> None:
    x0, y0, x1, y1 = box
    height, width = y1 - y0, x1 - x0
    text = visual_order(" ".join(text.split()))
    if height <= 0 or width <= 0 or not text:
        return
    font = font_for(text)
    ascender, descender = font.ascender, font.descender
    vertical = reads_down(box, text)
    fontsize = (width if vertical else height) / (ascender - descender)
    natural_length = font.font.text_length(text, fontsize=fontsize)
    if natural_length <= 0:
        return
    ensure_on_page(page, font, fonts)
    if vertical:
        # a column (vertical Chinese or Japanese, a label set on its side): the text runs down the
        # box, turned a quarter clockwise, so a selection covers the column
        baseline = pymupdf.Point(x0 - descender * fontsize, y0)
        stretch = pymupdf.Matrix(1, height / natural_length)
        page.insert_text(baseline, text, fontsize=fontsize, fontname=font.name, render_mode=INVISIBLE,
                         rotate=270, morph=(baseline, stretch))
        return
    baseline = pymupdf.Point(x0, y1 + descender * fontsize)
    stretch = pymupdf.Matrix(width / natural_length, 1)
    page.insert_text(baseline, text, fontsize=fontsize, fontname=font.name, render_mode=INVISIBLE,
                     morph=(baseline, stretch))
