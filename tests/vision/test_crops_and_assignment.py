from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from vision.crops import crop_array, crop_box, crop_image, denormalise_box, normalise_box
from vision.layout import RecognitionTask, Region
from vision.line_assignment import assign_lines, group_lines
from vision.lines import TextLine


def test_crop_adds_a_margin_and_stays_on_the_page():
    assert crop_box((10.2, 20.7, 50.5, 40.0), 100, 80, margin_px=4) == (6, 16, 55, 44)
    assert crop_box((-30, -5, 500, 500), 100, 80) == (0, 0, 100, 80)
    assert crop_box((99.5, 79.5, 99.9, 79.9), 100, 80, margin_px=0) == (99, 79, 100, 80)   # never empty
    assert crop_box((200, 200, 300, 300), 100, 80, margin_px=0) == (99, 79, 100, 80)       # off-page: 1 pixel
    with pytest.raises(AssertionError):
        crop_box((10, 10, 5, 20), 100, 80)


def test_crop_image_and_array_cut_the_same_pixels():
    pixels = np.arange(80 * 100 * 3, dtype=np.uint32).reshape(80, 100, 3).astype(np.uint8)
    image = Image.fromarray(pixels)
    cut = crop_image(image, (10, 20, 30, 25), margin_px=2)
    assert cut.size == (24, 9)
    assert np.array_equal(np.asarray(cut), crop_array(pixels, (10, 20, 30, 25), margin_px=2))


def test_normalised_boxes_use_the_0_1000_grid():
    assert normalise_box((0, 0, 1240, 1754), 1240, 1754) == (0, 0, 1000, 1000)
    assert normalise_box((124, 877, 620, 1754), 1240, 1754) == (100, 500, 500, 1000)
    assert normalise_box((-5, -5, 5000, 5000), 1240, 1754) == (0, 0, 1000, 1000)
    assert denormalise_box((100, 500, 500, 1000), 1240, 1754) == pytest.approx((124, 877, 620, 1754))


def _line(x0, y0, x1, y1) -> TextLine:
    return TextLine((x0, y0, x1, y1), 0.9)


def test_lines_go_to_the_region_covering_them_and_text_regions_grow_to_hold_them():
    paragraph = Region("text", (100, 100, 500, 200), 0.9)
    table = Region("table", (100, 300, 500, 500), 0.9)
    inside = _line(105, 110, 495, 130)
    sticking_out = _line(105, 140, 520, 160)        # 95% covered: still the paragraph's
    in_table = _line(120, 320, 300, 340)
    assigned = assign_lines([paragraph, table], [inside, sticking_out, in_table])
    assert len(assigned) == 2
    assert assigned[0].lines == (inside, sticking_out)
    assert assigned[0].region.bbox == (100, 100, 520, 200)     # grown to the line's end
    assert assigned[1].lines == (in_table,) and assigned[1].region == table   # tables keep lines, not grown


def test_lines_no_region_covers_become_text_regions_of_their_own():
    paragraph = Region("text", (100, 100, 500, 200), 0.9)
    block_a = [_line(100, 600, 400, 620), _line(100, 625, 380, 645), _line(100, 650, 300, 670)]
    side_by_side = [_line(600, 900, 700, 920), _line(720, 901, 800, 921)]
    far_away = [_line(100, 980, 200, 995)]
    assigned = assign_lines([paragraph], block_a + side_by_side + far_away)
    made = [a for a in assigned if a.region.source == "lines"]
    assert len(made) == 3
    for a in made:
        assert a.region.label == "text" and a.region.score == 0.0 and a.region.task is RecognitionTask.TEXT
    by_size = sorted(made, key=lambda a: len(a.lines))
    assert [len(a.lines) for a in by_size] == [1, 2, 3]
    assert by_size[2].region.bbox == (100, 600, 400, 670)
    assert assign_lines([], []) == []


def test_grouping_keeps_separate_columns_apart():
    left = [_line(100, 100 + 25 * i, 400, 120 + 25 * i) for i in range(3)]
    right = [_line(600, 100 + 25 * i, 900, 120 + 25 * i) for i in range(3)]   # gap of 10 line heights
    groups = group_lines(left + right)
    assert sorted(len(g) for g in groups) == [3, 3]


