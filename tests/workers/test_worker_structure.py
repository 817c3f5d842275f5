"""A page's structure (workers.structure) on hand-built regions shaped like real pages
(R-intro at 150 DPI: body lines 26 px tall, text from x=186 to x=1090): the blocks and
the Markdown made from them."""
from __future__ import annotations

import random
import re

from workers.document_result import render_markdown, render_text
from workers.page_result import LineResult, PageResult, RegionResult, RegionStatus
from workers.structure import page_blocks, with_structure
from workers.structure_blocks import Block, BlockType, ListItem
from workers.structure_rows import join_lines, region_rows

WIDTH, HEIGHT, DPI = 1275, 1650, 150.0
RIGHT = 1090        # the text column's right edge
CHAR = 10.0         # average character width of the body font, px
CODE_CHAR = 12.0    # of the monospaced font


class Lines:
    """Lines top to bottom, 28 px apart, 26 px tall; x1 from the text unless given."""

    def __init__(self, y: float = 300):
        self.y = y
        self.lines: list[LineResult] = []

    def add(self, x0: float, text: str, x1: float | None = None, *, char: float = CHAR, height: float = 26,
            same_row: bool = False, dy: float = 0) -> Lines:
        """`same_row`: beside the last line, its top `dy` lower."""
        y0 = self.lines[-1].bbox[1] + dy if same_row else self.y
        x1 = min(RIGHT, x0 + char * len(text)) if x1 is None else x1
        self.lines.append(LineResult((x0, y0, x1, y0 + height), text))
        self.y = max(self.y, y0 + height + 2)
        return self

    def full(self, text: str, x0: float = 186) -> Lines:
        return self.add(x0, text, RIGHT)

    def skip(self, px: float) -> Lines:
        self.y += px
        return self


def region(index: int, label: str, lines: Lines | tuple[LineResult, ...] = (), *, task: str = "text",
           role: str = "body", text: str | None = None, bbox=None, status=RegionStatus.OK) -> RegionResult:
    found = tuple(lines.lines if isinstance(lines, Lines) else lines)
    if bbox is None:
        bbox = (min(l.bbox[0] for l in found), min(l.bbox[1] for l in found),
                max(l.bbox[2] for l in found), max(l.bbox[3] for l in found))
    return RegionResult(index, label, task, role, bbox, (0, 0, 0, 0),
                        "\n".join(l.text for l in found) if text is None else text, status, lines=found)


def blocks_of(*regions: RegionResult) -> list[list[Block]]:
    return page_blocks(regions, WIDTH, HEIGHT, DPI)


def markdown_of(*regions: RegionResult) -> str:
    page = PageResult(0, 0, WIDTH, HEIGHT, DPI, tuple(with_structure(regions, WIDTH, HEIGHT, DPI))).to_dict()
    page.update({"page": 1, "state": "done"})
    result = {"documents": [{"filename": "a.pdf", "pages": [page]}]}
    return render_markdown(result).removeprefix("<!-- page 1 -->\n\n")


def text_of(*regions: RegionResult) -> str:
    page = PageResult(0, 0, WIDTH, HEIGHT, DPI, tuple(with_structure(regions, WIDTH, HEIGHT, DPI))).to_dict()
    return render_text({"documents": [{"pages": [page]}]})


def bulleted_list() -> Lines:
    """R-intro page 2: a paragraph, a bulleted list (items wrap to their text), two paragraphs."""
    return (Lines()
            .full("R is an integrated suite of software facilities for data manipulation, calculation and graphical")
            .add(188, "display. Among other things it has", 535)
            .add(205, "• an effective data handling and storage facility,")
            .add(205, "• a suite of operators for calculations on arrays, in particular matrices,")
            .add(204, "• graphical facilities for data analysis and display either directly at the computer or on",
                 RIGHT)
            .add(232, "hardcopy, and")
            .add(205, "• a well developed, simple and effective programming language (called 'S') which includes",
                 RIGHT)
            .add(231, "conditionals, loops, user defined recursive functions and input and output facili-", RIGHT)
            .add(233, "ties. (Indeed most of the system supplied functions are written in the S language.)", RIGHT)
            .add(218, "The term “environment” is intended to characterize it as a fully planned and coherent",
                 RIGHT)
            .full("system, rather than an incremental accretion of very specific and inflexible tools.", 186)
            .add(216, "R is very much a vehicle for newly developing methods of interactive data analysis.", RIGHT)
            .add(187, "It has developed rapidly.", 450))


