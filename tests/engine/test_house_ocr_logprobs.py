"""Logprobs of house-ocr requests decoded with drafts (the shipped model, as in
test_house_ocr.py).

A drafted request is plain greedy, so "the same logprobs" has one meaning: for
each output token, the log-softmax in float32 of the decoder's raw logits at
the position that predicts it, gathered at the token (and its top k). Decoding
one token a step, verifying drafted tokens together and rescoring a draft with
one dense pass compute the logits with different forward passes, so the values
agree to float rounding, not bit for bit: TOLERANCE, in nats.

- With drafts on, a logprobs request gets the same tokens and the same draft
  acceptance as one without, and the logprobs of plain one-token-a-step greedy
  decoding (speculative decoding and rescoring off).
- With rescoring on, a line whose draft is kept reports the draft's tokens'
  decoder log-probs, checked against the plain PyTorch reference model."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import ImageFilter

from engine.config import EngineConfig
from engine.engine import Engine
from engine.loader import resolve_model
from engine.models.line_encoder import LineEncoder
from engine.sampler import TokenLogprobs
from engine.sampling_params import SamplingParams
from tests.engine.test_house_ocr import HARD_LINES, LINES, MAX_TOKENS, png, prompt, render
from training.house_ocr.export import load_exported
from training.house_ocr.model import merge_frames, prompt_ids

pytestmark = pytest.mark.slow

TOLERANCE = 1e-4


def run(engine: Engine, crops, params: SamplingParams):
    """All crops' requests to the end, batched: (requests, final outputs, every TokenLogprobs of each)."""
    engine.flush_cache()   # each run scheduled alike: the same drafts verified in the same steps
    requests = [engine.add_request(prompt(engine), params, images=[png(crop)]) for crop in crops]
    logprobs = {r.request_id: [] for r in requests}
    final = {}
    while engine.has_work:
        for out in engine.step():
            logprobs[out.request_id] += out.delta_logprobs
            if out.finished:
                final[out.request_id] = out
    return requests, [final[r.request_id] for r in requests], [logprobs[r.request_id] for r in requests]


def reference_log_probs(reference, features: torch.Tensor, y: list[int]) -> torch.Tensor:
    """[len(y), vocab]: the reference decoder's log-probabilities at each token of the reading y,
    the whole sequence in one forward pass."""
    image = reference.projector(merge_frames(features))
    prompt = prompt_ids(image.shape[0])
    with torch.no_grad():
        logits = reference.forward_logits(torch.tensor([prompt + y]), [image])[0]
    return logits.float().log_softmax(-1)[len(prompt) - 1:-1]


def assert_same_logprobs(got: list, expected: list) -> None:
    """Same tokens, same top-k ids in the same order, values within TOLERANCE."""
    assert [g.token_id for g in got] == [e.token_id for e in expected]
    assert [g.logprob for g in got] == pytest.approx([e.logprob for e in expected], abs=TOLERANCE, rel=0)
    assert [[t for t, _ in g.top] for g in got] == [[t for t, _ in e.top] for e in expected]
    for g, e in zip(got, expected):
        assert [v for _, v in g.top] == pytest.approx([v for _, v in e.top], abs=TOLERANCE, rel=0)


@pytest.fixture(scope="module")
def reference():
    torch.manual_seed(0)
    return load_exported(resolve_model("house-ocr"))


def test_verified_tokens_report_the_logprobs_of_one_token_a_step_decoding():
    crops = [render(*line) for line in LINES]
    config = dict(model="house-ocr", ctc_rescoring=False, kv_tokens=8192, debug=True)
    drafting = Engine(EngineConfig(**config, speculative_tokens=32))
    plain = Engine(EngineConfig(**config, speculative_tokens=0))
    bare_requests, bare, bare_logprobs = run(drafting, crops, SamplingParams(temperature=0, max_tokens=MAX_TOKENS))
    assert all(not items for items in bare_logprobs)
    bare_accepted = drafting.num_accepted_draft_tokens
    assert bare_accepted > 0
    for top in (0, 3):   # 0: the chosen token's only (what `"logprobs": true` asks for)
        params = SamplingParams(temperature=0, max_tokens=MAX_TOKENS, logprobs=top)
        requests, outputs, logprobs = run(drafting, crops, params)
        plain_requests, plain_outputs, expected = run(plain, crops, params)
        assert [o.token_ids for o in outputs] == [o.token_ids for o in bare] == [o.token_ids for o in plain_outputs]
        # asking for logprobs changes nothing in how drafts are proposed and accepted
        assert [(r.draft.num_proposed, r.draft.num_accepted) for r in requests] == [
            (r.draft.num_proposed, r.draft.num_accepted) for r in bare_requests]
        # most lines are read whole from their drafts: their logprobs all come from verification
        assert sum(r.draft.num_accepted == len(o.token_ids) for r, o in zip(requests, outputs)) >= 4
        assert all(r.draft is None for r in plain_requests)   # no drafter, no draft state: nothing proposed
        for output, got, want in zip(outputs, logprobs, expected):
            assert len(got) == len(output.token_ids) and all(len(item.top) == top for item in got)
            assert_same_logprobs(got, want)
    assert drafting.num_accepted_draft_tokens == 3 * bare_accepted
    assert plain.num_draft_tokens == 0


def test_a_kept_draft_reports_its_own_tokens_decoder_logprobs(reference):
    crops = [render(*line).filter(ImageFilter.GaussianBlur(0.6)) for line in HARD_LINES]
    encoder = LineEncoder(1)
    features = [torch.from_numpy(encoder.encode(np.asarray(crop))) for crop in crops]
    greedy_ids = [reference.greedy(f, 256) for f in features]
    expected = [reference.decode(f, 256) for f in features]
    kept = [i for i, (g, e) in enumerate(zip(greedy_ids, expected)) if g != e]
    assert kept, "no line keeps its draft: the test checks nothing"

    engine = Engine(EngineConfig(model="house-ocr", kv_tokens=8192, debug=True))
    _, bare, _ = run(engine, crops, SamplingParams(temperature=0, max_tokens=256))
    bare_rescored, bare_chosen = engine.num_rescored, engine.num_draft_chosen
    assert bare_chosen == len(kept)
    for top in (0, 3):
        requests, outputs, logprobs = run(engine, crops, SamplingParams(temperature=0, max_tokens=256, logprobs=top))
        assert all(r.draft.rescore for r in requests)
        assert [o.token_ids for o in outputs] == [o.token_ids for o in bare] == expected
        for ids, got, f in zip(expected, logprobs, features):
            rows = reference_log_probs(reference, f, ids)                                   # [len(ids), vocab]
            chosen = rows.gather(1, torch.tensor(ids)[:, None]).squeeze(1).tolist()
            values, indices = rows.topk(top, dim=-1)
            want = [TokenLogprobs(t, v, list(zip(i, vs))) for t, v, i, vs in
                    zip(ids, chosen, indices.tolist(), values.tolist())]
            assert len(got) == len(ids)
            assert_same_logprobs(got, want)
        for i in kept:   # not the greedy reading's: the draft's own tokens, as the decoder scores them
            assert [item.token_id for item in logprobs[i]] == expected[i] != greedy_ids[i]
    assert engine.num_rescored == 3 * bare_rescored and engine.num_draft_chosen == 3 * bare_chosen
    engine.pool.check_invariants()
