"""The `languages` job option, and which Tesseract language packs read which script.

A job's `languages` is "detect" (the default: the script is found per page, the language of a
Latin page from its words) or Tesseract language codes joined by '+', as Tesseract takes them
("pol", "rus+eng", "chi_sim"), each one a pack installed on the workers (Debian
`tesseract-ocr-<code>`, with '_' as '-'). `parse_languages` checks the option once, at submit.

The house model reads Latin-1 (ASCII, western European letters, common symbols: see
training/house_ocr/charset.py); `HOUSE_LANGUAGES` are the languages it reads whole. Every other
language or script is read by Tesseract with its pack (`workers.recognizers.routing`).
"""
from __future__ import annotations

import functools
import re
import subprocess
import unicodedata

DETECT = "detect"
_CODE = re.compile(r"^[a-z]{3}(?:_[a-z]{3,4})?$")   # eng, chi_sim, chi_tra_vert, srp_latn
MAX_LANGUAGES = 8      # Tesseract slows with every pack a run loads

# Languages whose letters are all in Latin-1: the house model reads them (eng, deu, fra, spa, ita,
# por, nld, dan, nor, swe, isl, cat, glg, eus, afr, lat, ...)
HOUSE_LANGUAGES = frozenset({"eng", "deu", "fra", "spa", "ita", "por", "nld", "dan", "nor", "swe", "isl",
                             "cat", "glg", "eus", "afr", "lat", "gle", "fao", "ltz", "oci", "swa", "msa", "ind"})

# The characters the house model writes beyond Latin-1 (training/house_ocr/charset.py's symbols;
# a test keeps the two in step). Anything else it cannot write: it reads a near letter or nothing.
HOUSE_SYMBOLS = frozenset("€£¥¢©®™°±×÷§¶•·–—‘’“”„…½¼¾µ¹²³«»¬¿¡†‡‰′″→←≤≥≠≈∞√")


def house_writes(text: str) -> bool:
    """Whether the house model's vocabulary holds every character of `text`."""
    return all(ord(char) < 0x100 or char in HOUSE_SYMBOLS for char in text)


# script (vision.scripts names) -> Tesseract packs that read it, the most read language first;
# a page in the script gets the first one installed ("eng" is added for the Latin words such
# pages carry: commands, names, code)
SCRIPT_LANGUAGES: dict[str, tuple[str, ...]] = {
    "Cyrillic": ("rus", "ukr", "bul", "srp", "bel", "mkd", "kaz"),
    "Greek": ("ell", "grc"),
    "Arabic": ("ara", "fas", "urd", "pus", "uig"),
    "Hebrew": ("heb", "yid"),
    "Han": ("chi_sim", "chi_tra", "jpn"),
    "Japanese": ("jpn", "jpn_vert"),
    "Hangul": ("kor", "kor_vert"),
    "Devanagari": ("hin", "mar", "nep", "san"),
    "Bengali": ("ben", "asm"),
    "Tamil": ("tam",), "Telugu": ("tel",), "Kannada": ("kan",), "Malayalam": ("mal",), "Gujarati": ("guj",),
    "Gurmukhi": ("pan",), "Oriya": ("ori",), "Sinhala": ("sin",), "Thai": ("tha",), "Lao": ("lao",),
    "Khmer": ("khm",), "Myanmar": ("mya",), "Tibetan": ("bod",), "Georgian": ("kat",), "Armenian": ("hye",),
    "Ethiopic": ("amh",), "Syriac": ("syr",), "Thaana": ("div",),
}