def test_a_bulleted_list_under_a_paragraph_is_a_list_of_its_items():
    [blocks] = blocks_of(region(0, "text", bulleted_list()))
    assert blocks == [
        Block(BlockType.PARAGRAPH, "R is an integrated suite of software facilities for data manipulation, "
              "calculation and graphical display. Among other things it has", (0, 1)),
        Block(BlockType.LIST, "an effective data handling and storage facility,\n"
              "a suite of operators for calculations on arrays, in particular matrices,\n"
              "graphical facilities for data analysis and display either directly at the computer or on hardcopy, and\n"
              "a well developed, simple and effective programming language (called 'S') which includes conditionals, "
              "loops, user defined recursive functions and input and output facilities. (Indeed most of the system "
              "supplied functions are written in the S language.)", (2, 3, 4, 5, 6, 7, 8),
              items=(ListItem("•", "an effective data handling and storage facility,", (2,)),
                     ListItem("•", "a suite of operators for calculations on arrays, in particular matrices,", (3,)),
                     ListItem("•", "graphical facilities for data analysis and display either directly at the "
                              "computer or on hardcopy, and", (4, 5)),
                     ListItem("•", "a well developed, simple and effective programming language (called 'S') which "
                              "includes conditionals, loops, user defined recursive functions and input and output "
                              "facilities. (Indeed most of the system supplied functions are written in the S "
                              "language.)", (6, 7, 8))),
              ordered=False),
        Block(BlockType.PARAGRAPH, "The term “environment” is intended to characterize it as a fully planned and "
              "coherent system, rather than an incremental accretion of very specific and inflexible tools.", (9, 10)),
        Block(BlockType.PARAGRAPH, "R is very much a vehicle for newly developing methods of interactive data "
              "analysis. It has developed rapidly.", (11, 12)),
    ]


def test_list_markdown_and_text_keep_one_item_per_line():
    markdown = markdown_of(region(0, "text", bulleted_list()))
    assert markdown.startswith(
        "R is an integrated suite of software facilities for data manipulation, calculation and graphical display. "
        "Among other things it has\n\n- an effective data handling and storage facility,\n"
        "- a suite of operators for calculations on arrays, in particular matrices,\n"
        "- graphical facilities for data analysis and display either directly at the computer or on hardcopy, and\n"
        "- a well developed, simple")
    assert "S language.)\n\nThe term “environment”" in markdown
    text = text_of(region(0, "text", bulleted_list()))
    assert "graphical\ndisplay. Among other things it has\n\n• an effective data handling and storage facility,\n" \
           "• a suite of operators" in text, "paragraphs keep their lines; items are one a line"
    assert "• graphical facilities for data analysis and display either directly at the computer or on " \
           "hardcopy, and\n" in text


def r_session() -> Lines:
    """R-intro page 45: prose, then an R function typed at the prompt, with indented body lines."""
    lines = Lines(850).add(219, "The function is defined as follows:", 558)
    code = [(245, "> twosam <- function(y1, y2) {"), (293, "n1 <- length(y1); n2 <- length(y2)"),
            (293, "tst <- (yb1 - yb2)/sqrt(s*(1/n1 + 1/n2))"), (293, "tst"), (269, "}")]
    for x0, text in code:
        lines.add(x0, text, char=CODE_CHAR)
    lines.skip(8).add(218, "With this function defined, you could perform two sample t-tests using a call such as",
                      1066)
    lines.add(246, "> x <- c(10.4, 5.6, 3.1, 6.4, 21.7)", char=CODE_CHAR)
    return lines.add(219, "As a second example, consider a function to emulate directly the MATLAB backslash", RIGHT) \
        .full("command, which returns the coefficients of the orthogonal projection of the vector y onto")


