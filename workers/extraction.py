"""Schema extraction: a finished job's documents -> fields that validate against
the job's schema, one answer per document, written as the job's
`extraction.json` beside its other results.

Two routes (see `workers.extraction_client` for which one a set-up takes):
- text: the document's recognised text (its regions in reading order, pages
  apart) given to a text LLM -- SmolLM2-135M-Instruct on our engine by default;
- vision: the document's first pages as images given to a vision-language
  model that reads them and answers directly (GLM-OCR's information extraction).

| kept here                        | how                                                            |
|----------------------------------|----------------------------------------------------------------|
| only data that validates is kept | every answer is parsed and checked with `jsonschema`, grammar or not |
| nothing is cut silently          | text past `extraction_max_input_chars`, pages past `extraction_max_pages`: a note |
| a failure costs no OCR results   | it becomes a document `state: failed` with a `reason`; nothing here raises for it |

    {"job_id", "schema": {"name", "sha256"}, "route", "model", "state": "done" | "partial" | "failed",
     "reason", "documents": [{"filename", "state": "done" | "failed", "reason", "data",
                              "input": {...}, "seconds"}]}
"""
from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx

from vision.document import Document
from vision.limits import InputError
from workers.document_result import render_text
from workers.extraction_client import ExtractionClient, ExtractionEndpoint, ExtractionError
from workers.extraction_prompt import text_messages, vision_messages
from workers.extraction_schema import ExtractionSchema, validation_error
from workers.job_model import JobRecord
from workers.settings import Settings

MAX_CONCURRENT_DOCUMENTS = 4   # bounds the page images held at once on the vision route


