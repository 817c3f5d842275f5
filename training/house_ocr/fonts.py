"""Debian's font packages, split into the fonts we train on and the ones we hold out.

The held-out families (installed by scripts/setup.sh like the rest) never appear
in training data, so the evaluation measures reading of unseen typefaces.
Each font comes with the set of characters its cmap covers, so text is only ever
rendered in a font that has every glyph (no .notdef boxes in training data).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from fontTools.ttLib import TTFont

from training.house_ocr.charset import CHARACTERS

FONT_ROOTS = (Path("/usr/share/fonts"), Path("/usr/share/texmf/fonts"), Path("/usr/share/texlive/texmf-dist/fonts"))
# Held out for evaluation: path fragments (lower case).
HELD_OUT = ("linux-libertine", "linlibertine", "open-sans", "opensans", "roboto", "courier-prime", "courierprime",
            "notomono", "noto/", "ebgaramond", "lato")
_SKIP = ("smallcaps", "math", "symbol", "dingbat", "d050000l", "z003", "fontawesome", "emoji", "icon",
         # handwriting fonts (training.handwriting's): print is what the house model reads
         "fifthhorseman", "dancingscript", "kristi", "kaushanscript", "femkeklaver", "breip", "humor-sans",
         "ecolier", "joscelyn", "bwht")


@dataclass(frozen=True)
class Font:
    path: str
    name: str
    monospace: bool
    covered: frozenset[str]

    def covers(self, text: str) -> bool:
        return all(ch in self.covered for ch in text)


def load_font(path: Path) -> Font | None:
    try:
        font = TTFont(str(path), fontNumber=0, lazy=True)
        cmap = font.getBestCmap() or {}
        covered = frozenset(ch for ch in CHARACTERS if ord(ch) in cmap)
        monospace = bool(font["post"].isFixedPitch) if "post" in font else False
        name = font["name"].getDebugName(4) or path.stem
    except Exception:  # a font fontTools cannot parse is simply not used
        return None
    # a text font covers at least printable ASCII
    if sum(1 for c in CHARACTERS[:95] if c in covered) < 95:
        return None
    return Font(str(path), name, monospace, covered)


@functools.lru_cache(maxsize=None)
def all_fonts() -> tuple[Font, ...]:
    paths = sorted({p for root in FONT_ROOTS if root.exists()
                    for p in root.rglob("*") if p.suffix.lower() in (".ttf", ".otf")})
    fonts = []
    for path in paths:
        lowered = str(path).lower()
        if any(s in lowered for s in _SKIP):
            continue
        loaded = load_font(path)
        if loaded is not None:
            fonts.append(loaded)
    return tuple(fonts)


def is_held_out(font: Font) -> bool:
    lowered = font.path.lower()
    return any(fragment in lowered for fragment in HELD_OUT)


def training_fonts() -> tuple[Font, ...]:
    return tuple(f for f in all_fonts() if not is_held_out(f))


def held_out_fonts() -> tuple[Font, ...]:
    return tuple(f for f in all_fonts() if is_held_out(f))