def test_an_r_listing_is_a_code_block_with_its_breaks_and_indentation():
    [blocks] = blocks_of(region(0, "text", r_session()), region(1, "text", bulleted_list()))[:1]
    assert [block.type for block in blocks] == ["paragraph", "code", "paragraph", "code", "paragraph"]
    assert blocks[1] == Block(BlockType.CODE, "> twosam <- function(y1, y2) {\n"
                                              "    n1 <- length(y1); n2 <- length(y2)\n"
                                              "    tst <- (yb1 - yb2)/sqrt(s*(1/n1 + 1/n2))\n"
                                              "    tst\n"
                                              "  }", (1, 2, 3, 4, 5), language="r")
    assert blocks[3] == Block(BlockType.CODE, "> x <- c(10.4, 5.6, 3.1, 6.4, 21.7)", (7,), language="r")
    markdown = markdown_of(region(0, "text", r_session()))
    assert "follows:\n\n```r\n> twosam <- function(y1, y2) {\n    n1 <- length(y1); n2 <- length(y2)\n" in markdown
    assert "    tst\n  }\n```\n\nWith this function defined" in markdown
    text = text_of(region(0, "text", r_session()))
    assert "> twosam <- function(y1, y2) {\n    n1 <- length(y1); n2 <- length(y2)\n" in text


def test_a_listing_without_prompts_needs_code_tokens_on_several_rows():
    listing = Lines().full("Prose that introduces the listing below, written as a full sentence of words:")
    for x0, text in [(186, "int main(void) {"), (234, "printf(\"%d\\n\", x);"), (234, "return 0;"), (186, "}")]:
        listing.add(x0, text, char=CODE_CHAR)
    [blocks] = blocks_of(region(0, "text", listing))
    assert blocks[1] == Block(BlockType.CODE, "int main(void) {\n    printf(\"%d\\n\", x);\n    return 0;\n}",
                              (1, 2, 3, 4))
    # One row of symbols in prose is not a listing.
    prose = Lines().full("The expression is an R expression, (usually a grouped expression), that uses the")
    prose.add(187, "arguments; see f(x) = {a, b}.", 500)
    [blocks] = blocks_of(region(0, "text", prose))
    assert [block.type for block in blocks] == ["paragraph"]


def test_a_numbered_heading_on_the_first_row_is_a_heading_then_prose():
    section = Lines(294).add(187, "1.1 The R environment", 538, height=29).skip(14)
    section.full("R is an integrated suite of software facilities for data manipulation, calculation and graphical")
    section.add(188, "display. Among other things it has", 535)
    title = Lines(200).add(188, "1 Introduction and preliminaries", 770, height=32)
    other = Lines(900).add(187, "1.2 Related software and documentation", 788, height=29)
    blocks = blocks_of(region(0, "title", title), region(1, "text", section), region(2, "title", other))
    assert blocks == [
        [Block(BlockType.HEADING, "1 Introduction and preliminaries", (0,), level=2)],
        [Block(BlockType.HEADING, "1.1 The R environment", (0,), level=3),
         Block(BlockType.PARAGRAPH, "R is an integrated suite of software facilities for data manipulation, "
               "calculation and graphical display. Among other things it has", (1, 2))],
        [Block(BlockType.HEADING, "1.2 Related software and documentation", (0,), level=3)],
    ]
    assert markdown_of(region(0, "title", title), region(1, "text", section)).startswith(
        "## 1 Introduction and preliminaries\n\n### 1.1 The R environment\n\nR is an integrated suite")


