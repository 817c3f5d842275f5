"""Code listings among a region's rows, and their text with line breaks and indentation.

A row is strong code when it starts with a prompt ("> ", "$ ", "R> ", ">>> ")
or has >= 15% code symbols ({}[]();=<>$#\\|&*+~^%@_") with < 60% plain words;
a snippet when it is short, set in 2-10 h from the text's left edge, has <= 6
words (or 10% symbols), does not end a sentence, is not centred, and follows a
short row or a colon ("make check" after "... can be done by"). A run starts
at a strong row or a snippet, takes in the rows just above it that could be
code (not prose, not a colon that introduces it, no further left), and goes on
while rows are strong, or start no further left than its first row (0.35 h)
and are not prose (a line of words across the whole width, or a capitalised
sentence unless the run is set in 2 h: a display). A run is code when it holds a prompt, or all its rows are set in
2 h, or it has >= 2 rows, a quarter of them strong, and a code token
("{", ";", "<-", "==", "f(", "def", ...) or varied indentation on a
character grid. Indentation is rebuilt in characters of the listing's pitch
(fitted over its boxes' widths and lengths, net of the boxes' padding); gaps
between a row's boxes, padding added back, become spaces the same way.
"""
from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

from workers.structure_blocks import Block, BlockType
from workers.structure_rows import (SHORT_ROW, Frame, Row, code_density, ends_sentence, line_ids, plain_word_share,
                                    starts_capitalised)

CODE_DENSITY = 0.15         # share of code symbols among non-space characters: a strong code row
CODE_STRONG_SHARE = 0.25    # of a run's rows strong, for a run without prompts to be code
SNIPPET_INDENT, SNIPPET_MAX_INDENT = 2.0, 10.0   # h from the text's left edge: a row set in as code
SNIPPET_MAX_WORDS = 6
INDENT_MAX = 4.0            # h: prose starts no further in than a first-line indent
RUN_TOLERANCE = 0.35        # h: a run's rows start no further left than its first row, less this
PITCH_SPREAD = 3            # characters: boxes whose lengths differ by this much or more give a pitch slope
PITCH_MIN_PAIRS = 3         # slopes needed to trust the fitted pitch
PITCH_PIECES = 120          # boxes the fit looks at (pairs grow as their square)
PITCH_RANGE = (0.6, 1.1)    # the fitted pitch against the median of width / characters, to be believed
OVERHANG_MAX = 2.0          # pitches: the most a box may add beyond its glyph cells

_PROMPT = re.compile(r"^(?:R?>|\$|>>>)\s")
_CONTINUATION_PROMPT = re.compile(r"^(?:\+|\.\.\.)\s")
_CODE_TOKEN = re.compile(r"[{};\[\]]|<-|->|==|!=|:=|=>|\w\(|\bdef\b|\breturn\b|\bimport\b|#include|//")


def _is_strong_code(row: Row) -> bool:
    text = row.text
    if _PROMPT.match(text):
        return True
    return code_density(text) >= CODE_DENSITY and plain_word_share(text) < 0.6


def _is_prose(row: Row, frame: Frame, full_width_only: bool = False) -> bool:
    """A justified line of words from the left edge to the right one, or a capitalised sentence."""
    text = row.text
    words = text.split()
    full_width = row.x0 <= frame.left + INDENT_MAX * frame.h and row.x1 >= frame.right - SHORT_ROW * frame.h and \
        len(words) >= 5 and plain_word_share(text) >= 0.5
    sentence = len(words) >= 4 and plain_word_share(text) >= 0.75 and starts_capitalised(text) and ends_sentence(text)
    return full_width or (sentence and not full_width_only)


def _is_snippet(row: Row, prev: Row | None, frame: Frame) -> bool:
    """A short row set well in from the text's left edge, after a short row or a colon: a command
    shown on its own ("make check"), though it has no prompt and few symbols."""
    indent = row.x0 - frame.left
    if not SNIPPET_INDENT * frame.h <= indent <= SNIPPET_MAX_INDENT * frame.h or not frame.is_short(row):
        return False
    if prev is not None and not (frame.is_short(prev) or prev.text.endswith(":")):
        return False   # under a full line: a list item's or a quotation's next line
    centred = abs((row.x0 + row.x1) / 2 - (frame.left + frame.right) / 2) <= 2 * frame.h
    few_words = len(row.text.split()) <= SNIPPET_MAX_WORDS or code_density(row.text) >= 0.1
    return few_words and not centred and not ends_sentence(row.text) and not _is_prose(row, frame)


