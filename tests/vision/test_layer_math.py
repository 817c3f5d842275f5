"""Displayed formulas of born-digital PDFs as LaTeX, from where the glyphs and rules sit: each
page is typeset here glyph by glyph the way TeX sets it (scripts smaller and shifted, a fraction's
parts over and under a rule, limits over and under a sum), and the LaTeX must say the same."""
from __future__ import annotations

import pymupdf
import pytest

from vision.layer_math import PageMaths, formula_rows

SERIF, ITALIC = "Times-Roman", "Times-Italic"
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


class Setter:
    """Glyphs placed left to right along a baseline, as a typesetter would."""

    def __init__(self):
        self.doc = pymupdf.open()
        self.page = self.doc.new_page(width=400, height=300)
        self.page.insert_font(fontname="dejavu", fontfile=DEJAVU)

    def put(self, x: float, baseline: float, text: str, font: str = ITALIC, size: float = 10.0) -> float:
        """Sets `text` at x on `baseline`; returns where it ends."""
        name = {"Times-Roman": "tiro", "Times-Italic": "tiit", "dejavu": "dejavu"}[font]
        self.page.insert_text((x, baseline), text, fontname=name, fontsize=size)
        if name == "dejavu":
            return x + pymupdf.Font(fontfile=DEJAVU).text_length(text, fontsize=size)
        return x + pymupdf.get_text_length(text, fontname=name, fontsize=size)

    def rule(self, x0: float, x1: float, y: float) -> None:
        self.page.draw_line((x0, y), (x1, y), width=0.4)

    def rows(self) -> list[FormulaRow]:
        page = pymupdf.open("pdf", self.doc.tobytes())[0]
        return formula_rows(page, page.rect)


def test_scripts_and_a_fraction():
    s = Setter()
    x = s.put(50, 100, "E")
    x = s.put(x, 101.5, "i", size=7)             # subscript: smaller, a little lower
    x = s.put(x + 2.8, 100, "=", SERIF)
    start = x + 2.8
    num = s.put(s.put(s.put(start + 4, 93, "2", SERIF), 93, "l"), 93, "+1", SERIF)   # over the rule
    den = s.put(start + 1, 107, "l")                                                 # under it
    den = s.put(s.put(s.put(den, 107, "(", SERIF), 107, "l"), 107, "+1)", SERIF)
    end = max(num, den) + 1
    s.rule(start, end, 97.5)
    x = s.put(end + 4, 100, "x")
    s.put(x + 0.5, 95.9, "2", SERIF, size=7)      # superscript: smaller, well above the baseline
    [row] = s.rows()
    assert row.latex == r"E_{i}=\frac{2l+1}{l(l+1)}x^{2}", row


def test_a_sum_with_limits_and_an_equation_number():
    s = Setter()
    sigma = s.put(60, 100, "∑", "dejavu", size=16)
    s.put(60, 112, "i", size=7)
    s.put(63, 112, "=", SERIF, size=7)
    s.put(68, 112, "1", SERIF, size=7)
    s.put(64, 86, "n", size=7)
    x = s.put(sigma + 3, 100, "x")
    s.put(x, 101.5, "i", size=7)
    s.put(330, 100, "(3)", SERIF)
    [row] = s.rows()
    assert (row.latex, row.tag) == (r"\sum_{i=1}^{n}x_{i}", "3"), row


def test_operator_names_greek_and_a_line_of_prose_the_box_took_in():
    s = Setter()
    s.put(40, 60, "so the energy of the system can be written as", SERIF)
    x = s.put(80, 100, "sin", SERIF)
    x = s.put(x + 1.7, 100, "θ", "dejavu")
    x = s.put(x + 2.8, 100, "≤", "dejavu")
    s.put(x + 2.8, 100, "1", SERIF)
    prose, maths = s.rows()
    assert (prose.latex, prose.text) == (None, "so the energy of the system can be written as")
    assert prose.bottom < maths.top   # rows say where they are, so the region's lines can be shared out
    assert maths.latex == r"\sin \theta\le 1", maths


def test_nothing_to_build_from():
    s = Setter()
    s.rule(10, 100, 50)
    assert s.rows() is None


def _inline(pieces) -> str | None:
    """Sets (text, font, size, rise) pieces along one line and reads it back as Markdown."""
    s = Setter()
    x = 40.0
    for text, font, size, rise in pieces:
        x = s.put(x, 100 - rise, text, font, size)
    page = pymupdf.open("pdf", s.doc.tobytes())[0]
    return PageMaths(page).inline_text((30, 88, 390, 106))


