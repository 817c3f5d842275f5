"""Stage: each figure's crop saved as a PNG beside the job's results (when the job keeps
them), named by file, page and reading position; the region says its file name."""
from __future__ import annotations

from dataclasses import replace

from vision.crops import crop_image
from vision.layout import RecognitionTask
from workers.pipeline.page import PageWork


class Figures:
    name = "figures"
    timing = "assembly"

    def run(self, page: PageWork) -> None:
        if page.figures_dir is None:
            return
        for position, region in enumerate(page.regions):
            if region.task != RecognitionTask.SKIP.value:
                continue
            name = f"file{page.file_index + 1}-page{page.page_index + 1}-region{region.reading_index + 1}.png"
            page.figures_dir.mkdir(parents=True, exist_ok=True)
            crop_image(page.rendered.image, region.bbox).save(page.figures_dir / name)
            page.regions[position] = replace(region, figure=name)
