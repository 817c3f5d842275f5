"""The loop guard: a request option that ends a generation caught repeating itself.

Vision-language OCR models fall into loops (a phrase, a dot or a space written again and
again until the token limit). DeepSeek-OCR's serving masks the token that would repeat an
n-gram seen in a window; we stop instead, with finish reason "repetition", so the client
learns the reading was cut and can mark it (the output up to the stop is the model's own,
token for token what the unguarded request gives up to there).

When it acts: the output ends in more than `max_repeats` back-to-back copies of one n-gram
of 1 to `max_ngram_size` tokens (the tail is periodic with that period), and that run covers
at least `min_run_tokens` tokens. Only the length condition limits a short unit, which is
the point: a dot leader is a 1- or 2-gram repeated 80 times, a row of zeros or a zero-filled
listing not much less, and a real line is never as long as a loop's run. The run is
counted in the output only, never the prompt.

Cost: one vectorised compare of the new token against the previous `max_ngram_size`
tokens, per token. `LoopGuard.append` is called for every kept token in order (drafted
ones included, engine/process.py), so a speculative step stops at exactly the token a
one-token step would stop at.

| field   | meaning                                                                   |
|---------|---------------------------------------------------------------------------|
| _ids    | the output tokens seen so far (ring of the last max_ngram_size is enough; |
|         | kept whole: an output is at most the context length)                      |
| _runs   | _runs[p-1]: trailing positions i with ids[i] == ids[i - p], so the tail   |
|         | is p-periodic over _runs[p-1] + p tokens                                  |
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.errors import InvalidRequestError

REPETITION_FINISH_REASON = "repetition"
# Defaults, chosen on the real-page set (docs/BENCHMARKS.md, bench/loop_guard.py): the longest
# repeated run in a real line there is a 160-character dot leader (memman's index); the house
# model's loops run to its 512-token line limit.
DEFAULT_MAX_REPEATS = 2
DEFAULT_MIN_RUN_TOKENS = 256
DEFAULT_MAX_NGRAM_SIZE = 128
# Bounds on what a request may ask: the per-token compare is max_ngram_size wide.
LIMIT_MAX_NGRAM_SIZE = 1024
LIMIT_MAX_REPEATS = 10_000
PARAM = "loop_guard"


@dataclass(frozen=True)
class LoopGuardSpec:
    """A request's loop-guard limits (SamplingParams.loop_guard; None there: no guard)."""

    max_repeats: int = DEFAULT_MAX_REPEATS        # copies of one n-gram allowed back to back
    min_run_tokens: int = DEFAULT_MIN_RUN_TOKENS  # a repeated run shorter than this never stops
    max_ngram_size: int = DEFAULT_MAX_NGRAM_SIZE  # the longest repeating unit looked for, in tokens

    def validate(self) -> LoopGuardSpec:
        _check("max_repeats", self.max_repeats, 1, LIMIT_MAX_REPEATS)
        _check("min_run_tokens", self.min_run_tokens, 2, None)
        _check("max_ngram_size", self.max_ngram_size, 1, LIMIT_MAX_NGRAM_SIZE)
        return self

    @classmethod
    def from_option(cls, value) -> LoopGuardSpec | None:
        """A client's `loop_guard`: true (the defaults), false or None (off), or an object of
        the fields above (the ones left out keep their defaults)."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, LoopGuardSpec):
            return value.validate()
        if not isinstance(value, dict):
            raise InvalidRequestError(f"loop_guard must be true, false or an object, got {value!r}", PARAM)
        unknown = sorted(set(value) - {"max_repeats", "min_run_tokens", "max_ngram_size"})
        if unknown:
            raise InvalidRequestError(f"loop_guard has no field {unknown[0]!r}; its fields are max_repeats, "
                                      f"min_run_tokens and max_ngram_size", PARAM)
        return cls(**value).validate()


def _check(name: str, value, lo: int, hi: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequestError(f"loop_guard.{name} must be an integer, got {value!r}", PARAM)
    if value < lo or (hi is not None and value > hi):
        bounds = f">= {lo}" if hi is None else f"between {lo} and {hi}"
        raise InvalidRequestError(f"loop_guard.{name} must be {bounds}, got {value}", PARAM)


class LoopGuard:
    """One request's detector. `append` each output token in order; True once it loops."""

    def __init__(self, spec: LoopGuardSpec, max_output_len: int):
        self.spec = spec
        periods = np.arange(1, spec.max_ngram_size + 1)
        # a p-periodic tail trips once it holds max_repeats + 1 whole copies and min_run_tokens tokens
        self._thresholds = np.maximum(spec.min_run_tokens, (spec.max_repeats + 1) * periods)
        self._periods = periods
        self._ids = np.empty(max(max_output_len, 1), dtype=np.int64)
        self._runs = np.zeros(spec.max_ngram_size, dtype=np.int64)
        self.num_tokens = 0
        self.period: int | None = None   # the repeating unit's length, once tripped

    def append(self, token_id: int) -> bool:
        n = self.num_tokens
        if n == len(self._ids):   # past the planned length (a replaced output): grow
            self._ids = np.concatenate([self._ids, np.empty_like(self._ids)])
        k = min(n, len(self._runs))
        if k:
            earlier = self._ids[n - k:n][::-1]            # ids[n-1], ids[n-2], ... = period 1, 2, ...
            runs = self._runs[:k]
            np.copyto(runs, np.where(earlier == token_id, runs + 1, 0))
        self._ids[n] = token_id
        self.num_tokens = n + 1
        if k == 0:
            return False
        tripped = np.flatnonzero(self._runs[:k] + self._periods[:k] >= self._thresholds[:k])
        if tripped.size == 0:
            return False
        self.period = int(self._periods[tripped[0]])
        return True
