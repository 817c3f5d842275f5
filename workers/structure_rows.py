"""A region's lines as rows, what a row's text says, and the frame rows are measured in.

A row is what a reader sees as one printed line: detected lines that overlap
vertically by half the shorter one, left to right (a line detector splits a
printed line at wide gaps: a table-of-contents number, its title, its page).
Every threshold is measured in `h`, the page's body line height (median height
of the detected body lines).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from vision.lines import reads_down
from vision.scripts import UNSPACED, script_of_char
from workers.page_result import LineResult

Box = tuple[float, float, float, float]

SAME_ROW_OVERLAP = 0.5      # of the shorter line: two lines in one row
SHORT_ROW = 1.5             # h left free at the right: a short row

BULLETS = "•◦▪‣·●○■□▸►✓➢"
_BULLET = re.compile(rf"^([{BULLETS}])\s*(?=\S)|^([-–—*+])\s+(?=\S)")
_ENUMERATOR = re.compile(r"^(\((?:\d{1,3}|[a-zA-Z]|[ivxlcdm]{1,6})\)|(?:\d{1,3}|[a-z]|[ivxlcdm]{1,6})[.)]|\[\d{1,3}\])"
                         r"\s+(?=\S)")
_ROMAN = re.compile(r"^[ivxlcdm]+$")
_NUMBERED = re.compile(r"^(?:(?:chapter|section|part|appendix)\s+([0-9]{1,2}|[A-Z]|[IVX]{1,5})[.:]?"
                       r"|([0-9]{1,2}(?:\.[0-9]{1,2})*|[A-Z](?:\.[0-9]{1,2})+)\.?)(?:\s+(.*))?$", re.IGNORECASE)
_CODE_SYMBOLS = frozenset("{}[]();=<>$#\\|&*+~^%@_\"")
_PLAIN_WORD = re.compile(r"^[(\"'“‘]?[A-Za-z][a-z]*(?:[-'’][a-z]+)?[.,;:!?\"'”’)]*$")
_SENTENCE_END = re.compile(r"[.!?:;][\"'”’)]*$")
_PAGE_NUMBER = re.compile(r"^[.\s…]*(\d{1,4}|[ivxlcdm]{1,7})$")
_LEADER = re.compile(r"^(.*?)(?:\s*(?:\.\s*){2,}|\s+\.|\s*…+)\s*(\d{1,4}|[ivxlcdm]{1,7})?\s*$")


@dataclass(frozen=True)
class Row:
    line_ids: tuple[int, ...]
    boxes: tuple[Box, ...]
    texts: tuple[str, ...]

    @property
    def x0(self) -> float:
        return min(box[0] for box in self.boxes)

    @property
    def x1(self) -> float:
        return max(box[2] for box in self.boxes)

    @property
    def y0(self) -> float:
        return min(box[1] for box in self.boxes)

    @property
    def y1(self) -> float:
        return max(box[3] for box in self.boxes)

    @property
    def height(self) -> float:
        return max(box[3] - box[1] for box in self.boxes)

    @property
    def text(self) -> str:
        return " ".join(self.texts)


def region_rows(lines: Sequence[LineResult]) -> list[Row]:
    """Rows of a region's lines (given in reading order); lines with no text are left out."""
    groups: list[list[int]] = []
    for index, line in enumerate(lines):
        if not line.text.strip():
            continue
        if groups and _same_row([lines[i].bbox for i in groups[-1]], line.bbox) and \
                not _reads_down(lines[groups[-1][-1]]) and not _reads_down(line):
            groups[-1].append(index)   # (columns of vertical writing side by side are lines one after the other)
        else:
            groups.append([index])
    return [Row(tuple(group), tuple(lines[i].bbox for i in group), tuple(lines[i].text.strip() for i in group))
            for group in groups]


def _same_row(boxes: list[Box], box: Box) -> bool:
    last = boxes[-1]
    overlap = min(last[3], box[3]) - max(last[1], box[1])
    shorter = min(last[3] - last[1], box[3] - box[1])
    return overlap >= SAME_ROW_OVERLAP * shorter and box[0] >= last[2] - shorter


