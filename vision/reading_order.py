"""Reading order of the regions on a page, and of the lines inside a region.

Regions: headers come first and footers last (each top to bottom); they are
known by label and position, or by sitting as a thin strip in the top or bottom
margin, or level with another header or footer (the page number beside it). The
body is read by recursive XY-cut (Nagy and Seth's method, columns first): a
vertical gutter that no region crosses splits a group of regions into columns,
read left to right; a group with no such gutter (a title or figure spans it) is
cut at its horizontal gaps into slices read top to bottom, and neighbouring
slices that share a gutter are joined back into one columned group first, so
two columns whose paragraph gaps happen to line up are still read column by
column. So a title above two columns is read first, then the whole left
column, then the right one, then whatever full-width region follows; a block of
three author boxes beside each other is read left to right.

Lines of a table: grouped into rows by vertical overlap, rows read top to
bottom and each row left to right. Lines of a text region: the same XY-cut, so
a region that holds two columns of lines (an index, a page the layout model
boxed whole) is read column by column (`order_text_lines`); but three or more
columns of short lines that sit row by row are a table without rules the layout
model did not box, and are read by rows (`_table_of_cells`).
"""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from vision.layout import RecognitionTask, Region
from vision.lines import TextLine

Box = tuple[float, float, float, float]

MARGIN_BAND = 0.08           # top/bottom share of the page where running headers/footers live
LABELLED_MARGIN_BAND = 0.12  # ... and where a region the layout model labels header/footer must lie to be one
MAX_MARGIN_REGION = 0.04     # ... and how tall (share of page height) such a strip may be
SAME_ROW_OVERLAP = 0.5       # vertical overlap, as a share of the shorter line, that puts two lines in one row
GAP_TOLERANCE = 2.0          # pixels: boxes overlapping by less than twice this still leave a gap between them
MIN_REGION_COLUMN_SHARE = 0.1  # of the body's width: a run of page numbers beside a contents list is no column
MIN_LINE_COLUMN_SHARE = 0.25  # of a region's width: narrower runs of lines are not a column of their own
MIN_LINE_COLUMN_LINES = 2
MIN_LINE_COLUMN_ASPECT = 3.0  # median width / height of a column's lines: narrower ones are cells of rows
                              # (a printed matrix, a listing's continuation marks), not a column of text
CELL_COLUMN_ASPECT = 12.0     # columns of lines shorter than this (median width / height) ...
CELL_ROW_SHARE = 0.9          # ... whose lines, this share of them, sit row by row with their neighbour's,
MIN_CELL_ROWS = 3             # ... at least this many lines each,
MIN_CELL_COLUMNS = 3          # ... this many side by side, are a table's columns, read by rows (`_table_of_cells`)


class PageRole(StrEnum):
    HEADER = "header"
    BODY = "body"
    FOOTER = "footer"


def page_role(region: Region, page_height: float) -> PageRole:
    """Header or footer by label when the region sits in the page's top or bottom
    `LABELLED_MARGIN_BAND` (the layout model labels a chapter title lower down a header
    too), or by being a thin text strip in the top or bottom `MARGIN_BAND`."""
    x0, y0, x1, y1 = region.bbox
    if region.label == "header" and y1 <= LABELLED_MARGIN_BAND * page_height:
        return PageRole.HEADER
    if region.label == "footer" and y0 >= (1 - LABELLED_MARGIN_BAND) * page_height:
        return PageRole.FOOTER
    is_strip = region.task is RecognitionTask.TEXT and (y1 - y0) <= MAX_MARGIN_REGION * page_height
    if is_strip and y1 <= MARGIN_BAND * page_height:
        return PageRole.HEADER
    if is_strip and y0 >= (1 - MARGIN_BAND) * page_height:
        return PageRole.FOOTER
    return PageRole.BODY


def page_roles(regions: Sequence[Region], page_height: float) -> list[PageRole]:
    """Each region's role; a thin strip level with a running header or footer (the page number
    beside the header's title) shares its role."""
    roles = [page_role(region, page_height) for region in regions]
    for i, region in enumerate(regions):
        x0, y0, x1, y1 = region.bbox
        if roles[i] is not PageRole.BODY or region.task is not RecognitionTask.TEXT \
                or (y1 - y0) > MAX_MARGIN_REGION * page_height:
            continue
        for j, other in enumerate(regions):
            if roles[j] is not PageRole.BODY and min(y1, other.bbox[3]) - max(y0, other.bbox[1]) > 0.5 * (y1 - y0):
                roles[i] = roles[j]
                break
    return roles


