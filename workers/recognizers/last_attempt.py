"""How a page task gives up on a recogniser that cannot be reached.

The task decides retries, not the page pipeline: before its last attempt a page
task hands the pipeline its recogniser as it is, so `RecognizerUnavailableError`
escapes and the task retries the page (with backoff); on the last attempt it
hands it wrapped in `LastAttempt`, which answers every crop with that error
instead, so the page's regions fall back to the text layer or fail like any
crop that could not be read.
"""
from __future__ import annotations

from workers.recognizers.base import RecognitionItem, RecognitionOutcome, Recognizer, RecognizerUnavailableError


class LastAttempt:
    """`recognizer` on the page's last attempt: unreachable means every crop failed, not retry."""

    def __init__(self, recognizer: Recognizer):
        self.recognizer = recognizer
        self.name = recognizer.name
        self.reads_single_lines = recognizer.reads_single_lines
        self.softens_noisy_lines = recognizer.softens_noisy_lines

    def recognize(self, items: list[RecognitionItem]) -> list[RecognitionOutcome]:
        try:
            return self.recognizer.recognize(items)
        except RecognizerUnavailableError as exc:
            return [RecognitionOutcome(None, f"{exc}; gave up after the last retry")] * len(items)

    def check(self) -> None:
        self.recognizer.check()
