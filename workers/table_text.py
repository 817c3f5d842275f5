"""A table read cell by cell (one detected line per cell) -> a Markdown table.

Rows are the line rows of `vision.reading_order.line_rows`. Columns come from
the row with the most cells: each cell of another row goes to the column whose
x-range it overlaps most (nearest centre when it overlaps none); cells that land
in the same column are joined with a space. The first row is the header.
"""
from __future__ import annotations

from collections.abc import Sequence

Box = Sequence[float]


def markdown_table(rows: Sequence[Sequence[tuple[Box, str]]]) -> str:
    rows = [[(box, text.strip()) for box, text in row] for row in rows if row]
    if not rows:
        return ""
    template = max(rows, key=len)
    columns = [(box[0], box[2]) for box, _ in template]
    table: list[list[str]] = []
    for row in rows:
        cells = [""] * len(columns)
        for box, text in row:
            index = _column_of(box, columns)
            cells[index] = f"{cells[index]} {text}".strip()
        table.append(cells)
    lines = [_row(table[0]), "| " + " | ".join("---" for _ in columns) + " |"]
    lines += [_row(cells) for cells in table[1:]]
    return "\n".join(lines)


def _column_of(box: Box, columns: list[tuple[float, float]]) -> int:
    overlaps = [min(box[2], right) - max(box[0], left) for left, right in columns]
    best = max(range(len(columns)), key=lambda i: overlaps[i])
    if overlaps[best] > 0:
        return best
    centre = (box[0] + box[2]) / 2
    return min(range(len(columns)), key=lambda i: abs((columns[i][0] + columns[i][1]) / 2 - centre))


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
