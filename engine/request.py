"""A request's life inside the engine, and what the engine hands back."""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from engine.loop_guard import LoopGuard
from engine.sampler import SamplerState, TokenLogprobs
from engine.sampling_params import SamplingParams
from engine.stop import StopChecker

if TYPE_CHECKING:
    from engine.multimodal.inputs import MultimodalInputs


class RequestStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass
class RequestOutput:
    request_id: str
    delta_text: str
    text: str                      # excludes a matched stop unless the request keeps it
    delta_token_ids: list[int]
    token_ids: list[int]
    delta_logprobs: list[TokenLogprobs]
    finished: bool
    finish_reason: str | None      # "stop" | "length" | "abort" | "stop_regex_timeout" (engine.stop)
                                   # | "repetition" (engine.loop_guard)
    num_prompt_tokens: int
    num_cached_tokens: int
    num_output_tokens: int


@dataclass(eq=False)
class Request:
    """Everything that shapes a request's output lives here, so retraction
    (dropping its KV and re-queueing it) changes nothing it will produce.

    | field          | meaning                                                        |
    |----------------|----------------------------------------------------------------|
    | kv_slots       | slots of tokens [0, num_computed): the first `num_locked` are  |
    |                | the radix cache's (locked via cache_node), the rest its own    |
    | num_computed   | tokens whose K/V is in the pool                                |
    | output_ids     | generated tokens; the last one has no K/V yet                  |
    | multimodal     | images of a VLM request: their spans in prompt_ids (expanded), |
    |                | pixels, M-RoPE positions; None for text-only requests          |
    | draft          | speculative decoding's state (engine/spec/state.py: its        |
    |                | drafter, drafts of the whole output, counts, house-ocr's       |
    |                | rescoring), or None: it neither drafts nor is rescored         |
    | spec_ids       | the drafted tokens the current step verifies after the pending |
    |                | one(s) (set by the scheduler, cleared once the step is applied)|
    | loop_guard     | engine.loop_guard.LoopGuard over output_ids, or None (off);    |
    |                | kept across retraction like everything else here               |
    """

    request_id: str
    owner_id: int                  # KV pool owner id (>= 1)
    prompt_ids: list[int]
    params: SamplingParams
    sampler_state: SamplerState
    stop_checker: StopChecker
    max_output_len: int            # max_tokens, clamped to the context length
    tenant: str = ""
    grammar_state: object | None = None   # engine.grammar.GrammarState; kept across retraction
    arrival_time: float = field(default_factory=time.monotonic)
    multimodal: MultimodalInputs | None = None
    # engine.spec.state.DraftState, built by engine/spec/policy.py; typed `object`: engine/spec imports
    # this module, and importing it back would close a circle (tests/test_import_graph.py)
    draft: object | None = None
    loop_guard: LoopGuard | None = None

    status: RequestStatus = RequestStatus.WAITING
    output_ids: list[int] = field(default_factory=list)
    kv_slots: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.int64))
    num_computed: int = 0
    num_locked: int = 0
    cache_node: object | None = None
    num_cached_tokens: int = -1    # prefix-cache hit at first admission (-1: not yet admitted)
    num_retractions: int = 0
    first_token_time: float | None = None
    last_token_time: float | None = None
    finish_reason: str | None = None
    aborted: bool = False
    spec_ids: list[int] = field(default_factory=list)
    # Output not yet handed to the caller (drained by the engine after each step).
    pending_text: str = ""
    pending_token_ids: list[int] = field(default_factory=list)
    pending_logprobs: list[TokenLogprobs] = field(default_factory=list)

    @property
    def all_ids(self) -> list[int]:
        return self.prompt_ids + self.output_ids

    def token_ids(self, start: int, end: int) -> list[int]:
        """all_ids[start:end] without building all_ids (a decode step needs one token)."""
        num_prompt = len(self.prompt_ids)
        if start >= num_prompt:
            return self.output_ids[start - num_prompt : end - num_prompt]
        return self.prompt_ids[start:end] + self.output_ids[: max(0, end - num_prompt)]

    @property
    def cache_key_ids(self) -> list[int]:
        """The radix-cache key of all_ids: an image's tokens become ids derived from its
        content hash, so only the same image can share their K/V (multimodal/prompt_builder.py)."""
        if self.multimodal is None:
            return self.all_ids
        return self.multimodal.cache_key_ids + self.output_ids

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_ids) + len(self.output_ids)

    @property
    def num_pending(self) -> int:
        """Tokens still to run through the model before the next one can be sampled."""
        return self.num_tokens - self.num_computed

    @property
    def finished(self) -> bool:
        return self.status is RequestStatus.FINISHED

    def take_output(self) -> RequestOutput:
        out = RequestOutput(
            request_id=self.request_id,
            delta_text=self.pending_text,
            text=self.stop_checker.text,
            delta_token_ids=self.pending_token_ids,
            token_ids=list(self.output_ids),
            delta_logprobs=self.pending_logprobs,
            finished=self.finished,
            finish_reason=self.finish_reason,
            num_prompt_tokens=len(self.prompt_ids),
            num_cached_tokens=max(self.num_cached_tokens, 0),
            num_output_tokens=len(self.output_ids),
        )
        self.pending_text, self.pending_token_ids, self.pending_logprobs = "", [], []
        return out
