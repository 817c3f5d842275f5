"""When a request stops, and what text it streams on the way.

A request ends with "stop" on EOS (unless ignore_eos), on one of its
stop_token_ids, or when its output text contains a stop string or a match of a
stop regex; with "length" after max_tokens tokens. A stop match on the same
token as max_tokens wins ("stop").

The text is cut at the start of what actually matched (DESIGN invariant 5),
or just after it with include_stop_str_in_output; of several matches the
earliest-starting wins (the longest, on a tie). A stop token's own text (EOS or
stop_token_ids) is likewise left out unless include_stop_str_in_output.

Streaming never hands out text that a later stop could cut. The checker holds
back the last `hold_back_len` characters:

    len(longest stop string) - 1          so a stop string spanning tokens is caught;
    regex_hold_back_len (default 64)      when the request has stop regexes.

| field          | meaning                                                        |
|----------------|----------------------------------------------------------------|
| _text          | the complete output text decoded so far, untrimmed             |
| _num_streamed  | characters of _text already handed out; never decreases and   |
|                | never passes the start of a stop match still to be found       |
| _final_text    | set once finished: the request's text (trimmed)                |

Search cost per token is O(1) in the output length:
- a stop string is searched in the new text plus the len(stop) - 1 characters
  before it (a match must end in the new text, or it was found earlier);
- a regex is searched for matches that *start* in the not-yet-streamed tail
  (the last `regex_hold_back_len` characters plus the new text). It may run on
  past that, and lookbehind and `^` see the whole output (`^` is the start of
  the output). A match that would start further back is not found: give a
  larger `regex_hold_back_len` for patterns that span more text.

Regex time is bounded twice: one search may take at most
`REGEX_SEARCH_TIMEOUT_S` (a pattern that passes it is dropped for the request,
with a warning), and all the searches of one request together at most
`regex_budget_s` (`regex_time_s` counts what they took; each search is given
no more than what is left). A request whose budget runs out ends with finish
reason "stop_regex_timeout" and the text already streamed (the held-back tail,
which a stop could still have cut, is left out): a slow pattern costs one
request a bounded amount of engine time however many tokens it makes.
"""
from __future__ import annotations

import logging
import time

import regex
from collections.abc import Sequence
from dataclasses import dataclass

from engine.detokenizer import IncrementalDetokenizer
from engine.sampling_params import SamplingParams

REGEX_SEARCH_TIMEOUT_S = 0.05
DEFAULT_REGEX_BUDGET_S = 0.5       # all stop-regex searches of one request together
REGEX_BUDGET_FINISH_REASON = "stop_regex_timeout"
_log = logging.getLogger(__name__)
DEFAULT_REGEX_HOLD_BACK_LEN = 64   # characters


@dataclass
class StopResult:
    delta_text: str                       # text safe to stream now
    finish_reason: str | None = None      # None, "stop", "length" or REGEX_BUDGET_FINISH_REASON
    matched_stop: str | int | None = None  # the stop string, regex match text or token id


