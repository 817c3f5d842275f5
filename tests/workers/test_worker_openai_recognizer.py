"""The OpenAI-compatible recogniser against the real engine server.

Until the house OCR model lands, the only model our engine serves here is
SmolLM2-135M, a text model: it must refuse the crops (400
`model_does_not_accept_images`), and that must come out as a configuration
error naming the fix — at start-up (`check`) and, if a worker runs anyway, as
regions that fall back to the text layer with that reason. The success path
(a vision model answering) needs that model; it is not faked here.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math

import pytest

import ocr_samples as samples
from app.local_services import child_env, start_engine
from service_harness import free_port
from workers.job_runner import JobRunner
from workers.job_service import JobService, Upload
from workers.recognizers.base import RecognizerConfigError, RecognizerUnavailableError
from workers.recognizers.openai_compatible import OpenAIVisionRecognizer
from workers.settings import Settings

pytestmark = pytest.mark.slow
MODEL = "smollm2-135m"


@pytest.fixture(scope="module")
def engine_url(tmp_path_factory):
    """`ocrserve serve`'s own engine start-up (app.local_services), small KV pool, one thread."""
    log = tmp_path_factory.mktemp("engine") / "engine.log"
    settings = Settings(recognizer="openai", engine_model=MODEL)
    engine, url = start_engine(settings, child_env(settings), 0, log, ready_timeout_s=300,
                               extra_args=("--num-threads", "1", "--kv-tokens", "2048", "--context-length", "1024"))
    yield url
    assert engine.stop() == 0, log.read_text()[-3000:]


def test_a_text_model_is_refused_at_start_with_the_fix_named(engine_url):
    with pytest.raises(RecognizerConfigError) as refused:
        OpenAIVisionRecognizer(engine_url, MODEL).check()
    message = str(refused.value)
    assert "does not accept images" in message and MODEL in message
    assert "OCRSERVE_RECOGNIZER=tesseract" in message


def test_a_model_the_endpoint_does_not_serve_is_a_configuration_error(engine_url):
    with pytest.raises(RecognizerConfigError, match="404.*not served here"):
        OpenAIVisionRecognizer(engine_url, "glm-ocr").check()


def test_pages_fall_back_to_the_text_layer_with_the_reason(engine_url, tmp_path):
    settings = Settings(data_dir=tmp_path, recognizer="openai", render_dpi=100, vision_num_threads=1,
                        engine_url=engine_url, engine_model=MODEL)
    service = JobService(settings)
    job = service.submit("tester", [Upload("report.pdf", samples.multi_page_pdf(1))], text_layer="never")
    runner = JobRunner(settings, OpenAIVisionRecognizer.from_settings(settings))
    for file_index, page_index in runner.start_job(job.id):
        assert runner.run_page(job.id, file_index, page_index, final_attempt=False) == "done"
    assert runner.finish_job(job.id)
    page = service.store.get_job(job.id).pages[0]
    assert page.attempts == 1, "a configuration error is not retried"
    assert page.regions_fallback > 0 and page.regions_ok == 0
    assert "does not accept images" in page.reason
    result = json.loads(service.result_path(job, "json").read_text())
    assert samples.page_sentence(0) in " ".join(r["text"] for r in result["documents"][0]["pages"][0]["regions"])


def test_batch_run_stops_before_any_work_when_the_model_cannot_read_images(engine_url, tmp_path, monkeypatch, capsys):
    from app.commands import run

    monkeypatch.setenv("OCRSERVE_ENGINE_URL", engine_url)
    monkeypatch.setenv("OCRSERVE_ENGINE_MODEL", MODEL)
    monkeypatch.setenv("OCRSERVE_RECOGNIZER", "openai")
    (tmp_path / "in.pdf").write_bytes(samples.multi_page_pdf(1))
    args = argparse.Namespace(inputs=[str(tmp_path / "in.pdf")], out=tmp_path / "out", formats="md", pages=None,
                              dpi=None, force=False, workers=1, quiet=True)
    assert run.main(args) == 2
    assert "does not accept images" in capsys.readouterr().err
    assert not (tmp_path / "out" / "in.md").exists()


def test_an_unreachable_endpoint_is_temporary():
    with pytest.raises(RecognizerUnavailableError, match="unreachable"):
        OpenAIVisionRecognizer(f"http://127.0.0.1:{free_port()}/v1", MODEL, connect_timeout_s=1).check()


def test_confidence_is_the_geometric_mean_of_token_probabilities():
    from workers.recognizers.openai_compatible import _confidence

    logprobs = {"content": [{"token": "a", "logprob": math.log(0.9)}, {"token": "b", "logprob": math.log(0.4)},
                            {"token": "</s>", "logprob": 0.0}]}
    assert _confidence(logprobs) == pytest.approx((0.9 * 0.4 * 1.0) ** (1 / 3))
    assert _confidence(None) is None and _confidence({"content": None}) is None     # a server that sends none
    assert _confidence({"content": [{"logprob": "junk"}, {"logprob": float("-inf")}]}) is None


