"""Turns a batch of last-position logits into one token per request.

Processing order, the same as Hugging Face `generate`:

    allowed_mask -> repetition penalty -> frequency/presence penalties
    -> greedy rows: argmax
    -> other rows: temperature -> top-k -> top-p -> min-p -> draw

Everything that shapes a request's tokens lives in its `SamplerState` (penalty
counts, random generator), which the request keeps across retraction (DESIGN
invariant 4), so a retracted-and-resumed request draws the same tokens.
"""
from __future__ import annotations

import copy
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from engine.sampling_params import SamplingParams

# Nucleus (top-p) search widths: most nuclei fit in the first; a full sort of a
# 49k vocab costs ~100x a top-64, so it is only the last resort.
_NUCLEUS_WIDTHS = (64, 1024)


class SamplerState:
    """Per-request sampling state, kept on the request across retraction.

    | field               | kept for                                           |
    |---------------------|----------------------------------------------------|
    | generator           | the request's own random stream (CPU), seeded once |
    | output_counts       | frequency/presence penalties (output ids only)     |
    | _penalized_ids      | repetition penalty: distinct prompt + output ids   |
    | _counted_ids/_counts| frequency/presence as tensors: distinct output ids |
    |                     | and their counts, same order                       |

    The tensors grow by doubling so `append` is O(1) and the sampler reads them
    without rebuilding anything from Python lists.
    """

    def __init__(self, params: SamplingParams, prompt_ids: Sequence[int], vocab_size: int):
        self.params = params
        self.vocab_size = vocab_size
        # Drawn once here when the request gave none: a retracted request keeps its stream.
        self.seed = params.seed if params.seed is not None else secrets.randbits(63)
        self.generator = torch.Generator(device="cpu")
        self.generator.manual_seed(self.seed)
        self.num_output_tokens = 0
        self.output_counts: dict[int, int] = {}
        self.uses_repetition_penalty = params.repetition_penalty != 1.0
        self.uses_count_penalties = params.frequency_penalty != 0.0 or params.presence_penalty != 0.0
        self._seen_ids: set[int] = set()
        self._penalized_ids = _GrowableTensor(torch.int64)
        self._counted_ids = _GrowableTensor(torch.int64)
        self._counts = _GrowableTensor(torch.float32)
        self._count_pos: dict[int, int] = {}
        if self.uses_repetition_penalty:
            distinct = list(dict.fromkeys(int(t) for t in prompt_ids))
            assert all(0 <= t < vocab_size for t in distinct), "prompt id outside the vocabulary"
            self._seen_ids.update(distinct)
            self._penalized_ids.extend(distinct)

    def append(self, token_id: int) -> None:
        """Record a generated token (the engine calls this after stop handling)."""
        assert 0 <= token_id < self.vocab_size, f"token id {token_id} outside the vocabulary"
        self.num_output_tokens += 1
        self.output_counts[token_id] = self.output_counts.get(token_id, 0) + 1
        if self.uses_repetition_penalty and token_id not in self._seen_ids:
            self._seen_ids.add(token_id)
            self._penalized_ids.extend([token_id])
        if self.uses_count_penalties:
            pos = self._count_pos.get(token_id)
            if pos is None:
                self._count_pos[token_id] = self._counted_ids.size
                self._counted_ids.extend([token_id])
                self._counts.extend([1.0])
            else:
                self._counts.data[pos] += 1.0

    def penalized_ids(self) -> torch.Tensor:
        return self._penalized_ids.view()     # [num_distinct_prompt_and_output_ids]

    def counted_ids(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self._counted_ids.view(), self._counts.view()  # [num_distinct_output_ids] x 2

    def clone(self) -> SamplerState:
        """An independent copy, random stream included (same next draws)."""
        return copy.deepcopy(self)


class _GrowableTensor:
    """A 1-D tensor with amortised O(1) append."""

    def __init__(self, dtype: torch.dtype):
        self.data = torch.empty(16, dtype=dtype)
        self.size = 0

    def extend(self, values: list) -> None:
        end = self.size + len(values)
        if end > self.data.numel():
            grown = torch.empty(max(2 * self.data.numel(), end), dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.data[self.size:end] = torch.tensor(values, dtype=self.data.dtype)
        self.size = end

    def view(self) -> torch.Tensor:
        return self.data[: self.size]


@dataclass
class TokenLogprobs:
    token_id: int
    logprob: float
    top: list[tuple[int, float]]     # the top-k (token id, logprob), most likely first


class Sampler:
    """Stateless across steps; all per-request state is in `SamplerState`."""

    def __init__(self, vocab_size: int):
        self.vocab_size = vocab_size

    def sample(self, logits: torch.Tensor, states: list[SamplerState],
               allowed_mask: torch.Tensor | None = None) -> tuple[list[int], list[TokenLogprobs | None]]:
        """Choose one token per row.

        logits: [batch, vocab] for each request's last position; modified in
        place (masking and penalties), it is the step's scratch.
        allowed_mask: optional bool [batch, vocab] (grammar); False -> -inf
        before anything else. Every row must allow at least one token.

        Logprobs are of the distribution after penalties and temperature but
        before top-k/top-p/min-p truncation (greedy rows: temperature 1), as
        OpenAI and vLLM report them.

        Does NOT call `state.append`: the engine does, after its stop
        handling, so the request's history has one writer.
        Seeded rows draw from their own generator, one uniform per step, so a
        request's tokens do not depend on its batch neighbours.
        """
        num_rows = len(states)
        assert logits.dim() == 2 and logits.shape == (num_rows, self.vocab_size), (
            f"logits {tuple(logits.shape)} for {num_rows} requests, vocab {self.vocab_size}")
        if logits.dtype != torch.float32:
            logits = logits.float()
        if allowed_mask is not None:
            assert allowed_mask.shape == logits.shape and allowed_mask.dtype == torch.bool
            assert bool(allowed_mask.any(dim=-1).all()), "a row allows no token at all"
            logits.masked_fill_(~allowed_mask, float("-inf"))
        apply_repetition_penalty(logits, states)
        apply_count_penalties(logits, states)

        random_rows = [i for i, s in enumerate(states) if not s.params.is_greedy]
        if len(random_rows) < num_rows:
            token_ids = logits.argmax(dim=-1)                                          # [batch]
        else:
            token_ids = torch.empty(num_rows, dtype=torch.int64, device=logits.device)
        scaled = None
        if random_rows:
            random_states = [states[i] for i in random_rows]
            temps = torch.tensor([s.params.temperature for s in random_states], device=logits.device)
            rows = torch.tensor(random_rows, device=logits.device)
            scaled = logits[rows] / temps[:, None]                                     # [num_random, vocab]
            probs = truncated_probs(scaled, [s.params for s in random_states])
            token_ids[rows] = _draw(probs, [s.generator for s in random_states])
        logprobs = _gather_logprobs(logits, scaled, random_rows, token_ids, states)
        return token_ids.tolist(), logprobs


def apply_repetition_penalty(logits: torch.Tensor, states: list[SamplerState]) -> None:
    """Hugging Face's rule, once per distinct prompt or output id: a positive
    logit is divided by the penalty, a negative one multiplied."""
    rows = [i for i, s in enumerate(states) if s.uses_repetition_penalty]
    if not rows:
        return
    ids = [states[i].penalized_ids() for i in rows]
    lens = torch.tensor([t.numel() for t in ids])
    penalties = torch.tensor([states[i].params.repetition_penalty for i in rows], dtype=torch.float32)
    device = logits.device
    row_idx = torch.repeat_interleave(torch.tensor(rows), lens).to(device)         # [num_entries]
    col_idx = torch.cat(ids).to(device)                                             # [num_entries]
    penalty = torch.repeat_interleave(penalties, lens).to(device)                   # [num_entries]
    score = logits[row_idx, col_idx]
    logits[row_idx, col_idx] = torch.where(score < 0, score * penalty, score / penalty)


def apply_count_penalties(logits: torch.Tensor, states: list[SamplerState]) -> None:
    """OpenAI's rule over output ids: logit -= frequency * count + presence * (count > 0)."""
    rows = [i for i, s in enumerate(states) if s.uses_count_penalties and s.output_counts]
    if not rows:
        return
    pairs = [states[i].counted_ids() for i in rows]
    lens = torch.tensor([ids.numel() for ids, _ in pairs])
    freq = torch.tensor([states[i].params.frequency_penalty for i in rows], dtype=torch.float32)
    pres = torch.tensor([states[i].params.presence_penalty for i in rows], dtype=torch.float32)
    device = logits.device
    row_idx = torch.repeat_interleave(torch.tensor(rows), lens).to(device)         # [num_entries]
    col_idx = torch.cat([ids for ids, _ in pairs]).to(device)
    counts = torch.cat([c for _, c in pairs]).to(device)
    score = logits[row_idx, col_idx]
    score = score - torch.repeat_interleave(freq, lens).to(device) * counts
    logits[row_idx, col_idx] = score - torch.repeat_interleave(pres, lens).to(device)


def truncated_probs(scaled: torch.Tensor, params: list[SamplingParams]) -> torch.Tensor:
    """Top-k, then top-p, then min-p over temperature-scaled logits [rows, vocab].

    Returns unnormalised probabilities [rows, vocab], zero outside each row's
    support. Supports are Hugging Face's: top-k keeps ties with the k-th value;
    top-p keeps a token when the mass of the tokens above it is below p (the
    smallest set reaching p); min-p keeps tokens with prob >= min_p * max prob.
    Each row is computed on its own (no cross-row reductions)."""
    vocab = scaled.shape[1]
    device = scaled.device
    top_ks = [min(p.top_k, vocab) if p.top_k_enabled else 0 for p in params]
    max_k = max(top_ks)
    if max_k:
        kth = torch.topk(scaled, max_k, dim=-1).values                             # [rows, max_k], descending
        k_idx = torch.tensor([max(k, 1) - 1 for k in top_ks], device=device)
        threshold = kth.gather(1, k_idx[:, None])                                   # [rows, 1]
        off = torch.tensor([k == 0 for k in top_ks], device=device)
        threshold = threshold.masked_fill(off[:, None], float("-inf"))
        scaled = scaled.masked_fill(scaled < threshold, float("-inf"))
    probs = torch.softmax(scaled, dim=-1)                                           # [rows, vocab]
    nucleus_rows = [i for i, p in enumerate(params) if p.top_p < 1.0]
    if nucleus_rows:
        top_p = torch.tensor([params[i].top_p for i in nucleus_rows], dtype=torch.float32, device=device)
        rows = torch.tensor(nucleus_rows, device=device)
        probs[rows] = probs[rows].masked_fill(_outside_nucleus(probs[rows], top_p), 0.0)
    if any(p.min_p > 0.0 for p in params):
        min_p = torch.tensor([p.min_p for p in params], dtype=torch.float32, device=device)
        floor = min_p[:, None] * probs.amax(dim=-1, keepdim=True)                  # [rows, 1]
        probs = probs.masked_fill(probs < floor, 0.0)
    return probs


def _outside_nucleus(probs: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """Bool [rows, vocab]: tokens outside the smallest top set whose mass reaches top_p.

    Searches the top 64, then 1024, then all tokens, per row, until the set closes."""
    num_rows, vocab = probs.shape
    outside = torch.ones_like(probs, dtype=torch.bool)
    todo = torch.arange(num_rows, device=probs.device)
    for width in (*_NUCLEUS_WIDTHS, vocab):
        width = min(width, vocab)
        vals, idx = torch.topk(probs[todo], width, dim=-1)                          # descending
        mass_above = torch.nn.functional.pad(torch.cumsum(vals, dim=-1)[:, :-1], (1, 0))  # exclusive prefix sums
        keep = mass_above < top_p[todo, None]
        keep[:, 0] = True
        # Closed when the last candidate is dropped or has zero mass (nothing beyond can join).
        closed = (~keep[:, -1]) | (vals[:, -1] == 0) | (width == vocab)
        done = todo[closed]
        outside[done] = outside[done].scatter(1, idx[closed], ~keep[closed])
        todo = todo[~closed]
        if todo.numel() == 0:
            break
    return outside


def _draw(probs: torch.Tensor, generators: list[torch.Generator]) -> torch.Tensor:
    """Inverse-CDF draw, one uniform per row from that row's own generator."""
    u = torch.cat([torch.rand(1, generator=g) for g in generators]).to(probs.device)  # [rows]
    cdf = torch.cumsum(probs, dim=-1)                                               # [rows, vocab]
    target = (u * cdf[:, -1])[:, None]
    # right=True: the first index whose cdf exceeds target has nonzero mass.
    picked = torch.searchsorted(cdf, target, right=True).squeeze(1).clamp_(max=probs.shape[1] - 1)
    bad = probs.gather(1, picked[:, None]).squeeze(1) == 0
    if bool(bad.any()):  # rounding put target at the very top: take the last token with mass
        last = probs.shape[1] - 1 - torch.argmax((probs.flip(-1) > 0).to(torch.int8), dim=-1)
        picked = torch.where(bad, last, picked)
    return picked


def _gather_logprobs(logits: torch.Tensor, scaled: torch.Tensor | None, random_rows: list[int],
                     token_ids: torch.Tensor, states: list[SamplerState]) -> list[TokenLogprobs | None]:
    out: list[TokenLogprobs | None] = [None] * len(states)
    rows = [i for i, s in enumerate(states) if s.params.logprobs is not None]
    if not rows:
        return out
    scaled_pos = {row: j for j, row in enumerate(random_rows)}
    z = torch.stack([scaled[scaled_pos[i]] if i in scaled_pos else logits[i] for i in rows])  # [num_lp, vocab]
    lp = torch.log_softmax(z, dim=-1)                  # on CPU far cheaper than logsumexp
    items = token_logprobs(lp, token_ids[rows].tolist(), [states[i].params.logprobs for i in rows])
    for i, item in zip(rows, items):
        out[i] = item
    return out


def token_logprobs(log_probs: torch.Tensor, token_ids: Sequence[int], top_ks: Sequence[int]) -> list[TokenLogprobs]:
    """One TokenLogprobs per row of log-probabilities [rows, vocab] (float32): the row at its
    chosen token, and its top k (k = top_ks[row]; -inf alternatives left out).

    The one place a TokenLogprobs is made from a distribution: the sampler's rows, and the rows
    a draft is verified or rescored with (engine/spec/verify.py, engine/models/house_ocr.py), so
    a drafted greedy request reports what decoding it one token a step reports."""
    ids = torch.tensor(list(token_ids), dtype=torch.int64, device=log_probs.device)
    chosen = log_probs.gather(1, ids[:, None]).squeeze(1).tolist()
    max_k = max(top_ks, default=0)
    top_vals, top_idx = log_probs.topk(max_k, dim=-1) if max_k else (log_probs[:, :0], log_probs[:, :0].long())
    top_vals, top_idx = top_vals.tolist(), top_idx.tolist()
    out = []
    for j, (token_id, k) in enumerate(zip(ids.tolist(), top_ks)):
        top = [(t, v) for t, v in zip(top_idx[j][:k], top_vals[j][:k]) if v != float("-inf")]
        out.append(TokenLogprobs(token_id=token_id, logprob=chosen[j], top=top))
    return out