def test_numbers_starting_prose_or_footnotes_are_not_headings():
    footnotes = (Lines(1415).add(194, "1 With other than vector types of argument, such as list mode arguments, the",
                                 RIGHT, height=20)
                 .add(218, "action is rather different. See Section 6.2.1, page 30.", 704, height=20)
                 .add(195, "2 Actually, it is still available before any other statements.", 947, height=20))
    body = Lines().full("R operates on named data structures. The simplest such structure is the numeric vector,")
    body.add(186, "2 vectors of the same length", 480)
    [notes, prose] = blocks_of(region(0, "reference", footnotes), region(1, "text", body))
    assert [block.type for block in notes] == ["paragraph", "paragraph"]    # two footnotes, no heading
    assert notes[1].text == "2 Actually, it is still available before any other statements."
    assert [block.type for block in prose] == ["paragraph"]


def test_unnumbered_headings_take_levels_from_their_size():
    page = (region(0, "title", Lines(168).add(392, "The Name of the Title Is Hope", 883, height=41)),
            region(1, "text", Lines(976).add(111, "ABSTRACT", 236, height=22)),
            region(2, "title", Lines(1201).add(661, "1 INTRODUCTION", 877, height=20)),
            region(3, "text", Lines(1230).add(661, "ACM's consolidated article template, introduced in 2017,", 1165,
                                              height=23).add(659, "a consistent style for publications.", 900,
                                                             height=23)))
    levels = [[(block.type.value, block.level) for block in blocks] for blocks in blocks_of(*page)]
    assert levels == [[("heading", 1)], [("heading", 2)], [("heading", 2)], [("paragraph", None)]]
    # With no numbered heading on the page, size ranks them, the biggest ## as a title always was.
    unnumbered = (page[0], region(1, "text", Lines(600).add(111, "Methods and Materials", 400, height=31)), page[1],
                  page[3])
    assert [blocks[0].level for blocks in blocks_of(*unnumbered)] == [2, 3, 4, None]


def test_a_table_of_contents_page_is_lists_of_entries_not_headings():
    def entries(y: float, rows) -> Lines:
        lines = Lines(y)
        for number, title, page in rows:
            lines.add(217, number, 252, height=21).add(266, title, same_row=True)
            if page:
                lines.add(915, page, 938, height=19, same_row=True)
        return lines

    chapter = Lines(361).add(192, "1", 202, height=14).add(234, "Introduction and preliminaries", 691, height=32,
                                                          same_row=True, dy=-6)
    first = entries(394, [("1.1", "The R environment . . . . . . . .", "2"), ("1.2", "Related software .", ""),
                          ("1.3", "R and statistics", "3")])
    second = entries(765, [("2.1", "Vectors and assignment", "8"), ("2.2", "Vector arithmetic..", "9")])
    regions = (region(0, "header", Lines(196).add(187, "Table of Contents", 503), role="header"),
               region(1, "title", chapter), region(2, "text", first), region(3, "text", second))
    blocks = blocks_of(*regions)
    assert blocks[1] == [Block(BlockType.LIST, "1 Introduction and preliminaries", (0, 1),
                               items=(ListItem("", "1 Introduction and preliminaries", (0, 1)),), ordered=False)]
    assert [item.text for item in blocks[2][0].items] == ["1.1 The R environment\t2", "1.2 Related software",
                                                           "1.3 R and statistics\t3"]
    assert [item.lines for item in blocks[2][0].items] == [(0, 1, 2), (3, 4), (5, 6, 7)]
    assert "#" not in markdown_of(*regions).replace("<!--", "")
    assert markdown_of(*regions).endswith("- 2.1 Vectors and assignment\t8\n- 2.2 Vector arithmetic\t9\n")


