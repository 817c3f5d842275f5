"""Stage: every crop still to read goes to the recogniser in one call (so it can batch a
page's lines), and each block gets one outcome per crop, answered ones as planned.

Every reading is spelled as `vision.text_normal` spells text (accents on their letters, NFC,
ligatures as letters), as the text layer's words are, and a letter O read inside a number is
the zero it stands for (`digits_kept`; readings only, never a layer). A recogniser set up so it cannot work
(`RecognizerConfigError`) fails every crop, which the assemble stage turns into text-layer
fallbacks or failed regions. `RecognizerUnavailableError`
escapes: retrying is the page task's decision (`workers.recognizers.last_attempt`).
"""
from __future__ import annotations

from dataclasses import replace

from vision.text_normal import digits_kept, normalise_text
from workers.pipeline.page import PageWork
from workers.recognizers.base import RecognitionItem, RecognitionOutcome, RecognizerConfigError


class Recognise:
    name = "recognise"
    timing = "recognition"

    def run(self, page: PageWork) -> None:
        items = [crop if page.languages is None else replace(crop, languages=page.languages)
                 for work in page.blocks for crop in work.crops if isinstance(crop, RecognitionItem)]
        try:
            read = iter(page.recognizer.recognize(items))
        except RecognizerConfigError as exc:
            read = iter([RecognitionOutcome(None, str(exc))] * len(items))
        for work in page.blocks:
            work.outcomes = [_normalised(next(read)) if isinstance(crop, RecognitionItem) else crop
                             for crop in work.crops]


def _normalised(outcome: RecognitionOutcome) -> RecognitionOutcome:
    if outcome.text is None:
        return outcome
    text = digits_kept(outcome.text if outcome.text.isascii() else normalise_text(outcome.text))
    return outcome if text == outcome.text else replace(outcome, text=text)
