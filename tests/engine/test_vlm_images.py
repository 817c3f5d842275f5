"""Images a request may not carry are refused at admission with an
InvalidRequestError that says why, before any pixel is decoded where the
header already tells (PNG and BMP, the uncompressed encoding local clients
send); the engine keeps serving afterwards. Also: placeholder and image counts
must agree, text-only models refuse images, the prefix-cache key of an image's
tokens is derived from its pixels, and an image sent again is not preprocessed
again."""
from __future__ import annotations

import io
import struct
import zlib

import pytest
import torch
from PIL import Image

from engine.config import EngineConfig
from engine.engine import Engine
from engine.errors import InvalidRequestError
from engine.multimodal.config import MultimodalConfig
from engine.multimodal.encoder_cache import EncoderCache
from engine.sampling_params import SamplingParams
from tests.engine.tiny_vlm import VOCAB_SIZE, build_tiny_vlm, byte_tokenizer, png_bytes, random_image

LIMITS = MultimodalConfig(max_image_bytes=200_000, max_image_pixels=1_000_000, max_images_per_request=2)


def greedy(n: int = 4) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True)


def png_header_bomb(width: int, height: int) -> bytes:
    """A valid 1-bit PNG of width x height zeros: tens of kilobytes that decode to width*height pixels."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\0" * (1 + (width + 7) // 8)  # filter byte + packed bits
    z = zlib.compressobj(6)
    idat = b"".join(z.compress(row) for _ in range(height)) + z.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def bmp_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="BMP")
    return buffer.getvalue()


def bmp_header_bomb(width: int, height: int) -> bytes:
    """A 24-bit BMP header declaring width x height pixels, followed by a few bytes of them."""
    row = (3 * width + 3) // 4 * 4
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, row * height, 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + 40 + row * height, 0, 0, 14 + 40) + info + b"\0" * 64


@pytest.fixture(scope="module")
def vlm(tmp_path_factory):
    return build_tiny_vlm("qwen2_vl", tmp_path_factory.mktemp("qwen2_vl"))


@pytest.fixture(scope="module")
def engine(vlm):
    return Engine(EngineConfig(model=str(vlm.path), kv_tokens=2048, debug=True), multimodal_config=LIMITS)


def refusal(engine, images, prompt: str | None = None, vlm=None) -> str:
    prompt = prompt if prompt is not None else vlm.chat_prompt("Read.", num_images=len(images))
    with pytest.raises(InvalidRequestError) as err:
        engine.make_request(prompt, greedy(), images=images)
    assert err.value.param == "images"
    return str(err.value)


def test_bad_images_are_refused_with_clear_messages(vlm, engine):
    one_pixel_wide = png_bytes(Image.new("RGB", (1, 300), "white"))
    assert "1x300 pixels" in refusal(engine, [one_pixel_wide], vlm=vlm)
    assert "at least 4 pixels" in refusal(engine, [one_pixel_wide], vlm=vlm)

    bomb = png_header_bomb(20_000, 20_000)
    assert len(bomb) < LIMITS.max_image_bytes  # small on the wire; 400 megapixels decoded
    assert "decompression bomb" in refusal(engine, [bomb], vlm=vlm)
    # Under PIL's own guard, our pixel cap reads the size from the header.
    message = refusal(engine, [png_header_bomb(2000, 2000)], vlm=vlm)
    assert "2000x2000" in message and "limit is 1000000 pixels" in message and "before decoding" in message

    whole = png_bytes(random_image(200, 150, seed=1))
    assert "truncated or corrupt" in refusal(engine, [whole[: len(whole) // 2]], vlm=vlm)
    assert "not an image in a supported format" in refusal(engine, [b"%PDF-1.7 this is no picture" * 10], vlm=vlm)
    assert "is empty" in refusal(engine, [b""], vlm=vlm)
    assert "limit is 200000 bytes" in refusal(engine, [b"\x89PNG" + b"\0" * 200_000], vlm=vlm)
    strip = png_bytes(Image.new("RGB", (1000, 4), "white"))
    assert "aspect ratio of 250:1" in refusal(engine, [strip], vlm=vlm)

    # Nothing above reached the scheduler; the engine still serves.
    image = random_image(90, 60, seed=2)
    prompt = vlm.chat_prompt("Read.")
    out = engine.generate([prompt], greedy(), images=[[png_bytes(image)]])[0]
    assert out.token_ids == vlm.hf_greedy(prompt, [image], 4)


def test_a_bmp_reads_as_the_png_of_its_pixels_and_bad_ones_are_refused_before_decoding(vlm, engine):
    image = random_image(90, 60, seed=8)
    prompt = vlm.chat_prompt("Read.")
    as_png = engine.make_request(prompt, greedy(), images=[png_bytes(image)])
    as_bmp = engine.make_request(prompt, greedy(), images=[bmp_bytes(image)])
    assert as_bmp.cache_key_ids == as_png.cache_key_ids
    assert torch.equal(as_bmp.multimodal.images[0].pixel_values, as_png.multimodal.images[0].pixel_values)

    bomb = bmp_header_bomb(20_000, 20_000)
    assert len(bomb) < 200   # 1.2 GB of pixels declared
    assert "decompression bomb" in refusal(engine, [bomb], vlm=vlm)
    message = refusal(engine, [bmp_header_bomb(2000, 2000)], vlm=vlm)
    assert "2000x2000" in message and "limit is 1000000 pixels" in message and "before decoding" in message
    whole = bmp_bytes(random_image(200, 150, seed=9))
    assert "truncated or corrupt" in refusal(engine, [whole[: len(whole) // 2]], vlm=vlm)
    assert "limit is 200000 bytes" in refusal(engine, [b"BM" + b"\0" * 200_000], vlm=vlm)
    assert "aspect ratio of 250:1" in refusal(engine, [bmp_bytes(Image.new("RGB", (1000, 4), "white"))], vlm=vlm)
    out = engine.generate([prompt], greedy(), images=[[bmp_bytes(image)]])[0]
    assert out.token_ids == vlm.hf_greedy(prompt, [image], 4)


def test_an_image_sent_again_is_not_preprocessed_again(vlm):
    engine = Engine(EngineConfig(model=str(vlm.path), kv_tokens=2048))
    preprocessor = engine.multimodal.preprocessor
    calls = []
    original = preprocessor.preprocess
    preprocessor.preprocess = lambda image, label: calls.append(label) or original(image, label)
    prompt = vlm.chat_prompt("Read.")
    image, other = random_image(90, 60, seed=10), random_image(90, 60, seed=11)
    first = engine.generate([prompt], greedy(), images=[[png_bytes(image)]])[0]
    again = engine.generate([prompt], greedy(), images=[[bmp_bytes(image)]])[0]   # the same pixels
    assert len(calls) == 1 and again.token_ids == first.token_ids == vlm.hf_greedy(prompt, [image], 4)
    engine.make_request(prompt, greedy(), images=[png_bytes(other)])
    assert len(calls) == 2
    engine.flush_cache()
    engine.make_request(prompt, greedy(), images=[png_bytes(image)])
    assert len(calls) == 3
    uncached = Engine(EngineConfig(model=str(vlm.path), kv_tokens=2048),
                      multimodal_config=MultimodalConfig(preprocess_cache_bytes=0))
    preprocessor = uncached.multimodal.preprocessor
    original_uncached = preprocessor.preprocess
    preprocessor.preprocess = lambda image, label: calls.append(label) or original_uncached(image, label)
    for _ in range(2):
        uncached.make_request(prompt, greedy(), images=[png_bytes(image)])
    assert len(calls) == 5


def test_placeholders_and_images_must_agree(vlm, engine):
    image = png_bytes(random_image(90, 60, seed=3))
    message = refusal(engine, [image, image], prompt=vlm.chat_prompt("Read.", num_images=1))
    assert "1 image placeholders but 2 images" in message
    assert "2 image placeholders but 1 images" in refusal(engine, [image], prompt=vlm.chat_prompt("Two.", 2))
    # Image tokens typed into a text-only request are refused too, not embedded as text.
    assert "1 image placeholders but 0 images" in refusal(engine, [], prompt=vlm.chat_prompt("Read.", 1))
    assert "limit is 2 per request" in refusal(engine, [image] * 3, prompt=vlm.chat_prompt("Three.", 3))


def test_expanded_prompt_is_accepted_as_is(vlm, engine):
    image = random_image(90, 60, seed=4)
    prompt = vlm.chat_prompt("Read.")
    expanded = vlm.hf_inputs(prompt, [image])["input_ids"][0].tolist()
    short = engine.make_request(prompt, greedy(), images=[png_bytes(image)])
    full = engine.make_request(expanded, greedy(), images=[png_bytes(image)])
    assert short.prompt_ids == full.prompt_ids == expanded


def test_cache_key_ids_name_the_image_by_its_pixels(vlm, engine):
    prompt = vlm.chat_prompt("Read.")
    a, b = random_image(90, 60, seed=5), random_image(90, 60, seed=6)
    req_a = engine.make_request(prompt, greedy(), images=[png_bytes(a)])
    again = engine.make_request(prompt, greedy(), images=[a])  # a PIL image in-process: same pixels, same key
    req_b = engine.make_request(prompt, greedy(), images=[png_bytes(b)])
    assert req_a.cache_key_ids == again.cache_key_ids
    span = req_a.multimodal.images[0]
    image_rows = range(span.offset, span.end)
    differing = [i for i, (x, y) in enumerate(zip(req_a.cache_key_ids, req_b.cache_key_ids)) if x != y]
    assert differing == list(image_rows)
    assert all(req_a.cache_key_ids[i] >= VOCAB_SIZE for i in image_rows)
    assert [t for i, t in enumerate(req_a.cache_key_ids) if i not in image_rows] == \
           [t for i, t in enumerate(req_a.prompt_ids) if i not in image_rows]


def test_text_only_model_refuses_images(tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=VOCAB_SIZE, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      eos_token_id=None, bos_token_id=None, pad_token_id=None)
    LlamaForCausalLM(cfg).save_pretrained(tmp_path)
    byte_tokenizer(["<|endoftext|>"], "{{ messages[0].content }}").save_pretrained(tmp_path)
    eng = Engine(EngineConfig(model=str(tmp_path), kv_tokens=512))
    assert not eng.supports_images
    with pytest.raises(InvalidRequestError, match="does not accept images"):
        eng.make_request("hello", greedy(), images=[png_bytes(random_image(90, 60, seed=7))])


def test_encoder_cache_is_bounded_and_least_recently_used_goes_first():
    row_bytes = 4 * 8
    cache = EncoderCache(max_bytes=3 * 2 * row_bytes)  # room for three 2-row entries
    for key in (b"a", b"b", b"c"):
        cache.put(key, torch.zeros(2, 8))
    assert cache.get(b"a") is not None  # a is now the most recently used
    cache.put(b"d", torch.zeros(2, 8))
    assert cache.get(b"b") is None and cache.get(b"a") is not None and cache.get(b"d") is not None
    assert cache.num_bytes <= cache.max_bytes and len(cache) == 3
    cache.put(b"huge", torch.zeros(100, 8))  # larger than the budget: not kept, nothing evicted for it
    assert cache.get(b"huge") is None and len(cache) == 3
