r"""LaTeX for a displayed formula of a born-digital PDF, from where its glyphs and rules sit.

A PDF typeset by TeX keeps every glyph of a formula with its font, size and baseline, and draws
fraction bars and radical overlines as rules; its text layer's characters alone ("E0il 2l + 1
l (l + 1)") lose the structure. This module rebuilds it:

| step | how |
|---|---|
| glyphs | PyMuPDF's `rawdict` characters in the region, each mapped to a LaTeX token: Unicode maths (Greek, operators, relations, arrows) to commands; the big-symbol fonts (cmex, txex, ...), whose characters come out as their raw codes ("X" for a display sum), through TeX's OMX table; bold fonts to `\mathbf`, calligraphic capitals of the symbol fonts to `\mathcal`; upright letter runs that spell an operator name to `\sin`, `\det` ..., other upright words to `\text` |
| fractions, radicals, overlines | each rule (a stroked line or a thin filled rectangle), narrowest first: items above and below it within its span make `\frac{}{}`; a radical sign ending where the rule starts makes `\sqrt{}`; items only below a short rule make `\overline{}` |
| limits | items centred above or below a sum, product, union or intersection (within its width) make its `_{}` and `^{}`; a display integral's, at its right by its top and foot, likewise |
| over relations | small items centred over a relation make `\overset{}{}`, over a long arrow ("-" run into "->") `\xrightarrow{}`; a slash over a relation negates it (`\notin`, `\ne`) |
| rows | what is left is cut into rows at gaps between the baselines of its full-size glyphs (an `align` display's lines; each row is one formula) |
| scripts | in a row, the glyphs' most common size and the median baseline at it set the main line; smaller items above it are superscripts, below it subscripts, of the item before them, each group read again the same way (scripts of scripts) |
| spacing | TeX's own spacing between atoms is left to the renderer; a gap of a quad or more becomes `\quad`/`\qquad` |
| equation numbers | a parenthesised number at the far right or left, apart from the rest, becomes `\tag{}` |

It reads what the PDF holds and nothing else: a formula drawn as paths (no glyphs), or an image,
gives None. Scanned pages have no glyphs; formulas there stay as the recogniser reads them.
"""
from __future__ import annotations

import re
import statistics
import unicodedata
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace

import pymupdf

# the pieces a horizontal brace (\underbrace, \overbrace) is set from, with rules between them
_BRACE_PIECE = "\u23b4piece"
_UNDERBRACE_START = "\x7c"    # an underbrace's left end (an overbrace starts with 0x7A)

# TeX's OMX encoding (cmex10 and the fonts that copy it: txex, pxex, ...): code -> symbol
_OMX = {
    0x00: "(", 0x01: ")", 0x02: "[", 0x03: "]", 0x04: r"\lfloor", 0x05: r"\rfloor", 0x06: r"\lceil",
    0x07: r"\rceil", 0x08: r"\{", 0x09: r"\}", 0x0A: r"\langle", 0x0B: r"\rangle", 0x0C: "|", 0x0D: r"\|",
    0x0E: "/", 0x0F: r"\backslash", 0x10: "(", 0x11: ")", 0x12: "(", 0x13: ")", 0x14: "[", 0x15: "]",
    0x16: r"\lfloor", 0x17: r"\rfloor", 0x18: r"\lceil", 0x19: r"\rceil", 0x1A: r"\{", 0x1B: r"\}",
    0x1C: r"\langle", 0x1D: r"\rangle", 0x1E: "/", 0x1F: r"\backslash", 0x20: "(", 0x21: ")", 0x22: "[",
    0x23: "]", 0x24: r"\lfloor", 0x25: r"\rfloor", 0x26: r"\lceil", 0x27: r"\rceil", 0x28: r"\{", 0x29: r"\}",
    0x2A: r"\langle", 0x2B: r"\rangle", 0x2C: "/", 0x2D: r"\backslash", 0x2E: "/", 0x2F: r"\backslash",
    0x30: "(", 0x31: ")", 0x32: "[", 0x33: "]", 0x34: "[", 0x35: "]", 0x36: "[", 0x37: "]", 0x38: r"\{",
    0x39: r"\}", 0x3A: r"\{", 0x3B: r"\}", 0x3C: r"\{", 0x3D: r"\}", 0x3E: r"\{", 0x3F: "|",
    0x40: "(", 0x41: ")", 0x42: "(", 0x43: ")", 0x44: r"\langle", 0x45: r"\rangle", 0x46: r"\bigsqcup",
    0x47: r"\bigsqcup", 0x48: r"\oint", 0x49: r"\oint", 0x4A: r"\bigodot", 0x4B: r"\bigodot",
    0x4C: r"\bigoplus", 0x4D: r"\bigoplus", 0x4E: r"\bigotimes", 0x4F: r"\bigotimes", 0x50: r"\sum",
    0x51: r"\prod", 0x52: r"\int", 0x53: r"\bigcup", 0x54: r"\bigcap", 0x55: r"\biguplus", 0x56: r"\bigwedge",
    0x57: r"\bigvee", 0x58: r"\sum", 0x59: r"\prod", 0x5A: r"\int", 0x5B: r"\bigcup", 0x5C: r"\bigcap",
    0x5D: r"\biguplus", 0x5E: r"\bigwedge", 0x5F: r"\bigvee", 0x60: r"\coprod", 0x61: r"\coprod",
    0x62: r"\widehat{}", 0x63: r"\widehat{}", 0x64: r"\widehat{}", 0x65: r"\widetilde{}", 0x66: r"\widetilde{}",
    0x67: r"\widetilde{}", 0x68: "[", 0x69: "]", 0x6A: r"\lfloor", 0x6B: r"\rfloor", 0x6C: r"\lceil",
    0x6D: r"\rceil", 0x6E: r"\{", 0x6F: r"\}", 0x70: "√", 0x71: "√", 0x72: "√", 0x73: "√", 0x74: "√",
    0x75: "√", 0x76: "√", 0x77: "|", 0x78: "|", 0x79: "|", 0x7A: _BRACE_PIECE, 0x7B: _BRACE_PIECE,
    0x7C: _BRACE_PIECE, 0x7D: _BRACE_PIECE,
    0x7E: "|", 0x7F: "|",
}
# pieces of a tall bracket, as the big-symbol fonts' ToUnicode maps them (Apple's private-use
# codes: top, extension and bottom of each; the brace's middle too)
_PIECES = {**dict.fromkeys("\uf8eb\uf8ec\uf8ed", "("), **dict.fromkeys("\uf8f6\uf8f7\uf8f8", ")"),
           **dict.fromkeys("\uf8ee\uf8ef\uf8f0", "["), **dict.fromkeys("\uf8f9\uf8fa\uf8fb", "]"),
           **dict.fromkeys("\uf8f1\uf8f2\uf8f3\uf8f4", r"\{"), **dict.fromkeys("\uf8fc\uf8fd\uf8fe", r"\}"),
           "\uf8e6": "|"}
_OMX_FONT = re.compile(r"(^|\+)(cmex|txex|pxex|ntxex|zxex|esint|mathex|eusm?ex|lmex|ptmex|rsfsex|stixex|fdsymbolex)",
                       re.IGNORECASE)
_BOLD_FONT = re.compile(r"bold|-medi|cmbx|cmmib|cmbsy|bx\d|-bd|semibold|black", re.IGNORECASE)
_ITALIC_FONT = re.compile(r"ital|oblique|cmmi|cmti|mathit|rtxmi|-it\b|italic|mi\d", re.IGNORECASE)
_TYPEWRITER_FONT = re.compile(r"cmtt|sftt|lmmono|lmtt|txtt|courier|pcrr|mono|inconsolata|typewriter", re.IGNORECASE)
_OMS_FONT = re.compile(r"cmsy|cmbsy", re.IGNORECASE)   # TeX's OMS-encoded maths symbol fonts
_SYMBOL_FONT = re.compile(r"cmsy|txsy|pxsy|msam|msbm|rtxsy|symbol", re.IGNORECASE)
# alphabets of their own fonts: amssymb's blackboard bold (msbm), Euler fraktur, Ralph Smith's script
_ALPHABET_FONTS = ((re.compile(r"msbm|bbold|bbm|dsrom|txmia|pxmia", re.IGNORECASE), r"\mathbb"),
                   (re.compile(r"eufm|eufb|yfrak|frak", re.IGNORECASE), r"\mathfrak"),
                   (re.compile(r"rsfs|eusm|eusb", re.IGNORECASE), r"\mathscr"))
# fonts only maths is set in (TeX's maths italic, symbols, extension; newtx, mathptmx, Latin Modern,
# STIX, Cambria Math ...): their glyphs in a line of prose are inline maths
_MATHS_FONT = re.compile(r"cmmi|cmsy|cmex|cmbsy|cmmib|rtxmi|rtxsy|txmi|txsy|txex|pxmi|pxsy|pxex|ntxmi|ntxsy|zxmi|"
                         r"lmmi|lmsy|lmex|msam|msbm|eufm|eusm|rsfs|stixmath|xits|cambriamath|cambria-math|"
                         r"libertinusmath|newtxmath|mathit|mathsy|mathex", re.IGNORECASE)

