"""Page images with no text layer, their known text, and the checks the house-model end-to-end tests
share: every region `ok` and recognised (`source: ocr`), and a character error rate against the text.

A PDF's text layer can hide a recogniser that fails completely (a failed crop falls
back to it); a PNG or JPEG has none, so these pages prove recognition itself.
"""
from __future__ import annotations

import io
import json

import pymupdf
from PIL import Image
from rapidfuzz.distance import Levenshtein

TITLE = "Annual Maintenance Report"
BODY = [
    "The pumps at the north station were serviced on 14 March 2025.",
    "Two valves (types B-12 and C-40) were replaced; the cost was $1,950.75.",
    "Next inspection: 3 September, weather permitting.",
]
EXPECTED = " ".join([TITLE, *BODY])
# The house model reads clean 150-DPI print at a median CER of 0.032 (docs/BENCHMARKS.md); JPEG
# artefacts cost a little more. A recogniser that fails reads nothing: a CER near 1.
MAX_CER = 0.06
DPI = 150


def report_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 110), TITLE, fontname="hebo", fontsize=20)
    for i, line in enumerate(BODY):
        page.insert_text((72, 170 + 26 * i), line, fontname="tiro", fontsize=12)
    return doc.tobytes()


def report_png() -> bytes:
    doc = pymupdf.open(stream=report_pdf(), filetype="pdf")
    return doc[0].get_pixmap(dpi=DPI).tobytes("png")


def report_jpeg() -> bytes:
    buffer = io.BytesIO()
    Image.open(io.BytesIO(report_png())).convert("RGB").save(buffer, format="JPEG", quality=85, dpi=(DPI, DPI))
    return buffer.getvalue()


def regions(result_json: str | dict) -> list[dict]:
    data = json.loads(result_json) if isinstance(result_json, str) else result_json
    return [region for document in data["documents"] for page in document["pages"] for region in page["regions"]]


def recognised_text(result_json: str | dict) -> str:
    return " ".join(" ".join(region["text"].split()) for region in regions(result_json) if region["text"].strip())


def cer(text: str, expected: str = EXPECTED) -> float:
    return Levenshtein.distance(" ".join(text.split()), expected) / len(expected)


def assert_read_by_the_model(result_json: str | dict) -> float:
    """Every region recognised and `ok`, the text within MAX_CER of the page's; returns the CER."""
    found = regions(result_json)
    assert found, "no region at all"
    bad = [(r["status"], r.get("source"), r.get("reason"), r["text"]) for r in found
           if r["status"] != "ok" or r.get("source", "ocr") != "ocr"]
    assert not bad, bad
    text = recognised_text(result_json)
    error_rate = cer(text)
    assert error_rate < MAX_CER, (error_rate, text)
    return error_rate
