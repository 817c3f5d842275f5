"""The structure of a page's text, computed once when the page is assembled:
each region's `blocks` (see `workers.structure_blocks`), a pure function of
its regions, their lines with their boxes, and the page's size.

`h`, the page's body line height, is the median height of the detected lines
of its body text regions (0.17 * dpi when it has none: a 10 pt line's box).

| region | blocks |
|---|---|
| table | one `table` block: the region's Markdown table |
| formula (`equation` label) | one `equation` block |
| `figure_caption`, `table_caption` | one `caption` block tied to the nearest figure / table |
| `title` (up to 3 rows) | one `heading` |
| any text region on a table-of-contents page | one `list` of its entries, one per row, leaders dropped |
| a text region of one row | a `heading` when numbered, in capitals (<= 6 words), or >= 1.2 h tall; else as below |
| other text | `workers.structure_text.segment_rows`: headings, paragraphs, lists, code, equations, tables without rules (`workers.structure_tables`) |
| header, footer | one `paragraph` |
| figure | none |

Heading levels: section numbering gives `depth + 1` ("1" -> 2, "1.1" -> 3);
an unnumbered heading takes the level of a numbered one on the page within 15%
of its height, one above the biggest (a paper's title: 1), one below the
smallest; on a page with no numbered heading, its size rank among the page's
headings does (sizes within 15% share a rank): the biggest 2, then 3, ...

A table-of-contents page: of its body text rows (>= 5), >= 30% are entries
(dot leaders, a page number 2 h right of its title) and >= 50% are entries or
start with section numbering. A text region that begins with "Figure 3:" /
"Table 2." within 3 h above or below a figure or table starts with its
`caption`; a layout caption takes the nearest one within 30% of the page height
(x-ranges overlapping; a figure caption prefers a figure, a table caption a table).
"""
from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import replace

from workers.page_result import RegionResult
from workers.structure_blocks import Block, BlockType, ListItem
from workers.structure_rows import Row, code_density, join_lines, numbered_heading, region_rows, toc_entry
from workers.structure_text import segment_rows

TITLE_MAX_ROWS = 3
HEADING_MAX_WORDS = 12
HEADING_MIN_HEIGHT = 0.9     # h: shorter rows (footnotes) are not numbered headings
HEADING_TALL = 1.2           # h: a one-row region this tall is a heading
SAME_LEVEL_HEIGHT = 0.15     # relative height difference of two headings of one level
TOC_ENTRY_SHARE, TOC_NUMBERED_SHARE, TOC_MIN_ROWS = 0.3, 0.5, 5
CAPTION_GAP = 3.0            # h: a "Figure 3:" paragraph this close to a figure is its caption
LABELLED_CAPTION_GAP = 0.3   # of the page height: how far a layout caption may sit from its figure

_TEXT_LABELS = {"text", "reference", "title"}
_CAPTION_LABELS = {"figure_caption": "figure", "table_caption": "table"}
_CAPTION_START = re.compile(r"^(?:figure|fig\.|table|listing|algorithm|chart|exhibit)\s*[A-Z]?\d+(?:\.\d+)*\s*[.:]",
                            re.IGNORECASE)


def with_structure(regions: Sequence[RegionResult], width: int, height: int, dpi: float) -> list[RegionResult]:
    """The regions with their `blocks` filled in."""
    return [replace(region, blocks=tuple(blocks))
            for region, blocks in zip(regions, page_blocks(regions, width, height, dpi))]


def page_blocks(regions: Sequence[RegionResult], width: int, height: int, dpi: float) -> list[list[Block]]:
    h = body_line_height(regions, dpi)
    rows = [region_rows(region.lines) if region.task == "text" else [] for region in regions]
    toc_page = _is_toc_page(regions, rows, h)
    columns = _columns(regions, rows, h)
    drafts = [_region_blocks(region, region_rows_, h, toc_page, column)
              for region, region_rows_, column in zip(regions, rows, columns)]
    blocks = _with_heading_levels(drafts)
    return [_with_captions(region_blocks, region, regions, h, height)
            for region_blocks, region in zip(blocks, regions)]


def body_line_height(regions: Sequence[RegionResult], dpi: float) -> float:
    heights = [line.bbox[3] - line.bbox[1] for region in regions
               if region.role == "body" and region.label in ("text", "reference") for line in region.lines]
    return max(1.0, statistics.median(heights)) if heights else max(1.0, 0.17 * dpi)


# --- one region ---------------------------------------------------------------------------------

Draft = list[tuple[Block, float]]   # blocks, each with its height (for heading levels)