def test_a_toc_entry_on_an_ordinary_page_is_no_heading():
    entry = Lines().add(187, "1.1 The R environment", 460).add(900, "3", 915, same_row=True)
    prose = Lines(400).full("R operates on named data structures. The simplest such structure is the numeric vector,")
    [toc, _] = blocks_of(region(0, "text", entry), region(1, "text", prose))
    assert [block.type for block in toc] == ["paragraph"]


def test_a_caption_is_tied_to_its_figure_and_follows_it_in_markdown():
    figure = RegionResult(1, "figure", "skip", "body", (93, 646, 1180, 928), (0, 0, 0, 0), "", RegionStatus.OK,
                          figure="f1.png")
    caption = region(0, "figure_caption", Lines(600).add(422, "Figure 1: Seattle Mariners at Spring", 853)
                     .add(422, "Training, 2010.", 600))
    table = RegionResult(2, "table", "table", "body", (186, 1000, 1090, 1100), (0, 0, 0, 0),
                         "| a | b |\n| --- | --- |\n| 1 | 2 |", RegionStatus.OK)
    under = region(3, "text", Lines(1110).add(186, "Table 2. Counts per class.", 520)
                   .skip(30).full("Body text that follows the table and is not part of its caption at all."))
    blocks = blocks_of(caption, figure, table, under)
    assert blocks[0] == [Block(BlockType.CAPTION, "Figure 1: Seattle Mariners at Spring Training, 2010.", (0, 1),
                               caption_of=1)]
    assert blocks[1] == [] and blocks[2] == [Block(BlockType.TABLE, table.text, ())]
    assert blocks[3][0] == Block(BlockType.CAPTION, "Table 2. Counts per class.", (0,), caption_of=2)
    assert blocks[3][1].type is BlockType.PARAGRAPH
    assert markdown_of(caption, figure, table, under) == (
        "![figure](figures/f1.png)\n\n*Figure 1: Seattle Mariners at Spring Training, 2010.*\n\n"
        "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n*Table 2. Counts per class.*\n\n"
        "Body text that follows the table and is not part of its caption at all.\n")


def test_a_numbered_list_with_nested_letters():
    steps = (Lines()
             .full("To install a package:")
             .add(198, "1. Download the source archive from the CRAN mirror nearest to you and check", RIGHT)
             .add(231, "its checksum.", 360)
             .add(198, "2. Unpack it and run the installer:", 560)
             .add(231, "(a) on Unix, from a shell;", 520)
             .add(231, "(b) on Windows, from the R console.", 580)
             .add(198, "3. Load it with library().", 460))
    [blocks] = blocks_of(region(0, "text", steps))
    assert blocks[1] == Block(
        BlockType.LIST, "Download the source archive from the CRAN mirror nearest to you and check its checksum.\n"
        "Unpack it and run the installer:\non Unix, from a shell;\non Windows, from the R console.\n"
        "Load it with library().", (1, 2, 3, 4, 5, 6),
        items=(ListItem("1.", "Download the source archive from the CRAN mirror nearest to you and check its checksum.",
                        (1, 2)),
               ListItem("2.", "Unpack it and run the installer:", (3,)),
               ListItem("(a)", "on Unix, from a shell;", (4,), depth=1),
               ListItem("(b)", "on Windows, from the R console.", (5,), depth=1),
               ListItem("3.", "Load it with library().", (6,))),
        ordered=True, start=1)
    assert markdown_of(region(0, "text", steps)).endswith(
        "1. Download the source archive from the CRAN mirror nearest to you and check its checksum.\n"
        "2. Unpack it and run the installer:\n    - (a) on Unix, from a shell;\n"
        "    - (b) on Windows, from the R console.\n3. Load it with library().\n")
    # A list that goes on from the previous page keeps its first number.
    [[item4]] = blocks_of(region(0, "text", Lines().add(198, "4. A vector of character strings.", 600)))
    assert (item4.type, item4.ordered, item4.start) == (BlockType.LIST, True, 4)
    assert markdown_of(region(0, "text", Lines().add(198, "4. A vector of character strings.", 600))) == \
        "4. A vector of character strings.\n"


