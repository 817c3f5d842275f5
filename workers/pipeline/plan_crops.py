"""Stage: what to send for each block, or the answer already known.

Line by line (`BlockWork.by_lines`): each detected line cut out upright; a line whose text the
policy takes from the layer is answered with it, a crop with no ink (a rule, dot leaders:
`vision.ink`) with no text, and neither is sent. Small print on a noisy (scanned) page goes
softened to a recogniser that asks for it (`vision.noise`); the page's noise is measured once,
and only if a small line is sent. A block read whole is one crop, unless the policy takes it
from the layer, or the page's usable layer holds no word in it and no line was detected there
(whatever a recogniser made of it would be invented); a figure's area itself is never sent.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

from PIL import Image

from vision.crops import crop_box, crop_image, crop_line
from vision.ink import has_text_ink
from vision.layout import RecognitionTask
from vision.noise import NOISY_PAGE, SMALL_PRINT_PX, scan_noise, soften
from workers.pipeline.page import BlockWork, PageWork
from workers.pipeline.text_layer_policy import TextLayerPolicy
from workers.recognizers.base import BlockCrop, RecognitionItem, RecognitionOutcome
from workers.text_layer_fallback import lines_from_words

NO_TEXT = RecognitionOutcome("")


class PlanCrops:
    name = "plan_crops"
    timing = None

    def run(self, page: PageWork) -> None:
        image = page.rendered.image
        noisy_page = (functools.cache(lambda: scan_noise(image) > NOISY_PAGE)
                      if page.recognizer.softens_noisy_lines else None)
        for work in page.blocks:
            work.crops = plan_block(work, image, page.policy, noisy_page)


def plan_block(work: BlockWork, image: Image.Image, policy: TextLayerPolicy,
               noisy_page: Callable[[], bool] | None = None) -> list[RecognitionItem | RecognitionOutcome]:
    block = work.block
    if work.by_lines:
        from_layer = work.layer.lines if work.layer is not None else (None,) * len(block.lines)
        crops: list[RecognitionItem | RecognitionOutcome] = []
        around = _block_crop(image, block.region.bbox, [line.bbox for line in block.lines])
        for line, text in zip(block.lines, from_layer):
            answer = policy.answer(text)
            if answer is not None:
                crops.append(answer)
                continue
            crop = crop_line(image, line)
            small = noisy_page is not None and line.upright_size[1] <= SMALL_PRINT_PX
            sent = soften(crop) if small and noisy_page() else crop
            crops.append(RecognitionItem(sent, RecognitionTask.TEXT, is_single_line=True, draft=policy.draft(text),
                                         block=around, box_in_block=_within(line.bbox, around))
                         if has_text_ink(crop) else NO_TEXT)
        return crops
    if block.task is RecognitionTask.SKIP:
        return []
    if work.layer is not None and work.layer.words == ():
        return []   # a usable layer holds no word there and no line was detected: nothing to read, nothing to invent
    draft = None
    if work.layer is not None and work.layer.words is not None:
        if policy.takes_text:
            return []
        draft = policy.draft("\n".join(line.text for line in lines_from_words(work.layer.words)))
    return [RecognitionItem(crop_image(image, block.region.bbox), block.task, is_single_line=False, draft=draft)]


def _block_crop(image: Image.Image, region_box, line_boxes) -> BlockCrop:
    """The block's area with its lines (a line may reach past its region's box), as `crop_image` cuts it."""
    x0 = min([region_box[0], *(box[0] for box in line_boxes)])
    y0 = min([region_box[1], *(box[1] for box in line_boxes)])
    x1 = max([region_box[2], *(box[2] for box in line_boxes)])
    y1 = max([region_box[3], *(box[3] for box in line_boxes)])
    return BlockCrop(image, crop_box((x0, y0, x1, y1), image.width, image.height))


def _within(box, block: BlockCrop) -> tuple[float, float, float, float]:
    left, top = block.box[0], block.box[1]
    return (box[0] - left, box[1] - top, box[2] - left, box[3] - top)
