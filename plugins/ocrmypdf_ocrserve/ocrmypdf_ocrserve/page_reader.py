"""One page image OCRmyPDF hands over, read by ocrserve's page pipeline.

OCRmyPDF calls its engine in worker processes (or threads, with --use-threads),
one page at a time. Each worker builds the pipeline once (the layout and line
detector models load in seconds) and keeps it for every page it is given; the
recogniser it holds talks to the one engine the run shares (`shared_engine.py`).
The image is read as ocrserve reads an uploaded image: the same caps, and the
DPI the file states (OCRmyPDF writes the page's rendering resolution into it).
"""
from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from PIL import Image

from vision.document import Document
from vision.text_layer import TextLayerMode
from workers.document_result import render_text
from workers.page_pipeline import PagePipeline
from workers.page_result import PageResult
from workers.recognizers.registry import build_recognizer
from workers.settings import Settings

# One pipeline per worker: per process, and per thread under --use-threads, since ocrserve runs a
# pipeline in one thread at a time (its workers are processes) and nothing here says it may share.
_local = threading.local()


def worker_settings() -> Settings:
    """The worker's settings: ocrserve's OCRSERVE_* environment, which the main process completed
    with the run's engine (address and key) and the threads each worker may use (`validate`)."""
    return Settings()


def _pipeline(settings: Settings) -> PagePipeline:
    key = (settings.engine_url, settings.vision_num_threads)
    if getattr(_local, "key", None) != key:
        _local.pipeline = PagePipeline(build_recognizer(settings), settings.vision_num_threads)
        _local.key = key
    return _local.pipeline


def read_page(image_file: Path) -> PageResult:
    """The page's regions and lines, with boxes in pixels of the image as OCRmyPDF gave it.

    Every line is recognised (text layer "never"): OCRmyPDF hands over pixels, never a PDF's own
    text. Where the pipeline had to shrink a huge image to its pixel cap, boxes are scaled back."""
    settings = worker_settings()
    pipeline = _pipeline(settings)
    with Image.open(image_file) as image:   # its header only: the size OCRmyPDF's boxes are in
        width, height = image.size
    with Document.open_path(image_file, settings.vision_limits()) as document:
        page = pipeline.process(document, document.render_page(0), 0, text_layer=TextLayerMode.NEVER)
    return _in_image_pixels(page, width, height)


def _in_image_pixels(page: PageResult, width: int, height: int) -> PageResult:
    if (page.width, page.height) == (width, height):
        return page
    sx, sy = width / page.width, height / page.height

    def scaled(box):
        return (box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy)

    regions = tuple(replace(region, bbox=scaled(region.bbox),
                            lines=tuple(replace(line, bbox=scaled(line.bbox)) for line in region.lines))
                    for region in page.regions)
    return replace(page, width=width, height=height, dpi=page.dpi * sx, regions=regions)


def page_text(page: PageResult) -> str:
    """The page as ocrserve's text result writes it (furniture kept: it is on the page, and
    OCRmyPDF's sidecar from Tesseract keeps it too)."""
    return render_text({"documents": [{"pages": [page.to_dict()]}]}, keep_furniture=True)
