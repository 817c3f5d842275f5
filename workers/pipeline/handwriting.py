"""Stage: regions of handwriting (`vision.handwriting`) are marked as such: their label becomes
`handwriting` and their lines' and words' confidences are capped at `HAND_CONFIDENCE`, so no
recogniser's reading of them (ours read print) passes for confident text. Markdown and text
write them with a `[handwriting, low confidence]` mark (`workers.document_result`).

Only recognised text regions are looked at: a text layer's words are no handwriting, and a
figure's or table's lines are judged as part of those."""
from __future__ import annotations

from dataclasses import replace

from vision.handwriting import is_handwriting, line_scores, sampled
from workers.document_result import HANDWRITING
from workers.page_result import LineResult, RegionResult
from workers.pipeline.page import PageWork

HAND_CONFIDENCE = 0.2


class Handwriting:
    name = "handwriting"
    timing = "handwriting"

    def run(self, page: PageWork) -> None:
        image = page.rendered.image
        marked = []
        for region in page.regions:
            if region.source == "ocr" and region.task == "text" and region.lines and \
                    is_handwriting(line_scores(image, sampled([line.bbox for line in region.lines]),
                                               page.vision_num_threads)):
                region = _marked(region)
            marked.append(region)
        page.regions = marked


def _marked(region: RegionResult) -> RegionResult:
    return replace(region, label=HANDWRITING, lines=tuple(_low(line) for line in region.lines))


def _low(line: LineResult) -> LineResult:
    def cap(value: float | None) -> float:
        return HAND_CONFIDENCE if value is None else min(value, HAND_CONFIDENCE)
    return replace(line, confidence=cap(line.confidence),
                   words=tuple(replace(word, confidence=cap(word.confidence)) for word in line.words))
