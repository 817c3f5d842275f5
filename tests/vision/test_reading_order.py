from __future__ import annotations

import pytest
import vision_samples as samples

from vision.layout import Region
from vision.lines import TextLine
from vision.reading_order import PageRole, order_boxes, order_lines, order_regions, order_text_lines, page_role

PAGE_H = 1000


def _text(x0, y0, x1, y1, label="text") -> Region:
    return Region(label, (x0, y0, x1, y1), 0.9)


def test_two_columns_are_read_left_column_first():
    boxes = [(520, 100, 900, 300), (100, 100, 480, 300), (100, 320, 480, 500), (520, 320, 900, 500)]
    assert order_boxes(boxes) == [1, 2, 0, 3]


def test_full_width_regions_split_the_columns_into_bands():
    boxes = {
        "title": (100, 50, 900, 90),
        "a1": (100, 100, 480, 300), "b1": (520, 100, 900, 280),
        "a2": (100, 310, 480, 400), "b2": (520, 300, 900, 400),
        "figure": (100, 420, 900, 600),
        "a3": (100, 620, 480, 900), "b3": (520, 620, 900, 880),
    }
    names = list(boxes)
    order = order_boxes([boxes[n] for n in names])
    assert [names[i] for i in order] == ["title", "a1", "a2", "b1", "b2", "figure", "a3", "b3"]


def test_three_columns_and_one_column():
    three = [(700, 100, 950, 500), (50, 100, 300, 500), (375, 100, 625, 500), (50, 520, 300, 600)]
    assert order_boxes(three) == [1, 3, 2, 0]
    one = [(100, 400, 900, 500), (100, 100, 900, 200), (300, 250, 700, 300)]   # a centred narrow block too
    assert order_boxes(one) == [1, 2, 0]
    assert order_boxes([]) == []


def test_headers_first_and_footers_last_by_label_or_position():
    regions = [
        _text(100, 960, 900, 985),                 # thin strip in the bottom margin: footer
        _text(100, 100, 900, 400),
        _text(100, 10, 500, 40),                   # thin strip in the top margin: header
        _text(100, 900, 900, 930, label="footer"),  # labelled footer near the bottom
        _text(600, 85, 900, 110, label="header"),  # labelled header, in the top 12%
        Region("figure", (100, 940, 900, 990), 0.9),  # figures are never running headers/footers
        _text(100, 500, 900, 700, label="footer"),  # labelled footer mid-page: a footnote, body
        _text(100, 130, 600, 160, label="header"),  # labelled header under the margin: a chapter title
        _text(920, 86, 960, 108),                   # a page number level with that header, below the strip band
    ]
    order = order_regions(regions, PAGE_H)
    assert order == [(2, PageRole.HEADER), (4, PageRole.HEADER), (8, PageRole.HEADER), (7, PageRole.BODY),
                     (1, PageRole.BODY), (6, PageRole.BODY), (5, PageRole.BODY),
                     (3, PageRole.FOOTER), (0, PageRole.FOOTER)]
    assert page_role(_text(100, 10, 900, 200), PAGE_H) is PageRole.BODY   # tall: not a running header


def test_lines_are_read_in_rows_left_to_right():
    lines = [
        TextLine((500, 102, 900, 122), 0.9),   # right half of row 1, slightly lower
        TextLine((100, 100, 480, 120), 0.9),
        TextLine((100, 130, 900, 150), 0.9),
        TextLine((100, 160, 300, 180), 0.9),
        TextLine((320, 158, 600, 178), 0.9),
    ]
    ordered = order_lines(lines)
    assert [ln.bbox[:2] for ln in ordered] == [(100, 100), (500, 102), (100, 130), (100, 160), (320, 158)]
    assert order_lines([]) == []


def _block_texts(layout, pdf: bytes) -> list[str]:
    """For each block in reading order, the PDF lines whose centres it holds."""
    truth = samples.pdf_line_boxes(pdf, samples.TEST_DPI)
    texts = []
    for block in layout.blocks:
        x0, y0, x1, y1 = block.region.bbox
        inside = [text for text, b in truth if x0 <= (b[0] + b[2]) / 2 <= x1 and y0 <= (b[1] + b[3]) / 2 <= y1]
        texts.append(" ".join(inside))
    return texts


def test_two_column_page_reads_the_whole_left_column_before_the_right(two_column_layout):
    texts = _block_texts(two_column_layout, samples.two_column_pdf())
    assert texts[0].startswith("Two Column Study")
    # The model may split a paragraph into several blocks; the markers must still come in column order.
    markers = [word + " " + number for text in texts[1:]
               for word, number in zip(text.split(), text.split()[1:]) if word in ("LEFT", "RIGHT")]
    assert [m.rstrip(".") for m in markers] == [f"LEFT {i}" for i in range(4)] + [f"RIGHT {i}" for i in range(4)]
    middle = two_column_layout.width / 2
    sides = ["left" if block.region.bbox[2] < middle else "right" for block in two_column_layout.blocks[1:]]
    assert sides == sorted(sides) and "right" in sides          # every left block before every right one
    assert all(block.role is PageRole.BODY for block in two_column_layout.blocks)
    assert [b.reading_index for b in two_column_layout.blocks] == list(range(len(two_column_layout.blocks)))


