"""`ocrserve run` as a fresh checkout runs it: no OCRSERVE_* settings at all, so
the recogniser is the house OCR model, served by our engine (started and
stopped by `run`) from the weights in models/house-ocr/, with no network.
A typeset PDF must come back as Markdown that says what the page says; it is
recognised (`--text-layer never`), not taken from its own text layer."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pymupdf
import pytest
from rapidfuzz.distance import Levenshtein

from service_harness import run_cli

pytestmark = pytest.mark.slow

TITLE = "Annual Maintenance Report"
BODY = [
    "The pumps at the north station were serviced on 14 March 2025.",
    "Two valves (types B-12 and C-40) were replaced; the cost was $1,950.75.",
    "Next inspection: 3 September, weather permitting.",
]


def _pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 110), TITLE, fontname="hebo", fontsize=20)
    for i, line in enumerate(BODY):
        page.insert_text((72, 170 + 26 * i), line, fontname="tiro", fontsize=12)
    return doc.tobytes()


def test_run_reads_a_pdf_with_the_house_model_by_default(tmp_path):
    source = tmp_path / "in" / "report.pdf"
    source.parent.mkdir()
    source.write_bytes(_pdf())
    out = tmp_path / "out"
    done = run_cli(source.parent, out, "--text-layer", "never", "--formats", "md,json,hocr,alto", timeout_s=600)
    assert done.returncode == 0, done.stderr
    markdown = (out / "report.md").read_text()
    assert markdown.count("## ") == 1, markdown    # the title is read as the title
    text = " ".join(" ".join(line.lstrip("#").strip() for line in markdown.splitlines()
                             if not line.startswith("<!--")).split())   # page markers are comments
    expected = " ".join([TITLE, *BODY])
    assert Levenshtein.distance(text, expected) / len(expected) < 0.03, markdown
    # every line says how sure the house model is (its tokens' logprobs, drafts still on); clean print is sure
    lines = [line for page in json.loads((out / "report.json").read_text())["documents"][0]["pages"]
             for region in page["regions"] for line in region["lines"]]
    assert len(lines) == 1 + len(BODY)
    assert all(0.5 < line["confidence"] <= 1.0 and line["low_confidence"] is False for line in lines), lines
    # each word has its own confidence from the tokens that wrote it, its box spread along the line
    words = [word for line in lines for word in line["words"]]
    assert [w["text"] for w in words] == " ".join(line["text"] for line in lines).split()
    assert {(w["box_source"], w["confidence_source"]) for w in words} == {("interpolated", "tokens")}
    assert all(0.0 < w["confidence"] <= 1.0 for w in words)
    # and the same words come out as hOCR (valid by the hocr-spec validator) and ALTO, with their confidences
    checked = subprocess.run([os.path.join(os.path.dirname(sys.executable), "hocr-spec"), str(out / "report.hocr")],
                             capture_output=True, text=True)
    assert checked.returncode == 0 and "[ERROR]" not in checked.stdout, checked.stdout
    hocr = (out / "report.hocr").read_text()
    assert hocr.count("x_wconf ") == len(words) and hocr.count('class="ocrx_word"') == len(words)
    alto = (out / "report.alto").read_text()
    assert alto.count(" WC=") == len(words) and 'CONTENT="Maintenance"' in alto
