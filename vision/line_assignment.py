"""Which text lines belong to which layout region, and what to do with the rest.

The invariant kept here, whatever the layout model called the area around a
line: every detected line lands in exactly one returned region (tested).

Lines are detected once per page and handed to the region that covers most of
each line. Every region keeps its lines: text and table regions are read from
them (a recogniser that reads single lines, like the house model, reads a table
cell by cell; others read the table whole); a figure keeps its crop and its
lines are read as the figure's text (axis labels, a diagram's words); an
equation's lines are its formula. A text region grows to hold its lines, so a
crop never cuts a line's ends; tables, figures and equations keep their boxes.
A figure that is mostly text lines — the layout model takes dense small print,
a table of contents or an index for a picture — is no figure: at least
`TEXT_FIGURE_MIN_LINES` lines whose boxes cover `TEXT_FIGURE_MIN_COVER` of it
(a chart's labels cover far less), or at least `PROSE_FIGURE_MIN_LINES` long
lines or `TEXT_FIGURE_MANY_LINES` lines of any length covering
`PROSE_FIGURE_MIN_COVER` of it (an index); its box is dropped and its lines go to the
text regions under it or become text blocks of their own.
A text region lying mostly inside a larger text region (the layout model
boxed a few lines of a paragraph twice) is folded into it: two boxes sharing
lines would split the paragraph and interleave its lines in reading order; so is
one that a text region grown to hold its lines, or a block of unclaimed lines (below),
came to hold. Titles keep their own box.
A text region that claims no line but lies mostly under lines that went
elsewhere is a duplicate box of text read there, and is dropped (read whole it
would repeat that text, garbled); one with no lines under it is kept, as the
line detector may have missed faint print.
Lines no region covers (the layout model missed them) are grouped into blocks
of neighbouring lines that become `text` regions of their own, scored 0 and
marked `source="lines"`: nothing detected on the page is dropped.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from vision.layout import RecognitionTask, Region
from vision.lines import TextLine

LEADER_INK_COLUMNS = 0.08   # share of the dotted run's pixel columns holding ink for leaders to join two lines
LEADER_SPAN = 0.6           # share of the gap the dotted run must cover
LEADER_INK_SHADE = 0.75     # of the paper's brightness (the gap's median): darker is ink
MIN_COVER = 0.5         # share of a line's area a region must cover to claim it
ROW_GAP_HEIGHTS = 1.0   # same row: joined across a gap of up to this many line heights (a column gap is wider)
STACK_GAP_HEIGHTS = 1.0  # stacked lines: joined across a vertical gap of up to this many line heights
TEXT_FIGURE_MIN_LINES = 3
TEXT_FIGURE_MIN_COVER = 0.45
PROSE_FIGURE_MIN_LINES = 8
PROSE_LINE_ASPECT = 8.0     # length / thickness from which a line counts as long
TEXT_FIGURE_MANY_LINES = 30  # ... or this many lines of any length (an index of short names)
PROSE_FIGURE_MIN_COVER = 0.1
NESTED_TEXT_INSIDE = 0.8    # share of a text region's area inside a larger text region that folds it in
DUPLICATE_TEXT_COVER = 0.5   # share of a line-less text region under other regions' lines that drops it


@dataclass(frozen=True)
class AssignedRegion:
    region: Region
    lines: tuple[TextLine, ...]   # unordered


def assign_lines(regions: Sequence[Region], lines: Sequence[TextLine],
                 page: np.ndarray | None = None) -> list[AssignedRegion]:
    """Every region with its lines, followed by regions made from unclaimed lines. With the
    page's pixels [height, width, 3], lines joined by dot leaders are grouped together."""
    regions = [region for region in _without_nested_text(regions) if not _is_text_figure(region, lines)]
    claimed: list[list[TextLine]] = [[] for _ in regions]
    orphans: list[TextLine] = []
    for line in lines:
        covers = [_intersection(line.bbox, region.bbox) for region in regions]
        # on a tie (a title inside a text box covers its line as fully as the box does) the smaller region
        best = max(range(len(regions)), key=lambda i: (covers[i], -_area(regions[i].bbox)), default=None)
        if best is None or covers[best] < MIN_COVER * _area(line.bbox):
            orphans.append(line)
        else:
            claimed[best].append(line)
    assigned = [AssignedRegion(_grown(region, owned) if region.task is RecognitionTask.TEXT else region,
                               tuple(owned)) for region, owned in zip(regions, claimed)
                if not _duplicate_text(region, owned, lines)]
    for block in group_lines(orphans, page):
        bbox = _union([line.bbox for line in block])
        assigned.append(AssignedRegion(Region("text", bbox, 0.0, source="lines"), tuple(block)))
    return _folded_after_growth(assigned)


