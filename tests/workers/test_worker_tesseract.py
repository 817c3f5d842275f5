"""TesseractRecognizer on crops of rendered text: line mode, block mode, many at once."""
from __future__ import annotations

import pymupdf
import pytest
from PIL import Image

from vision.layout import RecognitionTask
from workers.recognizers.base import RecognitionItem, RecognizerConfigError
from workers.recognizers.tesseract import TesseractRecognizer


def _rendered_text(lines: list[str], fontsize: float = 14, dpi: int = 100) -> Image.Image:
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=30 + 24 * len(lines))
    for i, line in enumerate(lines):
        page.insert_text((12, 24 + 24 * i), line, fontname="helv", fontsize=fontsize)
    pixmap = page.get_pixmap(dpi=dpi)
    return Image.frombytes("RGB", (pixmap.width, pixmap.height), pixmap.samples)


def test_lines_and_blocks_come_back_in_order():
    sentences = ["Invoice number 4521", "Delivered to Berlin", "Total amount due"]
    items = [RecognitionItem(_rendered_text([s]), RecognitionTask.TEXT, is_single_line=True) for s in sentences]
    items.insert(1, RecognitionItem(_rendered_text(["First row here", "Second row there"]), RecognitionTask.TABLE,
                                    is_single_line=False))
    outcomes = TesseractRecognizer().recognize(items)
    assert all(outcome.ok for outcome in outcomes)
    assert [outcomes[i].text for i in (0, 2, 3)] == sentences
    assert outcomes[1].text.splitlines() == ["First row here", "Second row there"]


def test_a_blank_crop_reads_as_empty_text():
    [outcome] = TesseractRecognizer().recognize(
        [RecognitionItem(Image.new("RGB", (200, 30), "white"), RecognitionTask.TEXT, is_single_line=True)])
    assert outcome.ok and outcome.text == ""


def test_nothing_to_read_costs_nothing():
    assert TesseractRecognizer().recognize([]) == []


def test_a_missing_program_or_language_is_a_configuration_error():
    with pytest.raises(RecognizerConfigError, match="not installed"):
        TesseractRecognizer(command="tesseract-that-does-not-exist").check()
    with pytest.raises(RecognizerConfigError, match="no language data for xyz"):
        TesseractRecognizer(lang="xyz").check()
    TesseractRecognizer().check()


def test_a_page_of_lines_is_split_over_every_process_by_pixels():
    from workers.recognizers.tesseract import BATCH_SIZE, _balanced_batches

    sizes = [(1200, 40)] * 10 + [(120, 40)] * 50   # ten full-width lines, fifty short ones
    images = [Image.new("RGB", size, "white") for size in sizes]
    ids = list(range(100, 160))
    batches = _balanced_batches(ids, images, 2)
    assert len(batches) == 2 and sorted(i for b in batches for i in b) == ids
    assert all(b == sorted(b) for b in batches)     # page order within a batch
    loads = [sum(sizes[i - 100][0] for i in b) for b in batches]
    assert abs(loads[0] - loads[1]) <= 1200
    assert _balanced_batches(ids[:1], images[:1], 4) == [[100]]
    many = _balanced_batches(list(range(3 * BATCH_SIZE)), [images[0]] * (3 * BATCH_SIZE), 2)
    assert len(many) == 3 and all(len(b) == BATCH_SIZE for b in many)
    # and the texts still come back to their own items
    sentences = [f"Line number {n} of the page" for n in range(7)]
    outcomes = TesseractRecognizer(num_processes=3).recognize(
        [RecognitionItem(_rendered_text([s]), RecognitionTask.TEXT, is_single_line=True) for s in sentences])
    assert [o.text for o in outcomes] == sentences
