"""A word the house model misread, read again against how often the page's language writes it.

The house model reads each glyph as it is printed. Where the print is damaged, a glyph can look
like another: on augraphy's copies of Computer Modern pages the bar of every 'e' is gone, and the
model reads 'c' there at 0.97-0.99 ('Vcrsion', 'implcmcnts', 'thc'), where a reader who knows the
language reads 'e'. Tesseract gets such words right from its dictionary. This is the same idea, as
a noisy channel over what the model itself saw:

    score(w) = sum over w's characters of log P(character | image)  +  LEXICON_WEIGHT * ln 10 * zipf(w)

with P from the house model's own token log-probabilities (the chosen character's and, where a
character is swapped, the alternative's from `top_logprobs`), and zipf(w) = log10 of w's frequency
per billion words in the language (`wordfreq`; a word it does not know counts as `UNKNOWN_ZIPF`).
Each word of a line, letters only, at least `MIN_LETTERS` of them, is compared with the spellings
that swap up to `MAX_SWAPS` of its characters for alternatives the model gave at least
`MIN_ALTERNATIVE` probability; the best-scoring spelling is kept. Only swaps, never an inserted or
dropped letter: the frames the model read fix the word's length. A word next to a digit or an
underscore (`latex8`, `page_size`) is code or a name and stays as read, and so does every word of
a line whose tokens do not spell its text one character a token.

On a clean page the model is sure of what it reads (on the real-page set's clean dev copies, 93% of
the letters have no alternative above a thousandth of the chosen letter's probability), so a word
read right stays as read even where a more frequent word is one letter away. The swapped
character's token carries the alternative's log-probability, so the word's confidence says it was a
guess. `bench/lexicon_weights.py` is how `LEXICON_WEIGHT` was chosen, on dev pages.
"""
from __future__ import annotations

import functools
import heapq
import math
import re
import statistics
import unicodedata
from dataclasses import replace

from workers.recognizers.base import RecognitionOutcome

LEXICON_WEIGHT = 0.75    # nats of the model's evidence one natural-log unit of word frequency is worth
UNKNOWN_ZIPF = 0.5       # zipf of a word the language's list does not hold (its lists stop near 1.0)
MIN_LETTERS = 3          # shorter words are too often abbreviations, symbols and variables
MAX_SWAPS = 3            # characters swapped in one word at most
MIN_ALTERNATIVE = 1e-4   # an alternative less likely than this is not one
MAX_CANDIDATES = 64      # spellings tried per word, likeliest first
ADAPT_MIN_SWAPS = 5      # a swap made this often on one page is that page's confusion (`read_page_against_lexicon`)
MAX_ZIPF = 8.0           # above the most frequent word of any language ('the' is 7.7)
_WORD = re.compile(r"[^\W\d_]+")
_SPECIAL = re.compile(r"<[^<>\s]+>")

# Tesseract's language codes as wordfreq's (the languages it has lists for)
_WORDFREQ = {"eng": "en", "deu": "de", "fra": "fr", "spa": "es", "ita": "it", "por": "pt", "nld": "nl",
             "dan": "da", "nor": "nb", "swe": "sv", "isl": "is", "cat": "ca", "fin": "fi", "pol": "pl",
             "ces": "cs", "slk": "sk", "hun": "hu", "ron": "ro", "slv": "sl", "hrv": "sh", "lit": "lt",
             "lav": "lv", "tur": "tr", "vie": "vi", "ind": "id", "msa": "ms", "fil": "fil"}


@functools.lru_cache(maxsize=16)
def _frequency(language: str):
    """wordfreq's zipf_frequency for the language, or None where it has no list or is not installed."""
    code = _WORDFREQ.get(language)
    if code is None:
        return None
    try:
        from wordfreq import zipf_frequency
    except ImportError:
        return None
    return functools.lru_cache(maxsize=65536)(lambda word: zipf_frequency(word, code))


def read_against_lexicon(outcome: RecognitionOutcome, language: str | None) -> RecognitionOutcome:
    """`outcome` with each misread word swapped for the spelling the noisy channel prefers (module
    docstring); the outcome itself where nothing changes or it carries no alternatives."""
    zipf = _frequency(language) if language else None
    return outcome if zipf is None else _read(outcome, zipf, {})[0]


def read_page_against_lexicon(outcomes: list[RecognitionOutcome], language: str | None) -> list[RecognitionOutcome]:
    """A page's lines read against the lexicon, and read again where the page has a confusion of its
    own: a swap of one character for another made `ADAPT_MIN_SWAPS` times or more on the page (every
    'c' that was an 'e') costs that much less on it, by the median of what those swaps cost."""
    zipf = _frequency(language) if language else None
    if zipf is None:
        return list(outcomes)
    first = [_read(outcome, zipf, {}) for outcome in outcomes]
    made: dict[tuple[str, str], list[float]] = {}
    for _, swaps in first:
        for chosen, alternative, cost in swaps:
            made.setdefault((chosen, alternative), []).append(cost)
    discount = {pair: statistics.median(costs) for pair, costs in made.items() if len(costs) >= ADAPT_MIN_SWAPS}
    if not discount:
        return [outcome for outcome, _ in first]
    return [_read(outcome, zipf, discount)[0] for outcome in outcomes]


