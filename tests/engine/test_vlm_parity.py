"""Greedy generation with images through our engine is token-identical to
Hugging Face `generate` on the same tiny random-weight GLM-OCR, Qwen2-VL and
Qwen2.5-VL checkpoints: one image, a batch mixing image sizes with a text-only
request, two images in one prompt, a prefix-cache hit on a repeated image,
no false hit for a different image of the same size, chunked prefill cutting
through an image, and retraction under memory pressure."""
from __future__ import annotations

import asyncio
import io

import pytest
import torch

from engine.config import EngineConfig
from engine.async_engine import AsyncEngine
from engine.engine import Engine
from engine.sampling_params import SamplingParams
from tests.engine.tiny_vlm import build_tiny_vlm, png_bytes, random_image

FAMILIES = ["glm_ocr", "qwen2_vl", "qwen2_5_vl"]
NUM_TOKENS = 12


def greedy(n: int = NUM_TOKENS) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True)


@pytest.fixture(scope="module", params=FAMILIES)
def vlm(request, tmp_path_factory):
    return build_tiny_vlm(request.param, tmp_path_factory.mktemp(request.param))


@pytest.fixture(scope="module")
def engine(vlm):
    return Engine(EngineConfig(model=str(vlm.path), kv_tokens=4096, debug=True))


def image_token_span(vlm, prompt: str, images) -> tuple[int, int]:
    """[first, last + 1) of the image tokens in the reference's expanded prompt."""
    types = vlm.hf_inputs(prompt, images)["mm_token_type_ids"][0]
    where = types.nonzero().flatten()
    return int(where[0]), int(where[-1]) + 1


def test_single_image_matches_hf(vlm, engine):
    image = random_image(90, 60, seed=1)
    prompt = vlm.chat_prompt("Read the text.")
    out = engine.generate([prompt], greedy(), images=[[png_bytes(image)]])[0]
    assert out.token_ids == vlm.hf_greedy(prompt, [image], NUM_TOKENS)
    assert out.num_prompt_tokens == vlm.hf_inputs(prompt, [image])["input_ids"].shape[1]


def test_mrope_positions_match_hf_rope_index(vlm, engine):
    images = [random_image(90, 60, seed=2), random_image(60, 200, seed=3)]
    prompt = vlm.chat_prompt("Compare the two.", num_images=2)
    req = engine.make_request(prompt, greedy(), images=[png_bytes(i) for i in images])
    ref = vlm.hf_inputs(prompt, images)
    positions, delta = vlm.model.model.get_rope_index(
        ref["input_ids"], mm_token_type_ids=ref["mm_token_type_ids"], image_grid_thw=ref["image_grid_thw"])
    assert req.prompt_ids == ref["input_ids"][0].tolist()
    assert torch.equal(req.multimodal.positions, positions[:, 0])
    assert req.multimodal.position_delta == int(delta)


def test_batch_of_image_sizes_and_a_text_only_request_matches_hf(vlm, engine):
    cases = [("Read the text.", [random_image(90, 60, seed=4)]),
             ("What is written here?", [random_image(150, 100, seed=5)]),
             ("No picture in this one, just words.", []),
             ("Describe it.", [random_image(60, 200, seed=6)])]
    prompts = [vlm.chat_prompt(text, len(images)) for text, images in cases]
    outs = engine.generate(prompts, greedy(), images=[[png_bytes(i) for i in images] for _, images in cases])
    for prompt, (_, images), out in zip(prompts, cases, outs):
        assert out.token_ids == vlm.hf_greedy(prompt, images, NUM_TOKENS)


def test_two_images_in_one_prompt_match_hf(vlm, engine):
    images = [random_image(90, 60, seed=7), random_image(100, 130, seed=8)]
    prompt = vlm.chat_prompt("Compare the two.", num_images=2)
    out = engine.generate([prompt], greedy(), images=[[png_bytes(i) for i in images]])[0]
    assert out.token_ids == vlm.hf_greedy(prompt, images, NUM_TOKENS)


