"""The state one page's stages share, and what a stage is.

`PagePipeline.process` (workers/page_pipeline.py) makes a `PageWork`, runs each
stage of its list over it in order, then makes the `PageResult` from it. A
stage reads what earlier stages wrote and writes its own part:

| field      | written by      | what it holds                                                    |
|------------|-----------------|------------------------------------------------------------------|
| `layout`   | layout          | regions, lines and reading order from `vision.page_analysis`     |
| `blocks`   | layout, layer   | one `BlockWork` per block, in reading order; the layer stage may add blocks for text the detectors missed |
| `match`    | layer           | the page's text layer matched to its lines (None: not looked at) |
| `crops`    | plan crops      | per block: what to send, or the answer already known             |
| `outcomes` | recognise       | per block: one outcome per crop                                  |
| `regions`  | assemble, then furniture, figures and structure | the page's regions                |
| `timings`  | the pipeline    | seconds per `Stage.timing` entry (the layout stage adds its own) |
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from vision.document import Document, RenderedPage
from vision.layout import RecognitionTask
from vision.page_analysis import LayoutBlock, PageLayout
from vision.text_layer import BlockText, LayerMatch
from workers.page_result import PageResult, RegionResult, RegionStatus
from workers.pipeline.text_layer_policy import TextLayerPolicy
from workers.recognizers.base import RecognitionItem, RecognitionOutcome, Recognizer

CHARS_PER_LINE_HEIGHT = 2.5
MIN_READ_SHARE = 0.35
MIN_EXPECTED_CHARS = 200


@dataclass
class BlockWork:
    """One layout block on its way to a region."""
    block: LayoutBlock
    by_lines: bool                      # recognised one detected line per crop (see `reads_by_lines`)
    layer: BlockText | None = None      # what the page's text layer holds for it; None: nothing matched
    crops: list[RecognitionItem | RecognitionOutcome] = field(default_factory=list)
    outcomes: list[RecognitionOutcome] = field(default_factory=list)

    @property
    def drafts(self) -> list[str | None]:
        """The layer text each crop was sent with (verify), None for the others."""
        return [crop.draft if isinstance(crop, RecognitionItem) else None for crop in self.crops]


def reads_by_lines(block: LayoutBlock, recognizer: Recognizer) -> bool:
    """Whether the block is recognised one detected line per crop: text always, a figure's
    labels always (the figure itself is not read), tables and formulas when the recogniser
    reads single lines only."""
    if not block.lines:
        return False
    return block.task in (RecognitionTask.TEXT, RecognitionTask.SKIP) or recognizer.reads_single_lines


@dataclass
class PageWork:
    document: Document              # the page's document: its text layer comes from there
    rendered: RenderedPage
    file_index: int
    recognizer: Recognizer
    policy: TextLayerPolicy
    vision_num_threads: int
    figures_dir: Path | None        # where figure crops are saved; None: not saved
    languages: str | None = None    # the job's `languages` option, sent with every crop (workers.recognizers.languages)
    layout: PageLayout | None = None
    match: LayerMatch | None = None
    blocks: list[BlockWork] = field(default_factory=list)
    regions: list[RegionResult] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def page_index(self) -> int:
        return self.rendered.page_index

    @property
    def size(self) -> tuple[int, int]:
        assert self.layout is not None, "the layout stage runs first"
        return self.layout.width, self.layout.height

    def result(self) -> PageResult:
        width, height = self.size
        blocks = [work.block for work in self.blocks]
        reason = " ".join(filter(None, [_page_reason(self.regions), _shortfall(blocks, self.regions)])) or None
        return PageResult(self.file_index, self.page_index, width, height, self.rendered.dpi, tuple(self.regions),
                          self.timings, reason, text_layer=_layer_note(self.match, self.policy, self.regions),
                          geometry=self.rendered.geometry.to_dict() if self.rendered.geometry else None)


class Stage(Protocol):
    """One step of the page pipeline: reads and writes the `PageWork` (see the table above)."""
    name: str
    timing: str | None      # the `timings` entry its seconds are added to; None: not timed here

    def run(self, page: PageWork) -> None: ...


def _layer_note(match: LayerMatch | None, policy: TextLayerPolicy, regions: list[RegionResult]) -> str | None:
    """The page's `text_layer`: whether its layer was used, and why; in verify mode also in how
    many of the regions read with its drafts the reading differs from it."""
    if match is None:
        return None
    note = match.verdict.describe(policy.mode)
    checked = [region.text_layer_check for region in regions if region.text_layer_check is not None]
    if checked:
        note += (f"; the reading differs from it in {checked.count('differs')} of {len(checked)} "
                 f"region{'s' * (len(checked) != 1)} verified")
    return note


def _shortfall(blocks: list[LayoutBlock], regions: list[RegionResult]) -> str | None:
    """A sentence when the page's text is far shorter than its detected lines hold: a result
    that must not pass for a page read. Print holds about `CHARS_PER_LINE_HEIGHT` characters
    per line height of a line's length (2.0-3.1 on the real-page bench's 75 pages, median
    2.5); a page under `MIN_READ_SHARE` of that is flagged."""
    lines = [line for block in blocks if block.task is not RecognitionTask.SKIP for line in block.lines]
    expected = CHARS_PER_LINE_HEIGHT * sum(line.upright_size[0] / line.upright_size[1] for line in lines)
    read = sum(len(region.text) for region in regions if region.task != RecognitionTask.SKIP.value)
    if expected < MIN_EXPECTED_CHARS or read >= MIN_READ_SHARE * expected:
        return None
    return (f"only {read:,} characters were read from {len(lines):,} detected text lines, which hold about "
            f"{expected:,.0f}: text may be missing from this page")


def _page_reason(regions: list[RegionResult]) -> str | None:
    not_ok = [region for region in regions if region.status is not RegionStatus.OK]
    if not not_ok:
        return None
    num_fallback = sum(region.status is RegionStatus.FALLBACK for region in not_ok)
    num_failed = len(not_ok) - num_fallback
    parts = [f"{num_fallback} region{'s' * (num_fallback != 1)} from the PDF text layer"] if num_fallback else []
    parts += [f"{num_failed} region{'s' * (num_failed != 1)} failed"] if num_failed else []
    return f"{' and '.join(parts)}: {not_ok[0].reason}"