class StopChecker:
    def __init__(self, params: SamplingParams, eos_token_ids: set[int], tokenizer,
                 prompt_ids: Sequence[int] | None = None,
                 regex_hold_back_len: int = DEFAULT_REGEX_HOLD_BACK_LEN,
                 regex_budget_s: float = DEFAULT_REGEX_BUDGET_S):
        assert regex_hold_back_len >= 0 and regex_budget_s > 0
        self.params = params
        self._eos_token_ids = frozenset() if params.ignore_eos else frozenset(eos_token_ids)
        self._stop_token_ids = frozenset(params.stop_token_ids)
        self._stop_strings = list(params.stop)
        self._stop_regexes = [regex.compile(p) for p in params.stop_regex]
        self.regex_budget_s = regex_budget_s
        self.regex_time_s = 0.0            # charged to the budget: every stop-regex search so far
        longest = max((len(s) for s in self._stop_strings), default=0)
        self.hold_back_len = max(longest - 1, regex_hold_back_len if self._stop_regexes else 0, 0)
        self._detokenizer = IncrementalDetokenizer(tokenizer, prompt_ids, params.skip_special_tokens)
        self._text = ""
        self._num_streamed = 0
        self._final_text: str | None = None
        self.finish_reason: str | None = None
        self.matched_stop: str | int | None = None

    @property
    def finished(self) -> bool:
        return self._final_text is not None

    @property
    def text(self) -> str:
        """The concatenation of every delta so far; once finished, the request's final text."""
        if self._final_text is not None:
            return self._final_text
        return self._text[:self._num_streamed]

    def append(self, token_id: int, num_output_tokens: int) -> StopResult:
        """Take one generated token. num_output_tokens counts it (for max_tokens)."""
        assert not self.finished, "token appended to a finished request"
        if token_id in self._eos_token_ids or token_id in self._stop_token_ids:
            if self.params.include_stop_str_in_output:
                self._text += self._detokenizer.append(token_id)
            self._text += self._detokenizer.flush()
            return self._finish(len(self._text), "stop", token_id)
        new_text = self._detokenizer.append(token_id)
        if new_text:
            num_old_chars = len(self._text)
            self._text += new_text
            match = self._find_stop(num_old_chars)
            if match is None and self._regex_budget_spent:
                # Nothing found within the budget: end here rather than search on unbounded.
                return self._finish(self._num_streamed, REGEX_BUDGET_FINISH_REASON, None)
            if match is not None:
                start, end, matched = match
                cut = end if self.params.include_stop_str_in_output else start
                return self._finish(cut, "stop", matched)
        if num_output_tokens >= self.params.max_tokens:
            return StopResult(self.flush(), "length")
        return StopResult(self._stream())

    def flush(self, finish_reason: str = "length") -> str:
        """Finish without a stop match (max_tokens, or the engine's own limit):
        return the held-back text, incomplete trailing character included."""
        if self.finished:
            return ""
        self._text += self._detokenizer.flush()
        return self._finish(len(self._text), finish_reason, None).delta_text

    def _find_stop(self, num_old_chars: int) -> tuple[int, int, str] | None:
        """(start, end, matched text) of the earliest stop match that involves new text."""
        best: tuple[int, int, str] | None = None
        for stop in self._stop_strings:
            search_from = max(0, num_old_chars - len(stop) + 1)
            start = self._text.find(stop, search_from)
            if start >= 0:
                best = _earlier(best, (start, start + len(stop), stop))
        for pattern in list(self._stop_regexes):
            timeout = min(REGEX_SEARCH_TIMEOUT_S, self.regex_budget_s - self.regex_time_s)
            if timeout <= 0:
                break
            started = time.perf_counter()
            try:
                # `regex` rather than `re`: a search can be given a deadline, so a
                # catastrophically backtracking pattern cannot stall the engine thread.
                for m in pattern.finditer(self._text, self._num_streamed, timeout=timeout):
                    if m.end() > m.start():  # an empty match stops nothing
                        best = _earlier(best, (m.start(), m.end(), m.group(0)))
                        break
            except TimeoutError:
                if timeout == REGEX_SEARCH_TIMEOUT_S:
                    _log.warning("stop regex %r exceeded %.2fs; it is dropped for this request",
                                 pattern.pattern, REGEX_SEARCH_TIMEOUT_S)
                    self._stop_regexes.remove(pattern)
                else:   # the request's budget ran out first
                    self.regex_time_s = self.regex_budget_s
            finally:
                self.regex_time_s = min(self.regex_budget_s, self.regex_time_s + time.perf_counter() - started)
        assert best is None or best[0] >= self._num_streamed, "a stop match inside streamed text"
        return best

    @property
    def _regex_budget_spent(self) -> bool:
        return bool(self._stop_regexes) and self.regex_time_s >= self.regex_budget_s

    def _stream(self) -> str:
        end = len(self._text) - self.hold_back_len
        if end <= self._num_streamed:
            return ""
        delta = self._text[self._num_streamed:end]
        self._num_streamed = end
        return delta

    def _finish(self, cut: int, finish_reason: str, matched: str | int | None) -> StopResult:
        assert cut >= self._num_streamed, "cutting text that was already streamed"
        self._final_text = self._text[:cut]
        delta = self._final_text[self._num_streamed:]
        self._num_streamed = cut
        self.finish_reason, self.matched_stop = finish_reason, matched
        return StopResult(delta, finish_reason, matched)


def _earlier(best: tuple[int, int, str] | None, candidate: tuple[int, int, str]) -> tuple[int, int, str]:
    if best is None or candidate[0] < best[0] or (candidate[0] == best[0] and candidate[1] > best[1]):
        return candidate
    return best
