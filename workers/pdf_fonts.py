"""Which font a searchable PDF's invisible line is set in, so every script's text is in the PDF.

A PDF keeps text as glyphs of a font; a character the font has no glyph for is lost (the base-14
Helvetica the text layer used carries Latin-1 only: Greek, Cyrillic, Arabic or Chinese came out as
'?'). Each line is set in the first of these that has a glyph for every character, else in the
one that has the most:

| font                        | from                                    | covers |
|-----------------------------|-----------------------------------------|--------|
| DejaVu Sans                 | Debian fonts-dejavu-core                | Latin, Greek, Cyrillic, Arabic, Hebrew, Armenian, Georgian |
| FreeSerif                   | Debian fonts-freefont-ttf               | the above and Devanagari, Bengali, Tamil, Thai, Ethiopic... |
| Droid Sans Fallback ("cjk") | inside PyMuPDF                          | Han, kana, Hangul |

Fonts are embedded and then cut down to the glyphs used (`pymupdf.Document.subset_fonts`), so a
page carries a few kilobytes of font, not megabytes. The text is invisible: only which characters
it holds matters, and where; right-to-left lines are set in the order their glyphs stand
(`vision.scripts.visual_order`), which text extraction turns back into logical order.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import pymupdf

FONT_FILES = (("uni", Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")),
              ("uniserif", Path("/usr/share/fonts/truetype/freefont/FreeSerif.ttf")))
CJK = "cjk"                       # PyMuPDF's built-in CJK font
FALLBACK = "helv"                 # base-14 Helvetica: Latin-1 only, for a machine without the fonts above


@dataclass(frozen=True)
class LineFont:
    name: str                     # the page's resource name (insert_font's fontname)
    font: pymupdf.Font
    file: Path | None             # the font file; None: built into PyMuPDF

    @property
    def ascender(self) -> float:
        return self.font.ascender

    @property
    def descender(self) -> float:
        return self.font.descender

    def covers(self, char: str) -> bool:
        return _has_glyph(self.name, char)


@functools.cache
def available_fonts() -> tuple[LineFont, ...]:
    """The fonts this machine has, in the order they are tried."""
    fonts = [LineFont(name, pymupdf.Font(fontfile=str(path)), path) for name, path in FONT_FILES if path.exists()]
    try:
        fonts.append(LineFont(CJK, pymupdf.Font(CJK), None))
    except RuntimeError:   # a PyMuPDF built without its CJK font
        pass
    return tuple(fonts) or (LineFont(FALLBACK, pymupdf.Font(FALLBACK), None),)


@functools.lru_cache(maxsize=65536)
def _has_glyph(name: str, char: str) -> bool:
    font = next(font for font in available_fonts() if font.name == name)
    return char.isspace() or font.font.has_glyph(ord(char)) != 0


def font_for(text: str) -> LineFont:
    """The first font with every character of `text`, else the one with the most."""
    fonts = available_fonts()
    chars = set(text)
    for font in fonts:
        if all(font.covers(char) for char in chars):
            return font
    return max(fonts, key=lambda font: sum(font.covers(char) for char in text))


def ensure_on_page(page: pymupdf.Page, font: LineFont, inserted: set[str]) -> None:
    """Embed `font` in the page once (`inserted` holds the names already there)."""
    if font.name in inserted or font.name == FALLBACK:
        return
    if font.file is not None:
        page.insert_font(fontname=font.name, fontfile=str(font.file))
    else:
        page.insert_font(fontname=font.name, fontbuffer=font.font.buffer)
    inserted.add(font.name)
