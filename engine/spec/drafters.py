"""The drafters behind one interface (see the package docstring)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from engine.spec.align import DraftCursor

if TYPE_CHECKING:
    from engine.request import Request


class Drafter(ABC):
    """Proposes tokens to follow a request's output; stateless across requests. `name` is the
    drafting method the metrics count its drafts under (engine/metrics.py's SPEC_METHODS)."""

    name: str = ""

    def __init__(self, num_tokens: int):
        if num_tokens < 1:
            raise ValueError(f"a drafter proposes at least one token, got num_tokens={num_tokens}")
        self.num_tokens = num_tokens     # the most it proposes in one step

    @abstractmethod
    def propose(self, req: Request, k: int) -> list[int]:
        """Up to `k` (<= num_tokens) tokens to verify after the request's pending one."""

    def draft(self, req: Request, k: int) -> tuple[list[int], str]:
        """`propose`'s tokens and the method that made them (a wrapper's may be the wrapped one's)."""
        return self.propose(req, k), self.name

    def after_step(self, scheduled, starts: list[int], verdicts: list) -> None:
        """Called once a step after its tokens are chosen (`verify.decide`) and before they are
        applied, with the scheduled batch, each request's position before the step and its
        verdict: a drafter that reads the step's hidden states (MTP) drafts for the next here."""

    def prepare(self, reqs: list[Request]) -> None:
        """Called once a step, before `propose`, with the decoding requests this drafter serves:
        a drafter that runs a model drafts for all of them in one batch here."""

    @property
    def preparer(self) -> Drafter:
        """The drafter whose `prepare` this one's requests go to (a wrapper's: the one it wraps)."""
        return self


class ModelDrafter(Drafter):
    """The model's own draft of the whole output (`DraftState.model_ids`): today only house-ocr's
    CTC reading of its line, hence the method's name."""

    name = "ctc"

    def propose(self, req: Request, k: int) -> list[int]:
        return _follow(req.draft.model_cursor, req.output_ids, k)


class TextDrafter(Drafter):
    """The client's draft of the whole output (`SamplingParams.draft_text`, tokenised into
    `DraftState.text_ids`): a PDF text layer's line, which the model verifies instead of the
    pipeline trusting it (`text_layer="verify"`). Where the model has a draft of its own too
    (house-ocr's CTC reading), the one the output so far agrees with word for word drafts, the
    client's first; past a place where the output left both (a misread, a ligature the layer
    spells as one character), the realigned client's, then the model's."""

    name = "text_layer"

    def propose(self, req: Request, k: int) -> list[int]:
        return self.draft(req, k)[0]

    def draft(self, req: Request, k: int) -> tuple[list[int], str]:
        state = req.draft
        text = state.text_cursor.locate(req.output_ids) if state.text_cursor is not None else None
        own = state.model_cursor.locate(req.output_ids) if state.model_cursor is not None else None
        ranked = [(text, state.text_ids, self.name), (own, state.model_ids, ModelDrafter.name)]
        for exact in (True, False):
            for found, draft, method in ranked:
                if found is not None and found[1] is exact and found[0] < len(draft):
                    return list(draft[found[0]:found[0] + k]), method
        return [], self.name


def aligned(draft: Sequence[int] | None, out: Sequence[int]) -> tuple[int, bool] | None:
    """Where in a draft of the whole output the output so far leaves off (`DraftCursor.locate`,
    from the start: a request's drafters keep a cursor on its `DraftState` instead)."""
    return DraftCursor(draft).locate(out) if draft else None


def propose_aligned(draft: Sequence[int] | None, out: Sequence[int], k: int) -> list[int]:
    """Up to k tokens of a draft of the whole output to follow the output so far (`aligned`)."""
    return _follow(DraftCursor(draft) if draft else None, out, k)


def _follow(cursor: DraftCursor | None, out: Sequence[int], k: int) -> list[int]:
    found = cursor.locate(out) if cursor is not None and k > 0 else None
    return [] if found is None else list(cursor.draft[found[0]:found[0] + k])


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

    @property
    def preparer(self) -> Drafter:
        return self.fallback if self.fallback is not None else self

    def propose(self, req: Request, k: int) -> list[int]:
        return self.draft(req, k)[0]

    def draft(self, req: Request, k: int) -> tuple[list[int], str]:
        grammar = req.grammar_state
        if grammar is not None:
            forced = grammar.jump_forward_string()
            if forced:
                ids = list(self.encode(forced)[:k])
                if ids:
                    return ids, self.name
        if self.fallback is None:
            return [], self.name
        return self.fallback.draft(req, min(k, self.fallback.num_tokens))


class DraftModelDrafter(Drafter):
    """A smaller model with the same tokenizer proposes its greedy continuation. It runs in this
    process on an engine of its own (`draft_engine`: its own KV pool and radix cache, same tenant
    as the request), so each call extends the sequence it drafted for last time: only the tokens
    accepted since then are prefilled, then up to `num_tokens` decode steps. `prepare` drafts for
    a step's decoding requests together (one batch on the draft engine); `propose` takes those,
    or drafts alone for a request that was not prepared (its prompt's first step). Text requests
    only (the draft model does not see images); a drafted id outside the target's vocabulary ends
    the draft."""

    name = "draft_model"

    def __init__(self, num_tokens: int, draft_engine, vocab_size: int):
        super().__init__(num_tokens)
        self.engine = draft_engine
        self.vocab_size = vocab_size
        self._prepared: dict[int, tuple[int, list[int]]] = {}   # id(req) -> (output length, draft)

    def prepare(self, reqs: list[Request]) -> None:
        self._prepared = {id(req): (len(req.output_ids), draft)
                          for req, draft in zip(reqs, self._draft_all(reqs, self.num_tokens))}

    def propose(self, req: Request, k: int) -> list[int]:
        if k <= 0:
            return []
        prepared = self._prepared.pop(id(req), None)
        if prepared is not None and prepared[0] == len(req.output_ids):
            return prepared[1][:k]
        return self._draft_all([req], k)[0]

    def _draft_all(self, reqs: list[Request], k: int) -> list[list[int]]:
        from engine.errors import PromptTooLongError
        from engine.sampling_params import SamplingParams

        drafts: list[list[int]] = [[] for _ in reqs]
        running: dict[str, int] = {}
        for i, req in enumerate(reqs):
            context = req.prompt_ids + req.output_ids
            room = self.engine.context_length - len(context)
            if req.multimodal is not None or room < 1:
                continue
            try:
                draft_req = self.engine.add_request(context, SamplingParams(temperature=0.0, max_tokens=min(k, room)),
                                                    tenant=req.tenant)
            except PromptTooLongError:
                continue
            running[draft_req.request_id] = i
        while running:
            for out in self.engine.step():
                if out.finished and out.request_id in running:
                    i = running.pop(out.request_id)
                    for token in out.token_ids[:k]:
                        if token >= self.vocab_size:
                            break
                        drafts[i].append(token)
        return drafts


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
