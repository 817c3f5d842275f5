"""The words of a line: each with its box and confidence, and where both came from.

A word's box is the PDF's own where the line's text is the text layer's words (`text_layer`:
PyMuPDF's word boxes, the glyphs' extent). Anywhere else it is `interpolated`: the line's
box is shared out along its reading direction by the characters' widths (Helvetica's
advances; a wide East Asian character one em), so a word stands where its characters would
stand if the line were set in that face. Neither recogniser here gives character positions
for its final text (the house model's CTC head reads the line, but its alignment stays in
the engine), so no box claims more than that.

A word's confidence comes from the recogniser's token log-probabilities over its characters
(`tokens`: exp of their mean, as the line's is over all tokens) where the reply carried them
and they spell the line's text; else the line's confidence (`line`); else none (the text
layer's words, a recogniser without confidences).
"""
from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

import pymupdf

from vision.document import TextWord
from workers.page_result import Box, LineResult, RegionResult, WordResult

MIN_WORD_IN_LINE = 0.5      # share of a layer word's box inside a line's box that makes it a candidate
VERTICAL_ASPECT = 2.0       # a line box this many times taller than wide is read top to bottom
_WORD = re.compile(r"\S+")

TokenLogprobs = Sequence[tuple[str, float]]


def with_words(region: RegionResult, layer: Sequence[TextWord] = (),
               tokens_of: dict[tuple[Box, str], TokenLogprobs] | None = None) -> RegionResult:
    """The region with every line's words: the layer's boxes where its words spell the line,
    interpolated ones elsewhere; `tokens_of` gives a recognised line's token log-probs by
    (box, text)."""
    if not region.lines:
        return region
    tokens_of = tokens_of or {}
    lines = tuple(replace(line, words=tuple(
        layer_words(line.bbox, line.text, layer)
        or interpolated_words(line.bbox, line.text, line.confidence, tokens_of.get((line.bbox, line.text)))))
        for line in region.lines)
    return replace(region, lines=lines)


def layer_words(bbox: Box, text: str, layer: Sequence[TextWord]) -> list[WordResult]:
    """The layer's words that spell the line's text, in its order, with their own boxes; [] when
    the layer's words in the line's box do not spell it (a recognised line, a detected line the
    layer split otherwise)."""
    tokens = text.split()
    if not tokens or not layer:
        return []
    candidates = [word for word in layer if _inside_share(word.bbox, bbox) >= MIN_WORD_IN_LINE]
    # The line's text lists its words in rows top to bottom, each left to right (vision.text_layer);
    # the PDF's own order is tried too, as a fallback region's lines keep it.
    for ordered in (sorted(candidates, key=lambda w: (round((w.bbox[1] + w.bbox[3]) / 2), w.bbox[0])),
                    sorted(candidates, key=lambda w: (w.block_no, w.line_no, w.word_no))):
        found = _spelling(tokens, ordered)
        if found is not None:
            return [WordResult(word.bbox, word.text, None, "text_layer", None) for word in found]
    return []


def interpolated_words(bbox: Box, text: str, confidence: float | None,
                       tokens: TokenLogprobs | None = None) -> list[WordResult]:
    """Words spread along the line's box by their characters' widths."""
    spans = [(match.start(), match.end()) for match in _WORD.finditer(text)]
    if not spans:
        return []
    advances = [_advance(char) for char in text]
    edges = [0.0]
    for advance in advances:
        edges.append(edges[-1] + advance)
    first, last = edges[spans[0][0]], edges[spans[-1][1]]   # the ink runs from the first word to the last
    scale = 1.0 / max(last - first, 1e-9)
    x0, y0, x1, y1 = bbox
    vertical = (y1 - y0) > VERTICAL_ASPECT * (x1 - x0) and len(text.strip()) > 1
    confidences = token_confidences(text, spans, tokens)
    words = []
    for (start, end), word_confidence in zip(spans, confidences or [None] * len(spans)):
        a, b = (edges[start] - first) * scale, (edges[end] - first) * scale
        box = (x0, y0 + a * (y1 - y0), x1, y0 + b * (y1 - y0)) if vertical \
            else (x0 + a * (x1 - x0), y0, x0 + b * (x1 - x0), y1)
        if word_confidence is not None:
            words.append(WordResult(box, text[start:end], word_confidence, "interpolated", "tokens"))
        else:
            source = None if confidence is None else "line"
            words.append(WordResult(box, text[start:end], confidence, "interpolated", source))
    return words


def token_confidences(text: str, spans: Sequence[tuple[int, int]],
                      tokens: TokenLogprobs | None) -> list[float] | None:
    """Per word span of `text`: exp(mean log-prob) of the tokens that wrote its characters;
    None when the tokens do not spell the text (a reply the pipeline re-spelled, byte tokens)."""
    if not tokens:
        return None
    joined = "".join(token for token, _ in tokens)
    offset = joined.find(text)
    if offset < 0:
        return None
    starts, position = [], 0
    for token, _ in tokens:
        starts.append(position)
        position += len(token)
    result = []
    for start, end in spans:
        start, end = start + offset, end + offset
        values = [logprob for (token, logprob), s in zip(tokens, starts)
                  if s < end and s + len(token) > start and math.isfinite(logprob)]
        if not values:
            return None
        result.append(math.exp(sum(values) / len(values)))
    return result


@lru_cache(maxsize=4096)
def _advance(char: str) -> float:
    """A character's advance in ems: Helvetica's, one em for a wide East Asian character, and
    a quarter em at least (a glyph the face lacks)."""
    if unicodedata.east_asian_width(char) in ("W", "F"):
        return 1.0
    return max(pymupdf.get_text_length(char, fontname="helv", fontsize=1), 0.25)


def _spelling(tokens: list[str], ordered: Sequence[TextWord]) -> list[TextWord] | None:
    """The words, in order, whose texts are the tokens one for one, skipping a neighbouring
    line's words the box also holds; None when they do not spell the tokens."""
    found, position = [], 0
    for token in tokens:
        while position < len(ordered) and ordered[position].text != token:
            position += 1
        if position == len(ordered):
            return None
        found.append(ordered[position])
        position += 1
    return found


def _inside_share(box: Box, container: Box) -> float:
    width = min(box[2], container[2]) - max(box[0], container[0])
    height = min(box[3], container[3]) - max(box[1], container[1])
    area = max(box[2] - box[0], 1e-9) * max(box[3] - box[1], 1e-9)
    return max(width, 0.0) * max(height, 0.0) / area
