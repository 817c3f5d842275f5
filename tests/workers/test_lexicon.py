"""Words the house model misread on damaged print, read again against the language's word list.

The end-to-end test prints a line whose every 'e' has lost its bar (as augraphy's copies of Computer
Modern pages print it) and has the real house model on our engine read it: the model reads 'c' there,
as the pixels say, and the lexicon gives the words back as English writes them. The others build the
outcomes from figures the model gave on such lines (its top_logprobs), to pin the rule's edges.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from service_harness import house_engine as start_house_engine
from vision.layout import RecognitionTask
from workers.recognizers.base import RecognitionItem, RecognitionOutcome
from workers.recognizers.lexicon import ADAPT_MIN_SWAPS, read_against_lexicon, read_page_against_lexicon
from workers.recognizers.openai_compatible import HOUSE_ALTERNATIVES, OpenAIVisionRecognizer
from workers.recognizers.routing import RoutingRecognizer

SERIF = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"


def _outcome(text: str, swaps: dict[int, tuple[str, float, float]] | None = None) -> RecognitionOutcome:
    """`text` read one character a token, each at probability 0.999 with a far second ('x' at 1e-6),
    except at the positions in `swaps`: (alternative, P(chosen), P(alternative)); then `</s>`."""
    tokens, alternatives = [], []
    for i, char in enumerate(text):
        alt, p, q = (swaps or {}).get(i, ("x" if char != "x" else "y", 0.999, 1e-6))
        tokens.append((char, math.log(p)))
        alternatives.append(((char, math.log(p)), (alt, math.log(q))))
    tokens.append(("</s>", math.log(0.999)))
    alternatives.append((("</s>", math.log(0.999)), ("l", math.log(1e-4))))
    confidence = math.exp(sum(lp for _, lp in tokens) / len(tokens))
    return RecognitionOutcome(text, confidence=confidence, tokens=tuple(tokens), alternatives=tuple(alternatives))


def test_a_misread_word_is_read_as_the_language_writes_it():
    # 'Vcrsion 5.4 organizcd by' as read on the gnuplot manual's augraphy copy: 'c' at 0.99 and 0.87,
    # 'e' at 0.01 and 0.13
    read = _outcome("Vcrsion 5.4 organizcd by", {1: ("e", 0.99, 0.01), 19: ("e", 0.87, 0.13)})
    fixed = read_against_lexicon(read, "eng")
    assert fixed.text == "Version 5.4 organized by"
    # the swapped characters carry their alternatives' log-probabilities: the word says it was a guess
    assert fixed.tokens[1] == ("e", math.log(0.01)) and fixed.tokens[19] == ("e", math.log(0.13))
    assert "".join(token for token, _ in fixed.tokens[:-1]) == fixed.text
    assert fixed.confidence < read.confidence


def test_a_word_read_surely_stays_as_read_even_next_to_a_frequent_one():
    # 'cat' with 'n' (-> 'can', more frequent) a hundredth as likely as the 't': the print said 'cat'
    read = _outcome("the cat sat", {6: ("n", 0.98, 0.01)})
    assert read_against_lexicon(read, "eng") is read


def test_names_code_and_accents_are_left_alone():
    # an accent the model saw is never taken off ('Béranger' is rarer than 'Beranger' in the list)
    read = _outcome("Béranger", {1: ("e", 0.6, 0.4)})
    assert read_against_lexicon(read, "eng") is read
    # a word glued to a digit or an underscore is part of an identifier
    read = _outcome("latcx8 my_filc", {3: ("e", 0.6, 0.4), 13: ("e", 0.6, 0.4)})
    assert read_against_lexicon(read, "eng") is read
    # two-letter words are left as read
    read = _outcome("bc", {1: ("e", 0.6, 0.4)})
    assert read_against_lexicon(read, "eng") is read


def test_nothing_changes_without_alternatives_or_a_word_list():
    read = _outcome("thc", {2: ("e", 0.6, 0.4)})
    assert read_against_lexicon(read, "eng").text == "the"
    assert read_against_lexicon(read, None) is read
    assert read_against_lexicon(read, "rus") is read   # no list of that language for Latin letters here
    plain = RecognitionOutcome("thc", confidence=0.9, tokens=read.tokens)
    assert read_against_lexicon(plain, "eng") is plain
    # tokens that do not spell the text (a <unk> marked in it): left as read
    marked = RecognitionOutcome("th\ufffd", confidence=0.2, tokens=read.tokens, alternatives=read.alternatives)
    assert read_against_lexicon(marked, "eng") is marked


def test_a_page_that_reads_every_e_as_c_has_its_dearer_words_read_too():
    # 'intcrnally' with 'e' at 0.003 of 'c' there: alone, the word list does not outweigh that
    hard = _outcome("used intcrnally", {8: ("e", 0.997, 0.003)})
    assert read_against_lexicon(hard, "eng") is hard
    # on a page where 'c' was taken for 'e' many times, that swap costs less, and it is read
    easy = [_outcome("thc rule", {2: ("e", 0.9, 0.1)}) for _ in range(ADAPT_MIN_SWAPS)]
    page = read_page_against_lexicon([*easy, hard], "eng")
    assert [outcome.text for outcome in page] == ["the rule"] * ADAPT_MIN_SWAPS + ["used internally"]
    # one swap short of the count, the page has no confusion of its own
    page = read_page_against_lexicon([*easy[1:], hard], "eng")
    assert page[-1] is hard


class _Readings:
    name = "house"
    reads_single_lines = True
    softens_noisy_lines = True

    def __init__(self, outcomes):
        self.outcomes = outcomes

    def recognize(self, items):
        return list(self.outcomes)

    def check(self):
        pass


def test_an_english_page_asked_for_in_english_is_read_against_its_list():
    outcomes = [_outcome("Thc class implements thc formatting rules", {2: ("e", 0.7, 0.3), 23: ("e", 0.8, 0.2)}),
                _outcome("of the IEEE Computcr Society", {18: ("e", 0.95, 0.05)})]
    items = [RecognitionItem(Image.new("RGB", (400, 40), "white"), RecognitionTask.TEXT, is_single_line=True,
                             languages="eng") for _ in outcomes]
    read = RoutingRecognizer(_Readings(outcomes)).recognize(items)
    assert [outcome.text for outcome in read] == ["The class implements the formatting rules",
                                                  "of the IEEE Computer Society"]
    assert all(outcome.language == "eng" for outcome in read)


def test_a_page_found_to_be_english_is_read_against_its_list_after_the_routing():
    """No `languages` given: the page is judged on what the model read (its confidences, its words),
    then its Latin lines are read against the list of the language it was found to be in."""
    outcomes = [_outcome("Thc pages of the manual describe the formatting of a class", {2: ("e", 0.7, 0.3)}),
                _outcome("that is used by the authors of papers for the IEEE Computcr Society",
                         {57: ("e", 0.95, 0.05)}),
                _outcome("and it is compatible with any style of the references", None)]
    items = [RecognitionItem(Image.new("RGB", (800, 40), "white"), RecognitionTask.TEXT, is_single_line=True)
             for _ in outcomes]
    read = RoutingRecognizer(_Readings(outcomes)).recognize(items)
    assert [outcome.text for outcome in read] == [
        "The pages of the manual describe the formatting of a class",
        "that is used by the authors of papers for the IEEE Computer Society",
        "and it is compatible with any style of the references"]
    assert all(outcome.language == "eng" and outcome.script == "Latin" for outcome in read)
    assert read[2] is not outcomes[2] and read[2].text == outcomes[2].text


def _without_e_bars(text: str, size: int = 32) -> Image.Image:
    """`text` printed in DejaVu Serif with the bar of every 'e' cleared between the bowl's walls."""
    font = ImageFont.truetype(SERIF, size)
    image = Image.new("L", (int(font.getlength(text)) + 24, int(size * 1.6)), 255)
    ImageDraw.Draw(image).text((12, 6), text, fill=0, font=font)
    pixels = np.array(image)
    alone = Image.new("L", (size * 2, int(size * 1.6)), 255)
    ImageDraw.Draw(alone).text((0, 6), "e", fill=0, font=font)
    ink = (255 - np.array(alone)) > 128
    rows = np.where(ink.any(1))[0]
    inside = range(rows[0] + 2, rows[-1] - 1)
    bar = max(inside, key=lambda row: ink[row].sum())
    bar_rows = [row for row in inside if abs(row - bar) <= 3 and ink[row].sum() >= 0.6 * ink[bar].sum()]
    for i, char in enumerate(text):
        if char != "e":
            continue
        left, right = 12 + int(font.getlength(text[:i])) + 1, 12 + math.ceil(font.getlength(text[:i + 1]))
        for row in bar_rows:
            dark = np.where(pixels[row, left:right] < 128)[0]
            if len(dark):
                pixels[row, left + dark[0] + 3:left + dark[-1] - 1] = 255
    return Image.fromarray(pixels).convert("RGB")


