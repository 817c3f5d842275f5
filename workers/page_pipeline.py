"""One page, start to finish: render -> layout, lines, reading order (vision)
-> crops -> recognition -> regions in reading order, each ok / fallback / failed.

Text regions are recognised line by line: every detected line is its own crop,
so each recognised line keeps its exact box (the searchable PDF puts it
there) and a page yields many small requests the engine can batch. Tables and
formulas go whole to a recogniser that reads regions (GLM-OCR, Tesseract) and
line by line (a table cell by cell) to one that reads single lines (the house
model), which makes a Markdown table of the cells; figures are cropped and
saved, and the lines detected in them are read as the figure's text. Every
detected line is read once (`vision.line_assignment` puts each in exactly one
region); a line crop with no ink (a rule, dot leaders: `vision.ink`) is
answered with no text instead of being sent.

With `text_layer="auto"` a PDF page whose own text layer passes its checks
(`vision.text_layer`) takes each detected line's text from the layer instead
of recognising it, and those lines are never sent; a region read whole
(formula, a table for a recogniser that reads regions) takes the layer's
words inside it in the layer's line order. Lines and regions the layer holds
no (trusted) words for are recognised as usual. A region says `source`
`text_layer` only when all its text came from the layer, else `ocr`; lines
from the layer have no `confidence` (None: no recogniser judged them). The
page says why its layer was used or not (`PageResult.text_layer`).

With `text_layer="verify"` the same match decides what the layer holds, but
nothing is taken from it: every line (and region read whole) is recognised,
the layer's text going along as the recogniser's `draft` (our engine verifies
it token by token: faster when right, the model's own reading either way). The
reading is kept; a region says whether it agrees with the layer
(`text_layer_check`, whitespace aside) and a line read otherwise keeps the
layer's text (`layer_text`). A line crop with no ink is still answered with
no text, unsent and uncompared.

A region whose crops could not all be read takes its text from the PDF text
layer (`fallback`) when the page has one, else it is `failed` and keeps what
was read. A recogniser that is unreachable raises out of `process` so the
task can retry the page, except on the final attempt, where it counts as a
failure of every crop like any other.
"""
from __future__ import annotations

import functools
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from vision.crops import crop_image, crop_line, normalise_box
from vision.document import Document, RenderedPage, TextWord
from vision.formats import DocumentKind
from vision.ink import has_text_ink
from vision.noise import NOISY_PAGE, SMALL_PRINT_PX, scan_noise, soften
from vision.layout import RecognitionTask
from vision.page_analysis import LayoutBlock, PageLayout, analyze_page
from vision.reading_order import line_rows
from vision.text_layer import BlockText, LayerMatch, TextLayerMode, match_text_layer, read_text_layer
from workers.page_result import LineResult, PageResult, RegionResult, RegionStatus
from workers.recognizer import (RecognitionItem, RecognitionOutcome, Recognizer, RecognizerConfigError,
                                RecognizerUnavailableError)
from workers.structure import with_structure
from workers.table_text import markdown_table
from workers.text_layer_fallback import fallback_text, lines_from_words, text_layer_regions


NO_TEXT = RecognitionOutcome("")
CHARS_PER_LINE_HEIGHT = 2.5
MIN_READ_SHARE = 0.35
MIN_EXPECTED_CHARS = 200


