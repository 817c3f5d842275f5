"""A job's result as one JSON document, and the Markdown and plain text made from it.

    {"job_id", "created_at", "documents": [
        {"filename", "kind", "num_pages", "sha256", "pages": [
            {"page", "state", "reason", "width", "height", "dpi", "timings", "regions": [
                {"reading_index", "label", "task", "role", "bbox", "bbox_1000", "text", "status",
                 "origin", "source", "reason",
                 "lines": [{"bbox", "text", "confidence", "low_confidence", "layer_text",
                            "words": [{"bbox", "text", "confidence", "box_source", "confidence_source"}]}],
                 "figure", "blocks": [{"type", "text", "lines", ...}], "text_layer_check"}]}]}]}]}

A line's `words` (`workers.line_words`) say where each box and confidence came from:
`box_source` `text_layer` (the PDF's own word box), `ctc` (its characters' places on the line
image, `vision.ctc_align`) or `interpolated` (spread along the line by character widths);
`confidence_source` `tokens` (the recogniser's log-probs over the word's
characters), `line` (the line's confidence) or null (none given). hOCR and ALTO XML are made
from this JSON too (`workers.export_hocr`, `workers.export_alto`).

`role` is `body` or a kind of page furniture (`workers.furniture`: header, footer, page_number,
line_numbers, margin_note); running headers and footers that only repetition across the
document's pages gives away are marked here, when the pages come together. Markdown and text
leave furniture out unless asked to keep it.

`blocks` (see `workers.structure_blocks`) give each region's structure: headings,
paragraphs, lists, code, equations, captions tied to their figure or table.
Markdown is made from them; a region stored without them renders as a whole.

Markdown and text are pure functions of that JSON, so the batch CLI can write
them again with figure links pointing where it put the figures.
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

from workers.furniture import FURNITURE_ROLES, Placed, repeated_roles
from workers.job_model import JobRecord, PageState
from workers.structure_blocks import BlockType
from workers.structure_rows import BULLETS, join_lines
from workers.table_text import pipe_rows

_PARAGRAPH_LABELS = {"text", "reference", "figure_caption", "table_caption"}
HANDWRITING = "handwriting"    # the label workers.pipeline.handwriting gives a handwritten region
HANDWRITING_MARK = "[handwriting, low confidence]"


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
    for pages in pages_by_file.values():
        mark_repeated_furniture(pages)
    return {
        "job_id": job.id,
        "created_at": iso_time(job.created_at),
        "documents": [{"filename": f.filename, "kind": f.kind, "num_pages": f.num_pages, "sha256": f.sha256,
                       "pages": pages_by_file[i]} for i, f in enumerate(job.files)],
    }


def mark_repeated_furniture(pages: list[dict[str, Any]]) -> None:
    """Running headers and footers one page alone does not give away: body strips whose text
    recurs at the same height on other pages of the document (`workers.furniture.repeated_roles`)."""
    measured = [page for page in pages if page.get("height") and page.get("regions")]
    placed = [(page["width"], page["height"],
               [Placed(tuple(region["bbox"]), region["text"], region["role"], region["task"], region["label"])
                for region in page["regions"]]) for page in measured]
    for page, roles in zip(measured, repeated_roles(placed)):
        page["regions"] = [region if role == region["role"] else {**region, "role": role, "blocks": []}
                           for region, role in zip(page["regions"], roles)]


def is_furniture(region: dict[str, Any]) -> bool:
    return region["role"] in FURNITURE_ROLES


def render_markdown(result: dict[str, Any], figure_prefix: str = "figures/", keep_furniture: bool = False) -> str:
    """Furniture (headers, footers, page numbers, line numbers, margin notes) is left out unless
    `keep_furniture`, when it is written as plain text where it stands in the reading order."""
    documents = result["documents"]
    out: list[str] = []
    for document in documents:
        if len(documents) > 1:
            out.append(f"# {document['filename']}")
        for page in document["pages"]:
            out.append(f"<!-- page {page['page']} -->")
            if page["state"] != PageState.DONE.value:
                out.append(f"<!-- page {page['page']} {page['state']}: {_comment_safe(page['reason'] or '')} -->")
            out.extend(_page_markdown(_kept(page["regions"], keep_furniture), figure_prefix))
    return "\n\n".join(part for part in out if part) + "\n"


def render_text(result: dict[str, Any], keep_furniture: bool = False) -> str:
    """Regions in reading order, a blank line between regions and between their blocks, a form
    feed between pages; paragraphs keep their lines, list items one per line, code as printed.
    Furniture only with `keep_furniture`."""
    pages = []
    for document in result["documents"]:
        for page in document["pages"]:
            regions = _kept(page["regions"], keep_furniture)
            pages.append("\n\n".join(text for text in map(_region_text, regions) if text))
    return "\f".join(page + "\n" for page in pages)


def _kept(regions: list[dict[str, Any]], keep_furniture: bool) -> list[dict[str, Any]]:
    return regions if keep_furniture else [region for region in regions if not is_furniture(region)]


def _page_markdown(regions: list[dict[str, Any]], figure_prefix: str) -> list[str]:
    """Each region's Markdown in reading order; a caption goes right after its figure or table,
    and code blocks that follow each other (a listing the layout cut in two) become one."""
    targets = {region["reading_index"] for region in regions if region["task"] in ("skip", "table")}

    def moves(block: dict[str, Any], region: dict[str, Any]) -> bool:
        target = block.get("caption_of") if block["type"] == BlockType.CAPTION.value else None
        return target in targets and target != region["reading_index"]

    captions: dict[int, list[dict[str, Any]]] = {}
    for region in regions:
        for block in _renderable_blocks(region) or ():
            if moves(block, region):
                captions.setdefault(block["caption_of"], []).append(block)
    parts: list[tuple[dict[str, Any] | None, str]] = []
    for region in regions:
        blocks = _renderable_blocks(region)
        if blocks is None:
            parts.append((None, _region_markdown(region, figure_prefix)))
        parts.extend((block, _block_markdown(block)) for block in blocks or () if not moves(block, region))
        parts.extend((block, _block_markdown(block)) for block in captions.get(region["reading_index"], []))
    merged: list[tuple[dict[str, Any] | None, str]] = []
    for block, markdown in parts:
        last = merged[-1][0] if merged else None
        if block is not None and last is not None and block["type"] == last["type"] == BlockType.CODE.value:
            block = {**last, "text": f"{last['text']}\n{block['text']}", "language": last.get("language") or
                     block.get("language")}
            merged[-1] = (block, _block_markdown(block))
        elif markdown:
            merged.append((block, markdown))
    return [markdown for _, markdown in merged]


def _renderable_blocks(region: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The region's blocks when its Markdown comes from them; None when it is rendered as a whole
    (failed, header or footer, figure, or stored before regions had blocks)."""
    if region["status"] == "failed" or is_furniture(region) or region["task"] == "skip" or \
            region["label"] == HANDWRITING:
        return None
    return region.get("blocks") or None