def test_hyphenated_words_are_joined_in_prose_and_items():
    prose = (Lines().full("Many experiments are best de-").full("scribed by data frames, as in S-")
             .add(186, "PLUS and in 1990–", 600).add(186, "2 releases.", 300))
    [[paragraph]] = blocks_of(region(0, "text", prose))
    assert paragraph.text == \
        "Many experiments are best described by data frames, as in S-PLUS and in 1990– 2 releases."


def test_lines_of_writing_without_spaces_join_without_one():
    assert join_lines(["吾輩は猫である。名前はま", "だ無い。", "どこで生れたか"]) == "吾輩は猫である。名前はまだ無い。どこで生れたか"
    assert join_lines(["中文的句子，", "下一行"]) == "中文的句子，下一行"
    assert join_lines(["日本語の文 and", "English words"]) == "日本語の文 and English words"


def test_columns_of_vertical_writing_are_lines_one_after_the_other():
    # three columns right to left, as the reading order gives them: never one row of three
    columns = [((937, 118, 1006, 911), "吾輩は猫である。名前はま"), ((826, 115, 896, 910), "だ無い。どこで生れたかと"),
               ((722, 123, 780, 644), "んと見当がつかぬ。")]
    rows = region_rows([LineResult(box, text) for box, text in columns])
    assert [row.texts for row in rows] == [(text,) for _, text in columns]
    # a lone glyph's box can be as tall and narrow (an R prompt's "+", the text layer's word box
    # at 100 DPI): it stays in its row
    prompt = region_rows([LineResult((83, 398, 93, 419), "+"), LineResult((120, 400, 260, 418), 'print("big")')])
    assert [row.texts for row in prompt] == [("+", 'print("big")')]


def test_a_centred_numbered_line_is_an_equation():
    maths = (Lines().full("The variance is estimated by the pooled sum of squares, which is")
             .add(480, "s = ((n1-1)*s1 + (n2-1)*s2)/(n1+n2-2)", 800)
             .add(1050, "(3)", RIGHT, same_row=True)
             .add(186, "where n1 and n2 are the sample sizes.", 600))
    [blocks] = blocks_of(region(0, "text", maths))
    assert blocks[1] == Block(BlockType.EQUATION, "s = ((n1-1)*s1 + (n2-1)*s2)/(n1+n2-2)", (1, 2), number="3")
    assert "is\n\n$$\ns = ((n1-1)*s1 + (n2-1)*s2)/(n1+n2-2) \\tag{3}\n$$\n\nwhere" in \
        markdown_of(region(0, "text", maths))


def test_centred_lines_keep_their_breaks():
    address = (Lines(228).add(564, "Lars Thorväld", 713).add(548, "The Thorvald Group", 729)
               .add(576, "Hekla, Iceland", 702).add(551, "larst@affiliation.org", 728))
    assert markdown_of(region(0, "text", address)) == \
        "Lars Thorväld  \nThe Thorvald Group  \nHekla, Iceland  \nlarst@affiliation.org\n"


def test_blocks_round_trip_through_json_and_old_results_have_none():
    [structured] = with_structure([region(0, "text", bulleted_list())], WIDTH, HEIGHT, DPI)
    data = structured.to_dict()
    assert data["blocks"][1]["type"] == "list" and data["blocks"][1]["items"][3]["lines"] == [6, 7, 8]
    assert RegionResult.from_dict(data) == structured
    del data["blocks"]
    assert RegionResult.from_dict(data).blocks == ()


