"""Tables without rules inside text regions: rows of cells set apart by wide gaps and lined up
in columns, such as a statement of amounts, which the layout model takes for text.

A line detector splits a printed row at wide gaps, so such a table arrives as rows of several
detected lines. A run of rows is a table when:

- at least `MIN_ROWS` of its rows have two or more cells, each cell `MIN_CELL_GAP` h or more
  from the next (word spacing is far less);
- the cells fall into columns (x-ranges of the multi-cell rows' cells, merged where they
  overlap): at least two, and in `MIN_CONSISTENT` of those rows no two cells share a column;
- a column other than the first holds figures (amounts, percentages, years, dashes) in at least
  `MIN_NUMERIC_SHARE` of its cells: columns of words alone are a definition list, a slide's
  navigation bar or two columns of prose more often than a table, so they are left as text;
- no row has dot leaders (a table of contents or an index).

A row of one cell between table rows (a section label such as "Current assets:") stays in the
table; one at either end does not. The block's text is a Markdown table, the first row its header.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from workers.structure_blocks import Block, BlockType
from workers.structure_rows import Row, line_ids
from workers.table_text import markdown_table

MIN_ROWS = 3
MIN_CELL_GAP = 1.5          # h between neighbouring cells of a row
MIN_CONSISTENT = 0.8        # of the multi-cell rows: cells in distinct columns
MIN_NUMERIC_SHARE = 0.6     # of a column's cells: figures

_LEADERS = re.compile(r"(?:\.\s*){3,}|…")
_FIGURE = re.compile(r"^[(\[]?[-–−+]?\s*[$€£¥]?\s*(?:\d[\d,.' ]*\d|\d)\s*%?[)\]]?\*?$|^[-–—]$|^n/?a$", re.IGNORECASE)


def table_runs(rows: Sequence[Row], h: float, taken: set[int]) -> dict[int, int]:
    """Start -> end (exclusive) of each run of rows that is a table; rows in `taken` (code,
    equations) are never part of one."""
    runs: dict[int, int] = {}
    k = 0
    while k < len(rows):
        if k in taken or not _is_cell_row(rows[k], h):
            k += 1
            continue
        end = k + 1
        while end < len(rows) and end not in taken:
            if _is_cell_row(rows[end], h):
                end += 1
            elif end + 1 < len(rows) and end + 1 not in taken and len(rows[end].boxes) == 1 \
                    and _is_cell_row(rows[end + 1], h):
                end += 2   # a label row inside the table
            else:
                break
        if _is_table(rows[k:end], h):
            runs[k] = end
        k = end
    return runs


def table_block(rows: Sequence[Row]) -> Block:
    cells = [list(zip(row.boxes, row.texts)) for row in rows]
    return Block(BlockType.TABLE, markdown_table(cells), line_ids(rows))


def _is_cell_row(row: Row, h: float) -> bool:
    if len(row.boxes) < 2:
        return False
    boxes = sorted(row.boxes, key=lambda box: box[0])
    return all(b[0] - a[2] >= MIN_CELL_GAP * h for a, b in zip(boxes, boxes[1:]))


def _is_table(rows: Sequence[Row], h: float) -> bool:
    multi = [row for row in rows if len(row.boxes) >= 2]
    if len(multi) < MIN_ROWS or any(_LEADERS.search(text) for row in rows for text in row.texts):
        return False
    columns = _columns([box for row in multi for box in row.boxes])
    if len(columns) < 2:
        return False
    consistent = 0
    figures = [[0, 0] for _ in columns]   # per column: figures, cells
    for row in multi:
        used = [_column_of(box, columns) for box in row.boxes]
        consistent += len(set(used)) == len(used)
        for column, text in zip(used, row.texts):
            figures[column][0] += _FIGURE.match(text.strip()) is not None
            figures[column][1] += 1
    if consistent < MIN_CONSISTENT * len(multi):
        return False
    return any(cells and found >= MIN_NUMERIC_SHARE * cells for found, cells in figures[1:])


def _columns(boxes: Sequence[tuple[float, float, float, float]]) -> list[tuple[float, float]]:
    """x-ranges of the cells merged where they overlap, left to right."""
    merged: list[list[float]] = []
    for x0, _, x1, _ in sorted(boxes, key=lambda box: box[0]):
        if merged and x0 < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], x1)
        else:
            merged.append([x0, x1])
    return [(a, b) for a, b in merged]


def _column_of(box: tuple[float, float, float, float], columns: list[tuple[float, float]]) -> int:
    centre = (box[0] + box[2]) / 2
    return min(range(len(columns)), key=lambda i: 0 if columns[i][0] <= centre <= columns[i][1]
               else min(abs(centre - columns[i][0]), abs(centre - columns[i][1])))