def test_inline_maths_in_a_line_of_prose_becomes_dollar_latex():
    line = _inline([("where ", SERIF, 10, 0), ("x", ITALIC, 10, 0), ("i", ITALIC, 7, -1.5),
                    (" is the position and ", SERIF, 10, 0), ("E", ITALIC, 10, 0), (" = ", SERIF, 10, 0),
                    ("mc", ITALIC, 10, 0), ("2", SERIF, 7, 3.6), (" holds.", SERIF, 10, 0)])
    assert line == "where $x_{i}$ is the position and $E=mc^{2}$ holds.", line


def test_emphasis_and_plain_prose_are_not_maths():
    assert _inline([("as shown by Smith ", SERIF, 10, 0), ("et al.", ITALIC, 10, 0),
                    (" in their study", SERIF, 10, 0)]) is None
    assert _inline([("The cost is $5 a month, paid in advance.", SERIF, 10, 0)]) is None


def test_a_footnote_mark_and_a_logo_s_raised_letter_are_not_maths_words():
    line = _inline([("vectors of ", SERIF, 10, 0), ("numeric", ITALIC, 10, 0), ("1", SERIF, 7, 3.6),
                    (", complex and ", SERIF, 10, 0), ("L", SERIF, 10, 0), ("A", SERIF, 7, 2.2),
                    ("TEX values", SERIF, 10, 0)])
    assert line is not None and "numeric$^{1}$" in line and "$^{\\mathrm{A}}$" not in line, line


def test_raised_digits_opening_a_line_are_a_lists_mark_not_a_script():
    """A slide's numbered list sets each item's number small in a ball, above the text's
    baseline: with no base before it, it is the item's number, not `$^{1}$`. A script after a
    base on the same line still is one."""
    assert _inline([("1", SERIF, 7, 2.5), ("  Bury twelve probes at three depths.", SERIF, 10, 0)]) is None
    line = _inline([("2", SERIF, 7, 2.5), ("  Square ", SERIF, 10, 0), ("x", ITALIC, 10, 0), ("2", SERIF, 7, 3.6)])
    assert line == "2 Square $x^{2}$", line


def _bands(maths: PageMaths) -> list[list[float]]:
    """The page's displays, one per band of glyphs (a gap of 4 points between bands); a band of
    small glyphs alone (an overbrace's label) joins the band under it."""
    bands: list[list[float]] = []
    small: list[bool] = []
    for item in sorted(maths.items, key=lambda it: it.y0):
        if bands and (item.y0 < bands[-1][1] + 4 or (small[-1] and item.y0 < bands[-1][1] + 6)):
            bands[-1][1] = max(bands[-1][1], item.y1)
            small[-1] = small[-1] and item.size < 8
        else:
            bands.append([item.y0, item.y1])
            small.append(item.size < 8)
    return bands


TEX_DISPLAYS = [      # tex/arrays.tex, in order
    r"\hat{x}+\bar{y}=\tilde{z}\cdot\vec{v}+\dot{a}",
    r"\hat{\theta}_{i}=\bar{X}_{n}^{2}",
    r"A=\begin{pmatrix} a & b \\ c & d \end{pmatrix}",
    r"M=\begin{pmatrix} a_{11} & a_{12} & a_{13} \\ a_{21} & a_{22} & a_{23} \\ 0 & 0 & 1 \end{pmatrix}",
    r"\det \begin{vmatrix} x & y \\ z & w \end{vmatrix}=xw-yz",
    r"\binom{n}{k}=\frac{n!}{k!(n-k)!}",
    r"f(x)=\begin{cases} 1 & \operatorname{if}x>0 \\ 0 & \text{otherwise} \end{cases}",
    r"\left(\sum_{i=1}^{n}x_{i}\right)^{2}\le n\sum_{i=1}^{n}x_{i}^{2}",   # \Bigl( ... \Bigr): a pair, sized
]


def test_accents_matrices_binomials_and_cases_set_by_tex():
    """Real TeX output (pdftex, Computer Modern): accents are glyphs of their own over their
    letters, and tall brackets are big-symbol glyphs, whole or in pieces, whose boxes say
    nothing of their height."""
    from pathlib import Path

    page = pymupdf.open(Path(__file__).parent / "tex" / "arrays.pdf")[0]
    maths = PageMaths(page)
    bands = _bands(maths)
    found = []
    for top, bottom in bands:
        [row] = maths.formula_rows((0, top, page.rect.width, bottom))
        found.append(row.latex)
    assert found == TEX_DISPLAYS


