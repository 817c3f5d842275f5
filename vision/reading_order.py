"""Reading order of the regions on a page, and of the lines inside a region.

Regions: headers come first and footers last (each top to bottom); they are
known by label, or by sitting as a thin strip in the top or bottom margin. The
body is read band by band: a region at least `SPAN_FRACTION` as wide as the
body spans the columns and separates one band from the next; inside a band,
regions whose x-ranges overlap form a column, and columns are read left to
right, each top to bottom. So a title above two columns is read first, then the
whole left column, then the right one, then whatever full-width region follows.

Lines: grouped into rows by vertical overlap, rows read top to bottom and each
row left to right.
"""
from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from vision.layout import RecognitionTask, Region
from vision.lines import TextLine

Box = tuple[float, float, float, float]

SPAN_FRACTION = 0.6          # of the body's width: wider regions span the columns
SAME_COLUMN_OVERLAP = 0.2    # x-overlap, as a share of the narrower region, that puts two regions in one column
MARGIN_BAND = 0.07           # top/bottom share of the page where running headers/footers live
MAX_MARGIN_REGION = 0.04     # ... and how tall (share of page height) such a strip may be
SAME_ROW_OVERLAP = 0.5       # vertical overlap, as a share of the shorter line, that puts two lines in one row


class PageRole(StrEnum):
    HEADER = "header"
    BODY = "body"
    FOOTER = "footer"


def page_role(region: Region, page_height: float) -> PageRole:
    if region.label == "header":
        return PageRole.HEADER
    if region.label == "footer":
        return PageRole.FOOTER
    x0, y0, x1, y1 = region.bbox
    is_strip = region.task is RecognitionTask.TEXT and (y1 - y0) <= MAX_MARGIN_REGION * page_height
    if is_strip and y1 <= MARGIN_BAND * page_height:
        return PageRole.HEADER
    if is_strip and y0 >= (1 - MARGIN_BAND) * page_height:
        return PageRole.FOOTER
    return PageRole.BODY


def order_regions(regions: Sequence[Region], page_height: float) -> list[tuple[int, PageRole]]:
    """(index into `regions`, role) for every region, in reading order."""
    roles = [page_role(region, page_height) for region in regions]
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


def order_boxes(boxes: Sequence[Box]) -> list[int]:
    """Indices of `boxes` in multi-column reading order (see the module docstring)."""
    if not boxes:
        return []
    body_x0 = min(b[0] for b in boxes)
    body_width = max(b[2] for b in boxes) - body_x0
    spanning = sorted((i for i, b in enumerate(boxes) if b[2] - b[0] >= SPAN_FRACTION * body_width),
                      key=lambda i: (_centre_y(boxes[i]), boxes[i][0]))
    separator_ys = [_centre_y(boxes[i]) for i in spanning]
    bands: list[list[int]] = [[] for _ in range(len(spanning) + 1)]
    spanning_set = set(spanning)
    for i, box in enumerate(boxes):
        if i not in spanning_set:
            bands[sum(y < _centre_y(box) for y in separator_ys)].append(i)

    ordered: list[int] = []
    for band_no, band in enumerate(bands):
        for column in _columns(band, boxes):
            ordered.extend(sorted(column, key=lambda i: (boxes[i][1], boxes[i][0])))
        if band_no < len(spanning):
            ordered.append(spanning[band_no])
    return ordered


def _columns(ids: list[int], boxes: Sequence[Box]) -> list[list[int]]:
    """Group regions whose x-ranges overlap enough (transitively); columns left to right."""
    parent = {i: i for i in ids}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a_pos, a in enumerate(ids):
        for b in ids[a_pos + 1:]:
            overlap = min(boxes[a][2], boxes[b][2]) - max(boxes[a][0], boxes[b][0])
            narrower = min(boxes[a][2] - boxes[a][0], boxes[b][2] - boxes[b][0])
            if overlap > SAME_COLUMN_OVERLAP * narrower:
                parent[root(a)] = root(b)
    groups: dict[int, list[int]] = {}
    for i in ids:
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda group: min(boxes[i][0] for i in group))


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


def _centre_y(box: Sequence[float]) -> float:
    return (box[1] + box[3]) / 2
