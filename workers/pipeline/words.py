"""Stage: every line's words, with boxes and confidences (`workers.line_words`).

Runs right after assemble, while each recognised line can still be found among its block's
outcomes (by box and text) for the reply's token log-probs. The page's text layer is read
once, and only on a page where some text may be the layer's: its layer was usable (auto,
verify) or a region fell back to it; then a line its words spell keeps their boxes. Any other
line is interpolated or, in a pipeline made with alignment (`Settings.word_alignment`), aligned
on the rendered page (`vision.ctc_align`: one recogniser pass per line, ~1.7x the house model's
encoder, so it is asked for, not the default), and either is moved onto the gaps of the line's
ink on the rendered page (`workers.ink_gaps`, a few numpy passes per line). The aligner's
session is made on first use.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from vision.crops import crop_box
from vision.ctc_align import LineAligner
from vision.document import TextWord
from workers.line_words import TokenLogprobs, with_words
from workers.page_result import Box, RegionResult, RegionStatus
from workers.pipeline.page import PageWork
from workers.table_text import band_rows, markdown_table


class Words:
    name = "words"
    timing = "words"

    def __init__(self, align: bool = False) -> None:
        self.align = align
        self._aligners: dict[int, LineAligner] = {}

    def run(self, page: PageWork) -> None:
        tokens_of: dict[tuple[Box, str], TokenLogprobs] = {}
        for work in page.blocks:
            if not work.by_lines:
                continue
            for line, outcome in zip(work.block.lines, work.outcomes):
                if outcome.text and outcome.tokens:
                    tokens_of[(tuple(float(v) for v in line.bbox), outcome.text)] = outcome.tokens  # type: ignore[index]
        layer: list[TextWord] = []
        if (page.match is not None and page.match.verdict.usable) or any(
                region.source == "text_layer" or region.status is RegionStatus.FALLBACK for region in page.regions):
            layer = page.document.text_words(page.page_index, page.rendered.dpi)
        image = page.rendered.image

        def align(bbox: Box, text: str) -> list[float] | None:
            left, top, right, bottom = crop_box(bbox, image.width, image.height)
            centres = self._aligner(page.vision_num_threads).char_centres(image.crop((left, top, right, bottom)), text)
            return None if centres is None else [left + x for x in centres]

        grey = np.asarray(image.convert("L"))
        page.regions = [_retabulated(with_words(region, layer, tokens_of, align if self.align else None, grey))
                        for region in page.regions]

    def _aligner(self, num_threads: int) -> LineAligner:
        if num_threads not in self._aligners:
            self._aligners[num_threads] = LineAligner(num_threads)
        return self._aligners[num_threads]


def _retabulated(region: RegionResult) -> RegionResult:
    """A table, recognised or from the text layer, its Markdown made again now that its lines
    have word boxes: a line that runs over two cells, or a header over two columns, splits at
    its wide gaps."""
    lines = [line for line in region.lines if line.text.strip()]   # a line that took nothing (a drawing) has no words
    if region.task != "table" or region.status is not RegionStatus.OK \
            or not lines or not all(line.words for line in lines):
        return region
    rows = [[(line.bbox, line.text, [(word.bbox, word.text) for word in line.words]) for line in row]
            for row in band_rows(lines)]
    return replace(region, text=markdown_table(rows))
