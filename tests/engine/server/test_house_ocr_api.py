"""The house OCR model through the HTTP server and the official `openai` client:
on hard lines where the decoder's greedy reading and the CTC draft disagree,
plain and streamed chat completions both give the reference's reading
(`HouseOCR.decode`, CTC rescoring) — a rescored line is streamed whole when it
is done — and /metrics counts the lines rescored."""
from __future__ import annotations

import base64
import re

import httpx
import numpy as np
import openai
import pytest
import torch
from PIL import ImageFilter

from engine.loader import resolve_model
from engine.models.line_encoder import LineEncoder
from tests.engine.server.conftest import EngineServer
from tests.engine.test_house_ocr import HARD_LINES, png, render
from training.house_ocr import charset
from training.house_ocr.export import load_exported

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def house_server():
    server = EngineServer(["--kv-tokens", "8192"], model="house-ocr")
    server.start()
    try:
        server.wait_ready()
        yield server.base_url
    finally:
        assert server.stop() == 0


def test_plain_and_streamed_replies_are_the_rescored_reading(house_server):
    client = openai.OpenAI(base_url=house_server + "/v1", api_key="unused", max_retries=0, timeout=120)
    reference = load_exported(resolve_model("house-ocr"))
    encoder = LineEncoder(1)
    crops = [render(*line).filter(ImageFilter.GaussianBlur(0.6)) for line in HARD_LINES]
    rescored = 0
    for crop in crops:
        features = torch.from_numpy(encoder.encode(np.asarray(crop)))
        expected = reference.decode(features, 256)
        rescored += reference.greedy(features, 256) != reference.ctc_greedy(features) + [charset.EOS_ID]
        url = "data:image/png;base64," + base64.b64encode(png(crop)).decode()
        messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                 {"type": "text", "text": "Text Recognition:"}]}]
        reply = client.chat.completions.create(model="house-ocr", messages=messages, max_tokens=256, temperature=0)
        assert reply.choices[0].message.content == charset.decode(expected)
        assert reply.choices[0].finish_reason == "stop"
        assert reply.usage.completion_tokens == len(expected)
        chunks = [chunk.choices[0].delta.content or "" for chunk in client.chat.completions.create(
            model="house-ocr", messages=messages, max_tokens=256, temperature=0, stream=True) if chunk.choices]
        assert "".join(chunks) == charset.decode(expected)
        assert sum(bool(c) for c in chunks) == 1   # held until the line was done, then sent whole
    assert rescored
    metrics = httpx.get(house_server + "/metrics", timeout=10).text
    counts = dict(re.findall(r'^ocrserve_spec_rescored_lines_total\{kept="(\w+)"\} ([0-9.]+)$', metrics, re.M))
    assert float(counts["decoder"]) + float(counts["draft"]) >= 2 * rescored   # plain and streamed
