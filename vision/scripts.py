"""Which writing system a piece of text is in, from its characters alone.

Script names are Tesseract's OSD names (`tesseract --psm 0` prints them as "Script: Cyrillic"),
so a script found on the image and one found in text compare as equal strings: Latin, Greek,
Cyrillic, Armenian, Hebrew, Arabic, Devanagari, Bengali, Tamil, Thai, Georgian, Hangul, Han,
Japanese (kana, with or without Han) and a few more. Characters without a script of their own
(digits, punctuation, spaces, symbols) count for none.

Right-to-left scripts (Hebrew, Arabic, Syriac, Thaana) are kept in logical order everywhere in
ocrserve's results; `visual_order` makes the left-to-right glyph order a PDF text layer needs.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import Counter

# (first code point, last code point, script), sorted; ranges the Unicode blocks give each script
_RANGES = sorted([
    (0x0041, 0x005A, "Latin"), (0x0061, 0x007A, "Latin"), (0x00C0, 0x024F, "Latin"), (0x1E00, 0x1EFF, "Latin"),
    (0x0250, 0x02AF, "Latin"), (0x2C60, 0x2C7F, "Latin"), (0xA720, 0xA7FF, "Latin"), (0xFB00, 0xFB06, "Latin"),
    (0xFF21, 0xFF3A, "Latin"), (0xFF41, 0xFF5A, "Latin"),
    (0x0370, 0x03FF, "Greek"), (0x1F00, 0x1FFF, "Greek"),
    (0x0400, 0x052F, "Cyrillic"), (0x1C80, 0x1C8F, "Cyrillic"), (0x2DE0, 0x2DFF, "Cyrillic"),
    (0xA640, 0xA69F, "Cyrillic"),
    (0x0530, 0x058F, "Armenian"), (0x0590, 0x05FF, "Hebrew"), (0xFB1D, 0xFB4F, "Hebrew"),
    (0x0600, 0x06FF, "Arabic"), (0x0750, 0x077F, "Arabic"), (0x08A0, 0x08FF, "Arabic"),
    (0xFB50, 0xFDFF, "Arabic"), (0xFE70, 0xFEFF, "Arabic"),
    (0x0700, 0x074F, "Syriac"), (0x0780, 0x07BF, "Thaana"),
    (0x0900, 0x097F, "Devanagari"), (0x0980, 0x09FF, "Bengali"), (0x0A00, 0x0A7F, "Gurmukhi"),
    (0x0A80, 0x0AFF, "Gujarati"), (0x0B00, 0x0B7F, "Oriya"), (0x0B80, 0x0BFF, "Tamil"), (0x0C00, 0x0C7F, "Telugu"),
    (0x0C80, 0x0CFF, "Kannada"), (0x0D00, 0x0D7F, "Malayalam"), (0x0D80, 0x0DFF, "Sinhala"),
    (0x0E00, 0x0E7F, "Thai"), (0x0E80, 0x0EFF, "Lao"), (0x0F00, 0x0FFF, "Tibetan"), (0x1000, 0x109F, "Myanmar"),
    (0x10A0, 0x10FF, "Georgian"), (0x1200, 0x139F, "Ethiopic"), (0x1780, 0x17FF, "Khmer"),
    (0x1100, 0x11FF, "Hangul"), (0x3130, 0x318F, "Hangul"), (0xAC00, 0xD7AF, "Hangul"),
    (0x3040, 0x30FF, "Japanese"), (0x31F0, 0x31FF, "Japanese"), (0xFF66, 0xFF9F, "Japanese"),
    (0x2E80, 0x2FDF, "Han"), (0x3005, 0x3007, "Han"), (0x3400, 0x4DBF, "Han"), (0x4E00, 0x9FFF, "Han"),
    (0xF900, 0xFAFF, "Han"), (0x20000, 0x3134F, "Han"),
])
_STARTS = [start for start, _, _ in _RANGES]
RIGHT_TO_LEFT = frozenset({"Hebrew", "Arabic", "Syriac", "Thaana"})
# scripts written without spaces between words: scored by characters, not words
UNSPACED = frozenset({"Han", "Japanese", "Thai", "Lao", "Khmer", "Myanmar", "Tibetan"})


def script_of_char(char: str) -> str | None:
    """The script of one character, or None for digits, punctuation, spaces and symbols."""
    code = ord(char)
    k = bisect_right(_STARTS, code) - 1
    if k >= 0 and _RANGES[k][0] <= code <= _RANGES[k][1]:
        return _RANGES[k][2]
    return None


def script_counts(text: str) -> Counter[str]:
    """How many characters of each script `text` holds."""
    return Counter(script for script in map(script_of_char, text) if script is not None)


def script_of_text(text: str) -> str | None:
    """The script most of the text's letters are in; a page or line of Japanese, whose kanji are
    Han characters, is Japanese as soon as it holds kana. None: no letters at all."""
    counts = script_counts(text)
    if not counts:
        return None
    if counts.get("Japanese") and counts.get("Han"):
        counts["Japanese"] += counts.pop("Han")
    return counts.most_common(1)[0][0]


def is_right_to_left(char: str) -> bool:
    return script_of_char(char) in RIGHT_TO_LEFT


def visual_order(text: str) -> str:
    """One line in the left-to-right order its glyphs stand in, from logical order: runs of
    right-to-left letters (with the spaces and punctuation between them) reversed, and in a line
    whose first strong letter is right-to-left the order of the runs reversed too. A short form
    of the Unicode bidirectional algorithm (one embedding level, no explicit marks), enough for a
    line of text; PDF text extraction reverses it back to logical order."""
    runs: list[tuple[bool, str]] = []   # (right to left, text) in logical order
    pending = ""                        # neutral characters whose run is not known yet
    first_rtl: bool | None = None       # the direction of the line's first strong character
    for char in text:
        script = script_of_char(char)
        if script is None and not char.isdigit():
            pending += char
            continue
        rtl = script in RIGHT_TO_LEFT
        first_rtl = rtl if first_rtl is None else first_rtl
        if runs and runs[-1][0] == rtl:
            runs[-1] = (rtl, runs[-1][1] + pending + char)
        else:
            if pending:   # neutrals between runs of two directions belong to neither: a run of their own
                runs.append((False, pending))
            runs.append((rtl, char))
        pending = ""
    if pending:
        runs.append((False, pending))
    if not first_rtl and not any(rtl for rtl, _ in runs):
        return text
    pieces = [run[::-1] if rtl else run for rtl, run in runs]
    return "".join(reversed(pieces)) if first_rtl else "".join(pieces)
