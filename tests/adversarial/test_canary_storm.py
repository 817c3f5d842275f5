"""Canary leak storm (DESIGN invariant 3): nothing one request wrote reaches another's output.

Two storms on the in-process `Engine`, with the KV pool in debug mode (freed slots
poisoned, the owner of every write checked):

- text: at least 10,000 requests on a tiny random-weight Llama, from 48 tenants
  whose shared prompt prefixes give prefix-cache hits (pairs of tenants share the
  same prefix tokens, which the per-tenant salt must keep apart), each prompt with
  a unique 6-token canary; a small KV pool forces retraction; about one request in
  ten is aborted at a random step (waiting, prefilling or decoding); greedy and
  seeded sampled requests (with a repetition penalty, which retraction must
  preserve); the cache is flushed now and then mid-storm.
- house-ocr: line images, each with a unique canary word, read by the shipped house
  OCR model with its CTC drafts verified speculatively, under the same pressure.

Detection: a random-weight model does not copy its prompt, so a canary in another
request's output would be found only by luck; the strong check is that every
request that was not aborted gives exactly the tokens it gives in an undisturbed
run (a clean engine, no prefix cache, a pool large enough that nothing is
retracted), since any foreign K/V changes its logits. The canary check is made
too, and for the house model it is real: the model reads its canary, so a leak
would show as another request's word.
"""
from __future__ import annotations

import random
import shutil
import string

import pytest
import torch

from engine.config import EngineConfig
from engine.engine import Engine
from engine.sampling_params import SamplingParams

from .conftest import report, scaled

pytestmark = pytest.mark.slow

VOCAB = 1024
CANARY_LEN = 6
NUM_TENANTS = 48
MAX_OUTSTANDING = 160     # requests added but not finished: a steady queue in front of admission


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory, smollm2_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    path = tmp_path_factory.mktemp("tiny-llama")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      eos_token_id=None, bos_token_id=None, pad_token_id=None, tie_word_embeddings=False)
    LlamaForCausalLM(cfg).eval().save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(smollm2_path / name, path / name)
    return path


