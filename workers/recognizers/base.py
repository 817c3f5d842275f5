"""What a recogniser is: crops in, text out, one outcome per crop.

Three recognisers exist, picked with `OCRSERVE_RECOGNIZER` from the table in
`workers.recognizers.registry`:
- `house` (the default): the house OCR model served by our engine under the
  built-in name `house-ocr`, through the same client as `openai`; it reads one
  text line per crop, so tables are sent cell by cell (`reads_single_lines`);
- `openai` (`openai_compatible.OpenAIVisionRecognizer`): any OpenAI-compatible chat endpoint
  serving a vision-language model — our engine, or vLLM/SGLang serving GLM-OCR —
  with each crop sent as an `image_url` data URL beside GLM-OCR's task prompt;
- `tesseract` (`tesseract.TesseractRecognizer`): the Tesseract OCR program, local.

Errors are split by what the page task should do about them:

| error | meaning | the page task |
|---|---|---|
| `RecognizerUnavailableError` | temporary: endpoint unreachable, timed out, 5xx, 429 | retries the page (bounded, backoff + jitter) |
| `RecognizerConfigError` | the set-up cannot work: the model takes no images, no such model, bad key | no retry; regions fall back |
| an outcome with `error` set | this one crop was refused (e.g. a 400 for it) | that region falls back |
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from PIL import Image

from vision.layout import RecognitionTask

# GLM-OCR's task prompts, one per region kind.
TASK_PROMPTS: dict[RecognitionTask, str] = {
    RecognitionTask.TEXT: "Text Recognition:",
    RecognitionTask.TABLE: "Table Recognition:",
    RecognitionTask.FORMULA: "Formula Recognition:",
}


class RecognizerUnavailableError(RuntimeError):
    """The recogniser could not be reached or answered with a temporary error."""


class RecognizerConfigError(RuntimeError):
    """The recogniser is set up in a way that cannot work; the message says what to change."""


class BlockCrop:
    """The page area a block's line crops were cut from, for a recogniser that reads a line better
    among its neighbours (`TesseractRecognizer.recognize_in_blocks`). Cut out on first use: most
    pages never need it. Its lines say where they lie in it (`RecognitionItem.box_in_block`)."""

    def __init__(self, page: Image.Image, box: tuple[int, int, int, int]):
        self.page = page
        self.box = box                  # page pixels, x1 and y1 exclusive
        self._image: Image.Image | None = None

    @property
    def image(self) -> Image.Image:
        if self._image is None:
            self._image = self.page.crop(self.box)
        return self._image


@dataclass(frozen=True)
class RecognitionItem:
    image: Image.Image          # RGB crop
    task: RecognitionTask       # never SKIP
    is_single_line: bool        # a text-line crop (True) or a whole region (False)
    draft: str | None = None    # text the reading is expected to be (a PDF text layer's, `text_layer="verify"`):
                                # a recogniser may use it to read faster, never as the answer
    languages: str | None = None   # the job's `languages` option (workers.recognizers.languages): "detect" or
                                   # Tesseract codes such as "pol+eng"; None: the recogniser's own choice
    block: BlockCrop | None = None     # a line crop's block (`BlockCrop`), where the pipeline knows it
    box_in_block: tuple[float, float, float, float] | None = None   # the line's box in `block.image`'s pixels

    def __post_init__(self) -> None:
        assert self.task in TASK_PROMPTS, f"no recognition for task {self.task}"


@dataclass(frozen=True)
class RecognitionOutcome:
    text: str | None            # None when this crop failed
    error: str | None = None    # a sentence, when text is None
    confidence: float | None = None   # 0-1 when the recogniser gives one
    # the reading began repeating itself (the engine's loop guard stopped it): `text` is what was read
    # before the loop, and the line or region is marked `truncated_repetition`
    truncated_repetition: bool = False
    tokens: tuple[tuple[str, float], ...] | None = None   # (token text, log-prob) of the reply, when it gives them:
                                                          # words' confidences (workers.line_words)
    # per token of `tokens`, the recogniser's next likeliest tokens there, (text, log-prob), when asked
    # for (`OpenAIVisionRecognizer(alternatives=...)`): words read against a lexicon (`lexicon`)
    alternatives: tuple[tuple[tuple[str, float], ...], ...] | None = None
    script: str | None = None     # the writing system read (vision.scripts name), when the recogniser says
    language: str | None = None   # the Tesseract code of the language read, when known

    def __post_init__(self) -> None:
        assert (self.text is None) != (self.error is None)

    @property
    def ok(self) -> bool:
        return self.text is not None


class Recognizer(Protocol):
    name: str
    reads_single_lines: bool    # True: give it line crops only (tables cell by cell), never whole regions
    softens_noisy_lines: bool   # True: small-print line crops of a scanned page come softened (vision.noise)

    def recognize(self, items: list[RecognitionItem]) -> list[RecognitionOutcome]:
        """One outcome per item, same order. Raises `RecognizerUnavailableError`
        or `RecognizerConfigError` when no item can be recognised."""
        ...

    def check(self) -> None:
        """Raise `RecognizerConfigError` (or `RecognizerUnavailableError`) if this recogniser cannot work."""
        ...
