"""The house OCR model through the HTTP server and the official `openai` client:
on hard lines where the decoder's greedy reading and the CTC draft disagree,
plain and streamed chat completions both give the reference's reading
(`HouseOCR.decode`, CTC rescoring) — a rescored line is streamed whole when it
is done — and /metrics counts the lines rescored. `"logprobs": true` keeps the
drafts and the rescoring: one entry per output token, the decoder's log-prob of
each token of the reading returned (test_house_ocr_logprobs.py checks the engine
side in detail). A page's crops sent as one batch of BMP data URLs read the same."""
from __future__ import annotations

import base64
import json
import re

import httpx
import numpy as np
import openai
import pytest
import torch
from PIL import ImageFilter

from engine.loader import resolve_model
from engine.models.line_encoder import LineEncoder
from tests.engine.server.conftest import EngineServer, read_metrics
from tests.engine.test_house_ocr import HARD_LINES, LINES, png, render
from tests.engine.test_house_ocr_logprobs import TOLERANCE, reference_log_probs
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


def test_chat_logprobs_keep_drafts_and_rescoring(house_server):
    """What the document pipeline asks for a line's confidence: `"logprobs": true`, no top_logprobs."""
    client = openai.OpenAI(base_url=house_server + "/v1", api_key="unused", max_retries=0, timeout=120)
    reference = load_exported(resolve_model("house-ocr"))
    encoder = LineEncoder(1)
    crops = [render(*LINES[1])] + [render(*line).filter(ImageFilter.GaussianBlur(0.6)) for line in HARD_LINES]

    def accepted() -> float:
        metrics = read_metrics(httpx.get(house_server + "/metrics", timeout=10).text)
        return metrics["ocrserve_spec_accepted_tokens_total"]

    before, kept_draft = accepted(), 0
    for crop in crops:
        features = torch.from_numpy(encoder.encode(np.asarray(crop)))
        expected = reference.decode(features, 256)
        kept_draft += expected != reference.greedy(features, 256)
        want = reference_log_probs(reference, features, expected).gather(1, torch.tensor(expected)[:, None])
        url = "data:image/png;base64," + base64.b64encode(png(crop)).decode()
        messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                 {"type": "text", "text": "Text Recognition:"}]}]
        reply = client.chat.completions.create(model="house-ocr", messages=messages, max_tokens=256, temperature=0,
                                               logprobs=True)
        choice = reply.choices[0]
        assert choice.message.content == charset.decode(expected) and choice.finish_reason == "stop"
        entries = choice.logprobs.content
        assert len(entries) == reply.usage.completion_tokens == len(expected)
        # every output token, the line's closing </s> too (listed as its text, as for any model)
        assert "".join(e.token for e in entries) == choice.message.content + "</s>"
        assert all(e.top_logprobs == [] and e.logprob <= 0.0 for e in entries)
        assert [e.logprob for e in entries] == pytest.approx(want.squeeze(1).tolist(), abs=TOLERANCE, rel=0)
        streamed = [e for chunk in client.chat.completions.create(
            model="house-ocr", messages=messages, max_tokens=256, temperature=0, logprobs=True, stream=True)
            if chunk.choices and chunk.choices[0].logprobs for e in chunk.choices[0].logprobs.content]
        # the same tokens; log-probabilities equal up to float rounding (the streamed request's prompt
        # comes from the prefix cache, so its K/V was computed in another batch shape)
        assert [e.token for e in streamed] == [e.token for e in entries]
        assert [e.logprob for e in streamed] == pytest.approx([e.logprob for e in entries], abs=TOLERANCE, rel=0)
    assert kept_draft, "no line kept its draft: the test checks nothing"
    assert accepted() > before   # the drafts were still verified
    metrics = read_metrics(httpx.get(house_server + "/metrics", timeout=10).text)
    for kind in ("draft", "accepted"):   # every draft here is house-ocr's CTC reading, counted under `ctc`
        assert metrics[f'ocrserve_spec_{kind}_tokens_by_method_total{{method="ctc"}}'] == \
            metrics[f"ocrserve_spec_{kind}_tokens_total"] > 0
    assert metrics['ocrserve_spec_acceptance_length_count{method="ctc"}'] > 0


def test_a_batch_of_bmp_crops_reads_as_the_reference(house_server):
    """What the recogniser sends our engine: a page's crops as one POST /v1/batch (the OpenAI Batch
    API's file format), each an uncompressed BMP data URL with the same task prompt (the prompt
    cache's case). Each line reads as the reference's rescored reading, the easy and the hard."""
    from tests.engine.test_vlm_images import bmp_bytes

    reference = load_exported(resolve_model("house-ocr"))
    encoder = LineEncoder(1)
    crops = [render(*line) for line in LINES] + \
        [render(*line).filter(ImageFilter.GaussianBlur(0.6)) for line in HARD_LINES]
    lines = []
    for i, crop in enumerate(crops):
        url = "data:image/bmp;base64," + base64.b64encode(bmp_bytes(crop)).decode()
        body = {"model": "house-ocr", "max_tokens": 256, "temperature": 0, "logprobs": True,
                "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                          {"type": "text", "text": "Text Recognition:"}]}]}
        lines.append(json.dumps({"custom_id": f"crop-{i}", "method": "POST", "url": "/v1/chat/completions",
                                 "body": body}))
    response = httpx.post(house_server + "/v1/batch", content="\n".join(lines).encode(), timeout=300,
                          headers={"Content-Type": "application/jsonl"})
    assert response.status_code == 200, response.text
    answers = [json.loads(line) for line in response.content.splitlines()]
    assert [answer["custom_id"] for answer in answers] == [f"crop-{i}" for i in range(len(crops))]
    for crop, answer in zip(crops, answers):
        expected = reference.decode(torch.from_numpy(encoder.encode(np.asarray(crop))), 256)
        choice = answer["response"]["body"]["choices"][0]
        assert choice["message"]["content"] == charset.decode(expected) and choice["finish_reason"] == "stop"
        assert len(choice["logprobs"]["content"]) == len(expected)


def test_a_text_layer_draft_through_the_openai_client(house_server):
    """`draft_text` (what `text_layer="verify"` sends: the PDF text layer's line) as the official
    client sends an extension field: the reply is the model's reading with or without it, right
    or wrong, the drafts are counted as `text_layer`; a draft that is not a string is a 400."""
    client = openai.OpenAI(base_url=house_server + "/v1", api_key="unused", max_retries=0, timeout=120)
    before = read_metrics(httpx.get(house_server + "/metrics", timeout=10).text)
    for text, font, size in LINES[:4]:
        url = "data:image/png;base64," + base64.b64encode(png(render(text, font, size))).decode()
        messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                 {"type": "text", "text": "Text Recognition:"}]}]
        plain = client.chat.completions.create(model="house-ocr", messages=messages, max_tokens=128, temperature=0)
        for draft in (text, text[::-1]):
            drafted = client.chat.completions.create(model="house-ocr", messages=messages, max_tokens=128,
                                                     temperature=0, extra_body={"draft_text": draft})
            assert drafted.choices[0].message.content == plain.choices[0].message.content
            assert drafted.usage.completion_tokens == plain.usage.completion_tokens
    after = read_metrics(httpx.get(house_server + "/metrics", timeout=10).text)
    key = 'ocrserve_spec_draft_tokens_by_method_total{method="text_layer"}'
    assert after[key] > before.get(key, 0.0)
    with pytest.raises(openai.BadRequestError, match="draft_text"):
        client.chat.completions.create(model="house-ocr", messages=messages, max_tokens=8, temperature=0,
                                       extra_body={"draft_text": 5})