def test_repeated_image_hits_the_prefix_cache_and_the_encoder_cache(vlm, engine):
    engine.flush_cache()
    image = random_image(120, 90, seed=9)
    first_prompt, second_prompt = vlm.chat_prompt("Read the text."), vlm.chat_prompt("What colour is it?")
    first = engine.generate([first_prompt], greedy(), images=[[png_bytes(image)]])[0]
    assert first.num_cached_tokens == 0
    # The same pixels encoded as BMP: the cache key is the content, not the bytes.
    bmp = io.BytesIO()
    image.save(bmp, format="BMP")
    second = engine.generate([second_prompt], greedy(), images=[[bmp.getvalue()]])[0]
    _, image_end = image_token_span(vlm, second_prompt, [image])
    assert second.num_cached_tokens >= image_end
    assert second.token_ids == vlm.hf_greedy(second_prompt, [image], NUM_TOKENS)
    # Another tenant cannot use the prefix cache, but the encoder output is reused.
    encoder_cache = engine.runner.encoder_cache
    misses, hits = encoder_cache.num_misses, encoder_cache.num_hits
    other = engine.generate([first_prompt], greedy(), images=[[png_bytes(image)]], tenant="bob")[0]
    assert other.num_cached_tokens == 0
    assert encoder_cache.num_misses == misses and encoder_cache.num_hits > hits
    assert other.token_ids == first.token_ids


def test_different_image_of_the_same_size_does_not_hit(vlm, engine):
    engine.flush_cache()
    first, second = random_image(120, 90, seed=10), random_image(120, 90, seed=11)
    prompt = vlm.chat_prompt("Read the text.")
    engine.generate([prompt], greedy(), images=[[png_bytes(first)]])
    out = engine.generate([prompt], greedy(), images=[[png_bytes(second)]])[0]
    image_start, _ = image_token_span(vlm, prompt, [second])
    assert out.num_cached_tokens == image_start  # the shared text before the image, nothing of it
    expected = vlm.hf_greedy(prompt, [second], NUM_TOKENS)
    assert expected != vlm.hf_greedy(prompt, [first], NUM_TOKENS)  # the images do make a difference
    assert out.token_ids == expected


def test_chunked_prefill_through_images_matches_hf(vlm):
    # 5-token chunks: every image (6 to 35 tokens here) is cut, some chunks mix text and image.
    eng = Engine(EngineConfig(model=str(vlm.path), kv_tokens=4096, max_prefill_tokens=5, debug=True))
    cases = [("Read.", [random_image(150, 100, seed=12)]),
             ("Two of them.", [random_image(90, 60, seed=13), random_image(60, 200, seed=14)])]
    prompts = [vlm.chat_prompt(text, len(images)) for text, images in cases]
    outs = eng.generate(prompts, greedy(), images=[[png_bytes(i) for i in images] for _, images in cases])
    for prompt, (_, images), out in zip(prompts, cases, outs):
        assert out.token_ids == vlm.hf_greedy(prompt, images, NUM_TOKENS)


def test_retraction_with_images_matches_hf(vlm):
    # A pool just over one context: four image requests cannot all fit, so some are
    # retracted and resumed (their images re-embedded from the encoder cache).
    eng = Engine(EngineConfig(model=str(vlm.path), context_length=96, kv_tokens=110, max_prefill_tokens=32,
                              debug=True))
    images = [random_image(90, 60, seed=20 + i) for i in range(4)]
    prompts = [vlm.chat_prompt(f"Page {i}.") for i in range(4)]
    outs = eng.generate(prompts, greedy(24), images=[[png_bytes(i)] for i in images])
    assert eng.scheduler.num_retractions > 0
    for prompt, image, out in zip(prompts, images, outs):
        assert out.token_ids == vlm.hf_greedy(prompt, [image], 24)
    eng.pool.check_invariants()
    assert eng.scheduler.kv_used_tokens() == 0


def test_async_engine_takes_images(vlm):
    image = random_image(90, 60, seed=30)
    prompt = vlm.chat_prompt("Read the text.")
    front = AsyncEngine(EngineConfig(model=str(vlm.path), kv_tokens=2048))
    front.start()
    try:
        assert front.supports_images
        # What the HTTP layer does: an image part renders as the placeholder through the
        # engine's own tokenizer (chat template from the checkpoint folder).
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Read the text."}]}]
        assert front.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) == prompt

        async def run() -> list[int]:
            last = None
            async for out in front.generate(prompt, greedy(), images=[png_bytes(image)]):
                last = out
            return last.token_ids

        assert asyncio.run(run()) == vlm.hf_greedy(prompt, [image], NUM_TOKENS)
    finally:
        front.shutdown()
