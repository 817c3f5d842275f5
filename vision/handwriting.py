"""Is a region handwritten? A small line classifier (`training.handwriting`), run on a few of the
region's line crops, so that handwriting is marked as such instead of read as confident text.

No recogniser here reads handwriting (the house model and Tesseract read print), so what a
handwritten region needs is to be known: `workers.pipeline.handwriting` marks it and lowers
its lines' confidence. The model is ours, trained on Debian's handwriting fonts against its
print fonts and shipped in this package (`vision/models/handwriting_lines.onnx`, 0.24 MB);
its figures on held-out fonts are in `vision/models/handwriting_lines.json`: lines written
glyph by glyph in five handwriting families it never saw, precision 0.98, recall 0.79; the
same fonts set like print (the strict case, no variation between letters), precision 0.93,
recall 0.54. On real typeset pages it marks about 5% of text regions (code listings,
mathematics: bench/handwriting.py --printed), too many for a default, so the stage is opt-in
(`OCRSERVE_MARK_HANDWRITING`); a classifier that generalises needs real handwriting to train on,
which no registry we reach ships.

| kept here | how |
|---|---|
| a region is handwriting only on most of its lines' say | at least `MIN_HAND_SHARE` of up to `MAX_LINES` sampled lines score >= 0.5, and their mean >= `MIN_MEAN` |
| lines too small to tell are not judged | crops under `MIN_HEIGHT` px tall are skipped |
| one session per process | `vision.onnx_models.get_session` |
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from vision.onnx_models import get_session

HEIGHT = 32              # pixels: lines are scaled to this height
TRAIN_WIDTH = 256        # pixels: training windows; inference takes the whole line (up to MAX_WIDTH)
MAX_WIDTH = 1024
MIN_HEIGHT = 10          # pixels of the page image: smaller crops say too little
MAX_LINES = 6            # sampled per region, spread over it
MIN_HAND_SHARE = 0.6
MIN_MEAN = 0.6

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class PackagedModel:
    """A model file that ships inside this package (the interface `get_session` uses)."""
    path_in_wheel: str
    sha256: str

    def path(self) -> Path:
        return Path(__file__).resolve().parent / self.path_in_wheel

    def verify(self) -> None:
        digest = hashlib.sha256(self.path().read_bytes()).hexdigest()
        if digest != self.sha256:
            raise RuntimeError(f"{self.path()} has sha256 {digest}, expected {self.sha256}")


HANDWRITING_LINES = PackagedModel("models/handwriting_lines.onnx",
                                  "3986980b2e9d93227aeade62e2f5470474341f5cadc6961981d592a6f0cb2608")


def normalise_line(image: np.ndarray) -> np.ndarray:
    """A gray or RGB line crop -> [HEIGHT, width] float32, ink near 1 and paper near 0, contrast
    stretched between the crop's 2nd and 98th percentiles."""
    gray = image.mean(axis=2) if image.ndim == 3 else image.astype(np.float32)
    height, width = gray.shape
    scaled_width = int(np.clip(round(width * HEIGHT / max(1, height)), 16, MAX_WIDTH))
    gray = cv2.resize(gray.astype(np.float32), (scaled_width, HEIGHT), interpolation=cv2.INTER_AREA)
    low, high = np.percentile(gray, 2), np.percentile(gray, 98)
    ink = (high - gray) / max(1.0, high - low)
    return np.clip(ink, 0.0, 1.0).astype(np.float32)


def line_scores(page: Image.Image, boxes: Sequence[Box], num_threads: int = 1) -> list[float | None]:
    """Per box, the probability that its line is handwriting (None: too small to judge)."""
    session = get_session(HANDWRITING_LINES, num_threads)
    scores: list[float | None] = []
    for x0, y0, x1, y1 in boxes:
        if y1 - y0 < MIN_HEIGHT or x1 - x0 < MIN_HEIGHT:
            scores.append(None)
            continue
        crop = np.asarray(page.crop((int(x0), int(y0), int(round(x1)), int(round(y1)))).convert("L"))
        logit = session.run(None, {"line": normalise_line(crop)[None, None]})[0]
        scores.append(float(1.0 / (1.0 + np.exp(-float(logit[0])))))
    return scores


def sampled(boxes: Sequence[Box]) -> list[Box]:
    """Up to `MAX_LINES` of a region's line boxes, spread from first to last."""
    if len(boxes) <= MAX_LINES:
        return list(boxes)
    step = (len(boxes) - 1) / (MAX_LINES - 1)
    return [boxes[round(i * step)] for i in range(MAX_LINES)]


def is_handwriting(scores: Sequence[float | None]) -> bool:
    judged = [score for score in scores if score is not None]
    if not judged:
        return False
    share = sum(score >= 0.5 for score in judged) / len(judged)
    return share >= MIN_HAND_SHARE and sum(judged) / len(judged) >= MIN_MEAN