def _is_text_figure(region: Region, lines: Sequence[TextLine]) -> bool:
    """A figure region that is really text: the lines under it (whichever region they go to)
    cover most of it. It is dropped, not relabelled: such a box often spans columns and other
    regions (an index page boxed whole), so its lines are better served by the text regions
    under it and by blocks of their own, which reading order can place."""
    if region.task is not RecognitionTask.SKIP:
        return False
    inside = [line for line in lines if _intersection(line.bbox, region.bbox) >= MIN_COVER * _area(line.bbox)]
    if len(inside) < TEXT_FIGURE_MIN_LINES:
        return False
    cover = _covered(region, inside) / max(_area(region.bbox), 1e-9)
    if cover >= TEXT_FIGURE_MIN_COVER:
        return True
    # Sparser text (an index, a table of contents: short entries, wide gaps) is still text when
    # it is many long lines; a chart's labels and a photo's false detections are short.
    num_long = sum(line.upright_size[0] >= PROSE_LINE_ASPECT * line.upright_size[1] for line in inside)
    many = num_long >= PROSE_FIGURE_MIN_LINES or len(inside) >= TEXT_FIGURE_MANY_LINES
    return many and cover >= PROSE_FIGURE_MIN_COVER


def _without_nested_text(regions: Sequence[Region]) -> list[Region]:
    return [region for i, region in enumerate(regions)
            if not any(j != i and _nested(region, other) for j, other in enumerate(regions))]


def _folded_after_growth(assigned: list[AssignedRegion]) -> list[AssignedRegion]:
    """The same folding once text regions have grown to hold their lines, and for the blocks made
    of lines no region claimed: a contents page's entries, grouped without their section numbers
    (too far apart on their rows), grow over the block of those numbers, and two blocks sharing
    rows would read the numbers after all the entries."""
    blocks = list(assigned)
    i = 0
    while i < len(blocks):
        inner = blocks[i]
        outer = next((j for j, other in enumerate(blocks) if j != i and inner.lines and other.lines
                      and _nested(inner.region, other.region)), None)
        if outer is None:
            i += 1
            continue
        lines = blocks[outer].lines + inner.lines
        blocks[outer] = AssignedRegion(_grown(blocks[outer].region, lines), lines)
        del blocks[i]
        i = 0   # the grown block may now hold one passed over
    return blocks


def _nested(inner: Region, outer: Region) -> bool:
    """A text region (not a title) lying `NESTED_TEXT_INSIDE` or more inside a larger one."""
    def foldable(region: Region) -> bool:
        return region.task is RecognitionTask.TEXT and region.label != "title"

    area = _area(inner.bbox)
    return (foldable(inner) and foldable(outer) and 0 < area < _area(outer.bbox)
            and _intersection(inner.bbox, outer.bbox) >= NESTED_TEXT_INSIDE * area)


def _duplicate_text(region: Region, owned: Sequence[TextLine], lines: Sequence[TextLine]) -> bool:
    if region.task is not RecognitionTask.TEXT or owned:
        return False
    return _covered(region, lines) >= DUPLICATE_TEXT_COVER * _area(region.bbox) > 0


def _covered(region: Region, lines: Sequence[TextLine]) -> float:
    """Area of the region under the lines' boxes (overlaps between lines counted twice)."""
    return sum(_intersection(line.bbox, region.bbox) for line in lines)