_UNICODE = {
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ϵ": r"\epsilon", "ε": r"\varepsilon",
    "ζ": r"\zeta", "η": r"\eta", "θ": r"\theta", "ϑ": r"\vartheta", "ι": r"\iota", "κ": r"\kappa",
    "λ": r"\lambda", "μ": r"\mu", "µ": r"\mu", "ν": r"\nu", "ξ": r"\xi", "π": r"\pi", "ϖ": r"\varpi",
    "ρ": r"\rho", "ϱ": r"\varrho", "σ": r"\sigma", "ς": r"\varsigma", "τ": r"\tau", "υ": r"\upsilon",
    "ϕ": r"\phi", "φ": r"\varphi", "χ": r"\chi", "ψ": r"\psi", "ω": r"\omega", "Γ": r"\Gamma", "Δ": r"\Delta",
    "Θ": r"\Theta", "Λ": r"\Lambda", "Ξ": r"\Xi", "Π": r"\Pi", "Σ": r"\Sigma", "Υ": r"\Upsilon", "Φ": r"\Phi",
    "Ψ": r"\Psi", "Ω": r"\Omega", "∆": r"\Delta", "\u2126": r"\Omega", "\u0338": r"\not",
    "−": "-", "×": r"\times", "·": r"\cdot", "⋅": r"\cdot", "±": r"\pm", "∓": r"\mp", "÷": r"\div", "∗": r"\ast",
    "∘": r"\circ", "•": r"\bullet", "⊕": r"\oplus", "⊗": r"\otimes", "⊙": r"\odot", "†": r"\dagger",
    "≤": r"\le", "≥": r"\ge", "≦": r"\leqq", "≧": r"\geqq", "≪": r"\ll", "≫": r"\gg", "≠": r"\ne", "≈": r"\approx",
    "≡": r"\equiv", "∼": r"\sim", "≃": r"\simeq", "≅": r"\cong", "∝": r"\propto", "≺": r"\prec", "≻": r"\succ",
    "∈": r"\in", "∉": r"\notin", "∋": r"\ni", "⊂": r"\subset", "⊃": r"\supset", "⊆": r"\subseteq",
    "⊇": r"\supseteq", "∪": r"\cup", "∩": r"\cap", "∧": r"\wedge", "∨": r"\vee", "¬": r"\neg", "∀": r"\forall",
    "∃": r"\exists", "∅": r"\emptyset", "∞": r"\infty", "∂": r"\partial", "∇": r"\nabla", "ℏ": r"\hbar",
    "ℓ": r"\ell", "℘": r"\wp", "ℜ": r"\Re", "ℑ": r"\Im", "ℵ": r"\aleph", "→": r"\to", "←": r"\leftarrow",
    "↔": r"\leftrightarrow", "⇒": r"\Rightarrow", "⇐": r"\Leftarrow", "⇔": r"\Leftrightarrow",
    "⟶": r"\longrightarrow", "↦": r"\mapsto", "↑": r"\uparrow", "↓": r"\downarrow", "…": r"\dots",
    "⋯": r"\cdots", "⋮": r"\vdots", "⋱": r"\ddots", "′": "'", "″": "''", "∑": r"\sum", "∏": r"\prod",
    "∐": r"\coprod", "∫": r"\int", "∮": r"\oint", "⋃": r"\bigcup", "⋂": r"\bigcap", "⟨": r"\langle",
    "⟩": r"\rangle", "‖": r"\|", "⌊": r"\lfloor", "⌋": r"\rfloor", "⌈": r"\lceil", "⌉": r"\rceil",
    "{": r"\{", "}": r"\}", "\\": r"\backslash", "#": r"\#", "$": r"\$", "%": r"\%", "&": r"\&", "_": r"\_",
    "^": r"\hat{}", "~": r"\sim", "∣": r"\mid", "⊥": r"\perp", "∥": r"\|", "△": r"\triangle",
    "□": r"\square", "♯": r"\sharp", "♭": r"\flat", "⊢": r"\vdash", "⊨": r"\models", "∖": r"\setminus",
    "◦": r"\circ", "⊔": r"\sqcup", "⊓": r"\sqcap", "⊎": r"\uplus", "⌣": r"\smile", "⌢": r"\frown",
    "Å": r"\text{Å}", "ℝ": r"\mathbb{R}", "ℕ": r"\mathbb{N}", "ℤ": r"\mathbb{Z}", "ℚ": r"\mathbb{Q}",
    "ℂ": r"\mathbb{C}",
    "⎛": "(", "⎜": "(", "⎝": "(", "⎞": ")", "⎟": ")", "⎠": ")", "⎡": "[", "⎢": "[", "⎣": "[", "⎤": "]",
    "⎥": "]", "⎦": "]", "⎧": r"\{", "⎨": r"\{", "⎩": r"\{", "⎪": r"\{", "⎫": r"\}", "⎬": r"\}", "⎭": r"\}",
}
# Unicode for the big-symbol fonts' glyphs, which pdfTeX's fonts map to no character: what the
# text layer says for them (`big_symbol_text`), so a page of formulas is not taken for a font without
# a ToUnicode map
_BIG_UNICODE = {**{latex: char for char, latex in _UNICODE.items() if len(char) == 1},
                "(": "(", ")": ")", "[": "[", "]": "]", "|": "|", "/": "/", "√": "√", r"\{": "{", r"\}": "}",
                r"\bigsqcup": "⨆", r"\bigodot": "⨀", r"\bigoplus": "⨁", r"\bigotimes": "⨂", r"\biguplus": "⨄",
                r"\bigwedge": "⋀", r"\bigvee": "⋁", r"\widehat{}": "^", r"\widetilde{}": "~", _BRACE_PIECE: ""}


def is_big_symbol_font(font: str) -> bool:
    """Whether `font` (a PDF font's name) is one of TeX's big-symbol fonts (OMX-encoded: cmex ...),
    or its maths symbol font (OMS: cmsy), whose `\\mapsto` bar pdfTeX maps to no character."""
    return bool(_OMX_FONT.search(font) or _OMS_FONT.search(font))


def big_symbol_text(char: str, font: str) -> str | None:
    """What a glyph of a TeX big-symbol font (cmex and its kin) stands for, as text: its raw code
    read through TeX's OMX table ("\\x50" -> "∑"), a bracket piece as its bracket; None for a
    character of any other font, or one this font maps itself."""
    if _OMS_FONT.search(font):
        return "\u21a6" if char == "7" else None   # the bar of `\\mapsto` ("↦" with the "→" after it)
    if not _OMX_FONT.search(font):
        return None
    if len(char) == 1 and ord(char) < 0x80:    # a raw code ("X" is a display sum), as `_token` reads it
        latex = _OMX.get(ord(char))
    elif char in _PIECES:
        latex = _PIECES[char]
    else:
        return None
    return None if latex is None else _BIG_UNICODE.get(latex)


_LIMIT_OPERATORS = {r"\sum", r"\prod", r"\coprod", r"\bigcup", r"\bigcap", r"\bigoplus", r"\bigotimes",
                    r"\bigodot", r"\biguplus", r"\bigwedge", r"\bigvee", r"\bigsqcup"}
_NAMED_LIMIT_OPERATORS = {"lim", "liminf", "limsup", "max", "min", "sup", "inf", "det", "gcd", "Pr"}
_BIG_OPERATORS = _LIMIT_OPERATORS | {r"\int", r"\oint"}
_DELIMITERS = {"(", ")", "[", "]", "|", r"\|", r"\{", r"\}", r"\langle", r"\rangle", r"\lfloor", r"\rfloor",
               r"\lceil", r"\rceil", "/"}
_OPERATOR_NAMES = {"sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                   "coth", "log", "ln", "lg", "exp", "det", "dim", "ker", "deg", "gcd", "lim", "liminf", "limsup",
                   "max", "min", "sup", "inf", "arg", "hom", "Pr", "mod", "tr", "Tr"}
# accents TeX sets as a glyph of their own over the letter (the letter's own box, or, with no
# width, the letter after them): the command that puts each on its letter
_ACCENTS = {"\u02c6": r"\hat", "^": r"\hat", "\u00af": r"\bar", "\u02c9": r"\bar", "\u02dc": r"\tilde",
            "~": r"\tilde", "\u02d9": r"\dot", "\u00a8": r"\ddot", "\u02c7": r"\check", "\u02d8": r"\breve",
            "\u00b4": r"\acute", "`": r"\grave", "\u20d7": r"\vec", "\u02da": r"\mathring"}
# delimiters a matrix or a binomial stands between: (opening, closing) -> environment
_OPENING = {"(": ")", "[": "]", "|": "|", r"\|": r"\|", r"\{": r"\}", r"\langle": r"\rangle",
            r"\lfloor": r"\rfloor", r"\lceil": r"\rceil"}
_MATRIX = {"(": "pmatrix", "[": "bmatrix", "|": "vmatrix", r"\|": "Vmatrix", r"\{": "Bmatrix"}
CELL_GAP = 0.8          # ems between two cells of a matrix row
_TAG = re.compile(r"^\((\d{1,3}(?:\.\d{1,3})*[a-z]?|[A-Z]\d{0,2}|[ivx]{1,5})\)$")

SCRIPT_SIZE = 0.85      # of the main size: smaller glyphs are scripts where they sit off the main baseline
SUP_SHIFT = 0.12        # of the main size above the main baseline: a superscript
SUB_SHIFT = 0.05        # ... below it: a subscript
ROW_GAP = 0.9           # of the main size between baselines of full-size glyphs: another row
TAG_GAP = 0.5           # ems between a formula and a parenthesised number beside it: the number is a tag
MAX_RULE_THICKNESS = 1.5   # points


@dataclass
class Item:
    """A glyph, or a built part (fraction, radical, operator with limits): its LaTeX and where it sits."""
    latex: str
    x0: float
    y0: float
    x1: float
    y1: float
    baseline: float
    size: float
    kind: str = "glyph"         # glyph, upright (a letter of an upright text font), big, built
    char: str = ""              # the character as the layer spells it (glyphs)
    upright: bool = False       # set in an upright text font (a digit or a bracket of "by (3.24)")
    typewriter: bool = False    # set in a monospaced font: code, or a formula's source printed beside it
    maths_font: bool = False    # set in a font only maths uses (cmmi, cmsy, ...), or a mathematical alphanumeric
    text_italic: bool = False   # a letter of an italic text font (Times-based TeX sets its maths letters in it)

    @property
    def centre_x(self) -> float:
        return (self.x0 + self.x1) / 2


@dataclass(frozen=True)
class Rule:
    x0: float
    x1: float
    y: float


@dataclass(frozen=True)
class FormulaRow:
    """One row of a display: LaTeX (with its equation number, if any), or a line of prose the
    region took in (a layout model's formula box often holds the sentence before it)."""
    latex: str | None
    text: str = ""
    tag: str | None = None
    top: float = 0.0        # the row's extent down the page, in the caller's coordinates
    bottom: float = 0.0