def test_accented_letters_in_a_line_of_prose_set_by_tex():
    from pathlib import Path

    page = pymupdf.open(Path(__file__).parent / "tex" / "inline.pdf")[0]
    maths = PageMaths(page)
    lines = sorted((line["bbox"] for block in page.get_text("dict")["blocks"] for line in block["lines"]),
                   key=lambda box: box[1])
    first, second = [(0, box[1], page.rect.width, box[3]) for box in lines]
    line = maths.inline_text(first)
    assert line == r"The estimate $\hat{\theta}$ of $\theta$ is unbiased, and $\bar{x}$ is the mean."
    assert maths.inline_text(first) == line, "asking twice changes nothing"
    assert maths.inline_text(second) is None, "accented words are prose"


AMS_DISPLAYS = [      # tex/amsdisplays.tex, in order
    r"S=\sum_{k=1}^{\infty}a^{k}",
    r"\int_{-\infty}^{\infty}f(t)dt=1",
    r"y=\sqrt{d^{n}+\lambda}",
    r"r=\sqrt[3]{x+1}",
    r"x^{2}\sqrt{y}",
    r"F=\frac{\frac{q}{5}}{\Delta^{-1}}",
    r"x=\frac{1}{1+\frac{1}{y}}",
    r"a\ne b,\quad x\notin\mathbb{R}^{n}",
    r"\|w\|\le|r|",
    r"N=\begin{bmatrix} 0 & r \\ \Phi & 5 \end{bmatrix}",
    r"u\equiv 4\pmod{n}",
    r"W\overset{\operatorname{def}}{=}2-W^{3}",
    r"A\xrightarrow{f}B",
    r"a+b=c",
    r"\underbrace{x_{1}+\cdots+x_{n}}_{n}=E",
    r"\overbrace{a+b+c}^{3}=d",
    r"\gamma_{k}^{k+1}\ne s^{n}+5",
    r"\sum_{\substack{0\le i\le m \\ 0<j<n}}P(i,j)",
    r"\left(\frac{a}{4}\right)^{2}=\biggl\{\frac{1}{2}",
]


def test_latex_displays_with_the_big_symbol_font():
    """pdflatex output with amsmath: a display integral's limits at its right, a radical sign
    that hangs from its origin (its box says nothing of where its overline starts), a root's
    index, nested fractions, negated relations (a slash over the relation), blackboard bold, a
    congruence, a symbol set over a relation, a labelled arrow (a long arrow is "-" run into
    "->"), a box (its frame's top and bottom are no fraction bars), horizontal braces (pieces of the
    big-symbol font with rules between them, which are no fraction bars either), a `\\not` after
    scripts (which the extraction drops: the painting trace has it), two rows of limits
    (`\\substack`), a pair of tall brackets (`\\left( ... \\right)`, so the script after it sits
    as high as on the page) and a tall bracket alone (`\\biggl\\{`, by its ink's height)."""
    from pathlib import Path

    page = pymupdf.open(Path(__file__).parent / "tex" / "amsdisplays.pdf")[0]
    maths = PageMaths(page)
    bands = _bands(maths)
    found = [row.latex for top, bottom in bands[:-1] for row in maths.formula_rows((0, top, page.rect.width, bottom))]
    assert found == AMS_DISPLAYS

    *_, sentence = sorted((line["bbox"] for block in page.get_text("dict")["blocks"] for line in block["lines"]),
                          key=lambda box: box[1])
    second = pymupdf.open(Path(__file__).parent / "tex" / "amsdisplays.pdf")[1]
    boxes = [line["bbox"] for block in second.get_text("dict")["blocks"] for line in block["lines"]]
    # a detected line holds the roots' overlines, which rise above the font boxes
    assert PageMaths(second).inline_text((0, min(box[1] for box in boxes) - 3, second.rect.width,
                                          max(box[3] for box in boxes))) == \
        r"Also $y=\sqrt{c_{y}}$ and $n=\sqrt[3]{S_{m}+x_{q}^{k+1}}$ hold.", \
        "a radicand's letters are under the overline by their middles (their boxes reach above it)"
    assert maths.inline_text((0, sentence[1], page.rect.width, sentence[3])) == \
        r"We have $\ln x\le U+4$ and $u=\frac{a}{b}$ here, and $v=\sqrt{2}$, so $\nabla\cdot\mathbf{B}=\Gamma$.", \
        "an operator's name, a number after an operator, a fraction, a root, a bold vector and an upright " \
        "Greek capital are the formula's"


