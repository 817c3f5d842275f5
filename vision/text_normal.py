"""Text as a reader expects it, from a PDF's text layer or a recogniser alike.

- A spacing accent written before its letter is put on the letter: TeX's text layer writes
  "Ján Mináč" as "J´an Min´aˇc" (the accent glyph, then the letter it sits on), and "naïve"
  as "na¨ıve" (on a dotless i, which becomes an i under its mark).
- Unicode NFC: a letter and its combining marks become the composed letter where one exists.
- Typographic ligatures (U+FB00-FB06: ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ) become their letters, which search and copy
  expect; other compatibility characters (superscripts, full-width forms, maths letters) are kept.
- Soft hyphens (U+00AD, invisible unless a line breaks there) are dropped.
- A micro sign (U+00B5) beside a Greek letter is the Greek mu (U+03BC) it looks like: Tesseract's
  Greek pack writes "πρόγραµµα" with micro signs, which no search for "πρόγραμμα" finds.

`digits_kept` is for what a recogniser read, never for a text layer: a letter O inside a
number ("O.01", "1O5", "3.O") is the digit zero the recogniser took for a letter, because no
word is spelt that way. Only an O that touches a digit, or a decimal point with a digit on
its other side, is changed, so names such as "O2", "-O2", "OK" and "O'Brien" stay.
"""
from __future__ import annotations

import re
import unicodedata

# spacing accent -> the combining mark it stands for (not the backquote, which is code's)
SPACING_ACCENTS = {"\u00a8": "\u0308", "\u00b4": "\u0301", "\u02c7": "\u030c", "\u02d8": "\u0306",
                   "\u02dd": "\u030b", "\u02da": "\u030a", "\u00af": "\u0304", "\u02c6": "\u0302",
                   "\u02dc": "\u0303"}
_ACCENT_BEFORE_LETTER = re.compile(f"([{''.join(SPACING_ACCENTS)}])([^\\W\\d_])")
_DOTLESS = re.compile("[\u0131\u0237](?=[\u0300-\u036f])")   # TeX's ï is ¨ı: a dotless i under the mark
_LIGATURES = {chr(code): unicodedata.normalize("NFKC", chr(code)) for code in range(0xFB00, 0xFB07)}
_SOFT_HYPHEN = "\u00ad"
_GREEK = "\u0370-\u03ff\u1f00-\u1fff"
_MICRO_IN_GREEK = re.compile(f"(?<=[{_GREEK}])\u00b5|\u00b5(?=[{_GREEK}\u00b5]*[{_GREEK}])")


# An O (either case) inside a number: after a digit, or before a decimal mark and a digit,
# with nothing letter-like on either side of the number it sits in.
_O_IN_NUMBER = re.compile(r"(?<![^\W\d_])(?=[\dOo.,]*\d)(?:[\dOo]+[.,]?)+(?![^\W\d_])")
_NUMERIC = r"(?:\d|[.,]\d)"
_DIGIT_O = re.compile(rf"(?<=\d)O|O(?={_NUMERIC})|(?<=\d[.,])O|(?<=\d)o(?={_NUMERIC})|(?<=\d[.,])o(?=\d)")


def is_unmapped(char: str) -> bool:
    """A character that stands for no real one: U+FFFD, private use, control, unassigned (what a
    text layer gives for a glyph its font maps to no Unicode)."""
    return char == "\ufffd" or unicodedata.category(char) in ("Co", "Cc", "Cs", "Cn")


def _compose(match: re.Match) -> str:
    return match.group(2) + SPACING_ACCENTS[match.group(1)]


def normalise_text(text: str) -> str:
    if text.isascii():
        return text
    text = _ACCENT_BEFORE_LETTER.sub(_compose, text)
    text = _DOTLESS.sub(lambda match: "i" if match.group() == "\u0131" else "j", text)
    text = text.replace(_SOFT_HYPHEN, "")
    text = "".join(_LIGATURES.get(char, char) for char in text)
    if "\u00b5" in text:
        text = _MICRO_IN_GREEK.sub("\u03bc", text)
    return unicodedata.normalize("NFC", text)


def digits_kept(text: str) -> str:
    """A recognised line with the letter O read inside numbers turned back into zeros."""
    if "O" not in text and "o" not in text:
        return text
    return _O_IN_NUMBER.sub(_zeros_in_number, text)


def _zeros_in_number(match: re.Match) -> str:
    number = match.group()   # holds a digit: the pattern looks ahead for one
    if number[0] in ".,":
        return number
    if number[0] in "Oo" and len(number) > 1 and number[1].isdigit():
        return number   # "O2", "o3": a name or a label, not a number that starts with zero
    while True:   # "1OOO": each O turned makes its neighbour's case
        turned = _DIGIT_O.sub("0", number)
        if turned == number:
            return number
        number = turned
