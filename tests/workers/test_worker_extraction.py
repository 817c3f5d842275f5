"""Schema extraction in the workers, in-process (`JobRunner` and `SchemaExtractor`
called directly), on real parts: the example invoice PDF, Tesseract for the OCR,
and our engine serving SmolLM2-135M-Instruct for the text route, constrained by
the engine's grammar.

The vision route needs a vision-language model behind the endpoint; our engine
still answers 501 for image inputs, so that route is checked here only as far as
it is real: the messages it builds, and a text model refusing them, which must
end as a failed extraction with the endpoint's reason and the OCR results kept.
"""
from __future__ import annotations

import base64
import io
import json
import sys
from pathlib import Path

import pytest
from PIL import Image

from app.local_services import child_env, start_engine
from vision.document import Document
from service_harness import free_port
from workers.extraction import SchemaExtractor, cut_text
from workers.extraction_client import ExtractionEndpoint
from workers.extraction_prompt import schema_template, vision_messages
from workers.extraction_schema import SchemaError, parse_schema, validation_error
from workers.job_model import JobState
from workers.job_runner import JobRunner
from workers.job_service import JobService, Upload
from workers.recognizers.tesseract import TesseractRecognizer
from workers.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "examples"))
from make_invoice import INVOICE, make_invoice_pdf  # noqa: E402

MODEL = "smollm2-135m"
INVOICE_SCHEMA_PATH = REPO_ROOT / "schemas" / "invoice.json"
ENGINE_ARGS = ("--num-threads", "1", "--kv-tokens", "8192", "--context-length", "4096")


def load_schema(name: str):
    path = REPO_ROOT / "schemas" / f"{name}.json"
    return parse_schema(path.read_bytes(), 64 * 1024, name)


@pytest.fixture(scope="module")
def engine_url(tmp_path_factory):
    log = tmp_path_factory.mktemp("extraction-engine") / "engine.log"
    settings = Settings(recognizer="openai", engine_model=MODEL)
    engine, url = start_engine(settings, child_env(settings), 0, log, ready_timeout_s=300, extra_args=ENGINE_ARGS)
    yield url
    assert engine.stop() == 0, log.read_text()[-3000:]


def _settings(data_dir: Path, extraction_url: str, **overrides: object) -> Settings:
    fields: dict[str, object] = {"data_dir": data_dir, "recognizer": "tesseract", "render_dpi": 100,
                                 "vision_num_threads": 1, "extraction_url": extraction_url, "extraction_model": MODEL,
                                 "extraction_retries": 1}
    return Settings(**{**fields, **overrides})


def _submit_and_run(settings: Settings, schema=None, finish: bool = True):
    service = JobService(settings)
    job = service.submit("tester", [Upload("invoice.pdf", make_invoice_pdf())],
                         extraction=schema or load_schema("invoice"))
    runner = JobRunner(settings, TesseractRecognizer())
    for file_index, page_index in runner.start_job(job.id):
        runner.run_page(job.id, file_index, page_index, final_attempt=True)
    if finish:
        assert runner.finish_job(job.id)
    return service, runner, service.store.get_job(job.id)


def _extraction(service: JobService, job) -> dict:
    return json.loads(service.result_path(job, "extraction").read_text())


@pytest.fixture(scope="module")
def ocr_only_job(tmp_path_factory):
    """The invoice, OCR'd but not finished: its document result, for calling the extractor directly."""
    settings = _settings(tmp_path_factory.mktemp("ocr-only"), f"http://127.0.0.1:{free_port()}/v1")
    service, runner, job = _submit_and_run(settings, finish=False)
    from workers.document_result import build_document_result

    result = build_document_result(job, service.store.page_results(job.id))
    return job, result, [service.data_dir.upload_path(job.id, 0, "pdf")]


def test_the_invoice_is_extracted_into_fields_that_validate(engine_url, tmp_path):
    service, _, job = _submit_and_run(_settings(tmp_path, engine_url))
    assert job.state is JobState.DONE
    extraction = _extraction(service, job)
    assert extraction["state"] == "done", extraction["reason"]
    assert extraction["route"] == "text" and extraction["model"] == MODEL
    assert extraction["schema"] == {"name": "invoice", "sha256": load_schema("invoice").sha256}
    document = extraction["documents"][0]
    schema = json.loads(INVOICE_SCHEMA_PATH.read_text())
    assert validation_error(document["data"], schema) is None
    # SmolLM2-135M copies the number printed beside "Invoice number:" (greedy, so every run).
    assert document["data"]["invoice_number"] == INVOICE["invoice_number"]
    assert document["input"]["source"] == "recognised_text" and document["input"]["truncated"] is False
    assert document["input"]["note"] is None
    text = service.result_path(job, "txt").read_text()
    assert document["input"]["num_chars"] == len(text.replace("\f", "\n\n").strip())


