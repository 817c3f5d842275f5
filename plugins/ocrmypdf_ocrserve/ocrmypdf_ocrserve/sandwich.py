"""The text-only page PDF `--pdf-renderer sandwich` grafts, in the shape OCRmyPDF reads.

OCRmyPDF grafts a sandwich page's content stream under its own page and carries
over one font only, the one its Tesseract writes: the page's font resource named
`/F1` (or `/f-0-0`). ocrserve's page PDF (`workers.searchable_pdf.text_layer_pdf`)
names its Helvetica `/helv`, as PyMuPDF does, so here the font is renamed, in the
resources and in every `Tf` that selects it, before the page is handed over;
without that OCRmyPDF would graft text whose font is missing. And each line's
stretch is moved out of its text object (see `_STRETCH_IN_TEXT`).
"""
from __future__ import annotations

import io
import re

import pikepdf

GRAFTED_FONT = pikepdf.Name("/F1")
# PyMuPDF writes a line's horizontal stretch (`insert_text(morph=...)`) as a `cm` just inside
# `BT`, where the PDF specification allows no `cm`; Ghostscript, which OCRmyPDF runs for PDF/A,
# says the file "had errors". The same matrix just before `BT` (inside the line's own q...Q)
# places the text identically.
_STRETCH_IN_TEXT = re.compile(rb"BT\s+((?:[-+.\d]+\s+){6}cm)\s+")


def graftable(page_pdf: bytes) -> bytes:
    with pikepdf.open(io.BytesIO(page_pdf)) as pdf:
        page = pdf.pages[0]
        page.contents_coalesce()
        fonts = page.obj.get(pikepdf.Name.Resources, {}).get(pikepdf.Name.Font, {})
        names = list(fonts.keys())
        if not names:   # a page with no text: nothing to rename
            return page_pdf
        if len(names) != 1:
            raise ValueError(f"a sandwich page may use one font; ocrserve's uses {names}")
        old = pikepdf.Name(names[0])
        fonts[GRAFTED_FONT] = fonts[old]
        del fonts[old]
        selects = re.compile(rb"%s(?=\s+[-+.\d]+\s+Tf\b)" % re.escape(str(old).encode()))
        content = selects.sub(str(GRAFTED_FONT).encode(), page.Contents.read_bytes())
        page.Contents = pikepdf.Stream(pdf, _STRETCH_IN_TEXT.sub(rb"\1\nBT\n", content))
        out = io.BytesIO()
        pdf.save(out)
        return out.getvalue()