def test_alternatives_are_asked_for_and_a_malformed_list_of_them_is_dropped():
    """The house model's requests ask for each token's alternatives (`top_logprobs`); a reply whose
    lists are missing, short of fields or of the wrong types still reads, without alternatives."""
    from PIL import Image
    from starlette.responses import JSONResponse

    from vision.layout import RecognitionTask
    from workers.recognizers.base import RecognitionItem

    def entry(token, top):
        return {"token": token, "logprob": math.log(0.9), "top_logprobs": top}

    good = [entry("a", [{"token": "a", "logprob": math.log(0.9)}, {"token": "o", "logprob": math.log(0.1)}]),
            entry("</s>", [{"token": "</s>", "logprob": 0.0}])]
    replies = iter([good, [entry("a", None)], [entry("a", [{"token": "o"}])], [entry("a", [{"token": 3, "logprob": 0}])],
                    [entry("a", ["junk"])]])
    asked: list = []

    async def chat(request):
        body = await request.json()
        asked.append(body.get("top_logprobs"))
        return JSONResponse({"choices": [{"index": 0, "message": {"role": "assistant", "content": "a"},
                                          "finish_reason": "stop", "logprobs": {"content": next(replies)}}]})

    item = RecognitionItem(Image.new("RGB", (40, 12), "white"), RecognitionTask.TEXT, True)
    with _chat_server(chat) as url:
        recognizer = OpenAIVisionRecognizer(url, "house-ocr", reads_single_lines=True, alternatives=4)
        recognizer.uses_batch = False
        first = recognizer.recognize([item])[0]
        assert first.alternatives == ((("a", math.log(0.9)), ("o", math.log(0.1))), (("</s>", 0.0),))
        for _ in range(4):
            outcome = recognizer.recognize([item])[0]
            assert outcome.text == "a" and outcome.tokens is not None and outcome.alternatives is None
        assert asked == [4] * 5
        plain = OpenAIVisionRecognizer(url, "glm-ocr")   # another model: nothing asked, nothing kept
        plain.uses_batch = False
        replies = iter([good])
        assert plain.recognize([item])[0].alternatives is None and asked[-1] is None


def test_crops_go_as_bmp_to_loopback_and_as_png_elsewhere():
    import base64
    import io

    from PIL import Image

    from workers.recognizers.openai_compatible import data_url, is_loopback

    for url, local in (("http://127.0.0.1:30000/v1", True), ("http://localhost:8/v1", True),
                       ("http://[::1]:8/v1", True), ("https://api.example.org/v1", False),
                       ("http://10.0.0.2:8/v1", False)):
        assert is_loopback(url) is local
        assert OpenAIVisionRecognizer(url, MODEL).image_format == ("BMP" if local else "PNG")
    image = Image.frombytes("RGB", (37, 9), bytes(range(256)) * 4)
    for mode, kind in (("RGB", "bmp"), ("L", "bmp"), ("RGBA", "png"), ("P", "png")):
        converted = image.convert(mode)
        url = data_url(converted, "BMP")
        assert url.startswith(f"data:image/{kind};base64,")
        decoded = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        assert decoded.mode == mode and decoded.tobytes() == converted.tobytes()


@contextlib.contextmanager
def _chat_server(chat):
    """A stub OpenAI-compatible server answering POST /v1/chat/completions with `chat` (and 404 to
    anything else, POST /v1/batch included, as vLLM and SGLang do); yields its base URL."""
    import threading
    import time

    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Route

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])]),
                                           host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _reply(text: str):
    from starlette.responses import JSONResponse

    return JSONResponse({"choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop", "logprobs": None}]})


def test_a_server_without_batches_gets_one_request_per_crop():
    """What vLLM or SGLang answer to POST /v1/batch (404): the recogniser asks once, then sends
    each crop as its own chat request, as before."""
    from PIL import Image

    from vision.layout import RecognitionTask
    from workers.recognizers.base import RecognitionItem

    seen: list[str] = []

    async def chat(request):
        body = await request.json()
        seen.append(body["messages"][0]["content"][0]["image_url"]["url"][:16])
        return _reply("read")

    with _chat_server(chat) as url:
        recognizer = OpenAIVisionRecognizer(url, "glm-ocr")
        items = [RecognitionItem(Image.new("RGB", (40, 12), "white"), RecognitionTask.TEXT, True)] * 3
        assert [outcome.text for outcome in recognizer.recognize(items)] == ["read"] * 3
        assert recognizer.uses_batch is False
        assert seen == ["data:image/bmp;b"] * 3
        recognizer.recognize(items[:1])   # asked once per recogniser
        assert len(seen) == 4


def test_a_draft_goes_as_draft_text_only_with_a_crop_that_has_one(engine_url):
    """text_layer="verify": a crop's draft is sent as our engine's `draft_text`; a crop without one
    sends no such field, so other servers never see it."""
    from PIL import Image

    from vision.layout import RecognitionTask
    from workers.recognizers.base import RecognitionItem

    crop = Image.new("RGB", (40, 12), "white")
    drafted = RecognitionItem(crop, RecognitionTask.TEXT, True, draft="Quarterly Report")
    plain = RecognitionItem(crop, RecognitionTask.TEXT, True)
    sent: list[dict] = []

    async def chat(request):
        body = await request.json()
        sent.append(body)
        return _reply(body.get("draft_text", "no draft"))

    with _chat_server(chat) as url:
        outcomes = OpenAIVisionRecognizer(url, "glm-ocr").recognize([drafted, plain, drafted])
    assert sorted(outcome.text for outcome in outcomes) == ["Quarterly Report", "Quarterly Report", "no draft"]
    assert sorted(body.get("draft_text", "") for body in sent) == ["", "Quarterly Report", "Quarterly Report"]
    assert [outcome.text for outcome in outcomes] == ["Quarterly Report", "no draft", "Quarterly Report"], "in order"
    # Our engine takes the field in its batch lines: SmolLM2 then refuses the image, not the field.
    with pytest.raises(RecognizerConfigError, match="does not accept images"):
        OpenAIVisionRecognizer(engine_url, MODEL).recognize([drafted])
