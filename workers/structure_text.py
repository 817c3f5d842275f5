"""A text region's rows -> heading, paragraph, list, code and equation blocks.

Thresholds are in `h`, the page's body line height; code is found by
`workers.structure_code`.

Rows go top to bottom; each joins the block it continues or starts a new one:

- code: rows `workers.structure_code.code_runs` finds (prompts, symbols, set-in commands).
- table: rows of cells lined up in columns, `workers.structure_tables.table_runs` (tables
  without rules, such as a statement of amounts, that the layout model took for text).
- heading: a row that starts with section numbering ("2", "2.3", "A.1", "Chapter 3")
  and a capitalised title of <= 12 words (the page decides, `workers.structure`),
  where a paragraph may start and, with rows below it, short of the right edge; or a
  short row of 3-10 words in Title Case, so placed, over a full row of running text.
- list: a row that starts with a bullet glyph, or a dash or enumerator ("1.", "1)",
  "(a)", "iv.", "[3]") where a paragraph may start. A row without a marker
  continues the item when it starts at the item's text (0.35 h; the first such row
  sets where that is, 0.7 h from the estimate), or wraps back under the marker
  mid-sentence. A marker further right than the item above nests (depth + 1, <= 3).
- equation: a row ending in an equation number "(3)" at the right edge whose rest is
  centred (8% of the width), narrower than 75% of it, set in 10%, with a math symbol.
- paragraph: anything else. A new one starts after a gap 0.6 h over the usual one
  (0.35 h after a sentence); after a short row (1.5 h free) ending a sentence in
  justified text (60% of rows full) or before a footnote ("2 Text"); at a first-line
  indent (0.5-4 h) after a row that is short or ends a sentence; or where rows step
  back left (0.5 h) after a short row. Rows centred on one axis (0.75 h) with ragged
  edges (0.5 h) are one paragraph that keeps its line breaks (an address).
"""
from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from workers.structure_blocks import Block, BlockType, ListItem
from workers.structure_code import code_block, code_runs
from workers.structure_tables import table_block, table_runs
from workers.structure_rows import (Frame, Row, code_density, ends_sentence, join_lines, line_ids, list_marker,
                                    marker_number, starts_capitalised)

PARAGRAPH_GAP = 0.6         # h above the usual gap between rows: a new paragraph
SENTENCE_GAP = 0.35         # h above the usual gap after a row that ends a sentence: a new paragraph
USUAL_GAP_MAX = 0.25        # h: the usual gap between a region's rows (their median) is at most this
INDENT_MIN, INDENT_MAX = 0.5, 4.0   # h: a first-line indent
JUSTIFIED = 0.6             # of a region's rows (but its last) reaching the right edge: justified text
ITEM_TEXT_TOLERANCE = 0.35  # h: a continuation row sits this close to its item's text
MAX_LIST_DEPTH = 3
CENTRED, RAGGED = 0.75, 0.5   # h: rows centred this close to their median, both edges spread this far
TITLE_MIN_WORDS, TITLE_MAX_WORDS = 3, 10   # an unnumbered Title Case heading over running text
_SMALL_WORDS = frozenset("a an and as at but by for from in into of on or per the to via vs with".split())

_ENUMERATOR_ONLY = re.compile(r"^(\((?:\d{1,3}|[a-zA-Z]|[ivxlcdm]{1,6})\)|(?:\d{1,3}|[a-z]|[ivxlcdm]{1,6})[.)])$")
_FOOTNOTE = re.compile(r"^(?:\d{1,2}|[*†‡§])\s+\S")
_EQUATION_NUMBER = re.compile(r"^\((\d{1,3}[a-z]?)\)$")
_TRAILING_EQUATION_NUMBER = re.compile(r"^(.*\S)\s+\((\d{1,3}[a-z]?)\)$")
_MATH = re.compile(r"[=<>≤≥≈≠∑∫∏√±×÷∂∇∞→∈]")


@dataclass
class _Item:
    marker: str
    rows: list[Row]
    depth: int
    marker_x: float
    text_x: float


HeadingTest = Callable[[Row, "Row | None", bool], "int | None"]


