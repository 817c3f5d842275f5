"""Interpolated word boxes moved onto the blank gaps of their line's ink.

Spread by character widths, a word lands where it would stand in Helvetica with single spaces;
a justified line stretches its spaces and another face has other widths, so the estimate drifts
along the line. The page shows where the words are: the columns of the line's box with no ink
between its first and last inked column are its gaps, and the wide ones (`MIN_GAP_HEIGHTS` of
the line's height: wider than the gaps between letters) are its spaces. Each boundary between
two words moves to the space nearest its estimate (within `SEARCH_HEIGHTS` line heights or
half the shorter of the two words), spaces taken left to right, each once; the first word starts
at the first ink and the last ends at the last. A boundary with no such gap keeps its estimate.
The boxes stay `interpolated`: measured edges, but which gap is which word's is still a guess.
A curved line (`LineResult.curve`) is looked at along its band, straightened (`vision.crops.curved_band`),
not in its box, which holds the neighbours it bends past.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from vision.crops import curved_band
from vision.curve import Curve
from workers.page_result import Box, WordResult

MIN_GAP_HEIGHTS = 0.12     # a space is at least this share of the line's height (letters' gaps are narrower)
SEARCH_HEIGHTS = 1.0       # how far from its estimate a boundary may move, in line heights
MIN_CONTRAST = 60          # grey levels between the darkest and lightest pixel: less, and there is no ink to go by


def snapped_to_gaps(words: list[WordResult], bbox: Box, grey: np.ndarray, curve: Curve | None = None) -> list[WordResult]:
    """`words` (interpolated along a level or curved line) with their edges on the line's ink gaps."""
    if len(words) < 2:
        return words
    x0, y0, x1, y1 = (int(round(v)) for v in bbox)
    if curve is not None:
        x0 = max(0, x0)
        height = max(1, round(curve.thickness))
        patch = curved_band(grey, curve, x0, max(x0 + 1, min(x1, grey.shape[1])), height)
    else:
        patch = grey[max(0, y0):max(0, y1), max(0, x0):max(0, x1)]
        height = y1 - y0
    if patch.size == 0 or int(patch.max()) - int(patch.min()) < MIN_CONTRAST:
        return words
    inked = np.flatnonzero((patch < (int(patch.max()) + int(patch.min())) / 2).any(axis=0))
    if len(inked) < 2:
        return words
    left = [x0 + inked[0]] + [None] * (len(words) - 1)
    right = [None] * (len(words) - 1) + [x0 + inked[-1] + 1]
    gaps = [(x0 + a + 1, x0 + b) for a, b in zip(inked, inked[1:]) if b - a - 1 >= MIN_GAP_HEIGHTS * height]
    used = -1
    for k in range(len(words) - 1):
        estimate = (words[k].bbox[2] + words[k + 1].bbox[0]) / 2
        reach = max(SEARCH_HEIGHTS * height, 0.5 * min(_width(words[k]), _width(words[k + 1])))
        near = [i for i, (start, end) in enumerate(gaps) if i > used and abs((start + end) / 2 - estimate) <= reach]
        if near:
            used = min(near, key=lambda i: abs(sum(gaps[i]) / 2 - estimate))
            right[k], left[k + 1] = gaps[used]
    result = []
    for word, start, end in zip(words, left, right):
        a = float(start) if start is not None else word.bbox[0]
        b = float(end) if end is not None else word.bbox[2]
        result.append(replace(word, bbox=(a, word.bbox[1], max(b, a + 1.0), word.bbox[3])) if b > a else word)
    return result


def _width(word: WordResult) -> float:
    return word.bbox[2] - word.bbox[0]