def order_regions(regions: Sequence[Region], page_height: float) -> list[tuple[int, PageRole]]:
    """(index into `regions`, role) for every region, in reading order."""
    roles = page_roles(regions, page_height)
    ordered: list[tuple[int, PageRole]] = []
    for role in (PageRole.HEADER, PageRole.BODY, PageRole.FOOTER):
        ids = [i for i, r in enumerate(roles) if r is role]
        if role is PageRole.BODY:
            body_order = order_boxes([regions[i].bbox for i in ids])
            ordered.extend((ids[k], role) for k in body_order)
        else:
            ordered.extend((i, role) for i in sorted(ids, key=lambda i: (regions[i].bbox[1], regions[i].bbox[0])))
    assert sorted(i for i, _ in ordered) == list(range(len(regions)))
    return ordered


@dataclass(frozen=True)
class _CutRules:
    min_column_share: float = 0.0   # of the group's width, that each column must span
    min_column_items: int = 1       # boxes each column must hold
    min_column_aspect: float = 0.0  # median width / height its boxes must have
    cell_column_aspect: float = 0.0  # columns of boxes shorter than this that pair up row by row are a table's


REGION_RULES = _CutRules(MIN_REGION_COLUMN_SHARE)
LINE_RULES = _CutRules(MIN_LINE_COLUMN_SHARE, MIN_LINE_COLUMN_LINES, MIN_LINE_COLUMN_ASPECT, CELL_COLUMN_ASPECT)


def order_boxes(boxes: Sequence[Box]) -> list[int]:
    """Indices of `boxes` in multi-column reading order (recursive XY-cut, see the module docstring)."""
    return _xy_cut(list(range(len(boxes))), boxes, REGION_RULES)


def _xy_cut(ids: list[int], boxes: Sequence[Box], rules: _CutRules) -> list[int]:
    """Columns first: a gutter that runs the whole height of the group splits it left to right.
    Else rows: the group is cut at every horizontal gap, and neighbouring slices that share a
    gutter are joined again (two columns whose paragraph gaps happen to line up are still
    columns, not slices read across). What cannot be cut is read in rows."""
    if len(ids) <= 1:
        return list(ids)
    columns = _split_columns(ids, boxes, rules)
    if columns is not None:
        return [i for column in columns for i in _xy_cut(column, boxes, rules)]
    slices = _join_columned(_split_rows(ids, boxes), boxes, rules)
    if len(slices) == 1:
        return _row_order(ids, boxes)
    return [i for piece in slices for i in _xy_cut(piece, boxes, rules)]


def _split_columns(ids: list[int], boxes: Sequence[Box], rules: _CutRules) -> list[list[int]] | None:
    """The group cut at its vertical gutters, left to right; None when it has none that leaves
    each column at least `min_column_share` of the group's width and `min_column_items` boxes."""
    gaps = _gaps([(boxes[i][0], boxes[i][2]) for i in ids])
    # A gutter counts when cutting there alone leaves valid columns on both sides (the gap between
    # an index's entries and their page numbers does not); all such gutters are cut at once.
    cuts = [gap for gap in gaps if _columns_at(ids, boxes, [gap], rules) is not None]
    if not cuts:
        return None
    if rules.cell_column_aspect and _table_of_cells(ids, boxes, gaps, rules):
        return None   # a table's columns: read by rows
    together = _columns_at(ids, boxes, cuts, rules)
    return together if together is not None else _columns_at(ids, boxes, [max(cuts, key=lambda g: g[1] - g[0])], rules)


def _columns_at(ids: list[int], boxes: Sequence[Box], cuts: list[tuple[float, float]],
                rules: _CutRules) -> list[list[int]] | None:
    columns = _cut_at(ids, boxes, cuts)
    width = max(max(boxes[i][2] for i in ids) - min(boxes[i][0] for i in ids), 1e-6)
    if any(len(column) < rules.min_column_items for column in columns):
        return None
    if any((max(boxes[i][2] for i in col) - min(boxes[i][0] for i in col)) < rules.min_column_share * width
           for col in columns):
        return None
    if rules.min_column_aspect and any(_median_aspect(col, boxes) < rules.min_column_aspect for col in columns):
        return None
    return columns


def _cut_at(ids: list[int], boxes: Sequence[Box], cuts: list[tuple[float, float]]) -> list[list[int]]:
    """The group's boxes by the column their centre falls in, the group cut at `cuts`, left to right."""
    left, right = min(boxes[i][0] for i in ids), max(boxes[i][2] for i in ids)
    edges = [left, *(gap_start for gap_start, _ in cuts), right]
    return [[i for i in ids if start <= _centre_x(boxes[i]) <= end] for start, end in zip(edges, edges[1:])]


