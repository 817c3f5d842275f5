"""Sampler against Hugging Face's logits processors on the same logits:
greedy, repetition penalty, top-k/top-p/min-p supports; plus what HF has no
reference for: OpenAI penalties, seeded streams that ignore batch neighbours
and survive retraction, logprobs."""
from __future__ import annotations

import math

import pytest
import torch
from transformers.generation.logits_process import (MinPLogitsWarper, RepetitionPenaltyLogitsProcessor,
                                                    TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper)

from engine.sampler import (Sampler, SamplerState, apply_count_penalties, apply_repetition_penalty, token_logprobs,
                            truncated_probs)
from engine.sampling_params import SamplingParams

VOCAB = 4096
torch.set_num_threads(1)


def random_logits(num_rows: int, seed: int, scale: float = 3.0, vocab: int = VOCAB) -> torch.Tensor:
    return torch.randn(num_rows, vocab, generator=torch.Generator().manual_seed(seed)) * scale


def state(prompt_ids=(), vocab: int = VOCAB, outputs=(), **kw) -> SamplerState:
    s = SamplerState(SamplingParams(**kw).validate(vocab), list(prompt_ids), vocab)
    for t in outputs:
        s.append(t)
    return s


def test_greedy_is_argmax_of_the_logits():
    logits = random_logits(8, seed=1)
    expected = logits.argmax(dim=-1).tolist()
    tokens, logprobs = Sampler(VOCAB).sample(logits.clone(), [state(temperature=0) for _ in range(8)])
    assert tokens == expected and logprobs == [None] * 8


