"""Tables without rules (workers.structure_tables): a statement of amounts the layout model
takes for text comes out as a table; columns of words and dot-leader lists stay text.

Pages are generated with PyMuPDF and read through the real pipeline (layout model, line
detector, the page's own text layer), so the rows are what the detectors make of them."""
from __future__ import annotations

import pymupdf
import pytest

from vision.document import Document
from workers.document_result import render_markdown
from workers.page_pipeline import PagePipeline
from workers.recognizers.tesseract import TesseractRecognizer

STATEMENT = [("", "2025", "2024"), ("Revenue", "12,450", "10,982"), ("Cost of revenue", "(7,210)", "(6,544)"),
             ("Gross profit", "5,240", "4,438"), ("Research and development", "1,102", "987"),
             ("Selling, general and administrative", "2,315", "2,090"), ("Operating income", "1,823", "1,361"),
             ("Interest expense", "(112)", "(140)"), ("Net income", "1,711", "1,221")]
TERMS = [("Lessee", "the party that rents the premises"), ("Lessor", "the party that owns the premises"),
         ("Term", "the period the lease runs for"), ("Premises", "the rooms and the land let")]


def _page(rows, right_aligned: bool) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 80), "Consolidated Statement of Operations", fontname="hebo", fontsize=14)
    page.insert_textbox(pymupdf.Rect(72, 95, 540, 160), "The figures below are unaudited and stated in thousands "
                        "of dollars. They cover the two years ended December 31.", fontname="helv", fontsize=10)
    y = 190
    for label, *cells in rows:
        page.insert_text((72, y), label, fontname="helv", fontsize=10)
        for text, edge in zip(cells, (430, 520)):
            width = pymupdf.get_text_length(text, fontname="helv", fontsize=10)
            page.insert_text((edge - width if right_aligned else 300, y), text, fontname="helv", fontsize=10)
        y += 16
    page.insert_textbox(pymupdf.Rect(72, y + 20, 540, y + 90), "Net income rose by forty percent, driven by higher "
                        "revenue and lower interest expense after the refinancing.", fontname="helv", fontsize=10)
    return doc.tobytes()


def _blocks(pdf: bytes):
    document = Document.open(pdf, "page")
    result = PagePipeline(TesseractRecognizer(), vision_num_threads=1).process(
        document, document.render_page(0, 150), 0, text_layer="auto")
    page = {**result.to_dict(), "page": 1, "state": "done"}
    markdown = render_markdown({"documents": [{"filename": "a.pdf", "pages": [page]}]})
    return [block for region in result.regions for block in region.blocks], markdown


@pytest.fixture(scope="module")
def statement():
    return _blocks(_page(STATEMENT, right_aligned=True))


def test_a_statement_of_amounts_is_a_table_with_its_rows_and_columns(statement):
    blocks, markdown = statement
    tables = [block for block in blocks if block.type.value == "table"]
    assert len(tables) == 1
    rows = [line.strip("| ").split(" | ") for line in tables[0].text.splitlines()]
    assert rows[0][-2:] == ["2025", "2024"] and rows[1][0] == "---"
    assert ["Selling, general and administrative", "2,315", "2,090"] in rows
    assert ["Cost of revenue", "(7,210)", "(6,544)"] in rows and len(rows) == len(STATEMENT) + 1
    assert "| Net income | 1,711 | 1,221 |" in markdown
    assert any(b.type.value == "paragraph" and b.text.startswith("Net income rose") for b in blocks)


def test_columns_of_words_stay_text():
    blocks, _ = _blocks(_page([(term, meaning) for term, meaning in TERMS], right_aligned=False))
    assert not [block for block in blocks if block.type.value == "table"]
    assert "the party that rents the premises" in " ".join(block.text for block in blocks)