def _table_of_cells(ids: list[int], boxes: Sequence[Box], gaps: list[tuple[float, float]], rules: _CutRules) -> bool:
    """Whether the group, cut at every gap, is a table without rules the layout model did not box
    (memman's columns of option names, sizes and commands): at least `MIN_CELL_COLUMNS` columns of
    at least `MIN_CELL_ROWS` short lines each (median width / height from `min_column_aspect` up to
    `cell_column_aspect`: text columns have long lines), and nearly every line of each pair of
    neighbouring columns (`CELL_ROW_SHARE` of the one with fewer) in a row with one of the other's.
    Such a table's rows are read across. An index set in two columns is left alone: two columns,
    or with its page numbers, columns of lines too short to count."""
    columns = _cut_at(ids, boxes, gaps)
    if len(columns) < MIN_CELL_COLUMNS or any(len(column) < MIN_CELL_ROWS for column in columns):
        return False
    if any(not rules.min_column_aspect <= _median_aspect(column, boxes) < rules.cell_column_aspect
           for column in columns):
        return False
    for a, b in zip(columns, columns[1:]):
        fewer, other = sorted((a, b), key=len)
        if sum(any(_same_row(boxes[i], boxes[j]) for j in other) for i in fewer) < CELL_ROW_SHARE * len(fewer):
            return False
    return True


def _same_row(a: Box, b: Box) -> bool:
    return min(a[3], b[3]) - max(a[1], b[1]) >= SAME_ROW_OVERLAP * min(a[3] - a[1], b[3] - b[1])


def _median_aspect(ids: list[int], boxes: Sequence[Box]) -> float:
    return statistics.median((boxes[i][2] - boxes[i][0]) / max(boxes[i][3] - boxes[i][1], 1e-6) for i in ids)


def _split_rows(ids: list[int], boxes: Sequence[Box]) -> list[list[int]]:
    """The group cut at every horizontal gap, top to bottom."""
    gaps = _gaps([(boxes[i][1], boxes[i][3]) for i in ids])
    edges = [gap_start for gap_start, _ in gaps]
    rows: list[list[int]] = [[] for _ in range(len(edges) + 1)]
    for i in ids:
        rows[sum(edge < _centre_y(boxes[i]) for edge in edges)].append(i)
    return [row for row in rows if row]


def _join_columned(slices: list[list[int]], boxes: Sequence[Box], rules: _CutRules) -> list[list[int]]:
    """Neighbouring slices joined while they keep a gutter in common: both have gutters that
    overlap, or one has a gutter that nothing of the other crosses (a stretch where only the
    left column has text, the right one a gap, is still part of the columns)."""
    def gutters(piece: list[int]) -> list[tuple[float, float]]:
        if _split_columns(piece, boxes, replace(rules, min_column_items=1)) is None:
            return []
        return _gaps([(boxes[i][0], boxes[i][2]) for i in piece])

    def uncrossed(piece: list[int], candidates: list[tuple[float, float]]) -> list[tuple[float, float]]:
        return [(g0, g1) for g0, g1 in candidates if not any(boxes[i][0] < g1 and boxes[i][2] > g0 for i in piece)]

    joined: list[list[int]] = []
    joined_gutters: list[tuple[float, float]] = []
    for piece in slices:
        piece_gutters = gutters(piece)
        if not joined:
            shared = []
        elif joined_gutters and piece_gutters:
            shared = [(max(a0, b0), min(a1, b1)) for a0, a1 in joined_gutters for b0, b1 in piece_gutters
                      if min(a1, b1) > max(a0, b0)]
        else:
            shared = uncrossed(piece, joined_gutters) if joined_gutters else uncrossed(joined[-1], piece_gutters)
        if shared:
            joined[-1] = joined[-1] + piece
            joined_gutters = shared
        else:
            joined.append(piece)
            joined_gutters = piece_gutters
    return joined


