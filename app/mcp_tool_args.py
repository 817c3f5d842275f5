"""The MCP tools' arguments: one pydantic model per tool, whose JSON schema is the tool's
`inputSchema` and whose validation is the check of a call's arguments (unknown names refused).
Bounds are the API's where it has them (page selections, text-layer modes, schema size)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_WAIT_S = 50.0   # under the minute many MCP clients give a tool call
MAX_WAIT_S = 600.0
DEFAULT_MAX_CHARS = 100_000
MAX_CHARS = 1_000_000
TextLayerMode = Literal["auto", "never", "verify"]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _JobOptions(_Args):
    pages: str | None = Field(None, max_length=200, description="pages to read, e.g. '1-5,8' (default: all)")
    text_layer: TextLayerMode | None = Field(
        None, description="auto: a born-digital PDF page whose own text layer passes checks takes its text from "
                          "it (exact and fast); never: always recognise; verify: recognise with the layer as a "
                          "draft (default: the server's, auto)")
    wait_s: float = Field(DEFAULT_WAIT_S, ge=0, le=MAX_WAIT_S,
                          description="seconds to wait for the job; past them the tool returns the job id to "
                                      "follow with get_job")
    max_chars: int = Field(DEFAULT_MAX_CHARS, ge=1, le=MAX_CHARS,
                           description="at most this many characters of the result are returned inline")


class _FileSource(_Args):
    path: str | None = Field(None, max_length=4096,
                             description="absolute path of a document (PDF, PNG, JPEG, TIFF, ...) on the machine "
                                         "running the server (a local `ocrserve mcp` only)")
    content_base64: str | None = Field(None, description="the document's bytes, base64-encoded (within the "
                                                         "server's upload limit)")
    filename: str | None = Field(None, max_length=200, description="the document's name, shown back in results")


class OcrFileArgs(_JobOptions, _FileSource):
    pass


class OcrUrlArgs(_JobOptions):
    url: str = Field(max_length=4096, description="http(s) URL of the document; its host must be on the "
                                                  "server's list of document hosts")


class ExtractArgs(_JobOptions, _FileSource):
    url: str | None = Field(None, max_length=4096, description="or an http(s) URL on the server's list of hosts")
    schema_: str | dict[str, Any] = Field(
        alias="schema", description="a JSON schema (an object with properties) for the fields to extract, or the "
                                    "name of a schema registered on the server (e.g. 'invoice')")


class GetJobArgs(_Args):
    job_id: str = Field(max_length=64, description="the id an OCR or extract tool returned")


class GetResultArgs(_Args):
    job_id: str = Field(max_length=64, description="the id of a done job")
    format: Literal["md", "json", "txt", "extraction"] = Field(
        "md", description="md: Markdown; json: pages, regions, lines with boxes; txt: plain text; extraction: "
                          "the fields of a job sent with a schema")
    offset: int = Field(0, ge=0, description="the first character to return (for results longer than max_chars)")
    max_chars: int = Field(DEFAULT_MAX_CHARS, ge=1, le=MAX_CHARS)


TOOL_ARGS: dict[str, type[_Args]] = {
    "ocr_file": OcrFileArgs, "ocr_url": OcrUrlArgs, "extract": ExtractArgs,
    "get_job": GetJobArgs, "get_result": GetResultArgs,
}
TOOL_DESCRIPTIONS = {
    "ocr_file": "OCR a document, PDF or image (a path on the server's machine, or base64 bytes), into Markdown. Waits up to "
                "wait_s for the result; a longer job returns its id to follow with get_job.",
    "ocr_url": "OCR a PDF or image fetched from an http(s) URL whose host the server allows, into Markdown. "
               "Waits up to wait_s; a longer job returns its id.",
    "extract": "Extract fields from a document with a JSON schema: the document is OCR'd and the fields are "
               "returned as JSON that validates against the schema.",
    "get_job": "A job's state and per-page progress.",
    "get_result": "A done job's result: md (Markdown), json (structure with boxes), txt, or extraction.",
}