class PageMaths:
    """One PDF page's glyphs and rules, read once, for the formulas and rows asked about."""

    def __init__(self, page: pymupdf.Page, to_page: pymupdf.Matrix | None = None):
        """`to_page`: from the caller's coordinates (a render's pixels) to the page's points."""
        self.items = sorted(_glyphs(page, page.rect), key=lambda it: (it.y0 + it.y1) / 2)
        self._middles = [(it.y0 + it.y1) / 2 for it in self.items]   # for finding a row's glyphs by bisection
        self.rules = _rules(page, page.rect)
        self.to_page = to_page if to_page is not None else pymupdf.Identity
        self.scale = 1.0 / abs(self.to_page.a) if self.to_page.a else 1.0   # caller's units per point

    def _clip(self, bbox) -> pymupdf.Rect:
        rect = pymupdf.Rect(*bbox) * self.to_page
        margin = 2.0   # points: a glyph's box may stick out of a detected region by a hair
        return pymupdf.Rect(rect.x0 - margin, rect.y0 - margin, rect.x1 + margin, rect.y1 + margin)

    def _inside(self, clip: pymupdf.Rect) -> list[Item]:
        start, end = bisect_left(self._middles, clip.y0), bisect_right(self._middles, clip.y1)
        return [it for it in self.items[start:end] if clip.x0 <= it.centre_x <= clip.x1]

    def formula_rows(self, bbox) -> list[FormulaRow] | None:
        """The rows of the displayed formula inside `bbox`; None where there are no glyphs."""
        clip = self._clip(bbox)
        # a detected box may cut a formula's last fraction: a rule mostly inside widens it
        for rule in self.rules:
            inside = min(rule.x1, clip.x1) - max(rule.x0, clip.x0)
            if clip.y0 <= rule.y <= clip.y1 and inside >= 0.5 * (rule.x1 - rule.x0):
                clip = pymupdf.Rect(min(clip.x0, rule.x0 - 1), clip.y0, max(clip.x1, rule.x1 + 1), clip.y1)
        items = self._touching(self._inside(clip), clip)
        if not items:
            return None
        clip = pymupdf.Rect(min([clip.x0] + [it.x0 for it in items]), clip.y0, max([clip.x1] + [it.x1 for it in items]),
                            clip.y1)
        rows = build_rows(items, self._rules_in(clip))
        if rows is None:
            return None
        back = ~self.to_page
        placed = []
        for row in rows:
            rect = pymupdf.Rect(clip.x0, row.top, clip.x1, row.bottom) * back
            placed.append(replace(row, top=rect.y0, bottom=rect.y1))
        return placed

    def _rules_in(self, clip: pymupdf.Rect) -> list[Rule]:
        return [r for r in self.rules if clip.x0 - 1 <= r.x0 and r.x1 <= clip.x1 + 1 and clip.y0 <= r.y <= clip.y1]

    def _touching(self, items: list[Item], clip: pymupdf.Rect) -> list[Item]:
        """`items` and the glyphs just outside the box that run on from them along their line (a
        detected box may cut a formula's last letter: "otherwis")."""
        band = [it for it in self.items[bisect_left(self._middles, clip.y0):bisect_right(self._middles, clip.y1)]
                if not clip.x0 <= it.centre_x <= clip.x1]
        found = list(items)
        grown = True
        while grown and band:
            grown = False
            for it in list(band):
                if any(abs(it.baseline - near.baseline) < 0.3 * near.size
                       and max(it.x0 - near.x1, near.x0 - it.x1) < 0.1 * near.size for near in found):
                    found.append(it)
                    band.remove(it)
                    grown = True
        return found

    def is_display_row(self, bbox) -> bool:
        return is_display_items(self._inside(self._clip(bbox)))

    def is_formula_part_row(self, bbox) -> bool:
        return is_formula_part(self._inside(self._clip(bbox)))

    def display_extent(self, bbox) -> tuple[float, float]:
        """The top and bottom (the caller's coordinates) of what a display row under `bbox` spans:
        its own box grown to the ink of its tall glyphs (a matrix's brackets, a cases brace, a
        display integral), which reach rows a line detector boxes apart."""
        clip = self._clip(bbox)
        tall = [it for it in self._inside(clip) if it.kind == "big"]
        if not tall:
            return bbox[1], bbox[3]
        rect = pymupdf.Rect(clip.x0, min(it.y0 for it in tall), clip.x1, max(it.y1 for it in tall)) * ~self.to_page
        return min(bbox[1], rect.y0), max(bbox[3], rect.y1)

    def is_prose_row(self, bbox) -> bool:
        """Words of text and no maths: two upright words or more, no glyph of a maths font."""
        items = self._inside(self._clip(bbox))
        return not any(it.maths_font for it in items) and len([w for w in _upright_words(items) if len(w) > 1]) >= 2

    def has_wide_rule(self, bbox, share: float = 0.5) -> bool:
        """Whether a rule under `bbox` spans `share` of its width or more (a table's)."""
        clip = self._clip(bbox)
        return any(clip.y0 <= r.y <= clip.y1 and min(r.x1, clip.x1) - max(r.x0, clip.x0) >= share * clip.width
                   for r in self.rules)

    def is_formula_fragment_row(self, bbox) -> bool:
        return is_formula_fragment(self._inside(self._clip(bbox)))

    def words_of_text(self, bbox) -> int:
        """How many words of text (`_text_words`) lie under `bbox`."""
        return len(_text_words(self._inside(self._clip(bbox))))

    def rule_between(self, upper, lower) -> bool:
        """Whether a rule (a fraction's bar) lies between two boxes one above the other, under both."""
        a, b = self._clip(upper), self._clip(lower)
        low, high = min(a.y1, b.y0) - 3.0, max(a.y1, b.y0) + 3.0    # the boxes may overlap a little
        return any(low <= r.y <= high and min(r.x1, a.x1, b.x1) - max(r.x0, a.x0, b.x0) > 0 for r in self.rules)

    def is_display_fragments(self, bbox) -> bool:
        """Whether the glyphs under `bbox` (pieces the layout boxed apart, or a row set apart) make a
        display: a display row, or maths glyphs with a relation or operator and three words of
        text at most ("H = p - e  for all e in D")."""
        items = self._inside(self._clip(bbox))
        return is_display_items(items) or (is_formula_fragment(items) and any(
            it.char in _OPERATORS or it.latex in _BIG_OPERATORS for it in items))

    def main_size(self, bbox) -> float | None:
        """The most common glyph size under `bbox` (points); None where it holds no glyph."""
        items = self._inside(self._clip(bbox))
        return _main_size(items) if items else None

    def inline_text(self, bbox) -> str | None:
        """A line of prose with its inline maths as `$...$` (Markdown); None where it holds none."""
        clip = self._clip(bbox)
        inner = pymupdf.Rect(clip.x0, clip.y0 + 1.5, clip.x1, clip.y1 - 1.5)
        # a root's overline runs along the top of the line: rules are looked for in the whole box
        return inline_markdown(self._inside(inner), self._rules_in(clip))


def formula_rows(page: pymupdf.Page, clip: pymupdf.Rect) -> list[FormulaRow] | None:
    """The rows of the displayed formula inside `clip` (page points, as `page.rect`); None when
    the area holds no glyphs to build from."""
    return PageMaths(page).formula_rows((clip.x0 + 2, clip.y0 + 2, clip.x1 - 2, clip.y1 - 2))


_OPERATORS = set("=<>+×·÷±∓≤≥≠≈≡∼≃≅∝∈∉∋⊂⊃⊆⊇∪∩∧∨→←↔⇒⇐⇔↦∑∏∫∮∇∂∞′−∗∘⊕⊗")
DISPLAY_MATH_SHARE = 0.5    # of a row's letters in a maths (or italic) font, with an operator: a displayed formula


def is_display_items(items: list[Item]) -> bool:
    """Whether a row of glyphs is a formula set on a line of its own: most of its letters
    in a maths font (or italic, as a Times-based TeX document sets its maths), an operator or
    relation among its glyphs, and no more than three words of upright text ("by Axiom 1.").
    Prose with a little inline maths, code and emphasised sentences are not."""
    letters = [it for it in items if it.char.isalpha()]
    if sum(it.typewriter for it in letters) >= 2:
        return False    # code, or a formula's source beside its result (a LaTeX guide's examples)
    if len(letters) < 1 or not any(it.char in _OPERATORS or it.latex in _BIG_OPERATORS for it in items):
        return False
    maths = [it for it in letters if it.kind != "upright"]   # italic, bold, calligraphic, Greek
    words = _prose([it for it in items if it.upright and it.char.isalpha()]).split()
    # an operator's name ("mod", "sin") is the formula's, not text: its letters count for neither side
    named = sum(len(w) for w in words if w in _OPERATOR_NAMES)
    return len(maths) >= DISPLAY_MATH_SHARE * (len(letters) - named) and len([w for w in words if len(w) > 1]) <= 3


def is_formula_part(items: list[Item]) -> bool:
    """Whether a row of glyphs can be a piece of a display set around it (a sum's limits, a
    matrix's row, a numerator a detector boxed apart): maths glyphs, digits and symbols, and no
    word of upright text but operator names; no typewriter glyph."""
    return bool(items) and not any(it.typewriter for it in items) and not _text_words(items)


def _upright_words(items: list[Item]) -> list[str]:
    """The words of upright text among `items`, read line by line (a region may hold several)."""
    lines: list[list[Item]] = []
    for item in sorted((it for it in items if it.upright and it.char.isalpha()), key=lambda it: it.baseline):
        if lines and abs(item.baseline - lines[-1][-1].baseline) < 0.5 * item.size:
            lines[-1].append(item)
        else:
            lines.append([item])
    return [word for line in lines for word in _prose(line).split()]


def _text_words(items: list[Item]) -> list[str]:
    """The upright words of two letters or more that are no operator's name ("sin", "det"): text."""
    return [word for word in _upright_words(items) if len(word) > 1 and word not in _OPERATOR_NAMES]


def is_formula_fragment(items: list[Item]) -> bool:
    """Whether glyphs can be a piece of a display the layout cut apart: a formula part, or maths
    glyphs with at most three words of text beside them (the "if" and "otherwise" of cases)."""
    if is_formula_part(items):
        return True
    if not items or any(it.typewriter for it in items) or not any(it.maths_font for it in items):
        return False
    return len(_text_words(items)) <= 3


