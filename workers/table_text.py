"""A table read cell by cell -> a Markdown table (an HTML table where a cell spans columns).

Input: the table's rows, each a list of its detected lines as (box, text) or (box, text, words),
words being (box, text) pairs (`workers.line_words`, once the words stage has run).

1. Cells. A line is a cell, unless its words show a gap of `CELL_GAP` word heights or more:
   then it is split there (a line detector often takes two neighbouring cells, or a header
   that runs across two columns, for one line).
2. Columns. The x-ranges of the cells of rows with two cells or more (a row of one cell is a
   label, a caption or prose the region took in, and says nothing of columns), merged where they
   overlap, left to right; then a merged range is split again where few rows (`BRIDGE_SHARE`)
   bridge two runs of x that more rows hold on their own (a header cell over two columns would
   otherwise fuse them). Cells with no letter or digit (a stray bracket, a rule read as dashes)
   do not shape columns.
3. Placement. A cell lies in the column it overlaps most, or spans two or more neighbouring
   columns when it covers most of each (its words, if any, showed no cell gap: it is one cell
   over several columns, such as a group header). Cells that land in one column of a row are
   joined.
The first row is the header. A table with a spanning cell is written in HTML (`colspan`), which
Markdown renderers pass through; any other as a pipe table. Plain text has no HTML:
`pipe_rows` writes such a table as pipe rows, a spanning cell's text in its first column.
"""
from __future__ import annotations

import html
from collections.abc import Sequence
from html.parser import HTMLParser

Box = Sequence[float]
Word = tuple[Box, str]

CELL_GAP = 1.0          # word heights (median): a gap this wide between two words of a line separates cells
MIN_SPLIT_GAP = 0.5     # line heights: the narrowest gap a bridged column range is split at
BRIDGE_SHARE = 0.15      # of the rows with two cells or more: as many bridging a gap still leave it a gap
SPAN_COVER = 0.6        # share of each column's width a cell must cover to span them


def markdown_table(rows: Sequence[Sequence[tuple]]) -> str:
    rows = [[cell for item in row for cell in _cells(item)] for row in rows]
    rows = [row for row in rows if row]
    if not rows:
        return ""
    columns = _columns(rows)
    table: list[list[list]] = []   # per row: per column [text, span]
    for row in rows:
        cells: list[list] = [["", 1] for _ in columns]
        for box, text in row:
            index, span = _placed(box, columns)
            cells[index][0] = f"{cells[index][0]} {text}".strip()
            cells[index][1] = max(cells[index][1], span)
        table.append(cells)
    used = [c for c in range(len(columns)) if any(row[c][0] for row in table)]   # a split can leave a column no cell chose
    table = [_without_covered([row[c] for c in used]) for row in table]
    if any(span > 1 for row in table for _, span in row):
        return _html(table)
    lines = [_row([text for text, _ in table[0]]), "| " + " | ".join("---" for _ in used) + " |"]
    lines += [_row([text for text, _ in cells]) for cells in table[1:]]
    return "\n".join(lines)


def band_rows(lines: Sequence) -> list[list]:
    """Lines (anything with a `bbox`) grouped into rows: a line joins the row whose first line it
    overlaps vertically by half the shorter height or more; rows top to bottom, each left to right."""
    rows: list[list] = []
    for line in sorted(lines, key=lambda ln: ((ln.bbox[1] + ln.bbox[3]) / 2, ln.bbox[0])):
        if rows:
            first = rows[-1][0].bbox
            overlap = min(first[3], line.bbox[3]) - max(first[1], line.bbox[1])
            if overlap >= 0.5 * min(first[3] - first[1], line.bbox[3] - line.bbox[1]):
                rows[-1].append(line)
                continue
        rows.append([line])
    return [sorted(row, key=lambda ln: ln.bbox[0]) for row in rows]


