"""One page, start to finish: a list of named stages over one page's state
(`workers.pipeline.page.PageWork`), then its `PageResult`.

    layout -> layer match -> plan crops -> recognise -> assemble -> words -> handwriting -> furniture
    -> figures -> structure -> layer maths (a born-digital page's formulas as LaTeX)

Text regions are recognised line by line: every detected line is its own crop,
so each recognised line keeps its exact box (the searchable PDF puts it
there) and a page yields many small requests the engine can batch. Tables and
formulas go whole to a recogniser that reads regions (GLM-OCR, Tesseract) and
line by line (a table cell by cell) to one that reads single lines (the house
model), which makes a Markdown table of the cells; figures are cropped and
saved, and the lines detected in them are read as the figure's text. Every
detected line is read once (`vision.line_assignment` puts each in exactly one
region); a line crop with no ink is answered with no text instead of being sent.

The job's text-layer mode is one `TextLayerPolicy`, chosen once per page:
`auto` takes a PDF page's own text where its layer passes its checks
(`vision.text_layer`) and recognises only what the layer lacks; `verify`
recognises everything, the layer's text going along as the recogniser's `draft`
(our engine verifies it token by token), and says per region whether the reading
agrees; `never` recognises everything. The page says why its layer was used or
not (`PageResult.text_layer`).

What a recogniser can do is read from its `Recognizer` protocol
(`reads_single_lines`, `softens_noisy_lines`). Retrying belongs to the page task:
an unreachable recogniser raises out of `process`, and on the task's last attempt
the task passes it wrapped in `LastAttempt`, so every crop counts as failed.

Adding a stage: one module in `workers/pipeline/` with a class that has `name`,
`timing` and `run(page)`, and one line in `STAGES` below.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from vision.document import Document, RenderedPage
from vision.text_layer import TextLayerMode
from workers.page_result import PageResult
from workers.pipeline.assemble import Assemble
from workers.pipeline.figures import Figures
from workers.pipeline.furniture import Furniture
from workers.pipeline.handwriting import Handwriting
from workers.pipeline.layer_match import LayerMatch
from workers.pipeline.layer_maths import LayerMaths
from workers.pipeline.layout import Layout
from workers.pipeline.page import PageWork, Stage
from workers.pipeline.plan_crops import PlanCrops
from workers.pipeline.recognise import Recognise
from workers.pipeline.structure import Structure
from workers.pipeline.text_layer_policy import TextLayerPolicy
from workers.pipeline.words import Words
from workers.recognizers.base import Recognizer
from workers.line_words import with_words
from workers.structure import with_structure
from workers.text_layer_fallback import text_layer_regions

STAGES: tuple[Stage, ...] = (
    Layout(),
    LayerMatch(),
    PlanCrops(),
    Recognise(),
    Assemble(),
    Words(),
    Handwriting(),
    Furniture(),
    Figures(),
    Structure(),
    LayerMaths(),
)


class PagePipeline:
    def __init__(self, recognizer: Recognizer, vision_num_threads: int = 2, stages: Sequence[Stage] = STAGES,
                 word_alignment: bool = False, mark_handwriting: bool = False):
        """`word_alignment`: recognised lines' word boxes aligned on the line image, not
        interpolated (`workers.pipeline.words`; costs a recogniser pass per line).
        `mark_handwriting`: run the handwriting stage (off by default: see `vision.handwriting`)."""
        self.recognizer = recognizer
        self.vision_num_threads = vision_num_threads
        self.stages = tuple(Words(align=True) if isinstance(stage, Words) and word_alignment else stage
                            for stage in stages if mark_handwriting or not isinstance(stage, Handwriting))

    def process(self, document: Document, rendered: RenderedPage, file_index: int,
                figures_dir: Path | None = None, text_layer: str = TextLayerMode.NEVER,
                recognizer: Recognizer | None = None, languages: str | None = None) -> PageResult:
        """`rendered` is a page of `document` (the text layer comes from there); `text_layer`
        is a `TextLayerMode` value. The default here is "never", so callers that measure
        recognition (bench/) keep measuring it; jobs pass their own option, whose default is
        "auto". `recognizer` replaces the pipeline's own for this page (the task's last attempt).
        `languages` is the job's option ("detect" or Tesseract codes; None: the recogniser's own choice)."""
        page = PageWork(document, rendered, file_index, recognizer or self.recognizer,
                        TextLayerPolicy.for_mode(text_layer), self.vision_num_threads, figures_dir, languages)
        for stage in self.stages:
            started = time.perf_counter()
            stage.run(page)
            if stage.timing is not None:
                page.timings[stage.timing] = page.timings.get(stage.timing, 0.0) + time.perf_counter() - started
        return page.result()


def fallback_page(document: Document, file_index: int, page_index: int, dpi: float, reason: str) -> PageResult:
    """A page that could not be processed: its text layer as `fallback` regions, or no regions at all."""
    width_pt, height_pt = document.page_size_points(page_index)
    width, height = max(1, round(width_pt * dpi / 72)), max(1, round(height_pt * dpi / 72))
    try:
        words = document.text_words(page_index, dpi)
    except Exception:   # a page that broke processing may break text extraction too
        words = []
    regions = text_layer_regions(words, width, height, f"{reason}; text taken from the PDF text layer")
    regions = [with_words(region, words) for region in with_structure(regions, width, height, dpi)]
    page_reason = f"{reason}; text taken from the PDF text layer" if regions else reason
    return PageResult(file_index, page_index, width, height, dpi, tuple(regions), {}, page_reason)
