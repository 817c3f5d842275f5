"""Text to typeset, from sources available offline.

Training text: the docstrings of Python's standard library (real English prose,
technical vocabulary, punctuation), Faker's English word lists and its
structured fields (names, addresses, companies, dates, amounts, phone numbers,
e-mail addresses, URLs), and random strings that teach the model to read what
it sees rather than what a language model would expect.

Held-out text (evaluation only): the licence texts Debian ships in
/usr/share/common-licenses, and tables of numbers and codes made by a different
generator. Nothing here reads pages of existing PDF documents.

European text (`european_prose`, the fifth fine-tuning phase): the message translations
installed programs ship (`/usr/share/locale/<language>/LC_MESSAGES/*.mo`: coreutils, apt, bash,
GTK ...) in the languages the model's Latin-1 alphabet spells (French, German, Spanish,
Italian, Portuguese, Dutch, Danish, Swedish, Norwegian, Finnish, Icelandic, Catalan,
Galician), and Faker's names, places and words in those locales. One message catalogue in
eight (by a checksum of its name) is held out for evaluation, with the held-out fonts.
No catalogue belongs to a benchmark document's program (`_NOT_EUROPEAN_TEXT`).
"""
from __future__ import annotations

import ast
import functools
import gettext
import unicodedata
import zlib
import random
import string
import sysconfig
from pathlib import Path

from training.house_ocr.charset import CHARACTERS, normalise

_WS = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


def _clean(text: str) -> str:
    return " ".join(normalise(text.translate(_WS)).split())


@functools.lru_cache(maxsize=1)
def stdlib_prose() -> tuple[str, ...]:
    """Docstring paragraphs of the standard library, whitespace-collapsed."""
    root = Path(sysconfig.get_paths()["stdlib"])
    paragraphs: list[str] = []
    for path in sorted(root.glob("*.py")) + sorted(root.glob("*/*.py")):
        if "test" in path.parts or "idlelib" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if not doc:
                    continue
                for para in doc.split("\n\n"):
                    cleaned = _clean(para)
                    if len(cleaned) >= 20 and not cleaned.startswith(">>>"):
                        paragraphs.append(cleaned)
    return tuple(paragraphs)


@functools.lru_cache(maxsize=1)
def licence_prose() -> tuple[str, ...]:
    """Held out: paragraphs of the licence texts Debian ships."""
    paragraphs: list[str] = []
    for path in sorted(Path("/usr/share/common-licenses").iterdir()):
        if path.is_file():
            for para in path.read_text(encoding="utf-8", errors="replace").split("\n\n"):
                cleaned = _clean(para)
                if len(cleaned) >= 20:
                    paragraphs.append(cleaned)
    return tuple(paragraphs)


EUROPEAN_LANGUAGES = ("fr", "de", "es", "it", "pt", "pt_BR", "nl", "da", "sv", "nb", "fi", "is", "ca", "gl")
EUROPEAN_LOCALES = ("fr_FR", "de_DE", "es_ES", "it_IT", "pt_PT", "nl_NL", "da_DK", "no_NO", "de_AT", "fr_CH")
# catalogues of programs whose manuals are benchmark documents: their words stay out of training
_NOT_EUROPEAN_TEXT = ("octave", "gnuplot", "asymptote", "texinfo", "R", "R-base", "RGui", "memoir")


def _held_out_catalogue(name: str) -> bool:
    return zlib.crc32(name.encode()) % 8 == 0


@functools.lru_cache(maxsize=4)
def european_prose(held_out: bool = False, root: Path = Path("/usr/share/locale")) -> tuple[str, ...]:
    """Translated messages of at least three words, whitespace-collapsed and spelled in the
    model's alphabet, from the catalogues of one side of the split."""
    paragraphs: list[str] = []
    for language in EUROPEAN_LANGUAGES:
        for path in sorted((root / language / "LC_MESSAGES").glob("*.mo")):
            if path.stem in _NOT_EUROPEAN_TEXT or _held_out_catalogue(path.stem) != held_out:
                continue
            try:
                with path.open("rb") as handle:
                    catalogue = gettext.GNUTranslations(handle)
            except (OSError, ValueError, UnicodeDecodeError):
                continue
            for key, message in catalogue._catalog.items():   # noqa: SLF001 (gettext has no public iterator)
                if not key or not isinstance(message, str):
                    continue    # the catalogue's header (its metadata), or a plural's index
                # a message with a letter the model cannot spell is left out whole, not respelled
                text = unicodedata.normalize("NFC", " ".join(message.replace("&", "").replace("_", " ").split()))
                cleaned = _clean(text)
                if len(cleaned.split()) >= 3 and len(cleaned) == len(text):
                    paragraphs.append(cleaned)
    return tuple(paragraphs)