def _columns(regions: Sequence[RegionResult], rows: list[list[Row]], h: float) -> list[tuple[float, float] | None]:
    """Per region, the left and right edges of the paragraph just before or after it in reading
    order, when that one holds it horizontally and sits within 2 h above or below: a region of
    one set-in command ("make check") has no edges of its own to measure its indent from."""
    text_ids = [i for i, region in enumerate(regions) if region.role == "body" and rows[i]]
    columns: list[tuple[float, float] | None] = [None] * len(regions)
    for position, i in enumerate(text_ids):
        x0, y0, x1, y1 = regions[i].bbox
        edges = []
        for j in (text_ids[p] for p in (position - 1, position + 1) if 0 <= p < len(text_ids)):
            left, right = min(row.x0 for row in rows[j]), max(row.x1 for row in rows[j])
            gap = max(0.0, y0 - regions[j].bbox[3], regions[j].bbox[1] - y1)
            if regions[j].label in ("text", "reference") and len(rows[j]) >= 2 and gap <= 2 * h and \
                    left - h <= x0 and x1 <= right + h:
                edges.append((left, right))
        if edges:
            columns[i] = (min(e[0] for e in edges), max(e[1] for e in edges))
    return columns


def _region_blocks(region: RegionResult, rows: list[Row], h: float, toc_page: bool,
                   column: tuple[float, float] | None) -> Draft:
    all_lines = tuple(range(len(region.lines)))
    if region.task == "skip":
        return []
    if region.task == "table":
        return [(Block(BlockType.TABLE, region.text, all_lines), h)] if region.text.strip() else []
    if region.task == "formula":
        return [(Block(BlockType.EQUATION, region.text.strip(), all_lines), h)] if region.text.strip() else []
    if not rows:
        return _blocks_without_boxes(region, h)
    if region.role != "body":
        return [(Block(BlockType.PARAGRAPH, join_lines([row.text for row in rows]), _ids(rows)), h)]
    if region.label in _CAPTION_LABELS:
        return [(Block(BlockType.CAPTION, join_lines([row.text for row in rows]), _ids(rows)), h)]
    if toc_page and region.label in _TEXT_LABELS:
        return _toc_blocks(region, rows, h)
    if region.label == "title" and len(rows) <= TITLE_MAX_ROWS:
        depth = (numbered_heading(rows[0].text) or (0, ""))[0]
        return [(Block(BlockType.HEADING, join_lines([row.text for row in rows]), _ids(rows),
                       level=depth + 1 if depth else None), max(row.height for row in rows))]
    return segment_rows(rows, h, lambda row, prev, only_row: _heading_depth(row, only_row, h), column)


def _blocks_without_boxes(region: RegionResult, h: float) -> Draft:
    """A region read whole (no line boxes): its label says what it is; its text is one block."""
    text = region.text.strip()
    if not text:
        return []
    joined = join_lines(text.splitlines())
    if region.role == "body" and region.label == "title":
        depth = (numbered_heading(joined) or (0, ""))[0]
        return [(Block(BlockType.HEADING, joined, level=depth + 1 if depth else 2), h)]
    if region.role == "body" and region.label in _CAPTION_LABELS:
        return [(Block(BlockType.CAPTION, joined), h)]
    return [(Block(BlockType.PARAGRAPH, joined), h)]


def _heading_depth(row: Row, only_row: bool, h: float) -> int | None:
    """The numbering depth of a heading row (0: unnumbered), None when the row is no heading."""
    text = row.text
    words = text.split()
    if toc_entry(row, h) is not None or len(words) > HEADING_MAX_WORDS + 1 or code_density(text) >= 0.15:
        return None
    numbered = numbered_heading(text)
    if numbered is not None:
        depth, title = numbered
        title_words = len(title.split())
        if title and not (title[:1].isupper() or title[:1] in "\"“'‘"):
            return None
        if title.endswith((",", ";")) or (title_words > 2 and title.endswith(".")) or len(text) > 90:
            return None
        if row.height < HEADING_MIN_HEIGHT * h or (not only_row and re.match(r"^\d+\.\s", text)):
            return None   # a footnote; "3. Text" among other rows is a list item
        return depth
    if not only_row or not any(c.isalpha() for c in text) or text.endswith((".", ",", ";", ":")):
        return None
    letters = [c for c in text if c.isalpha()]
    if len(letters) >= 3 and all(c.isupper() for c in letters) and len(words) <= 6:
        return 0
    return 0 if row.height >= HEADING_TALL * h and len(words) <= HEADING_MAX_WORDS else None


# --- tables of contents ---------------------------------------------------------------------------


