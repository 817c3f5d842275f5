"""The OpenAI-compatible recogniser against our engine serving a vision-language
model: a tiny random-weight GLM-OCR checkpoint (built here; no trained VLM can be
downloaded on these machines). Its answers are noise, so this checks the path —
the start-up probe image is accepted, every crop goes through the chat API as an
image and comes back as an outcome — not the quality of the text."""
from __future__ import annotations

import pytest
from PIL import Image, ImageDraw

from app.local_services import child_env, start_engine
from tests.engine.tiny_vlm import build_tiny_vlm
from workers.recognizers.base import RecognitionItem
from workers.recognizers.openai_compatible import OpenAIVisionRecognizer
from workers.settings import Settings
from vision.layout import RecognitionTask

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vlm_engine_url(tmp_path_factory):
    path = tmp_path_factory.mktemp("glm_ocr")
    build_tiny_vlm("glm_ocr", path)
    settings = Settings(recognizer="openai", engine_model=str(path))
    engine, url = start_engine(settings, child_env(settings), 0, path / "engine.log", ready_timeout_s=300,
                               extra_args=("--num-threads", "1", "--kv-tokens", "4096",
                                           "--served-model-name", "glm-ocr"))
    yield url
    assert engine.stop() == 0


def crop(text: str) -> Image.Image:
    image = Image.new("RGB", (160, 28), "white")
    ImageDraw.Draw(image).text((4, 8), text, fill="black")
    return image


def test_crops_reach_a_vision_model_through_the_chat_api(vlm_engine_url):
    recognizer = OpenAIVisionRecognizer(vlm_engine_url, "glm-ocr", max_concurrency=4)
    recognizer.check()  # the probe image is accepted: no configuration error
    items = [RecognitionItem(crop(f"line {i}"), RecognitionTask.TEXT, True) for i in range(6)]
    outcomes = recognizer.recognize(items)
    assert len(outcomes) == len(items)
    for outcome in outcomes:
        # A random model either answers or loops to the token limit; both come back as outcomes.
        assert outcome.text is not None or "token limit" in (outcome.error or "")


def test_batched_requests_read_what_one_request_per_crop_reads(vlm_engine_url, monkeypatch):
    """Our engine takes a page's crops as batch requests (POST /v1/batch, a few lines each here);
    the outcomes are the per-request path's, token limits and warmer retries included."""
    from workers.recognizers import openai_compatible as openai_recognizer

    items = [RecognitionItem(crop(f"line {i}"), RecognitionTask.TEXT, True) for i in range(7)]
    batched = OpenAIVisionRecognizer(vlm_engine_url, "glm-ocr", max_concurrency=4)
    single = OpenAIVisionRecognizer(vlm_engine_url, "glm-ocr", max_concurrency=4)
    single.uses_batch = False
    assert batched.image_format == single.image_format == "BMP"   # loopback: raw pixels
    monkeypatch.setattr(openai_recognizer, "TEMPERATURE_LADDER", (0.0,))   # greedy only: comparable
    expected = [(outcome.text, outcome.error) for outcome in single.recognize(items)]
    assert [(outcome.text, outcome.error) for outcome in batched.recognize(items)] == expected
    assert batched.uses_batch is True
    # every line cut off at a tiny limit: asked again warmer, then given up on, as one by one
    monkeypatch.setattr(openai_recognizer, "TEMPERATURE_LADDER", (0.0, 0.4))
    monkeypatch.setattr(openai_recognizer, "MAX_TOKENS", {task: 1 for task in RecognitionTask})
    outcomes = batched.recognize(items)
    given_up = ["1-token limit at every temperature" in (outcome.error or "") for outcome in outcomes]
    assert any(given_up)
    assert all(up or outcome.text is not None for up, outcome in zip(given_up, outcomes))   # or ended at once


def test_a_warmer_retry_reads_a_crop_the_same_way_in_every_run(vlm_engine_url, monkeypatch):
    """A reply asked again warmer is sampled; its seed comes from the crop's pixels, so a job run
    twice reads alike (a batch run's borderline line came out two ways before)."""
    from workers.recognizers import openai_compatible as openai_recognizer

    monkeypatch.setattr(openai_recognizer, "TEMPERATURE_LADDER", (0.7,))   # sampled from the first request
    items = [RecognitionItem(crop(f"line {i}"), RecognitionTask.TEXT, True) for i in range(4)]
    recognizer = OpenAIVisionRecognizer(vlm_engine_url, "glm-ocr", max_concurrency=1)
    recognizer.uses_batch = False   # one request at a time: each decoded alone, the same batch every run
    first = [(outcome.text, outcome.error) for outcome in recognizer.recognize(items)]
    assert [(outcome.text, outcome.error) for outcome in recognizer.recognize(items)] == first
    assert len({text for text, _ in first}) > 1   # the seeds differ by crop: not one reading for all

