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
import json
import math

import pytest

import ocr_samples as samples
from app.local_services import child_env, start_engine
from service_harness import free_port
from workers.job_runner import JobRunner
from workers.job_service import JobService, Upload
from workers.openai_recognizer import OpenAIVisionRecognizer
from workers.recognizer import RecognizerConfigError, RecognizerUnavailableError
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
    from workers.openai_recognizer import _confidence

    logprobs = {"content": [{"token": "a", "logprob": math.log(0.9)}, {"token": "b", "logprob": math.log(0.4)},
                            {"token": "</s>", "logprob": 0.0}]}
    assert _confidence(logprobs) == pytest.approx((0.9 * 0.4 * 1.0) ** (1 / 3))
    assert _confidence(None) is None and _confidence({"content": None}) is None     # a server that sends none
    assert _confidence({"content": [{"logprob": "junk"}, {"logprob": float("-inf")}]}) is None
