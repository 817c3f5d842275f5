"""MTP (multi-token prediction) drafts for GLM-OCR, on tiny random-weight checkpoints laid out
as GLM-OCR ships its MTP layer (tests/engine/tiny_vlm.py, add_mtp_layer).

No one has published GLM-OCR's MTP layer in transformers, so the layer's arithmetic is checked
against a plain PyTorch reference written from the checkpoint's structure: transformers' own
GLM-OCR decoder layer holding the MTP block's weights, fed eh_proj([enorm(embed(next token)),
hnorm(final-norm hidden state of transformers' model)]), with full causal attention over the
sequence. The engine's MTP layer, run on the paged pool step by step (catch-up over prefill
chunks and accepted drafts), must give the same hidden states at every position.

Then exactness: greedy and seeded sampled outputs with MTP drafts are token for token the
outputs without them, for image and text requests together, under chunked prefill, prefix-cache
hits and retraction, with logprobs; the pool's invariants hold after."""
from __future__ import annotations

import json

import pytest
import torch

from engine.config import EngineConfig
from engine.engine import Engine, EngineStartupError
from engine.grammar import GrammarSpec
from engine.sampling_params import SamplingParams
from tests.engine.tiny_vlm import MTP_PREFIX, TEXT, add_mtp_layer, build_tiny_vlm, png_bytes, random_image


@pytest.fixture(scope="module")
def glm_mtp(tmp_path_factory):
    vlm = build_tiny_vlm("glm_ocr", tmp_path_factory.mktemp("glm_mtp") / "ckpt")
    return vlm, add_mtp_layer(vlm, seed=3)


@pytest.fixture(scope="module")
def glm_copy_mtp(tmp_path_factory):
    vlm = build_tiny_vlm("glm_ocr", tmp_path_factory.mktemp("glm_copy_mtp") / "ckpt", seed=5)
    return vlm, add_mtp_layer(vlm, copy_head=True)


def engine(vlm, algorithm: str = "mtp", **overrides) -> Engine:
    settings = dict(model=str(vlm.path), kv_tokens=4096, debug=True, speculative_algorithm=algorithm,
                    draft_tokens=3)
    settings.update(overrides)
    return Engine(EngineConfig(**settings))


def reference_mtp_hidden(vlm, mtp: dict[str, torch.Tensor], ids: list[int]) -> torch.Tensor:
    """[len(ids) - 1, hidden]: the MTP layer's output at positions 0 .. n-2 of a text sequence."""
    from transformers.models.glm_ocr.modeling_glm_ocr import GlmOcrTextDecoderLayer

    text_model = vlm.model.model.language_model
    config = text_model.config
    p = MTP_PREFIX + "2."
    block = GlmOcrTextDecoderLayer(config, layer_idx=0).eval()
    block.load_state_dict({k[len(p):]: v for k, v in mtp.items()
                           if k.startswith(p) and not k[len(p):].startswith(("enorm", "hnorm", "eh_proj",
                                                                             "shared_head", "embed_tokens"))})
    eps = config.rms_norm_eps

    def rms(x, weight):
        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    tokens = torch.tensor([ids])
    with torch.inference_mode():
        hidden = text_model(input_ids=tokens).last_hidden_state[0]          # after the final norm
        embed = text_model.embed_tokens(tokens[0, 1:]).clone()              # the token after each position
        embed[0] = 0.0                                                      # position 0 reads no token
        x = torch.cat([rms(embed, mtp[p + "enorm.weight"]), rms(hidden[:-1], mtp[p + "hnorm.weight"])], dim=-1)
        x = (x @ mtp[p + "eh_proj.weight"].T)[None]
        length = x.shape[1]
        positions = torch.arange(length)[None].expand(3, 1, -1)            # text only: t = h = w = index
        cos_sin = text_model.rotary_emb(x, positions)
        causal = torch.full((length, length), float("-inf")).triu(1)[None, None]
        out = block(x, attention_mask=causal, position_ids=positions, position_embeddings=cos_sin)
    return (out[0] if isinstance(out, tuple) else out)[0]