def test_an_unreachable_engine_fails_the_extraction_not_the_job(tmp_path):
    settings = _settings(tmp_path, f"http://127.0.0.1:{free_port()}/v1", extraction_connect_timeout_s=1)
    service, _, job = _submit_and_run(settings)
    assert job.state is JobState.DONE and job.error is None
    for fmt in ("md", "json", "txt", "pdf"):
        assert service.result_path(job, fmt).stat().st_size > 0, fmt
    assert INVOICE["invoice_number"] in service.result_path(job, "txt").read_text()
    extraction = _extraction(service, job)
    assert extraction["state"] == "failed"
    document = extraction["documents"][0]
    assert document["state"] == "failed" and document["data"] is None
    assert "unreachable" in document["reason"] and "2 attempts" in document["reason"]
    assert extraction["reason"] == f"invoice.pdf: {document['reason']}"


def test_a_schema_the_engine_cannot_enforce_is_a_failed_extraction_with_its_reason(engine_url, ocr_only_job, tmp_path):
    job, result, paths = ocr_only_job
    # Valid JSON Schema, so the appliance takes it; the engine's grammar cannot enforce uniqueItems and says so.
    schema = parse_schema(json.dumps({"type": "object", "properties": {
        "codes": {"type": "array", "items": {"type": "string", "maxLength": 5}, "uniqueItems": True}}}), 4096)
    job = _with_schema(job, schema)
    extraction = SchemaExtractor(_settings(tmp_path, engine_url)).extract(job, result, paths)
    assert extraction["state"] == "failed"
    reason = extraction["documents"][0]["reason"]
    assert "answered 400" in reason and "uniqueItems" in reason


def test_documents_unanswered_within_the_budget_are_failed_with_the_reason(engine_url, ocr_only_job, tmp_path):
    job, result, paths = ocr_only_job
    extraction = SchemaExtractor(_settings(tmp_path, engine_url)).extract(job, result, paths, budget_s=0.2)
    assert extraction["state"] == "failed"
    assert extraction["documents"][0]["reason"].startswith("not answered within the 0.2 s left in the job's time")


def test_long_text_is_cut_with_a_note_never_silently(ocr_only_job, tmp_path):
    job, result, paths = ocr_only_job
    settings = _settings(tmp_path, f"http://127.0.0.1:{free_port()}/v1", extraction_max_input_chars=120,
                         extraction_retries=0, extraction_connect_timeout_s=1)
    document = SchemaExtractor(settings).extract(job, result, paths)["documents"][0]
    info = document["input"]
    assert info["truncated"] is True and info["num_chars_used"] <= 120 < info["num_chars"]
    assert f"{info['num_chars']:,} characters" in info["note"]
    assert "OCRSERVE_EXTRACTION_MAX_INPUT_CHARS=120" in info["note"]


def test_cut_text_ends_at_a_word_break():
    text = "alpha beta gamma delta " * 10
    assert cut_text(text, 1000) == text
    cut = cut_text(text, 50)
    assert len(cut) <= 50 and text.startswith(cut) and not cut.endswith(("alp", "gam")) and cut.endswith("delta")
    assert cut_text("x" * 100, 30) == "x" * 30


def test_the_vision_route_sends_the_pages_as_images_and_a_text_model_refuses_them(engine_url, ocr_only_job,
                                                                                   tmp_path):
    job, result, paths = ocr_only_job
    settings = _settings(tmp_path, engine_url, extraction_route="vision")
    extractor = SchemaExtractor(settings)
    assert extractor.endpoint == ExtractionEndpoint("vision", engine_url, MODEL, None, 0.0)
    messages, info = extractor._vision_input(job, 0, paths[0], job.options.extraction)
    assert info == {"source": "page_images", "pages": [1], "pages_used": [1], "truncated": False, "note": None}
    (message,) = messages
    image_part, text_part = message["content"]
    url = image_part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    with Document.open_path(paths[0]) as document:
        assert image.size == document.render_page(0, 100).image.size   # the page at the job's 100 DPI
    assert json.loads(text_part["text"].split("\n", 1)[1]) == schema_template(job.options.extraction.schema)
    extraction = extractor.extract(job, result, paths)
    assert extraction["route"] == "vision" and extraction["state"] == "failed"
    assert "does not accept images" in extraction["documents"][0]["reason"]