def make_storm(num_requests: int, seed: int):
    """(tenant, prompt ids, canary, params) per request; canaries are unique."""
    rng = random.Random(seed)
    prefixes = [[rng.randrange(3, VOCAB) for _ in range(rng.randint(8, 40))] for _ in range(NUM_TENANTS // 2)]
    canaries: set[tuple[int, ...]] = set()
    storm = []
    for i in range(num_requests):
        tenant = i % NUM_TENANTS if rng.random() < 0.5 else rng.randrange(NUM_TENANTS)
        while (canary := tuple(rng.randrange(3, VOCAB) for _ in range(CANARY_LEN))) in canaries:
            pass
        canaries.add(canary)
        # Tenants t and t + 24 share their prefix tokens: only the tenant salt keeps them apart.
        prompt = prefixes[tenant % len(prefixes)] + list(canary) + [rng.randrange(3, VOCAB)
                                                                    for _ in range(rng.randint(1, 6))]
        draw = rng.random()
        if draw < 0.3:
            params = SamplingParams(temperature=0.9, top_k=50, repetition_penalty=1.2, seed=i,
                                    max_tokens=rng.randint(3, 10), ignore_eos=True)
        elif draw < 0.4:    # greedy under a penalty: its drafts are verified position by position
            params = SamplingParams(temperature=0.0, frequency_penalty=0.4, max_tokens=rng.randint(3, 10),
                                    ignore_eos=True)
        else:
            params = SamplingParams(temperature=0.0, max_tokens=rng.randint(3, 10), ignore_eos=True)
        storm.append((f"tenant-{tenant}", prompt, canary, params))
    return storm


def reference_outputs(model_path, storm) -> list[list[int]]:
    """Each request undisturbed: no prefix cache, no retraction, no aborts."""
    engine = Engine(EngineConfig(model=str(model_path), context_length=128, kv_tokens=32768,
                                 enable_prefix_cache=False, max_running_requests=256, max_prefill_tokens=4096))
    outputs = []
    for start in range(0, len(storm), 256):
        chunk = storm[start:start + 256]
        outputs += [o.token_ids for o in engine.generate([s[1] for s in chunk], [s[3] for s in chunk])]
    return outputs


def contains(haystack: list[int], needle: tuple[int, ...]) -> bool:
    n = len(needle)
    return any(tuple(haystack[i:i + n]) == needle for i in range(len(haystack) - n + 1))


def test_text_storm_no_canary_leaks_and_the_pool_is_whole(tiny_llama):
    num_requests = scaled(10_000)
    storm = make_storm(num_requests, seed=20)
    # n-gram drafts for the greedy requests (the reference has none): verified under retraction and aborts
    engine = Engine(EngineConfig(model=str(tiny_llama), context_length=128, kv_tokens=640, max_prefill_tokens=192,
                                 max_running_requests=48, debug=True, speculative_algorithm="ngram",
                                 draft_tokens=4, ngram_min=1))
    rng = random.Random(21)
    index_of: dict[str, int] = {}
    abort_at: dict[str, int] = {}     # request id -> the step at which it is aborted
    finished: dict[int, object] = {}
    next_request, num_aborted, num_flushes, num_loops = 0, 0, 0, 0
    while next_request < num_requests or engine.has_work:
        num_loops += 1
        while next_request < num_requests and len(index_of) < MAX_OUTSTANDING:
            tenant, prompt, _, params = storm[next_request]
            rid = f"r{next_request}"
            engine.add_request(prompt, params, request_id=rid, tenant=tenant)
            index_of[rid] = next_request
            if rng.random() < 0.1:
                abort_at[rid] = engine.num_steps + rng.randint(0, 40)
            next_request += 1
        for out in engine.step():
            if out.finished:
                finished[index_of.pop(out.request_id)] = out
                abort_at.pop(out.request_id, None)
        for rid, step in list(abort_at.items()):
            if step <= engine.num_steps:
                out = engine.abort(rid)
                assert out is not None and out.finish_reason == "abort"
                finished[index_of.pop(rid)] = out
                del abort_at[rid]
                num_aborted += 1
        if num_loops % 997 == 0:
            engine.flush_cache()      # drops unlocked entries under running requests
            num_flushes += 1

    assert len(finished) == num_requests and not index_of
    engine.pool.check_invariants()
    engine.cache.check_invariants()
    engine.flush_cache()
    assert engine.scheduler.kv_used_tokens() == 0
    num_cached = sum(o.num_cached_tokens for o in finished.values())
    # The storm did what it says: retraction, aborts, prefix-cache hits.
    assert engine.scheduler.num_retractions > 0 and num_aborted >= num_requests // 20 and num_cached > 0
    assert engine.num_accepted_draft_tokens > 0

    reference = reference_outputs(tiny_llama, storm)
    completed = [i for i, o in finished.items() if o.finish_reason != "abort"]
    mismatched = [i for i in completed if finished[i].token_ids != reference[i]]
    assert not mismatched, [(i, finished[i].token_ids, reference[i]) for i in mismatched[:5]]
    # The canary check proper: no request's canary in any other request's output.
    outputs = {i: o.token_ids for i, o in finished.items()}
    canary_index = {storm[i][2]: i for i in range(num_requests)}
    for i, token_ids in outputs.items():
        for j in range(len(token_ids) - CANARY_LEN + 1):
            owner = canary_index.get(tuple(token_ids[j:j + CANARY_LEN]))
            assert owner is None or owner == i, f"request {i}'s output holds request {owner}'s canary"
    report("canary storm (text)", requests=num_requests, completed=len(completed), aborted=num_aborted,
           retractions=engine.scheduler.num_retractions, cached_prompt_tokens=num_cached,
           steps=engine.num_steps, flushes=num_flushes, tenants=NUM_TENANTS,
           ngram_drafted=engine.num_draft_tokens, ngram_accepted=engine.num_accepted_draft_tokens)


# ---------------------------------------------------------------------------------------- house-ocr

DEJAVU = "/usr/share/fonts/truetype/dejavu/"


def canary_word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_uppercase) for _ in range(3)) + "-" + "".join(
        rng.choice(string.digits) for _ in range(4))