def inline_markdown(items: list[Item], rules: list[Rule] = ()) -> str | None:
    """The line's text, each run of maths in it as `$LaTeX$`; None where it has no maths.

    A glyph is maths where its font is one only maths uses, or it is a lone letter of an italic
    text font (Times-based TeX documents set maths letters in Times Italic; a word of two letters
    or more in italics is emphasis), or a script (smaller, off the line's baseline), or an
    operator or relation next to one of those. Digits, brackets and punctuation between two maths
    glyphs belong to the run. Typewriter glyphs (code, a formula's source) are never maths, and a
    literal `$` outside the maths is escaped, so no Markdown reader pairs it with one of ours.
    `rules` (the line's fraction bars and radicals' overlines) build fractions and roots first,
    which are maths; so is an operator name ("log") set just before maths."""
    if not items:
        return None
    items, rules = _with_braces(_with_accents(items), list(rules))
    items = _colons(_long_arrows([it for it in items if it.latex != _BRACE_PIECE]))
    if not items:
        return None
    # no overlines: in a line of prose a short rule over words is more likely a table's or a form's
    items = sorted(_with_rules(items, rules, overlines=False) if rules else items, key=lambda it: (it.x0, it.y0))
    size = _main_size(items)
    on_line = [it.baseline for it in items if abs(it.size - size) < 0.1 * size]
    baseline = statistics.median(on_line) if on_line else items[0].baseline
    words = _words(items, size)
    maths = [False] * len(items)
    def script(item: Item) -> bool:
        """Smaller and off the line: a script. An upright capital set so is a logo's letter (the
        raised A of LaTeX), not maths."""
        return item.size < SCRIPT_SIZE * size and (baseline - item.baseline > SUP_SHIFT * size
                                                   or item.baseline - baseline > SUB_SHIFT * size) \
            and not (item.kind == "upright" and item.char.isupper())

    for w, word in enumerate(words):
        if w == 0 and all(script(items[j]) and not items[j].char.isalpha() for j in word):
            continue   # raised small digits opening the line, with no base: a list's or a note's mark
        letters = [items[j] for j in word if items[j].char.isalpha()]
        on_line = [it for it in letters if not script(it)]
        # a word with a maths glyph in it ("δr0") is maths whole, and so is one of a letter or two
        # with scripts ("kr0", "M1l"); a script after a longer word is its footnote mark
        # ("numeric¹"); a lone italic letter is a variable; italic words are emphasis
        whole = (any(items[j].maths_font for j in word)
                 or (any(script(items[j]) for j in word) and len(on_line) <= 2)) and \
            all(it.maths_font or it.text_italic or script(it) or it.kind == "glyph" for it in letters)
        lone_italic = len(letters) == 1 and letters[0].text_italic
        for k in word:
            maths[k] = not items[k].typewriter and (whole or items[k].maths_font or script(items[k])
                                                    or (lone_italic and items[k] is letters[0])
                                                    or items[k].kind == "built")
    k = 0
    while k < len(items):  # "ln x", "sin θ": an operator's name set just before maths is the formula's
        end = k
        while end < len(items) and items[end].kind == "upright" and items[end].char.isalpha() and \
                (end == k or _gap(items, end - 1) < 0.1 * size):
            end += 1
        # the name, then maths or a bracket opening onto it ("\\Pr(A \\mid B)")
        onto = end < len(items) and (maths[end] or (items[end].char in ("(", "[") and end + 1 < len(items) and maths[end + 1]
                                                      and _gap(items, end) < 0.3 * size))
        if (end > k + 1 and onto and _gap(items, end - 1) < 0.5 * size
                and "".join(items[j].char for j in range(k, end)) in _OPERATOR_NAMES
                and (k == 0 or _gap(items, k - 1) >= 0.1 * size)):
            for j in range(k, end):
                maths[j] = True
        k = max(end, k + 1)
    lone = {letters[0] for word in words for letters in [[j for j in word if items[j].char.isalpha()]]
            if len(letters) == 1}   # the one letter of a word ("Γ." with its full stop)
    changed = True
    while changed:   # operators and relations beside maths, and a lone bold or Greek letter beside them
        changed = False   # ("\nabla \cdot \mathbf{B} = \Gamma": a vector, a Greek capital set upright)
        for k, item in enumerate(items):
            if maths[k] or item.typewriter or not (item.char in _OPERATORS or (k in lone and _maths_letter(item))):
                continue
            near = [j for j in (k - 1, k + 1) if 0 <= j < len(items) and abs(_gap(items, min(j, k))) < 0.6 * size]
            if any(maths[j] for j in near):
                maths[k] = changed = True
        changed = _with_numbers(items, maths, size) or changed   # "= 2 + 2": the "+" beside the first 2
    return _inline_runs(items, maths, size, script, baseline)


def _with_numbers(items: list[Item], maths: list[bool], size: float) -> bool:
    """Numbers set against an operator of the formula are the formula's ("= 2.05", "10 ×"), a full
    stop after one the sentence's; whether any was added."""
    before = sum(maths)
    for k, item in enumerate(items):
        if maths[k] and item.char in _OPERATORS:
            for step in (1, -1):   # "= 2.05", "10 ×": a number set against an operator is the formula's
                j = k + step
                if 0 <= j < len(items) and abs(_gap(items, min(j, k))) < 0.45 * size and items[j].char[:1].isdigit():
                    while 0 <= j < len(items) and (items[j].char[:1].isdigit() or items[j].char == ".") and \
                            (j == k + step or abs(_gap(items, min(j, j - step))) < 0.2 * size):
                        maths[j] = True
                        j += step
                    if maths[j - step] and items[j - step].char == ".":
                        maths[j - step] = False   # a full stop after the number is the sentence's
    return sum(maths) > before


def _inline_runs(items: list[Item], maths: list[bool], size: float, script, baseline: float) -> str | None:
    """The line's Markdown from its glyphs and which of them are maths: each run of maths as
    `$...$`; None where nothing marked is a letter, a command or a script."""
    marked = [k for k, m in enumerate(maths) if m]
    if not marked or not any(items[k].char.isalpha() or items[k].latex.startswith("\\") or script(items[k])
                             for k in marked):
        return None
    for a, b in zip(marked, marked[1:]):   # what lies between two maths glyphs close together is maths too
        between = range(a + 1, b)
        if all(not items[j].char.isalpha() for j in between) and items[b].x0 - items[a].x1 < 1.2 * size:
            for j in between:
                maths[j] = True
    out, k = "", 0
    while k < len(items):
        if maths[k]:
            end = k
            # a formula's own spaces stretch with a justified line (`\\;` to half an em): under an em
            while end + 1 < len(items) and maths[end + 1] and _gap(items, end) < 1.0 * size:
                end += 1
            run = items[k:end + 1]
            latex = _row_latex(run)
            if all(script(it) for it in run):   # a footnote mark, a unit's power: a script on nothing
                latex = ("^" if baseline > run[0].baseline else "_") + f"{{{latex}}}"
            piece = f"${latex}$"
        else:
            end, piece = k, unicodedata.normalize("NFKC", items[k].char or "").replace("$", r"\$")
        if out and k > 0 and _gap(items, k - 1) >= 0.2 * size:
            out += " "
        out += piece
        k = end + 1
    return out


def _maths_letter(item: Item) -> bool:
    """A letter that prose hardly sets alone: bold (a vector) or a Greek capital."""
    return item.latex.startswith(r"\mathbf{") or (item.char.isupper() and "\u0391" <= item.char <= "\u03a9")


def _gap(items: list[Item], k: int) -> float:
    """The gap from item k to item k + 1."""
    return items[k + 1].x0 - items[k].x1


def _words(items: list[Item], size: float) -> list[list[int]]:
    """Indices of the items in each word: runs with gaps under a fifth of an em."""
    words: list[list[int]] = [[0]]
    for k in range(1, len(items)):
        if _gap(items, k - 1) >= 0.2 * size:
            words.append([k])
        else:
            words[-1].append(k)
    return words


def build_rows(items: list[Item], rules: list[Rule]) -> list[FormulaRow] | None:
    items = _with_accents(items)
    items, rules = _with_braces(items, rules)
    items = _with_rules(items, rules)
    items = _with_integral_limits(_with_limits(items))
    items = _with_oversets(items)
    items = _sized_delimiters(_with_arrays(items))
    rows = []
    for row in _rows(items):
        if not row:
            continue
        top, bottom = min(it.y0 for it in row), max(it.y1 for it in row)
        if _is_prose(row):
            rows.append(FormulaRow(None, _prose(row), top=top, bottom=bottom))
            continue
        body, tag = _split_tag(sorted(row, key=lambda it: (it.x0, it.y0)), _main_size(row))
        latex = _row_latex(body)
        if latex.strip():
            rows.append(FormulaRow(latex, tag=tag, top=top, bottom=bottom))
    return rows or None


def _is_prose(row: list[Item]) -> bool:
    """A row of words: mostly letters of an upright text font, three words or more."""
    glyphs = [it for it in row if it.kind in ("glyph", "upright")]
    letters = [it for it in glyphs if it.kind == "upright"]
    return len(glyphs) >= 8 and len(letters) >= 0.6 * len(glyphs) and len(_prose(row).split()) >= 3


def _prose(row: list[Item]) -> str:
    if not row:
        return ""
    size = _main_size(row)
    text, end = "", None
    for item in sorted(row, key=lambda it: it.x0):
        if end is not None and item.x0 - end > 0.2 * size:
            text += " "
        text += item.char or item.latex
        end = item.x1
    return text


# -- glyphs and rules ---------------------------------------------------------------------------
def _glyphs(page: pymupdf.Page, clip: pymupdf.Rect) -> list[Item]:
    items: list[Item] = []
    big_delimiters: dict[tuple[float, float, str], Item] = {}
    symbol_font = False
    traced: list = []

    def trace() -> list:
        """The page's painting trace, read once and only where it is asked for."""
        if not traced:
            traced.append(page.get_texttrace())
        return traced[0]

    # with the raw code of a character the font maps to no Unicode (the big-symbol fonts)
    raw = page.get_text("rawdict", clip=clip, flags=pymupdf.TEXTFLAGS_RAWDICT | pymupdf.TEXT_CID_FOR_UNKNOWN_UNICODE)
    for block in raw.get("blocks", []):
        for line in block.get("lines", []):
            if tuple(round(v) for v in line.get("dir", (1, 0))) != (1, 0):
                continue
            for span in line["spans"]:
                font, size = span["font"], float(span["size"])
                symbol_font = symbol_font or bool(_SYMBOL_FONT.search(font))
                for char in span["chars"]:
                    if char["c"] == " " and (char["bbox"][2] - char["bbox"][0] < 0.4 * size or not _OMX_FONT.search(font)
                                             or not _painted_at(trace(), char["origin"])):
                        continue    # a space the extraction put in a gap (in a big-symbol font 0x20 is a bracket)
                    latex, kind = _token(char["c"], font)
                    if not latex:
                        continue
                    x0, y0, x1, y1 = char["bbox"]
                    upright = kind == "upright" or not (_ITALIC_FONT.search(font) or _SYMBOL_FONT.search(font)
                                                        or _OMX_FONT.search(font))
                    maths_font = bool(_MATHS_FONT.search(font) or _OMX_FONT.search(font)) or \
                        (len(char["c"]) == 1 and 0x1D400 <= ord(char["c"]) <= 0x1D7FF)
                    text_italic = not maths_font and bool(_ITALIC_FONT.search(font)) and char["c"].isalpha()
                    items.append(Item(latex, x0, y0, x1, y1, float(char["origin"][1]), size, kind, char["c"],
                                      upright, bool(_TYPEWRITER_FONT.search(font)), maths_font, text_italic))
                    if (kind == "big" and (latex in _DELIMITERS or latex in _BIG_OPERATORS) and _OMX_FONT.search(font)) \
                            or latex == "√":
                        big_delimiters[(round(char["origin"][0], 2), round(char["origin"][1], 2), char["c"])] = items[-1]
    if symbol_font:   # where the maths symbol font is, a `\not` may be, where the extraction misplaced it
        items = [item for item in items if item.latex != r"\not"] + _nots(trace(), clip)
    if big_delimiters:
        # a big-symbol font's box is its font's ascent and descent, but a tall bracket hangs far below
        # its origin: its ink is what tells how many rows it spans (and a radical sign's, where its top is)
        accurate = page.get_text("rawdict", clip=clip, flags=pymupdf.TEXTFLAGS_RAWDICT
                                 | pymupdf.TEXT_CID_FOR_UNKNOWN_UNICODE | pymupdf.TEXT_ACCURATE_BBOXES)
        for block in accurate.get("blocks", []):
            for line in block.get("lines", []):
                for span in line["spans"]:
                    for char in span["chars"]:
                        item = big_delimiters.get((round(char["origin"][0], 2), round(char["origin"][1], 2), char["c"]))
                        if item is not None and (item.latex == "√" or item.latex in _BIG_OPERATORS):
                            # a radical sign hangs from its origin (its top is where its overline starts),
                            # and so does a display sum or integral: where they are is where their ink is
                            item.y0, item.y1 = char["bbox"][1], char["bbox"][3]
                        elif item is not None:
                            item.y0, item.y1 = min(item.y0, char["bbox"][1]), max(item.y1, char["bbox"][3])
    return _merged_pieces(items)