def test_mtp_layer_matches_plain_pytorch_reference(glm_mtp):
    vlm, mtp = glm_mtp
    eng = engine(vlm, draft_tokens=1, max_prefill_tokens=7)   # the prompt in chunks of 7
    model = eng.runner.model
    seen: dict[int, torch.Tensor] = {}
    original = model.mtp_forward

    def recording(batch, hidden, pool, first_rows, step=0):
        h, logits = original(batch, hidden, pool, first_rows, step)
        if step == 0:   # catch-up rows: positions the model computed, with their true next token
            for pos, row in zip(batch.positions[0].tolist(), h):
                seen[pos] = row.clone()
        return h, logits

    model.mtp_forward = recording
    prompt = eng.tokenize(vlm.chat_prompt("Read this: the quick brown fox.", num_images=0))
    out = eng.generate([prompt], SamplingParams(temperature=0.0, max_tokens=10, ignore_eos=True))[0]
    ids = prompt + out.token_ids
    reference = reference_mtp_hidden(vlm, mtp, ids)
    # every position up to the last output token's predecessor was caught up exactly once
    assert sorted(seen) == list(range(len(ids) - 1))
    got = torch.stack([seen[p] for p in range(len(ids) - 1)])
    torch.testing.assert_close(got, reference, rtol=1e-4, atol=1e-4)
    eng.pool.check_invariants()


def test_mtp_startup_needs_mtp_layers(tmp_path):
    vlm = build_tiny_vlm("glm_ocr", tmp_path / "plain")
    with pytest.raises(EngineStartupError, match="multi-token-prediction"):
        engine(vlm)


def mixed_requests(vlm, eng):
    images = [png_bytes(random_image(90, 60, seed=s)) for s in (1, 2)]
    prompts = [vlm.chat_prompt("Read the text."), vlm.chat_prompt("Read the text."),
               vlm.chat_prompt("What is written here?"), vlm.chat_prompt("Say something.", num_images=0)]
    return prompts, [[images[0]], [images[0]], [images[1]], None]


def streamed(eng, prompts, params, images) -> list[tuple[list[int], list]]:
    """Each request's tokens and logprobs, gathered from the step outputs' deltas; the prompt
    tokens each request found in the prefix cache in `eng.cached`."""
    reqs = [eng.add_request(p, sp, images=im) for p, sp, im in zip(prompts, params, images)]
    got = {r.request_id: ([], []) for r in reqs}
    eng.cached = {}
    done: set[str] = set()
    while len(done) < len(reqs):
        for out in eng.step():
            got[out.request_id][0].extend(out.delta_token_ids)
            got[out.request_id][1].extend(out.delta_logprobs)
            if out.finished:
                done.add(out.request_id)
                eng.cached[out.request_id] = out.num_cached_tokens
    return [got[r.request_id] for r in reqs]


