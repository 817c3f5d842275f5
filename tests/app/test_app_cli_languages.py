"""`ocrserve run` on pages in several scripts, as a fresh checkout runs it (the house model on our
engine, Tesseract with the packs scripts/setup.sh installs), with nothing telling it the language:
each page comes back in its own letters, every line says its script, no `<unk>` anywhere, and the
searchable PDF gives the same text back to a PDF reader."""
from __future__ import annotations

import json

import pymupdf
import pytest

from service_harness import run_cli
from workers.recognizers.languages import installed_languages

pytestmark = pytest.mark.slow
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
PAGES = {   # script, Tesseract pack, lines (typeset in DejaVu Sans, which has all three scripts)
    "Greek": ("ell", ["Το πρόγραμμα διαβάζει κάθε σελίδα του εγγράφου",
                      "και γράφει το κείμενο με τους σωστούς τόνους.",
                      "Ένα άλλο πρόβλημα είναι η γρήγορη πληκτρολόγηση."]),
    "Cyrillic": ("rus", ["Программа читает каждую страницу документа",
                         "и записывает текст теми же буквами.",
                         "Руководство нового сопровождающего Debian."]),
    "Latin": ("pol", ["Program czyta każdą stronę dokumentu i zapisuje",
                      "tekst z polskimi znakami, które są w nim zawarte.",
                      "Dzięki temu można działać na wielu systemach."]),
}


# a fourth page: English, with a Russian title and a Greek line among its lines
MIXED = [("Latin", "The committee met on Tuesday to review the annual budget"),
         ("Latin", "and the plans for the new library building. The title:"),
         ("Cyrillic", "Годовой отчёт о состоянии городской библиотеки"),
         ("Latin", "The society's motto, in the original, reads as follows:"),
         ("Greek", "Μετάφραση του εγγράφου από την επιτροπή"),
         ("Latin", "Members were asked to send comments before the end of May.")]


def _pdf() -> bytes:
    doc = pymupdf.open()
    for lines in [lines for _, lines in PAGES.values()] + [[line for _, line in MIXED]]:
        page = doc.new_page(width=595, height=842)
        page.insert_font(fontname="dejavu", fontfile=FONT)
        for i, line in enumerate(lines):
            page.insert_text((72, 120 + 30 * i), line, fontname="dejavu", fontsize=13)
    return doc.tobytes()


def _words(text: str) -> set[str]:
    return {word.strip(".,;:()") for word in text.split()}


def test_run_reads_each_page_in_its_own_script(tmp_path):
    missing = [pack for pack, _ in PAGES.values() if pack not in installed_languages()]
    if missing:
        pytest.skip(f"needs Tesseract packs {missing} (scripts/setup.sh)")
    source = tmp_path / "in" / "scripts.pdf"
    source.parent.mkdir()
    source.write_bytes(_pdf())
    out = tmp_path / "out"
    done = run_cli(source.parent, out, "--text-layer", "never", "--formats", "json,md,pdf", timeout_s=900)
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "scripts.json").read_text())
    assert "<unk>" not in (out / "scripts.md").read_text()
    with pymupdf.open(out / "scripts.pdf") as searchable:
        pdf_pages = [page.get_text() for page in searchable]
    for page, pdf_text, (script, (pack, lines)) in zip(result["documents"][0]["pages"], pdf_pages, PAGES.items()):
        read = [line for region in page["regions"] for line in region["lines"]]
        assert {line["script"] for line in read} == {script}, read
        assert {line["language"] for line in read} == {pack}, read
        expected = _words(" ".join(lines))
        found = _words(" ".join(line["text"] for line in read))
        assert len(expected & found) >= 0.8 * len(expected), (script, sorted(expected - found))
        assert len(expected & _words(pdf_text)) >= 0.8 * len(expected), (script, pdf_text)

    # the mixed page: each line in its own script, the English ones untouched
    read = [line for region in result["documents"][0]["pages"][3]["regions"] for line in region["lines"]]
    assert [line["script"] for line in read] == [script for script, _ in MIXED], read
    for line, (_, text) in zip(read, MIXED):
        expected = _words(text)
        assert len(expected & _words(line["text"])) >= 0.7 * len(expected), (text, line["text"])
