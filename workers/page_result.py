"""The result of one page: its regions in reading order, each with its text,
where that text came from, and (for text regions) its lines with their boxes.

These travel as plain JSON (job store, result files), so they round-trip
through `to_dict` / `from_dict`. Boxes are in page pixels of the rendered page
(`width` x `height` at `dpi`) and on the 0-1000 grid.

| region status | the text came from |
|---|---|
| `ok`       | the recogniser, or the PDF's text layer when it passed its checks (`source`) |
| `fallback` | the PDF's own text layer, because recognition failed |
| `failed`   | nowhere: `text` is empty and `reason` says why |
| `ok` (figure) | the figure is cropped and linked; `text` holds the text of its labels, if any |

`origin` says where a region's box came from (`layout`: the layout model;
`lines`: a block of text lines the layout model missed); `source` where its
text came from (`ocr`: a recogniser; `text_layer`: the PDF's own text layer).
A line's `confidence` is the recogniser's (0-1, None when it gives none);
`low_confidence` flags a line below `LOW_CONFIDENCE`. A line's `words` (`WordResult`,
made by `workers.line_words`) each say where their box came from (`box_source`: `text_layer`,
the PDF's own word box; `ctc`, aligned on the line image; `interpolated`, spread along the line
by character widths) and their
confidence (`confidence_source`: `tokens`, the recogniser's token log-probs over the word;
`line`, the line's own; None with no confidence). Results stored before words have none.

A line whose print rises and falls across the page (a folded or curled page) carries `curve`: its
middle (x and y points) and the thickness of its band, in page pixels (`vision.curve.Curve`); its
box holds the whole bend, its words' boxes stand on the band where they are. Other lines have none
(and their JSON no `curve` key).

`truncated_repetition` (on a line, and on its region) marks a reading the engine's loop guard
stopped because it kept repeating itself (engine/loop_guard.py): the text is what was read
before the loop. The region stays `ok`: its text is the recogniser's own, only shorter.

In text-layer mode `verify` a PDF page whose layer passes its checks is still
recognised, each line with the layer's text as the recogniser's draft; the
reading is kept (`source` `ocr`). A region's `text_layer_check` then says
whether its readings match the layer (`agrees`, `differs`; whitespace aside),
and a line read differently keeps the layer's text in `layer_text`. Both are
None where nothing was verified, and in results stored before they existed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from vision.curve import Curve
from workers.structure_blocks import Block

Box = tuple[float, float, float, float]


class RegionStatus(StrEnum):
    OK = "ok"
    FALLBACK = "fallback"
    FAILED = "failed"


LOW_CONFIDENCE = 0.5


@dataclass(frozen=True)
class WordResult:
    bbox: Box
    text: str
    confidence: float | None          # 0-1; None when neither the recogniser nor its line gives one
    box_source: str                   # "text_layer", "ctc" or "interpolated" (workers.line_words)
    confidence_source: str | None     # "tokens", "line", or None with no confidence

    def to_dict(self) -> dict[str, Any]:
        confidence = None if self.confidence is None else round(self.confidence, 3)
        return {"bbox": [round(v, 1) for v in self.bbox], "text": self.text, "confidence": confidence,
                "box_source": self.box_source, "confidence_source": self.confidence_source}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WordResult:
        bbox = tuple(float(v) for v in data["bbox"])
        return cls(bbox, data["text"], data.get("confidence"), data["box_source"],  # type: ignore[arg-type]
                   data.get("confidence_source"))


@dataclass(frozen=True)
class LineResult:
    bbox: Box
    text: str
    confidence: float | None = None   # 0-1, from the recogniser; None when it gives none
    layer_text: str | None = None     # verify: the text layer's text, where the reading differs from it
    words: tuple[WordResult, ...] = ()   # (workers.line_words); () until the words stage, and in older results
    truncated_repetition: bool = False   # the reading looped and was cut (engine loop guard): text is what came before
    script: str | None = None         # the writing system read (vision.scripts name: Latin, Cyrillic, Han...)
    language: str | None = None       # Tesseract code of the language read ("pol", "rus"), when known
    curve: Curve | None = None        # a curved line's middle and band (see the module docstring)

    @property
    def low_confidence(self) -> bool:
        return self.confidence is not None and self.confidence < LOW_CONFIDENCE

    def to_dict(self) -> dict[str, Any]:
        confidence = None if self.confidence is None else round(self.confidence, 3)
        return {"bbox": [round(v, 1) for v in self.bbox], "text": self.text, "confidence": confidence,
                "low_confidence": self.low_confidence, "layer_text": self.layer_text,
                "words": [word.to_dict() for word in self.words], "truncated_repetition": self.truncated_repetition,
                "script": self.script, "language": self.language} | \
            ({} if self.curve is None else {"curve": self.curve.to_dict()})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LineResult:
        bbox = tuple(float(v) for v in data["bbox"])
        return cls(bbox, data["text"], data.get("confidence"), data.get("layer_text"),  # type: ignore[arg-type]
                   tuple(WordResult.from_dict(word) for word in data.get("words", ())),
                   bool(data.get("truncated_repetition", False)), script=data.get("script"),
                   language=data.get("language"), curve=Curve.from_dict(data.get("curve")))


@dataclass(frozen=True)
class RegionResult:
    reading_index: int
    label: str                  # layout label: text, title, table, figure, header, ...
    task: str                   # text, table, formula, skip
    role: str                   # header, body, footer
    bbox: Box
    bbox_1000: tuple[int, int, int, int]
    text: str
    status: RegionStatus
    origin: str = "layout"      # "layout" or "lines" (a block of lines the layout model missed)
    source: str = "ocr"         # where the text came from: "ocr" or "text_layer"
    reason: str | None = None   # why, when status is not ok
    lines: tuple[LineResult, ...] = ()
    figure: str | None = None   # file name of the figure crop, for figures
    blocks: tuple[Block, ...] = ()   # its structure (workers.structure); () in results stored before it
    text_layer_check: str | None = None   # verify: "agrees" / "differs" (reading vs. text layer); None: not verified
    truncated_repetition: bool = False    # a reading of it looped and was cut (see the module docstring)

    def to_dict(self) -> dict[str, Any]:
        return {"reading_index": self.reading_index, "label": self.label, "task": self.task, "role": self.role,
                "bbox": [round(v, 1) for v in self.bbox], "bbox_1000": list(self.bbox_1000), "text": self.text,
                "status": self.status.value, "origin": self.origin, "source": self.source, "reason": self.reason,
                "lines": [line.to_dict() for line in self.lines], "figure": self.figure,
                "blocks": [block.to_dict() for block in self.blocks], "text_layer_check": self.text_layer_check,
                "truncated_repetition": self.truncated_repetition}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RegionResult:
        return cls(int(data["reading_index"]), data["label"], data["task"], data["role"],
                   tuple(float(v) for v in data["bbox"]), tuple(int(v) for v in data["bbox_1000"]),  # type: ignore[arg-type]
                   data["text"], RegionStatus(data["status"]), data.get("origin", "layout"), data.get("source", "ocr"),
                   data.get("reason"),
                   tuple(LineResult.from_dict(line) for line in data.get("lines", ())), data.get("figure"),
                   tuple(Block.from_dict(block) for block in data.get("blocks", ())), data.get("text_layer_check"),
                   bool(data.get("truncated_repetition", False)))


@dataclass(frozen=True)
class PageResult:
    file_index: int
    page_index: int             # 0-based
    width: int                  # pixels of the rendered page
    height: int
    dpi: float
    regions: tuple[RegionResult, ...]
    timings: dict[str, float] = field(default_factory=dict)   # seconds per stage
    reason: str | None = None   # a sentence when some regions are not ok, or the text is far short of the lines
    text_layer: str | None = None   # PDF pages in text-layer mode auto or verify: whether its layer was used, and why
    geometry: dict[str, Any] | None = None   # a photo straightened first (vision.photo.PageGeometry); boxes refer to the result

    @property
    def page_number(self) -> int:
        return self.page_index + 1

    def count(self, status: RegionStatus) -> int:
        return sum(region.status is status for region in self.regions)

    @property
    def region_counts(self) -> tuple[int, int, int]:
        return self.count(RegionStatus.OK), self.count(RegionStatus.FALLBACK), self.count(RegionStatus.FAILED)

    @property
    def nothing_read(self) -> bool:
        """Every region that needed reading failed: the page as a whole failed."""
        return self.count(RegionStatus.FAILED) > 0 and not any(
            region.status is not RegionStatus.FAILED and region.task != "skip" for region in self.regions)

    def to_dict(self) -> dict[str, Any]:
        return {"file_index": self.file_index, "page": self.page_number, "width": self.width, "height": self.height,
                "dpi": round(self.dpi, 3), "reason": self.reason, "text_layer": self.text_layer,
                "timings": {name: round(s, 4) for name, s in self.timings.items()},
                "regions": [region.to_dict() for region in self.regions],
                **({"geometry": self.geometry} if self.geometry is not None else {})}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PageResult:
        return cls(int(data["file_index"]), int(data["page"]) - 1, int(data["width"]), int(data["height"]),
                   float(data["dpi"]), tuple(RegionResult.from_dict(r) for r in data["regions"]),
                   dict(data.get("timings", {})), data.get("reason"), data.get("text_layer"), data.get("geometry"))
