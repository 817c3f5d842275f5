"""Tables read line by line (workers.table_text): cells from word gaps, columns that a stray mark
or one spanning header cannot fuse, spanning cells kept as HTML colspans. The layouts are those
of a real two-column-header table (an ACM sample's "Frequency of Special Characters") and a
form's grouped header, in page pixels."""
from __future__ import annotations

import re
from html.parser import HTMLParser

from workers.page_result import LineResult, RegionResult, RegionStatus, WordResult
from workers.pipeline.words import _retabulated
from workers.table_text import band_rows, markdown_table


def _words(*spec):
    return [((x0, y, x1, y + 23), text) for x0, x1, y, text in spec]


def _line(words):
    boxes = [box for box, _ in words]
    box = (min(b[0] for b in boxes) - 3, boxes[0][1] - 3, max(b[2] for b in boxes) + 3, boxes[0][3] + 5)
    return (box, " ".join(text for _, text in words), words)


# The header's first two cells came out of the line detector as one line, and the last row's
# last two cells too; a stray ")" was read between two cells of the first row.
SPECIAL_CHARACTERS = [
    [_line(_words((929, 1058, 309, "Non-English"), (1064, 1086, 309, "or"), (1092, 1145, 309, "Math"),
                  (1174, 1280, 309, "Frequency"))),
     _line(_words((1308, 1419, 309, "Comments")))],
    [_line(_words((1029, 1046, 352, "Ø"))), _line(_words((1179, 1190, 352, "1"), (1197, 1217, 352, "in"),
                                                         (1223, 1275, 352, "1,000"))),
     ((1273, 354, 1310, 373), ")", []),
     _line(_words((1308, 1342, 352, "For"), (1348, 1433, 352, "Swedish"), (1439, 1504, 352, "names")))],
    [_line(_words((1030, 1043, 382, "π"))), _line(_words((1199, 1210, 382, "1"), (1217, 1237, 382, "in"),
                                                         (1243, 1255, 382, "5"))),
     _line(_words((1308, 1402, 382, "Common"), (1409, 1429, 382, "in"), (1435, 1487, 382, "math")))],
    [_line(_words((1024, 1050, 440, "Ψ"))),
     _line(_words((1173, 1185, 444, "1"), (1191, 1211, 444, "in"), (1217, 1281, 444, "40,000"),
                  (1308, 1436, 444, "Unexplained"), (1443, 1501, 444, "usage")))],
]


def _pipe_grid(markdown: str) -> list[list[str]]:
    rows = [line for line in markdown.splitlines() if not re.match(r"^\|[\s|-]+\|$", line)]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in rows]


def test_word_gaps_split_cells_and_a_stray_mark_does_not_fuse_columns():
    grid = _pipe_grid(markdown_table(SPECIAL_CHARACTERS))
    assert grid[0] == ["Non-English or Math", "Frequency", "Comments"]
    assert grid[1][0] == "Ø" and grid[1][1].startswith("1 in 1,000") and grid[1][2].endswith("For Swedish names")
    assert grid[2] == ["π", "1 in 5", "Common in math"]
    assert grid[3] == ["Ψ", "1 in 40,000", "Unexplained usage"]


def test_lines_without_words_keep_the_line_as_the_cell_and_span_the_columns_it_covers():
    rows = [[(box, text) for box, text, _ in row] for row in SPECIAL_CHARACTERS]
    parser = _Cells()
    parser.feed(markdown_table(rows))
    assert parser.rows[0] == [["Non-English or Math Frequency", 2], ["Comments", 1]]
    assert parser.rows[2] == [["π", 1], ["1 in 5", 1], ["Common in math", 1]]
    assert parser.rows[3] == [["Ψ", 1], ["1 in 40,000 Unexplained usage", 2]]


class _Cells(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows: list[list[list]] = []
        self.in_cell = False

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.rows[-1].append(["", int(dict(attrs).get("colspan", 1))])
            self.in_cell = True

    def handle_endtag(self, tag):
        self.in_cell = self.in_cell and tag not in ("td", "th")

    def handle_data(self, data):
        if self.in_cell:
            self.rows[-1][-1][0] += data


def test_a_header_over_two_columns_spans_them_in_html():
    # "Rate of tax" over the columns "10%" and "30%", each with two rows of figures under it.
    header = [_line(_words((100, 160, 100, "Income"))), _line(_words((300, 345, 100, "Rate"), (351, 369, 100, "of"),
                                                                       (375, 410, 100, "tax")))]
    rows = [header] + [[_line(_words((100, 170, y, "Dividends"))), _line(_words((300, 330, y, "10%"))),
                        _line(_words((380, 410, y, "30%")))] for y in (140, 180)]
    text = markdown_table(rows)
    assert text.startswith("<table>")
    parser = _Cells()
    parser.feed(text)
    assert parser.rows[0] == [["Income", 1], ["Rate of tax", 2]]
    assert parser.rows[1] == [["Dividends", 1], ["10%", 1], ["30%", 1]]


def test_the_words_stage_remakes_a_table_from_its_word_boxes():
    lines = tuple(LineResult(box, text, 0.9, words=tuple(WordResult(wbox, word, 0.9, "interpolated", "line")
                                                         for wbox, word in words))
                  for row in SPECIAL_CHARACTERS for box, text, words in row if words)
    region = RegionResult(0, "table", "table", "body", (900, 300, 1520, 480), (0, 0, 1, 1), "old", RegionStatus.OK,
                          lines=lines)
    grid = _pipe_grid(_retabulated(region).text)
    assert grid[0] == ["Non-English or Math", "Frequency", "Comments"]
    assert [len(row) for row in band_rows(lines)] == [2, 3, 3, 2]
    not_a_table = RegionResult(0, "text", "text", "body", (0, 0, 1, 1), (0, 0, 1, 1), "old", RegionStatus.OK,
                               lines=lines)
    assert _retabulated(not_a_table) is not_a_table


def test_plain_text_writes_a_spanning_table_as_pipe_rows_not_html():
    from workers.document_result import _region_text

    rows = [[(box, text) for box, text, _ in row] for row in SPECIAL_CHARACTERS]
    html_table = markdown_table(rows)
    region = {"label": "table", "task": "table", "role": "body", "text": html_table, "lines": [],
              "blocks": [{"type": "table", "text": html_table, "lines": []}]}
    plain = _region_text(region)
    assert "<" not in plain and ">" not in plain.replace("→", "")
    grid = _pipe_grid(plain)
    assert grid[0] == ["Non-English or Math Frequency", "", "Comments"]
    assert grid[3] == ["Ψ", "1 in 40,000 Unexplained usage", ""]
    assert _region_text(dict(region, blocks=[])) == plain
