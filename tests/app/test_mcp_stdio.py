"""`ocrserve mcp` as an agent runs it: the console script spawned over stdio by the MCP SDK's own
client (`mcp.Client` with `StdioServerParameters`), in a data directory of its own, Tesseract as
the recogniser (service_harness says why). The server starts its worker on the first document.

A born-digital PDF with a text layer is read (text-layer mode auto: its own text, no model), its
Markdown comes back from the tool, as progress notifications while it runs, and as the job's
resources; bad arguments are tool errors and the server keeps serving.
"""
from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import anyio
import jsonschema
import pytest
from mcp import Client, StdioServerParameters

import ocr_samples as samples
from service_harness import REPO_ROOT, service_env

sys.path.insert(0, str(REPO_ROOT / "examples"))
from make_invoice import INVOICE  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
SCRIPT = Path(sys.executable).parent / "ocrserve"   # the console script the set-up installs
TOOLS = {"ocr_file", "ocr_url", "extract", "get_job", "get_result"}
HEADER_SCHEMA = {"type": "object", "properties": {
    "invoice_number": {"type": "string", "maxLength": 40},
    "total_due": {"type": "number", "minimum": 0, "maximum": 100000}},
    "required": ["invoice_number", "total_due"], "additionalProperties": False}


def _client(data_dir: Path) -> Client:
    env = service_env(data_dir)
    params = StdioServerParameters(command=str(SCRIPT), args=["mcp"], env=env, cwd=str(REPO_ROOT))
    return Client(params, read_timeout_seconds=120)