def test_a_block_inside_another_once_grown_is_folded_into_it():
    """A contents page (memman's, on which no layout region claims the lines): entries too far
    from their section numbers to join them on their rows, and the first entry, printed whole,
    makes the entries' block span the numbers' column. Two blocks there would read every number
    after every entry; one block reads each number in its row."""
    first = _line(100, 0, 900, 20)
    entries = [_line(200, 40 * i, 900, 40 * i + 20) for i in range(1, 8)]
    numbers = [_line(100, 40 * i, 140, 40 * i + 20) for i in range(2, 6)]
    assigned = assign_lines([], [first] + entries + numbers)
    assert len(assigned) == 1
    assert sorted(map(id, assigned[0].lines)) == sorted(map(id, [first] + entries + numbers))
    assert assigned[0].region.bbox == (100, 0, 900, 300)
    # a layout region grown over such a block takes it in the same way
    region = Region("text", (150, 0, 900, 300), 0.9)
    assigned = assign_lines([region], [first] + entries + numbers)
    assert len(assigned) == 1 and assigned[0].region.bbox == (100, 0, 900, 300) and len(assigned[0].lines) == 12
    # a block beside another, not inside it, stays apart
    beside = [_line(20, 40 * i, 60, 40 * i + 20) for i in range(2, 6)]
    assert sorted(len(a.lines) for a in assign_lines([], [first] + entries + beside)) == [4, 8]


@pytest.mark.parametrize("seed", range(25))
def test_every_line_lands_in_exactly_one_region_whatever_the_layout(seed):
    """The invariant the page pipeline rests on: no detected line is dropped or read twice,
    whether the layout model boxed it as text, a figure, an equation, a table, twice
    (nested or duplicate boxes) or not at all."""
    rng = np.random.default_rng(seed)
    labels = ["text", "title", "figure", "table", "equation", "figure_caption", "header", "footer", "reference"]
    regions = []
    for _ in range(rng.integers(0, 12)):
        x0, y0 = rng.uniform(0, 900), rng.uniform(0, 1200)
        regions.append(Region(str(rng.choice(labels)), (x0, y0, x0 + rng.uniform(5, 600), y0 + rng.uniform(5, 500)),
                              float(rng.uniform(0.5, 1))))
    regions += [Region("text", r.bbox, 0.6) for r in regions[:2]]          # the same box twice
    lines = []
    for _ in range(rng.integers(0, 60)):
        x0, y0 = int(rng.uniform(0, 1000)), int(rng.uniform(0, 1300))
        lines.append(TextLine((x0, y0, x0 + int(rng.uniform(5, 500)), y0 + int(rng.uniform(5, 30))), 0.9,
                              float(rng.choice([0.0, 0.0, 0.7, -1.2]))))
    assigned = assign_lines(regions, lines)
    landed = [line for a in assigned for line in a.lines]
    assert sorted(map(id, landed)) == sorted(map(id, lines))


def test_figures_and_equations_keep_their_lines():
    figure = Region("figure", (100, 100, 700, 600), 0.9)     # a photo with two labels: still a figure
    equation = Region("equation", (100, 700, 700, 780), 0.9)
    labels = [_line(120, 120, 200, 135), _line(600, 580, 690, 595)]
    formula = [_line(150, 705, 650, 735), _line(150, 745, 400, 775)]
    assigned = assign_lines([figure, equation], labels + formula)
    assert [(a.region.label, set(a.lines)) for a in assigned] == [("figure", set(labels)), ("equation", set(formula))]


def test_dot_leaders_join_an_entry_to_its_page_number_and_a_blank_gutter_does_not():
    page = np.full((200, 1000, 3), 255, np.uint8)
    entry, number = _line(100, 50, 300, 70), _line(560, 50, 590, 70)      # "Arrays ........ 20"
    for x in range(305, 555, 8):
        page[62:65, x:x + 2] = 0                                          # the dots, 8 px apart
    left, right = _line(100, 120, 450, 140), _line(600, 120, 900, 140)    # two columns, blank between
    groups = group_lines([entry, number, left, right], page)
    assert sorted([line.bbox for line in group] for group in groups) == sorted(
        [[entry.bbox, number.bbox], [left.bbox], [right.bbox]])
    assert sorted(len(g) for g in group_lines([entry, number], None)) == [1, 1]   # without the pixels: apart


def test_dot_leaders_on_a_scan_join_and_its_noisy_gutter_does_not():
    """A 150-DPI scan blurs leader dots into grey specks a pixel or two wide on toned paper
    (amsldoc's contents page came apart: its page numbers were read after the entries)."""
    rng = np.random.default_rng(0)
    page = np.clip(rng.normal(220, 6, (200, 1000, 3)), 0, 255).astype(np.uint8)   # toned, noisy paper
    entry, number = _line(100, 50, 300, 70), _line(560, 50, 590, 70)
    for x in range(306, 555, 16):
        page[61:64, x] = 115                                              # specks, 16 px apart
        page[61:64, x + 1] = 155
    left, right = _line(100, 120, 450, 140), _line(600, 120, 900, 140)
    groups = group_lines([entry, number, left, right], page)
    assert sorted([line.bbox for line in group] for group in groups) == sorted(
        [[entry.bbox, number.bbox], [left.bbox], [right.bbox]])