def _painted_at(trace: list, origin) -> bool:
    """Whether a big-symbol font paints a glyph at `origin`: a wide gap in a formula (a justified
    line stretches its spaces) comes out as a space of that font, which would read as its code
    0x20, a tall parenthesis."""
    return any(abs(x - origin[0]) < 0.3 and abs(y - origin[1]) < 0.3
               for span in trace if _OMX_FONT.search(span["font"])
               for _, _, (x, y), _ in span["chars"])


def _nots(trace: list, clip: pymupdf.Rect) -> list[Item]:
    """TeX's `\\not` glyphs where the page paints them. The extraction puts this glyph of no width
    at the end of the character before it, or drops it (after a script, "x_k^{k+1} \\neq"): the
    painting order's trace has it where it prints, over the relation it negates."""
    nots = []
    for span in trace:
        size = float(span["size"])
        for ucs, _, origin, bbox in span["chars"]:
            if ucs == 0x338 and clip.contains(pymupdf.Point(origin)):
                nots.append(Item(r"\not", origin[0], bbox[1], origin[0], bbox[3], float(origin[1]), size, "glyph",
                                 "\u0338", False, False, True, False))
    return nots


def _token(char: str, font: str) -> tuple[str, str]:
    """(LaTeX, kind) for one character of `font`; ("", "") for a space or nothing."""
    if _OMX_FONT.search(font):
        if len(char) == 1 and ord(char) < 0x80:
            # raw codes, some of which are control characters Python counts as space (0x0C is |)
            return _OMX.get(ord(char), ""), "big"
        if char in _PIECES:
            return _PIECES[char], "big"
    if not char or char.isspace():
        return "", ""
    if len(char) == 1 and 0x1D400 <= ord(char) <= 0x1D7FF:
        return _math_alphanumeric(char)
    if char in _UNICODE:
        latex = _UNICODE[char]
        return latex, "big" if latex in _BIG_OPERATORS else "glyph"
    if char.isalpha() and len(char) == 1 and ord(char) < 0x250:
        alphabet = next((command for pattern, command in _ALPHABET_FONTS if pattern.search(font)), None)
        if alphabet is not None and "A" <= char <= "Z" or alphabet == r"\mathfrak":
            return rf"{alphabet}{{{char}}}", "glyph"
        if _BOLD_FONT.search(font):
            return rf"\mathbf{{{char}}}", "glyph"
        if _SYMBOL_FONT.search(font) and "A" <= char <= "Z":
            return rf"\mathcal{{{char}}}", "glyph"
        if not _ITALIC_FONT.search(font):
            return char, "upright"
        return char, "glyph"
    if char == "7" and _OMS_FONT.search(font):
        return r"\mapstochar", "glyph"   # the maths symbol font has no digits: its raw code 0x37, the bar of "↦"
    if char.isdigit() and _BOLD_FONT.search(font):
        return rf"\mathbf{{{char}}}", "glyph"
    return char, "glyph"    # digits, ASCII punctuation, any other symbol: as it is


def _math_alphanumeric(char: str) -> tuple[str, str]:
    """A letter or digit of Unicode's mathematical alphanumerics (what unicode-math and newtx
    fonts map their maths letters to: 𝑥, 𝐄, 𝜋): its plain form, bold where the name says so."""
    name = unicodedata.name(char, "")
    plain = unicodedata.normalize("NFKC", char)
    latex = _UNICODE.get(plain, plain)
    if name.startswith("MATHEMATICAL BOLD") and "ITALIC" not in name and "SCRIPT" not in name:
        latex = rf"\mathbf{{{latex}}}"
    elif name.startswith("MATHEMATICAL SCRIPT") or name.startswith("MATHEMATICAL BOLD SCRIPT"):
        latex = rf"\mathcal{{{latex}}}"
    elif name.startswith("MATHEMATICAL DOUBLE-STRUCK"):
        latex = rf"\mathbb{{{latex}}}"
    return latex, "glyph"


def _merged_pieces(items: list[Item]) -> list[Item]:
    """A delimiter built of pieces (top, extension, bottom) is one delimiter."""
    out: list[Item] = []
    for item in sorted(items, key=lambda it: (it.x0, it.y0)):
        last = out[-1] if out else None
        if (last is not None and item.kind == "big" and last.kind == "big" and item.latex == last.latex
                and item.latex in _DELIMITERS and abs(item.x0 - last.x0) < 0.5 and item.y0 <= last.y1 + 1.0):
            last.y1 = max(last.y1, item.y1)
            continue
        out.append(item)
    return out


def _rules(page: pymupdf.Page, clip: pymupdf.Rect) -> list[Rule]:
    """Horizontal rules: fraction bars, radicals' overlines. The top and bottom of a frame (a
    `\\boxed` formula, a table's box: rules whose ends meet upright ones) are none of those."""
    rules, uprights = [], []
    for drawing in page.get_drawings():
        for entry in drawing["items"]:
            if entry[0] == "l":
                a, b = entry[1], entry[2]
                if abs(a.y - b.y) <= 0.3 and abs(a.x - b.x) > 1.5:
                    rules.append(Rule(min(a.x, b.x), max(a.x, b.x), (a.y + b.y) / 2))
                elif abs(a.x - b.x) <= 0.3 and abs(a.y - b.y) > 1.5:
                    uprights.append(((a.x + b.x) / 2, min(a.y, b.y), max(a.y, b.y)))
            elif entry[0] == "re":
                rect = entry[1]
                if rect.height <= MAX_RULE_THICKNESS and rect.width > 1.5 and rect.width > 3 * rect.height:
                    rules.append(Rule(rect.x0, rect.x1, (rect.y0 + rect.y1) / 2))
                elif rect.width <= MAX_RULE_THICKNESS and rect.height > 1.5 and rect.height > 3 * rect.width:
                    uprights.append(((rect.x0 + rect.x1) / 2, rect.y0, rect.y1))

    def framed(rule: Rule) -> bool:
        return all(any(abs(x - end) <= 1.5 and top - 1.5 <= rule.y <= bottom + 1.5 for x, top, bottom in uprights)
                   for end in (rule.x0, rule.x1))

    return [rule for rule in rules if clip.x0 - 1 <= rule.x0 and rule.x1 <= clip.x1 + 1 and clip.y0 <= rule.y <= clip.y1
            and not (uprights and framed(rule))]


# -- fractions, radicals, overlines, limits -----------------------------------------------------
def _with_rules(items: list[Item], rules: list[Rule], overlines: bool = True) -> list[Item]:
    """Fractions, roots and (with `overlines`) overlines built from the rules among the items."""
    done: list[Rule] = []     # rules already read: what they built is an item like any other
    for rule in sorted(rules, key=lambda r: r.x1 - r.x0):
        done.append(rule)
        inside = [it for it in items if rule.x0 - 1.0 <= it.centre_x <= rule.x1 + 1.0]
        if not inside:
            continue
        size = statistics.median(it.size for it in inside)
        reach = 1.6 * size
        # by their middles and baselines: boxes are the fonts' ascent and descent, and overlap the rule;
        # nothing beyond another rule (a nested fraction's bar stops at its outer one)
        pending = [other for other in rules if not any(other is d for d in done)]
        inside = [it for it in inside if not _beyond_rule(it, rule, pending)]
        above = [it for it in inside if (it.y0 + it.y1) / 2 < rule.y and 0 < rule.y - it.baseline < reach]
        below = [it for it in inside if (it.y0 + it.y1) / 2 > rule.y and 0 < it.baseline - rule.y < reach + size]
        radical = next((it for it in items if it.latex == "√" and abs(it.x1 - rule.x0) < 2.0
                        and it.y0 - 1.5 <= rule.y <= it.y0 + 2.5), None)
        if radical is not None:
            # under the overline by their middles: a letter's box (its font's ascent) can reach over it
            body = [it for it in items if rule.x0 - 0.5 <= it.centre_x <= rule.x1 + 0.5 and (it.y0 + it.y1) / 2 > rule.y
                    and it.y0 < radical.y1 and it is not radical]
            # an index (the 3 of a cube root) is set small in the crook of the sign, over its middle
            index = [it for it in items if it is not radical and not any(it is b for b in body)
                     and it.x0 >= radical.x0 - 0.5 * radical.size and it.x1 > radical.x0 + 0.2 * (radical.x1 - radical.x0)
                     and it.centre_x <= (radical.x0 + radical.x1) / 2
                     and it.y1 <= (radical.y0 + radical.y1) / 2 + 1.0 and it.y0 >= radical.y0 - 0.5 * radical.size
                     and it.size < SCRIPT_SIZE * _size(body, radical)]
            root = f"[{_row_latex(index)}]" if index else ""
            built = Item(rf"\sqrt{root}{{{_row_latex(body)}}}", min([radical.x0] + [it.x0 for it in index]), rule.y,
                         rule.x1, max([radical.y1] + [it.y1 for it in body]), _baseline(body, radical),
                         _size(body, radical), "built")
            used = [radical, *body, *index]
            items = [it for it in items if not any(it is u for u in used)] + [built]
        elif above and below:
            numerator, denominator = _row_latex(above), _row_latex(below)
            axis = rule.y + 0.25 * size     # the fraction bar sits on the maths axis, a quarter em over the baseline
            built = Item(rf"\frac{{{numerator}}}{{{denominator}}}", rule.x0, min(it.y0 for it in above), rule.x1,
                         max(it.y1 for it in below), axis, size, "built")
            used = above + below
            items = [it for it in items if not any(it is u for u in used)] + [built]
        elif overlines and below and not above and rule.x1 - rule.x0 < 12 * size:
            built = Item(rf"\overline{{{_row_latex(below)}}}", rule.x0, rule.y, rule.x1, max(it.y1 for it in below),
                         _baseline(below, below[0]), _size(below, below[0]), "built")
            items = [it for it in items if not any(it is b for b in below)] + [built]
    return items


