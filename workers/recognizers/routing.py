"""The house model for what it can write; PP-OCRv6 or Tesseract with the right pack for the rest.

The house model writes Latin-1 only (`languages.house_writes`); it reads a Polish 'ą' as 'a' with
full confidence and Greek or Cyrillic as Latin-looking nonsense. So every page's crops go to the
house model first, and the page then decides, from that reading:

| the page                                        | found by                                   | read by |
|-------------------------------------------------|--------------------------------------------|---------|
| `languages` names Tesseract packs               | the job                                    | both, merged |
| house reading confident, language of Latin-1    | median confidence, `guess_latin_language`  | house, words read against the language's word list (`lexicon`) |
| house reading confident, other Latin language   | the same (Polish, Czech, Vietnamese...)    | both, merged, that pack |
| the same, a language PP-OCRv6 reads but English | the same (German, French, Polish...)       | both, merged, PP-OCRv6 first |
| house reading poor, and PP-OCRv6 reads its hardest lines as Chinese or Japanese (vertical columns too) | `_cjk_script` on a sample | both, merged, PP-OCRv6 first |
| house reading poor (low confidence, or few of its words a language's frequent words): another script, pack here | `script_id.identify_script` on a sample | both, merged, the script's pack + eng |
| another script, no pack here                    | the same, then Tesseract OSD names it, unless the house reading holds a language's words (`UNSURE_LATIN_WORD_SHARE`: then Latin) | house where confident, else marked unreadable |
| a Latin page's line read unsurely or as strange words, unlike the page's language, as a few marks for its width, or unsurely as mostly single letters | PP-OCRv6 on those lines, then `script_id.identify_lines` on the rest | that line: PP-OCRv6 (Chinese, Japanese), or its script's pack + eng |

The other reader of a line crop is PP-OCRv6 (`workers.recognizers.ppocr`) where it reads the page's
language (Chinese, Japanese, most Latin-script languages: it finds more there than Tesseract on the
multilingual set), else Tesseract with the page's packs, which reads each block whole and gives its
words to the detected lines (`TesseractRecognizer.recognize_in_blocks`: it finds more words so than
line by line); regions read whole go to Tesseract.

Merged, per line: PP-OCRv6's reading where it is sure of it (`TRUST_PPOCR`: on the set's German and
French pages the house model dropped umlauts and accents it could write, 'fur' for 'für'; with the
fifth phase's weights, which write them, it still reads those pages worse alone than merged: word
recall 0.960 / 0.932 against 0.976 / 0.969, 2026-12-06); the other
reading where it holds letters the house model cannot write (on a page of another script, a
reading mostly in Latin letters needs a whole word in the script: `_beyond_house`), with a word it
broke in two joined where the house model read it whole (`_spaces_witnessed`); else
the house model's where it was confident (`KEEP_HOUSE_CONFIDENCE`: the English commands and code on
a Russian page); else the other one. A line nobody reads is `UNREADABLE` with confidence 0 and its
script, never an empty or invented line, and a `<unk>` the house model wrote (the engine drops it
from the text; its token log keeps it) becomes U+FFFD with the line's confidence capped at
`UNKNOWN_CONFIDENCE`. Every outcome says its `script` (from its text, else the page's) and its
`language` where known.
"""
from __future__ import annotations

import statistics
from dataclasses import replace

from PIL import Image

from vision.layout import RecognitionTask
from vision.scripts import script_counts, script_of_text
from workers.recognizers.base import RecognitionItem, RecognitionOutcome, Recognizer
from workers.recognizers import ppocr
from workers.recognizers.languages import (DETECT, HOUSE_LANGUAGES, SCRIPT_LANGUAGES, guess_latin_language,
                                           house_writes, installed_languages, latin_language_evidence,
                                           packs_for_script)
from workers.recognizers.lexicon import read_page_against_lexicon
from workers.recognizers.script_id import KANA_SHARE, SAMPLE_LINES, identify_lines, identify_script
from workers.recognizers.ppocr import PPOCRLineRecognizer
from workers.recognizers.tesseract import TesseractRecognizer

