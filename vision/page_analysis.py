"""One page image in, its layout out: regions in reading order, each with its
text lines in reading order, and how long each stage took.

    layout regions (CDLA model) -> text lines (PP-OCRv4 detector, once per page)
    -> lines assigned to regions (unclaimed lines become regions) -> reading order

Lines are detected on the whole page rather than per region: one network run
instead of many, lines that stick out of a region are not cut, and lines the
layout model missed are still found. `PageLayout` round-trips through plain
JSON-ready dicts, so it can travel in Celery payloads.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from PIL import Image

from vision.crops import normalise_box
from vision.layout import LayoutDetector, RecognitionTask, Region
from vision.line_assignment import assign_lines
from vision.curve import Curve
from vision.lines import LineDetector, TextLine
from vision.onnx_models import DEFAULT_NUM_THREADS
from vision.reading_order import PageRole, joined_column_pieces, order_lines, order_regions, order_text_lines


@dataclass(frozen=True)
class StageTimings:
    render_s: float = 0.0
    layout_s: float = 0.0
    lines_s: float = 0.0
    order_s: float = 0.0


@dataclass(frozen=True)
class LayoutBlock:
    reading_index: int             # 0-based position in the page's reading order
    region: Region
    role: PageRole
    lines: tuple[TextLine, ...]    # reading order; empty unless region.task is TEXT or TABLE

    @property
    def task(self) -> RecognitionTask:
        return self.region.task


@dataclass(frozen=True)
class PageLayout:
    width: int
    height: int
    blocks: tuple[LayoutBlock, ...]   # in reading order
    timings: StageTimings

    def to_dict(self) -> dict[str, Any]:
        return {
            "width": self.width, "height": self.height, "timings": asdict(self.timings),
            "blocks": [{
                "reading_index": block.reading_index, "label": block.region.label,
                "task": block.task.value, "role": block.role.value,
                "bbox": list(block.region.bbox),
                "bbox_1000": list(normalise_box(block.region.bbox, self.width, self.height)),
                "score": block.region.score, "source": block.region.source,
                "lines": [{"bbox": list(line.bbox), "score": line.score, "angle": line.angle, "vertical": line.vertical,
                           "curve": None if line.curve is None else line.curve.to_dict()}
                          for line in block.lines],
            } for block in self.blocks],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PageLayout:
        blocks = tuple(LayoutBlock(
            reading_index=int(b["reading_index"]),
            region=Region(b["label"], tuple(float(v) for v in b["bbox"]), float(b["score"]), b["source"]),
            role=PageRole(b["role"]),
            lines=tuple(TextLine(tuple(int(v) for v in ln["bbox"]), float(ln["score"]), float(ln.get("angle", 0.0)),
                                 bool(ln.get("vertical", False)), Curve.from_dict(ln.get("curve")))
                        for ln in b["lines"]),
        ) for b in data["blocks"])
        return cls(int(data["width"]), int(data["height"]), blocks, StageTimings(**data["timings"]))


def analyze_page(image: Image.Image | np.ndarray, *, num_threads: int = DEFAULT_NUM_THREADS,
                 render_s: float = 0.0, detect_lines: bool = True) -> PageLayout:
    """Layout of an RGB page image. `render_s` is carried into the timings so a
    caller that rendered the page gets all stages in one place."""
    pixels = _as_rgb_array(image)
    height, width = pixels.shape[:2]

    started = time.perf_counter()
    regions = LayoutDetector(num_threads).detect(pixels)
    layout_done = time.perf_counter()
    lines = LineDetector(num_threads).detect(pixels) if detect_lines else []
    lines_done = time.perf_counter()

    assigned = assign_lines(regions, lines, pixels)
    order = order_regions([a.region for a in assigned], height)
    blocks = tuple(LayoutBlock(reading_index=position, region=_labelled_for(assigned[i].region, role), role=role,
                               lines=tuple(_ordered_lines(assigned[i].region, assigned[i].lines)))
                   for position, (i, role) in enumerate(order))
    order_done = time.perf_counter()

    timings = StageTimings(render_s=render_s, layout_s=layout_done - started,
                           lines_s=lines_done - layout_done, order_s=order_done - lines_done)
    return PageLayout(width, height, blocks, timings)


def _labelled_for(region: Region, role: PageRole) -> Region:
    """A region labelled header or footer that reading order put in the body (a chapter title
    the layout model took for a running header, a footnote for a footer) is a title or text."""
    if role is PageRole.BODY and region.label in ("header", "footer"):
        return replace(region, label="title" if region.label == "header" else "text")
    return region


def _ordered_lines(region: Region, lines: tuple[TextLine, ...]) -> list[TextLine]:
    """A table's lines in rows (its cells are laid out by row); any other region's as text."""
    if region.task is RecognitionTask.TABLE:
        return order_lines(lines)
    return order_text_lines(joined_column_pieces(lines) if any(line.vertical for line in lines) else lines)


def _as_rgb_array(image: Image.Image | np.ndarray) -> np.ndarray:
    if isinstance(image, Image.Image):
        image = np.asarray(image if image.mode == "RGB" else image.convert("RGB"))
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected an RGB uint8 image [height, width, 3], got {image.dtype} {image.shape}")
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise ValueError(f"the page image is empty: {image.shape}")
    return image
