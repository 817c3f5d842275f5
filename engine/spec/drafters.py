"""The drafters behind one interface (see the package docstring)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.request import Request


class Drafter(ABC):
    """Proposes tokens to follow a request's output; stateless across requests."""

    name: str = ""

    def __init__(self, num_tokens: int):
        if num_tokens < 1:
            raise ValueError(f"a drafter proposes at least one token, got num_tokens={num_tokens}")
        self.num_tokens = num_tokens     # the most it proposes in one step

    @abstractmethod
    def propose(self, req: Request, k: int) -> list[int]:
        """Up to `k` (<= num_tokens) tokens to verify after the request's pending one."""


class ModelDrafter(Drafter):
    """The model's own draft of the whole output (`Request.draft_ids`, house-ocr's CTC reading)."""

    name = "model"

    def propose(self, req: Request, k: int) -> list[int]:
        return req.propose(k)


class NgramDrafter(Drafter):
    """Prompt lookup: match the last `max_n` .. `min_n` tokens of prompt + output earlier in them."""

    name = "ngram"

    def __init__(self, num_tokens: int, min_n: int = 2, max_n: int = 4):
        super().__init__(num_tokens)
        if not 1 <= min_n <= max_n:
            raise ValueError(f"n-gram sizes need 1 <= min <= max, got {min_n} and {max_n}")
        self.min_n, self.max_n = min_n, max_n

    def propose(self, req: Request, k: int) -> list[int]:
        return propose_ngram(req.prompt_ids + req.output_ids, k, self.min_n, self.max_n)


class GrammarDrafter(Drafter):
    """Jump-forward: where a request's grammar allows one continuation only (a JSON object's next
    key and its punctuation, the rest of an enum value), that text, tokenised, is the draft; the
    model verifies it like any other, so a tokenisation it would not choose costs one rejected
    token, never a different output. Elsewhere, and for requests without a grammar, `fallback`."""

    name = "grammar"

    def __init__(self, num_tokens: int, encode: Callable[[str], Sequence[int]], fallback: Drafter | None = None):
        super().__init__(num_tokens)
        self.encode = encode
        self.fallback = fallback

    def propose(self, req: Request, k: int) -> list[int]:
        grammar = req.grammar_state
        if grammar is not None:
            forced = grammar.jump_forward_string()
            if forced:
                ids = list(self.encode(forced)[:k])
                if ids:
                    return ids
        if self.fallback is None:
            return []
        return self.fallback.propose(req, min(k, self.fallback.num_tokens))


class DraftModelDrafter(Drafter):
    """A smaller model with the same tokenizer proposes its greedy continuation. It runs in this
    process on an engine of its own (`draft_engine`: its own KV pool and radix cache, same tenant
    as the request), so each call extends the sequence it drafted for last time: only the tokens
    accepted since then are prefilled, then `k` decode steps. Text requests only (the draft model
    does not see images); a drafted id outside the target's vocabulary ends the draft."""

    name = "draft_model"

    def __init__(self, num_tokens: int, draft_engine, vocab_size: int):
        super().__init__(num_tokens)
        self.engine = draft_engine
        self.vocab_size = vocab_size

    def propose(self, req: Request, k: int) -> list[int]:
        from engine.errors import PromptTooLongError
        from engine.sampling_params import SamplingParams

        if req.multimodal is not None or k <= 0:
            return []
        context = req.prompt_ids + req.output_ids
        room = self.engine.context_length - len(context)
        if room < 1:
            return []
        try:
            out = self.engine.generate([context], SamplingParams(temperature=0.0, max_tokens=min(k, room)),
                                       tenant=req.tenant)[0]
        except PromptTooLongError:
            return []
        draft = []
        for token in out.token_ids[:k]:
            if token >= self.vocab_size:
                break
            draft.append(token)
        return draft


def propose_ngram(tokens: Sequence[int], k: int, min_n: int, max_n: int) -> list[int]:
    """The up-to-`k` tokens that followed the latest earlier occurrence of the longest suffix of
    `tokens` (of `max_n` down to `min_n` tokens) that occurs earlier; [] when none does.

    The latest occurrence, because in a document being copied the nearest earlier context is the
    likeliest to continue the same way; the longest suffix first, because a longer match is less
    often a coincidence. Linear in len(tokens) per size tried."""
    total = len(tokens)
    if k <= 0 or total < min_n + 1:
        return []
    tokens = list(tokens)
    for n in range(min(max_n, total - 1), min_n - 1, -1):
        suffix = tokens[total - n:]
        first = suffix[0]
        # latest start s < total - n with tokens[s:s+n] == suffix and a token after it
        for start in range(total - n - 1, -1, -1):
            if tokens[start] == first and tokens[start:start + n] == suffix:
                follow = tokens[start + n:start + n + k]
                if follow:
                    return follow
    return []