def _is_toc_page(regions: Sequence[RegionResult], rows: list[list[Row]], h: float) -> bool:
    body_rows = [row for region, region_rows_ in zip(regions, rows)
                 if region.role == "body" and region.label in _TEXT_LABELS for row in region_rows_]
    if len(body_rows) < TOC_MIN_ROWS:
        return False
    entries = [toc_entry(row, h) is not None for row in body_rows]
    numbered = [numbered_heading(row.text) is not None for row in body_rows]
    num_entries = sum(entries)
    num_either = sum(e or n for e, n in zip(entries, numbered))
    return num_entries >= TOC_ENTRY_SHARE * len(body_rows) and num_either >= TOC_NUMBERED_SHARE * len(body_rows)


def _toc_blocks(region: RegionResult, rows: list[Row], h: float) -> Draft:
    entries = [toc_entry(row, h) for row in rows]
    if region.label == "title" and not any(entries) and not any(numbered_heading(r.text) for r in rows):
        return [(Block(BlockType.HEADING, join_lines([row.text for row in rows]), _ids(rows)),
                 max(row.height for row in rows))]
    items = []
    for row, entry in zip(rows, entries):
        title, page = entry if entry is not None else (row.text, None)
        # a tab, not an invented leader: plain text keeps the page's characters, Markdown shows a space
        items.append(ListItem("", f"{title}\t{page}" if page else title, row.line_ids))
    return [(Block(BlockType.LIST, "\n".join(item.text for item in items), _ids(rows), items=tuple(items),
                   ordered=False), h)]


# --- headings -------------------------------------------------------------------------------------


def _with_heading_levels(drafts: list[Draft]) -> list[list[Block]]:
    headings = [(block.level, height) for draft in drafts for block, height in draft
                if block.type is BlockType.HEADING]
    numbered = [(level, height) for level, height in headings if level is not None]
    unnumbered = [height for level, height in headings if level is None]
    return [[block if block.type is not BlockType.HEADING or block.level is not None
             else replace(block, level=_unnumbered_level(height, numbered, unnumbered)) for block, height in draft]
            for draft in drafts]


def _unnumbered_level(height: float, numbered: list[tuple[int, float]], unnumbered: list[float]) -> int:
    if not numbered:   # rank by size among the page's headings: the biggest are ##, as a title always was
        rank, rank_top = 0, max(unnumbered)
        for size in sorted(unnumbered, reverse=True):
            if size < rank_top * (1 - SAME_LEVEL_HEIGHT):
                rank, rank_top = rank + 1, size
            if size <= height:
                break
        return min(6, 2 + rank)
    level, closest = min(numbered, key=lambda lh: abs(lh[1] - height))
    if abs(closest - height) <= SAME_LEVEL_HEIGHT * closest:
        return level
    if height > max(hh for _, hh in numbered):
        return max(1, min(lv for lv, _ in numbered) - 1)
    if height < min(hh for _, hh in numbered):
        return min(6, max(lv for lv, _ in numbered) + 1)
    return level


# --- captions -------------------------------------------------------------------------------------


def _with_captions(blocks: list[Block], region: RegionResult, regions: Sequence[RegionResult], h: float,
                   page_height: float) -> list[Block]:
    if region.label in _CAPTION_LABELS:
        target = _caption_target(region, regions, _CAPTION_LABELS[region.label], LABELLED_CAPTION_GAP * page_height)
        return [replace(block, caption_of=target) if block.type is BlockType.CAPTION else block for block in blocks]
    if blocks and blocks[0].type is BlockType.PARAGRAPH and region.role == "body" and \
            _CAPTION_START.match(blocks[0].text):
        target = _caption_target(region, regions, None, CAPTION_GAP * h)
        if target is not None:
            return [replace(blocks[0], type=BlockType.CAPTION, caption_of=target)] + blocks[1:]
    return blocks


def _caption_target(caption: RegionResult, regions: Sequence[RegionResult], preferred: str | None,
                    max_gap: float) -> int | None:
    """The reading index of the nearest figure or table above or below the caption (x-ranges overlapping)."""
    cx0, cy0, cx1, cy1 = caption.bbox
    candidates = []
    for region in regions:
        if region.role != "body" or not (region.label == "figure" or region.task == "table"):
            continue
        x0, y0, x1, y1 = region.bbox
        if min(cx1, x1) <= max(cx0, x0):
            continue
        gap = max(0.0, cy0 - y1, y0 - cy1)
        if gap <= max_gap:
            kind = "figure" if region.label == "figure" else "table"
            candidates.append((preferred is not None and kind != preferred, gap, region.reading_index))
    return min(candidates)[2] if candidates else None


def _ids(rows: Sequence[Row]) -> tuple[int, ...]:
    return tuple(i for row in rows for i in row.line_ids)
