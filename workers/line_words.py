"""The words of a line: each with its box and confidence, and where both came from.

| `box_source`   | the box                                                                       |
|----------------|-------------------------------------------------------------------------------|
| `text_layer`   | the PDF's own word box (PyMuPDF's, the glyphs' extent), where the layer's words spell the line |
| `ctc`          | from where a CTC recogniser puts the word's characters on the line's image when forced to read the final text (`vision.ctc_align`): its first and last characters' centres, widened by half their widths |
| `interpolated` | the line's box shared out by the characters' widths (Helvetica's advances; a wide East Asian character one em): where the word would stand were the line set in that face |

In the pipeline, `ctc` and `interpolated` edges then move onto the blank gaps of the line's ink
(`workers.ink_gaps`): on a justified Times page (tests/workers/test_word_boxes.py) interpolated
edges are off by 0.15 line heights on average, aligned ones by 0.08, either on the gaps by 0.05.

A recognised line of two words or more is aligned where the pipeline aligns words
(`Settings.word_alignment`: it costs a recogniser pass per line) and the line runs left to right;
any other line is interpolated, as is a result exported without its page image (a line of one
word is its word's box).

A word's confidence comes from the recogniser's token log-probabilities over its characters
(`tokens`: exp of their mean, as the line's is over all tokens) where the reply carried them
and they spell the line's text; else the line's confidence (`line`); else none (the text
layer's words, a recogniser without confidences).
"""
from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache

import numpy as np
import pymupdf

from vision.curve import Curve
from vision.document import TextWord
from vision.lines import reads_down
from workers.ink_gaps import snapped_to_gaps
from workers.page_result import Box, LineResult, RegionResult, WordResult

MIN_WORD_IN_LINE = 0.5      # share of a layer word's box inside a line's box that makes it a candidate
_WORD = re.compile(r"\S+")

TokenLogprobs = Sequence[tuple[str, float]]


CharCentres = Callable[[Box, str], "list[float] | None"]   # line box, text -> x of each non-space character


def with_words(region: RegionResult, layer: Sequence[TextWord] = (),
               tokens_of: dict[tuple[Box, str], TokenLogprobs] | None = None,
               align: CharCentres | None = None, grey: np.ndarray | None = None) -> RegionResult:
    """The region with every line's words: the layer's boxes where its words spell the line,
    else aligned ones where `align` places the line's characters, else interpolated ones; the
    last two moved onto the line's ink gaps where the page's `grey` pixels are given
    (`workers.ink_gaps`). `tokens_of` gives a recognised line's token log-probs by (box, text)."""
    if not region.lines:
        return region
    tokens_of = tokens_of or {}

    def words_of(line: LineResult) -> list[WordResult]:
        found = layer_words(line.bbox, line.text, layer)
        if found:
            return found
        tokens = tokens_of.get((line.bbox, line.text))
        x0, y0, x1, y1 = line.bbox
        # A line of one word is that word's box already: nothing to align. A curved line's box
        # holds the neighbours it bends past: its words are spread and put on its gaps along its band.
        aligns = align is not None and x1 - x0 > y1 - y0 and len(line.text.split()) > 1 and line.curve is None
        centres = align(line.bbox, line.text) if aligns else None  # type: ignore[misc]
        if centres is not None:
            words = aligned_words(line.bbox, line.text, centres, line.confidence, tokens)
        else:
            words = interpolated_words(line.bbox, line.text, line.confidence, tokens)
        if grey is not None and (x1 - x0 > y1 - y0 or line.curve is not None):
            words = [replace(word, bbox=_stored(word.bbox))
                     for word in snapped_to_gaps(words, line.bbox, grey, line.curve)]
        if line.curve is not None:
            words = [replace(word, bbox=_stored(_on_curve(word.bbox, line.curve))) for word in words]
        return words

    return replace(region, lines=tuple(replace(line, words=tuple(words_of(line))) for line in region.lines))


