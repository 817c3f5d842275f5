"""Stage: every line's words, with boxes and confidences (`workers.line_words`).

Runs right after assemble, while each recognised line can still be found among its block's
outcomes (by box and text) for the reply's token log-probs. The page's text layer is read
once, and only on a page where some text may be the layer's: its layer was usable (auto,
verify) or a region fell back to it; then a line its words spell keeps their boxes.
"""
from __future__ import annotations

from vision.document import TextWord
from workers.line_words import TokenLogprobs, with_words
from workers.page_result import Box, RegionStatus
from workers.pipeline.page import PageWork


class Words:
    name = "words"
    timing = "words"

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
        page.regions = [with_words(region, layer, tokens_of) for region in page.regions]
