"""Drafts for sampled requests (temperature > 0), verified by drawing each position's token as a
one-token step would and keeping the draft while it agrees (speculative sampling for a one-hot
draft; engine/spec/verify.py): the tokens follow the same distribution as one token a step,
checked with a chi-square test against the exact joint distribution of two tokens on a small
vocabulary, with temperature, top-k and penalties; a seeded request draws the same tokens with
and without a draft; and the chi-square test itself rejects a verifier that keeps drafts too
often."""
from __future__ import annotations

import dataclasses
import math
from collections import Counter

import pytest
import torch

from engine.request import Request
from engine.sampler import Sampler, SamplerState
from engine.sampling_params import SamplingParams
from engine.spec.verify import verify

VOCAB = 6
TRIALS = 12000


@pytest.fixture(scope="module")
def model():
    """A fixed two-step "model": logits of the first token, and of the second given the first."""
    generator = torch.Generator().manual_seed(7)
    return torch.randn(VOCAB, generator=generator) * 1.5, torch.randn(VOCAB, VOCAB, generator=generator) * 1.5


def exact_distribution(params: SamplingParams, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """P(t1, t2) [VOCAB, VOCAB], written out from the parameters' definitions (penalties on the
    raw logits for tokens already output, then temperature, then top-k)."""
    def probs(logits: torch.Tensor, counts: dict[int, int]) -> torch.Tensor:
        z = logits.clone()
        for token, count in counts.items():
            z[token] -= params.frequency_penalty * count + params.presence_penalty
        z = z / params.temperature
        if params.top_k > 0:
            z[z < torch.topk(z, params.top_k).values[-1]] = float("-inf")
        return torch.softmax(z, dim=-1)

    p1 = probs(first, {})
    return torch.stack([p1[t] * probs(second[t], {t: 1}) for t in range(VOCAB)])


def sample_pairs(params: SamplingParams, first: torch.Tensor, second: torch.Tensor, draft: int,
                 trials: int = TRIALS) -> tuple[Counter, int]:
    """Two tokens per trial as the engine makes them: the first step verifies `draft` after the
    prompt; when it was rejected, the second token is the next step's one-token draw."""
    sampler, pairs, kept = Sampler(VOCAB), Counter(), 0
    for seed in range(trials):
        p = dataclasses.replace(params, seed=seed)
        req = Request("r", 1, [0], p, SamplerState(p, [0], VOCAB), None, 8)
        req.spec_ids = [draft]
        tokens = verify(req, torch.stack([first, second[draft]]), sampler).tokens
        if len(tokens) == 2:
            kept += 1
        else:
            req.sampler_state.append(tokens[0])
            (token,), _ = sampler.sample(second[tokens[0]][None].clone(), [req.sampler_state])
            tokens.append(token)
        pairs[tuple(tokens)] += 1
    return pairs, kept


def chi_square_rejects(pairs: Counter, exact: torch.Tensor, trials: int) -> tuple[bool, float, float]:
    """(rejected at the 0.1% level, statistic, critical value); cells expected under 5 times pooled."""
    observed, expected, pooled_o, pooled_e = [], [], 0, 0.0
    for t1 in range(VOCAB):
        for t2 in range(VOCAB):
            e = float(exact[t1, t2]) * trials
            if e < 5:
                pooled_o, pooled_e = pooled_o + pairs[(t1, t2)], pooled_e + e
            else:
                observed.append(pairs[(t1, t2)])
                expected.append(e)
    if pooled_e > 0:
        observed.append(pooled_o)
        expected.append(pooled_e)
    statistic = sum((o - e) ** 2 / e for o, e in zip(observed, expected))
    dof = len(observed) - 1
    z = 3.0902   # the 99.9th percentile of the normal: Wilson-Hilferty's chi-square quantile
    critical = dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3
    return statistic > critical, statistic, critical


@pytest.mark.parametrize("params", [
    SamplingParams(temperature=0.8, max_tokens=8),
    SamplingParams(temperature=1.3, top_k=4, frequency_penalty=0.7, presence_penalty=0.2, max_tokens=8),
], ids=["temperature", "top-k-and-penalties"])
def test_drafted_tokens_of_a_sampled_request_follow_the_undrafted_distribution(model, params):
    first, second = model
    exact = exact_distribution(params, first, second)
    draft = int(torch.argsort(exact.sum(dim=1), descending=True)[1])   # often but not always drawn
    pairs, kept = sample_pairs(params, first, second, draft)
    assert 0.05 * TRIALS < kept < 0.95 * TRIALS, "both the kept and the rejected path are exercised"
    rejected, statistic, critical = chi_square_rejects(pairs, exact, TRIALS)
    assert not rejected, f"chi-square {statistic:.1f} over the 0.1% critical value {critical:.1f}"


def test_a_seeded_request_draws_the_same_tokens_with_and_without_a_draft(model):
    first, second = model
    params = SamplingParams(temperature=1.1, top_k=5, frequency_penalty=0.3, max_tokens=8)
    sampler, kept = Sampler(VOCAB), 0
    for seed in range(300):
        p = dataclasses.replace(params, seed=seed)
        alone = SamplerState(p, [0], VOCAB)
        (t1,), _ = sampler.sample(first[None].clone(), [alone])
        alone.append(t1)
        (t2,), _ = sampler.sample(second[t1][None].clone(), [alone])
        for draft in range(VOCAB):
            req = Request("r", 1, [0], p, SamplerState(p, [0], VOCAB), None, 8)
            req.spec_ids = [draft]
            tokens = verify(req, torch.stack([first, second[draft]]), sampler).tokens
            kept += len(tokens) == 2
            assert tokens == ([t1, t2] if draft == t1 else [t1])
            if len(tokens) == 1:   # the next step draws on from where the stream stands
                req.sampler_state.append(t1)
                (token,), _ = sampler.sample(second[t1][None].clone(), [req.sampler_state])
                assert token == t2
    assert kept == 300


def test_the_chi_square_test_catches_a_verifier_that_keeps_drafts_too_often(model):
    """Its power: keeping the draft with probability min(1, 2 p(d)) instead of p(d) is rejected."""
    params = SamplingParams(temperature=0.8, max_tokens=8)
    first, second = model
    exact = exact_distribution(params, first, second)
    draft = int(torch.argsort(exact.sum(dim=1), descending=True)[1])
    rejected, statistic, critical = chi_square_rejects(_biased_pairs(exact, draft), exact, TRIALS)
    assert rejected, f"a biased verifier passed: chi-square {statistic:.1f} <= {critical:.1f}"


def _biased_pairs(exact: torch.Tensor, draft: int) -> Counter:
    """Pairs as a verifier keeping the draft with probability min(1, 2 p(d)) would give them
    (else the residual rule), the second token drawn from its exact conditional."""
    generator = torch.Generator().manual_seed(11)
    p1 = exact.sum(dim=1)
    pairs: Counter = Counter()
    for _ in range(TRIALS):
        if float(torch.rand(1, generator=generator)) < min(1.0, 2 * float(p1[draft])):
            t1 = draft
        else:
            residual = p1.clone()
            residual[draft] = 0
            t1 = int(torch.multinomial(residual, 1, generator=generator))
        t2 = int(torch.multinomial(exact[t1] / exact[t1].sum(), 1, generator=generator))
        pairs[(t1, t2)] += 1
    return pairs
