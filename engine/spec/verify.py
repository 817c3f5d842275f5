"""Verifying a request's drafted tokens against the rows of the step's forward pass.

The rule: exactly as one token a step. At each position the token is chosen as the sampler
would choose it there (greedy: the argmax; sampled: a draw from the request's own random
stream, one uniform per token as in a one-token step); it is kept while it agrees with the
draft, and the first disagreement (or the token after a fully accepted draft) is that chosen
token too. So a request's output with drafts is token for token its output without them,
a seeded sampled request's included; drafts change only how many steps it takes.

For a sampled request this is speculative sampling's rule (Leviathan et al. 2023; Chen et al.
2023) for a draft that puts all its mass on one token d, as every drafter here does (prompt
lookup, a grammar's forced text, a draft model's greedy reading): d is kept with probability
p(d), and a rejected position's token follows p with d removed, renormalised, which is the
residual max(p - q, 0) for q one-hot at d. Drawing from p and comparing keeps that
distribution and, unlike drawing a separate acceptance uniform, consumes the random stream
as undrafted decoding does, so a seed gives the same tokens with or without drafts, whatever
the batch (tests/engine/test_spec_sampled.py checks the distribution with a chi-square test).

Two paths give that choice:
- plain greedy rows (no grammar, no penalties): the argmax of each raw row, and, where the
  request asks for logprobs or is rescored, the log-softmax of the same rows, which is what
  the sampler reports for a greedy row decoded alone;
- a sampled request, or one whose choice depends on the tokens before it (a grammar's mask,
  penalties' counts): each row goes through the grammar and the sampler as in a one-token
  step, with the grammar and a copy of the sampler state (penalties' counts, random stream)
  advanced past the drafted tokens kept before it (the grammar is rolled back after: the
  engine's append records the kept tokens as for any other; the random stream moves on by
  the draws made).

`decide` makes the step's verdicts: rows without drafts are sampled together in one batch
(a one-token verdict each), rows with drafts through `verify`. The engine applies them
(`engine/process.py`): it frees the K/V of rejected drafted tokens, counts, and appends the kept
tokens one by one, stopping where the request finishes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from engine.sampler import Sampler, TokenLogprobs, token_logprobs

if TYPE_CHECKING:
    from engine.request import Request
    from engine.scheduler import ScheduledBatch


@dataclass
class Verdict:
    tokens: list[int]                       # the drafted tokens kept, then the model's own next token
    logprobs: list[TokenLogprobs | None]    # per token, as the request asked for them (None: not asked)
    rescore_log_probs: list[float] = field(default_factory=list)   # rescored requests: log P per token


def decide(scheduled: ScheduledBatch, logits: torch.Tensor, sampler: Sampler) -> list[Verdict | None]:
    """The tokens each request of the step takes, in `scheduled` order; None for a request whose
    step samples nothing (a prefill chunk short of the prompt's end). `logits`: the forward
    pass's rows, one per sampled request, 1 + len(spec_ids) for one verifying a draft."""
    verdicts: list[Verdict | None] = [None] * len(scheduled.requests)
    plain, plain_rows = [], []
    row = 0
    for i, (req, s) in enumerate(zip(scheduled.requests, scheduled.sample)):
        if not s:
            continue
        if req.spec_ids:
            verdicts[i] = verify(req, logits[row:row + 1 + len(req.spec_ids)], sampler)
            row += 1 + len(req.spec_ids)
        else:
            plain.append(i)
            plain_rows.append(row)
            row += 1
    if not plain:
        return verdicts
    reqs = [scheduled.requests[i] for i in plain]
    # the sampler's scratch: it masks and penalises these rows in place
    rows = logits if len(plain_rows) == logits.shape[0] else logits[torch.tensor(plain_rows)]
    grammar_states = [r.grammar_state for r in reqs]
    if any(g is not None for g in grammar_states):
        from engine.grammar import apply_grammar

        apply_grammar(rows, grammar_states)
    # rescored requests' raw rows (greedy, no penalties): house-ocr's rescoring (rescore.py) weighs them
    rescored = [k for k, r in enumerate(reqs) if r.draft is not None and r.draft.rescore]
    log_probs = rows[rescored].float().log_softmax(-1) if rescored else None
    token_ids, logprobs = sampler.sample(rows, [r.sampler_state for r in reqs])
    for i, token, lp in zip(plain, token_ids, logprobs):
        verdicts[i] = Verdict([token], [lp])
    for k, j in enumerate(rescored):
        verdicts[plain[j]].rescore_log_probs = [float(log_probs[k, token_ids[j]])]
    return verdicts


def verify(req: Request, logits: torch.Tensor, sampler: Sampler) -> Verdict:
    """`logits`: [1 + len(req.spec_ids), vocab], the rows after the pending token and each drafted one."""
    draft = req.spec_ids
    state = req.sampler_state
    if (not req.params.is_greedy or req.grammar_state is not None or state.uses_repetition_penalty
            or state.uses_count_penalties):
        return _one_at_a_time(req, logits, draft, sampler)
    tokens: list[int] = []
    for j, token in enumerate(logits.argmax(dim=-1).tolist()):
        tokens.append(token)
        if j == len(draft) or token != draft[j]:
            break
    verdict = Verdict(tokens, [None] * len(tokens))
    if (req.draft is not None and req.draft.rescore) or req.params.logprobs is not None:
        rows = logits[:len(tokens)].float().log_softmax(-1)                 # [kept + 1, vocab]
        computed = token_logprobs(rows, tokens, [req.params.logprobs or 0] * len(tokens))
        verdict.rescore_log_probs = [lp.logprob for lp in computed]
        if req.params.logprobs is not None:
            verdict.logprobs = computed
    return verdict


def _one_at_a_time(req: Request, logits: torch.Tensor, draft: list[int], sampler: Sampler) -> Verdict:
    from engine.grammar import apply_grammar

    grammar = req.grammar_state
    counts = req.sampler_state.clone()
    tokens: list[int] = []
    logprobs: list[TokenLogprobs | None] = []
    advanced = 0
    try:
        for j in range(len(draft) + 1):
            row = logits[j:j + 1].float().clone()
            if grammar is not None:
                apply_grammar(row, [grammar])
            (token,), (lp,) = sampler.sample(row, [counts])
            tokens.append(token)
            logprobs.append(lp)
            if j == len(draft) or token != draft[j]:
                break
            counts.append(token)
            if grammar is not None:
                ok = grammar.accept(token)
                assert ok, "the grammar mask admitted a token its matcher rejects"
                advanced += 1
                if grammar.is_terminated():   # a stop token the grammar took: nothing follows it
                    break
    finally:
        if grammar is not None:
            grammar.rollback(advanced)
    # One draw per token chosen, as undrafted steps make them (greedy rows draw nothing).
    req.sampler_state.generator.set_state(counts.generator.get_state())
    return Verdict(tokens, logprobs)
