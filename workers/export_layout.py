"""What the hOCR and ALTO writers write: a job's pages, each page's regions in reading order,
each region's lines and each line's words, with boxes in whole page pixels.

Read from the result JSON (`workers.document_result`), like Markdown, so the files can be
written again from a stored result. A line stored without words (results from before they
existed) gets interpolated ones here. A region read whole (a formula, a table a region-reading
recogniser read at once) has text but no lines: each of its text lines becomes a line, the
region's box shared out among them by height, its words interpolated (`box_source` says so).
A figure with no text is a picture.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from vision.scripts import RIGHT_TO_LEFT
from workers.line_words import interpolated_words
from workers.page_result import WordResult

IntBox = tuple[int, int, int, int]
_TABLE_RULE = frozenset("|-: ")
# Characters XML 1.0 cannot carry at all (C0 controls but tab and newlines, lone surrogates, U+FFFE/U+FFFF):
# a recogniser's stray control character must not make the whole file unreadable.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class ExportWord:
    bbox: IntBox
    text: str
    confidence: float | None
    box_source: str


@dataclass(frozen=True)
class ExportLine:
    bbox: IntBox
    words: tuple[ExportWord, ...]
    language: str | None = None    # its Tesseract code ("rus", "chi_sim"), where the line's language is known
    right_to_left: bool = False    # a line in a right-to-left script (Arabic, Hebrew)


@dataclass(frozen=True)
class ExportRegion:
    reading_index: int
    label: str
    role: str                   # body, or a kind of furniture (workers.furniture)
    bbox: IntBox
    lines: tuple[ExportLine, ...]
    is_picture: bool            # a figure with no text: a picture, not a text block


@dataclass(frozen=True)
class ExportPage:
    filename: str
    number: int                 # 1-based, within its document
    width: int
    height: int
    dpi: float
    regions: tuple[ExportRegion, ...]


def export_pages(result: dict[str, Any]) -> Iterator[ExportPage]:
    """Every page of every document in the job, in order; a page that was never laid out (it
    failed before rendering) has no size and no regions."""
    for document in result["documents"]:
        for page in document["pages"]:
            width, height = int(page.get("width") or 0), int(page.get("height") or 0)
            regions = sorted(page.get("regions") or (), key=lambda region: region["reading_index"])
            yield ExportPage(document["filename"], int(page["page"]), width, height, float(page.get("dpi") or 0),
                             tuple(_region(region, width, height) for region in regions if _shown(region)))


def _shown(region: dict[str, Any]) -> bool:
    return bool(region["text"].strip() or region["lines"] or region["label"] == "figure")


def _region(region: dict[str, Any], width: int, height: int) -> ExportRegion:
    bbox = _int_box(region["bbox"], width, height)
    lines = region["lines"] or _whole_lines(region)
    exported = tuple(_line(line, width, height) for line in lines if line["text"].strip())
    lines = tuple(line for line in exported if line.words)
    bbox = _union([bbox, *(line.bbox for line in lines)])
    return ExportRegion(int(region["reading_index"]), region["label"], region["role"], bbox, lines,
                        is_picture=not lines)


def _whole_lines(region: dict[str, Any]) -> list[dict[str, Any]]:
    """A region read whole: its text lines (a Markdown table's rules left out), each a strip of its box."""
    texts = [text for text in region["text"].splitlines() if text.strip() and not set(text) <= _TABLE_RULE]
    x0, y0, x1, y1 = region["bbox"]
    step = (y1 - y0) / max(len(texts), 1)
    return [{"bbox": [x0, y0 + i * step, x1, y0 + (i + 1) * step], "text": text, "confidence": None}
            for i, text in enumerate(texts)]


def _line(line: dict[str, Any], width: int, height: int) -> ExportLine:
    stored = [WordResult.from_dict(word) for word in line.get("words") or ()]
    words = stored or interpolated_words(tuple(line["bbox"]), line["text"], line.get("confidence"))  # type: ignore[arg-type]
    exported = tuple(ExportWord(_int_box(word.bbox, width, height), _NOT_XML.sub("\ufffd", word.text),
                                word.confidence, word.box_source) for word in words)
    # The line's box stays the detected one even where a text layer's word boxes (the font's ascent and
    # descent) stand out of it: unions of those overlap the next line's.
    return ExportLine(_int_box(line["bbox"], width, height), exported, line.get("language") or None,
                      line.get("script") in RIGHT_TO_LEFT)


def _union(boxes: list[IntBox]) -> IntBox:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _int_box(box: Any, width: int, height: int) -> IntBox:
    """Whole pixels holding the box, inside the page (at least one pixel wide and high)."""
    x0, y0 = max(0, math.floor(box[0])), max(0, math.floor(box[1]))
    x1, y1 = math.ceil(box[2]), math.ceil(box[3])
    if width and height:
        x0, y0, x1, y1 = min(x0, width - 1), min(y0, height - 1), min(x1, width), min(y1, height)
    return x0, y0, max(x1, x0 + 1), max(y1, y0 + 1)