def code_runs(rows: Sequence[Row], frame: Frame, excluded: set[int]) -> dict[int, int]:
    """{first row: end row} of the code blocks among the rows; no run takes an `excluded` row (an equation).

    A run starts at a strong row (or a snippet), takes in the rows above it that could be
    code (a comment line, but not a colon that introduces it), and goes on while rows are
    strong, or indented as far as its first row and not prose."""
    runs: dict[int, int] = {}
    tolerance = RUN_TOLERANCE * frame.h
    k, taken = 0, 0
    while k < len(rows):
        if k in excluded or not (_is_strong_code(rows[k]) or _is_snippet(rows[k], rows[k - 1] if k else None, frame)):
            k += 1
            continue
        start, first_x = k, rows[k].x0
        set_in = first_x - frame.left >= SNIPPET_INDENT * frame.h   # a display: only a full line of prose ends it
        while start > taken and start - 1 not in excluded and rows[start - 1].x0 >= first_x - tolerance and \
                not _is_prose(rows[start - 1], frame) and not rows[start - 1].text.endswith(":"):
            start -= 1
        k += 1
        while k < len(rows) and k not in excluded:
            row = rows[k]
            strong = _is_strong_code(row) or _CONTINUATION_PROMPT.match(row.text)
            indented = row.x0 >= first_x - tolerance
            prose = _is_prose(row, frame, full_width_only=set_in)
            if not ((strong and row.x0 >= frame.left - frame.h) or (indented and not prose)):
                break
            k += 1
        if _is_code(rows[start:k], frame):
            runs[start], taken = k, k
    return runs


def _is_code(rows: Sequence[Row], frame: Frame) -> bool:
    if any(_PROMPT.match(row.text) for row in rows):
        return True
    if all(row.x0 - frame.left >= SNIPPET_INDENT * frame.h for row in rows):
        return True   # set in from the text as a block: runs stop at prose, so this is a listing
    if len(rows) < 2 or sum(map(_is_strong_code, rows)) < CODE_STRONG_SHARE * len(rows):
        return False
    return any(_CODE_TOKEN.search(row.text) for row in rows) or _on_varied_grid(rows)


def _pitch(rows: Sequence[Row]) -> tuple[float, float]:
    """A monospaced listing's character pitch c and its boxes' overhang e: a box holding n
    characters is n * c + e wide, e being what the box adds beyond the glyph cells (the line
    detector's padding on both sides; about 0 for a text layer's boxes). Fitted over every box of
    the rows as the median slope between boxes whose lengths differ by PITCH_SPREAD characters or
    more (Theil-Sen), so a short box's padding does not inflate the pitch as the median of width /
    characters does (a 1-character box is all padding). Where too few lengths differ, or the fit
    is implausible, the median of width / characters, with no overhang."""
    pieces = [(len(text), box[2] - box[0]) for row in rows for box, text in zip(row.boxes, row.texts) if text]
    long_ = [width / n for n, width in pieces if n >= 4] or [width / max(1, n) for n, width in pieces] or [1.0]
    naive = max(1.0, statistics.median(long_))
    pieces = pieces[:PITCH_PIECES]
    slopes = [(w2 - w1) / (n2 - n1) for i, (n1, w1) in enumerate(pieces) for n2, w2 in pieces[i + 1:]
              if abs(n2 - n1) >= PITCH_SPREAD]
    if len(slopes) >= PITCH_MIN_PAIRS:
        pitch = statistics.median(slopes)
        if PITCH_RANGE[0] * naive <= pitch <= PITCH_RANGE[1] * naive:
            overhang = statistics.median(width - n * pitch for n, width in pieces)
            return pitch, min(max(0.0, overhang), OVERHANG_MAX * pitch)
    return naive, 0.0


def _on_varied_grid(rows: Sequence[Row]) -> bool:
    width, left = _pitch(rows)[0], min(row.x0 for row in rows)
    offsets = [(row.x0 - left) / width for row in rows]
    return len(rows) >= 3 and len({round(o) for o in offsets}) >= 2 and all(abs(o - round(o)) <= 0.3 for o in offsets)


def code_block(rows: Sequence[Row]) -> Block:
    (width, overhang), left = _pitch(rows), min(row.x0 for row in rows)
    lines = []
    for row in rows:
        text = row.texts[0]
        for box, prev_box, part in zip(row.boxes[1:], row.boxes, row.texts[1:]):
            # The gap between two boxes lacks the overhang each box added on its side of it.
            text += " " * max(1, round((box[0] - prev_box[2] + overhang) / width)) + part
        lines.append(" " * round((row.x0 - left) / width) + text)
    code = "\n".join(lines)
    return Block(BlockType.CODE, code, line_ids(rows), language=_language(code))


def _language(code: str) -> str | None:
    first = code.lstrip()
    if first.startswith(">>>"):
        return "pycon"
    if first.startswith("$ "):
        return "console"
    if "<-" in code and re.search(r"^\s*>\s", code, re.MULTILINE):
        return "r"
    return None
