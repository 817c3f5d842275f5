"""Text as a reader expects it, from a PDF's text layer or a recogniser alike.

- A spacing accent written before its letter is put on the letter: TeX's text layer writes
  "Ján Mináč" as "J´an Min´aˇc" (the accent glyph, then the letter it sits on), and "naïve"
  as "na¨ıve" (on a dotless i, which becomes an i under its mark).
- Unicode NFC: a letter and its combining marks become the composed letter where one exists.
- Typographic ligatures (U+FB00-FB06: ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ) become their letters, which search and copy
  expect; other compatibility characters (superscripts, full-width forms, maths letters) are kept.
- Soft hyphens (U+00AD, invisible unless a line breaks there) are dropped.
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


def _compose(match: re.Match) -> str:
    return match.group(2) + SPACING_ACCENTS[match.group(1)]


def normalise_text(text: str) -> str:
    if text.isascii():
        return text
    text = _ACCENT_BEFORE_LETTER.sub(_compose, text)
    text = _DOTLESS.sub(lambda match: "i" if match.group() == "\u0131" else "j", text)
    text = text.replace(_SOFT_HYPHEN, "")
    text = "".join(_LIGATURES.get(char, char) for char in text)
    return unicodedata.normalize("NFC", text)