def _with_braces(items: list[Item], rules: list[Rule]) -> tuple[list[Item], list[Rule]]:
    """Horizontal braces: TeX sets one from the big-symbol font's end and middle pieces with rules
    between them. What the brace spans on its open side is the braced part, a small label on
    its tip side its script: `\\underbrace{}_{}`, `\\overbrace{}^{}`. The brace's rules are no
    fraction bars."""
    pieces = sorted((it for it in items if it.latex == _BRACE_PIECE), key=lambda it: it.x0)
    if not pieces:
        return items, rules
    used_rules: list[Rule] = []
    groups: list[list[Item]] = []
    for piece in pieces:
        if groups and abs(piece.baseline - groups[-1][-1].baseline) < 1.0 and (
                piece.x0 - groups[-1][-1].x1 < 0.5 or any(
                    abs(r.x0 - groups[-1][-1].x1) < 1.0 and abs(r.x1 - piece.x0) < 1.0 for r in rules)):
            groups[-1].append(piece)
        else:
            groups.append([piece])
    for group in groups:
        x0, x1 = group[0].x0, group[-1].x1
        top, bottom = min(it.y0 for it in group), max(it.y1 for it in group)
        under = group[0].char == _UNDERBRACE_START
        size = group[0].size
        used_rules += [r for r in rules if x0 - 1 <= r.x0 and r.x1 <= x1 + 1 and top - 1.5 <= r.y <= bottom + 1.5]
        others = [it for it in items if it.latex != _BRACE_PIECE and x0 - 1 <= it.centre_x <= x1 + 1]
        middle = (top + bottom) / 2
        if under:
            body = [it for it in others if it.y1 <= middle + 1.0 and bottom - it.baseline < 2.0 * size]
            label = [it for it in others if it.y0 >= middle - 1.0 and it.y0 - bottom < 1.0 * size
                     and it.size < SCRIPT_SIZE * size]
        else:
            body = [it for it in others if it.y0 >= middle - 1.0 and it.y0 - bottom < 1.0 * size]
            label = [it for it in others if it.y1 <= middle + 1.0 and top - it.y1 < 1.0 * size
                     and it.size < SCRIPT_SIZE * size]
        body = [it for it in body if not any(it is b for b in label)]
        if not body:
            items = [it for it in items if not any(it is g for g in group)]
            continue
        script = ("_" if under else "^") + f"{{{_row_latex(label)}}}" if label else ""
        latex = (r"\underbrace" if under else r"\overbrace") + f"{{{_row_latex(body)}}}" + script
        used = [*group, *body, *label]
        built = Item(latex, min(it.x0 for it in used), min(it.y0 for it in used), max(it.x1 for it in used),
                     max(it.y1 for it in used), _baseline(body, body[0]), _size(body, body[0]), "built")
        items = [it for it in items if not any(it is u for u in used)] + [built]
    return items, [r for r in rules if not any(r is u for u in used_rules)]


def _beyond_rule(item: Item, rule: Rule, rules: list[Rule]) -> bool:
    """Whether another rule over the item's middle lies between it and `rule`."""
    middle = (item.y0 + item.y1) / 2
    return any(other is not rule and other.x0 - 1.0 <= item.centre_x <= other.x1 + 1.0
               and min(middle, rule.y) < other.y < max(middle, rule.y) for other in rules)


def _with_accents(items: list[Item]) -> list[Item]:
    """An accent glyph over a maths letter: the letter with its accent (`\\hat{x}`). TeX puts the
    accent over the letter's box (raised only over a tall letter), or gives it no width and sets it
    just before the letter; accents stacked on one letter are taken lowest first. The items are
    new where they change: a page's glyphs are shared by every formula asked about."""
    accents = sorted((it for it in items if it.char in _ACCENTS and it.kind == "glyph" and not it.typewriter),
                     key=lambda it: -it.baseline)
    for accent in accents:
        # a text font's letter under an accent is a word's accented letter, upright or in italics
        # (text_normal composes those): only a maths font's glyph takes one here
        bases = [it for it in items if it.char not in _ACCENTS and it.maths_font and it.y1 > accent.y0
                 and it.y0 < accent.y1 and abs(it.size - accent.size) < 0.3 * accent.size]
        if accent.x1 - accent.x0 < 0.05 * accent.size:
            after = [it for it in bases if 0 <= it.x0 - accent.x0 < 0.5 * accent.size]
            base = min(after, key=lambda it: it.x0, default=None)
        else:
            over = [it for it in bases if it.x0 - 0.1 * it.size <= accent.centre_x <= it.x1 + 0.1 * it.size]
            base = min(over, key=lambda it: abs(it.centre_x - accent.centre_x), default=None)
        if base is None:
            continue
        accented = replace(base, latex=f"{_ACCENTS[accent.char]}{{{base.latex}}}", x0=min(base.x0, accent.x0),
                           x1=max(base.x1, accent.x1), y0=min(base.y0, accent.y0))
        items = [accented if it is base else it for it in items if it is not accent]
    return items


def _with_arrays(items: list[Item]) -> list[Item]:
    """What stands in rows between a tall pair of delimiters: a matrix (`pmatrix`, `bmatrix` ...),
    or, two single cells between parentheses, a binomial; rows after a tall left brace alone:
    `cases`. Rows are told apart by their baselines, cells by a gap of `CELL_GAP` ems or more."""
    size = _main_size(items)
    tall = sorted((it for it in items if it.kind == "big" and it.latex in _DELIMITERS and it.y1 - it.y0 > 1.5 * size),
                  key=lambda it: it.x0)
    for left in tall:
        closing = _OPENING.get(left.latex)
        if closing is None or not any(it is left for it in items):
            continue
        right = next((it for it in tall if it.x0 > left.x1 and it.latex == closing and any(it is i for i in items)
                      and abs(it.y0 - left.y0) < 0.3 * size and abs(it.y1 - left.y1) < 0.3 * size), None)
        if right is None and left.latex != r"\{":
            continue
        x_end = right.x0 if right is not None else float("inf")
        inside = [it for it in items if it is not left and it is not right and left.x1 - 0.5 <= it.centre_x <= x_end + 0.5
                  and left.y0 <= (it.y0 + it.y1) / 2 <= left.y1]
        rows = [row for row in _rows(inside) if row]
        if len(rows) < 2:
            continue
        cells = [_cells(sorted(row, key=lambda it: it.x0), size) for row in rows]
        if right is not None and left.latex == "(" and all(len(row) == 1 for row in cells) and len(cells) == 2:
            latex = rf"\binom{{{_row_latex(cells[0][0])}}}{{{_row_latex(cells[1][0])}}}"
        else:
            body = r" \\ ".join(" & ".join(_row_latex(cell) for cell in row) for row in _aligned(cells))
            if right is None:
                latex = rf"\begin{{cases}} {body} \end{{cases}}"
            elif left.latex in _MATRIX and closing == right.latex:
                latex = rf"\begin{{{_MATRIX[left.latex]}}} {body} \end{{{_MATRIX[left.latex]}}}"
            else:
                latex = rf"\left{left.latex} \begin{{matrix}} {body} \end{{matrix}} \right{right.latex}"
        end = right if right is not None else max(inside, key=lambda it: it.x1)
        built = Item(latex, left.x0, left.y0, end.x1, left.y1, (left.y0 + left.y1) / 2 + 0.25 * size, size, "built")
        gone = [left, *inside] + ([right] if right is not None else [])
        items = [it for it in items if not any(it is g for g in gone)] + [built]
    return items


_CLOSING = {closing: opening for opening, closing in _OPENING.items() if opening != closing}
_SIZES = ((1.5, r"\big"), (2.1, r"\Big"), (2.7, r"\bigg"), (float("inf"), r"\Bigg"))   # ink height in ems


def _sized_delimiters(items: list[Item]) -> list[Item]:
    """Tall brackets no array took: a pair at one height around what they enclose as `\\left(`
    ... `\\right)`, which sizes them to it (and raises a script after the closing one as the page
    does); one alone as `\\bigl(`, `\\Bigr]` ... by its ink's height."""
    size = _main_size(items)
    tall = sorted((it for it in items if it.kind == "big" and it.latex in _DELIMITERS and it.latex != "/"
                   and it.y1 - it.y0 > 1.3 * size), key=lambda it: it.x0)
    sized: dict[int, str] = {}
    for k, left in enumerate(tall):
        closing = _OPENING.get(left.latex)
        if closing is None or id(left) in sized:
            continue
        right = next((it for it in tall[k + 1:] if it.latex == closing and id(it) not in sized
                      and abs(it.y0 - left.y0) < 0.3 * size and abs(it.y1 - left.y1) < 0.3 * size), None)
        if right is not None:
            sized[id(left)], sized[id(right)] = rf"\left{left.latex}", rf"\right{right.latex}"
    for item in tall:
        if id(item) not in sized:
            command = next(name for limit, name in _SIZES if (item.y1 - item.y0) / size < limit)
            side = "l" if item.latex in _OPENING and item.latex not in ("|", r"\|") else \
                "r" if item.latex in _CLOSING else ""
            sized[id(item)] = f"{command}{side}{item.latex}"
    return [replace(it, latex=sized[id(it)]) if id(it) in sized else it for it in items]


def _cells(row: list[Item], size: float) -> list[list[Item]]:
    cells = [[row[0]]]
    for item in row[1:]:
        if item.x0 - max(it.x1 for it in cells[-1]) >= CELL_GAP * size:
            cells.append([item])
        else:
            cells[-1].append(item)
    return cells


def _aligned(rows: list[list[list[Item]]]) -> list[list[list[Item]]]:
    """Rows of cells padded to one column count: a row with fewer cells has them in the columns
    whose left edges are nearest theirs (the widest row gives the columns)."""
    widest = max(rows, key=len)
    lefts = [cell[0].x0 for cell in widest]
    out = []
    for row in rows:
        if len(row) == len(widest):
            out.append(row)
            continue
        placed: list[list[Item]] = [[] for _ in lefts]
        for cell in row:
            column = min(range(len(lefts)), key=lambda c: abs(lefts[c] - cell[0].x0))
            placed[column] += cell
        out.append(placed)
    return out


def _baseline(items: list[Item], fallback: Item) -> float:
    return statistics.median(it.baseline for it in items) if items else fallback.baseline


def _size(items: list[Item], fallback: Item) -> float:
    return max(it.size for it in items) if items else fallback.size


def _named_operators(items: list[Item]) -> list[Item]:
    """"lim", "max", "sup" ... set upright with something under them: one operator that takes limits."""
    letters = sorted((it for it in items if it.kind == "upright"), key=lambda it: it.x0)
    words: list[list[Item]] = []
    for item in letters:
        last = words[-1][-1] if words else None
        if last is not None and 0 <= item.x0 - last.x1 < 0.15 * item.size and abs(item.baseline - last.baseline) < 0.5:
            words[-1].append(item)
        else:
            words.append([item])
    for word in words:
        name = "".join(it.char for it in word)
        if name not in _NAMED_LIMIT_OPERATORS:
            continue
        x0, x1 = word[0].x0, word[-1].x1
        size, baseline = word[0].size, word[0].baseline
        if not any(x0 - 0.5 * size <= it.centre_x <= x1 + 0.5 * size and it.y0 > baseline - 0.2 * size
                   and it.size < 0.9 * size for it in items):
            continue
        op = Item("\\" + name, x0, min(it.y0 for it in word), x1, max(it.y1 for it in word), baseline, size, "big")
        items = [it for it in items if not any(it is w for w in word)] + [op]
    return items