def _cells(item: tuple) -> list[tuple[Box, str]]:
    box, text = item[0], item[1].strip()
    words = [(w[0], w[1]) for w in (item[2] if len(item) > 2 else ()) if w[1].strip()]
    if not text:
        return []
    if " ".join(w for _, w in words).split() != text.split():
        return [(box, text)]   # words that do not spell the line cannot place its parts
    heights = sorted(w[0][3] - w[0][1] for w in words)
    gap = CELL_GAP * (heights[len(heights) // 2] if heights else box[3] - box[1])   # the print's height, not the box's
    groups: list[list[Word]] = []
    for word in sorted(words, key=lambda w: w[0][0]):
        if groups and word[0][0] - groups[-1][-1][0][2] < gap:
            groups[-1].append(word)
        else:
            groups.append([word])
    if len(groups) <= 1:
        return [(box, text)]
    return [((g[0][0][0], box[1], g[-1][0][2], box[3]), " ".join(w for _, w in g)) for g in groups]


def _shapes(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _columns(rows: list[list[tuple[Box, str]]]) -> list[tuple[float, float]]:
    shaping = [r for r, row in enumerate(rows) if sum(_shapes(text) for _, text in row) >= 2] \
        or range(len(rows))
    spans = [(box[0], box[2], r) for r in shaping for box, text in rows[r] if _shapes(text)]
    if not spans:
        spans = [(box[0], box[2], r) for r, row in enumerate(rows) for box, _ in row]
    bridging = max(1, int(BRIDGE_SHARE * len(shaping)))
    heights = sorted(box[3] - box[1] for row in rows for box, _ in row)
    min_gap = MIN_SPLIT_GAP * heights[len(heights) // 2]
    merged: list[list] = []
    for x0, x1, r in sorted(spans):
        if merged and x0 < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], x1)
            merged[-1][2].append((x0, x1, r))
        else:
            merged.append([x0, x1, [(x0, x1, r)]])
    columns: list[tuple[float, float]] = []
    for _, _, members in merged:
        columns += _split_bridged(members, min_gap, bridging)
    return columns


def _split_bridged(members: list[tuple[float, float, int]], min_gap: float,
                   bridging: int) -> list[tuple[float, float]]:
    """A merged range cut where x is held by at most `bridging` rows' cells, over at least
    `min_gap`, with more rows than that holding x on each side."""
    edges = sorted({x for x0, x1, _ in members for x in (x0, x1)})
    pieces: list[tuple[float, float, set[int]]] = []
    for a, b in zip(edges, edges[1:]):
        pieces.append((a, b, {r for x0, x1, r in members if x0 <= a and x1 >= b}))
    cuts = [i for i, (a, b, rows) in enumerate(pieces) if len(rows) <= bridging and b - a >= min_gap
            and any(len(p[2]) > bridging for p in pieces[:i]) and any(len(p[2]) > bridging for p in pieces[i + 1:])]
    if not cuts:
        return [(edges[0], edges[-1])]
    out, start = [], edges[0]
    for i in cuts:
        out.append((start, pieces[i][0]))
        start = pieces[i][1]
    out.append((start, edges[-1]))
    return out


def _overlap(x0: float, x1: float, column: tuple[float, float]) -> float:
    return min(x1, column[1]) - max(x0, column[0])


def _column_of(x0: float, x1: float, columns: list[tuple[float, float]]) -> int:
    overlaps = [_overlap(x0, x1, column) for column in columns]
    best = max(range(len(columns)), key=lambda i: overlaps[i])
    if overlaps[best] > 0:
        return best
    centre = (x0 + x1) / 2
    return min(range(len(columns)), key=lambda i: abs((columns[i][0] + columns[i][1]) / 2 - centre))


def _placed(box: Box, columns: list[tuple[float, float]]) -> tuple[int, int]:
    """(first column, columns spanned) of one cell."""
    touched = [i for i, column in enumerate(columns) if _overlap(box[0], box[2], column) > 0]
    covered = [i for i in touched
               if _overlap(box[0], box[2], columns[i]) >= SPAN_COVER * (columns[i][1] - columns[i][0])]
    if len(covered) > 1 and covered == list(range(covered[0], covered[-1] + 1)):
        return covered[0], len(covered)
    return _column_of(box[0], box[2], columns), 1


def _without_covered(cells: list[list]) -> list[tuple[str, int]]:
    """A row's cells with those under a spanning cell left out (their text joins the spanner)."""
    out: list[tuple[str, int]] = []
    index = 0
    while index < len(cells):
        text, span = cells[index]
        span = min(span, len(cells) - index)
        for covered in cells[index + 1:index + span]:
            text = f"{text} {covered[0]}".strip()
        out.append((text, span))
        index += span
    return out


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _html(table: list[list[tuple[str, int]]]) -> str:
    def cell(text: str, span: int, tag: str) -> str:
        attribute = f' colspan="{span}"' if span > 1 else ""
        return f"<{tag}{attribute}>{html.escape(text)}</{tag}>"

    def row(cells, tag):
        return "<tr>" + "".join(cell(text, span, tag) for text, span in cells) + "</tr>"
    body = [row(cells, "td") for cells in table[1:]]
    return "<table>\n<thead>" + row(table[0], "th") + "</thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"


def pipe_rows(text: str) -> str:
    """A table of `markdown_table` as pipe rows (an HTML one converted, a pipe table as it is)."""
    if not text.lstrip().startswith("<table>"):
        return text
    parser = _HtmlCells()
    parser.feed(text)
    rows = [[cell for cell_text, span in row for cell in [cell_text] + [""] * (span - 1)] for row in parser.rows]
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]
    return "\n".join([_row(rows[0]), "| " + " | ".join("---" for _ in range(width)) + " |"] + [_row(r) for r in rows[1:]])


class _HtmlCells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[tuple[str, int]]] = []
        self._cell: list | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th") and self.rows:
            self._cell = ["", int(dict(attrs).get("colspan") or 1)]

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append((self._cell[0], self._cell[1]))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[0] += data
