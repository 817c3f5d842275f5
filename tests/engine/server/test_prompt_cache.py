"""The chat-prompt cache: a hit gives exactly the text and token ids that rendering and
tokenising give (house-ocr's OCR message around different images, and SmolLM2's chat
template), other messages miss, a template that reads the clock is never cached, and the
cache stays bounded."""
from __future__ import annotations

import base64
import io

import pytest
from PIL import Image
from transformers import AutoTokenizer

from engine.loader import resolve_model
from engine.server.api_errors import ApiError
from engine.server.chat_prompt import render_chat_prompt
from engine.server.prompt_cache import PromptCache
from engine.server.protocol import ChatMessage


def image_url(seed: int) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (20 + seed, 12), (seed, 0, 0)).save(buffer, format="BMP")
    return "data:image/bmp;base64," + base64.b64encode(buffer.getvalue()).decode()


def ocr_messages(seed: int, task: str = "Text Recognition:") -> list[ChatMessage]:
    return [ChatMessage.model_validate({"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": image_url(seed)}}, {"type": "text", "text": task}]})]


def render(tokenizer, messages, cache):
    return render_chat_prompt(tokenizer, messages, "m", True, (),
                              lambda text: tokenizer.encode(text, add_special_tokens=False), cache)


@pytest.fixture(scope="module")
def house_tokenizer():
    return AutoTokenizer.from_pretrained(str(resolve_model("house-ocr")))


@pytest.mark.parametrize("model", ["house-ocr", "smollm2-135m"])
def test_a_hit_gives_the_ids_rendering_gives(model):
    tokenizer, cache = AutoTokenizer.from_pretrained(str(resolve_model(model))), PromptCache()
    if model == "house-ocr":   # the OCR client's message around four crops, then another task
        conversations = [ocr_messages(seed) for seed in range(4)] + [ocr_messages(5, "Table Recognition:")]
    else:
        conversations = [[ChatMessage(role="user", content=text)] for text in ("Hi", "Hi", "Bye", "Hi", "Bye")]
    for messages in conversations:
        expected = render(tokenizer, messages, None)
        got = render(tokenizer, messages, cache)
        assert (got.text, got.ids) == (expected.text, expected.ids)
        assert got.ids == tokenizer.encode(expected.text, add_special_tokens=False)
        assert got.images == expected.images   # each request's own image bytes, never cached ones
    assert (cache.num_misses, cache.num_hits, len(cache)) == (2, 3, 2)


def test_a_message_the_template_refuses_is_refused_every_time(house_tokenizer):
    tokenizer, cache = house_tokenizer, PromptCache()
    two = [ChatMessage.model_validate({"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": image_url(1)}},
        {"type": "image_url", "image_url": {"url": image_url(2)}}]})]
    for _ in range(2):   # refused each time, not cached
        with pytest.raises(ApiError, match="exactly one image"):
            render(tokenizer, two, cache)
    assert len(cache) == 0


class ClockTemplate:
    chat_template = "{{ strftime_now('%d %B %Y') }}{% for m in messages %}{{ m['content'] }}{% endfor %}"

    def __init__(self):
        self.num_renders = 0

    def apply_chat_template(self, messages, add_generation_prompt, tokenize):
        self.num_renders += 1
        return f"day {self.num_renders}: " + "".join(m["content"] for m in messages)


def test_a_template_that_reads_the_clock_is_never_cached():
    tokenizer, cache = ClockTemplate(), PromptCache()
    messages = [ChatMessage(role="user", content="Hi")]
    texts = [render_chat_prompt(tokenizer, messages, "m", False, (), lambda text: [len(text)], cache).text
             for _ in range(2)]
    assert texts == ["day 1: Hi", "day 2: Hi"] and len(cache) == 0


def test_the_cache_is_bounded_and_long_keys_are_not_kept():
    cache = PromptCache(max_entries=2, max_key_chars=100)
    template = "{{ messages }}"
    keys = [cache.key(template, [{"role": "user", "content": text}]) for text in ("a", "b", "c")]
    for key in keys:
        cache.put(key, "text", [1, 2])
    assert len(cache) == 2 and cache.get(keys[0]) is None and cache.get(keys[2]) == ("text", [1, 2])
    assert cache.key(template, [{"role": "user", "content": "x" * 200}]) is None
    assert cache.key(None, [{"role": "user", "content": "x"}]) is None
