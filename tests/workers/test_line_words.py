"""A line's words (workers.line_words): which boxes and confidences each word gets, and what it
says about where they came from. Pure functions on small inputs; the same code on real jobs is
in test_export_hocr_alto.py, and with the house model's real token log-probs in
tests/app/test_app_cli_run_house.py."""
from __future__ import annotations

import math

import pytest

from vision.document import TextWord
from workers.line_words import interpolated_words, layer_words, token_confidences, with_words
from workers.page_result import LineResult, RegionResult, RegionStatus


def test_token_logprobs_give_each_word_its_own_confidence():
    # A reply as an OpenAI-compatible server sends it: sub-word tokens, a space inside one, EOS last.
    tokens = [("Pay", -0.01), (" 1", -0.7), ("2", -0.5), (".", -0.02), ("50", -0.01), (" now", -0.0), ("</s>", -0.0)]
    words = interpolated_words((0.0, 0.0, 300.0, 20.0), "Pay 12.50 now", 0.8, tokens)
    assert [w.text for w in words] == ["Pay", "12.50", "now"]
    assert [w.confidence_source for w in words] == ["tokens"] * 3
    assert words[0].confidence == pytest.approx(math.exp(-0.01), abs=5e-4)   # kept to 3 places, as the JSON is
    assert words[1].confidence == pytest.approx(math.exp((-0.7 - 0.5 - 0.02 - 0.01) / 4), abs=5e-4)   # " 1" is "12.50"'s
    assert words[2].confidence == pytest.approx(1.0)


def test_tokens_that_do_not_spell_the_text_leave_the_lines_confidence_marked_as_such():
    # the pipeline re-spelled the reading (NFC), or the server sent byte tokens
    tokens = [("Cafe", -0.1), ("\u0301", -0.2)]
    assert token_confidences("Café", [(0, 4)], tokens) is None
    words = interpolated_words((0.0, 0.0, 100.0, 20.0), "Café au lait", 0.9, tokens)
    assert {(w.confidence, w.confidence_source) for w in words} == {(0.9, "line")}
    words = interpolated_words((0.0, 0.0, 100.0, 20.0), "Café au lait", None)
    assert {(w.confidence, w.confidence_source) for w in words} == {(None, None)}


def test_interpolated_boxes_share_the_line_by_character_widths():
    words = interpolated_words((100.0, 50.0, 400.0, 70.0), "iii WWW", None)
    assert [w.box_source for w in words] == ["interpolated", "interpolated"]
    (a0, _, a1, _), (b0, _, b1, _) = words[0].bbox, words[1].bbox
    assert a0 == 100.0 and b1 == 400.0 and a1 < b0
    assert (b1 - b0) > 3 * (a1 - a0), "W is far wider than i in Helvetica"
    # a line set top to bottom (a tall, narrow box) is shared out downwards
    tall = interpolated_words((10.0, 0.0, 30.0, 200.0), "AB CD", None)
    assert [w.bbox[0] for w in tall] == [10.0, 10.0] and tall[0].bbox[3] < tall[1].bbox[1]


def _word(text: str, box: tuple[float, float, float, float], line_no: int, word_no: int) -> TextWord:
    return TextWord(text, box, 0, line_no, word_no)


def test_layer_words_keep_their_boxes_and_skip_a_neighbouring_lines_word():
    layer = [_word("Total", (10, 10, 60, 30), 0, 0), _word("due", (65, 10, 95, 30), 0, 1),
             _word("below", (40, 18, 90, 40), 1, 0)]   # the next line's word, half inside this line's box
    words = layer_words((8, 9, 100, 31), "Total due", layer)
    assert [(w.text, w.bbox, w.box_source, w.confidence) for w in words] == [
        ("Total", (10, 10, 60, 30), "text_layer", None), ("due", (65, 10, 95, 30), "text_layer", None)]
    assert layer_words((8, 9, 100, 31), "Total paid", layer) == [], "a reading the layer does not spell"


def test_a_region_gets_words_on_every_line_and_a_recognised_line_its_tokens():
    line = LineResult((0.0, 0.0, 200.0, 20.0), "two words", 0.9)
    region = RegionResult(0, "text", "text", "body", (0.0, 0.0, 200.0, 20.0), (0, 0, 1, 1), "two words",
                          RegionStatus.OK, lines=(line,))
    tokens = {(line.bbox, line.text): [("two", -0.1), (" words", -0.3)]}
    (done,) = with_words(region, (), tokens).lines
    assert [(w.text, w.confidence_source) for w in done.words] == [("two", "tokens"), ("words", "tokens")]
    assert done.words[1].confidence == pytest.approx(math.exp(-0.3), abs=5e-4)
    assert LineResult.from_dict(done.to_dict()) == done, "a word is as the job store keeps it"
