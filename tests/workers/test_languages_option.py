"""The `languages` option at the boundary, the job store's copy of it, and the house model's
vocabulary as the router knows it."""
from __future__ import annotations

import shutil

import pytest

from training.house_ocr.charset import CHARACTERS
from workers.job_model import JobOptions
from workers.recognizers.languages import (DETECT, HOUSE_SYMBOLS, LanguagesError, guess_latin_language,
                                           house_writes, installed_languages, packs_for_script, parse_languages)


@pytest.mark.parametrize("value", [None, "", "  ", "detect", "DETECT", "auto"])
def test_detect_is_the_default(value):
    assert parse_languages(value) == DETECT


@pytest.mark.parametrize("value, words", [
    ("english", "'english' is not a Tesseract language code"),
    ("../../etc/passwd", "is not a Tesseract language code"),
    ("eng;rm", "is not a Tesseract language code"),
    ("+".join(["eng"] * 9), "at most 8"),
])
def test_a_malformed_option_is_refused_before_tesseract_is_asked(value, words):
    with pytest.raises(LanguagesError, match=words):
        parse_languages(value, "/nonexistent/tesseract")


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Tesseract")
def test_installed_packs_are_accepted_and_missing_ones_named():
    assert parse_languages("Eng + eng") == "eng"
    with pytest.raises(LanguagesError, match="no language pack for xyz .* tesseract-ocr-xyz"):
        parse_languages("eng+xyz")
    assert "osd" not in installed_languages()


def test_without_tesseract_nothing_but_detect_is_accepted():
    with pytest.raises(LanguagesError, match="installed: none"):
        parse_languages("eng", "/nonexistent/tesseract")


def test_the_job_store_keeps_the_option_and_old_jobs_load_with_detect():
    options = JobOptions(("md",), languages="pol+eng")
    assert JobOptions.from_dict(options.to_dict()).languages == "pol+eng"
    stored_before = {key: value for key, value in options.to_dict().items() if key != "languages"}
    assert JobOptions.from_dict(stored_before).languages == DETECT


def test_the_router_knows_the_house_vocabulary():
    """`house_writes` must agree with the tokenizer the house model was trained with."""
    assert house_writes(CHARACTERS)
    assert {char for char in CHARACTERS if ord(char) >= 0x100} == {char for char in HOUSE_SYMBOLS if ord(char) >= 0x100}
    assert not house_writes("ą") and not house_writes("Ω") and not house_writes("中")


def test_a_latin_page_language_is_told_by_its_frequent_words_without_accents():
    everything = frozenset({"eng", "deu", "fra", "pol", "ces", "vie"})
    assert guess_latin_language("Wolne i darmowe pakiety sa na serwerze, to jest dla nas", everything) == "pol"
    assert guess_latin_language("Die Pakete werden mit dem Programm und der Datei gebaut", everything) == "deu"
    assert guess_latin_language("The package is built from the source and the rules", everything) == "eng"
    assert guess_latin_language("xkcd qwrt zzyv", everything) is None


def test_each_script_gets_its_first_installed_pack_and_english():
    assert packs_for_script("Cyrillic", frozenset({"eng", "ukr", "rus"})) == "rus+eng"
    assert packs_for_script("Han", frozenset({"chi_tra"})) == "chi_tra"
    assert packs_for_script("Hebrew", frozenset({"eng"})) is None
    # the language found among the script's packs, where it is one of them and installed
    assert packs_for_script("Cyrillic", frozenset({"eng", "ukr", "rus"}), "ukr") == "ukr+eng"
    assert packs_for_script("Cyrillic", frozenset({"eng", "rus"}), "ukr") == "rus+eng"
    assert packs_for_script("Cyrillic", frozenset({"eng", "rus", "ell"}), "ell") == "rus+eng"