# The most frequent short words of Latin-script languages, to tell which language a Latin page
# is in from the house model's reading (its `<unk>` stands for one letter it cannot write).
STOPWORDS: dict[str, frozenset[str]] = {code: frozenset(words.split()) for code, words in {
    "eng": "the of and to in is that for it with as on are this be by or from an not",
    "deu": "der die und das ist nicht mit den von zu ein eine sich auf für dem des im auch werden wird",
    "fra": "le la les de des et est un une du dans pour que qui pas sur au avec ce sont par",
    "spa": "el la los las de del y que en es un una por para con no se su al como",
    "ita": "il la di che e un una per non sono del della con si le gli nel anche come",
    "por": "o a os as de do da que em um uma para com não se por mais dos das",
    "nld": "de het een en van is dat op te in voor niet met zijn aan er ook",
    "pol": "i w na nie się z do to że jest o jak są dla przez od po oraz lub jako tym",
    "ces": "a v se na je to že s z do o jako pro ve by jsou nebo ale lze při",
    "slk": "a v sa na je to že s z do o ako pre vo by sú alebo ale",
    "vie": "và của các là có không được cho một những trong này với để khi thì",
    "tur": "ve bir bu için ile da de olarak çok daha gibi olan ne ya",
    "hun": "a az és hogy nem is egy van meg de csak ez mint",
    "ron": "și în de la a cu pe nu este din o un care sau pentru",
    "hrv": "i je u na se da za su od a ili kao s što",
    "slv": "in je v na se da za so z ali pa kot",
    "swe": "och att det i en är som på för med av till inte",
    "dan": "og i at det en er til på for med af som ikke",
    "fin": "ja on ei se että oli kun mutta niin myös tai",
    "lit": "ir yra kad su į iš kaip bet tai ar",
    "lav": "un ir ka ar par uz no kā bet vai",
    "est": "ja on et ei see kui ka mis oli",
}.items()}


# Tesseract's codes as the BCP 47 tags HTML's `lang` and ALTO's `LANG` take (ISO 639-1 where there
# is one; a script subtag where a code names one)
_BCP47 = {"eng": "en", "deu": "de", "fra": "fr", "spa": "es", "ita": "it", "por": "pt", "nld": "nl", "dan": "da",
          "nor": "no", "swe": "sv", "isl": "is", "cat": "ca", "glg": "gl", "eus": "eu", "afr": "af", "lat": "la",
          "gle": "ga", "fao": "fo", "ltz": "lb", "oci": "oc", "swa": "sw", "msa": "ms", "ind": "id", "pol": "pl",
          "ces": "cs", "slk": "sk", "vie": "vi", "tur": "tr", "hun": "hu", "ron": "ro", "hrv": "hr", "slv": "sl",
          "fin": "fi", "lit": "lt", "lav": "lv", "est": "et", "rus": "ru", "ukr": "uk", "bul": "bg", "srp": "sr",
          "bel": "be", "mkd": "mk", "kaz": "kk", "ell": "el", "grc": "grc", "ara": "ar", "fas": "fa", "urd": "ur",
          "pus": "ps", "uig": "ug", "heb": "he", "yid": "yi", "chi_sim": "zh-Hans", "chi_tra": "zh-Hant",
          "jpn": "ja", "jpn_vert": "ja", "kor": "ko", "kor_vert": "ko", "hin": "hi", "mar": "mr", "nep": "ne",
          "san": "sa", "ben": "bn", "asm": "as", "tam": "ta", "tel": "te", "kan": "kn", "mal": "ml", "guj": "gu",
          "pan": "pa", "ori": "or", "sin": "si", "tha": "th", "lao": "lo", "khm": "km", "mya": "my", "bod": "bo",
          "kat": "ka", "hye": "hy", "amh": "am", "syr": "syr", "div": "dv", "srp_latn": "sr-Latn"}


def bcp47(code: str | None) -> str | None:
    """The BCP 47 tag of a Tesseract language code ("rus" -> "ru", "chi_sim" -> "zh-Hans"; the first
    of codes joined by '+'), or None where it is not known."""
    return _BCP47.get(code.split("+")[0]) if code else None


class LanguagesError(ValueError):
    """A `languages` option that cannot be used; the message says why and what is installed."""