def _with_limits(items: list[Item]) -> list[Item]:
    items = _named_operators(items)
    for op in [it for it in items if it.kind == "big" and (it.latex in _LIMIT_OPERATORS
                                                          or it.latex.lstrip("\\") in _NAMED_LIMIT_OPERATORS)]:
        if not any(it is op for it in items):
            continue
        width = op.x1 - op.x0
        near = [it for it in items if it is not op and op.x0 - 0.3 * width <= it.centre_x <= op.x1 + 0.3 * width]
        # boxes are the fonts' ascent and descent, not ink: a limit's box may overlap the symbol's
        over = [it for it in items if it is not op and it.baseline <= op.y0 + 0.35 * op.size and it.size < op.size]
        under = [it for it in items if it is not op and it.y0 >= op.y1 - 0.35 * op.size and it.size < op.size]
        upper = _grown([it for it in near if any(it is o for o in over) and op.y0 - it.y1 < 1.2 * op.size], over,
                       op.size)
        lower = _grown([it for it in near if any(it is u for u in under) and it.y0 - op.y1 < 1.2 * op.size], under,
                       op.size)
        if not upper and not lower:
            continue
        latex = op.latex + (f"_{{{_limit_latex(lower)}}}" if lower else "") + \
            (f"^{{{_limit_latex(upper)}}}" if upper else "")
        used = upper + lower
        built = Item(latex, min([op.x0] + [it.x0 for it in used]), min([op.y0] + [it.y0 for it in used]),
                     max([op.x1] + [it.x1 for it in used]), max([op.y1] + [it.y1 for it in used]),
                     op.baseline, op.size, "big")
        items = [it for it in items if it is not op and not any(it is u for u in used)] + [built]
    return items


def _limit_latex(items: list[Item]) -> str:
    """A limit's LaTeX: one row, or rows stacked under (or over) the operator as `\\substack`
    ("0 \\le i \\le m" over "0 < j < n"), each row read on its own."""
    rows: list[list[Item]] = []
    for item in sorted(items, key=lambda it: it.baseline):
        if rows and item.baseline - rows[-1][0].baseline < 0.5 * item.size:
            rows[-1].append(item)
        else:
            rows.append([item])
    if len(rows) == 1:
        return _row_latex(items)
    return r"\substack{" + r" \\ ".join(_row_latex(row) for row in rows) + "}"


def _with_integral_limits(items: list[Item]) -> list[Item]:
    """A display integral's limits stand at its right, at its top and foot: far enough from the
    row's baseline that the row cut may give the upper one to the line above; they are its scripts."""
    for op in [it for it in items if it.kind == "big" and it.latex in (r"\int", r"\oint")
               and it.y1 - it.y0 > 1.5 * it.size]:
        middle = (op.y0 + op.y1) / 2
        beside = [it for it in items if it is not op and it.size < SCRIPT_SIZE * op.size and it.y0 >= op.y0 - 0.3 * op.size
                  and it.y1 <= op.y1 + 0.3 * op.size]
        starts = [it for it in beside if op.x1 - 0.6 * op.size <= it.x0 <= op.x1 + 0.5 * op.size]
        upper = _grown([it for it in starts if it.y1 <= middle], [it for it in beside if it.y1 <= middle], op.size)
        lower = _grown([it for it in starts if it.y0 >= middle], [it for it in beside if it.y0 >= middle], op.size)
        if not upper and not lower:
            continue
        latex = op.latex + (f"_{{{_row_latex(lower)}}}" if lower else "") + (f"^{{{_row_latex(upper)}}}" if upper else "")
        used = upper + lower
        built = Item(latex, op.x0, op.y0, max([op.x1] + [it.x1 for it in used]), op.y1, op.baseline, op.size, "big")
        items = [it for it in items if it is not op and not any(it is u for u in used)] + [built]
    return items


_RELATION_CHARS = set("=<>≤≥≠≈≡∼≃≅∝→←↔⇒⇐⇔↦⟶⟵")
_ARROWS = {r"\to": r"\xrightarrow", r"\rightarrow": r"\xrightarrow", r"\longrightarrow": r"\xrightarrow",
           r"\leftarrow": r"\xleftarrow", r"\longleftarrow": r"\xleftarrow"}


def _with_oversets(items: list[Item]) -> list[Item]:
    """Small glyphs set centred over (or under) a relation: `\\overset{def}{=}`, and over an
    arrow, its label (`\\xrightarrow{f}`; a long arrow is a "−" run into a "→")."""
    items = _colons(_long_arrows(items))
    for op in [it for it in items if it.kind == "glyph" and it.char in _RELATION_CHARS]:
        width = op.x1 - op.x0
        def placed(it: Item, above: bool) -> bool:
            if it is op or it.size >= SCRIPT_SIZE * op.size or not (op.x0 - 0.2 * width <= it.centre_x <= op.x1 + 0.2 * width):
                return False
            middle = (op.y0 + op.y1) / 2
            return (it.baseline < middle - 0.15 * op.size and op.baseline - it.baseline < 1.2 * op.size) if above \
                else (it.y0 > op.baseline - 0.05 * op.size and it.y0 - op.baseline < 0.8 * op.size)
        over = _grown([it for it in items if placed(it, True)], [it for it in items if it.size < SCRIPT_SIZE * op.size],
                      op.size)
        under = [it for it in items if placed(it, False)] if op.latex in _ARROWS else []
        if not over and not under:
            continue
        if op.latex in _ARROWS:
            latex = _ARROWS[op.latex] + (f"[{_row_latex(under)}]" if under else "") + f"{{{_row_latex(over)}}}"
        else:
            latex = rf"\overset{{{_row_latex(over)}}}{{{op.latex}}}"
        used = over + under
        built = Item(latex, min([op.x0] + [it.x0 for it in used]), min([op.y0] + [it.y0 for it in used]),
                     max([op.x1] + [it.x1 for it in used]), max([op.y1] + [it.y1 for it in used]),
                     op.baseline, op.size, "glyph", op.char)
        items = [it for it in items if it is not op and not any(it is u for u in used)] + [built]
    return items


def _long_arrows(items: list[Item]) -> list[Item]:
    """The pieces TeX builds a long or stretched arrow from, set touching on one baseline, as one
    arrow: "−" run into "→" (`\\longrightarrow`), "=" into "⇒" (`\\Longrightarrow`, what
    `\\implies` sets), "⇐" into "=", "⇐" over "⇒" (`\\iff`), and the small bar pdfTeX maps to
    no character before "→" (`\\mapsto`)."""
    out = sorted(items, key=lambda it: it.x0)
    k = 0
    while k + 1 < len(out):
        if out[k].latex == r"\mapstochar" and out[k + 1].latex == "-":   # `\longmapsto`: bar, "−", "→"
            out[k + 1:] = _long_arrows(out[k + 1:])
        run = [out[k]]
        while k + len(run) < len(out) and len(run) < 3:
            a, b = run[-1], out[k + len(run)]
            if b.x0 - a.x1 >= 0.15 * a.size or abs(a.baseline - b.baseline) >= 0.5:
                break
            run.append(b)
        for length in (3, 2):
            arrow = _ARROW_PIECES.get(tuple(it.latex for it in run[:length])) if len(run) >= length else None
            if arrow is not None:
                if arrow in _SPACED_ARROWS and 0 < k and k + length < len(out) and \
                        min(run[0].x0 - out[k - 1].x1, out[k + length].x0 - run[length - 1].x1) > 0.42 * run[0].size:
                    arrow = _SPACED_ARROWS[arrow]   # a thick space more on each side than a relation has
                out[k:k + length] = [replace(run[length - 1], x0=run[0].x0, latex=arrow, kind="glyph")]
                break
        k += 1
    return out


_SPACED_ARROWS = {r"\Longrightarrow": r"\implies", r"\Longleftarrow": r"\impliedby",
                  r"\Longleftrightarrow": r"\iff"}


def _colons(items: list[Item]) -> list[Item]:
    """A colon set closer to what comes before it than to what follows is `\\colon` ("f: A → B":
    amsmath puts 2mu before it and 6mu and more after: measured 0.11-0.22 em and 0.33 em); one
    with even spaces (5mu each side, 0.28 em) is the relation ":" of set-builder notation."""
    out = sorted(items, key=lambda it: it.x0)
    for k in range(1, len(out) - 1):
        item = out[k]
        before, after = item.x0 - out[k - 1].x1, out[k + 1].x0 - item.x1
        if item.latex == ":" and before < 0.25 * item.size and after >= 0.31 * item.size:
            out[k] = replace(item, latex=r"\colon")
    return out


_ARROW_PIECES = {("-", r"\to"): r"\longrightarrow", (r"\leftarrow", "-"): r"\longleftarrow",
                 ("=", r"\Rightarrow"): r"\Longrightarrow", (r"\Leftarrow", "="): r"\Longleftarrow",
                 (r"\Leftarrow", r"\Rightarrow"): r"\Longleftrightarrow",   # what `\iff` sets
                 (r"\leftarrow", r"\to"): r"\longleftrightarrow",
                 (r"\mapstochar", r"\to"): r"\mapsto", (r"\mapstochar", r"\longrightarrow"): r"\longmapsto"}


def _grown(seed: list[Item], candidates: list[Item], size: float) -> list[Item]:
    """A limit's glyphs: those centred on the operator, and those beside them on their line
    ("i = 0" under a sum is wider than the sum)."""
    group = list(seed)
    changed = bool(group)
    while changed:
        changed = False
        x0, x1 = min(it.x0 for it in group), max(it.x1 for it in group)
        y0, y1 = min(it.y0 for it in group), max(it.y1 for it in group)
        for it in candidates:
            if any(it is g for g in group):
                continue
            across = min(y1, it.y1) - max(y0, it.y0)
            gap = max(it.x0 - x1, x0 - it.x1)
            if across >= 0.5 * min(y1 - y0, it.y1 - it.y0) and gap < 0.4 * size:
                group.append(it)
                changed = True
    return group