def test_the_big_symbol_font_s_glyphs_are_text_in_the_layer():
    """pdfTeX maps cmex10's glyphs to no Unicode: read as such, a page of formulas looked like a
    layer of glyph numbers and was recognised from its pixels. They are the symbols they stand for."""
    from pathlib import Path

    from vision.document import Document
    from vision.text_layer import _unmapped

    pdf = (Path(__file__).parent / "tex" / "amsdisplays.pdf").read_bytes()
    with Document.open(pdf, filename="amsdisplays.pdf") as document:
        words = document.text_words(0, 200, unmapped_as_replacement=True)
    text = " ".join(word.text for word in words)
    assert sum(_unmapped(word.text) for word in words) == 0, text
    for symbol in "∑∫√[]":
        assert symbol in text, (symbol, text)


def test_an_operator_s_name_does_not_make_a_display_prose():
    """A display's share of maths letters leaves out the letters of operator names: "f ≡ 0 (mod p)"
    and "sin x = y" are displays (their upright "mod" and "sin" had outnumbered f and p)."""
    for pieces in ([("f", ITALIC, 10, 0), (" \u2261 0 (", "dejavu", 10, 0), ("mod ", SERIF, 10, 0),
                    ("p", ITALIC, 10, 0), (")", SERIF, 10, 0)],
                   [("sin ", SERIF, 10, 0), ("x", ITALIC, 10, 0), (" = ", SERIF, 10, 0), ("y", ITALIC, 10, 0)]):
        s = Setter()
        x = 40.0
        for text, font, size, rise in pieces:
            x = s.put(x, 100 - rise, text, font, size)
        page = pymupdf.open("pdf", s.doc.tobytes())[0]
        assert PageMaths(page).is_display_row((30, 88, 390, 106)), pieces
    assert not PageMaths(pymupdf.open("pdf", _prose_page())[0]).is_display_row((30, 88, 390, 106))


def _prose_page() -> bytes:
    s = Setter()
    x = s.put(40, 100, "the ", SERIF)
    x = s.put(x, 100, "x", ITALIC)
    s.put(x, 100, " = 2 case holds for all such sets", SERIF)
    return s.doc.tobytes()


def test_arrows_tex_builds_from_pieces_dots_and_a_map_s_colon():
    """pdflatex output (`tex/arrows.tex`): `\\implies` is an "=" run into a "⇒" (with a thick space
    more on each side than `\\Longrightarrow`), `\\iff` a "⇐"
    over a "⇒", `\\mapsto` a bar pdfTeX maps to no character before a "→" (its raw code came out
    as a "7"); `\\vdots` and `\\ddots` are three full stops stacked or stepping down (they had
    come out as `\\dots`); a colon closer to what precedes it is `\\colon`, an evenly spaced one
    a relation; `\\Pr` before a bracket is the formula's, and so is a number after an operator
    after a number ("= 2 + 2")."""
    from pathlib import Path

    page = pymupdf.open(Path(__file__).parent / "tex" / "arrows.pdf")[0]
    maths = PageMaths(page)
    bands = _bands(maths)
    found = [row.latex for top, bottom in bands[:-1] for row in maths.formula_rows((0, top, page.rect.width, bottom))]
    assert found == [
        r"U\implies B\iff C",
        r"f\colon D\to L,h\mapsto h^{2}",
        r"x\longmapsto y\longleftarrow z",
        r"S=\{x:x>0\}",
        r"R=\begin{pmatrix} u_{11} & \cdots & u_{1n} \\ \vdots & \ddots & \vdots \\ u_{m1} & \cdots & u_{mn} "
        r"\end{pmatrix}",
    ]
    top, bottom = bands[-1]
    line = maths.inline_text((0, top - 3, page.rect.width, bottom))
    assert line.startswith(r"Here $\Pr (F|G)=\frac{f}{5}$ and $\langle n,g\rangle=2+2$ hold, with $g\colon E\to T"), line


def test_a_maps_to_arrow_is_text_in_the_layer():
    """pdfTeX maps `\\mapsto`'s bar to no character: the layer read it as U+FFFD, the line holding
    it was untrusted, and a page with one in a long line of prose failed the layer's coverage
    check and was recognised from its pixels. It reads "↦"."""
    from pathlib import Path

    from vision.document import Document

    pdf = (Path(__file__).parent / "tex" / "arrows.pdf").read_bytes()
    with Document.open(pdf, filename="arrows.pdf") as document:
        text = " ".join(word.text for word in document.text_words(0, 200, unmapped_as_replacement=True))
    assert "h\u21a6h2" in text.replace(" ", "") and "\ufffd" not in text, text