@pytest.fixture(scope="module")
def house_engine():
    with start_house_engine() as url:
        yield url


@pytest.mark.slow
def test_the_house_model_reads_e_without_its_bar_as_c_and_the_lexicon_reads_the_word(house_engine):
    lines = ["The class implements the formatting rules very cleanly", "Version 5.4 organized by many others",
             "These pages were prepared for the reader", "Here the text describes every detail",
             "We need seven more lines here"]
    recognizer = OpenAIVisionRecognizer(house_engine, "house-ocr", reads_single_lines=True, name="house",
                                        alternatives=HOUSE_ALTERNATIVES)
    items = [RecognitionItem(_without_e_bars(text), RecognitionTask.TEXT, is_single_line=True) for text in lines]
    read = recognizer.recognize(items)
    for outcome in read:
        assert outcome.ok and len(outcome.alternatives) == len(outcome.tokens)
        assert all(len(alternatives) == HOUSE_ALTERNATIVES for alternatives in outcome.alternatives)
    printed = " ".join(lines).split()
    as_read = " ".join(outcome.text for outcome in read).split()
    assert len(as_read) == len(printed)
    # the damage fools the model (what this test is about): most words with an 'e' come out with a 'c'
    assert sum(a != b for a, b in zip(as_read, printed)) >= 20, as_read
    fixed = " ".join(outcome.text for outcome in read_page_against_lexicon(read, "eng")).split()
    assert sum(a != b for a, b in zip(fixed, printed)) <= 2, fixed
    # the same lines printed whole are read as they are, and the lexicon leaves them so
    whole = recognizer.recognize([RecognitionItem(_print(text), RecognitionTask.TEXT, is_single_line=True)
                                  for text in lines])
    assert [outcome.text for outcome in read_page_against_lexicon(whole, "eng")] == lines


def _print(text: str, size: int = 32) -> Image.Image:
    font = ImageFont.truetype(SERIF, size)
    image = Image.new("RGB", (int(font.getlength(text)) + 24, int(size * 1.6)), "white")
    ImageDraw.Draw(image).text((12, 6), text, fill="black", font=font)
    return image