@functools.lru_cache(maxsize=8)
def installed_languages(command: str = "tesseract") -> frozenset[str]:
    """The language packs `command --list-langs` names (osd is no language); none without Tesseract."""
    try:
        listed = subprocess.run([command, "--list-langs"], capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return frozenset()
    names = listed.stdout.splitlines()[1:]   # the first line says where the data is
    return frozenset(name.strip() for name in names if name.strip() and name.strip() != "osd")


def parse_languages(value: str | None, command: str = "tesseract") -> str:
    """'detect' (None or blank too) or codes checked against the installed packs, joined by '+'."""
    if value is None or not value.strip() or value.strip().lower() in (DETECT, "auto"):
        return DETECT
    codes = [code.strip().lower() for code in re.split(r"[+,\s]+", value.strip()) if code.strip()]
    bad = [code for code in codes if not _CODE.match(code)]
    if bad:
        raise LanguagesError(f"{bad[0][:20]!r} is not a Tesseract language code: languages is 'detect' or codes "
                             f"joined by '+', such as 'pol', 'rus+eng' or 'chi_sim'")
    if len(codes) > MAX_LANGUAGES:
        raise LanguagesError(f"{len(codes)} languages; at most {MAX_LANGUAGES} at once")
    installed = installed_languages(command)
    missing = [code for code in codes if code not in installed]
    if missing:
        have = ", ".join(sorted(installed)) or "none (Tesseract is not installed)"
        raise LanguagesError(f"no language pack for {', '.join(missing)} on this server (Debian package "
                             f"tesseract-ocr-{missing[0].replace('_', '-')}); installed: {have}; or use 'detect'")
    return "+".join(dict.fromkeys(codes))


def packs_for_script(script: str, installed: frozenset[str], pack: str | None = None) -> str | None:
    """The Tesseract languages that read a page in `script` (plus English for its Latin words):
    `pack` where it is one of the script's and installed (the language found), else the script's
    first installed; None when no pack for it is installed."""
    codes = [code for code in SCRIPT_LANGUAGES.get(script, ()) if code in installed]
    first = pack if pack in codes else next(iter(codes), None)
    if first is None:
        return None
    return f"{first}+eng" if "eng" in installed and first != "eng" else first


def guess_latin_language(text: str, installed: frozenset[str]) -> str | None:
    """The installed Latin-script language whose frequent words the text holds most of (at least
    three), or None. Words match without their accents, and a `<unk>` in the text matches any
    one letter."""
    return latin_language_evidence(text, installed)[0]


def latin_language_evidence(text: str, installed: frozenset[str]) -> tuple[str | None, float]:
    """`guess_latin_language`'s answer and the share of the text's words that are that language's
    frequent words: a fifth or more in running text of any of them; near none in another script
    read as Latin-looking letters ("PyKOBOJCTBO" for "Руководство")."""
    words = [_plain(word) for word in re.findall(r"(?:<unk>|[^\W\d_])+", text.lower())]
    scores = {}
    for code, stopwords in _PLAIN_STOPWORDS.items():
        if code in installed:
            scores[code] = sum(1 for word in words if _matches(word, stopwords))
    best = max(scores, key=lambda code: scores[code], default=None)
    if best is None or scores[best] < 3:
        return None, 0.0
    return best, scores[best] / len(words)


def _plain(word: str) -> str:
    """The word without accents: the house model reads a letter it cannot write as its plain form
    (Polish 'się' as 'sie'), so language words are matched without them."""
    decomposed = unicodedata.normalize("NFD", word.translate(_UNACCENTED))
    return "".join(char for char in decomposed if not unicodedata.combining(char))


_UNACCENTED = str.maketrans({"ł": "l", "đ": "d", "ø": "o", "ß": "ss", "ı": "i", "æ": "ae", "œ": "oe"})
_PLAIN_STOPWORDS = {code: frozenset(map(_plain, words)) for code, words in STOPWORDS.items()}


def _matches(word: str, stopwords: frozenset[str]) -> bool:
    if "<unk>" not in word:
        return word in stopwords
    pattern = re.compile("".join("." if part == "<unk>" else re.escape(part)
                                 for part in re.split(r"(<unk>)", word)) + "$")
    return any(pattern.match(stopword) for stopword in stopwords)
