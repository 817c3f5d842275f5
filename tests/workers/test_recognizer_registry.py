"""The recogniser registry: every name Settings accepts builds a recogniser that satisfies the
protocol, and the last-attempt wrapper turns an unreachable recogniser into failed crops."""
from __future__ import annotations

import typing

import pytest
from PIL import Image

from vision.layout import RecognitionTask
from workers.recognizers.base import RecognitionItem, RecognizerUnavailableError
from workers.recognizers.last_attempt import LastAttempt
from workers.recognizers.registry import RECOGNIZERS, build_recognizer
from workers.settings import Settings


def test_the_registry_names_exactly_what_settings_accepts(tmp_path):
    accepted = typing.get_args(Settings.model_fields["recognizer"].annotation)
    assert set(RECOGNIZERS) == set(accepted)
    for name in accepted:
        recognizer = build_recognizer(Settings(data_dir=tmp_path, recognizer=name))
        assert recognizer.name == name
        assert isinstance(recognizer.reads_single_lines, bool) and isinstance(recognizer.softens_noisy_lines, bool)
        assert callable(recognizer.recognize) and callable(recognizer.check)
    assert build_recognizer(Settings(data_dir=tmp_path, recognizer="house")).reads_single_lines
    assert not build_recognizer(Settings(data_dir=tmp_path, recognizer="openai")).reads_single_lines


class Unreachable:
    name = "unreachable"
    reads_single_lines = True
    softens_noisy_lines = True

    def recognize(self, items):
        raise RecognizerUnavailableError("connection refused")

    def check(self):
        raise RecognizerUnavailableError("connection refused")


def test_the_last_attempt_fails_every_crop_instead_of_raising():
    items = [RecognitionItem(Image.new("RGB", (8, 8)), RecognitionTask.TEXT, is_single_line=True)] * 3
    with pytest.raises(RecognizerUnavailableError):
        Unreachable().recognize(items)
    last = LastAttempt(Unreachable())
    assert (last.name, last.reads_single_lines, last.softens_noisy_lines) == ("unreachable", True, True)
    outcomes = last.recognize(items)
    assert [outcome.error for outcome in outcomes] == ["connection refused; gave up after the last retry"] * 3
    assert not any(outcome.ok for outcome in outcomes)