class SchemaExtractor:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.client = ExtractionClient.from_settings(settings)

    @property
    def endpoint(self) -> ExtractionEndpoint:
        return self.client.endpoint

    def extract(self, job: JobRecord, result: dict[str, Any], upload_paths: list[Path],
                budget_s: float | None = None) -> dict[str, Any]:
        """The job's extraction result; `result` is its document result (`build_document_result`).
        Documents still unanswered after `budget_s` seconds are failed, with that reason."""
        schema = job.options.extraction
        assert schema is not None and len(upload_paths) == len(job.files) == len(result["documents"])
        documents = asyncio.run(self._extract_all(job, schema, result["documents"], upload_paths, budget_s))
        return self.envelope(job, schema, documents)

    def envelope(self, job: JobRecord, schema: ExtractionSchema, documents: list[dict[str, Any]]) -> dict[str, Any]:
        num_done = sum(document["state"] == "done" for document in documents)
        state = "done" if num_done == len(documents) else "failed" if num_done == 0 else "partial"
        reason = next((f"{d['filename']}: {d['reason']}" for d in documents if d["state"] == "failed"), None)
        return {"job_id": job.id, "schema": {"name": schema.name, "sha256": schema.sha256},
                "route": self.endpoint.route, "model": self.endpoint.model, "state": state, "reason": reason,
                "documents": documents}

    def failed(self, job: JobRecord, reason: str) -> dict[str, Any]:
        """Every document failed for one reason (the extraction could not run at all)."""
        assert job.options.extraction is not None
        documents = [_failed_document(f.filename, reason, {}) for f in job.files]
        return self.envelope(job, job.options.extraction, documents)

    async def _extract_all(self, job: JobRecord, schema: ExtractionSchema, documents: list[dict[str, Any]],
                           upload_paths: list[Path], budget_s: float | None) -> list[dict[str, Any]]:
        semaphore = asyncio.Semaphore(MAX_CONCURRENT_DOCUMENTS)
        async with self.client.open(MAX_CONCURRENT_DOCUMENTS) as http:
            async def one(file_index: int) -> dict[str, Any]:
                async with semaphore:
                    return await self._extract_document(http, job, schema, file_index, documents[file_index],
                                                        upload_paths[file_index])

            tasks = [asyncio.create_task(one(i)) for i in range(len(documents))]
            _, unfinished = await asyncio.wait(tasks, timeout=budget_s)
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*unfinished, return_exceptions=True)
        reason = (f"not answered within the {budget_s or 0:.1f} s left in the job's time limit "
                  "(OCRSERVE_JOB_TIME_LIMIT_S)")
        return [_failed_document(document["filename"], reason, {}) if task in unfinished else task.result()
                for task, document in zip(tasks, documents)]

    async def _extract_document(self, http: httpx.AsyncClient, job: JobRecord, schema: ExtractionSchema,
                                file_index: int, document: dict[str, Any], upload_path: Path) -> dict[str, Any]:
        started = time.monotonic()
        filename = document["filename"]
        if self.endpoint.route == "vision":
            # Rendering is blocking work: off the loop, so other documents' requests keep going.
            try:
                messages, info = await asyncio.to_thread(self._vision_input, job, file_index, upload_path, schema)
            except (InputError, OSError) as exc:
                return _failed_document(filename, f"the pages could not be rendered for the model: {exc}",
                                        {"source": "page_images"}, started)
        else:
            text = render_text({"documents": [document]}).replace("\f", "\n\n").strip()
            if not text:
                return _failed_document(filename, "no text was recognised in this document, so there was "
                                                  "nothing to extract from", {"source": "recognised_text"})
            used, info = self._text_input(text)
            messages = text_messages(used, schema.schema)
        try:
            answer = await self.client.complete_json(http, messages, schema)
        except ExtractionError as exc:
            return _failed_document(filename, str(exc), info, started)
        info = {**info, "prompt_tokens": answer.prompt_tokens, "answer_tokens": answer.completion_tokens}
        try:
            data = json.loads(answer.text)
        except ValueError as exc:
            return _failed_document(filename, f"the answer is not valid JSON ({exc})", info, started)
        problem = validation_error(data, schema.schema)
        if problem is not None:
            return _failed_document(filename, f"the answer does not match the schema {problem}", info, started)
        return {"filename": filename, "state": "done", "reason": None, "data": data, "input": info,
                "seconds": round(time.monotonic() - started, 3)}

    def _text_input(self, text: str) -> tuple[str, dict[str, Any]]:
        max_chars = self.settings.extraction_max_input_chars
        used = cut_text(text, max_chars)
        info: dict[str, Any] = {"source": "recognised_text", "num_chars": len(text), "num_chars_used": len(used),
                                "truncated": len(used) < len(text), "note": None}
        if info["truncated"]:
            info["note"] = (f"the document's text has {len(text):,} characters; only the first {len(used):,} were "
                            f"given to the model (OCRSERVE_EXTRACTION_MAX_INPUT_CHARS={max_chars})")
        return used, info

    def _vision_input(self, job: JobRecord, file_index: int, upload_path: Path,
                      schema: ExtractionSchema) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        page_indices = job.files[file_index].page_indices
        used = page_indices[:self.settings.extraction_max_pages]
        with Document.open_path(upload_path, self.settings.vision_limits()) as document:
            images = [document.render_page(page_index, job.options.dpi).image for page_index in used]
        info: dict[str, Any] = {"source": "page_images", "pages": [i + 1 for i in page_indices],
                                "pages_used": [i + 1 for i in used], "truncated": len(used) < len(page_indices),
                                "note": None}
        if info["truncated"]:
            info["note"] = (f"the document has {len(page_indices)} selected pages; only the first {len(used)} were "
                            f"shown to the model (OCRSERVE_EXTRACTION_MAX_PAGES={self.settings.extraction_max_pages})")
        return vision_messages(images, schema.schema), info


def cut_text(text: str, max_chars: int) -> str:
    """`text` if it fits, else its first `max_chars` characters, ending at a word break when one is near."""
    if len(text) <= max_chars:
        return text
    cut = max(text.rfind(" ", 0, max_chars + 1), text.rfind("\n", 0, max_chars + 1))
    return text[:cut if cut >= max_chars * 0.8 else max_chars].rstrip()


def _failed_document(filename: str, reason: str, info: dict[str, Any], started: float | None = None) -> dict[str, Any]:
    seconds = round(time.monotonic() - started, 3) if started is not None else None
    return {"filename": filename, "state": "failed", "reason": reason, "data": None, "input": info,
            "seconds": seconds}