def _on_curve(box: Box, curve: Curve) -> Box:
    """A word's box on a curved line: its columns, and the band's rows over them (the band's
    middle at the word's ends and centre, give or take half its thickness)."""
    x0, _, x1, _ = box
    middles = curve.middle_at([x0, (x0 + x1) / 2, x1])
    return x0, float(min(middles)) - curve.thickness / 2, x1, float(max(middles)) + curve.thickness / 2


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
            return [WordResult(_stored(word.bbox), word.text, None, "text_layer", None) for word in found]
    return []


def aligned_words(bbox: Box, text: str, centres: Sequence[float], confidence: float | None,
                  tokens: TokenLogprobs | None = None) -> list[WordResult]:
    """Words from their characters' centres (page x, one per non-space character): each spans
    its first character's centre less half that character's width to its last's plus half;
    widths are Helvetica's advances scaled to the line (a least-squares fit of the centres to
    their places in the text), and neighbours never overlap, nor a word leave the line."""
    spans = [(match.start(), match.end()) for match in _WORD.finditer(text)]
    inked = [i for i, char in enumerate(text) if not char.isspace()]
    assert len(inked) == len(centres), (text, len(centres))
    at = dict(zip(inked, centres))
    edges = _edges(text)
    places = np.array([(edges[i] + edges[i + 1]) / 2 for i in inked])
    scale = float(np.polyfit(places, np.asarray(centres), 1)[0]) if len(inked) > 1 else 0.0
    if not scale > 0:   # one character, or centres running backwards: a width from the line's height
        scale = bbox[3] - bbox[1]
    x0, y0, x1, y1 = bbox
    boxes = [[max(x0, at[start] - scale * _advance(text[start]) / 2),
              min(x1, at[end - 1] + scale * _advance(text[end - 1]) / 2)] for start, end in spans]
    for left, right in zip(boxes, boxes[1:]):
        if left[1] > right[0]:
            left[1] = right[0] = (left[1] + right[0]) / 2
    confidences = token_confidences(text, spans, tokens) or [None] * len(spans)
    return [_word((a, y0, max(b, a + 1e-3), y1), text[start:end], word_confidence, confidence, "ctc")
            for (a, b), (start, end), word_confidence in zip(boxes, spans, confidences)]


def interpolated_words(bbox: Box, text: str, confidence: float | None,
                       tokens: TokenLogprobs | None = None) -> list[WordResult]:
    """Words spread along the line's box by their characters' widths."""
    spans = [(match.start(), match.end()) for match in _WORD.finditer(text)]
    if not spans:
        return []
    edges = _edges(text)
    first, last = edges[spans[0][0]], edges[spans[-1][1]]   # the ink runs from the first word to the last
    scale = 1.0 / max(last - first, 1e-9)
    x0, y0, x1, y1 = bbox
    vertical = reads_down(bbox, text)
    confidences = token_confidences(text, spans, tokens)
    words = []
    for (start, end), word_confidence in zip(spans, confidences or [None] * len(spans)):
        a, b = (edges[start] - first) * scale, (edges[end] - first) * scale
        box = (x0, y0 + a * (y1 - y0), x1, y0 + b * (y1 - y0)) if vertical \
            else (x0 + a * (x1 - x0), y0, x0 + b * (x1 - x0), y1)
        words.append(_word(box, text[start:end], word_confidence, confidence, "interpolated"))
    return words


def _word(box: Box, text: str, from_tokens: float | None, line_confidence: float | None,
          box_source: str) -> WordResult:
    if from_tokens is not None:
        return WordResult(_stored(box), text, round(from_tokens, 3), box_source, "tokens")
    if line_confidence is None:
        return WordResult(_stored(box), text, None, box_source, None)
    return WordResult(_stored(box), text, round(line_confidence, 3), box_source, "line")


def _stored(box: Sequence[float]) -> Box:
    """The box as the JSON keeps it (a tenth of a pixel), so a word equals itself read back."""
    return tuple(round(float(v), 1) for v in box)  # type: ignore[return-value]


def _edges(text: str) -> list[float]:
    """Where each character starts along the text, in ems (and where the last ends)."""
    edges = [0.0]
    for char in text:
        edges.append(edges[-1] + _advance(char))
    return edges


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