def _block_markdown(block: dict[str, Any]) -> str:
    text = block["text"].strip("\n")
    kind = block["type"]
    if kind == BlockType.HEADING.value:
        return f"{'#' * min(6, max(1, block.get('level') or 2))} {text}"
    if kind == BlockType.LIST.value:
        return "\n".join(_item_markdown(item, bool(block.get("ordered"))) for item in block["items"])
    if kind == BlockType.CODE.value:
        fence = "```"
        while fence in text:
            fence += "`"
        return f"{fence}{block.get('language') or ''}\n{text}\n{fence}"
    if kind == BlockType.EQUATION.value:
        number = f" \\tag{{{block['number']}}}" if block.get("number") else ""
        return f"$$\n{text}{number}\n$$"
    if kind == BlockType.CAPTION.value:
        return f"*{text}*" if text and "*" not in text else text
    if kind == BlockType.PARAGRAPH.value:
        return text.replace("\n", "  \n")   # a paragraph that keeps its line breaks: Markdown hard breaks
    return text


def _item_markdown(item: dict[str, Any], ordered: bool) -> str:
    marker = item["marker"]
    number = re.fullmatch(r"\(?(\d{1,9})[.)]", marker)
    if ordered and number:
        prefix = f"{int(number.group(1))}."
    elif marker and marker not in BULLETS and marker not in "-–—*+":
        prefix = f"- {marker}"     # "(a)", "iv.", "[3]": Markdown has no such lists; the marker stays
    else:
        prefix = "-"
    return f"{'    ' * item.get('depth', 0)}{prefix} {item['text']}"


def _region_text(region: dict[str, Any]) -> str:
    if region["label"] == HANDWRITING and region["text"].strip():
        return f"{HANDWRITING_MARK} {_join_lines(region['text'])}"
    blocks = region.get("blocks")
    if not blocks or is_furniture(region):
        return pipe_rows(region["text"]) if region["task"] == "table" else region["text"]
    lines = region["lines"]
    parts = []
    for block in blocks:
        if block["type"] in (BlockType.PARAGRAPH.value, BlockType.EQUATION.value) and block["lines"]:
            # an equation as the page spells it: its LaTeX (layer maths) is the Markdown's
            parts.append("\n".join(lines[i]["text"].strip() for i in block["lines"]))
        elif block["type"] == BlockType.LIST.value:
            parts.append("\n".join("  " * item.get("depth", 0) + (f"{item['marker']} " if item["marker"] else "")
                                   + item["text"] for item in block["items"]))
        elif block["type"] == BlockType.TABLE.value:
            parts.append(pipe_rows(block["text"]))   # plain text carries no HTML
        else:
            parts.append(block["text"])
    return "\n\n".join(part for part in parts if part)


def _region_markdown(region: dict[str, Any], figure_prefix: str) -> str:
    """A region as a whole, as before regions had blocks."""
    text = region["text"].strip()
    if region["status"] == "failed":
        note = f"<!-- region {region['reading_index'] + 1} ({region['label']}) could not be read: " \
               f"{_comment_safe(region['reason'] or '')} -->"
        return f"{note}\n\n{_join_lines(text)}" if text else note
    if is_furniture(region):   # kept on request: as it reads, in its place
        return _join_lines(text)
    if region["task"] == "skip":   # a figure: its image, then the text read in it (labels), marked as such
        image = f"![{region['label']}]({figure_prefix}{region['figure']})" if region.get("figure") else ""
        labels = " · ".join(line.strip() for line in text.splitlines() if line.strip())
        return "\n\n".join(part for part in (image, f"> Text in the figure: {labels}" if labels else "") if part)
    if not text:
        return ""
    if region["label"] == HANDWRITING:   # no recogniser here reads handwriting: marked, never passed off as read
        return f"*{HANDWRITING_MARK}* {_join_lines(text)}"
    if region["label"] == "title":
        return f"## {_join_lines(text)}"
    if region["task"] == "formula":
        return f"$$\n{text}\n$$"
    if region["task"] == "table":
        return text
    return _join_lines(text) if region["label"] in _PARAGRAPH_LABELS else text


def _join_lines(text: str) -> str:
    """A paragraph's lines as one line; a word hyphenated across lines is joined back."""
    return join_lines(text.splitlines())


def _comment_safe(text: str) -> str:
    return text.replace("--", "- -")


def iso_time(epoch_s: float) -> str:
    return dt.datetime.fromtimestamp(epoch_s, tz=dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