def test_header_and_footer_lines_are_marked_and_placed_first_and_last(header_footer_layout):
    blocks = header_footer_layout.blocks
    texts = _block_texts(header_footer_layout, samples.header_footer_pdf())
    assert blocks[0].role is PageRole.HEADER and texts[0] == "ACME Quarterly - Internal"
    assert blocks[-1].role is PageRole.FOOTER and texts[-1] == "Page 3 of 12"
    assert all(b.role is PageRole.BODY for b in blocks[1:-1])
    assert texts[1] == "Results Overview"


def test_lines_inside_a_block_follow_the_written_order(one_column_layout):
    truth = samples.pdf_line_boxes(samples.one_column_pdf(), samples.TEST_DPI)
    body = [b for b in one_column_layout.blocks if b.region.label == "text"]
    for block in body:
        tops = [line.bbox[1] for line in block.lines]
        assert tops == sorted(tops)
    detected_order = [line for block in one_column_layout.blocks for line in block.lines]
    truth_order = sorted(truth, key=lambda t: t[1][1])
    for line, (text, box) in zip(detected_order, truth_order):
        assert abs((line.bbox[1] + line.bbox[3]) / 2 - (box[1] + box[3]) / 2) < 10, text


@pytest.mark.parametrize("num_regions", [1, 40])
def test_order_covers_every_region_once(num_regions):
    regions = [_text(50 + (i % 3) * 300, 100 + (i // 3) * 60, 300 + (i % 3) * 300, 150 + (i // 3) * 60)
               for i in range(num_regions)]
    order = order_regions(regions, PAGE_H * 4)
    assert sorted(i for i, _ in order) == list(range(num_regions))


def _lines(*boxes) -> list[TextLine]:
    return [TextLine(tuple(box), 0.9) for box in boxes]


def test_lines_set_in_justified_columns_are_read_column_by_column():
    left = [(100, 100 + 25 * i, 480, 120 + 25 * i) for i in range(6)] + [(100, 250, 300, 270)]   # a paragraph's short last line
    right = [(520, 100 + 25 * i, 900, 120 + 25 * i) for i in range(7)]
    ordered = order_text_lines(_lines(*left, *right))
    assert [line.bbox for line in ordered] == sorted(left, key=lambda b: b[1]) + right


def test_an_index_column_ending_in_page_numbers_is_a_column():
    entries = [(100, 100 + 25 * i, 200 + 30 * (i % 3), 120 + 25 * i) for i in range(6)]
    numbers = [(450, 100 + 25 * i, 480, 120 + 25 * i) for i in range(6)]          # right-aligned after dot leaders
    right_entries = [(520, 100 + 25 * i, 640 + 20 * (i % 2), 120 + 25 * i) for i in range(6)]
    right_numbers = [(870, 100 + 25 * i, 900, 120 + 25 * i) for i in range(6)]
    ordered = [line.bbox for line in order_text_lines(_lines(*right_entries, *entries, *right_numbers, *numbers))]
    assert ordered == [box for pair in [*zip(entries, numbers), *zip(right_entries, right_numbers)] for box in pair]


def test_a_printed_matrix_is_read_row_by_row_not_column_by_column():
    # R's printout of a 4x5 matrix: a header row "[,1] ... [,5]", then "[i,]  a  b  c  d  e", each number its
    # own detected line. Its aligned columns leave gutters the whole height, but they hold cells, not text.
    xs = [40, 160, 240, 320, 400, 480]
    boxes = [(x, 100 + 30 * row, x + (60 if col == 0 else 20 + 10 * (row > 2)), 120 + 30 * row)
             for row in range(5) for col, x in enumerate(xs) if (row, col) != (0, 0)]
    ordered = [line.bbox for line in order_text_lines(_lines(*reversed(boxes)))]
    assert ordered == boxes



def test_a_table_without_rules_the_layout_missed_is_read_by_rows():
    # memman's table of paper sizes on a scan: no table region, so its cells are a block of lines
    # whose four columns leave gutters the whole height; its cells sit row by row, so rows are read
    # across (a two-column index, whose entries may also line up, keeps its columns: test above).
    xs = [(100, 230), (300, 400), (460, 600), (660, 800)]          # option, size, two commands
    rows = [[(x0, 100 + 25 * r, x1 - 15 * (r % 3), 120 + 25 * r) for x0, x1 in xs] for r in range(8)]
    boxes = [box for row in rows for box in row]
    ordered = [line.bbox for line in order_text_lines(_lines(*reversed(boxes)))]
    assert ordered == boxes
    prose = [[(x0, 100 + 25 * r, x0 + 380, 120 + 25 * r) for x0 in (100, 520, 940)] for r in range(8)]
    by_column = [row[c] for c in range(3) for row in prose]       # three columns of long lines stay columns
    assert [line.bbox for line in order_text_lines(_lines(*reversed(by_column)))] == by_column
