"""A job's result as one JSON document, and the Markdown and plain text made from it.

    {"job_id", "created_at", "documents": [
        {"filename", "kind", "num_pages", "sha256", "pages": [
            {"page", "state", "reason", "width", "height", "dpi", "timings", "regions": [
                {"reading_index", "label", "task", "role", "bbox", "bbox_1000", "text", "status",
                 "origin", "source", "reason", "lines": [{"bbox", "text", "confidence", "low_confidence"}],
                 "figure"}]}]}]}

Markdown and text are pure functions of that JSON, so the batch CLI can write
them again with figure links pointing where it put the figures.
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from workers.job_model import JobRecord, PageState

_PARAGRAPH_LABELS = {"text", "reference", "figure_caption", "table_caption"}


def build_document_result(job: JobRecord, page_results: dict[tuple[int, int], dict[str, Any]]) -> dict[str, Any]:
    pages_by_file: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(job.files))}
    for page in job.pages:
        stored = page_results.get((page.file_index, page.page_index))
        entry: dict[str, Any] = {"page": page.page_number, "state": page.state.value, "reason": page.reason}
        if stored is not None:
            entry.update({k: v for k, v in stored.items() if k not in ("file_index", "page", "reason")})
        else:
            entry.update({"width": None, "height": None, "dpi": None, "timings": {}, "regions": []})
        pages_by_file[page.file_index].append(entry)
    return {
        "job_id": job.id,
        "created_at": iso_time(job.created_at),
        "documents": [{"filename": f.filename, "kind": f.kind, "num_pages": f.num_pages, "sha256": f.sha256,
                       "pages": pages_by_file[i]} for i, f in enumerate(job.files)],
    }


def render_markdown(result: dict[str, Any], figure_prefix: str = "figures/") -> str:
    documents = result["documents"]
    out: list[str] = []
    for document in documents:
        if len(documents) > 1:
            out.append(f"# {document['filename']}")
        for page in document["pages"]:
            out.append(f"<!-- page {page['page']} -->")
            if page["state"] != PageState.DONE.value:
                out.append(f"<!-- page {page['page']} {page['state']}: {_comment_safe(page['reason'] or '')} -->")
            out.extend(_region_markdown(region, figure_prefix) for region in page["regions"])
    return "\n\n".join(part for part in out if part) + "\n"


def render_text(result: dict[str, Any]) -> str:
    """Regions in reading order, a blank line between regions, a form feed between pages."""
    pages = []
    for document in result["documents"]:
        for page in document["pages"]:
            pages.append("\n\n".join(region["text"] for region in page["regions"] if region["text"]))
    return "\f".join(page + "\n" for page in pages)


def _region_markdown(region: dict[str, Any], figure_prefix: str) -> str:
    text = region["text"].strip()
    if region["status"] == "failed":
        note = f"<!-- region {region['reading_index'] + 1} ({region['label']}) could not be read: " \
               f"{_comment_safe(region['reason'] or '')} -->"
        return f"{note}\n\n{_join_lines(text)}" if text else note
    if region["role"] in ("header", "footer"):
        return f"<!-- {region['role']}: {_comment_safe(_join_lines(text))} -->" if text else ""
    if region["task"] == "skip":
        return f"![{region['label']}]({figure_prefix}{region['figure']})" if region.get("figure") else ""
    if not text:
        return ""
    if region["label"] == "title":
        return f"## {_join_lines(text)}"
    if region["task"] == "formula":
        return f"$$\n{text}\n$$"
    if region["task"] == "table":
        return text
    return _join_lines(text) if region["label"] in _PARAGRAPH_LABELS else text


def _join_lines(text: str) -> str:
    """A paragraph's lines as one line; a word hyphenated across lines is joined back."""
    joined = ""
    for line in (line.strip() for line in text.splitlines()):
        if not line:
            continue
        if joined.endswith("-") and line[:1].islower():
            joined = joined[:-1] + line
        else:
            joined = f"{joined} {line}" if joined else line
    return joined


def _comment_safe(text: str) -> str:
    return text.replace("--", "- -")


def iso_time(epoch_s: float) -> str:
    return dt.datetime.fromtimestamp(epoch_s, tz=dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
