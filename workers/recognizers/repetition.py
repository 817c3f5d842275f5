"""What a recogniser keeps of a reading the engine's loop guard stopped.

Our engine ends a guarded request with finish reason "repetition" once its output repeats one
n-gram past the guard's limits (engine/loop_guard.py). The reply then holds the text read
before the loop and the loop itself, up to the point where it was stopped. `cut_repetition`
keeps the first and one copy of the repeated unit, because the model usually loops on
something it did see once (a leader's dot, a word of the line); the copies after it are the loop.

`loop_guard_option` is what an OCR request sends: the engine's defaults, with the shortest
repeated run it may stop set to half the task's token budget, so a reply must loop through
half its budget before it is cut (a table read whole repeats its rows legitimately).
"""
from __future__ import annotations

import numpy as np

REPETITION_FINISH_REASON = "repetition"   # the engine's (engine/loop_guard.py; workers never import the engine)
MAX_PERIOD = 512                          # characters: longer than any unit the engine looks for
MIN_RUN = 8   # characters: a shorter repeated end ("all", "...") is the text's own, not what was stopped


def loop_guard_option(max_tokens: int) -> dict[str, int]:
    """The `loop_guard` field of an OCR request whose reply may have `max_tokens` tokens."""
    return {"min_run_tokens": max(2, max_tokens // 2)}


def cut_repetition(text: str) -> str:
    """`text` without the repeated copies at its end: everything before the longest periodic
    tail, then one copy of its unit. Text whose end does not repeat is returned as it is. Give
    the reply as it came (a loop of spaces is a loop too), and strip after."""
    chars = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    best_span, best_period = 0, 0
    for period in range(1, min(MAX_PERIOD, len(chars) // 2) + 1):
        same = chars[period:] == chars[:-period]        # same[i]: chars[i + period] == chars[i]
        misses = np.flatnonzero(~same)
        run = len(same) - (misses[-1] + 1 if misses.size else 0)   # trailing matches
        span = run + period
        if span >= max(2 * period, MIN_RUN) and span > best_span:   # two whole copies; shortest unit on a tie
            best_span, best_period = span, period
    if best_period == 0:
        return text
    return text[:len(text) - best_span + best_period]