def test_repetition_penalty_equals_hugging_face():
    gen = torch.Generator().manual_seed(2)
    logits = random_logits(3, seed=3)
    logits[:, :50] = 0.0                                     # zero logits: HF divides them (still 0)
    histories = [torch.randint(0, VOCAB, (n,), generator=gen).tolist() for n in (40, 1, 300)]
    histories[0] += histories[0][:10] + list(range(45))     # repeats, and ids at zero logits
    penalties = [1.3, 0.7, 2.0]
    states = [state(h[:len(h) // 2], outputs=h[len(h) // 2:], repetition_penalty=p)
              for h, p in zip(histories, penalties)]
    ours = logits.clone()
    apply_repetition_penalty(ours, states)
    for row, (h, p) in enumerate(zip(histories, penalties)):
        hf = RepetitionPenaltyLogitsProcessor(p)(torch.tensor([h]), logits[row:row + 1].clone())
        assert torch.equal(ours[row], hf[0])


def test_greedy_generation_with_repetition_penalty_matches_hf_step_by_step():
    """A toy decode loop: each step's logits depend on the history, as a model's would."""
    table = random_logits(VOCAB, seed=4, vocab=VOCAB)         # next-token logits indexed by the last token
    prompt = [5, 17, 5, 99]
    hf_ids, ours_state = list(prompt), state(prompt, repetition_penalty=1.5, temperature=0)
    hf_proc, sampler = RepetitionPenaltyLogitsProcessor(1.5), Sampler(VOCAB)
    for _ in range(40):
        step_logits = table[hf_ids[-1]][None].clone()
        hf_token = int(hf_proc(torch.tensor([hf_ids]), step_logits.clone()).argmax(dim=-1))
        (our_token,), _ = sampler.sample(step_logits.clone(), [ours_state])
        assert our_token == hf_token
        hf_ids.append(hf_token)
        ours_state.append(our_token)
    assert len(set(hf_ids[len(prompt):])) > 20              # the penalty is doing something


def test_frequency_and_presence_penalties_follow_openai():
    logits = random_logits(2, seed=5)
    outputs = [7, 7, 7, 9, 11, 9]
    states = [state([7, 300], outputs=outputs, frequency_penalty=0.5, presence_penalty=1.25),
              state([7, 300], outputs=outputs)]        # no penalties: untouched
    ours = logits.clone()
    apply_count_penalties(ours, states)
    expected = logits[0].clone()
    for token, count in {7: 3, 9: 2, 11: 1}.items():
        expected[token] -= 0.5 * count + 1.25
    assert torch.allclose(ours[0], expected, atol=1e-6, rtol=0)
    assert ours[0, 300] == logits[0, 300]                   # prompt ids are not counted
    assert torch.equal(ours[1], logits[1])


TRUNCATIONS = [
    dict(top_k=1), dict(top_k=40), dict(top_k=VOCAB + 5), dict(top_p=0.9), dict(top_p=0.3),
    dict(top_p=0.999), dict(min_p=0.05), dict(min_p=0.5), dict(top_k=200, top_p=0.8),
    dict(top_k=50, top_p=0.95, min_p=0.1), dict(temperature=0.5, top_p=0.7),
    dict(temperature=1.7, top_k=300, min_p=0.02),
]


@pytest.mark.parametrize("scale", [0.3, 3.0, 8.0], ids=["flat", "normal", "peaked"])
def test_truncation_support_equals_hugging_face_warpers(scale):
    logits = random_logits(len(TRUNCATIONS), seed=6, scale=scale)
    params = [SamplingParams(**kw).validate() for kw in TRUNCATIONS]
    scaled = logits / torch.tensor([p.temperature for p in params])[:, None]
    ours = truncated_probs(scaled, params)
    for row, p in enumerate(params):
        hf = logits[row:row + 1].clone()
        warpers = [TemperatureLogitsWarper(p.temperature)]
        warpers += [TopKLogitsWarper(p.top_k)] if p.top_k > 0 else []
        warpers += [TopPLogitsWarper(p.top_p)] if p.top_p < 1 else []
        warpers += [MinPLogitsWarper(p.min_p)] if p.min_p > 0 else []
        for w in warpers:
            hf = w(None, hf)
        hf_support = torch.isfinite(hf[0]) & (torch.softmax(hf[0], dim=-1) > 0)
        assert torch.equal(ours[row] > 0, hf_support), TRUNCATIONS[row]
        assert torch.allclose(ours[row] / ours[row].sum(), torch.softmax(hf[0], dim=-1), atol=1e-6)


def test_sampled_tokens_stay_in_the_support():
    logits = random_logits(4, seed=7)
    states = [state(temperature=1.0, top_k=5, seed=i) for i in range(4)]
    allowed = set()
    for row in range(4):
        allowed |= {(row, t) for t in logits[row].topk(5).indices.tolist()}
    sampler = Sampler(VOCAB)
    for _ in range(50):
        tokens, _ = sampler.sample(logits.clone(), states)
        assert all((row, t) in allowed for row, t in enumerate(tokens))


def test_temperature_shapes_the_sampling_distribution():
    vocab = 8
    logits = torch.full((1, vocab), -1e9)
    logits[0, :3] = torch.tensor([2.0, 1.0, 0.0])
    sampler = Sampler(vocab)
    for temperature in (0.5, 1.0, 2.0):
        s = state(vocab=vocab, temperature=temperature, seed=11)
        counts = torch.zeros(3)
        for _ in range(3000):
            (t,), _ = sampler.sample(logits.clone(), [s])
            counts[t] += 1
        expected = torch.softmax(logits[0, :3] / temperature, dim=-1)
        assert torch.allclose(counts / counts.sum(), expected, atol=0.03), (temperature, counts)


def run_steps(sampler: Sampler, rows: list[torch.Tensor], states: list[SamplerState],
              num_steps: int) -> list[list[int]]:
    out = [[] for _ in states]
    for _ in range(num_steps):
        tokens, _ = sampler.sample(torch.stack(rows), states)
        for i, (s, t) in enumerate(zip(states, tokens)):
            s.append(t)
            out[i].append(t)
    return out


def test_seeded_request_ignores_its_batch_neighbours():
    sampler = Sampler(VOCAB)
    mine = random_logits(1, seed=8, scale=1.0)[0]
    alone = run_steps(sampler, [mine], [state(temperature=0.9, top_p=0.95, seed=1234)], 20)[0]
    neighbours = random_logits(5, seed=9, scale=1.0)
    batch_states = [state(temperature=1.0, seed=i) for i in range(3)] + [
        state(temperature=0.9, top_p=0.95, seed=1234), state(temperature=0)]
    rows = [neighbours[0], neighbours[1], neighbours[2], mine, neighbours[3]]
    batched = run_steps(sampler, rows, batch_states, 20)
    assert batched[3] == alone
    assert len(set(alone)) > 5                         # it really sampled
    other_seed = run_steps(sampler, [mine], [state(temperature=0.9, top_p=0.95, seed=4321)], 20)[0]
    assert other_seed != alone


def test_unseeded_requests_differ_and_keep_their_stream():
    a, b = state(temperature=1.0), state(temperature=1.0)
    assert a.seed != b.seed                            # drawn once per request


def test_a_continued_copy_of_the_state_draws_the_same_tokens():
    """Retraction keeps the SamplerState object; a clone taken mid-stream
    (the same state at a pause) continues exactly like the undisturbed one."""
    sampler = Sampler(VOCAB)
    logits = random_logits(1, seed=10, scale=1.0)[0]
    params = dict(temperature=0.8, repetition_penalty=1.2, frequency_penalty=0.3, presence_penalty=0.2)
    undisturbed = state([1, 2, 3], **params, seed=99)
    head = run_steps(sampler, [logits], [undisturbed], 10)[0]
    paused = undisturbed.clone()
    tail = run_steps(sampler, [logits], [undisturbed], 10)[0]
    resumed = run_steps(sampler, [logits], [paused], 10)[0]
    assert resumed == tail
    fresh = state([1, 2, 3], **params, seed=99)          # and from scratch: same whole stream
    assert run_steps(sampler, [logits], [fresh], 20)[0] == head + tail


def test_logprobs_are_normalised_and_report_the_chosen_token():
    vocab = 20
    logits = random_logits(3, seed=12, vocab=vocab)
    states = [state(vocab=vocab, temperature=0, logprobs=20, repetition_penalty=1.4, outputs=[3, 4]),
              state(vocab=vocab, temperature=0.7, logprobs=2, seed=3),
              state(vocab=vocab, temperature=1.0, seed=3)]
    tokens, logprobs = Sampler(vocab).sample(logits.clone(), states)
    greedy, sampled, none = logprobs
    assert none is None
    assert math.isclose(sum(math.exp(v) for _, v in greedy.top), 1.0, rel_tol=1e-5)
    assert greedy.top[0] == (tokens[0], greedy.logprob) and len(greedy.top) == vocab
    assert [v for _, v in greedy.top] == sorted((v for _, v in greedy.top), reverse=True)
    expected = torch.log_softmax(logits[1] / 0.7, dim=-1)
    assert sampled.token_id == tokens[1]
    assert math.isclose(sampled.logprob, float(expected[tokens[1]]), abs_tol=1e-5)
    assert [t for t, _ in sampled.top] == expected.topk(2).indices.tolist()


def test_a_greedy_rows_logprobs_are_token_logprobs_of_its_log_softmax():
    """What verification of a draft reports for a kept token (engine.py) is, for a plain greedy
    row, exactly what the sampler reports: token_logprobs over the row's float32 log-softmax."""
    logits = random_logits(4, seed=14)
    top_ks = [0, 1, 5, 0]
    _, logprobs = Sampler(VOCAB).sample(logits.clone(), [state(temperature=0, logprobs=k) for k in top_ks])
    assert logprobs == token_logprobs(logits.log_softmax(-1), logits.argmax(-1).tolist(), top_ks)
    assert [len(item.top) for item in logprobs] == top_ks


def test_allowed_mask_comes_before_everything():
    logits = random_logits(2, seed=13)
    allowed = torch.zeros(2, VOCAB, dtype=torch.bool)
    allowed[:, 100:110] = True
    states = [state(temperature=0, logprobs=3), state(temperature=1.5, seed=1)]
    sampler = Sampler(VOCAB)
    for _ in range(20):
        tokens, logprobs = sampler.sample(logits.clone(), states, allowed)
        assert tokens[0] == 100 + int(logits[0, 100:110].argmax())
        assert 100 <= tokens[1] < 110
        assert all(100 <= t < 110 for t, _ in logprobs[0].top)
        # Logprobs are over the allowed tokens only.
        assert math.isclose(logprobs[0].logprob, float(torch.log_softmax(logits[0, 100:110], -1).max()), abs_tol=1e-5)
