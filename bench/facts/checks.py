"""Text and table checks of the fact tests (bench/facts/), one function per category.

Every text is first normalised by bench/real_pages_metrics.normalise (accents composed, NFKC,
typographic quotes and dashes folded, Markdown table syntax and dot leaders dropped, whitespace
collapsed), then matched case-sensitively:

- present: the fact's text is found in the output: rapidfuzz `partial_ratio` (the best-aligned
  window of the output, Indel similarity) >= 100 * (1 - max_diff), max_diff 0.1 unless the
  fact says otherwise: about one wrong character in ten;
- absent: the text is not found that way; with `whole_line` (page numbers, short running
  titles) it fails only when a line of the output is the text, exactly after normalisation;
- order: `before` and `after` are both present and the best window of `before` starts before
  that of `after`;
- table: some table of the output's Markdown (pipe tables and HTML tables, spans expanded) has
  a cell whose text matches `cell` (ratio >= 90) and whose given neighbours (`up`, `down`,
  `left`, `right`) match the cells next to it, a spanning cell counting once.

A plain-text output (Tesseract's) has no tables, so its table facts fail, as olmOCR-Bench scores
an output without a table. Mathematics is checked in math_render.py.
"""
from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

from rapidfuzz import fuzz

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # bench/, for real_pages_metrics
from real_pages_metrics import normalise  # noqa: E402

DEFAULT_MAX_DIFF = 0.1
CELL_MIN_RATIO = 90.0
NEIGHBOURS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


def find(needle: str, haystack: str, max_diff: float = DEFAULT_MAX_DIFF) -> int | None:
    """Where the normalised needle's best window starts in the normalised haystack, or None if not found."""
    needle, haystack = normalise(needle), normalise(haystack)
    if not needle:
        raise ValueError("a fact's text is empty after normalisation")
    if needle in haystack:
        return haystack.index(needle)
    if len(haystack) == 0:
        return None
    alignment = fuzz.partial_ratio_alignment(needle, haystack, score_cutoff=100 * (1 - max_diff))
    return None if alignment is None else alignment.dest_start


def check_present(fact: dict, text: str) -> bool:
    return find(fact["text"], text, fact.get("max_diff", DEFAULT_MAX_DIFF)) is not None


def check_absent(fact: dict, text: str) -> bool:
    if fact.get("whole_line"):
        wanted = normalise(fact["text"])
        return all(normalise(line) != wanted for line in text.splitlines())
    return not check_present(fact, text)


def check_order(fact: dict, text: str) -> bool:
    max_diff = fact.get("max_diff", DEFAULT_MAX_DIFF)
    first, second = find(fact["before"], text, max_diff), find(fact["after"], text, max_diff)
    return first is not None and second is not None and first < second


class _HtmlTables(HTMLParser):
    """Grids of the <table> elements of a text, rowspan/colspan expanded (a spanning cell is one object)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[dict | None]]] = []
        self._rows: list[list[tuple[str, int, int]]] | None = None
        self._cell: list[str] | None = None
        self._span = (1, 1)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._rows = []
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            values = dict(attrs)
            self._cell, self._span = [], (_int(values.get("rowspan")), _int(values.get("colspan")))
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._rows:
            self._rows[-1].append(("".join(self._cell), *self._span))
            self._cell = None
        elif tag == "table" and self._rows is not None:
            self.tables.append(_expand(self._rows))
            self._rows = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _int(value: str | None) -> int:
    return int(value) if value and value.isdigit() and int(value) > 0 else 1


def _expand(rows: list[list[tuple[str, int, int]]]) -> list[list[dict | None]]:
    grid: dict[tuple[int, int], dict] = {}
    for r, row in enumerate(rows):
        c = 0
        for text, rowspan, colspan in row:
            while (r, c) in grid:
                c += 1
            cell = {"text": text}
            for dr in range(rowspan):
                for dc in range(colspan):
                    grid[(r + dr, c + dc)] = cell
            c += colspan
    height = max((r for r, _ in grid), default=-1) + 1
    width = max((c for _, c in grid), default=-1) + 1
    return [[grid.get((r, c)) for c in range(width)] for r in range(height)]


_PIPE_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_SEPARATOR = re.compile(r"^\s*\|?[\s:|-]*-[\s:|-]*\|?\s*$")


def _pipe_tables(markdown: str) -> list[list[list[dict | None]]]:
    tables, current = [], []
    for line in [*markdown.splitlines(), ""]:
        match = _PIPE_ROW.match(line)
        if match and not _SEPARATOR.match(line):
            cells = re.split(r"(?<!\\)\|", match.group(1))
            current.append([{"text": cell.replace("\\|", "|").strip()} for cell in cells])
        elif not match:
            if current:
                tables.append(current)
            current = []
    return tables


def tables_of(markdown: str) -> list[list[list[dict | None]]]:
    """Every table of a Markdown text as a grid of cells (None where a row is short)."""
    parser = _HtmlTables()
    parser.feed(markdown)
    return _pipe_tables(markdown) + parser.tables


def _cell_matches(wanted: str, cell: dict | None) -> bool:
    if cell is None:
        return False
    got, want = normalise(re.sub(r"[*_`]", "", cell["text"])), normalise(wanted)
    return got == want or (bool(got) and fuzz.ratio(got, want) >= CELL_MIN_RATIO)


def _neighbour(grid, r: int, c: int, step: tuple[int, int]) -> dict | None:
    """The next cell in a direction that is a different cell object (a spanning cell counts once)."""
    here = grid[r][c]
    while True:
        r, c = r + step[0], c + step[1]
        if not (0 <= r < len(grid) and 0 <= c < len(grid[r])):
            return None
        if grid[r][c] is not here:
            return grid[r][c]


def check_table(fact: dict, markdown: str) -> bool:
    relations = {name: fact[name] for name in NEIGHBOURS if name in fact}
    if not relations:
        raise ValueError(f"table fact {fact.get('id')} names no neighbour (up/down/left/right)")
    for grid in tables_of(markdown):
        for r, row in enumerate(grid):
            for c, cell in enumerate(row):
                if _cell_matches(fact["cell"], cell) and all(
                        _cell_matches(want, _neighbour(grid, r, c, NEIGHBOURS[name]))
                        for name, want in relations.items()):
                    return True
    return False


TEXT_CHECKS = {"present": check_present, "absent": check_absent, "order": check_order}
