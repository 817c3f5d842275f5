"""Stage: a PDF page's own text layer matched to its detected lines (`vision.text_layer`),
when the job's text-layer policy looks at layers. Each block learns what the layer holds
for it; blocks are added for layer text the detectors missed. Images have no layer."""
from __future__ import annotations

from vision.formats import DocumentKind
from vision.text_layer import match_text_layer, read_text_layer
from workers.pipeline.page import BlockWork, PageWork, reads_by_lines


class LayerMatch:
    name = "layer_match"
    timing = "text_layer"

    def run(self, page: PageWork) -> None:
        if not page.policy.matches_layer or page.document.kind is not DocumentKind.PDF:
            return
        assert page.layout is not None, "the layout stage runs first"
        match = match_text_layer(read_text_layer(page.document, page.rendered), page.layout)
        page.match = match
        page.blocks = [BlockWork(block, reads_by_lines(block, page.recognizer), text)
                       for block, text in zip(match.blocks, match.texts)]