HARD_PAGE_CONFIDENCE = 0.85    # a page whose median line confidence is below this gets its script identified
KEEP_HOUSE_CONFIDENCE = 0.8    # a Latin-1 line the house model read this confidently keeps its reading
# a page read confidently whose words are less than this share a language's frequent words gets its
# script identified too: the house model reads Cyrillic as Latin-looking words at 0.9 and more
MIN_LANGUAGE_WORD_SHARE = 0.08
# A page no pack reads surely (`identify_script` fell back on OSD) is Latin all the same where this share
# of the house reading's words are a language's frequent words: an augraphy copy of an English
# reference card printed in dots, read at a median line confidence of 0.55 with 9% frequent words, was
# named Japanese by OSD at 0.26, and every line came out unreadable. Another script read as
# Latin-looking letters has next to none (Hebrew, Georgian, Armenian: 0).
UNSURE_LATIN_WORD_SHARE = 0.05
TRUST_PPOCR = 0.8              # PP-OCRv6's reading this sure is taken over the house model's (see the docstring)
# of the letters PP-OCRv6 reads in a hard page's sample lines: Chinese or Japanese (`_cjk_script`)
CJK_SHARE = 0.6
# of the letters PP-OCRv6 reads in one line: at least as many Chinese or Japanese characters as
# others, for a line of Chinese that quotes a Latin word ('追加 tar 文件至归档', cut by the line
# detector into '追加tar文' and '文件至归档'; `_cjk_reading`)
LINE_CJK_SHARE = 0.5
UNKNOWN_CONFIDENCE = 0.2       # a line with a character the house model could not name
# A line of a Latin page is asked whether it is in another script (`_minority_lines`) when the
# house model read it less surely than MINORITY_CONFIDENCE (it reads Greek, Cyrillic and Chinese
# lines at 0.3-0.9), it has MINORITY_MIN_LETTERS letters or more, and it was read very unsurely
# (MINORITY_LOW_CONFIDENCE) or MINORITY_STRANGE_SHARE of its words are unlike the page language's
# (`_strange_word`: 'ToIOBOñ', 'KOH¢epeHIIN', 'XóyOc' for Russian and Greek words). On 13 dev
# pages that asks about 16 of the 1054 lines of their scans, and 8 of 1110 clean (2026-12-07).
MINORITY_CONFIDENCE = 0.9
MINORITY_LOW_CONFIDENCE = 0.6
MINORITY_MIN_LETTERS = 6
MINORITY_STRANGE_SHARE = 0.3
# A line read surely is asked about too where most of its words (SURE_STRANGE_SHARE, two at least)
# are strange: the house model reads some Cyrillic lines as Latin-looking words at 0.91-0.95
# ('Bce paBHO CO3IaTh HOBbIï? (y/N)', '3agBKaTa e OTMeHeHa'). On the 13 dev pages of the real-page
# set that asks about 5 more of the 1057 lines read that surely (clean), 3 of 936 (scan).
SURE_STRANGE_SHARE = 0.5
CJK_MIN_ASPECT = 4.0   # a reading this many times as wide as high can be too sparse (SPARSE_READING, below)
# a line read very unsurely this many times as wide as high goes to PP-OCRv6 first: five Chinese
# characters' width (`_cjk_candidate`)
CJK_CANDIDATE_ASPECT = 3.0
# A line is asked about too, however surely it was read, where the reading holds fewer characters
# than SPARSE_READING x its crop's width / height (a line of Latin print holds 1.5-2.5 times that
# many): the house model writes a line of Hangul as a few marks ('- o t' at 0.84 for a line of
# forty syllables), too few letters for the rules above.
SPARSE_READING = 0.5
# A line read unsurely (under MINORITY_CONFIDENCE) is asked about too where its reading is mostly
# single letters: FRAGMENT_SHARE of its space-separated tokens, FRAGMENT_MIN_TOKENS of them at least
# (lines of Chinese quoting a Latin word come out 'k N P E M', 'eh p E M', '__o t a'; dot leaders
# and rows of digits are not letters).
FRAGMENT_MIN_TOKENS = 3
FRAGMENT_SHARE = 2 / 3
# a word this long, in letters the house model cannot write, makes a mostly Latin reading of a
# line of a non-Latin page another script's ('вместо ${shlibs:Depends}'; `_beyond_house`)
OTHER_WORD_LETTERS = 3
JOIN_MIN_LETTERS = 4   # a word broken by another reader is joined back at this length (`_spaces_witnessed`)
UNREADABLE = "\ufffd"          # U+FFFD REPLACEMENT CHARACTER: the text of a line nobody here reads
UNK = "<unk>"