class PagePipeline:
    def __init__(self, recognizer: Recognizer, vision_num_threads: int = 2):
        self.recognizer = recognizer
        self.vision_num_threads = vision_num_threads

    def process(self, document: Document, rendered: RenderedPage, file_index: int, final_attempt: bool = True,
                figures_dir: Path | None = None, text_layer: str = TextLayerMode.NEVER) -> PageResult:
        """`rendered` is a page of `document` (the text layer comes from there); `text_layer`
        is a `TextLayerMode` value: "auto" takes a PDF page's own text where it passes its checks,
        "verify" recognises it anyway with that text as the draft.
        The default here is "never", so callers that measure recognition (bench/) keep measuring
        it; jobs pass their own option, whose default is "auto"."""
        page_index = rendered.page_index
        layout = analyze_page(rendered.image, num_threads=self.vision_num_threads, render_s=rendered.render_s)
        checking = time.perf_counter()
        uses_layer = text_layer in (TextLayerMode.AUTO, TextLayerMode.VERIFY)
        match = _layer_match(document, rendered, layout) if uses_layer else None
        checked = time.perf_counter()
        blocks = match.blocks if match is not None else layout.blocks
        taken = match.texts if match is not None else (None,) * len(blocks)
        verify = text_layer == TextLayerMode.VERIFY
        single_lines = getattr(self.recognizer, "reads_single_lines", False)
        # Small print on a noisy (scanned) page goes softened to a recogniser that asks for it
        # (vision.noise); the page's noise is measured once, and only if a small line is sent.
        noisy_page = (functools.cache(lambda: scan_noise(rendered.image) > NOISY_PAGE)
                      if getattr(self.recognizer, "softens_noisy_lines", False) else None)
        crops = [_crops_of(block, rendered, single_lines, text, verify, noisy_page)
                 for block, text in zip(blocks, taken)]
        # Lines taken from the text layer and crops with no ink (rules, dot leaders, specks) come
        # already answered; only the rest is sent.
        items = [item for block_items in crops for item in block_items if isinstance(item, RecognitionItem)]

        started = time.perf_counter()
        try:
            read = iter(self.recognizer.recognize(items))
        except RecognizerUnavailableError as exc:
            if not final_attempt:
                raise
            read = iter([RecognitionOutcome(None, f"{exc}; gave up after the last retry")] * len(items))
        except RecognizerConfigError as exc:
            read = iter([RecognitionOutcome(None, str(exc))] * len(items))
        outcomes = [next(read) if isinstance(item, RecognitionItem) else item
                    for block_items in crops for item in block_items]
        recognized = time.perf_counter()

        words: list[TextWord] | None = None
        regions = []
        position = 0
        for block, block_items, text in zip(blocks, crops, taken):
            block_outcomes = outcomes[position:position + len(block_items)]
            position += len(block_items)
            by_lines = _by_lines(block, single_lines)
            if not verify and not by_lines and text is not None and text.words is not None \
                    and block.task is not RecognitionTask.SKIP:
                regions.append(_layer_region(block, text.words, layout.width, layout.height))
                continue
            if words is None and not all(outcome.ok for outcome in block_outcomes):
                words = document.text_words(page_index, rendered.dpi)
            drafts = [item.draft if isinstance(item, RecognitionItem) else None for item in block_items]
            region = _region(block, block_outcomes, words or [], layout.width, layout.height, by_lines, drafts)
            if not verify and by_lines and text is not None and all(line is not None for line in text.lines) \
                    and region.status is RegionStatus.OK:
                region = replace(region, source="text_layer")
            regions.append(region)
        regions = [_with_figure(region, rendered, file_index, page_index, figures_dir) for region in regions]
        regions = with_structure(regions, layout.width, layout.height, rendered.dpi)
        assembled = time.perf_counter()

        timings = {"render": layout.timings.render_s, "layout": layout.timings.layout_s,
                   "lines": layout.timings.lines_s, "order": layout.timings.order_s,
                   "text_layer": checked - checking,
                   "recognition": recognized - started, "assembly": assembled - recognized}
        reason = " ".join(filter(None, [_page_reason(regions), _shortfall(blocks, regions)])) or None
        return PageResult(file_index, page_index, layout.width, layout.height, rendered.dpi, tuple(regions),
                          timings, reason, text_layer=_layer_note(match, text_layer, regions))