@pytest.mark.parametrize("fixture", ["glm_mtp", "glm_copy_mtp"])
def test_mtp_greedy_output_is_the_undrafted_output(fixture, request):
    vlm, _ = request.getfixturevalue(fixture)
    params = [SamplingParams(temperature=0.0, max_tokens=24, ignore_eos=True),
              SamplingParams(temperature=0.0, max_tokens=20, ignore_eos=True, logprobs=2),
              SamplingParams(temperature=0.0, max_tokens=18, ignore_eos=True, frequency_penalty=0.5),
              SamplingParams(temperature=0.0, max_tokens=24, ignore_eos=True)]
    plain = engine(vlm, "none")
    prompts, images = mixed_requests(vlm, plain)
    expected = streamed(plain, prompts, params, images)
    # chunked prefill (chunks of 16), a prefix-cache hit (requests 0 and 1 share image and prompt)
    eng = engine(vlm, max_prefill_tokens=16)
    got = streamed(eng, prompts, params, images)
    for (want_ids, _), (got_ids, _) in zip(expected, got):
        assert got_ids == want_ids
    want_lp, got_lp = expected[1][1], got[1][1]
    assert len(got_lp) == len(want_lp) == 20
    for e, g in zip(want_lp, got_lp):
        assert e.token_id == g.token_id
        assert e.logprob == pytest.approx(g.logprob, abs=1e-4)
        assert [t for t, _ in e.top] == [t for t, _ in g.top]
    assert sum(eng.cached.values()) > 0       # some prompt tokens came from the prefix cache
    assert eng.num_draft_tokens > 0
    if fixture == "glm_copy_mtp":   # the copy layer's drafts hold where the model repeats itself
        assert eng.num_accepted_draft_tokens > 0
    eng.pool.check_invariants()


def test_mtp_under_retraction_and_sampling(glm_copy_mtp):
    vlm, _ = glm_copy_mtp
    prompts, images = mixed_requests(vlm, None)
    params = [SamplingParams(temperature=0.0, max_tokens=40, ignore_eos=True),
              SamplingParams(temperature=0.8, max_tokens=40, ignore_eos=True, seed=11),
              SamplingParams(temperature=0.0, max_tokens=40, ignore_eos=True),
              SamplingParams(temperature=1.0, top_k=20, max_tokens=40, ignore_eos=True, seed=12)]
    expected = engine(vlm, "none").generate(prompts, params, images=images)
    # a pool too small for all four at once: requests are retracted and recomputed
    eng = engine(vlm, kv_tokens=110, context_length=96, max_prefill_tokens=32)
    got = eng.generate(prompts, params, images=images)
    assert eng.scheduler.num_retractions > 0
    for e, g in zip(expected, got):
        assert g.token_ids == e.token_ids
    assert eng.num_accepted_draft_tokens > 0
    eng.pool.check_invariants()


def test_mtp_pool_holds_one_more_layer(glm_mtp):
    vlm, _ = glm_mtp
    assert engine(vlm).pool.num_layers == TEXT["num_hidden_layers"] + 1
    assert engine(vlm, "none").pool.num_layers == TEXT["num_hidden_layers"]


def test_mtp_with_grammars_stops_and_requests_without_drafts(glm_copy_mtp):
    """A JSON schema, a regex and an EBNF grammar (their forced text drafted first, MTP after),
    a stop string, and a request that switched drafts off, in one batch with a plain one."""
    vlm, _ = glm_copy_mtp
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 4},
                                               "paid": {"type": "boolean"}}, "required": ["name", "paid"]}
    params = [SamplingParams(temperature=0.0, max_tokens=120, grammar=GrammarSpec(json_schema=json.dumps(schema))),
              SamplingParams(temperature=0.0, max_tokens=20, grammar=GrammarSpec(regex="(ab|cd)+ [0-9]{3}")),
              SamplingParams(temperature=0.0, max_tokens=20, grammar=GrammarSpec(ebnf='root ::= "total: " [0-9]+')),
              SamplingParams(temperature=0.0, max_tokens=30, ignore_eos=True, stop=["e"]),
              SamplingParams(temperature=0.0, max_tokens=30, ignore_eos=True, speculative=False)]
    prompts, images = mixed_requests(vlm, None)
    prompts, images = prompts + [prompts[3]], images + [None]
    want = streamed(engine(vlm, "none"), prompts, params, images)
    eng = engine(vlm)
    got = streamed(eng, prompts, params, images)
    assert [g for g, _ in got] == [w for w, _ in want]
    text = eng.tokenizer.decode(got[0][0], skip_special_tokens=True)
    assert set(json.loads(text)) == {"name", "paid"}
    assert eng.num_accepted_draft_tokens > 0
    eng.pool.check_invariants()
