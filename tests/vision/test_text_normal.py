"""Text normalisation: what a TeX text layer spells with spacing accents, ligatures and soft
hyphens comes out as a reader expects, and nothing else changes."""
from __future__ import annotations

import unicodedata

import pymupdf

from vision.document import Document
from vision.text_normal import digits_kept, normalise_text


def test_spacing_accents_go_on_their_letters_and_text_is_composed():
    assert normalise_text("J\u00b4an Min\u00b4a\u02c7c") == "Ján Mináč"
    assert normalise_text("Erd\u02ddos, Sch\u00a8onberg, \u00b4Ecole") == "Erdős, Schönberg, École"
    assert normalise_text("na\u00a8\u0131ve") == "naïve"                    # TeX's ï: a dotless i under ¨
    assert normalise_text("e\u0301te\u0301") == "été" and unicodedata.is_normalized("NFC", normalise_text("e\u0301"))


def test_ligatures_and_soft_hyphens_are_resolved():
    assert normalise_text("\ufb01nd the \ufb02ow, e\ufb00ect, o\ufb03ce") == "find the flow, effect, office"
    assert normalise_text("co\u00adoperate") == "cooperate"


def test_a_micro_sign_in_a_greek_word_is_a_mu():
    assert normalise_text("πρόγρα\u00b5\u00b5α Ορισ\u00b5ός") == "πρόγραμμα Ορισμός"
    assert normalise_text("5 \u00b5m, 3 \u00b5g/l") == "5 \u00b5m, 3 \u00b5g/l"    # a unit keeps its micro sign


def test_everything_else_is_left_as_it_is():
    for text in ("`ls` and `pwd`", "x\u00b2 + y\u00b2", "\uff21\uff22 full width", "\U0001d453(x)", "price \u00b4 5",
                 "plain ASCII text", "\u00e9t\u00e9", ""):
        assert normalise_text(text) == text, text


def test_a_pdf_text_layers_words_come_normalised():
    doc = pymupdf.open()
    page = doc.new_page(width=300, height=100)
    page.insert_text((20, 50), "J\u00b4an M\u00a8uller", fontname="helv", fontsize=12)
    words = Document.open(doc.tobytes(), "accents.pdf").text_words(0, 72)
    assert [word.text for word in words] == ["Ján", "Müller"]


def test_a_letter_o_read_inside_a_number_is_a_zero():
    assert digits_kept("p < O.01 and O.O5") == "p < 0.01 and 0.05"
    assert digits_kept("1O5 items, 3.O kg, total 1,OOO.OO") == "105 items, 3.0 kg, total 1,000.00"
    assert digits_kept("ISO 9OO1, 2.o5, 1o5") == "ISO 9001, 2.05, 105"


def test_letters_o_that_belong_to_words_and_names_stay():
    for text in ("O2 level", "gcc -O2", "OK 10", "O'Brien", "see O. Smith 12", "vO.1", "foo1O", "COO2",
                 "room 1o", "o.k.", "Octave 10 or 100%", "x = 0.5o"):
        assert digits_kept(text) == text, text