def test_a_pdf_is_read_and_fields_extracted_through_the_tools_and_resources(tmp_path):
    """One server for both (its start and its worker's are most of the cost). Extraction: the
    server starts the extraction engine (SmolLM2-135M, shipped in a wheel) for the first job that
    asks for fields; they come back validated by the worker, and here again by jsonschema."""
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(samples.multi_page_pdf(2))
    progress: list[tuple[float, float | None]] = []
    messages: list[str | None] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))
        messages.append(message)

    async def scenario() -> dict:
        async with _client(tmp_path / "data") as client:
            seen: dict = {"tools": await client.list_tools()}
            seen["ocr"] = await client.call_tool("ocr_file", {"path": str(pdf)}, progress_callback=on_progress)
            job_id = seen["ocr"].structured_content["job_id"]
            seen["job"] = await client.call_tool("get_job", {"job_id": job_id})
            seen["txt"] = await client.call_tool("get_result", {"job_id": job_id, "format": "txt", "max_chars": 20})
            seen["resources"] = await client.list_resources(cache_mode="refresh")
            seen["templates"] = await client.list_resource_templates()
            seen["md"] = await client.read_resource(f"ocrserve://jobs/{job_id}/result.md")
            seen["json"] = await client.read_resource(f"ocrserve://jobs/{job_id}/result.json")
            seen["job_id"] = job_id
            seen["extract"] = await client.call_tool("extract", {
                "path": str(REPO_ROOT / "examples" / "invoice.pdf"), "schema": HEADER_SCHEMA, "wait_s": 300},
                read_timeout_seconds=360)   # the extraction engine loads first
            return seen

    seen = anyio.run(scenario)
    tools = {tool.name: tool for tool in seen["tools"].tools}
    assert set(tools) == TOOLS
    assert {"path", "content_base64", "filename", "pages", "wait_s"} <= set(tools["ocr_file"].input_schema["properties"])
    assert "schema" in tools["extract"].input_schema["required"]

    ocr = seen["ocr"]
    assert not ocr.is_error, ocr.content
    markdown = ocr.content[0].text
    assert samples.page_sentence(0) in markdown and samples.page_sentence(1) in markdown
    assert ocr.structured_content["state"] == "done" and ocr.structured_content["pages_total"] == 2
    assert progress and progress[-1] == (2, 2), progress
    assert progress[0] == (0, None) and messages[0] == "starting the local worker", "the first call says why it waits"
    values = [done for done, _ in progress]
    assert all(a < b for a, b in zip(values, values[1:])), f"progress must rise with each notification: {values}"

    job_id = seen["job_id"]
    view = seen["job"].structured_content
    assert view["id"] == job_id and view["state"] == "done" and [p["state"] for p in view["pages"]] == ["done"] * 2
    assert seen["txt"].content[0].text.startswith("Quarterly Report"[:20])
    assert f"job_id={job_id!r} and offset=20" in seen["txt"].content[0].text, "a cut result says how to read on"

    uris = {str(resource.uri): resource for resource in seen["resources"].resources}
    assert {f"ocrserve://jobs/{job_id}/result.md", f"ocrserve://jobs/{job_id}/result.json"} <= set(uris)
    assert uris[f"ocrserve://jobs/{job_id}/result.md"].mime_type == "text/markdown"
    assert {t.uri_template for t in seen["templates"].resource_templates} == {
        "ocrserve://jobs/{job_id}/result.md", "ocrserve://jobs/{job_id}/result.json"}
    assert seen["md"].contents[0].text == markdown
    document = json.loads(seen["json"].contents[0].text)["documents"][0]
    assert {region["source"] for page in document["pages"] for region in page["regions"]} == {"text_layer"}

    extracted = seen["extract"]
    assert not extracted.is_error, extracted.content
    fields = json.loads(extracted.content[0].text)
    jsonschema.validate(fields, HEADER_SCHEMA)
    assert fields["invoice_number"] == INVOICE["invoice_number"]
    assert extracted.structured_content["fields"] == fields and extracted.structured_content["state"] == "done"


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(tmp_path):
    (tmp_path / "notes.txt").write_text("not a document")

    async def scenario() -> dict:
        async with _client(tmp_path / "data") as client:
            calls = {
                "relative": ("ocr_file", {"path": "report.pdf"}),
                "missing": ("ocr_file", {"path": str(tmp_path / "missing.pdf")}),
                "two_sources": ("ocr_file", {"path": str(tmp_path / "notes.txt"), "content_base64": "AAAA"}),
                "no_source": ("ocr_file", {}),
                "not_base64": ("ocr_file", {"content_base64": "@@not base64@@", "filename": "x.pdf"}),
                "not_a_document": ("ocr_file", {"content_base64": base64.b64encode(b"hello").decode()}),
                "text_file": ("ocr_file", {"path": str(tmp_path / "notes.txt")}),
                "unknown_argument": ("ocr_file", {"path": "/x.pdf", "colour": "red"}),
                "bad_pages": ("ocr_file", {"content_base64": base64.b64encode(samples.multi_page_pdf(1)).decode(),
                                           "pages": "7-9"}),
                "file_url": ("ocr_url", {"url": "file:///etc/passwd"}),
                "host_not_listed": ("ocr_url", {"url": "http://169.254.169.254/latest/meta-data"}),
                "bad_schema": ("extract", {"path": "/x.pdf", "schema": {"type": "object", "properties": {
                    "a": {"type": "strin"}}}}),
                "unknown_schema": ("extract", {"path": "/x.pdf", "schema": "no-such-schema"}),
                "unknown_job": ("get_job", {"job_id": "0123456789abcdef0123456789abcdef"}),
                "unknown_tool": ("rm_rf", {}),
            }
            results = {name: await client.call_tool(tool, args) for name, (tool, args) in calls.items()}
            with pytest.raises(Exception) as refused:
                await client.read_resource("ocrserve://jobs/0123456789abcdef0123456789abcdef/result.md")
            results["resource"] = refused.value
            results["after"] = await client.list_tools()
            return results

    results = anyio.run(scenario)
    expected = {
        "relative": "give an absolute path", "missing": "is not a file", "two_sources": "give exactly one of",
        "no_source": "give exactly one of", "not_base64": "not valid base64",
        "not_a_document": "is not a PDF, PNG, JPEG", "text_file": "is not a PDF, PNG, JPEG",
        "unknown_argument": "colour: Extra inputs are not permitted", "bad_pages": "page",
        "file_url": "file:// URLs are refused", "host_not_listed": "not on this server's list of document hosts",
        "bad_schema": "strin", "unknown_schema": "no schema is registered", "unknown_job": "no such job",
        "unknown_tool": "unknown tool 'rm_rf'",
    }
    for name, phrase in expected.items():
        result = results[name]
        assert result.is_error, (name, result.content)
        assert phrase in result.content[0].text, (name, result.content[0].text)
    assert "no such job" in str(results["resource"])
    assert {tool.name for tool in results["after"].tools} == TOOLS
    assert not (tmp_path / "data" / "mcp-logs").exists(), "no refused call started the worker"



def test_services_that_cannot_start_are_a_tool_error_naming_the_logs(tmp_path):
    """A recogniser that cannot work (no tesseract program) stops the first job's worker again; the
    call says why and where the logs are, and the server keeps serving."""
    params = StdioServerParameters(command=str(SCRIPT), args=["mcp"], cwd=str(REPO_ROOT),
                                   env=service_env(tmp_path / "data", tesseract_cmd="/nonexistent/tesseract"))

    async def scenario():
        async with Client(params, read_timeout_seconds=120) as client:
            pdf = base64.b64encode(samples.multi_page_pdf(1)).decode()
            result = await client.call_tool("ocr_file", {"content_base64": pdf, "wait_s": 0})
            return result, await client.list_tools()

    result, tools = anyio.run(scenario)
    assert result.is_error, result.content
    text = result.content[0].text
    assert "the local OCR services could not start" in text and "tesseract program" in text, text
    assert f"logs in {tmp_path / 'data' / 'mcp-logs'}" in text
    assert {tool.name for tool in tools.tools} == TOOLS
