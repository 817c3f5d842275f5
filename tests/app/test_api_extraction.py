"""Schema extraction through the API and the batch CLI, on real services: Redis,
a Celery worker process, Tesseract for the OCR, and our engine serving
SmolLM2-135M-Instruct, whose grammar keeps every answer inside the schema.

Registered schemas come from a folder of this module (OCRSERVE_SCHEMAS_DIR)
and the shipped examples. The worker here has its own data directory and Redis
database, apart from the session's worker, because it needs the extraction
endpoint in its settings.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import ocr_samples as samples
from api_helpers import KEY_ALICE, KEY_BOB, auth, upload, wait_for_job
from app.local_services import child_env, start_engine
from service_harness import REPO_ROOT, WorkerProcess, service_env

sys.path.insert(0, str(REPO_ROOT / "examples"))
from make_invoice import INVOICE, make_invoice_pdf  # noqa: E402

pytestmark = pytest.mark.slow
MODEL = "smollm2-135m"
MAX_SCHEMA_BYTES = 16384
INVOICE_SCHEMA = json.loads((REPO_ROOT / "schemas" / "invoice.json").read_text())
HEADER_SCHEMA = {"type": "object", "properties": {
    "invoice_number": {"type": "string", "maxLength": 40},
    "total_due": {"type": "number", "minimum": 0, "maximum": 100000}},
    "required": ["invoice_number", "total_due"], "additionalProperties": False}
ENGINE_ARGS = ("--num-threads", "1", "--kv-tokens", "8192", "--context-length", "4096")


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    log = tmp_path_factory.mktemp("extraction-engine") / "engine.log"
    from workers.settings import Settings

    settings = Settings(recognizer="openai", engine_model=MODEL)
    process, url = start_engine(settings, child_env(settings), 0, log, ready_timeout_s=300, extra_args=ENGINE_ARGS)
    yield process, url
    process.stop()


@pytest.fixture(scope="module")
def schemas_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("schemas")
    (folder / "purchase_order.json").write_text(json.dumps({
        "title": "Purchase order", "type": "object",
        "properties": {"order_number": {"type": "string", "maxLength": 30}}}))
    (folder / "broken.json").write_text('{"type": "object", "properties": {"a": {"type": "strin"}}}')
    return folder


@pytest.fixture(scope="module")
def settings(tmp_path_factory, redis_server, engine, schemas_dir):
    from workers.settings import Settings

    _, url = engine
    return Settings(data_dir=tmp_path_factory.mktemp("extraction-api"),
                    broker_url=redis_server.url.rsplit("/", 1)[0] + "/5", api_keys=f"{KEY_ALICE},{KEY_BOB}",
                    render_dpi=100, max_upload_bytes=2_000_000, max_pages=20, page_time_limit_s=18,
                    broker_visibility_timeout_s=30, recognizer="tesseract", schemas_dir=schemas_dir,
                    max_schema_bytes=MAX_SCHEMA_BYTES, extraction_url=url, extraction_model=MODEL,
                    extraction_retries=1, extraction_connect_timeout_s=1)


@pytest.fixture(scope="module")
def api(settings):
    from fastapi.testclient import TestClient

    from app.main import create_app

    env = service_env(settings.data_dir, settings.broker_url, extraction_url=settings.extraction_url,
                      extraction_model=MODEL, extraction_retries=1, extraction_connect_timeout_s=1)
    worker = WorkerProcess(env, Path(settings.data_dir) / "worker.log").wait_ready()
    with TestClient(create_app(settings)) as client:
        yield client
    worker.stop()


def _submit(api, schema: str | None = None, document: tuple[str, bytes] = ("invoice.pdf", make_invoice_pdf()),
            schema_file: bytes | None = None):
    files = upload(document)
    if schema_file is not None:
        files.append(("schema", ("schema.json", schema_file, "application/json")))
    return api.post("/v1/jobs", headers=auth(), files=files, data={"schema": schema} if schema is not None else {})


def _extraction(api, job_id: str) -> dict:
    response = api.get(f"/v1/jobs/{job_id}/result", params={"format": "extraction"}, headers=auth())
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert f'filename="{job_id}.extraction.json"' in response.headers["content-disposition"]
    return response.json()


def test_registered_schemas_are_listed_by_name(api):
    response = api.get("/v1/schemas", headers=auth())
    assert response.status_code == 200
    listed = {schema["name"]: schema for schema in response.json()["schemas"]}
    assert list(listed) == ["invoice", "purchase_order", "receipt"], "the broken one is left out"
    assert listed["invoice"]["title"] == "Invoice" and "invoice_number" in listed["invoice"]["properties"]
    assert listed["purchase_order"]["properties"] == ["order_number"]
    assert api.get("/v1/schemas/invoice", headers=auth()).json() == INVOICE_SCHEMA
    assert api.get("/v1/schemas/nope", headers=auth()).status_code == 404
    assert api.get("/v1/schemas").status_code == 401


def test_the_example_invoice_gives_fields_that_validate(api):
    response = _submit(api, "invoice")
    assert response.status_code == 202, response.text
    queued = response.json()
    assert queued["schema_name"] == "invoice" and queued["extraction"]["state"] == "pending"
    job = wait_for_job(api, queued["id"])
    assert job["state"] == "done", job
    assert api.get(f"/v1/jobs/{job['id']}", headers=auth()).json()["extraction"] == {
        "schema_name": "invoice", "state": "done", "reason": None}
    extraction = _extraction(api, job["id"])
    assert extraction["state"] == "done" and extraction["route"] == "text" and extraction["model"] == MODEL
    (document,) = extraction["documents"]
    jsonschema.validate(document["data"], INVOICE_SCHEMA)
    assert document["data"]["invoice_number"] == INVOICE["invoice_number"]
    ocr = api.get(f"/v1/jobs/{job['id']}/result", params={"format": "txt"}, headers=auth()).text
    assert INVOICE["invoice_number"] in ocr
    assert api.get(f"/v1/jobs/{job['id']}/result", params={"format": "extraction"},
                   headers=auth(KEY_BOB)).status_code == 404, "another key sees nothing"


def test_an_inline_schema_is_used_as_sent(api):
    response = _submit(api, json.dumps(HEADER_SCHEMA))
    assert response.status_code == 202, response.text
    job = wait_for_job(api, response.json()["id"])
    assert job["state"] == "done" and job["schema_name"] == "inline"
    extraction = _extraction(api, job["id"])
    assert extraction["schema"]["name"] == "inline" and extraction["state"] == "done", extraction["reason"]
    data = extraction["documents"][0]["data"]
    jsonschema.validate(data, HEADER_SCHEMA)
    assert list(data) == ["invoice_number", "total_due"]


@pytest.mark.parametrize("schema, schema_file, code, message", [
    ("{not json", None, "invalid_schema", "the schema is not valid JSON"),
    ('{"type": "object", "properties": {"a": {"type": "strin"}}}', None, "invalid_schema",
     "not a valid JSON Schema at #/properties/a/type"),
    ('{"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}', None, "invalid_schema",
     "points outside the schema"),
    ('{"type": "array"}', None, "invalid_schema", 'needs "type": "object"'),
    ('{"type": "object", "description": "' + "x" * 20000 + '"}', None, "invalid_schema",
     "larger than the 16,384-byte limit"),
    (None, b'{"type": "object", "description": "' + b"x" * 20000 + b'"}', "invalid_schema",
     "the schema is larger than the 16,384-byte limit"),
    (None, b"[1, 2]", "invalid_schema", "the schema must be a JSON object"),
    ("nope", None, "unknown_schema", "registered: invoice, purchase_order, receipt"),
    ("broken", None, "invalid_schema", "schema 'broken' is not a valid JSON Schema"),
])
def test_a_bad_schema_is_refused_before_any_work(api, settings, schema, schema_file, code, message):
    jobs_before = api.get("/v1/jobs", headers=auth(), params={"limit": 100}).json()["jobs"]
    uploads_before = sorted((Path(settings.data_dir) / "uploads").iterdir())
    response = _submit(api, schema, schema_file=schema_file)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == code and message in error["message"], error
    assert api.get("/v1/jobs", headers=auth(), params={"limit": 100}).json()["jobs"] == jobs_before
    assert sorted((Path(settings.data_dir) / "uploads").iterdir()) == uploads_before


def test_a_job_without_a_schema_has_no_extraction(api):
    response = _submit(api, document=("report.pdf", samples.multi_page_pdf(1)))
    job = wait_for_job(api, response.json()["id"])
    assert job["state"] == "done" and job["schema_name"] is None and job["extraction"] is None
    missing = api.get(f"/v1/jobs/{job['id']}/result", params={"format": "extraction"}, headers=auth())
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "format_not_requested"


def test_batch_run_writes_name_extraction_json(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "invoice.pdf").write_bytes(make_invoice_pdf())
    schema_path = tmp_path / "invoice-header.json"
    schema_path.write_text(json.dumps(HEADER_SCHEMA))
    out = tmp_path / "out"
    # No OCRSERVE_EXTRACTION_URL: `run` starts our engine with SmolLM2 on loopback itself.
    first = _run_cli(tmp_path, str(tmp_path / "in"), "--out", str(out), "--formats", "md,json",
                     "--schema", str(schema_path))
    assert first.returncode == 0, first.stderr
    assert "1 input(s): 1 done, 0 failed, 0 skipped" in first.stderr
    written = sorted(p.name for p in out.iterdir())
    assert written == [".ocrserve-run.json", "invoice.extraction.json", "invoice.json", "invoice.md"]
    extraction = json.loads((out / "invoice.extraction.json").read_text())
    assert extraction["state"] == "done" and extraction["schema"]["name"] == "invoice-header"
    assert extraction["source"] == str(tmp_path / "in" / "invoice.pdf")
    jsonschema.validate(extraction["documents"][0]["data"], HEADER_SCHEMA)

    again = _run_cli(tmp_path, str(tmp_path / "in"), "--out", str(out), "--formats", "md,json",
                     "--schema", str(schema_path))
    assert again.returncode == 0 and "0 done, 0 failed, 1 skipped" in again.stderr
    refused = _run_cli(tmp_path, str(tmp_path / "in"), "--out", str(out), "--schema", "nope")
    assert refused.returncode == 2 and "no schema is registered as 'nope'" in refused.stderr


def test_an_engine_that_is_down_costs_the_extraction_not_the_ocr(api, engine):
    """Last in this module: it stops the engine."""
    process, _ = engine
    process.stop()
    response = _submit(api, "invoice")
    assert response.status_code == 202, response.text
    job = wait_for_job(api, response.json()["id"])
    assert job["state"] == "done" and job["error"] is None
    for fmt in ("md", "json", "txt", "pdf"):
        assert api.get(f"/v1/jobs/{job['id']}/result", params={"format": fmt}, headers=auth()).status_code == 200
    view = api.get(f"/v1/jobs/{job['id']}", headers=auth()).json()["extraction"]
    assert view["state"] == "failed" and "unreachable" in view["reason"]
    extraction = _extraction(api, job["id"])
    assert extraction["state"] == "failed" and extraction["documents"][0]["data"] is None
    assert "unreachable" in extraction["documents"][0]["reason"]


def _run_cli(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    env = service_env(tmp_path / "unused-data-dir")
    env.pop("OCRSERVE_DATA_DIR")
    return subprocess.run([sys.executable, "-m", "app.commands.run", *argv, "--quiet"], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)