def window(paragraphs: tuple[str, ...], rng: random.Random, max_chars: int) -> str:
    """A run of whole words from a random paragraph, at most `max_chars` long."""
    words = rng.choice(paragraphs).split()
    start = rng.randrange(len(words))
    out: list[str] = []
    length = 0
    for word in words[start:]:
        if length + len(word) + (1 if out else 0) > max_chars:
            break
        out.append(word)
        length += len(word) + (1 if len(out) > 1 else 0)
    return " ".join(out) or words[start][:max_chars]


class TrainingText:
    """Lines of training text; deterministic for a given seed."""

    def __init__(self, seed: int):
        from faker import Faker

        self.rng = random.Random(seed)
        self.fake = Faker("en_US")
        self.fake.seed_instance(seed)
        self.prose = stdlib_prose()
        self._technical = None
        self._european = None

    def line(self) -> str:
        rng = self.rng
        max_chars = rng.choice([rng.randint(1, 12), rng.randint(8, 40), rng.randint(30, 90), rng.randint(30, 90)])
        kind = rng.random()
        if kind < 0.40:
            text = window(self.prose, rng, max_chars)
        elif kind < 0.55:
            text = self._sentence(max_chars)
        elif kind < 0.82:
            text = self._field()
        else:
            text = self._random_string(max_chars)
        text = _clean(text)
        if rng.random() < 0.06:
            text = text.upper()
        elif rng.random() < 0.04:
            text = text.title()
        return text[:120] or "."

    def long_line(self) -> str:
        """A full-width line of body text (70-150 characters), as pages set them."""
        rng = self.rng
        max_chars = rng.randint(70, 150)
        kind = rng.random()
        if kind < 0.6:
            text = window(self.prose, rng, max_chars)
            while len(text) < max_chars - 20:   # a short paragraph: continue with the next one
                text += " " + window(self.prose, rng, max_chars - len(text) - 1)
        elif kind < 0.85:
            text = self._sentence(max_chars)
        else:
            text = ""
            while len(text) < max_chars - 15:
                text += (rng.choice(["  ", " ", " · ", " | ", ", "]) if text else "") + self._field()
        text = _clean(text)[:160]
        return text or "."

    def european_line(self) -> str:
        """A line in a European language: a translated message, or a name, place, company or
        run of words of Faker's European locales, at any length the other lines have."""
        rng = self.rng
        if self._european is None:
            from faker import Faker

            self._european = Faker(list(EUROPEAN_LOCALES))
            self._european.seed_instance(rng.getrandbits(32))
        fake = self._european[rng.choice(EUROPEAN_LOCALES)]
        max_chars = rng.choice([rng.randint(8, 40), rng.randint(30, 90), rng.randint(60, 140)])
        kind = rng.random()
        if kind < 0.55 and european_prose():   # a machine without the catalogues gets Faker's text only
            text = window(european_prose(), rng, max_chars)
            while len(text) < max_chars - 25 and rng.random() < 0.6:
                text += " " + window(european_prose(), rng, max_chars - len(text) - 1)
        elif kind < 0.8:
            fields = [fake.name, fake.city, fake.street_address, fake.company, lambda: fake.address().replace("\n", ", "),
                      lambda: fake.name() + ", " + fake.city(), lambda: fake.date(pattern="%d %B %Y")]
            text = rng.choice(fields)()
        else:
            text = fake.sentence(nb_words=rng.randint(3, 14))
        text = _clean(text)
        if rng.random() < 0.05:
            text = text.upper()
        return text[:160] or "."

    def repeat_line(self) -> str:
        """A line of one character or a short unit over and over, or a long run of digits: rules
        typed as `-----`, dot leaders, zero-filled numbers, check digits, `ababab`. Fine-tuning on
        text without them made the model misread a run of forty zeros (the fifth phase), so a
        share of these goes with any phase that moves it far from its first data."""
        rng = self.rng
        kind = rng.random()
        if kind < 0.35:     # one character, repeated
            text = rng.choice("00001112223334567890--==__..**~~##++x/") * rng.randint(3, 80)   # no l/I/|, o/O: fonts draw them alike
        elif kind < 0.50:   # a short unit, repeated
            unit = "".join(rng.choice(string.ascii_letters + string.digits + ".-=*/ ") for _ in range(rng.randint(2, 4)))
            text = unit * rng.randint(3, max(3, 80 // len(unit)))
        elif kind < 0.75:   # a long number, grouped or not, often zero-padded
            digits = "0" * rng.randint(0, 30) + "".join(rng.choice(string.digits) for _ in range(rng.randint(1, 30)))
            if rng.random() < 0.4:
                step = rng.choice([3, 4, 5])
                text = rng.choice([" ", "-", ".", ","]).join(digits[i:i + step] for i in range(0, len(digits), step))
            else:
                text = digits
        else:               # a label and a value across a run of leaders or a rule
            label = rng.choice([self.fake.word().title(), self.fake.sentence(nb_words=rng.randint(2, 5))[:-1],
                                f"{rng.randint(1, 30)}.{rng.randint(1, 20)} {self.fake.word().title()}"])
            run = rng.choice(". -_=*") * rng.randint(4, 60)
            value = rng.choice([str(rng.randint(1, 999)), f"{rng.uniform(0, 99999):,.2f}", "0" * rng.randint(2, 12)])
            text = f"{label} {run} {value}"
        return text[:150]

    def technical_line(self) -> str:
        """A line of the technical print that prose and fields rarely give (markup and program
        source, index and bibliography entries, inline maths): `technical.py`, which says where its
        text comes from."""
        if self._technical is None:
            from training.house_ocr.technical import TechnicalText

            self._technical = TechnicalText(self.rng, self.fake, self._words)
        return _clean(self._technical.line())[:150] or "."

    def _words(self, low: int, high: int) -> str:
        return " ".join(self.fake.word() for _ in range(self.rng.randint(low, high)))

    def _sentence(self, max_chars: int) -> str:
        fake = self.fake
        text = fake.sentence(nb_words=self.rng.randint(3, 16))
        while len(text) < max_chars and self.rng.random() < 0.7:
            text += " " + fake.sentence(nb_words=self.rng.randint(3, 12))
        cut = text[:max_chars]
        return cut.rsplit(" ", 1)[0] if " " in cut and len(text) > max_chars else cut

    def _field(self) -> str:
        fake, rng = self.fake, self.rng
        choices = [
            lambda: fake.name(), lambda: fake.street_address(), lambda: fake.address().replace("\n", ", "),
            lambda: fake.company(), lambda: fake.catch_phrase(), lambda: fake.bs(), lambda: fake.job(),
            lambda: fake.phone_number(), lambda: fake.email(), lambda: fake.url(), lambda: fake.uri(),
            lambda: fake.date(pattern=rng.choice(["%d/%m/%Y", "%m/%d/%y", "%Y-%m-%d", "%d %B %Y", "%B %d, %Y",
                                                  "%d.%m.%Y", "%a %d %b %Y"])),
            lambda: fake.time(), lambda: fake.iban(), lambda: fake.ean13(), lambda: fake.isbn13(),
            lambda: fake.credit_card_number(), lambda: fake.postcode(), lambda: fake.city() + ", " + fake.state_abbr(),
            lambda: f"{rng.choice(['$', '€', '£', '', 'USD ', 'EUR '])}{rng.uniform(0, 99999):,.2f}",
            lambda: f"{rng.randint(1, 99)} x {fake.word().title()} @ {rng.uniform(0, 999):.2f}",
            lambda: f"{rng.choice(['Invoice', 'Order', 'Ref', 'Account', 'PO', 'Item'])} "
                    f"{rng.choice(['No.', '#', 'Nr', 'ID:', ''])} {rng.randint(0, 10 ** rng.randint(2, 9))}",
            lambda: f"{rng.choice(['Total', 'Subtotal', 'VAT', 'Tax', 'Balance due', 'Discount'])}"
                    f"{rng.choice([':', '', ' (%d%%)' % rng.randint(1, 25)])} {rng.uniform(0, 9999):.2f}",
            lambda: f"{rng.randint(1, 40)}.{rng.randint(1, 20)} {fake.sentence(nb_words=rng.randint(2, 6))}",
            lambda: f"{rng.choice(['•', '-', '*', '1.', 'a)', '(iv)', '§ 4'])} {fake.sentence(nb_words=rng.randint(3, 9))}",
            lambda: f"“{fake.sentence(nb_words=rng.randint(3, 8))[:-1]}” — {fake.name()}",
            lambda: f"{rng.randint(0, 100)}% {rng.choice(['±', '×', '÷', '≈', '≤', '≥', '°C', 'µm', '½'])} {rng.randint(0, 999)}",
            lambda: "   ".join(f"{rng.uniform(0, 999):.{rng.randint(0, 3)}f}" for _ in range(rng.randint(2, 6))),
            lambda: f"Page {rng.randint(1, 300)} of {rng.randint(1, 300)}",
            lambda: f"Tel. {fake.phone_number()} · Fax {fake.phone_number()}",
        ]
        return rng.choice(choices)()

    def _random_string(self, max_chars: int) -> str:
        rng = self.rng
        pools = [string.ascii_letters + string.digits, string.digits + ".,-/:", string.ascii_uppercase + string.digits,
                 CHARACTERS, string.ascii_lowercase]
        words = []
        total = 0
        target = rng.randint(1, max(1, max_chars))
        while total < target:
            pool = rng.choice(pools)
            word = "".join(rng.choice(pool) for _ in range(rng.randint(1, 10)))
            words.append(word)
            total += len(word) + 1
        return " ".join(words)
