"""Displayed formulas of a born-digital page come out as LaTeX in the Markdown, built from the
layer's glyphs (`workers.pipeline.layer_maths`), with `--text-layer auto`; prose around them,
emphasised words and hyphens stay prose; `--text-layer never` keeps the reading."""
from __future__ import annotations

import pymupdf
import pytest

from vision.document import Document
from workers.document_result import render_markdown, render_text
from workers.page_pipeline import PagePipeline
from workers.page_result import LineResult, PageResult, RegionResult, RegionStatus
from workers.pipeline.layer_maths import _without_taken_numbers
from workers.structure_blocks import Block, BlockType
from workers.recognizers.tesseract import TesseractRecognizer

PROSE = ("The field of a sphere is written as a sum over its modes, each weighted by a coefficient that "
         "depends on the order of the mode and on the size of the sphere relative to the wavelength.")
AFTER = ("Here the coefficients are those of the incident wave; the well-known result for small spheres "
         "follows when only the first term is kept, as is usual in the long-wavelength limit.")


def _page() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(72, 100, 523, 170), PROSE, fontname="tiro", fontsize=11)
    # a display, centred, set as TeX sets it: italic letters, scripts smaller and shifted, a fraction
    x, base = 230.0, 230.0
    for text, font, size, dy in (("E", "tiit", 11, 0), ("i", "tiit", 7.7, 1.6), (" = ", "tiro", 11, 0)):
        page.insert_text((x, base + dy), text, fontname=font, fontsize=size)
        x += pymupdf.get_text_length(text, fontname=font, fontsize=size)
    start = x + 2
    page.insert_text((start + 2, base - 7.5), "2l + 1", fontname="tiit", fontsize=11)
    width = pymupdf.get_text_length("2l + 1", fontname="tiit", fontsize=11) + 4
    page.draw_line((start, base - 3.5), (start + width, base - 3.5), width=0.4)
    page.insert_text((start + 2 + (width - 4 - pymupdf.get_text_length("n", fontname="tiit", fontsize=11)) / 2,
                      base + 8.5), "n", fontname="tiit", fontsize=11)
    x = start + width + 3
    page.insert_text((x, base), "x", fontname="tiit", fontsize=11)
    page.insert_text((x + 5.5, base - 4.5), "2", fontname="tiro", fontsize=7.7)
    page.insert_text((500, base), "(7)", fontname="tiro", fontsize=11)
    page.insert_textbox(pymupdf.Rect(72, 270, 523, 340), AFTER, fontname="tiro", fontsize=11)
    return doc.tobytes()


@pytest.fixture(scope="module")
def pdf() -> bytes:
    return _page()


def _markdown(pdf: bytes, text_layer: str) -> str:
    document = Document.open(pdf, "page")
    result = PagePipeline(TesseractRecognizer(), vision_num_threads=1).process(
        document, document.render_page(0, 150), 0, text_layer=text_layer)
    page = {**result.to_dict(), "page": 1, "state": "done"}
    return render_markdown({"documents": [{"filename": "a.pdf", "pages": [page]}]})


def test_a_display_becomes_latex_with_its_number_and_the_prose_stays(pdf):
    markdown = _markdown(pdf, "auto")
    assert "$$\nE_{i}=\\frac{2l+1}{n}x^{2} \\tag{7}\n$$" in markdown, markdown
    assert "The field of a sphere is written" in markdown and "the well-known result" in markdown
    assert markdown.count("$$") == 2, markdown


def test_without_the_layer_the_reading_stays(pdf):
    assert "\\frac" not in _markdown(pdf, "never")