class RoutingRecognizer:
    def __init__(self, primary: Recognizer, tesseract_cmd: str = "tesseract", num_processes: int = 2):
        self.primary = primary
        self.tesseract_cmd = tesseract_cmd
        self.num_processes = num_processes
        self.name = primary.name
        self.reads_single_lines = primary.reads_single_lines
        self.softens_noisy_lines = primary.softens_noisy_lines

    def check(self) -> None:
        self.primary.check()   # Tesseract is optional: without it pages in other scripts are marked unreadable

    def recognize(self, items: list[RecognitionItem]) -> list[RecognitionOutcome]:
        """One page's crops in one call (the recognise stage's), so a page is judged as a whole;
        crops sent with different `languages` are judged apart."""
        outcomes: list[RecognitionOutcome | None] = [None] * len(items)
        groups: dict[str, list[int]] = {}
        for i, item in enumerate(items):
            groups.setdefault(item.languages or DETECT, []).append(i)
        for languages, ids in groups.items():
            for i, outcome in zip(ids, self._recognize_page([items[i] for i in ids], languages)):
                outcomes[i] = outcome
        assert all(outcome is not None for outcome in outcomes)
        return outcomes  # type: ignore[return-value]

    def _recognize_page(self, items: list[RecognitionItem], languages: str) -> list[RecognitionOutcome]:
        house = [_unknowns_marked(outcome) for outcome in self.primary.recognize(items)]
        installed = installed_languages(self.tesseract_cmd)
        if languages != DETECT:
            codes = languages.split("+")
            script = script_of_text(" ".join(outcome.text or "" for outcome in house)) or "Latin"
            if set(codes) <= HOUSE_LANGUAGES:
                return [_labelled(outcome, script, codes[0]) for outcome in read_page_against_lexicon(house, codes[0])]
            return self._merged(items, house, languages, None, codes[0])
        confidences = [o.confidence for o in house if o.ok and o.confidence is not None and o.text]
        page_text = " ".join(outcome.text or "" for outcome in house)
        _, word_share = latin_language_evidence(page_text, installed | HOUSE_LANGUAGES)
        well_read = confidences and statistics.median(confidences) >= HARD_PAGE_CONFIDENCE
        if not installed or not confidences or (well_read and word_share >= MIN_LANGUAGE_WORD_SHARE):
            return self._latin_page(items, house, installed)
        hard = [item.image for item, outcome in zip(items, house)
                if item.is_single_line and (not outcome.ok or (outcome.confidence or 0) < KEEP_HOUSE_CONFIDENCE)]
        cjk = self._cjk_script(hard or [item.image for item in items])
        if cjk is not None:
            packs = packs_for_script(cjk, installed) or ("jpn" if cjk == "Japanese" else "chi_sim")
            return self._merged(items, house, packs, cjk, packs.split("+")[0])
        guess = identify_script(hard or [item.image for item in items], installed, self.tesseract_cmd,
                                self.num_processes)
        if guess.pack is None and guess.script != "Latin" and word_share >= UNSURE_LATIN_WORD_SHARE:
            guess = replace(guess, script="Latin")   # no pack was sure, but the house model read a language's words
        if guess.script == "Latin" or (guess.script is None and guess.pack is not None):
            return self._latin_page(items, house, installed)
        packs = packs_for_script(guess.script, installed, guess.pack) if guess.script else None
        if packs is None:
            return [_labelled(outcome, guess.script, None) if outcome.ok and
                    (outcome.confidence or 0) >= KEEP_HOUSE_CONFIDENCE and outcome.text
                    else _unreadable(outcome, guess.script) for outcome in house]
        return self._merged(items, house, packs, guess.script, packs.split("+")[0])

    def _cjk_script(self, images: list[Image.Image]) -> str | None:
        """"Han" or "Japanese" where PP-OCRv6 reads the widest of the page's hard lines as Chinese
        characters (`CJK_SHARE` of their letters), sure of them (`TRUST_PPOCR`); else None.
        Asked before Tesseract's packs: they read columns of vertical writing, cut out turned to
        run across, as noise (a vertical Japanese page came out as Arabic), where PP-OCRv6 reads
        them whole."""
        if ppocr.model_path() is None:
            return None
        sample = sorted(images, key=lambda image: -image.width / max(1, image.height))[:SAMPLE_LINES]
        read = PPOCRLineRecognizer(self.num_processes).recognize(
            [RecognitionItem(image, RecognitionTask.TEXT, is_single_line=True) for image in sample])
        confidences = [o.confidence for o in read if o.ok and o.text and o.confidence is not None]
        counts = script_counts(" ".join(o.text or "" for o in read if o.ok))
        han_or_kana = counts["Han"] + counts["Japanese"]
        if (not confidences or statistics.median(confidences) < TRUST_PPOCR
                or han_or_kana < max(3, CJK_SHARE * sum(counts.values()))):
            return None
        return "Japanese" if counts["Japanese"] >= max(3, KANA_SHARE * han_or_kana) else "Han"

    def _minority_lines(self, items: list[RecognitionItem], outcomes: list[RecognitionOutcome],
                        installed: frozenset[str]) -> list[RecognitionOutcome]:
        """A Latin page's lines in another script (a Russian title in a bibliography, a Greek
        motto, a line of Chinese), read in it. Lines the house model read very unsurely, at
        least a few glyphs wide, go to PP-OCRv6 first, which names Chinese and Japanese ones and
        reads them; lines read unsurely that look unlike the page's language
        (`_may_be_other_script`) go to PP-OCRv6 too, then the rest are named by
        `script_id.identify_lines` and read with their script's pack and English, else as the
        naming pack read them. A new reading is taken
        only where it holds letters the house model cannot write; everything else keeps its
        reading."""
        languages = [outcome.language for outcome in outcomes if outcome.language]
        language = max(set(languages), key=languages.count) if languages else None
        text_lines = [i for i, item in enumerate(items) if item.is_single_line and item.task is RecognitionTask.TEXT]
        outcomes = list(outcomes)
        cjk_by_ppocr = ppocr.model_path() is not None
        if cjk_by_ppocr:
            self._cjk_lines(items, outcomes, [i for i in text_lines if _cjk_candidate(items[i], outcomes[i])])
        asked = [i for i in text_lines if _may_be_other_script(outcomes[i], language, items[i].image)]
        if cjk_by_ppocr and asked:
            # PP-OCRv6 first: it names Chinese and Japanese lines, which Tesseract's other packs do not
            # know (the Bulgarian pack read '无法解析 PEM 加密的私钥' as 'ЖАВИ PEM МЕКЪЕН' surely) and the
            # English pack reads surely where they quote a Latin word
            self._cjk_lines(items, outcomes, [i for i in asked if not _cjk_candidate(items[i], outcomes[i])])
            asked = [i for i in asked if outcomes[i].script not in ("Han", "Japanese")]
        if not asked or not installed:
            return outcomes
        packs = [code for script, codes in SCRIPT_LANGUAGES.items() for code in codes
                 if code in installed and not (cjk_by_ppocr and script in ("Han", "Japanese"))]
        named = dict(zip(asked, identify_lines([items[i].image for i in asked], installed, packs, self.tesseract_cmd,
                                               self.num_processes, latin_pack=language or "eng")))
        by_packs: dict[str, list[int]] = {}
        for i, line in named.items():
            packs_here = packs_for_script(line.script, installed, line.pack) if line.script not in (None, "Latin") else None
            if packs_here is not None:
                by_packs.setdefault(packs_here, []).append(i)
        for packs_here, ids in by_packs.items():
            tesseract = TesseractRecognizer(self.tesseract_cmd, packs_here, self.num_processes)
            for i, other in zip(ids, tesseract.recognize([replace(items[i], languages=None) for i in ids])):
                if not (other.ok and other.text and not house_writes(other.text)):
                    # the pack with English read it as Latin: the naming pack's own reading
                    if not named[i].reading or house_writes(named[i].reading):
                        continue
                    other = RecognitionOutcome(named[i].reading)
                outcomes[i] = _labelled(other, named[i].script, packs_here.split("+")[0])
        return outcomes

    def _cjk_lines(self, items: list[RecognitionItem], outcomes: list[RecognitionOutcome], ids: list[int]) -> None:
        """The lines `ids` PP-OCRv6 reads surely as Chinese or Japanese take its reading, in place."""
        read = PPOCRLineRecognizer(self.num_processes).recognize([items[i] for i in ids]) if ids else []
        for i, other in zip(ids, read):
            script = _cjk_reading(other)
            if script is not None:
                outcomes[i] = _labelled(other, script, "jpn" if script == "Japanese" else "chi_sim")

    def _latin_page(self, items: list[RecognitionItem], house: list[RecognitionOutcome],
                    installed: frozenset[str]) -> list[RecognitionOutcome]:
        """A page of Latin script: the house model's reading, its lines in other scripts read in
        them (`_minority_lines`) and then its words read against the language's word list
        (`lexicon`, last, so the routing judges what the model read), unless its words are of a
        language whose letters the house model cannot write and whose pack is here."""
        language = guess_latin_language(" ".join(outcome.text or "" for outcome in house), installed | HOUSE_LANGUAGES)
        by_ppocr = language is not None and language != "eng" and ppocr.reads(language)
        house_page = not by_ppocr and (language is None or language in HOUSE_LANGUAGES or language not in installed)
        if house_page:
            outcomes = [_labelled(outcome, "Latin", language) for outcome in house]
        elif by_ppocr:
            outcomes = self._merged(items, house, language, "Latin", language)
        else:   # with English, as a script's pack gets it: documents quote English words, commands and names
            outcomes = self._merged(items, house, f"{language}+eng" if "eng" in installed else language,
                                    "Latin", language)
        outcomes = self._minority_lines(items, outcomes, installed)
        if house_page:
            ours = [i for i, outcome in enumerate(outcomes) if outcome.script == "Latin" and outcome.alternatives]
            for i, outcome in zip(ours, read_page_against_lexicon([outcomes[i] for i in ours], language)):
                outcomes[i] = outcome
        return outcomes

    def _merged(self, items: list[RecognitionItem], house: list[RecognitionOutcome], packs: str,
                script: str | None, language: str) -> list[RecognitionOutcome]:
        """Each line from Tesseract (`packs`) or the house model, by the rule in the module docstring."""
        # formulas stay with the house model: neither has LaTeX to write them in
        ids = [i for i, item in enumerate(items) if item.task is not RecognitionTask.FORMULA]
        by_lines = [i for i in ids if items[i].is_single_line] if ppocr.reads(packs) else []
        rest = [i for i in ids if i not in set(by_lines)]
        read = {}
        if by_lines:
            read |= dict(zip(by_lines, PPOCRLineRecognizer(self.num_processes).recognize([items[i] for i in by_lines])))
        if rest:
            tesseract = TesseractRecognizer(self.tesseract_cmd, packs, self.num_processes)
            read |= dict(zip(rest, tesseract.recognize_in_blocks([items[i] for i in rest])))
        merged = []
        for i, own in enumerate(house):
            other = read.get(i)
            if other is not None and other.ok and other.text and (
                    _beyond_house(other.text, script) or (i in by_lines and (other.confidence or 0) >= TRUST_PPOCR)):
                chosen = replace(other, text=_spaces_witnessed(other.text, own.text)) if own.ok and own.text else other
            elif own.ok and own.text and (own.confidence or 0) >= KEEP_HOUSE_CONFIDENCE:
                chosen = own
            elif other is not None and other.ok and other.text:
                chosen = other
            else:
                chosen = own if own.ok and own.text else _unreadable(own, script)
            line_script = script_of_text(chosen.text or "") or script
            merged.append(_labelled(chosen, line_script, language if line_script == (script or line_script) else None))
        return merged