def test_regions_read_whole_and_failed_regions():
    formula = RegionResult(0, "equation", "formula", "body", (300, 100, 900, 160), (0, 0, 0, 0), "E = mc^2",
                           RegionStatus.OK)
    whole_title = RegionResult(1, "title", "text", "body", (186, 200, 700, 240), (0, 0, 0, 0), "2.3 Data frames",
                               RegionStatus.OK)
    failed = region(2, "text", Lines().full("Half a line that was read"), status=RegionStatus.FAILED)
    failed = RegionResult(**{**failed.__dict__, "reason": "engine said no"})
    blocks = blocks_of(formula, whole_title, failed)
    assert blocks[0] == [Block(BlockType.EQUATION, "E = mc^2", ())]
    assert blocks[1] == [Block(BlockType.HEADING, "2.3 Data frames", (), level=3)]
    markdown = markdown_of(formula, whole_title, failed)
    assert markdown == ("$$\nE = mc^2\n$$\n\n### 2.3 Data frames\n\n"
                        "<!-- region 3 (text) could not be read: engine said no -->\n\nHalf a line that was read\n")


def test_every_line_with_text_lands_in_exactly_one_block():
    """Nothing on a page is lost: on shuffled fragments of the pages above, each line is in one block."""
    rng = random.Random(17)
    sources = [bulleted_list().lines, r_session().lines]
    for _ in range(200):
        lines = [line for source in sources for line in source if rng.random() < 0.7]
        rng.shuffle(lines)
        regions = [region(i, rng.choice(["text", "title", "reference", "figure_caption"]), tuple(lines[i::3]))
                   for i in range(3) if lines[i::3]]
        for structured in with_structure(regions, WIDTH, HEIGHT, DPI):
            covered = sorted(i for block in structured.blocks for i in block.lines)
            assert covered == list(range(len(structured.lines))), structured.blocks


def test_a_title_case_row_over_running_text_is_a_heading_but_a_short_last_line_is_not():
    """A financial report's bold headings at body size: only their case and place show in line boxes."""
    notes = (Lines(300).add(186, "Note 2 - Business Combination", 520)
             .full("On March 3 the Company acquired all of the shares of Brightwater Holdings for cash and")
             .add(186, "stock, and the results are included from that date.", 700)
             .add(186, "Recently Issued Accounting Pronouncements", 620)
             .full("In June the board issued new guidance on the recognition of credit losses, which the")
             .add(186, "Company will adopt next year.", 520)
             .add(186, "Members of the Audit Committee", 520))
    blocks = blocks_of(region(0, "text", notes))[0]
    assert [(block.type.value, block.text.split(" ")[0]) for block in blocks] == [
        ("heading", "Note"), ("paragraph", "On"), ("heading", "Recently"), ("paragraph", "In")]
    assert blocks[-1].text.endswith("adopt next year. Members of the Audit Committee"), \
        "a Title Case row with no running text under it stays in its paragraph"


def test_spaces_in_a_listing_are_counted_net_of_the_line_boxes_padding():
    """The line detector pads each box by a few pixels on both sides, so the gap between a row's
    two boxes is shorter than the spaces printed there, and a 1-character box (`+`) is mostly
    padding. Three printed spaces must stay three, whatever the padding."""
    listing = Lines().full("Prose that introduces the listing below, written as a full sentence of words:")
    pad, x = 7.0, 186.0
    printed = ["> if (mean(x) > 15) {", '+   print("big")', "+ }", '[1] "big"', "> x <- c(10, 20, 30)"]
    for line in printed:
        parts, column = [], 0
        for part in re.split(r"( +)", line):
            if part.strip():
                parts.append((x + column * CODE_CHAR - pad, part, x + (column + len(part)) * CODE_CHAR + pad))
            column += len(part)
        y0 = listing.y
        for x0, part, x1 in parts:
            listing.lines.append(LineResult((x0, y0, x1, y0 + 26), part))
        listing.y += 28
    code = [block for block in blocks_of(region(0, "text", listing))[0] if block.type == "code"]
    assert code and code[0].text.split("\n")[:3] == ["> if (mean(x) > 15) {", '+   print("big")', "+ }"]
