"""Where each character of a line's final text stands on the line's image: a CTC forced
alignment with the PP-OCRv4 line recogniser shipped in `rapidocr-onnxruntime` (the network whose
features the house model reads, here whole, with its own CTC classifier over 6,623 characters).

Whoever read the line (the house model, GLM-OCR, Tesseract), its text is forced through the
recogniser's per-frame probabilities (Viterbi over the CTC trellis, blanks between characters):
the frames each character takes say where it is. One frame is 8 pixels of the line resized to
48 pixels high, so a character's place is known to a few pixels of the page. A character the
recogniser's alphabet lacks (most accented letters, other scripts) may take any frame that is
not blank. Spaces are left out of the alignment: the recogniser rarely fires on them, and words
are told apart by their characters. No alignment (None) when the frames are too few to spell
the text, or the text is empty.

| kept here                                    | how                                                 |
|----------------------------------------------|-----------------------------------------------------|
| the model file is the one released           | sha256 of the wheel's file (`REC_PPOCRV4.verify`)   |
| the input is the recogniser's own            | BGR, 48 pixels high, width by aspect, [-1, 1]       |
| a page's lines cost one pass each            | no batching: lines differ in width; ~ms per line    |
"""
from __future__ import annotations

import math

import cv2
import numpy as np
from PIL import Image

from vision.onnx_models import BundledModel, get_session

REC_PPOCRV4 = BundledModel(
    "rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
    "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b")
HEIGHT = 48
FRAME_STRIDE = 8            # input pixels per output frame
MAX_WIDTH = 3200
BLANK = 0


class LineAligner:
    """Character positions of known text on line crops; one per process is enough."""

    def __init__(self, num_threads: int = 1):
        self.session = get_session(REC_PPOCRV4, num_threads)
        characters = self.session.get_modelmeta().custom_metadata_map["character"].splitlines()
        # Class 0 is the CTC blank, then the alphabet in its order, then the space.
        self.index = {char: i + 1 for i, char in enumerate(characters)}

    def char_centres(self, crop: Image.Image, text: str) -> list[float] | None:
        """For each non-space character of `text`, in order: the x of its centre in the crop's
        pixels; None when the alignment cannot be made."""
        labels = [self.index.get(char, -1) for char in text if not char.isspace()]
        if not labels:
            return None
        pixels, width = _network_input(crop)
        log_probs = np.log(np.maximum(self.session.run(None, {"x": pixels})[0][0], 1e-12))   # [frames, classes]
        frames = _forced_frames(log_probs, labels)
        if frames is None:
            return None
        scale = crop.width / width
        return [(frame + 0.5) * FRAME_STRIDE * scale for frame in frames]


def _network_input(crop: Image.Image) -> tuple[np.ndarray, int]:
    rgb = np.asarray(crop.convert("RGB"))
    height, width = rgb.shape[:2]
    target = int(min(MAX_WIDTH, max(FRAME_STRIDE * 2, round(HEIGHT * width / max(1, height)))))
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    resized = cv2.resize(bgr, (target, HEIGHT), interpolation=cv2.INTER_AREA if height > HEIGHT else cv2.INTER_LINEAR)
    return ((resized.astype(np.float32) / 127.5) - 1.0).transpose(2, 0, 1)[None], target


def _forced_frames(log_probs: np.ndarray, labels: list[int]) -> list[float] | None:
    """The mean frame of each label on the best CTC path that spells `labels` exactly (-1: any
    character but blank); None when no path can."""
    num_frames = log_probs.shape[0]
    repeats = sum(a == b for a, b in zip(labels, labels[1:]))
    if num_frames < len(labels) + repeats:
        return None
    not_blank = np.log(np.maximum(1.0 - np.exp(log_probs[:, BLANK]), 1e-12))
    # The trellis: blank, l1, blank, l2, ..., lL, blank.
    states = [BLANK] + [x for label in labels for x in (label, BLANK)]
    emit = np.stack([log_probs[:, s] if s >= 0 else not_blank for s in states], axis=1)   # [frames, states]
    num_states = len(states)
    skip = np.zeros(num_states, dtype=bool)   # a label state may be reached from two states back
    for s in range(3, num_states, 2):
        skip[s] = states[s] != states[s - 2] or states[s] < 0
    score = np.full(num_states, -math.inf)
    score[:2] = emit[0, :2]
    back = np.zeros((num_frames, num_states), dtype=np.int8)   # 0: stay, 1: from s-1, 2: from s-2
    for t in range(1, num_frames):
        from_prev = np.concatenate([[-math.inf], score[:-1]])
        from_skip = np.where(skip, np.concatenate([[-math.inf, -math.inf], score[:-2]]), -math.inf)
        choices = np.stack([score, from_prev, from_skip])
        back[t] = np.argmax(choices, axis=0)
        score = choices[back[t], np.arange(num_states)] + emit[t]
    end = num_states - 1 if score[-1] >= score[-2] else num_states - 2
    if not math.isfinite(score[end]):
        return None
    frames_of: dict[int, list[int]] = {}
    state = end
    for t in range(num_frames - 1, -1, -1):
        if state % 2 == 1:
            frames_of.setdefault(state // 2, []).append(t)
        state -= int(back[t, state])
    if len(frames_of) != len(labels):
        return None
    return [float(np.mean(frames_of[i])) for i in range(len(labels))]
