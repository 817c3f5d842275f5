"""The fact-test checks of bench/facts/ on hand-written outputs, KaTeX in the real Chromium, and the suite's files."""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "facts"))

from checks import check_absent, check_order, check_present, check_table, tables_of  # noqa: E402
from fact_files import load_facts  # noqa: E402
from math_render import KatexRenderer, _without_final_punctuation, candidates, check_math, normalise_latex  # noqa: E402,E501


def test_present_tolerates_one_wrong_character_in_ten_and_typography():
    text = "Some text.\nThe “acmart” document class can be used to prepare articles for\nmore."
    assert check_present({"text": 'The "acmart" document class can be used to prepare articles for'}, text)
    assert check_present({"text": "The acmart document class can be used to prepare artikles for"}, text)
    assert not check_present({"text": "The acmart document format is used to write papers for"}, text)


def test_absent_page_number_fails_only_as_a_whole_line():
    fact = {"text": "14", "whole_line": True}
    assert check_absent(fact, "In 14 days the\nsecond line")
    assert not check_absent(fact, "body\n 14 \n")
    assert not check_absent({"text": "Conference acronym 'XX, June 03–05, 2018"},
                            "Conference acronym ’XX, June 03-05, 2018, Woodstock\nbody")


def test_order_needs_both_and_the_first_first():
    text = "Alpha beta gamma delta.\nEpsilon zeta eta theta."
    assert check_order({"before": "Alpha beta gamma", "after": "Epsilon zeta eta"}, text)
    assert not check_order({"before": "Epsilon zeta eta", "after": "Alpha beta gamma"}, text)
    assert not check_order({"before": "Alpha beta gamma", "after": "Iota kappa lambda"}, text)


PIPE_TABLE = """Table 1

| Messier | NGC/IC | Distance |
|---|---|---|
| M1 | NGC 1952 | 2 |
| M2 | **NGC 7089** | 11.5 |
"""
HTML_TABLE = """<table><tr><th colspan="2">Chemin</th><th>Paquet</th></tr>
<tr><td>/lib/</td><td>/lib/i386-linux-gnu/</td><td rowspan="2">libtruc1</td></tr>
<tr><td>/usr/lib/</td><td>/usr/lib/i386-linux-gnu/</td></tr></table>"""


def test_table_neighbours_in_pipe_and_html_tables():
    assert check_table({"cell": "NGC 7089", "left": "M2", "up": "NGC 1952", "right": "11.5"}, PIPE_TABLE)
    assert not check_table({"cell": "NGC 7089", "left": "M1"}, PIPE_TABLE)
    [grid] = tables_of(HTML_TABLE)
    assert len(grid) == 3 and len(grid[0]) == 3
    assert check_table({"cell": "/usr/lib/", "up": "/lib/", "right": "/usr/lib/i386-linux-gnu/"}, HTML_TABLE)
    # a spanning cell counts once: the cell below the two-column heading is a neighbour of both halves
    assert check_table({"cell": "/lib/i386-linux-gnu/", "up": "Chemin", "right": "libtruc1"}, HTML_TABLE)
    assert check_table({"cell": "/usr/lib/i386-linux-gnu/", "right": "libtruc1", "up": "/lib/i386-linux-gnu/"},
                       HTML_TABLE)
    # plain text (Tesseract's) has no table
    assert not check_table({"cell": "NGC 7089", "left": "M2"}, "M2 NGC 7089 11.5")


def test_latex_candidates_and_normalisation():
    markdown = r"It costs \$5. Let $x_1^2$ be $$\dfrac{a}{b}\,.$$ and \(y\) or \[ \left( z \right) \]"
    assert candidates(markdown) == ["x_1^2", r"\dfrac{a}{b}\,.", "y", r"\left( z \right)"]
    listing = "```latex\n\\[\\int_{A_1}\\int_{A_2}\\dotsi\\]\n```\nand `$x$` in code, but $y$ in prose"
    assert candidates(listing) == ["y"]
    assert normalise_latex(r"\dfrac{a}{b}\,.") == normalise_latex(r"\frac a b") == r"\fracab"
    assert normalise_latex(r"\left( x^{2} \right)") == normalise_latex("(x^2)")


@pytest.fixture(scope="module")
def renderer(tmp_path_factory):
    katex = KatexRenderer(tmp_path_factory.mktemp("katex"))
    yield katex
    katex.close()


def test_math_render_comparison_in_chromium(renderer):
    fact = {"id": "sum", "latex": r"\sum_{i=1}^n x_i^2"}
    # same render, different source: sub/superscript order and braces
    assert check_math(fact, r"so $$\sum_{i=1}^{n} x^{2}_{i}$$ holds", renderer) == {
        "passed": True, "how": "render", "candidate": r"\sum_{i=1}^{n} x^{2}_{i}"}
    # the formula inside a longer one (with an equation number) still matches
    assert check_math(fact, r"$$y = \sum_{i=1}^{n} x^{2}_{i} \quad (3)$$", renderer)["passed"]
    # the exponent on the line, not raised; a different symbol; no formula at all
    assert not check_math(fact, r"$$\sum_{i=1}^{n} x_i 2$$", renderer)["passed"]
    assert not check_math(fact, r"$$\sum_{i=1}^{n} y_i^2$$", renderer)["passed"]
    assert check_math(fact, "sum of x i squared", renderer) == {"passed": False, "how": "no candidate",
                                                                 "candidates": 0}
    # a formula recogniser's spelling of a page's display: other braces, no \left/\right, no final
    # comma, an equation number after it
    page = {"id": "gamma", "latex": r"\gamma_z(t)=\left(\cos tu+\frac\alpha\beta\sin tv,-\frac\beta\alpha\sin tu\right),"}
    assert check_math(page, r"$$\gamma_{z}(t)=(\cos t u+\frac{\alpha}{\beta} \sin t v,-\frac{\beta}{\alpha} \sin t u)"
                            r" \qquad (74)$$", renderer)["passed"]
    assert not check_math(page, r"$$\gamma_{z}(t)=(\cos t u+\frac{\beta}{\alpha} \sin t v,-\frac{\beta}{\alpha} \sin t u)$$",
                          renderer)["passed"]
    fraction = {"id": "frac", "latex": r"\frac{a+b}{c}"}
    assert not check_math(fraction, "$$(a+b)/c$$", renderer)["passed"]


def test_the_suite_is_well_formed_and_every_formula_renders(renderer):
    facts, pages = load_facts()
    counts = Counter((fact["category"], fact["split"]) for fact in facts)
    assert len(facts) >= 300 and len(pages) >= 40
    assert counts[("math", "held_out")] >= 40
    assert all(counts[(category, "held_out")] for category in ("present", "absent", "order", "table"))
    formulas = [fact["latex"] for fact in facts if fact["category"] == "math"]
    formulas += [_without_final_punctuation(latex) for latex in formulas]   # as check_math renders them
    failures = [(latex, glyphs) for latex, glyphs in zip(formulas, renderer.render(formulas))
                if isinstance(glyphs, str)]
    assert not failures
