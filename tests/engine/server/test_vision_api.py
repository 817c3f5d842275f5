"""Images through the HTTP server: the official `openai` client sends a chat
request with a data-URL image to the real server running a tiny random-weight
GLM-OCR checkpoint, and gets the same text the engine API gives for the same
image and prompt; bad images are clear 400s and the server keeps serving."""
from __future__ import annotations

import base64
import subprocess
import sys
import threading
import time

import openai
import pytest
from PIL import Image

from tests.engine.server.conftest import REPO_ROOT, SERVER_THREADS, free_port
from tests.engine.test_vlm_images import bmp_bytes, bmp_header_bomb, png_header_bomb
from tests.engine.tiny_vlm import build_tiny_vlm, png_bytes, random_image

KEY = "vision-key"


def data_url(raw: bytes, media: str = "image/png") -> str:
    return f"data:{media};base64,{base64.b64encode(raw).decode()}"


@pytest.fixture(scope="module")
def tiny_glm(tmp_path_factory):
    return build_tiny_vlm("glm_ocr", tmp_path_factory.mktemp("glm_ocr"))


@pytest.fixture(scope="module")
def vision_server(tiny_glm):
    port = free_port()
    command = [sys.executable, "-m", "engine.server", "--model", str(tiny_glm.path), "--port", str(port),
               "--num-threads", SERVER_THREADS, "--kv-tokens", "4096", "--api-key", KEY,
               "--served-model-name", "glm-ocr-tiny"]
    proc = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = threading.Event()
    threading.Thread(target=lambda: [ready.set() for line in proc.stdout if "ready on" in line],
                     daemon=True).start()
    deadline = time.monotonic() + 300
    while not ready.is_set():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "vision server did not start"
        time.sleep(0.1)
    yield openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=0, timeout=120)
    proc.terminate()
    assert proc.wait(timeout=60) == 0


def chat(client, parts, max_tokens=8):
    return client.chat.completions.create(
        model="glm-ocr-tiny", max_tokens=max_tokens, temperature=0,
        messages=[{"role": "user", "content": parts}])


def test_data_url_image_gives_the_engine_api_text(vision_server, tiny_glm):
    from engine.config import EngineConfig
    from engine.engine import Engine
    from engine.sampling_params import SamplingParams

    image = png_bytes(random_image(56, 84, seed=3))
    response = chat(vision_server, [{"type": "image_url", "image_url": {"url": data_url(image)}},
                                    {"type": "text", "text": "Text Recognition:"}])
    engine = Engine(EngineConfig(model=str(tiny_glm.path), kv_tokens=4096))
    prompt = tiny_glm.chat_prompt("Text Recognition:")
    expected = engine.generate([prompt], SamplingParams(temperature=0, max_tokens=8), images=[[image]])[0]
    assert response.choices[0].message.content == expected.text
    assert response.usage.completion_tokens == expected.num_output_tokens
    # The same crop again: the image's tokens come from the prefix cache.
    again = chat(vision_server, [{"type": "image_url", "image_url": {"url": data_url(image)}},
                                 {"type": "text", "text": "Text Recognition:"}])
    assert again.choices[0].message.content == expected.text
    assert again.usage.prompt_tokens_details.cached_tokens > 0


def test_two_images_in_one_message(vision_server):
    a, b = (png_bytes(random_image(56, 56, seed=s)) for s in (5, 6))
    response = chat(vision_server, [{"type": "image_url", "image_url": {"url": data_url(a)}},
                                    {"type": "image_url", "image_url": {"url": data_url(b)}},
                                    {"type": "text", "text": "Compare."}])
    assert response.choices[0].finish_reason in ("stop", "length")


@pytest.mark.parametrize("raw,media,words", [
    (png_bytes(Image.new("RGB", (1, 300), "white")), "image/png", "side"),
    (png_header_bomb(20000, 20000), "image/png", "pixels"),
    (png_bytes(random_image(64, 64, seed=1))[:120], "image/png", "truncated"),
    (b"%PDF-1.7 this is not an image", "image/png", "image 1"),
    # the uncompressed encoding local clients send: caps still read from the header first
    (bmp_header_bomb(20000, 20000), "image/bmp", "decompression bomb"),
    (bmp_header_bomb(8000, 8000), "image/bmp", "8000x8000"),
    (bmp_bytes(random_image(64, 64, seed=1))[:500], "image/bmp", "truncated"),
    (b"BM" + b"\xff" * 60, "image/bmp", "image 1"),
])
def test_bad_images_are_clear_400s_and_the_server_keeps_serving(vision_server, raw, media, words):
    with pytest.raises(openai.BadRequestError) as err:
        chat(vision_server, [{"type": "image_url", "image_url": {"url": data_url(raw, media)}},
                             {"type": "text", "text": "Text Recognition:"}])
    assert words in str(err.value)
    ok = chat(vision_server, [{"type": "image_url", "image_url": {"url": data_url(
        png_bytes(random_image(56, 56, seed=2)))}}, {"type": "text", "text": "Text Recognition:"}])
    assert ok.choices[0].finish_reason in ("stop", "length")


def test_non_image_data_url_and_file_urls_are_refused(vision_server):
    for url in ("data:text/plain;base64,aGVsbG8=", "file:///etc/passwd", "/etc/passwd"):
        with pytest.raises(openai.BadRequestError):
            chat(vision_server, [{"type": "image_url", "image_url": {"url": url}},
                                 {"type": "text", "text": "x"}])
