"""One page, start to finish: render -> layout, lines, reading order (vision)
-> crops -> recognition -> regions in reading order, each ok / fallback / failed.

Text regions are recognised line by line: every detected line is its own crop,
so each recognised line keeps its exact box (the searchable PDF puts it
there) and a page yields many small requests the engine can batch. Tables and
formulas go whole to a recogniser that reads regions (GLM-OCR, Tesseract) and
line by line (a table cell by cell) to one that reads single lines (the house
model), which makes a Markdown table of the cells; figures are cropped and
saved, and the lines detected in them are read as the figure's text. Every
detected line is read once (`vision.line_assignment` puts each in exactly one
region); a line crop with no ink (a rule, dot leaders: `vision.ink`) is
answered with no text instead of being sent.

A region whose crops could not all be read takes its text from the PDF text
layer (`fallback`) when the page has one, else it is `failed` and keeps what
was read. A recogniser that is unreachable raises out of `process` so the
task can retry the page, except on the final attempt, where it counts as a
failure of every crop like any other.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from vision.crops import crop_image, crop_line, normalise_box
from vision.document import Document, RenderedPage, TextWord
from vision.ink import has_text_ink
from vision.layout import RecognitionTask
from vision.page_analysis import LayoutBlock, analyze_page
from vision.reading_order import line_rows
from workers.page_result import LineResult, PageResult, RegionResult, RegionStatus
from workers.recognizer import (RecognitionItem, RecognitionOutcome, Recognizer, RecognizerConfigError,
                                RecognizerUnavailableError)
from workers.table_text import markdown_table
from workers.text_layer_fallback import fallback_text, text_layer_regions


NO_TEXT = RecognitionOutcome("")


class PagePipeline:
    def __init__(self, recognizer: Recognizer, vision_num_threads: int = 2):
        self.recognizer = recognizer
        self.vision_num_threads = vision_num_threads

    def process(self, document: Document, rendered: RenderedPage, file_index: int, final_attempt: bool = True,
                figures_dir: Path | None = None) -> PageResult:
        """`rendered` is a page of `document` (the text layer comes from there)."""
        page_index = rendered.page_index
        layout = analyze_page(rendered.image, num_threads=self.vision_num_threads, render_s=rendered.render_s)
        blocks = layout.blocks
        single_lines = getattr(self.recognizer, "reads_single_lines", False)
        crops = [_crops_of(block, rendered, single_lines) for block in blocks]
        # Crops with no ink (rules, dot leaders, specks) are answered with no text, never sent.
        items = [item for block_items in crops for item in block_items if item is not None]

        started = time.perf_counter()
        try:
            read = iter(self.recognizer.recognize(items))
        except RecognizerUnavailableError as exc:
            if not final_attempt:
                raise
            read = iter([RecognitionOutcome(None, f"{exc}; gave up after the last retry")] * len(items))
        except RecognizerConfigError as exc:
            read = iter([RecognitionOutcome(None, str(exc))] * len(items))
        outcomes = [NO_TEXT if item is None else next(read) for block_items in crops for item in block_items]
        recognized = time.perf_counter()

        words: list[TextWord] | None = None
        regions = []
        position = 0
        for block, block_items in zip(blocks, crops):
            block_outcomes = outcomes[position:position + len(block_items)]
            position += len(block_items)
            if words is None and not all(outcome.ok for outcome in block_outcomes):
                words = document.text_words(page_index, rendered.dpi)
            regions.append(_region(block, block_outcomes, words or [], layout.width, layout.height,
                                   _by_lines(block, single_lines)))
        regions = [_with_figure(region, rendered, file_index, page_index, figures_dir) for region in regions]
        assembled = time.perf_counter()

        timings = {"render": layout.timings.render_s, "layout": layout.timings.layout_s,
                   "lines": layout.timings.lines_s, "order": layout.timings.order_s,
                   "recognition": recognized - started, "assembly": assembled - recognized}
        return PageResult(file_index, page_index, layout.width, layout.height, rendered.dpi, tuple(regions),
                          timings, _page_reason(regions))


def fallback_page(document: Document, file_index: int, page_index: int, dpi: float, reason: str) -> PageResult:
    """A page that could not be processed: its text layer as `fallback` regions, or no regions at all."""
    width_pt, height_pt = document.page_size_points(page_index)
    width, height = max(1, round(width_pt * dpi / 72)), max(1, round(height_pt * dpi / 72))
    try:
        words = document.text_words(page_index, dpi)
    except Exception:   # a page that broke processing may break text extraction too
        words = []
    regions = text_layer_regions(words, width, height, f"{reason}; text taken from the PDF text layer")
    page_reason = f"{reason}; text taken from the PDF text layer" if regions else reason
    return PageResult(file_index, page_index, width, height, dpi, tuple(regions), {}, page_reason)


def _by_lines(block: LayoutBlock, single_lines: bool) -> bool:
    """Whether the block is recognised one detected line per crop: text always, a figure's
    labels always (the figure itself is not read), tables and formulas when the recogniser
    reads single lines only."""
    if not block.lines:
        return False
    return block.task in (RecognitionTask.TEXT, RecognitionTask.SKIP) or single_lines


def _crops_of(block: LayoutBlock, page: RenderedPage, single_lines: bool) -> list[RecognitionItem | None]:
    """What to send for a block, None for a line crop with no ink."""
    if _by_lines(block, single_lines):
        crops = [crop_line(page.image, line) for line in block.lines]
        return [RecognitionItem(crop, RecognitionTask.TEXT, is_single_line=True) if has_text_ink(crop) else None
                for crop in crops]
    if block.task is RecognitionTask.SKIP:
        return []
    return [RecognitionItem(crop_image(page.image, block.region.bbox), block.task, is_single_line=False)]


def _region(block: LayoutBlock, outcomes: list[RecognitionOutcome], words: list[TextWord],
            width: int, height: int, by_lines: bool) -> RegionResult:
    bbox = block.region.bbox
    base = dict(reading_index=block.reading_index, label=block.region.label, task=block.task.value,
                role=block.role.value, bbox=bbox, bbox_1000=normalise_box(bbox, width, height),
                origin=block.region.source)
    failures = [outcome.error for outcome in outcomes if not outcome.ok]
    if by_lines:
        lines = tuple(LineResult(tuple(float(v) for v in line.bbox), outcome.text)  # type: ignore[arg-type]
                      for line, outcome in zip(block.lines, outcomes) if outcome.text)
    else:
        lines = ()
    read_text = "\n".join(outcome.text for outcome in outcomes if outcome.text)  # type: ignore[misc]
    if by_lines and block.task is RecognitionTask.TABLE:
        text_of = {line: outcome.text for line, outcome in zip(block.lines, outcomes) if outcome.text}
        read_text = markdown_table([[(line.bbox, text_of[line]) for line in row if line in text_of]
                                    for row in line_rows(block.lines)])
    if not failures:
        return RegionResult(text=read_text, status=RegionStatus.OK, lines=lines, **base)
    what = f"{len(failures)} of {len(outcomes)} crops could not be read ({failures[0]})"
    from_layer = fallback_text(words, bbox)
    if from_layer is not None:
        text, layer_lines = from_layer
        return RegionResult(text=text, status=RegionStatus.FALLBACK, lines=layer_lines,
                            reason=f"{what}; text taken from the PDF text layer", **base)
    return RegionResult(text=read_text, status=RegionStatus.FAILED, lines=lines,
                        reason=f"{what}; the page has no text layer to fall back to", **base)


def _with_figure(region: RegionResult, page: RenderedPage, file_index: int, page_index: int,
                 figures_dir: Path | None) -> RegionResult:
    if region.task != RecognitionTask.SKIP.value or figures_dir is None:
        return region
    name = f"file{file_index + 1}-page{page_index + 1}-region{region.reading_index + 1}.png"
    figures_dir.mkdir(parents=True, exist_ok=True)
    crop_image(page.image, region.bbox).save(figures_dir / name)
    return replace(region, figure=name)


def _page_reason(regions: list[RegionResult]) -> str | None:
    not_ok = [region for region in regions if region.status is not RegionStatus.OK]
    if not not_ok:
        return None
    num_fallback = sum(region.status is RegionStatus.FALLBACK for region in not_ok)
    num_failed = len(not_ok) - num_fallback
    parts = [f"{num_fallback} region{'s' * (num_fallback != 1)} from the PDF text layer"] if num_fallback else []
    parts += [f"{num_failed} region{'s' * (num_failed != 1)} failed"] if num_failed else []
    return f"{' and '.join(parts)}: {not_ok[0].reason}"