def line_png(text: str, size: int) -> bytes:
    import io

    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(DEJAVU + "DejaVuSans.ttf", size)
    left, top, right, bottom = font.getbbox(text)
    pad = max(4, size // 3)
    image = Image.new("RGB", (right - left + 2 * pad, bottom - top + 2 * pad), "white")
    ImageDraw.Draw(image).text((pad - left, pad - top), text, font=font, fill="black")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_house_ocr_storm_with_drafts_reads_only_its_own_canary():
    rng = random.Random(30)
    num_lines = scaled(48)
    words = []
    while len(words) < num_lines:
        if (word := canary_word(rng)) not in words:
            words.append(word)
    images = [line_png(f"Ref {word}", rng.choice((20, 24, 28))) for word in words]
    # Each line is sent several times (prefix-cache hits on the same image), from several tenants; greedy
    # requests get the CTC draft, seeded sampled ones decode token by token and so hold K/V longer.
    plan = [(i, f"tenant-{rng.randrange(6)}", kind) for i in range(num_lines) for kind in ("greedy", "sampled")
            for _ in range(2)]
    rng.shuffle(plan)
    params = {"greedy": SamplingParams(temperature=0.0, max_tokens=32),
              "sampled": SamplingParams(temperature=0.7, seed=1234, max_tokens=32)}

    clean = Engine(EngineConfig(model="house-ocr", ctc_rescoring=False, enable_prefix_cache=False, kv_tokens=16384))
    prompt = clean.tokenizer.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Text Recognition:"}]}],
        add_generation_prompt=True, tokenize=False)
    alone = {kind: [o.token_ids for o in clean.generate([prompt] * num_lines, kind_params,
                                                        images=[[png] for png in images])]
             for kind, kind_params in params.items()}

    engine = Engine(EngineConfig(model="house-ocr", ctc_rescoring=False, context_length=64, kv_tokens=160,
                                 max_prefill_tokens=64, max_running_requests=24, debug=True))
    index_of, finished, abort_at = {}, {}, {}
    num_aborted, next_request = 0, 0
    while next_request < len(plan) or engine.has_work:
        while next_request < len(plan) and len(index_of) < 48:
            line, tenant, kind = plan[next_request]
            rid = f"h{next_request}"
            engine.add_request(prompt, params[kind], request_id=rid, tenant=tenant, images=[images[line]])
            index_of[rid] = next_request
            if rng.random() < 0.1:
                abort_at[rid] = engine.num_steps + rng.randint(0, 6)
            next_request += 1
        for out in engine.step():
            if out.finished:
                finished[index_of.pop(out.request_id)] = out
                abort_at.pop(out.request_id, None)
        for rid, step in list(abort_at.items()):
            if step <= engine.num_steps:
                finished[index_of.pop(rid)] = engine.abort(rid)
                del abort_at[rid]
                num_aborted += 1

    engine.pool.check_invariants()
    engine.cache.check_invariants()
    engine.flush_cache()
    assert engine.scheduler.kv_used_tokens() == 0
    assert engine.num_accepted_draft_tokens > 0 and engine.scheduler.num_retractions > 0
    num_cached = sum(o.num_cached_tokens for o in finished.values())
    assert num_cached > 0
    num_read = 0
    for k, out in finished.items():
        line, _, kind = plan[k]
        if out.finish_reason == "abort":
            continue
        assert out.token_ids == alone[kind][line], (words[line], out.text)
        others = [w for j, w in enumerate(words) if j != line and w in out.text]
        assert not others, f"line {words[line]!r} was read as {out.text!r}, which holds {others}"
        num_read += kind == "greedy" and words[line] in out.text
    # The model really reads its canaries (so the check above can see a leak).
    assert num_read >= len(plan) // 4
    report("canary storm (house-ocr)", requests=len(plan), lines=num_lines, aborted=num_aborted,
           retractions=engine.scheduler.num_retractions, drafted=engine.num_draft_tokens,
           accepted=engine.num_accepted_draft_tokens, cached_prompt_tokens=num_cached, canaries_read=num_read)
