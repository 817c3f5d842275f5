"""How one request wants its tokens chosen and when it wants to stop.

Ranges follow the OpenAI API where it has the parameter and vLLM/Hugging Face
where it does not. `validate` is the one place user values are checked; the
sampler and stop checker only assert.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from engine.errors import InvalidRequestError
from engine.loop_guard import LoopGuardSpec

# Below this temperature a request is greedy: dividing logits by it would
# overflow fp32 anyway, and argmax is what such a temperature means.
GREEDY_TEMPERATURE = 1e-5
MAX_TEMPERATURE = 2.0
MAX_ABS_PENALTY = 2.0          # OpenAI's range for frequency and presence penalties
MAX_LOGPROBS = 20              # OpenAI's cap on top_logprobs
# Caps keep the per-token stop search and the streaming hold-back small.
MAX_NUM_STOP_STRINGS = 32
MAX_STOP_STRING_LEN = 256      # characters
MAX_NUM_STOP_REGEXES = 8
MAX_STOP_REGEX_LEN = 512       # characters of pattern
MAX_NUM_STOP_TOKEN_IDS = 256
MAX_DRAFT_TEXT_LEN = 65536     # characters
# torch.Generator.manual_seed accepts exactly this range.
MIN_SEED, MAX_SEED = -(2**63), 2**64 - 1


@dataclass
class SamplingParams:
    max_tokens: int = 256
    temperature: float = 1.0      # 0 => greedy
    top_p: float = 1.0
    top_k: int = 0                # 0 or -1 => off
    min_p: float = 0.0
    repetition_penalty: float = 1.0   # Hugging Face: over prompt and output ids; logit > 0 divided, < 0 multiplied
    frequency_penalty: float = 0.0    # OpenAI: over output ids, logit -= f * count
    presence_penalty: float = 0.0     # OpenAI: over output ids, logit -= p * (count > 0)
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    stop_regex: list[str] = field(default_factory=list)
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False
    include_stop_str_in_output: bool = False
    logprobs: int | None = None   # None: none; 0: the chosen token's; k > 0: also the top k
    skip_special_tokens: bool = True
    # Constrained decoding (engine.grammar.GrammarSpec): JSON schema, JSON object, regex or EBNF.
    grammar: object | None = None
    # False: no speculative drafts for this request (the scheduler skips it), whatever the engine
    # drafts for others. Its tokens are the same either way (engine/spec/verify.py); the switch
    # is for measuring, and for a client that knows its output will not copy its prompt.
    speculative: bool = True
    # What the client expects the output to be (a PDF text layer's line, a previous reading):
    # tokenised, drafted and verified like any draft (`text_layer` in the metrics), never
    # trusted: the output is the model's own, token for token what it is without it.
    draft_text: str | None = None
    # The loop guard (engine/loop_guard.py): stop with finish reason "repetition" once the output
    # repeats one n-gram past its limits. None: off (plain chat's default); `validate` also takes
    # true (the default limits), false, or a dict of the limits, as the HTTP API sends them.
    loop_guard: LoopGuardSpec | None = None

    @property
    def is_greedy(self) -> bool:
        return self.temperature < GREEDY_TEMPERATURE

    @property
    def allows_draft(self) -> bool:
        """Whether speculative decoding may verify drafts for this request: plain greedy
        (argmax of the raw logits), so accepting a drafted token is exactly sampling it.

        Logprobs, chosen or top-k, do not stand in the way: a greedy row's logprobs are the
        log-softmax of the same raw logits, which verification (and rescoring) compute for each
        token they keep, as decoding one token a step would (engine/spec/verify.py)."""
        return (self.is_greedy and self.repetition_penalty == 1.0 and self.frequency_penalty == 0.0
                and self.presence_penalty == 0.0 and self.grammar is None)

    @property
    def top_k_enabled(self) -> bool:
        return self.top_k > 0

    def validate(self, vocab_size: int | None = None) -> SamplingParams:
        """Check every field; raise InvalidRequestError naming the first bad one.

        Normalises in place (a lone stop string or None becomes a list) and
        returns self, so `SamplingParams(...).validate()` reads as one step."""
        _check_int("max_tokens", self.max_tokens, lo=1)
        _check_float("temperature", self.temperature, 0.0, MAX_TEMPERATURE)
        _check_float("top_p", self.top_p, 0.0, 1.0, lo_open=True)
        _check_int("top_k", self.top_k, lo=-1)
        _check_float("min_p", self.min_p, 0.0, 1.0)
        _check_float("repetition_penalty", self.repetition_penalty, 0.0, math.inf, lo_open=True)
        _check_float("frequency_penalty", self.frequency_penalty, -MAX_ABS_PENALTY, MAX_ABS_PENALTY)
        _check_float("presence_penalty", self.presence_penalty, -MAX_ABS_PENALTY, MAX_ABS_PENALTY)
        if self.seed is not None:
            _check_int("seed", self.seed, lo=MIN_SEED, hi=MAX_SEED)
        if self.logprobs is not None:
            _check_int("logprobs", self.logprobs, lo=0, hi=MAX_LOGPROBS)
        for name in ("ignore_eos", "include_stop_str_in_output", "skip_special_tokens", "speculative"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidRequestError(f"{name} must be true or false, got {getattr(self, name)!r}", name)
        if self.draft_text is not None:
            if not isinstance(self.draft_text, str):
                raise InvalidRequestError(f"draft_text must be a string, got {type(self.draft_text).__name__}",
                                          "draft_text")
            if len(self.draft_text) > MAX_DRAFT_TEXT_LEN:
                raise InvalidRequestError(f"draft_text has {len(self.draft_text)} characters, more than the limit "
                                          f"of {MAX_DRAFT_TEXT_LEN}", "draft_text")
        self.loop_guard = LoopGuardSpec.from_option(self.loop_guard)
        self.stop = _as_list("stop", self.stop)
        self.stop_regex = _as_list("stop_regex", self.stop_regex)
        self.stop_token_ids = _as_list("stop_token_ids", self.stop_token_ids)
        self._validate_stop_strings()
        self._validate_stop_regexes()
        self._validate_stop_token_ids(vocab_size)
        return self

    def _validate_stop_strings(self) -> None:
        if len(self.stop) > MAX_NUM_STOP_STRINGS:
            raise InvalidRequestError(
                f"stop may hold at most {MAX_NUM_STOP_STRINGS} strings, got {len(self.stop)}", "stop")
        for i, s in enumerate(self.stop):
            if not isinstance(s, str):
                raise InvalidRequestError(f"stop[{i}] must be a string, got {type(s).__name__}", "stop")
            if not s:
                raise InvalidRequestError(f"stop[{i}] is empty; stop strings must be non-empty", "stop")
            if len(s) > MAX_STOP_STRING_LEN:
                raise InvalidRequestError(
                    f"stop[{i}] has {len(s)} characters, more than the limit of {MAX_STOP_STRING_LEN}", "stop")

    def _validate_stop_regexes(self) -> None:
        if len(self.stop_regex) > MAX_NUM_STOP_REGEXES:
            raise InvalidRequestError(
                f"stop_regex may hold at most {MAX_NUM_STOP_REGEXES} patterns, got {len(self.stop_regex)}",
                "stop_regex")
        for i, pattern in enumerate(self.stop_regex):
            if not isinstance(pattern, str):
                raise InvalidRequestError(
                    f"stop_regex[{i}] must be a string, got {type(pattern).__name__}", "stop_regex")
            if len(pattern) > MAX_STOP_REGEX_LEN:
                raise InvalidRequestError(
                    f"stop_regex[{i}] has {len(pattern)} characters, more than the limit of {MAX_STOP_REGEX_LEN}",
                    "stop_regex")
            try:
                compiled = re.compile(pattern)
            except re.error as e:
                raise InvalidRequestError(
                    f"stop_regex[{i}] is not a valid Python regular expression: {e}", "stop_regex") from None
            if compiled.fullmatch("") is not None:
                # It would stop every request before its first character.
                raise InvalidRequestError(
                    f"stop_regex[{i}] ({pattern!r}) matches the empty string; a stop pattern must need "
                    f"at least one character", "stop_regex")

    def _validate_stop_token_ids(self, vocab_size: int | None) -> None:
        if len(self.stop_token_ids) > MAX_NUM_STOP_TOKEN_IDS:
            raise InvalidRequestError(
                f"stop_token_ids may hold at most {MAX_NUM_STOP_TOKEN_IDS} ids, got {len(self.stop_token_ids)}",
                "stop_token_ids")
        hi = None if vocab_size is None else vocab_size - 1
        for i, token_id in enumerate(self.stop_token_ids):
            _check_int(f"stop_token_ids[{i}]", token_id, lo=0, hi=hi, param="stop_token_ids")


def _check_int(name: str, value, lo: int | None = None, hi: int | None = None, param: str | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequestError(f"{name} must be an integer, got {value!r}", param or name)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f">= {lo}" if hi is None else f"between {lo} and {hi}"
        raise InvalidRequestError(f"{name} must be {bounds}, got {value}", param or name)


def _check_float(name: str, value, lo: float, hi: float, lo_open: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidRequestError(f"{name} must be a number, got {value!r}", name)
    if not math.isfinite(value) or value > hi or value < lo or (lo_open and value == lo):
        if hi == math.inf:
            bounds = f"greater than {lo:g}" if lo_open else f"at least {lo:g}"
        else:
            bounds = f"in ({lo:g}, {hi:g}]" if lo_open else f"between {lo:g} and {hi:g}"
        raise InvalidRequestError(f"{name} must be {bounds}, got {value}", name)


def _as_list(name: str, value) -> list:
    if value is None:
        return []
    if isinstance(value, str) and name != "stop_token_ids":
        return [value]  # OpenAI accepts a lone stop string
    if isinstance(value, (list, tuple)):
        return list(value)
    raise InvalidRequestError(f"{name} must be a list, got {type(value).__name__}", name)