def _beyond_house(text: str, script: str | None) -> bool:
    """Whether another reader's reading of a line holds what the house model cannot write. On a
    page of another script a reading mostly in Latin letters needs a whole word of the script
    (`OTHER_WORD_LETTERS` letters, none the house writes) as well: the Russian pack + English reads
    an English line with a stray Cyrillic letter or two ('Е ог some types of packages...' for 'For
    some types...', 'libbaz4' as '1166а74'), and the house model's confident reading of it is
    the better one."""
    if house_writes(text):
        return False
    if script in (None, "Latin") or script_of_text(text) != "Latin":
        return True
    return any(sum(char.isalpha() for char in word) >= OTHER_WORD_LETTERS
               and not any(char.isalpha() and house_writes(char) for char in word) for word in text.split())


def _spaces_witnessed(text: str, witness: str) -> str:
    """`text` without the spaces it put inside a word that `witness` (the house model's reading of the
    same line) read whole: PP-OCRv6 and Tesseract break words set in a typewriter face at a narrow
    letter's wide cell ('pat ch', 'per l', 'debhe lper(1)' on maint-guide's package names), where the
    house model, trained on such faces, mostly reads them whole. Two pieces are joined only where the
    left one is all letters (punctuation before it aside), the joined word's letters
    (`JOIN_MIN_LETTERS` or more, with hyphens) begin a word of the witness, and the witness never
    has the two pieces side by side."""
    seen = [_letters(token) for token in witness.split()]
    whole, pairs = set(seen), set(zip(seen, seen[1:]))
    pieces = text.split(" ")
    kept = [pieces[0]]
    for piece in pieces[1:]:
        left, right = _letters(kept[-1]), _letters(piece)
        if (left and right and left == kept[-1].lstrip(_OPENING) and piece.startswith(right)
                and len(left + right) >= JOIN_MIN_LETTERS and left + right in whole and (left, right) not in pairs):
            kept[-1] += piece
        else:
            kept.append(piece)
    return " ".join(kept)


