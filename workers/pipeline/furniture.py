"""Stage: page furniture found on the page itself (`workers.furniture.page_roles`): a lone page
number in the top or bottom band, a column of line numbers, a note in the outer margin. Running
headers and footers are found by position in `vision.reading_order` already, and by repetition
across pages when the job's result is put together."""
from __future__ import annotations

from dataclasses import replace

from workers.furniture import Placed, page_roles
from workers.pipeline.page import PageWork


class Furniture:
    name = "furniture"
    timing = "assembly"

    def run(self, page: PageWork) -> None:
        width, height = page.size
        placed = [Placed(region.bbox, region.text, region.role, region.task, region.label,
                         tuple(line.text for line in region.lines)) for region in page.regions]
        roles = page_roles(placed, width, height)
        page.regions = [region if role == region.role else replace(region, role=role)
                        for region, role in zip(page.regions, roles)]