def test_a_number_boxed_apart_becomes_the_tag_and_stays_in_the_text():
    """The layout boxed "(7)" apart from its formula: the Markdown has it once, as the formula's
    tag; text output and the region's lines keep it."""
    formula = RegionResult(0, "equation", "formula", "body", (300, 400, 700, 440), (0, 0, 0, 0), "E = mc2",
                           RegionStatus.OK, lines=(LineResult((300, 400, 700, 440), "E = mc2"),),
                           blocks=(Block(BlockType.EQUATION, "E=mc^{2}", (0,), number="7"),))
    number = RegionResult(1, "text", "text", "body", (1000, 405, 1040, 435), (0, 0, 0, 0), "(7)", RegionStatus.OK,
                          lines=(LineResult((1000, 405, 1040, 435), "(7)"),),
                          blocks=(Block(BlockType.PARAGRAPH, "(7)", (0,)),))
    kept = _without_taken_numbers(number, [formula, number])
    assert kept.text == "(7)" and kept.lines == number.lines
    page = PageResult(0, 0, 1275, 1650, 150.0, (formula, kept))
    result = {"documents": [{"filename": "a.pdf", "pages": [{**page.to_dict(), "page": 1, "state": "done"}]}]}
    markdown = render_markdown(result)
    assert markdown.count("\\tag{7}") == 1 and "(7)" not in markdown, markdown
    assert "(7)" in render_text(result)


def _tex_page_lines():
    """tests/vision/tex/proseanddisplays.pdf (pdflatex): its PageMaths (in points) and its text lines."""
    from pathlib import Path

    from vision.layer_math import PageMaths

    page = pymupdf.open(Path(__file__).parents[1] / "vision" / "tex" / "proseanddisplays.pdf")[0]
    lines = [LineResult(tuple(line["bbox"]), "".join(span["text"] for span in line["spans"]))
             for block in page.get_text("dict")["blocks"] for line in block["lines"]]
    return PageMaths(page), [line for line in lines if line.text.strip()]


def _region(task: str, lines, index: int = 0) -> RegionResult:
    box = (min(l.bbox[0] for l in lines), min(l.bbox[1] for l in lines),
           max(l.bbox[2] for l in lines), max(l.bbox[3] for l in lines))
    return RegionResult(index, task, task, "body", box, (0, 0, 0, 0), "\n".join(l.text for l in lines),
                        RegionStatus.OK, lines=tuple(lines),
                        blocks=(Block(BlockType.PARAGRAPH, " ".join(l.text for l in lines), tuple(range(len(lines)))),))


def test_a_page_of_sentences_and_displays_the_layout_took_for_a_table():
    """Short sentences each followed by a centred display line up like a table's columns. Read as
    text, each display is one formula: a sum's limits, a matrix's rows and a fraction's numerator
    and denominator, which the line detector (here the layer's lines) boxes apart, are pieces of
    their display; a display with a few words of text in it ("for all") is one too."""
    from workers.pipeline.layer_maths import _as_text, _prose_and_displays, _with_displays

    maths, lines = _tex_page_lines()
    table = _region("table", lines)
    assert _prose_and_displays(table, maths)
    text = _as_text(table)
    blocks = [out for block in text.blocks for out in _with_displays(block, text, maths)]
    assert [b.text for b in blocks if b.type is BlockType.EQUATION] == [
        r"S=\sum_{k=1}^{\infty}a^{k}", r"y=\sqrt{d^{n}+\lambda}", r"N=\begin{bmatrix} 0 & r \\ \Phi & 5 \end{bmatrix}",
        r"u^{-1}=\frac{u^{n}+p}{s+\Phi}", r"H=p-e\quad \text{for all}e\in D"]
    # (the radical sign's layer line, a font box that sits high, shares the sentence's row: its
    # character stays in that paragraph's text, while the formula is built from the glyph's ink)
    assert [b.text.split(" √")[0] for b in blocks if b.type is BlockType.PARAGRAPH] == [
        "It follows that", "Hence one obtains", "Recall that", "We define", "It then holds that"]
    assert [b.type for b in blocks] == [BlockType.PARAGRAPH, BlockType.EQUATION] * 5
    prose_only = _region("table", [line for line in lines if line.text in ("It follows that", "Recall that")])
    assert not _prose_and_displays(prose_only, maths), "a table of words stays a table"