def join_lines(texts: Sequence[str]) -> str:
    """Lines as one line. A word hyphenated at a line end is joined back: the hyphen goes
    before a lower-case continuation ("de-" "scribed") and stays before anything else ("S-" "PLUS")."""
    joined = ""
    for line in (text.strip() for text in texts):
        if not line:
            continue
        if len(joined) > 1 and joined.endswith("-") and joined[-2].isalpha():
            joined = (joined[:-1] if line[:1].islower() else joined) + line
        elif _unspaced(joined[-1:]) and _unspaced(line[0]):
            joined += line   # Chinese, Japanese, Thai...: no space between words, none at a line break
        else:
            joined = f"{joined} {line}" if joined else line
    return joined


def _reads_down(line: LineResult) -> bool:
    return reads_down(line.bbox, line.text)


def _unspaced(char: str) -> bool:
    """A character of a script written without spaces, or CJK punctuation (the ideographic full
    stop and comma, full-width forms)."""
    if not char:
        return False
    code = ord(char)
    return script_of_char(char) in UNSPACED or 0x3000 <= code <= 0x303F or 0xFF00 <= code <= 0xFF65


def list_marker(text: str) -> tuple[str, str, bool] | None:
    """(marker, the item's text, whether the marker is a glyph that is only ever a bullet)."""
    match = _BULLET.match(text)
    if match:
        return match.group(1) or match.group(2), text[match.end():], bool(match.group(1))
    match = _ENUMERATOR.match(text)
    if match:
        return match.group(1), text[match.end():], False
    return None


def marker_number(marker: str) -> int | None:
    """The number an enumerator counts: "4." -> 4, "(b)" -> 2, "iv." -> 4; None for bullets."""
    core = marker.strip("()[].")
    if core.isdigit():
        return int(core)
    if _ROMAN.match(core) and (len(core) > 1 or core in "ivx"):
        values = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}
        total = 0
        for char, following in zip(core, core[1:] + " "):
            value = values[char]
            total += -value if following != " " and values[following] > value else value
        return total
    if len(core) == 1 and core.isalpha():
        return ord(core.lower()) - ord("a") + 1
    return None


def numbered_heading(text: str) -> tuple[int, str] | None:
    """(numbering depth, title) of "2.3 Title", "A.1 Title", "Chapter 3 Title"; None otherwise."""
    match = _NUMBERED.match(text.strip())
    if not match:
        return None
    title = (match.group(3) or "").strip()
    if match.group(1) is not None:
        return 1, title
    if not title:
        return None
    return match.group(2).count(".") + 1, title


def toc_entry(row: Row, h: float) -> tuple[str, str | None] | None:
    """(title, page) when the row is a table-of-contents entry: a page number far right, or dot leaders."""
    if len(row.texts) >= 2:
        page = _PAGE_NUMBER.match(row.texts[-1])
        if page and row.boxes[-1][0] - row.boxes[-2][2] >= 2 * h:
            title = _LEADER.match(" ".join(row.texts[:-1]))
            return (title.group(1) if title and not title.group(2) else " ".join(row.texts[:-1])), page.group(1)
    match = _LEADER.match(row.text)
    if match and match.group(1):
        return match.group(1), match.group(2)
    return None


def code_density(text: str) -> float:
    chars = [c for c in text if not c.isspace()]
    return sum(c in _CODE_SYMBOLS for c in chars) / len(chars) if chars else 0.0


def plain_word_share(text: str) -> float:
    words = text.split()
    return sum(bool(_PLAIN_WORD.match(word)) for word in words) / len(words) if words else 0.0


def ends_sentence(text: str) -> bool:
    return bool(_SENTENCE_END.search(text))


def starts_capitalised(text: str) -> bool:
    return text[:1].isupper() or (text[:1] in "\"“‘'(" and text[1:2].isupper())


@dataclass(frozen=True)
class Frame:
    """What a region's rows are measured against."""
    h: float                    # the page's body line height
    left: float
    right: float
    usual_gap: float
    justified: bool = False     # most rows reach the right edge: a short row ends a paragraph

    @property
    def width(self) -> float:
        return max(1.0, self.right - self.left)

    def is_short(self, row: Row) -> bool:
        return row.x1 < self.right - SHORT_ROW * self.h

    def may_start_paragraph(self, prev: Row | None) -> bool:
        return prev is None or self.is_short(prev) or ends_sentence(prev.text)


def line_ids(rows: Sequence[Row]) -> tuple[int, ...]:
    return tuple(i for row in rows for i in row.line_ids)
