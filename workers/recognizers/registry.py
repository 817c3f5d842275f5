"""The recognisers there are, by the name `OCRSERVE_RECOGNIZER` gives, and how each is built.

Adding a recogniser: write a class that satisfies `workers.recognizers.base.Recognizer`
in a module of this package, add one entry below, and add its name to the
`recognizer` Literal in `workers.settings.Settings` (a test checks the two agree).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workers.recognizers.base import Recognizer
from workers.recognizers.openai_compatible import OpenAIVisionRecognizer
from workers.recognizers.routing import RoutingRecognizer
from workers.recognizers.tesseract import TesseractRecognizer
from workers.settings import Settings


@dataclass(frozen=True)
class RecognizerEntry:
    name: str
    what: str                                  # one line for people choosing
    build: Callable[[Settings], Recognizer]


RECOGNIZERS: dict[str, RecognizerEntry] = {entry.name: entry for entry in (
    # the house model writes Latin-1 only: other letters and scripts go to Tesseract's language packs
    RecognizerEntry("house", "the house OCR model on our engine, one text line per crop (tables cell by cell); "
                             "lines in other scripts and languages read by Tesseract with their language packs",
                    lambda settings: RoutingRecognizer(OpenAIVisionRecognizer.from_settings(settings),
                                                       settings.tesseract_cmd)),
    RecognizerEntry("openai", "a vision-language OCR model behind any OpenAI-compatible endpoint (GLM-OCR, Qwen2-VL)",
                    OpenAIVisionRecognizer.from_settings),
    RecognizerEntry("tesseract", "the Tesseract OCR program (Debian tesseract-ocr), local",
                    lambda settings: TesseractRecognizer(settings.tesseract_cmd, settings.tesseract_lang)),
)}


def build_recognizer(settings: Settings) -> Recognizer:
    """The recogniser `settings.recognizer` names (Settings has already refused any other name)."""
    return RECOGNIZERS[settings.recognizer].build(settings)