def test_a_display_the_layout_cut_into_regions_is_one_formula():
    from workers.pipeline.layer_maths import _joined_fragments

    maths, lines = _tex_page_lines()
    start = next(k for k, line in enumerate(lines) if line.text == "Recall that")
    end = next(k for k, line in enumerate(lines) if line.text == "We define")
    name, *cells = lines[start + 1:end]       # "N =" and the bracketed rows, each a region of their own
    prose = _region("text", lines[:start + 1], 0)
    regions = _joined_fragments([prose, _region("text", [name], 1), _region("text", cells, 2)], maths, 600, 800)
    assert [r.task for r in regions] == ["text", "formula"] and [r.reading_index for r in regions] == [0, 1]
    [row] = maths.formula_rows(regions[1].bbox)
    assert row.latex == r"N=\begin{bmatrix} 0 & r \\ \Phi & 5 \end{bmatrix}"
    assert len(regions[1].lines) == 1 + len(cells), "every line is kept"


SCATTERED = [    # tex/scattered.tex, a display of each page that detection cut into pieces
    (0, r"\left(\frac{a}{4}\right)^{2}=10+2"),
    (1, r"R(z)=\begin{cases} z_{u}^{k+1}+H & \operatorname{if}z>0 \\ 10 & \text{otherwise} \end{cases}"),
    (2, r"(1+q)^{n}=\sum_{k=0}^{n}\binom{n}{k}c^{k}"),
    (2, r"\int_{-\infty}^{\infty}h(x)dx=g_{w}-\gamma_{s}^{2}"),
]


@pytest.mark.parametrize("page_index, latex", SCATTERED)
def test_a_display_the_structure_stage_scattered_over_blocks_is_gathered(page_index, latex):
    """pdflatex pages where the line detector boxed a display in pieces and the structure stage put
    them in different blocks, out of order: a fraction's numerator on the row of the sentence
    before it and the rest in a code block; a cases row and its "otherwise" in the paragraph after;
    a binomial and a display integral's sign interleaved with another display. Found by where they
    lie, each is one display again."""
    from pathlib import Path

    pdf = (Path(__file__).parents[1] / "vision" / "tex" / "scattered.pdf").read_bytes()
    document = Document.open(pdf, "scattered.pdf")
    result = PagePipeline(TesseractRecognizer(), vision_num_threads=1).process(
        document, document.render_page(page_index, 200), page_index, text_layer="auto")
    page = {**result.to_dict(), "page": page_index + 1, "state": "done"}
    markdown = render_markdown({"documents": [{"filename": "a.pdf", "pages": [page]}]})
    assert f"$$\n{latex}\n$$" in markdown or f"$${latex}$$" in markdown, markdown


def test_a_display_the_structure_stage_took_for_a_heading_is_an_equation():
    """A display set large (amsmath's calligraphic capital with a script) stands tall and alone
    like a heading; its row is maths, so it is an equation. A heading of words stays one."""
    from vision.layer_math import PageMaths
    from workers.pipeline.layer_maths import _with_displays

    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    page.insert_font(fontname="dejavu", fontfile="/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    page.insert_text((150, 100), "g", fontname="tiit", fontsize=12)
    page.insert_text((160, 100), "\u2208", fontname="dejavu", fontsize=12)
    page.insert_text((175, 100), "P", fontname="tiit", fontsize=14)
    page.insert_text((184, 94), "k", fontname="tiit", fontsize=8)
    page.insert_text((60, 160), "Results of the survey", fontname="tibo", fontsize=14)
    maths = PageMaths(pymupdf.open("pdf", doc.tobytes())[0])
    lines = (LineResult((148, 86, 192, 104), "g \u2208 Pk"), LineResult((58, 146, 220, 164), "Results of the survey"))
    region = RegionResult(0, "text", "text", "body", (50, 80, 230, 170), (0, 0, 1, 1), "", RegionStatus.OK,
                          lines=lines)
    [display] = _with_displays(Block(BlockType.HEADING, "g \u2208 Pk", (0,), level=2), region, maths)
    assert display.type is BlockType.EQUATION and display.text == r"g\in P^{k}", display
    [heading] = _with_displays(Block(BlockType.HEADING, "Results of the survey", (1,), level=2), region, maths)
    assert heading.type is BlockType.HEADING