def segment_rows(rows: Sequence[Row], h: float, heading_depth: HeadingTest,
                 column: tuple[float, float] | None = None) -> list[tuple[Block, float]]:
    """Blocks of a region's rows, each with its height (of its first row). `column`: the left and
    right edges of the text around the region, when it is narrower than its rows show.

    `heading_depth(row, prev, only_row)` says whether a row is a heading and gives its
    numbering depth (0: a heading without numbering); headings come back with level None."""
    if not rows:
        return []
    if _is_centred(rows, h):
        return [(Block(BlockType.PARAGRAPH, "\n".join(row.text for row in rows), line_ids(rows)), rows[0].height)]
    gaps = [b.y0 - a.y1 for a, b in zip(rows, rows[1:])]
    usual_gap = min(statistics.median(gaps), USUAL_GAP_MAX * h) if gaps else 0.0
    left, right = min(r.x0 for r in rows), max(r.x1 for r in rows)
    if column is not None:
        left, right = min(left, column[0]), max(right, column[1])
    frame = Frame(h, left, right, usual_gap)
    full_rows = sum(not frame.is_short(row) for row in rows[:-1])
    frame = replace(frame, justified=len(rows) >= 3 and full_rows >= JUSTIFIED * (len(rows) - 1))
    equations = {k for k, row in enumerate(rows) if _equation(row, frame) is not None}
    runs = code_runs(rows, frame, equations)
    code_rows = {i for start, end in runs.items() for i in range(start, end)}
    tables = table_runs(rows, h, code_rows | equations)
    out: list[tuple[Block, float]] = []
    paragraph: list[Row] = []
    items: list[_Item] = []

    def flush() -> None:
        if paragraph:
            out.append((_paragraph(paragraph), paragraph[0].height))
            paragraph.clear()
        if items:
            out.append((_list(items), items[0].rows[0].height))
            items.clear()

    whole = {start: (end, code_block) for start, end in runs.items()} | \
        {start: (end, table_block) for start, end in tables.items()}   # runs of rows that make one block
    k = 0
    while k < len(rows):
        row, prev = rows[k], (rows[k - 1] if k else None)
        if k in whole:
            flush()
            end, make = whole[k]
            out.append((make(rows[k:end]), row.height))
            k = end
            continue
        depth = heading_depth(row, prev, len(rows) == 1)
        if depth is None and k + 1 < len(rows) and _is_title_row(row, rows[k + 1], frame):
            depth = 0
        if depth is not None and (len(rows) == 1 or frame.is_short(row)) and frame.may_start_paragraph(prev):
            flush()
            out.append((Block(BlockType.HEADING, row.text, row.line_ids, level=depth + 1 if depth else None),
                        row.height))
        elif (marker := _item_marker(row, prev, bool(items), frame)) is not None:
            if paragraph:
                flush()
            items.append(_new_item(row, marker, items, frame))
        elif items and _continues_item(row, prev, items[-1], frame):
            if len(items[-1].rows) == 1:
                items[-1].text_x = row.x0   # the item's text starts where its second row does
            items[-1].rows.append(row)
        elif (equation := _equation(row, frame)) is not None:
            flush()
            out.append((equation, row.height))
        else:
            if items:
                flush()
            if paragraph and _starts_paragraph(row, paragraph[-1], frame):
                flush()
            paragraph.append(row)
        k += 1
    flush()
    return out


def _is_title_row(row: Row, following: Row, frame: Frame) -> bool:
    """A short row in Title Case (3-10 words, every word but the small ones capitalised, no
    sentence punctuation at its end) over a full row of running text: an unnumbered heading
    set in bold or italics at body size ("Recently Issued Accounting Pronouncements", "Note 2 -
    Business Combination"), which only its case and its place give away in line boxes."""
    words = row.text.split()
    if not TITLE_MIN_WORDS <= len(words) <= TITLE_MAX_WORDS or row.text.endswith((".", ",", ";")):
        return False
    if code_density(row.text) >= 0.1 or sum(c.isalpha() for c in row.text) < 0.6 * len(row.text.replace(" ", "")):
        return False
    capitalised = [word for word in words if word[:1].isalpha() and word.lower() not in _SMALL_WORDS]
    if len(capitalised) < 2 or not all(word[:1].isupper() for word in capitalised) or not words[0][:1].isupper():
        return False
    return not frame.is_short(following) and starts_capitalised(following.text) and len(following.text.split()) >= 6


def _is_centred(rows: Sequence[Row], h: float) -> bool:
    """Rows centred on one axis with ragged edges (an address, a title page): their breaks are kept."""
    if len(rows) < 2:
        return False
    centres = [(row.x0 + row.x1) / 2 for row in rows]
    axis = statistics.median(centres)
    lefts, rights = [row.x0 for row in rows], [row.x1 for row in rows]
    ragged = min(max(lefts) - min(lefts), max(rights) - min(rights)) >= RAGGED * h
    return ragged and max(abs(c - axis) for c in centres) <= CENTRED * h


def _paragraph(rows: list[Row]) -> Block:
    return Block(BlockType.PARAGRAPH, join_lines([row.text for row in rows]), line_ids(rows))


