"""The scoring of bench/real_pages.py on tiny hand-made texts."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from real_pages_metrics import cer, normalise, order_score, page_scores, recall_precision, totals, words  # noqa: E402


def test_normalise_folds_ligatures_quotes_dashes_and_whitespace():
    assert normalise("\ufb01nd \u201cthe\u201d  \u2018best\u2019 \u2013 ok\u2014now\n\n x\u2212y") == \
        "find \"the\" 'best' - ok-now x-y"
    assert normalise("\u27e8title\u27e9 a\x00b\x10") == "<title> ab"
    assert normalise("Br\u00a8uns Jan\u02c7causkas J\u00b4ulio") == "Br\u00fcns Jan\u010dauskas J\u00falio"


def test_normalise_joins_words_hyphenated_at_line_ends_only():
    assert normalise("interac-\ntion and well-\n  known") == "interaction and wellknown"
    assert normalise("x-\nY and 3-\nd and a-b") == "x- Y and 3- d and a-b"
    # a dash ending a line is punctuation, not a hyphenation: the words stay two (both fold to "-")
    assert normalise("publications\u2014\nincluding and pages 3\u2013\nfive, hy\u2010\nphen") == \
        "publications- including and pages 3- five, hyphen"


def test_normalise_drops_dot_leaders_but_keeps_ellipsis_and_markdown_table_syntax_goes():
    assert normalise("Preface . . . . . . . 1\nIntro.......... 2\nf(x, ...)") == "Preface 1 Intro 2 f(x, ...)"
    assert normalise("| a | b |\n| --- |:--|\n| 1 | x \\| y |") == "a b 1 x | y"
    assert normalise("a - b\n|\n-") == "a - b | -"


def test_words_strip_edge_punctuation_and_keep_case():
    assert words(normalise("(Hello), world! \u2022 x=y \"R\".")) == ["Hello", "world", "x=y", "R"]


def test_cer_counts_edits_over_truth_characters():
    assert cer("abcd", "abcd") == 0.0
    assert cer("abxd", "abcd") == pytest.approx(0.25)
    assert cer("", "abcd") == 1.0
    assert cer("abcdabcd", "abcd") == 1.0


def test_recall_and_precision_are_order_free_multisets():
    truth = "the cat saw the dog".split()
    assert recall_precision("dog the saw cat the".split(), truth) == (1.0, 1.0)
    recall, precision = recall_precision("the cat cat".split(), truth)
    assert recall == pytest.approx(2 / 5) and precision == pytest.approx(2 / 3)
    assert recall_precision([], truth) == (0.0, None)


def test_order_score_sees_swapped_halves_that_recall_misses():
    truth = "one two three four five six seven eight".split()
    swapped = truth[4:] + truth[:4]
    assert recall_precision(swapped, truth) == (1.0, 1.0)
    assert order_score(truth, truth) == 1.0
    assert order_score(swapped, truth) == pytest.approx(0.5)
    assert order_score(["one"], truth) is None          # fewer than two shared unique words


def test_page_scores_and_totals():
    scores = page_scores("The ﬁrst page\n. . . . . 1", "The first page . . . . . . 1")
    assert scores["cer"] == 0.0 and scores["recall"] == 1.0 and scores["order"] == 1.0
    lost = page_scores("", "some words here")
    assert lost["recall"] == 0.0 and lost["chars_ratio"] == 0.0
    summary = totals([scores, lost])
    assert summary["pages"] == 2 and summary["recall_below_0.9"] == 1
    assert summary["pooled_cer"] == pytest.approx(lost["edits"] / (scores["truth_chars"] + lost["truth_chars"]))