def _read(outcome: RecognitionOutcome, zipf, discount: dict[tuple[str, str], float]
          ) -> tuple[RecognitionOutcome, list[tuple[str, str, float]]]:
    """`read_against_lexicon` with each swap's cost less its pair's `discount`; also the swaps made,
    (chosen, alternative, cost before the discount)."""
    if not outcome.ok or not outcome.tokens or not outcome.alternatives:
        return outcome, []
    tokens, alternatives = outcome.tokens, outcome.alternatives
    if len(tokens) != len(alternatives):
        return outcome, []
    spoken = len(tokens)
    while spoken and _SPECIAL.fullmatch(tokens[spoken - 1][0]):   # the end of text, as the server names it
        spoken -= 1
    spelled = "".join(token for token, _ in tokens[:spoken])
    start = len(spelled) - len(spelled.lstrip())
    if spelled.strip() != outcome.text:
        return outcome, []
    # the token at each character of the text, where tokens are single characters
    at: dict[int, int] = {}
    position = 0
    for index, (token, _) in enumerate(tokens[:spoken]):
        if len(token) == 1:
            at[position - start] = index
        position += len(token)
    text, new_tokens, made = outcome.text, list(tokens), []
    for match in _WORD.finditer(text):
        word, begin, end = match.group(), match.start(), match.end()
        if (len(word) < MIN_LETTERS or _glued(text, begin, end)
                or any(i not in at for i in range(begin, end))):
            continue
        indexes = [at[i] for i in range(begin, end)]
        best = _best_spelling(word, [tokens[i] for i in indexes], [alternatives[i] for i in indexes], zipf, discount)
        if best is None:
            continue
        spelling, logprobs = best
        for i, char, logprob in zip(indexes, spelling, logprobs):
            if char != tokens[i][0]:
                made.append((tokens[i][0], char, tokens[i][1] - logprob))
            new_tokens[i] = (char, logprob)
        text = text[:begin] + spelling + text[end:]
    if not made:
        return outcome, []
    confidence = math.exp(sum(logprob for _, logprob in new_tokens) / len(new_tokens))
    return replace(outcome, text=text, tokens=tuple(new_tokens), confidence=confidence), made


def _glued(text: str, begin: int, end: int) -> bool:
    """A word touching a digit or an underscore: part of an identifier, a unit or a code."""
    return any(0 <= i < len(text) and (text[i].isdigit() or text[i] == "_") for i in (begin - 1, end))


def _base_letter(char: str) -> str:
    """The letter without its marks ('é' -> 'e'): a mark the model saw is never taken off for a
    word list's sake (names keep their accents: 'Béranger', not 'Beranger')."""
    return unicodedata.normalize("NFD", char)[0]


def _best_spelling(word: str, chosen: list[tuple[str, float]], alternatives: list[tuple[tuple[str, float], ...]],
                   zipf, discount: dict[tuple[str, str], float]) -> tuple[str, list[float]] | None:
    """The spelling of `word` scoring best, and its characters' log-probabilities; None where the
    word as read scores best."""
    options = []   # per character: (cost in nats against the chosen one, character, its log-prob), cheapest first
    for (char, logprob), alts in zip(chosen, alternatives):
        swaps = sorted((max(0.0, logprob - alt_logprob - discount.get((char, alt), 0.0)), alt, alt_logprob)
                       for alt, alt_logprob in alts
                       if len(alt) == 1 and alt != char and alt.isalpha() and alt.isupper() == char.isupper()
                       and alt != _base_letter(char)
                       and alt_logprob + discount.get((char, alt), 0.0) >= math.log(MIN_ALTERNATIVE))
        options.append(swaps)
    if not any(options):
        return None
    weight = LEXICON_WEIGHT * math.log(10)
    as_read = weight * max(zipf(word), UNKNOWN_ZIPF)
    best_score, best = as_read, None
    # spellings in order of cost (best-first over the swaps; each pops once)
    heap = [(0.0, ())]
    seen = {()}
    tried = 0
    while heap and tried < MAX_CANDIDATES:
        cost, swaps = heapq.heappop(heap)
        if weight * MAX_ZIPF - cost <= best_score:   # no spelling this dear can win, however frequent
            break
        if swaps:
            tried += 1
            letters = list(word)
            for position, k in swaps:
                letters[position] = options[position][k][1]
            spelling = "".join(letters)
            frequency = zipf(spelling)
            if frequency > 0:
                score = weight * frequency - cost
                if score > best_score:
                    best_score, best = score, (spelling, swaps)
        if len(swaps) >= MAX_SWAPS:
            continue
        used = {position for position, _ in swaps}
        for position, swaps_here in enumerate(options):
            if position in used or not swaps_here:
                continue
            for k, (extra, _, _) in enumerate(swaps_here):
                key = tuple(sorted((*swaps, (position, k))))
                if key not in seen:
                    seen.add(key)
                    heapq.heappush(heap, (cost + extra, key))
    if best is None:
        return None
    spelling, swaps = best
    logprobs = [logprob for _, logprob in chosen]
    for position, k in swaps:
        logprobs[position] = options[position][k][2]
    return spelling, logprobs
