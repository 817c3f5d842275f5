"""`python -m vision.reflow_pdf KIND SOURCE OUT MAX_PAGES`: an HTML or EPUB document laid out on A4
pages by MuPDF and written as a PDF with a text layer. Run as a child by vision/office.py,
under its time, memory and output budget.

The document is read from bytes, never opened by path: MuPDF then has no folder to resolve a
relative `<img src>` against, and it has no network code, so nothing but inline (`data:`)
images and, in an EPUB, the files inside the package can reach the PDF. The last line on
stderr is the reason for a refusal, written for the document's sender.
"""
from __future__ import annotations

import sys

import pymupdf

FONT_SIZE_PT = 11
EXIT_REFUSED = 3


def convert(kind: str, source: str, out: str, max_pages: int) -> None:
    with open(source, "rb") as f:
        data = f.read()
    document = pymupdf.open(stream=data, filetype=kind)
    document.layout(rect=pymupdf.paper_rect("a4"), fontsize=FONT_SIZE_PT)
    if document.page_count == 0:
        _refuse(f"the {kind.upper()} document has no content to lay out")
    if document.page_count > max_pages:
        _refuse(f"the {kind.upper()} document lays out to {document.page_count:,} pages; the limit is {max_pages:,}")
    pdf = pymupdf.open("pdf", document.convert_to_pdf())
    pdf.save(out, garbage=3, deflate=True)


def _refuse(reason: str) -> None:
    print(reason, file=sys.stderr)
    sys.exit(EXIT_REFUSED)


if __name__ == "__main__":
    kind, source, out, max_pages = sys.argv[1:5]
    assert kind in ("html", "epub"), kind
    try:
        convert(kind, source, out, int(max_pages))
    except (RuntimeError, ValueError) as exc:   # MuPDF's errors for a document it cannot read
        _refuse(f"the {kind.upper()} document cannot be read ({str(exc)[:150]})")