def _gaps(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Stretches between the spans' overall start and end that no span covers. Spans are
    shrunk by `GAP_TOLERANCE` pixels at each end first: boxes that touch or overlap by a
    hair (detector boxes are loose) do not close a gap."""
    shrunk = sorted((a + GAP_TOLERANCE, b - GAP_TOLERANCE) for a, b in spans if b - a > 2 * GAP_TOLERANCE)
    gaps = []
    reach = shrunk[0][1] if shrunk else 0.0
    for start, end in shrunk[1:]:
        if start > reach:
            gaps.append((reach, start))
        reach = max(reach, end)
    return gaps


def _row_order(ids: list[int], boxes: Sequence[Box]) -> list[int]:
    """Boxes in rows (vertical overlap of at least half the shorter), top to bottom, each left to right."""
    rows: list[list[int]] = []
    row_span = (0.0, 0.0)
    for i in sorted(ids, key=lambda i: (_centre_y(boxes[i]), boxes[i][0])):
        top, bottom = boxes[i][1], boxes[i][3]
        overlap = min(row_span[1], bottom) - max(row_span[0], top)
        if rows and overlap >= SAME_ROW_OVERLAP * min(row_span[1] - row_span[0], bottom - top):
            rows[-1].append(i)
        else:
            rows.append([i])
            row_span = (top, bottom)
    return [i for row in rows for i in sorted(row, key=lambda i: boxes[i][0])]


def order_text_lines(lines: Sequence[TextLine]) -> list[TextLine]:
    """The lines of a text region in reading order: rows, unless the region holds columns of
    lines (an index, a two-column block the layout model boxed whole), which are read one
    after the other. A column must be `MIN_LINE_COLUMN_SHARE` of the region's width, hold
    `MIN_LINE_COLUMN_LINES` lines and have lines of text, not cells (`MIN_LINE_COLUMN_ASPECT`),
    so a row split by the detector, a table of contents' page numbers, a short label beside
    its text or a printed matrix's columns of numbers stays in rows. Rows use the lines' own bands."""
    if lines and 2 * sum(line.vertical for line in lines) > len(lines):
        return order_vertical_lines(lines)
    boxes = [(line.bbox[0], line.band[0], line.bbox[2], line.band[1]) for line in lines]
    order = _xy_cut(list(range(len(lines))), boxes, LINE_RULES)
    return [lines[i] for i in order]


def joined_column_pieces(lines: Sequence[TextLine]) -> list[TextLine]:
    """Vertical lines with the pieces of one column joined: the detector cuts a column of
    Japanese after a full stop into two boxes that overlap down the page, and each piece read
    alone gives the characters in the overlap twice. Pieces are joined where their horizontal
    extents overlap by `SAME_ROW_OVERLAP` of the narrower and their vertical ones overlap at all."""
    pieces = sorted((line for line in lines if line.vertical), key=lambda ln: ln.bbox[1])
    joined: list[TextLine] = []
    for line in pieces:
        for k, kept in enumerate(joined):
            across = min(kept.bbox[2], line.bbox[2]) - max(kept.bbox[0], line.bbox[0])
            narrower = min(kept.bbox[2] - kept.bbox[0], line.bbox[2] - line.bbox[0])
            if across >= SAME_ROW_OVERLAP * narrower and line.bbox[1] < kept.bbox[3]:
                joined[k] = TextLine((min(kept.bbox[0], line.bbox[0]), kept.bbox[1], max(kept.bbox[2], line.bbox[2]),
                                      max(kept.bbox[3], line.bbox[3])), max(kept.score, line.score), vertical=True)
                break
        else:
            joined.append(line)
    return [line for line in lines if not line.vertical] + joined


def order_vertical_lines(lines: Sequence[TextLine]) -> list[TextLine]:
    """Lines of vertical writing (Chinese, Japanese) in reading order: columns right to left,
    each top to bottom. Lines whose horizontal extents overlap by `SAME_ROW_OVERLAP` of the
    narrower are one column (the detector splits a column at a wide gap, after a full stop)."""
    columns: list[list[TextLine]] = []
    extent = (0.0, 0.0)   # of the current column's first line
    for line in sorted(lines, key=lambda ln: (-(ln.bbox[0] + ln.bbox[2]) / 2, ln.bbox[1])):
        overlap = min(extent[1], line.bbox[2]) - max(extent[0], line.bbox[0])
        if columns and overlap >= SAME_ROW_OVERLAP * min(extent[1] - extent[0], line.bbox[2] - line.bbox[0]):
            columns[-1].append(line)
        else:
            columns.append([line])
            extent = (line.bbox[0], line.bbox[2])
    return [line for column in columns for line in sorted(column, key=lambda ln: ln.bbox[1])]


def order_lines(lines: Sequence[TextLine]) -> list[TextLine]:
    """Lines in rows top to bottom, each row left to right."""
    return [line for row in line_rows(lines) for line in row]


def line_rows(lines: Sequence[TextLine]) -> list[list[TextLine]]:
    """Lines grouped into rows (their bands, `TextLine.band`, overlapping), top to bottom, each row
    left to right."""
    rows: list[list[TextLine]] = []
    row_band: tuple[float, float] = (0.0, 0.0)   # the band of the current row's first line
    for line in sorted(lines, key=lambda ln: (_centre_y(ln.bbox), ln.bbox[0])):
        band = line.band
        overlap = min(row_band[1], band[1]) - max(row_band[0], band[0])
        if rows and overlap >= SAME_ROW_OVERLAP * min(row_band[1] - row_band[0], band[1] - band[0]):
            rows[-1].append(line)
        else:
            rows.append([line])
            row_band = band
    return [sorted(row, key=lambda ln: ln.bbox[0]) for row in rows]


def _centre_x(box: Sequence[float]) -> float:
    return (box[0] + box[2]) / 2


def _centre_y(box: Sequence[float]) -> float:
    return (box[1] + box[3]) / 2
