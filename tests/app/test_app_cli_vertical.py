"""`ocrserve run` on a page of vertical Japanese, as a fresh checkout runs it, with nothing telling
it the language: the columns come back in reading order (right to left, each top to bottom) in
Japanese, and the searchable PDF's text runs down each column, so a search finds a word where it
is printed. Before, every column was cut out standing up and read as nothing."""
from __future__ import annotations

import difflib
import json

import pymupdf
import pytest

from service_harness import run_cli
from workers.recognizers import ppocr

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(ppocr.model_path() is None, reason="needs the rapidocr wheel (scripts/setup.sh)")]
COLUMNS = ["吾輩は猫である名前はまだ無い", "どこで生れたかとんと見当がつかぬ", "何でも薄暗いじめじめした所で"]
PITCH = 24   # points from one character's cell to the next, down a column


def _pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=500)
    font = pymupdf.Font("japan")
    writer = pymupdf.TextWriter(page.rect)
    for k, column in enumerate(COLUMNS):   # the first column at the right
        for i, char in enumerate(column):
            writer.append((340 - 48 * k, 60 + PITCH * i), char, font=font, fontsize=20)
    writer.write_text(page)
    return doc.tobytes()


def test_run_reads_vertical_japanese_in_columns_right_to_left(tmp_path):
    source = tmp_path / "in" / "tategaki.pdf"
    source.parent.mkdir()
    source.write_bytes(_pdf())
    out = tmp_path / "out"
    done = run_cli(source.parent, out, "--text-layer", "never", "--formats", "json,txt,pdf", timeout_s=900)
    assert done.returncode == 0, done.stderr
    [page] = json.loads((out / "tategaki.json").read_text())["documents"][0]["pages"]
    lines = [line for region in page["regions"] for line in region["lines"]]
    assert lines and {line["script"] for line in lines} == {"Japanese"}, lines
    read = "".join(line["text"] for line in lines)
    similarity = difflib.SequenceMatcher(None, read, "".join(COLUMNS), autojunk=False).ratio()
    assert similarity >= 0.9, read
    text = (out / "tategaki.txt").read_text()
    assert text.index("吾輩") < text.index("見当") < text.index("薄暗"), text
    with pymupdf.open(out / "tategaki.pdf") as searchable:
        pdf_page = searchable[0]
        directions = {tuple(round(v) for v in line["dir"]) for block in pdf_page.get_text("dict")["blocks"]
                      for line in block.get("lines", [])}
        assert directions == {(0, 1)}, directions   # every line runs down the page
        [hit] = pdf_page.search_for("見当")
        scale = pdf_page.rect.width / 420
        assert 340 - 48 - 5 <= hit.x0 / scale and hit.x1 / scale <= 340 - 48 + 30, hit   # in the second column