def fallback_page(document: Document, file_index: int, page_index: int, dpi: float, reason: str) -> PageResult:
    """A page that could not be processed: its text layer as `fallback` regions, or no regions at all."""
    width_pt, height_pt = document.page_size_points(page_index)
    width, height = max(1, round(width_pt * dpi / 72)), max(1, round(height_pt * dpi / 72))
    try:
        words = document.text_words(page_index, dpi)
    except Exception:   # a page that broke processing may break text extraction too
        words = []
    regions = text_layer_regions(words, width, height, f"{reason}; text taken from the PDF text layer")
    regions = with_structure(regions, width, height, dpi)
    page_reason = f"{reason}; text taken from the PDF text layer" if regions else reason
    return PageResult(file_index, page_index, width, height, dpi, tuple(regions), {}, page_reason)


def _by_lines(block: LayoutBlock, single_lines: bool) -> bool:
    """Whether the block is recognised one detected line per crop: text always, a figure's
    labels always (the figure itself is not read), tables and formulas when the recogniser
    reads single lines only."""
    if not block.lines:
        return False
    return block.task in (RecognitionTask.TEXT, RecognitionTask.SKIP) or single_lines


def _crops_of(block: LayoutBlock, page: RenderedPage, single_lines: bool, taken: BlockText | None,
              verify: bool = False, noisy_page: Callable[[], bool] | None = None) -> list[RecognitionItem | RecognitionOutcome]:
    """What to send for a block, or the answer already known: a line's text taken from the
    text layer, or no text for a line crop with no ink. Nothing for a block read whole from the layer.
    With `verify` nothing is taken: the layer's text goes with its crop as the draft."""
    if _by_lines(block, single_lines):
        from_layer = taken.lines if taken is not None else (None,) * len(block.lines)
        answers: list[RecognitionItem | RecognitionOutcome] = []
        for line, text in zip(block.lines, from_layer):
            if text is not None and not verify:
                answers.append(RecognitionOutcome(text))
                continue
            crop = crop_line(page.image, line)
            small = noisy_page is not None and line.upright_size[1] <= SMALL_PRINT_PX
            sent = soften(crop) if small and noisy_page() else crop
            answers.append(RecognitionItem(sent, RecognitionTask.TEXT, is_single_line=True, draft=_as_draft(text))
                           if has_text_ink(crop) else NO_TEXT)
        return answers
    if block.task is RecognitionTask.SKIP:
        return []
    draft = None
    if taken is not None and taken.words is not None:
        if not verify:
            return []
        draft = _as_draft("\n".join(line.text for line in lines_from_words(taken.words)))
    return [RecognitionItem(crop_image(page.image, block.region.bbox), block.task, is_single_line=False, draft=draft)]


def _layer_match(document: Document, rendered: RenderedPage, layout: PageLayout) -> LayerMatch | None:
    """What the page takes from its own text layer; None for images, which have none."""
    if document.kind is not DocumentKind.PDF:
        return None
    return match_text_layer(read_text_layer(document, rendered), layout)


def _layer_note(match: LayerMatch | None, mode: str, regions: Sequence[RegionResult]) -> str | None:
    """The page's `text_layer`: whether its layer was used, and why; in verify mode also in how
    many of the regions read with its drafts the reading differs from it."""
    if match is None:
        return None
    note = match.verdict.describe(mode)
    checked = [region.text_layer_check for region in regions if region.text_layer_check is not None]
    if checked:
        note += (f"; the reading differs from it in {checked.count('differs')} of {len(checked)} "
                 f"region{'s' * (len(checked) != 1)} verified")
    return note


def _as_draft(text: str | None) -> str | None:
    """A layer's text as a reading would spell it: compatibility forms folded (NFKC: the ligatures
    ﬁ ﬂ ﬀ a typeset layer holds as one character, full-width forms) and its words joined by single
    spaces, so the draft agrees with what the model writes wherever the layer is right."""
    if text is None:
        return None
    return "\n".join(" ".join(line.split()) for line in unicodedata.normalize("NFKC", text).split("\n"))