_OPENING = "([{\"'«‘“»—–-_"


def _letters(token: str) -> str:
    """The letters (and hyphens between them) a token begins with, punctuation before them aside."""
    token = token.lstrip(_OPENING)
    end = 0
    while end < len(token) and (token[end].isalpha() or (token[end] == "-" and end > 0)):
        end += 1
    return token[:end].rstrip("-")


def _cjk_candidate(item: RecognitionItem, outcome: RecognitionOutcome) -> bool:
    """A line the house model read very unsurely (`MINORITY_LOW_CONFIDENCE`), as wide as a few
    glyphs (`CJK_CANDIDATE_ASPECT`): its reading of a line of Chinese is a few stray marks."""
    confidence = outcome.confidence if outcome.confidence is not None else 1.0
    return (outcome.ok and confidence < MINORITY_LOW_CONFIDENCE
            and item.image.width >= CJK_CANDIDATE_ASPECT * item.image.height
            and script_of_text(outcome.text or "") in (None, "Latin"))


def _may_be_other_script(outcome: RecognitionOutcome, language: str | None, image: Image.Image) -> bool:
    """Whether a house reading on a Latin page may be of a line in another script (see
    `MINORITY_CONFIDENCE`, `SPARSE_READING` and `FRAGMENT_SHARE`)."""
    text = outcome.text or ""
    confidence = outcome.confidence if outcome.confidence is not None else 1.0
    if not outcome.ok or script_of_text(text) not in (None, "Latin"):
        return False
    aspect = image.width / max(1, image.height)
    if aspect >= CJK_MIN_ASPECT and len(text.replace(" ", "")) < SPARSE_READING * aspect:
        return True
    tokens = text.split()
    if (confidence < MINORITY_CONFIDENCE and len(tokens) >= FRAGMENT_MIN_TOKENS
            and sum(len(token) == 1 and token.isalpha() for token in tokens) >= FRAGMENT_SHARE * len(tokens)):
        return True
    if sum(char.isalpha() for char in text) < MINORITY_MIN_LETTERS:
        return False
    words = [word for word in (token.strip(".,;:!?()[]{}\"'«»‘’“”-–—") for token in tokens) if len(word) >= 2]
    strange = sum(_strange_word(word, accents_usual=language not in (None, "eng")) for word in words)
    if confidence >= MINORITY_CONFIDENCE:
        return strange >= max(2, SURE_STRANGE_SHARE * len(words))
    return confidence < MINORITY_LOW_CONFIDENCE or strange >= MINORITY_STRANGE_SHARE * max(1, len(words))


