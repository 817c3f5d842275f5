"""Stage: each region's blocks (headings, lists, code, equations, captions, paragraphs),
measured on its line boxes and text (`workers.structure`)."""
from __future__ import annotations

from workers.pipeline.page import PageWork
from workers.structure import with_structure


class Structure:
    name = "structure"
    timing = "assembly"

    def run(self, page: PageWork) -> None:
        width, height = page.size
        page.regions = list(with_structure(page.regions, width, height, page.rendered.dpi))
