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


def _block_items(lines: list[str], dpi: int = 200) -> list[RecognitionItem]:
    """A block of `lines` rendered as a page renders them, each line's item cut from it with the
    block and its own box, as the pipeline's plan_crops makes them."""
    from vision.crops import crop_image
    from workers.recognizers.base import BlockCrop

    image = _rendered_text(lines, fontsize=11, dpi=dpi)
    block = BlockCrop(image, (0, 0, image.width, image.height))
    scale = dpi / 72
    boxes = [(10 * scale, (24 + 24 * i - 11) * scale, 400 * scale, (24 + 24 * i + 3) * scale) for i in range(len(lines))]
    return [RecognitionItem(crop_image(image, box), RecognitionTask.TEXT, is_single_line=True, block=block,
                            box_in_block=box) for box in boxes]


def test_lines_read_in_their_block_get_their_own_words():
    lines = ["The north pumps were serviced in May", "Two valves of the system were replaced",
             "Invoice 4521 was paid on 3 June 2026"]
    items = _block_items(lines)
    region = RecognitionItem(_rendered_text(["First row here"]), RecognitionTask.TABLE, is_single_line=False)
    outcomes = TesseractRecognizer().recognize_in_blocks([items[0], region, items[1], items[2]])
    assert [outcomes[i].text for i in (0, 2, 3)] == lines
    assert outcomes[1].text == "First row here"   # a region read whole is read as recognize reads it


def test_a_line_its_block_gives_no_word_is_read_alone():
    """A line whose box the block's words miss (here: a box beside the text, where the line's own
    crop still has the line) is read on its own, never left empty."""
    lines = ["The north pumps were serviced in May", "Two valves of the system were replaced"]
    items = _block_items(lines)
    moved = RecognitionItem(items[1].image, RecognitionTask.TEXT, is_single_line=True, block=items[1].block,
                            box_in_block=(2000.0, 0.0, 2100.0, 40.0))
    outcomes = TesseractRecognizer().recognize_in_blocks([items[0], moved])
    assert [outcome.text for outcome in outcomes] == lines


def test_words_go_to_the_line_that_holds_them():
    from workers.recognizers.tesseract import _Word, _words_to_lines

    boxes = [(0, 0, 100, 20), (0, 22, 100, 42), (200, 0, 300, 20)]
    words = [_Word(20, 9, "a"), _Word(50, 21, "e"), _Word(60, 10, "b"), _Word(50, 33, "c"),
             _Word(250, 12, "d"),
             _Word(150, 10, "f"),     # in no line's columns: dropped
             _Word(50, 60, "g")]      # below every line: dropped
    # "e", between two lines, goes to the one whose middle is nearer (10 against 32); each line keeps
    # the words in the order Tesseract read them (right to left in Arabic)
    assert _words_to_lines(words, boxes) == ["a e b", "c", "d"]
    assert _words_to_lines(words[::-1], boxes) == ["b e a", "c", "d"]