def _strange_word(word: str, accents_usual: bool) -> bool:
    """A word no Latin-script text writes: a capital after small letters inside it ('ToIOBOñ'),
    a symbol or digit among its letters, or (in English) an accented letter."""
    if not any(char.isalpha() for char in word):
        return False
    inner = word[1:]
    return (any(char.isupper() for char in inner) and any(char.islower() for char in inner)
            or any(not char.isalpha() for char in word)
            or (not accents_usual and any(ord(char) > 0x7F for char in word)))


def _cjk_reading(outcome: RecognitionOutcome) -> str | None:
    """"Han" or "Japanese" where PP-OCRv6's reading of a line is at least half Chinese characters and
    sure (`LINE_CJK_SHARE`, `TRUST_PPOCR`); else None."""
    if not outcome.ok or not outcome.text or (outcome.confidence or 0) < TRUST_PPOCR:
        return None
    counts = script_counts(outcome.text)
    han_or_kana = counts["Han"] + counts["Japanese"]
    if han_or_kana < max(2, LINE_CJK_SHARE * sum(counts.values())):
        return None
    return "Japanese" if counts["Japanese"] >= max(1, KANA_SHARE * han_or_kana) else "Han"


def _unknowns_marked(outcome: RecognitionOutcome) -> RecognitionOutcome:
    """The house model's reading with each `<unk>` it wrote as U+FFFD (the engine leaves special
    tokens out of the text; the token log, one token per character, still has them)."""
    if not outcome.ok or not outcome.tokens or not any(token == UNK for token, _ in outcome.tokens):
        return outcome
    spelled = "".join(UNREADABLE if token == UNK else token for token, _ in outcome.tokens
                      if token == UNK or not (token.startswith("<") and token.endswith(">")))
    confidence = min(outcome.confidence if outcome.confidence is not None else 1.0, UNKNOWN_CONFIDENCE)
    return replace(outcome, text=spelled.strip(), confidence=confidence)


def _unreadable(outcome: RecognitionOutcome, script: str | None) -> RecognitionOutcome:
    """A line no recogniser here reads: said so, not guessed at. A crop that failed stays failed."""
    if not outcome.ok:
        return replace(outcome, script=script)
    return RecognitionOutcome(UNREADABLE, confidence=0.0, script=script)


def _labelled(outcome: RecognitionOutcome, script: str | None, language: str | None) -> RecognitionOutcome:
    return replace(outcome, script=script_of_text(outcome.text or "") or script, language=language)