def test_vision_messages_put_every_page_before_the_instruction():
    pages = [Image.new("RGB", (20, 10), color) for color in ("white", "black")]
    (message,) = vision_messages(pages, {"type": "object", "properties": {"a": {"type": "string"}}})
    assert [part["type"] for part in message["content"]] == ["image_url", "image_url", "text"]
    assert message["content"][2]["text"].endswith('{"a": ""}')


def test_the_route_follows_the_recogniser_unless_set():
    assert ExtractionEndpoint.from_settings(Settings(recognizer="tesseract")) == ExtractionEndpoint(
        "text", "http://127.0.0.1:30001/v1", "smollm2-135m", None, 0.5)
    vision = ExtractionEndpoint.from_settings(Settings(recognizer="openai", engine_url="http://gpu:8000",
                                                       engine_model="glm-ocr", engine_api_key="k"))
    assert vision == ExtractionEndpoint("vision", "http://gpu:8000/v1", "glm-ocr", "k", 0.0)
    text = ExtractionEndpoint.from_settings(Settings(recognizer="openai", extraction_route="text",
                                                     extraction_url="http://llm:9000/v1/",
                                                     extraction_frequency_penalty=0))
    assert text == ExtractionEndpoint("text", "http://llm:9000/v1", "smollm2-135m", None, 0.0)


def test_an_extraction_that_cannot_fit_the_finish_task_is_refused_at_start():
    with pytest.raises(ValueError, match="OCRSERVE_JOB_TIME_LIMIT_S"):
        Settings(extraction_timeout_s=300, job_time_limit_s=300)


def test_the_example_schemas_bound_every_string_and_number():
    for name in ("invoice", "receipt"):
        schema = load_schema(name).schema
        for node in _subschemas(schema):
            if node.get("type") == "string":
                assert "maxLength" in node, (name, node)
            if node.get("type") in ("number", "integer"):
                assert "minimum" in node and "maximum" in node, (name, node)
            if node.get("type") == "array":
                assert "maxItems" in node, (name, node)


def test_the_committed_example_invoice_is_what_the_script_makes():
    assert (REPO_ROOT / "examples" / "invoice.pdf").read_bytes() == make_invoice_pdf()


@pytest.mark.parametrize("text, message", [
    ("{", "not valid JSON"),
    ('{"type": "object", "properties": {"a": {"type": "number", "minimum": NaN}}}', "NaN is not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"type": "string", "maxLength": 4}', 'needs "type": "object"'),
    ('{"type": "object", "properties": {"a": {"type": "strin"}}}', "not a valid JSON Schema at #/properties/a/type"),
    ('{"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}', "points outside the schema"),
    ('{"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}', "does not resolve"),
    ('{"type": "object", "properties": {"a": ' * 40 + '{"type": "object"}' + "}}" * 40, "nests deeper than"),
    ('{"type": "object", "description": "' + "x" * 5000 + '"}', "larger than the 4,096-byte limit"),
])
def test_bad_schemas_are_refused_with_the_reason(text, message):
    with pytest.raises(SchemaError) as refused:
        parse_schema(text, 4096)
    assert message in str(refused.value)
    assert refused.value.code == "invalid_schema"


def test_schema_template_follows_refs_enums_and_arrays():
    schema = {"type": "object", "$defs": {"money": {"type": "number", "minimum": 0, "maximum": 10}},
              "properties": {"total": {"$ref": "#/$defs/money"}, "kind": {"enum": ["a", "b"]},
                             "lines": {"type": "array", "items": {"type": "object", "properties": {
                                 "qty": {"type": "integer"}, "paid": {"type": "boolean"}}}},
                             "note": {"type": ["null", "string"]}}}
    assert schema_template(schema) == {"total": 0, "kind": "a", "lines": [{"qty": 0, "paid": False}], "note": ""}


def _with_schema(job, schema):
    from dataclasses import replace

    return replace(job, options=replace(job.options, extraction=schema))


def _subschemas(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _subschemas(value)
    elif isinstance(node, list):
        for value in node:
            yield from _subschemas(value)