def _same_text(read: str, layer: str) -> bool:
    """Whether a reading says what the layer says: compatibility forms and whitespace aside."""
    return unicodedata.normalize("NFKC", read).split() == unicodedata.normalize("NFKC", layer).split()


def _layer_region(block: LayoutBlock, words: tuple[TextWord, ...], width: int, height: int) -> RegionResult:
    """A region read whole, from the text layer's words in it, in the layer's line order."""
    lines = tuple(lines_from_words(words))
    return RegionResult(text="\n".join(line.text for line in lines), status=RegionStatus.OK, source="text_layer",
                        lines=lines, **_region_base(block, width, height))


def _region_base(block: LayoutBlock, width: int, height: int) -> dict:
    bbox = block.region.bbox
    return dict(reading_index=block.reading_index, label=block.region.label, task=block.task.value,
                role=block.role.value, bbox=bbox, bbox_1000=normalise_box(bbox, width, height),
                origin=block.region.source)


def _region(block: LayoutBlock, outcomes: list[RecognitionOutcome], words: list[TextWord],
            width: int, height: int, by_lines: bool, drafts: Sequence[str | None] = ()) -> RegionResult:
    """The region from its crops' outcomes. `drafts` (verify) are the text layer's text each crop
    was sent with: a region read with drafts says whether it agrees with them, unless its text
    fell back to the layer itself."""
    bbox = block.region.bbox
    base = _region_base(block, width, height)
    failures = [outcome.error for outcome in outcomes if not outcome.ok]
    drafts = list(drafts) or [None] * len(outcomes)
    verified = [(outcome.text, draft) for outcome, draft in zip(outcomes, drafts)
                if outcome.text is not None and draft is not None]
    check = None if not verified else "agrees" if all(_same_text(*pair) for pair in verified) else "differs"
    if by_lines:
        lines = tuple(LineResult(tuple(float(v) for v in line.bbox), outcome.text,  # type: ignore[arg-type]
                                 outcome.confidence,
                                 draft if draft is not None and not _same_text(outcome.text, draft) else None)
                      for line, outcome, draft in zip(block.lines, outcomes, drafts) if outcome.text)
    else:
        lines = ()
    read_text = "\n".join(outcome.text for outcome in outcomes if outcome.text)  # type: ignore[misc]
    if by_lines and block.task is RecognitionTask.TABLE:
        text_of = {line: outcome.text for line, outcome in zip(block.lines, outcomes) if outcome.text}
        read_text = markdown_table([[(line.bbox, text_of[line]) for line in row if line in text_of]
                                    for row in line_rows(block.lines)])
    if not failures:
        return RegionResult(text=read_text, status=RegionStatus.OK, lines=lines, text_layer_check=check, **base)
    what = f"{len(failures)} of {len(outcomes)} crops could not be read ({failures[0]})"
    from_layer = fallback_text(words, bbox)
    if from_layer is not None:
        text, layer_lines = from_layer
        return RegionResult(text=text, status=RegionStatus.FALLBACK, lines=layer_lines, source="text_layer",
                            reason=f"{what}; text taken from the PDF text layer", **base)
    return RegionResult(text=read_text, status=RegionStatus.FAILED, lines=lines, text_layer_check=check,
                        reason=f"{what}; the page has no text layer to fall back to", **base)


def _with_figure(region: RegionResult, page: RenderedPage, file_index: int, page_index: int,
                 figures_dir: Path | None) -> RegionResult:
    if region.task != RecognitionTask.SKIP.value or figures_dir is None:
        return region
    name = f"file{file_index + 1}-page{page_index + 1}-region{region.reading_index + 1}.png"
    figures_dir.mkdir(parents=True, exist_ok=True)
    crop_image(page.image, region.bbox).save(figures_dir / name)
    return replace(region, figure=name)


def _shortfall(blocks: Sequence[LayoutBlock], regions: Sequence[RegionResult]) -> str | None:
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
