r"""Scores for bench/real_pages.py: one normalisation for the truth and every system, then
character error rate, order-free word recall and precision, and an order score.

Normalisation (`normalise`), in this order:
1. a spacing accent before a letter put on the letter (TeX's text layer writes "ü" as "¨u"),
   then Unicode NFKC (ligatures such as "ﬁ" become "fi", math-italic letters plain ones);
2. typographic quotes, dashes, minus and angle brackets folded to ASCII (`' " - < >`);
3. control and private-use characters dropped (TeX's big delimiters reach the text layer as
   control codes);
4. Markdown table syntax dropped: a separator row (only `|`, `:`, `-` and spaces) goes, and the
   unescaped pipes of a line that starts and ends with `|` become spaces (`\|` becomes `|`);
   a text layer has no such lines;
5. a word hyphenated at a line end joined back: a letter, a hyphen (`-` or U+2010, not an en or
   em dash: this is done before step 2 folds dashes to `-`), a line break, a lowercase letter;
6. dot leaders (four or more dots, single spaces allowed between them) become a space, so
   a table of contents or an index is scored on its entries, not on counting dots;
7. whitespace collapsed to single spaces.

Words (`words`): the whitespace-separated tokens of the normalised text with punctuation
(Unicode category P*) stripped from both ends, case kept; tokens left empty are dropped.

Scores of one page (`page_scores`):
- cer: Levenshtein distance between the normalised output and truth / truth characters;
- recall, precision: the size of the multiset intersection of output and truth words over
  the truth's words (recall) and the output's words (precision; None for an empty output);
- order: over the words that occur exactly once in the truth and exactly once in the output,
  the share that lie on a longest common subsequence of their two orders (1.0: the output
  keeps the truth's order; a page whose two halves are swapped scores about 0.5). None when
  fewer than two such words exist;
- chars_ratio: output characters / truth characters (normalised); far below 1 means text lost.
"""
from __future__ import annotations

import re
import statistics
import unicodedata
from collections import Counter

from rapidfuzz.distance import LCSseq, Levenshtein

_FOLD = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    "\u27e8": "<", "\u27e9": ">", "\u2329": "<", "\u232a": ">", "\u3008": "<", "\u3009": ">",
})
_SPACING_ACCENTS = {"\u00a8": "\u0308", "\u00b4": "\u0301", "\u02c7": "\u030c", "\u02d8": "\u0306",
                    "\u02dd": "\u030b", "\u02da": "\u030a", "\u00af": "\u0304", "\u02c6": "\u0302", "\u02dc": "\u0303"}
_DETACHED_ACCENT = re.compile(f"([{''.join(_SPACING_ACCENTS)}])([^\\W\\d_])")
_TABLE_SEPARATOR = re.compile(r"^(?=[^\n]*\|)(?=[^\n]*-)[ \t|:-]+$", re.M)
_TABLE_ROW = re.compile(r"^[ \t]*\|(.*)\|[ \t]*$", re.M)
_PIPE = re.compile(r"(?<!\\)\|")
_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_])[-\u2010][ \t]*\n[ \t]*(?=[a-z])")
_LEADER = re.compile(r"\.(?: ?\.){3,}")


def _printable(char: str) -> bool:
    return char in "\n\t" or unicodedata.category(char) not in ("Cc", "Co", "Cn", "Cs")


def normalise(text: str) -> str:
    """The text as it is scored: see the module docstring, steps 1-7."""
    text = _DETACHED_ACCENT.sub(lambda match: match.group(2) + _SPACING_ACCENTS[match.group(1)], text)
    text = unicodedata.normalize("NFKC", text)
    text = _HYPHEN_BREAK.sub("", text)   # before dashes fold to "-": an em dash ending a line joins nothing
    text = text.translate(_FOLD)
    text = "".join(char for char in text if _printable(char))
    text = _TABLE_SEPARATOR.sub("", text)
    text = _TABLE_ROW.sub(lambda match: " " + _PIPE.sub(" ", match.group(1)).replace("\\|", "|") + " ", text)
    text = _LEADER.sub(" ", text)
    return " ".join(text.split())


def _strip_punctuation(token: str) -> str:
    start, end = 0, len(token)
    while start < end and unicodedata.category(token[start]).startswith("P"):
        start += 1
    while end > start and unicodedata.category(token[end - 1]).startswith("P"):
        end -= 1
    return token[start:end]


def words(normalised: str) -> list[str]:
    """The scored words of a normalised text, in order."""
    return [word for word in map(_strip_punctuation, normalised.split()) if word]


def cer(output: str, truth: str) -> float:
    """Character error rate of normalised strings (can exceed 1 for long garbage)."""
    return Levenshtein.distance(output, truth) / max(1, len(truth))


def recall_precision(output_words: list[str], truth_words: list[str]) -> tuple[float, float | None]:
    """Order-free word recall and precision (multisets, case kept)."""
    common = sum((Counter(output_words) & Counter(truth_words)).values())
    recall = common / len(truth_words) if truth_words else 1.0
    precision = common / len(output_words) if output_words else None
    return recall, precision


def order_score(output_words: list[str], truth_words: list[str]) -> float | None:
    """Share of the words unique to both texts that lie on a longest common subsequence."""
    in_truth, in_output = Counter(truth_words), Counter(output_words)
    unique = {word for word, count in in_truth.items() if count == 1 and in_output.get(word) == 1}
    if len(unique) < 2:
        return None
    truth_order = [word for word in truth_words if word in unique]
    output_order = [word for word in output_words if word in unique]
    return LCSseq.similarity(output_order, truth_order) / len(unique)


def page_scores(output: str, truth: str) -> dict:
    """All scores of one page from the raw output and raw truth texts."""
    out_norm, truth_norm = normalise(output), normalise(truth)
    out_words, truth_words = words(out_norm), words(truth_norm)
    recall, precision = recall_precision(out_words, truth_words)
    return {"cer": cer(out_norm, truth_norm), "edits": Levenshtein.distance(out_norm, truth_norm),
            "truth_chars": len(truth_norm), "output_chars": len(out_norm),
            "chars_ratio": len(out_norm) / max(1, len(truth_norm)),
            "recall": recall, "precision": precision, "order": order_score(out_words, truth_words),
            "truth_words": len(truth_words), "output_words": len(out_words)}


def median(values) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def totals(scores: list[dict]) -> dict:
    """Medians and pooled figures over pages of one system."""
    edits, chars = sum(s["edits"] for s in scores), sum(s["truth_chars"] for s in scores)
    return {"pages": len(scores), "median_cer": median(s["cer"] for s in scores),
            "median_recall": median(s["recall"] for s in scores),
            "median_precision": median(s["precision"] for s in scores),
            "median_order": median(s["order"] for s in scores),
            "pooled_cer": edits / max(1, chars),
            "recall_below_0.9": sum(s["recall"] < 0.9 for s in scores)}