def group_lines(lines: Sequence[TextLine], page: np.ndarray | None = None) -> list[list[TextLine]]:
    """Blocks of lines that sit next to each other in a row or stacked in a column. Two lines
    in a row further apart than a column gap still belong together when ink runs between them
    (a table of contents' or an index's dot leaders); a gutter is blank."""
    parent = list(range(len(lines)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    bands = [line.band for line in lines]
    for a in range(len(lines)):
        for b in range(a + 1, len(lines)):
            if _are_neighbours(lines[a].bbox, bands[a], lines[b].bbox, bands[b]):
                parent[root(a)] = root(b)
    if page is not None:   # leaders join a line only to the next line on its right in its row
        for a, b in _right_neighbours(lines, bands):
            if _joined_by_leaders(page, lines[a].bbox, bands[a], lines[b].bbox, bands[b]):
                parent[root(a)] = root(b)
    blocks: dict[int, list[TextLine]] = {}
    for i, line in enumerate(lines):
        blocks.setdefault(root(i), []).append(line)
    return list(blocks.values())


def _right_neighbours(lines: Sequence[TextLine], bands: Sequence[tuple[float, float]]) -> list[tuple[int, int]]:
    """(a, b) where b is the nearest line to the right of a in a's row (bands overlapping by
    half the thinner)."""
    pairs = []
    for a, line in enumerate(lines):
        right = [b for b, other in enumerate(lines) if other.bbox[0] >= line.bbox[2]
                 and min(bands[a][1], bands[b][1]) - max(bands[a][0], bands[b][0])
                 >= 0.5 * min(bands[a][1] - bands[a][0], bands[b][1] - bands[b][0])]
        if right:
            pairs.append((a, min(right, key=lambda b: lines[b].bbox[0])))
    return pairs


def _are_neighbours(a: Sequence[float], a_band: tuple[float, float], b: Sequence[float],
                    b_band: tuple[float, float]) -> bool:
    """Heights and vertical gaps are measured on the lines' own bands (`TextLine.band`), so
    skewed lines, whose boxes overlap their neighbours', are still told apart by row."""
    (a_top, a_bottom), (b_top, b_bottom) = a_band, b_band
    height = max(a_bottom - a_top, b_bottom - b_top)
    x_gap = max(a[0], b[0]) - min(a[2], b[2])   # negative when the x-ranges overlap
    y_gap = max(a_top, b_top) - min(a_bottom, b_bottom)
    same_row = y_gap < -0.5 * min(a_bottom - a_top, b_bottom - b_top)
    if same_row:   # the shorter line's height: a tall letter heading beside a column must not bridge the gutter
        return x_gap <= ROW_GAP_HEIGHTS * min(a_bottom - a_top, b_bottom - b_top)
    return x_gap < 0 and y_gap <= STACK_GAP_HEIGHTS * height


def _joined_by_leaders(page: np.ndarray, a: Sequence[float], a_band: tuple[float, float], b: Sequence[float],
                       b_band: tuple[float, float]) -> bool:
    """Same row, apart, and the gap between them dotted: ink (within the row's band, darker
    than `LEADER_INK_SHADE` of the gap's paper, so the grey specks a blurred scan makes of
    small dots count too) runs over at least `LEADER_SPAN` of the gap, at least
    `LEADER_INK_COLUMNS` of the pixel columns along that run hold ink, and no blank stretch in
    it is as wide as the row is tall (a gutter is blank, or crossed by one rule; dots are
    close together)."""
    (a_top, a_bottom), (b_top, b_bottom) = a_band, b_band
    top, bottom = max(a_top, b_top), min(a_bottom, b_bottom)
    if bottom - top < 0.5 * min(a_bottom - a_top, b_bottom - b_top):
        return False
    left, right = (a, b) if a[0] <= b[0] else (b, a)
    x0, x1 = int(left[2]) + 1, int(right[0]) - 1
    y0, y1 = max(0, int(top)), min(page.shape[0], int(np.ceil(bottom)))
    if x1 - x0 < 4 or y1 <= y0:
        return False
    darkest = page[y0:y1, x0:x1].min(axis=2)                        # [rows, columns]: darkest channel
    inked = (darkest < LEADER_INK_SHADE * float(np.median(darkest))).any(axis=0)   # [columns]
    at = np.flatnonzero(inked)
    if at.size == 0 or at[-1] - at[0] + 1 < LEADER_SPAN * inked.size:
        return False
    dotted = inked[at[0]:at[-1] + 1]   # leaders may stop short of the text on either side
    return float(dotted.mean()) >= LEADER_INK_COLUMNS and int(np.diff(at).max(initial=1)) - 1 < bottom - top


def _grown(region: Region, lines: Sequence[TextLine]) -> Region:
    if not lines:
        return region
    return replace(region, bbox=_union([region.bbox, *(line.bbox for line in lines)]))


def _union(boxes: Sequence[Sequence[float]]) -> tuple[float, float, float, float]:
    return (float(min(b[0] for b in boxes)), float(min(b[1] for b in boxes)),
            float(max(b[2] for b in boxes)), float(max(b[3] for b in boxes)))


def _intersection(a: Sequence[float], b: Sequence[float]) -> float:
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(0.0, width) * max(0.0, height)


def _area(box: Sequence[float]) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])
