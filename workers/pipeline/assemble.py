"""Stage: each block's region from its crops' outcomes.

A block the policy reads whole from the layer becomes a region of the layer's words, in the
layer's line order. Otherwise the outcomes make the region: line by line, each line keeps its
box and confidence (a table's cells become a Markdown table); read with drafts (verify), the
region says whether the reading agrees with the layer (`text_layer_check`) and a line read
otherwise keeps the layer's text (`layer_text`); a line whose reading the engine's loop guard
cut says `truncated_repetition`, and so does its region. A region whose crops could not all be read
takes its text from the PDF text layer (`fallback`) when the page has one, else it is `failed`
and keeps what was read. A region says `source` `text_layer` only when all its text came from
the layer.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from vision.crops import normalise_box
from vision.document import TextWord
from vision.layout import RecognitionTask
from vision.page_analysis import LayoutBlock
from vision.reading_order import line_rows
from workers.page_result import LineResult, RegionResult, RegionStatus
from workers.pipeline.page import BlockWork, PageWork
from workers.pipeline.text_layer_policy import same_text
from workers.table_text import markdown_table
from workers.text_layer_fallback import fallback_text, lines_from_words


class Assemble:
    name = "assemble"
    timing = "assembly"

    def run(self, page: PageWork) -> None:
        width, height = page.size
        words: list[TextWord] | None = None    # the layer's words, read once and only for a fallback
        for work in page.blocks:
            layer = work.layer
            if page.policy.takes_text and not work.by_lines and layer is not None and layer.words is not None \
                    and work.block.task is not RecognitionTask.SKIP:
                page.regions.append(layer_region(work.block, layer.words, width, height))
                continue
            if words is None and not all(outcome.ok for outcome in work.outcomes):
                words = page.document.text_words(page.page_index, page.rendered.dpi)
            region = region_of(work, words or [], width, height)
            if page.policy.takes_text and work.by_lines and layer is not None \
                    and all(line is not None for line in layer.lines) and region.status is RegionStatus.OK:
                region = replace(region, source="text_layer")
            page.regions.append(region)


def layer_region(block: LayoutBlock, words: tuple[TextWord, ...], width: int, height: int) -> RegionResult:
    """A region read whole, from the text layer's words in it, in the layer's line order."""
    lines = tuple(lines_from_words(words))
    return RegionResult(text="\n".join(line.text for line in lines), status=RegionStatus.OK, source="text_layer",
                        lines=lines, **_region_base(block, width, height))


def region_of(work: BlockWork, words: Sequence[TextWord], width: int, height: int) -> RegionResult:
    """The region from its crops' outcomes. The drafts its crops were sent with (verify) say
    whether it agrees with the layer, unless its text fell back to the layer itself."""
    block, outcomes = work.block, work.outcomes
    bbox = block.region.bbox
    base = _region_base(block, width, height)
    failures = [outcome.error for outcome in outcomes if not outcome.ok]
    drafts = work.drafts or [None] * len(outcomes)
    verified = [(outcome.text, draft) for outcome, draft in zip(outcomes, drafts)
                if outcome.text is not None and draft is not None]
    check = None if not verified else "agrees" if all(same_text(*pair) for pair in verified) else "differs"
    if work.by_lines:
        lines = tuple(LineResult(tuple(float(v) for v in line.bbox), outcome.text,  # type: ignore[arg-type]
                                 outcome.confidence,
                                 draft if draft is not None and not same_text(outcome.text, draft) else None,
                                 truncated_repetition=outcome.truncated_repetition, script=outcome.script,
                                 language=outcome.language, curve=line.curve)
                      for line, outcome, draft in zip(block.lines, outcomes, drafts) if outcome.text)
    else:
        lines = ()
    read_text = "\n".join(outcome.text for outcome in outcomes if outcome.text)  # type: ignore[misc]
    if work.by_lines and block.task is RecognitionTask.TABLE:
        text_of = {line: outcome.text for line, outcome in zip(block.lines, outcomes) if outcome.text}
        read_text = markdown_table([[(line.bbox, text_of[line]) for line in row if line in text_of]
                                    for row in line_rows(block.lines)])
    looped = any(outcome.truncated_repetition for outcome in outcomes)   # a reading was cut by the loop guard
    if not failures:
        return RegionResult(text=read_text, status=RegionStatus.OK, lines=lines, text_layer_check=check,
                            truncated_repetition=looped, **base)
    what = f"{len(failures)} of {len(outcomes)} crops could not be read ({failures[0]})"
    from_layer = fallback_text(words, bbox)
    if from_layer is not None:
        text, layer_lines = from_layer
        return RegionResult(text=text, status=RegionStatus.FALLBACK, lines=layer_lines, source="text_layer",
                            reason=f"{what}; text taken from the PDF text layer", **base)
    return RegionResult(text=read_text, status=RegionStatus.FAILED, lines=lines, text_layer_check=check,
                        truncated_repetition=looped, reason=f"{what}; the page has no text layer to fall back to", **base)


def _region_base(block: LayoutBlock, width: int, height: int) -> dict:
    bbox = block.region.bbox
    return dict(reading_index=block.reading_index, label=block.region.label, task=block.task.value,
                role=block.role.value, bbox=bbox, bbox_1000=normalise_box(bbox, width, height),
                origin=block.region.source)
