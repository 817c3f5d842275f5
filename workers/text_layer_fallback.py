"""Text taken from a PDF's own text layer, for regions the recogniser could not read.

A word belongs to a region when its centre lies inside the region's box.
Words are kept in the PDF's own order (block, line, word) and grouped into the
PDF's lines, each with the union of its words' boxes, so a fallback region
still has line boxes for the searchable PDF. When a page could not be laid
out at all, `text_layer_regions` turns each text-layer block into a region.
"""
from __future__ import annotations

from collections.abc import Sequence

from vision.crops import normalise_box
from vision.document import TextWord
from workers.page_result import Box, LineResult, RegionResult, RegionStatus


def words_in_box(words: Sequence[TextWord], bbox: Box) -> list[TextWord]:
    x0, y0, x1, y1 = bbox
    return [w for w in words
            if x0 <= (w.bbox[0] + w.bbox[2]) / 2 <= x1 and y0 <= (w.bbox[1] + w.bbox[3]) / 2 <= y1]


def lines_from_words(words: Sequence[TextWord]) -> list[LineResult]:
    grouped: dict[tuple[int, int], list[TextWord]] = {}
    for word in sorted(words, key=lambda w: (w.block_no, w.line_no, w.word_no)):
        grouped.setdefault((word.block_no, word.line_no), []).append(word)
    return [LineResult(_union([w.bbox for w in line]), " ".join(w.text for w in line)) for line in grouped.values()]


def fallback_text(words: Sequence[TextWord], bbox: Box) -> tuple[str, tuple[LineResult, ...]] | None:
    """Text and lines for a region from the words inside it; None when there are none."""
    lines = lines_from_words(words_in_box(words, bbox))
    if not lines:
        return None
    return "\n".join(line.text for line in lines), tuple(lines)


def text_layer_regions(words: Sequence[TextWord], width: int, height: int, reason: str) -> list[RegionResult]:
    """One `fallback` text region per text-layer block, in the PDF's block order."""
    blocks: dict[int, list[TextWord]] = {}
    for word in words:
        blocks.setdefault(word.block_no, []).append(word)
    regions = []
    for reading_index, block_no in enumerate(sorted(blocks)):
        lines = lines_from_words(blocks[block_no])
        bbox = _union([line.bbox for line in lines])
        regions.append(RegionResult(
            reading_index=reading_index, label="text", task="text", role="body", bbox=bbox,
            bbox_1000=normalise_box(bbox, width, height), text="\n".join(line.text for line in lines),
            status=RegionStatus.FALLBACK, origin="text_layer", source="text_layer", reason=reason, lines=tuple(lines)))
    return regions


def _union(boxes: Sequence[Sequence[float]]) -> Box:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))
