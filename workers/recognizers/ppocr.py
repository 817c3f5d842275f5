"""Line recognition with PP-OCRv6's small multilingual recogniser, the one inside the `rapidocr`
3.10 wheel (PaddleOCR's weights, Apache-2.0; set-up installs the wheel without its dependencies,
only its ONNX file is used, run by onnxruntime, which ocrserve already has).

It reads Chinese (simplified and traditional), Japanese, English and ~50 Latin-script languages
(`LATIN_LANGUAGES`, as Tesseract codes); no Cyrillic, Greek, Arabic or Indic scripts. Measured on
the multilingual set's line crops (docs/BENCHMARKS.md) it finds more characters than Tesseract with
the right pack in Chinese, Japanese, Polish, Czech and German, and far fewer in Vietnamese, whose
stacked accents it misses: Vietnamese is not in its list here.

A line crop is scaled to 48 px high, normalised to [-1, 1], read in one pass; the output is a
CTC sequence over the ~18,700 characters the model carries in its ONNX metadata (blank first,
space last). A line's confidence is the mean probability of the characters it wrote.
"""
from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np
from PIL import Image

from workers.recognizers.base import RecognitionItem, RecognitionOutcome

MODEL_FILE = "models/PP-OCRv6_rec_small.onnx"
LINE_HEIGHT = 48
MAX_WIDTH = 3200          # px after scaling: a line longer than this is read squeezed to it
# Tesseract codes of the languages its list names (rapidocr's default_models.yaml, PP-OCRv6 langs)
LATIN_LANGUAGES = frozenset({"afr", "aze", "bos", "cat", "ces", "cym", "dan", "deu", "spa", "est", "eus", "fin",
                             "fra", "gle", "glg", "hrv", "hun", "ind", "isl", "ita", "kmr", "lat", "ltz", "lit",
                             "lav", "mri", "msa", "mlt", "nld", "nor", "oci", "pol", "por", "que", "ron", "srp_latn",
                             "slk", "slv", "sqi", "swe", "swa", "tgl", "tur", "uzb", "eng"})
CJK_LANGUAGES = frozenset({"chi_sim", "chi_tra", "jpn"})


def model_path() -> Path | None:
    """Where the wheel put the model, found without importing the package; None: not installed."""
    spec = importlib.util.find_spec("rapidocr")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    return path if path.exists() else None


def reads(languages: str) -> bool:
    """Whether this recogniser is installed and reads every one of `languages` (Tesseract codes
    joined by '+')."""
    return all(code in LATIN_LANGUAGES or code in CJK_LANGUAGES for code in languages.split("+")) \
        and model_path() is not None


@functools.cache
def _session(path: str, num_threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = num_threads
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    characters = session.get_modelmeta().custom_metadata_map["character"].split("\n")
    return session, ["", *characters, " "]


class PPOCRLineRecognizer:
    name = "ppocr"
    reads_single_lines = True
    softens_noisy_lines = False

    def __init__(self, num_threads: int = 2):
        path = model_path()
        assert path is not None, "check reads() first"
        self.path = path
        self.num_threads = num_threads

    def recognize(self, items: list[RecognitionItem]) -> list[RecognitionOutcome]:
        session, characters = _session(str(self.path), self.num_threads)
        return [self._read(session, characters, item.image) for item in items]

    def check(self) -> None:
        _session(str(self.path), self.num_threads)

    @staticmethod
    def _read(session, characters: list[str], image: Image.Image) -> RecognitionOutcome:
        width = min(MAX_WIDTH, max(8, round(image.width * LINE_HEIGHT / max(1, image.height))))
        pixels = np.asarray(image.convert("RGB").resize((width, LINE_HEIGHT), Image.Resampling.BILINEAR), np.float32)
        batch = ((pixels / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)[None]   # [1, 3, 48, width]
        probs = session.run(None, {session.get_inputs()[0].name: batch})[0][0]   # [steps, classes]
        best = probs.argmax(axis=1)
        text, kept, previous = [], [], 0
        for step, index in enumerate(best):
            if index != previous and index != 0 and index < len(characters):
                text.append(characters[index])
                kept.append(float(probs[step, index]))
            previous = index
        confidence = float(np.mean(kept)) if kept else None
        return RecognitionOutcome("".join(text).strip(), confidence=confidence)
