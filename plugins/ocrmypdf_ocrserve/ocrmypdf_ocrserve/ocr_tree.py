"""A page result as OCRmyPDF's OcrElement tree (page -> paragraph -> line -> word),
which its fpdf2 renderer lays invisibly over the page.

| ours                              | OcrElement                                      |
|-----------------------------------|-------------------------------------------------|
| region, in reading order          | `ocr_par`; furniture as header/footer lines     |
| line (or a region's spread lines) | `ocr_line` (`ocr_header`/`ocr_footer` by role)  |
| a line's words                    | `ocrx_word`, boxes interpolated (see below)     |
| line confidence                   | every word's confidence (0-1)                   |

Lines come from `workers.searchable_pdf.text_boxes`, the same boxes ocrserve's
own searchable PDF uses (regions read whole have their text lines spread over
the region). The house recogniser reads a line at a time and gives no word
boxes, so a line's words share its width in proportion to their characters,
counting one character for each space between them: a search hit lands on the
right part of the line, not on an exact glyph.
"""
from __future__ import annotations

from dataclasses import replace

from ocrmypdf.models.ocr_element import BoundingBox, OcrClass, OcrElement

from workers.page_result import Box, PageResult
from workers.searchable_pdf import text_boxes

LINE_CLASS = {"header": OcrClass.HEADER, "footer": OcrClass.FOOTER}   # by region role; others OcrClass.LINE


def page_tree(page: PageResult, page_number: int = 0) -> OcrElement:
    paragraphs = []
    for region in page.regions:
        line_class = LINE_CLASS.get(region.role, OcrClass.LINE)
        confidence = _region_confidence(region)
        # text_boxes reads a page; given a page of this one region it yields the region's lines
        lines = [_line(box, text, line_class, confidence)
                 for box, text in text_boxes(replace(page, regions=(region,)))]
        lines = [line for line in lines if line is not None]
        if lines:
            paragraphs.append(OcrElement(ocr_class=OcrClass.PARAGRAPH, bbox=_bbox(region.bbox), children=lines))
    return OcrElement(ocr_class=OcrClass.PAGE, bbox=BoundingBox(0, 0, page.width, page.height),
                      children=paragraphs, dpi=page.dpi, page_number=page_number)


def _region_confidence(region) -> float | None:
    known = [line.confidence for line in region.lines if line.confidence is not None]
    return min(known) if known else None


def _line(box: Box, text: str, ocr_class: str, confidence: float | None) -> OcrElement | None:
    words = text.split()
    x0, y0, x1, y1 = box
    if not words or x1 <= x0 or y1 <= y0:
        return None
    # each word and the space after it take a share of the width by characters
    per_char = (x1 - x0) / (sum(map(len, words)) + len(words) - 1)
    children, left = [], x0
    for word in words:
        right = min(x1, left + len(word) * per_char)
        children.append(OcrElement(ocr_class=OcrClass.WORD, bbox=BoundingBox(left, y0, right, y1), text=word,
                                   confidence=confidence))
        left = right + per_char
    return OcrElement(ocr_class=ocr_class, bbox=_bbox(box), children=children, confidence=confidence)


def _bbox(box: Box) -> BoundingBox:
    x0, y0, x1, y1 = box
    return BoundingBox(x0, y0, max(x0, x1), max(y0, y1))
