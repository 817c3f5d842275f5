"""Where the output so far leaves off in a draft of the whole output, kept from step to step.

A request's output only grows (retraction keeps it), so the cursor never rescans what it has
compared: each step costs the tokens appended since the last one, and a realignment a few
dictionary look-ups, whatever the draft's length.

| field       | invariant                                                              |
|-------------|------------------------------------------------------------------------|
| num_matched | out[:num_matched] == draft[:num_matched], compared once each           |
| diverged    | the output has left the draft's head for good (a mismatch, or it grew  |
|             | past the draft): from then on only realignment places it               |
| _ends       | n -> {the draft's n-gram: its end positions, ascending}, for n = 4, 3, |
|             | 2; built once, at the first realignment                                |
"""
from __future__ import annotations

import bisect
from collections.abc import Sequence

TAIL_SIZES = (4, 3, 2)


class DraftCursor:
    """One draft of the whole output (a client's text layer, the model's CTC reading) and where
    the output so far leaves off in it (`locate`)."""

    def __init__(self, draft: Sequence[int]):
        self.draft = draft
        self.num_matched = 0
        self.diverged = False
        self._ends: dict[int, dict[tuple[int, ...], list[int]]] | None = None

    def locate(self, out: Sequence[int]) -> tuple[int, bool] | None:
        """Where in the draft the output leaves off, and whether the draft starts with the output
        exactly (else realigned: after the place nearest the output's length where the output's
        final 4, 3 or 2 tokens occur, since a reading that skipped or added a character stays
        roughly in step with the draft and a short tail like ' t' occurs all over a line); None
        where neither holds."""
        draft = self.draft
        if not draft:
            return None
        m = len(out)
        if m < self.num_matched:      # not this request's output any more: start again
            self.num_matched, self.diverged = 0, False
        if not self.diverged:
            i, end = self.num_matched, min(m, len(draft))
            while i < end and draft[i] == out[i]:
                i += 1
            self.num_matched = i
            if i == m:
                return m, True
            self.diverged = True
        return self._realign(out)

    def _realign(self, out: Sequence[int]) -> tuple[int, bool] | None:
        m = len(out)
        if self._ends is None:
            self._ends = _ngram_ends(self.draft)
        for n in TAIL_SIZES:
            if m < n:
                continue
            ends = self._ends[n].get(tuple(out[m - n:]))
            if ends:
                # the nearest end to m; at equal distance the later one (as min by (|e - m|, -e))
                at = bisect.bisect_left(ends, m)
                near = [ends[j] for j in (at - 1, at) if 0 <= j < len(ends)]
                return min(near, key=lambda e: (abs(e - m), -e)), False
        return None


def _ngram_ends(draft: Sequence[int]) -> dict[int, dict[tuple[int, ...], list[int]]]:
    ids = list(draft)
    index: dict[int, dict[tuple[int, ...], list[int]]] = {n: {} for n in TAIL_SIZES}
    for n, ends in index.items():
        for start in range(len(ids) - n + 1):
            ends.setdefault(tuple(ids[start:start + n]), []).append(start + n)
    return index
