"""Tables for a recogniser that reads single lines (the house model): the page
pipeline sends a table's detected lines as crops, not the whole table, and
assembles the cells into a Markdown table; a region reader still gets the table
whole."""
from __future__ import annotations

from types import SimpleNamespace

from PIL import Image, ImageDraw, ImageFont

from vision.document import RenderedPage
from vision.layout import RecognitionTask, Region
from vision.lines import TextLine
from vision.page_analysis import LayoutBlock
from vision.reading_order import PageRole
from workers.pipeline.assemble import region_of
from workers.pipeline.page import BlockWork, reads_by_lines
from workers.pipeline.plan_crops import plan_block
from workers.pipeline.text_layer_policy import TextLayerPolicy
from workers.recognizers.base import RecognitionOutcome
from workers.table_text import markdown_table


def _line(x0, y0, x1, y1) -> TextLine:
    return TextLine((x0, y0, x1, y1), 0.9)


HEADER = [_line(100, 100, 180, 120), _line(300, 101, 360, 121), _line(500, 100, 580, 119)]
ROW_1 = [_line(100, 140, 220, 160), _line(300, 141, 350, 160), _line(500, 140, 560, 161)]
ROW_2 = [_line(100, 180, 170, 200), _line(505, 181, 570, 200)]     # the middle cell is empty
TABLE = LayoutBlock(0, Region("table", (90, 90, 600, 210), 0.9), PageRole.BODY, tuple(HEADER + ROW_1 + ROW_2))
NEVER = TextLayerPolicy.for_mode("never")
TEXTS = ["Item", "Qty", "Amount", "Red pens", "12", "4.80", "Paper", "19.99"]


def test_markdown_table_puts_cells_in_their_columns():
    rows = [[(line.bbox, text) for line, text in zip(row, texts)]
            for row, texts in ((HEADER, TEXTS[:3]), (ROW_1, TEXTS[3:6]), (ROW_2, TEXTS[6:]))]
    assert markdown_table(rows) == ("| Item | Qty | Amount |\n| --- | --- | --- |\n| Red pens | 12 | 4.80 |\n"
                                    "| Paper |  | 19.99 |")
    assert markdown_table([[((0, 0, 10, 10), "a|b")]]) == "| a\\|b |\n| --- |"
    assert markdown_table([]) == ""


def _page_with_cells() -> RenderedPage:
    image = Image.new("RGB", (700, 300), "white")
    draw = ImageDraw.Draw(image)
    for line, text in zip(TABLE.lines, TEXTS):
        draw.text((line.bbox[0] + 2, line.bbox[1] + 1), text, fill="black", font=ImageFont.load_default(size=16))
    return RenderedPage(0, image, 150.0, 0.0)


def test_a_line_reader_gets_the_cells_and_a_region_reader_the_whole_table():
    page = _page_with_cells()
    assert reads_by_lines(TABLE, SimpleNamespace(reads_single_lines=True))
    assert not reads_by_lines(TABLE, SimpleNamespace(reads_single_lines=False))
    as_lines = plan_block(BlockWork(TABLE, by_lines=True), page.image, NEVER)
    assert len(as_lines) == 8 and all(item.is_single_line and item.task is RecognitionTask.TEXT for item in as_lines)
    whole = plan_block(BlockWork(TABLE, by_lines=False), page.image, NEVER)
    assert len(whole) == 1 and whole[0].task is RecognitionTask.TABLE and not whole[0].is_single_line

    region = region_of(BlockWork(TABLE, by_lines=True, outcomes=[RecognitionOutcome(t) for t in TEXTS]), [], 700, 300)
    assert region.text.splitlines()[0] == "| Item | Qty | Amount |"
    assert region.text.splitlines()[-1] == "| Paper |  | 19.99 |"
    assert len(region.lines) == 8          # every cell keeps its box for the searchable PDF


def test_a_cell_with_no_ink_is_not_sent():
    page = _page_with_cells()
    ImageDraw.Draw(page.image).rectangle(ROW_2[1].bbox, fill="white")   # "19.99" erased
    ImageDraw.Draw(page.image).line((100, 150, 580, 150), fill="black", width=2)   # a rule through row 1
    crops = plan_block(BlockWork(TABLE, by_lines=True), page.image, NEVER)
    assert [isinstance(crop, RecognitionOutcome) and crop.text == "" for crop in crops] == [False] * 7 + [True]


def test_a_table_from_the_text_layer_is_remade_from_word_gaps_and_a_line_that_took_nothing_is_no_cell():
    """A born-digital table whose lines all took the layer's text (one over a drawing took
    nothing): its header line runs over two columns, and only word boxes can split it. The
    words stage remakes it as it does a recognised table; before, a layer table kept the
    header fused and the region's line of no text stopped the remaking altogether."""
    from workers.page_result import LineResult, RegionResult, RegionStatus, WordResult
    from workers.pipeline.words import _retabulated

    def line(box, *words):
        return LineResult(box, " ".join(text for _, text in words),
                          words=tuple(WordResult(b, text, None, "text_layer", None) for b, text in words))

    header = line((100, 100, 420, 120), ((100, 100, 160, 120), "Symbol"), ((300, 100, 380, 120), "Frequency"))
    comments = line((410, 100, 520, 120), ((440, 100, 520, 120), "Comments"))
    row = [line((100, 140, 120, 160), ((100, 140, 120, 160), "Ø")),
           line((300, 140, 380, 160), ((300, 140, 310, 160), "1"), ((315, 140, 330, 160), "in"),
                ((335, 140, 380, 160), "1,000")),
           LineResult((385, 140, 420, 160), ""),     # over a drawing: took nothing
           line((440, 140, 560, 160), ((440, 140, 490, 160), "Swedish"), ((495, 140, 560, 160), "names"))]
    region = RegionResult(0, "table", "table", "body", (90, 90, 570, 170), (0, 0, 1, 1), "fused", RegionStatus.OK,
                          source="text_layer", lines=(header, comments, *row))
    assert _retabulated(region).text.splitlines() == [
        "| Symbol | Frequency | Comments |", "| --- | --- | --- |", "| Ø | 1 in 1,000 | Swedish names |"]


def test_each_line_crop_says_its_block_and_where_it_lies_in_it():
    """For a reader that reads a line better among its neighbours (Tesseract, a block at a time):
    every line of a block shares one block crop, cut only when asked for, and its box there shows
    the same pixels as its box on the page."""
    page = _page_with_cells()
    items = plan_block(BlockWork(TABLE, by_lines=True), page.image, NEVER)
    [block] = {id(item.block): item.block for item in items}.values()
    assert block._image is None                              # not cut yet
    for item, line in zip(items, TABLE.lines):
        left, top, right, bottom = (round(v) for v in item.box_in_block)
        assert block.image.crop((left, top, right, bottom)).tobytes() == page.image.crop(line.bbox).tobytes()