def _starts_paragraph(row: Row, prev: Row, frame: Frame) -> bool:
    gap = row.y0 - prev.y1 - frame.usual_gap
    if gap >= PARAGRAPH_GAP * frame.h or (gap >= SENTENCE_GAP * frame.h and ends_sentence(prev.text)):
        return True
    if frame.is_short(prev) and ends_sentence(prev.text) and (frame.justified or _FOOTNOTE.match(row.text)):
        return True
    step = INDENT_MIN * frame.h
    indent, prev_indent = row.x0 - frame.left, prev.x0 - frame.left
    if step <= indent <= INDENT_MAX * frame.h:
        if prev_indent < step:                  # a first-line indent
            return frame.may_start_paragraph(prev)
        return frame.is_short(prev) and ends_sentence(prev.text)   # after a one-row indented paragraph
    return row.x0 < prev.x0 - step and frame.is_short(prev)       # out of an indented block


# --- lists ----------------------------------------------------------------------------------------


def _item_marker(row: Row, prev: Row | None, in_list: bool, frame: Frame) -> str | None:
    found = list_marker(row.text)
    if found is None:
        return None
    marker, text, is_bullet_glyph = found
    if is_bullet_glyph or in_list:
        return marker
    starts_text = text[:1].isalnum() or text[:1] in "\"“("
    return marker if starts_text and frame.may_start_paragraph(prev) else None


def _new_item(row: Row, marker: str, items: list[_Item], frame: Frame) -> _Item:
    tolerance = ITEM_TEXT_TOLERANCE * frame.h
    text_x = row.x0 + (row.x1 - row.x0) * (len(marker) + 1) / max(1, len(row.text))
    depth = 0
    # The item nests under the last item whose marker sits left of it; siblings share a marker x.
    for item in reversed(items):
        if abs(item.marker_x - row.x0) <= tolerance:
            depth = item.depth
            break
        if item.marker_x < row.x0 - tolerance:
            depth = min(MAX_LIST_DEPTH, item.depth + 1)
            break
    for item in reversed(items):   # a continuation row already showed where this depth's text starts
        if item.depth == depth and len(item.rows) > 1:
            text_x = item.text_x
            break
    return _Item(marker, [row], depth, row.x0, text_x)


def _continues_item(row: Row, prev: Row | None, item: _Item, frame: Frame) -> bool:
    tolerance = ITEM_TEXT_TOLERANCE * frame.h
    if prev is not None and row.x0 <= item.marker_x + tolerance and row.text[:1].islower() and \
            not frame.is_short(prev) and not ends_sentence(prev.text):
        return True   # an item whose text wraps back under its marker, mid-sentence
    if row.x0 <= item.marker_x + tolerance or abs(row.x0 - item.text_x) > 2 * tolerance:
        return False
    if len(item.rows) > 1:
        return abs(row.x0 - item.text_x) <= tolerance
    # The item's text x is only estimated from its first row: a looser match, unless the row
    # looks more like a paragraph's first-line indent than the item's second row.
    return abs(row.x0 - item.text_x) <= tolerance or not (
        prev is not None and ends_sentence(prev.text) and starts_capitalised(row.text))


def _list(items: list[_Item]) -> Block:
    first = items[0].marker
    ordered = _ENUMERATOR_ONLY.match(first) is not None
    list_items = tuple(ListItem(item.marker, join_lines([list_marker(item.rows[0].text)[1]] +  # type: ignore[index]
                                                       [row.text for row in item.rows[1:]]),
                                line_ids(item.rows), item.depth) for item in items)
    return Block(BlockType.LIST, "\n".join(item.text for item in list_items),
                 line_ids([row for item in items for row in item.rows]), items=list_items, ordered=ordered,
                 start=marker_number(first) if ordered else None)


# --- equations ------------------------------------------------------------------------------------


def _equation(row: Row, frame: Frame) -> Block | None:
    if frame.width < 10 * frame.h:
        return None
    if len(row.texts) >= 2 and _EQUATION_NUMBER.match(row.texts[-1]) and \
            row.boxes[-1][0] - row.boxes[-2][2] >= 1.5 * frame.h:
        body, number = " ".join(row.texts[:-1]), row.texts[-1].strip("()")
        body_x1 = row.boxes[-2][2]
    elif (match := _TRAILING_EQUATION_NUMBER.match(row.text)) is not None:
        body, number = match.group(1), match.group(2)
        body_x1 = row.x1 - (row.x1 - row.x0) * (len(number) + 3) / max(1, len(row.text))
    else:
        return None
    at_right_edge = row.x1 >= frame.right - 0.05 * frame.width
    centred = abs((row.x0 + body_x1) / 2 - (frame.left + frame.right) / 2) <= 0.08 * frame.width
    narrow = body_x1 - row.x0 <= 0.75 * frame.width and row.x0 - frame.left >= 0.1 * frame.width
    if at_right_edge and centred and narrow and _MATH.search(body):
        return Block(BlockType.EQUATION, body, row.line_ids, number=number)
    return None