def _ellipses(items: list[Item], size: float) -> list[Item]:
    """Three dots set as three glyphs (`\\cdot \\cdot \\cdot`, `...`) are one ellipsis, as TeX's
    `\\cdots` and `\\dots` are one symbol to a renderer; three full stops stacked are `\\vdots`,
    three stepping down to the right `\\ddots`."""
    out: list[Item] = []
    for item in items:
        run = out[-2:]
        if (item.latex in (r"\cdot", ".") and len(run) == 2 and all(it.latex == item.latex for it in run)
                and item.x0 - run[1].x1 < 0.4 * size and run[1].x0 - run[0].x1 < 0.4 * size
                and not (len(out) > 2 and out[-3].latex == item.latex)):
            first = run[0]
            dots = [first, run[1], item]
            middles = [(it.y0 + it.y1) / 2 for it in dots]
            if max(middles) - min(middles) < 0.3 * size:
                latex = r"\cdots" if item.latex == r"\cdot" else r"\dots"
            elif max(it.centre_x for it in dots) - min(it.centre_x for it in dots) < 0.3 * size:
                latex = r"\vdots"     # TeX stacks three full stops
            elif middles == sorted(middles):
                latex = r"\ddots"     # down to the right
            else:
                out.append(item)
                continue
            out[-2:] = [Item(latex, min(it.x0 for it in dots), min(it.y0 for it in dots), max(it.x1 for it in dots),
                             max(it.y1 for it in dots), max(it.baseline for it in dots), first.size, "glyph", "…")]
            continue
        out.append(item)
    return out


# -- rows and scripts ---------------------------------------------------------------------------
def _main_size(items: list[Item]) -> float:
    """The size of the row's own glyphs: the largest size with a quarter as many glyphs as the
    commonest (scripts can outnumber their bases: M_{1,39} = A^{ml}_{1,39} ...)."""
    sizes = [round(it.size, 1) for it in items if it.kind in ("glyph", "upright")] or [round(it.size, 1) for it in items]
    counts = {size: sizes.count(size) for size in set(sizes)}
    most = max(counts.values())
    return max(size for size, count in counts.items() if count >= 0.25 * most)


def _anchor(item: Item, main_size: float) -> float:
    """Where an item sits for rows: a glyph's baseline; a big symbol's middle, a quarter em under it."""
    if item.kind == "big" and item.latex not in ("√",):
        return (item.y0 + item.y1) / 2 + 0.25 * main_size
    return item.baseline


def _rows(items: list[Item]) -> list[list[Item]]:
    if not items:
        return []
    size = _main_size(items)
    full = sorted(_anchor(it, size) for it in items if it.size >= SCRIPT_SIZE * size and it.kind != "big")
    if not full:
        return [items]
    bands = [[full[0], full[0]]]
    for y in full[1:]:
        if y - bands[-1][1] > ROW_GAP * size:
            bands.append([y, y])
        else:
            bands[-1][1] = y
    rows: list[list[Item]] = [[] for _ in bands]
    for item in items:
        y = _anchor(item, size)
        k = min(range(len(bands)), key=lambda b: 0.0 if bands[b][0] <= y <= bands[b][1]
                else min(abs(y - bands[b][0]), abs(y - bands[b][1])))
        rows[k].append(item)
    return rows


def _row_latex(items: list[Item]) -> str:
    """One row (or a script, numerator, ...) as LaTeX, its scripts attached to their bases."""
    if not items:
        return ""
    size = _main_size(items)
    items = _negations(_ellipses(sorted(items, key=lambda it: (it.x0, it.y0)), size))
    on_line = [it.baseline for it in items if abs(it.size - size) < 0.1 * size and it.kind in ("glyph", "upright")]
    baseline = statistics.median(on_line) if on_line else statistics.median(it.baseline for it in items)

    pieces: list[tuple[Item, list[Item], list[Item]]] = []   # base, its subscripts, its superscripts
    for item in items:
        small = item.size < SCRIPT_SIZE * size and item.kind != "built"
        shift = baseline - item.baseline
        place = "sup" if small and shift > SUP_SHIFT * size else "sub" if small and shift < -SUB_SHIFT * size else "base"
        if place == "base":
            pieces.append((item, [], []))
            continue
        if not pieces:   # a script before any base (a prescript): on an empty group
            pieces.append((Item("{}", item.x0, item.y0, item.x0, item.y1, baseline, size, "built"), [], []))
        (pieces[-1][1] if place == "sub" else pieces[-1][2]).append(item)

    out: list[str] = []
    k = 0
    previous_end: float | None = None
    while k < len(pieces):
        base, subs, sups = pieces[k]
        if previous_end is not None:
            gap = (base.x0 - previous_end) / size
            out.append(r"\qquad " if gap >= 1.6 else r"\quad " if gap >= 0.8 else "")
        words = _text_run(pieces, k, size)
        if words is not None:
            text, k = words
            out.append(text)
            previous_end = pieces[k][0].x1
            k += 1
            continue
        if base.kind == "upright":
            # a run of upright letters set close together: one word, its scripts on its last letter
            end = k
            while (not pieces[end][1] and not pieces[end][2] and end + 1 < len(pieces)
                   and pieces[end + 1][0].kind == "upright"
                   and pieces[end + 1][0].x0 - pieces[end][0].x1 < 0.25 * size):
                end += 1
            text = _upright([piece[0] for piece in pieces[k:end + 1]])
            base, subs, sups = pieces[end]
            k = end
        else:
            text = base.latex
        if subs or sups:
            text = text if _atomic(text) else f"{{{text}}}"
            if sups and all(it.latex == "'" for it in sups):
                text += "'" * len(sups)
                sups = []
            if subs:
                text += f"_{{{_row_latex(subs)}}}"
            if sups:
                text += f"^{{{_row_latex(sups)}}}"
        out.append(text)
        previous_end = max([base.x1] + [it.x1 for it in subs + sups])
        k += 1
    return _joined(out)


def _negations(items: list[Item]) -> list[Item]:
    """A slash set over a relation negates it: TeX's `\\not` glyph before the relation (`\\neq`),
    or a "/" after it (amssymb's `\\notin` is an "∈" with a "/" over it)."""
    out: list[Item] = []
    for item in items:
        if out and _over(out[-1], item):
            slash, relation = (item, out[-1]) if item.latex in _SLASHES else (out[-1], item)
            out[-1] = replace(relation, latex=_NEGATED[relation.latex], x0=min(slash.x0, relation.x0),
                              x1=max(slash.x1, relation.x1))
            continue
        out.append(item)
    return out


_SLASHES = ("/", r"\not")


def _over(a: Item, b: Item) -> bool:
    """Whether one of two neighbouring items (`a` first) is a slash set over the other, a relation:
    their boxes overlap, or `a` is TeX's `\\not`, a glyph of no width that prints over what follows."""
    if a.latex == r"\not" and b.latex in _NEGATED and a.x1 - a.x0 < 0.1 * a.size:
        return b.x0 - a.x1 < 0.5 * a.size
    if not ((a.latex in _SLASHES and b.latex in _NEGATED) or (b.latex in _SLASHES and a.latex in _NEGATED)):
        return False
    return min(a.x1, b.x1) - max(a.x0, b.x0) > 0.5 * min(a.x1 - a.x0, b.x1 - b.x0)


def _text_run(pieces: list[tuple[Item, list[Item], list[Item]]], k: int, size: float) -> tuple[str, int] | None:
    """Words set in the text font inside a display ("by (3.24)", "for all"): one `\\text{}` with
    their spaces, from piece k; (LaTeX, index of its last piece), or None where no such word
    starts there (one of two letters or more that is not an operator's name)."""
    end, word = k, ""
    while end < len(pieces) and pieces[end][0].kind == "upright" and not pieces[end][1] and not pieces[end][2] \
            and (end == k or pieces[end][0].x0 - pieces[end - 1][0].x1 < 0.15 * size):
        word += pieces[end][0].char
        end += 1
    if len(word) < 2 or word in _OPERATOR_NAMES:
        return None
    text, last = word, end - 1
    while last + 1 < len(pieces):
        item, subs, sups = pieces[last + 1]
        gap = item.x0 - pieces[last][0].x1
        if subs or sups or not item.upright or not item.char or gap > 0.5 * size \
                or not (item.char.isalnum() or item.char in "().,;:-'"):
            break
        text += (" " if gap >= 0.2 * size else "") + item.char
        last += 1
    if len(text.split()) < 2 and last == end - 1 and len(word) <= 3:
        return None     # a short name alone ("per", "tr"): an operator name, below
    escaped = re.sub(r"([#$%&_{}])", r"\\\1", text)
    return rf"\text{{{escaped}}}", last


def _upright(run: list[Item]) -> str:
    """Upright letters: an operator's name (\\sin), one letter (\\mathrm{d}), a name (\\operatorname), a word (\\text)."""
    word = "".join(it.latex for it in run)
    if word in _OPERATOR_NAMES:
        return "\\" + word + " "
    if len(word) == 1:
        return rf"\mathrm{{{word}}}"
    return rf"\text{{{word}}}" if len(word) > 3 else rf"\operatorname{{{word}}}"


def _atomic(text: str) -> bool:
    """Whether a script can follow `text` without braces: one symbol, command or group, or a
    sized bracket (a `\\right)` inside braces would leave its `\\left` unpaired)."""
    return len(text) == 1 or bool(re.fullmatch(r"\\[A-Za-z]+|\\[a-z]+\{(?:\\[A-Za-z]+|\w+)\}|\{.*\}", text)) \
        or bool(re.fullmatch(r"\\(?:right|[bB]igg?r?)(?:[()\[\]|]|\\[A-Za-z|{}]+)", text))


_NEGATED = {"=": r"\ne", r"\in": r"\notin", r"\equiv": r"\not\equiv", r"\subset": r"\not\subset",
            r"\subseteq": r"\nsubseteq", r"\le": r"\nleq", r"\ge": r"\ngeq", r"\sim": r"\nsim", "<": r"\nless",
            ">": r"\ngtr", r"\cong": r"\ncong", r"\mid": r"\nmid", r"\|": r"\nparallel"}


_PMOD = re.compile(r"(?:\\q?quad )?\(\\mod ([^()]+)\)")


def _joined(parts: list[str]) -> str:
    return _PMOD.sub(lambda m: rf"\pmod{{{m.group(1).strip()}}}", _concatenated(parts))


def _concatenated(parts: list[str]) -> str:
    out = ""
    for part in parts:
        if out and re.search(r"\\[A-Za-z]+$", out) and part[:1].isalnum():
            out += " "
        out += part
    return out.strip()


def _split_tag(items: list[Item], size: float) -> tuple[list[Item], str | None]:
    """A parenthesised number at the far right or the far left, apart from the rest: the
    equation's number."""
    for end in range(1, min(len(items), 12)):
        head = items[:end]
        match = _TAG.match("".join(it.char or it.latex for it in head))
        if match and end < len(items) and (items[end].x0 - max(it.x1 for it in head)) / size >= TAG_GAP:
            return items[end:], match.group(1)
    for start in range(len(items) - 1, 0, -1):
        tail = items[start:]
        text = "".join(it.char or it.latex for it in tail)
        if len(text) > 12:
            break
        match = _TAG.match(text)
        if match and (items[start].x0 - max(it.x1 for it in items[:start])) / size >= TAG_GAP:
            return items[:start], match.group(1)
    return items, None
