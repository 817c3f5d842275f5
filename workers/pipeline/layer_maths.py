"""Stage: displayed formulas of a born-digital PDF as LaTeX, from the layer's glyphs and rules.

Runs where the page's text layer is taken as its text (`--text-layer auto` on a page whose layer
is usable), after the structure stage. Formulas get LaTeX built from where the PDF's glyphs and
rules sit (`vision.layer_math`) in place of the layer's flat characters:

| what                                            | becomes                                           |
|-------------------------------------------------|---------------------------------------------------|
| body regions of maths glyphs (three words of text at most) that touch and together make a display: the layout cut one display apart | one formula region, then as below |
| a table or figure region of sentences and displays, every row one or the other (`_prose_and_displays`) | a text region, then as below |
| lines of a text region that together make a display, wherever the structure stage put them (`_gathered_displays`: a numerator on the row of the sentence before, a cases row's "otherwise" in the next paragraph) | one equation block per display row, where its first line stood |
| a formula region                                | one equation block per row; a row of prose the box took in stays a paragraph |
| an equation the structure stage found in a region's rows | the same block, its text LaTeX          |
| a row of a paragraph or code block that is a display (`is_display_items`: maths letters and an operator, at most three upright words; or maths with a few words set three ems in) | an equation block of its own, the block split around it, with the rows that are its pieces (a sum's limits, a matrix's rows under its brackets, a fraction's parts across its bar) |
| an equation number the layout boxed apart ("(3)" right of its formula) | the formula's `\\tag`      |
| maths inside a paragraph's lines (`inline_markdown`: maths-font glyphs, lone italic letters, scripts, operators beside them) | `$...$` in the paragraph's Markdown |

Scanned pages and `--text-layer never` keep what the recogniser read: no formula model here
writes LaTeX from pixels.
"""
from __future__ import annotations

import re
from dataclasses import replace

from vision.crops import normalise_box
from vision.layer_math import SCRIPT_SIZE, FormulaRow, PageMaths
from workers.page_result import RegionResult
from workers.pipeline.page import PageWork
from workers.structure_blocks import Block, BlockType
from workers.structure_rows import join_lines, region_rows
from workers.table_text import band_rows

_NUMBER = re.compile(r"^\((\d{1,3}(?:\.\d{1,3})*[a-z]?)\)$")


class LayerMaths:
    name = "layer_maths"
    timing = "assembly"

    def run(self, page: PageWork) -> None:
        if not (page.policy.takes_text and page.match is not None and page.match.verdict.usable):
            return
        maths = page.document.page_maths(page.page_index, page.rendered.dpi)
        if maths is None or not maths.items:
            return
        width, height = page.size
        regions = _joined_fragments(list(page.regions), maths, width, height)
        for k, region in enumerate(regions):
            if region.role != "body":
                continue
            if region.task == "formula":
                rows = maths.formula_rows(region.bbox)
                if rows:
                    regions[k] = _formula_region(region, rows, _number_beside(region, regions))
            elif region.task in ("table", "skip") and _prose_and_displays(region, maths):
                region = _as_text(region)
                region = replace(region, blocks=_gathered_displays(region, maths))
                blocks = tuple(_with_inline_maths(out, region, maths)
                               for block in region.blocks for out in _with_displays(block, region, maths))
                regions[k] = replace(region, blocks=blocks)
            elif region.task == "text" and region.blocks:
                gathered = replace(region, blocks=_gathered_displays(region, maths))
                blocks = tuple(_with_inline_maths(out, gathered, maths) for out in _split_at_displays(gathered, maths))
                if blocks != region.blocks:
                    regions[k] = replace(region, blocks=blocks)
        page.regions = [_without_taken_numbers(region, regions) for region in regions]


def _prose_and_displays(region: RegionResult, maths: PageMaths) -> bool:
    """Whether a region the layout took for a table or a figure is sentences and displayed formulas:
    a page of short lines each followed by a centred display lines up like columns. Two displays and two
    rows of prose at least, every other row a piece of a display or three words at most (a cases
    row's "otherwise"), no table rule."""
    if not region.lines or maths.has_wide_rule(region.bbox):
        return False
    boxes = [_union(row.boxes) for row in region_rows(_top_down(region.lines))]
    display = [_is_display(box, region.bbox, maths) for box in boxes]
    prose = [not shown and maths.is_prose_row(box) for box, shown in zip(boxes, display)]
    return sum(display) >= 2 and sum(prose) >= 2 and all(
        d or p or maths.words_of_text(box) <= 3 for box, d, p in zip(boxes, display, prose))   # a cases row's "otherwise"


def _top_down(lines) -> tuple:
    """Lines in rows (`table_text.band_rows`) top to bottom, each left to right."""
    return tuple(line for row in band_rows(lines) for line in row)


def _as_text(region: RegionResult) -> RegionResult:
    """The region as text: its lines top to bottom, one paragraph for the display stages to split."""
    lines = _top_down(region.lines)
    rows = region_rows(lines)
    text = join_lines([row.text for row in rows])
    return replace(region, label="text", task="text", lines=lines, text="\n".join(row.text for row in rows),
                   figure=None,
                   blocks=(Block(BlockType.PARAGRAPH, text, tuple(range(len(lines)))),))


def _joined_fragments(regions: list[RegionResult], maths: PageMaths, width: int, height: int) -> list[RegionResult]:
    """One formula region for each display the layout cut into pieces (a matrix's name, its
    bracketed rows and a column apart, each a region of its own): touching body regions of maths
    glyphs with three words of text at most (`is_formula_fragment_row`), which together make a display."""
    pieces = [k for k, region in enumerate(regions) if region.role == "body" and region.task in ("text", "formula")
              and region.lines and maths.is_formula_fragment_row(region.bbox)]
    groups: list[list[int]] = []
    for k in pieces:
        touching = [group for group in groups if any(_touch(regions[k], regions[j]) for j in group)]
        merged = [k] + [j for group in touching for j in group]
        groups = [group for group in groups if group not in touching] + [sorted(merged)]
    joined: dict[int, RegionResult] = {}
    for group in groups:
        box = _union([regions[k].bbox for k in group])
        if len(group) < 2 or not maths.is_display_fragments(box):
            continue
        first = regions[group[0]]
        lines = tuple(sorted((line for k in group for line in regions[k].lines), key=lambda line: line.bbox[1]))
        joined[group[0]] = replace(first, label="formula", task="formula", bbox=box,
                                   bbox_1000=normalise_box(box, width, height), lines=lines,
                                   text="\n".join(regions[k].text for k in group), blocks=())
        joined.update({k: None for k in group[1:]})
    if not joined:
        return regions
    kept = [joined.get(k, region) for k, region in enumerate(regions)]
    return [replace(region, reading_index=index) for index, region in enumerate(r for r in kept if r is not None)]


def _touch(a: RegionResult, b: RegionResult) -> bool:
    """Boxes that overlap or lie within half a line's height of each other."""
    height = min([line.bbox[3] - line.bbox[1] for line in a.lines + b.lines] or [0.0])
    gap_x = max(a.bbox[0] - b.bbox[2], b.bbox[0] - a.bbox[2])
    gap_y = max(a.bbox[1] - b.bbox[3], b.bbox[1] - a.bbox[3])
    return gap_x <= 0.5 * height and gap_y <= 0.5 * height


def _union(boxes) -> tuple[float, float, float, float]:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _formula_region(region: RegionResult, rows: list[FormulaRow], number: str | None) -> RegionResult:
    """The region's blocks one per row: equations, and any prose the box took in. Each keeps the
    region's lines that lie in its row, so text output and the JSON's `text` stay the layer's own
    characters; Markdown writes the blocks."""
    blocks = []
    maths = [row for row in rows if row.latex is not None]
    owner = [min(range(len(rows)), key=lambda k: _distance((line.bbox[1] + line.bbox[3]) / 2, rows[k]))
             for line in region.lines]
    for k, row in enumerate(rows):
        lines = tuple(i for i, o in enumerate(owner) if o == k)
        if row.latex is None:
            blocks.append(Block(BlockType.PARAGRAPH, row.text, lines))
        else:
            blocks.append(Block(BlockType.EQUATION, row.latex, lines,
                                number=row.tag or (number if row is maths[-1] else None)))
    return replace(region, blocks=tuple(blocks), source="text_layer")


def _distance(y: float, row: FormulaRow) -> float:
    return 0.0 if row.top <= y <= row.bottom else min(abs(y - row.top), abs(y - row.bottom))


def _with_displays(block: Block, region: RegionResult, maths: PageMaths) -> list[Block]:
    """The block, or the pieces it splits into around the displayed formulas among its rows."""
    if block.type is BlockType.EQUATION:
        rows = _rows_latex(_box(region, block.lines), maths)
        if rows is None or len(rows) != 1:
            return [block]
        return [replace(block, text=rows[0].latex, number=block.number or rows[0].tag)]
    # a heading too: a display set large (a calligraphic capital) can look like one to the structure stage
    if block.type not in (BlockType.PARAGRAPH, BlockType.CODE, BlockType.HEADING) or not block.lines:
        return [block]
    ids = [i for i in block.lines if i < len(region.lines)]
    rows = region_rows([region.lines[i] for i in ids])
    row_ids = [[ids[j] for j in row.line_ids] for row in rows]
    # a code block's text has its rows as printed, with their indentation: the pieces keep them
    printed = block.text.split("\n")
    row_texts = (printed if block.type is BlockType.CODE and len(printed) == len(rows)
                 else [row.text for row in rows])
    boxes = [_box(region, these) for these in row_ids]
    owner = _display_owners([_is_display(box, region.bbox, maths) for box in boxes], boxes, maths)
    pieces: list[tuple[bool, list[int]]] = []     # (display, indices into rows)
    for r in range(len(rows)):
        display = owner[r] is not None
        if pieces and ((not display and not pieces[-1][0])
                       or (display and pieces[-1][0] and owner[pieces[-1][1][-1]] == owner[r])):
            pieces[-1][1].append(r)
        else:
            pieces.append((display, [r]))
    if not any(display for display, _ in pieces):
        return [block]
    out: list[Block] = []
    for display, piece in pieces:
        lines = tuple(i for r in piece for i in row_ids[r])
        latex = _rows_latex(_box(region, lines), maths) if display else None
        if latex is not None and len(latex) == 1:
            out.append(Block(BlockType.EQUATION, latex[0].latex, lines, number=latex[0].tag))
            continue
        texts = [row_texts[r] for r in piece]
        text = "\n".join(texts) if block.type is BlockType.CODE else join_lines(texts)
        if out and out[-1].type is block.type:   # a display that gave no single formula: back into its block
            previous = out.pop()
            text = (f"{previous.text}\n{text}" if block.type is BlockType.CODE
                    else join_lines([previous.text, text]))
            lines = previous.lines + lines
        out.append(replace(block, text=text, lines=lines))
    return out


def _is_display(box, block_box, maths: PageMaths) -> bool:
    """A display row (`is_display_row`); or a row of maths with a few words ("H = p - e  for all
    e in D"), which fails that rule's share of maths letters, set apart from the block's edge."""
    return maths.is_display_row(box) or (maths.words_of_text(box) > 0 and _set_apart(box, block_box, maths)
                                         and maths.is_display_fragments(box))


def _set_apart(box, block_box, maths: PageMaths) -> bool:
    """Whether a row stands on its own, three ems or more in from its block's left edge: a display
    (centred or indented), where a paragraph's lines start at the edge or a first-line indent."""
    size = maths.main_size(box)
    if size is None:
        return False
    return box[0] - block_box[0] >= 3 * size * maths.scale    # the glyphs' size in points, in the caller's units


def _display_owners(display: list[bool], boxes: list, maths: PageMaths) -> list[int | None]:
    """Per row, the display row it belongs to (itself for a display), or None: prose. A row of
    maths glyphs alone (`is_formula_part_row`: a sum's limits, a matrix's other row) next to a
    display, within its width and less than a row's height from it, is a piece of that display."""
    owner: list[int | None] = [r if shown else None for r, shown in enumerate(display)]
    left, right = min([box[0] for box in boxes] or [0.0]), max([box[2] for box in boxes] or [0.0])
    for d in [r for r, shown in enumerate(display) if shown]:
        if owner[d] != d:
            continue
        # across the block's width: a matrix's brackets stand right of "N =", in rows of their own
        top, bottom = maths.display_extent((left, boxes[d][1], right, boxes[d][3]))
        for r, box in enumerate(boxes):    # rows within the reach of its brackets or integral sign
            if r != d and owner[r] in (None, r) and top <= (box[1] + box[3]) / 2 <= bottom \
                    and maths.is_formula_part_row(box):
                owner[r] = d
    sizes = [maths.main_size(box) for box in boxes]
    for step in (1, -1):      # rows below a display, then rows above one
        order = range(len(boxes)) if step == 1 else range(len(boxes) - 1, -1, -1)
        for r in order:
            near = r - step
            if not 0 <= near < len(boxes) or owner[near] is None or owner[r] == owner[near]:
                continue
            # a display row set in script size (a sum's limits "k=1") is a piece of the display beside it
            small = sizes[r] is not None and sizes[near] is not None and sizes[r] < SCRIPT_SIZE * sizes[near]
            box, other = boxes[r], boxes[near]
            gap = max(box[1] - other[3], other[1] - box[3])
            centre = (box[0] + box[2]) / 2
            limits = (owner[r] is None or small) and gap < min(box[3] - box[1], other[3] - other[1]) \
                and other[0] <= centre <= other[2] and maths.is_formula_part_row(box)
            # a fraction's numerator and denominator, boxed as rows of their own
            whole = _union([boxes[j] for j in range(len(boxes)) if owner[j] == owner[near]])
            fraction = (owner[r] is not None or maths.is_formula_fragment_row(box)) and \
                maths.rule_between(*((whole, box) if step == 1 else (box, whole)))
            if limits or fraction:     # the row, and any rows it owned, join the display
                moved, into = owner[r], owner[near]
                owner = [into if j == r or (moved is not None and o == moved) else o for j, o in enumerate(owner)]
    return owner


def _split_at_displays(region: RegionResult, maths: PageMaths) -> list[Block]:
    """The region's blocks, each split around its displays (`_with_displays`). A run of
    neighbouring blocks that are all maths (equations, and paragraphs or code of formula pieces:
    no more than three words of text a row) is split as one block, so the display rules see a
    display the structure stage cut apart (a fraction's numerator an equation, its "=" a code
    block, its denominator another equation); that is kept only where it gives fewer pieces, all
    of them displays."""
    def is_maths(block: Block) -> bool:
        if block.type is BlockType.EQUATION:
            return True
        if block.type not in (BlockType.PARAGRAPH, BlockType.CODE) or not block.lines:
            return False
        rows = region_rows([region.lines[i] for i in block.lines if i < len(region.lines)])
        return bool(rows) and all(maths.is_formula_fragment_row(_union(row.boxes)) for row in rows)

    out: list[Block] = []
    run: list[Block] = []
    for block in [*region.blocks, None]:
        if block is not None and is_maths(block):
            run.append(block)
            continue
        if len(run) > 1:
            joined = Block(BlockType.PARAGRAPH, join_lines([b.text for b in run]),
                           tuple(i for b in run for i in b.lines))
            pieces = _with_displays(joined, region, maths)
            if all(piece.type is BlockType.EQUATION for piece in pieces) and len(pieces) < len(run):
                out.extend(pieces)
                run = []
        out.extend(piece for b in run for piece in _with_displays(b, region, maths))
        run = []
        if block is not None:
            out.extend(_with_displays(block, region, maths))
    return out


def _gathered_displays(region: RegionResult, maths: PageMaths) -> tuple[Block, ...]:
    """The region's blocks with each display that detection cut into lines and the structure
    stage scattered over blocks gathered into one equation block where its first line stood.

    A display's pieces (a fraction's numerator beside the line before it, its bar's other side in
    a code block, a cases row's "otherwise" in the next paragraph) are found by where they lie, not
    by the blocks or the line order they were put in: lines of maths glyphs with three words of
    text at most (`is_formula_fragment_row`) that touch (`_close`) make a group, joined by the
    lines of a few words within the reach of its tall glyphs (a cases brace). Where together
    its glyphs make a display, each of its rows (`formula_rows`: one, or an align's several)
    that is not one equation block already becomes one, of the lines that lie in it. A group
    with words of text level with it just beside it is maths inside a sentence, left as it was,
    as is one whose pieces make no display."""
    lines = region.lines
    pieces = [k for k, line in enumerate(lines) if line.text.strip() and maths.is_formula_fragment_row(line.bbox)]
    groups: list[list[int]] = []
    for k in pieces:
        near = [group for group in groups if any(_close(lines[k].bbox, lines[j].bbox) for j in group)]
        groups = [group for group in groups if group not in near] + [[k] + [j for group in near for j in group]]
    equation_of = {frozenset(block.lines) for block in region.blocks if block.type is BlockType.EQUATION}
    gathered: list[tuple[list[int], FormulaRow]] = []
    for group in groups:
        if len(group) < 2:
            continue
        box = _union([lines[k].bbox for k in group])
        height = min(lines[k].bbox[3] - lines[k].bbox[1] for k in group)
        top, bottom = maths.display_extent(box)   # as far as its tall glyphs reach (a cases brace)
        group = sorted(group + [   # a brace's own line, "if" and "otherwise" of cases, in its height
            k for k, line in enumerate(lines) if k not in group and line.text.strip()
            and top <= (line.bbox[1] + line.bbox[3]) / 2 <= bottom and box[0] - height <= line.bbox[0] <= box[2] + 2 * height
            and maths.words_of_text(line.bbox) <= 3 and not maths.is_prose_row(line.bbox)])
        box = _union([lines[k].bbox for k in group])
        if not maths.is_display_fragments(box) or any(
                k not in group and _inline_beside(line.bbox, box, height) and maths.words_of_text(line.bbox) > 0
                for k, line in enumerate(lines)):
            continue   # with words of text on its row just beside it, it is maths inside a sentence
        rows = _rows_latex(box, maths) or []
        # each of its rows a display (an align's rows): a line to the row it lies in
        row_of = [min(range(len(rows)), key=lambda r: _distance((lines[k].bbox[1] + lines[k].bbox[3]) / 2, rows[r]))
                  for k in group] if rows else []
        for r, row in enumerate(rows):
            these = [k for k, o in zip(group, row_of) if o == r]
            if these and frozenset(these) not in equation_of:
                gathered.append((these, row))
    if not gathered:
        return region.blocks
    display_of = {k: d for d, (group, _) in enumerate(gathered) for k in group}
    out: list[Block] = []
    placed: set[int] = set()
    for block in region.blocks:
        run: list[int] = []
        for i in block.lines:
            d = display_of.get(i)
            if d is None:
                run.append(i)
                continue
            if d in placed:
                continue
            if run:
                out.append(_remade(block, run, region, maths))
                run = []
            placed.add(d)
            group, row = gathered[d]
            out.append(Block(BlockType.EQUATION, row.latex, tuple(group), number=row.tag))
        if run:
            out.append(block if len(run) == len(block.lines) else _remade(block, run, region, maths))
    return tuple(out)


def _inline_beside(line, box, height: float) -> bool:
    """A line level with `box` (half the shorter height or more in common) and less than two line
    heights from it across."""
    common = min(line[3], box[3]) - max(line[1], box[1])
    return common >= 0.5 * min(line[3] - line[1], box[3] - box[1]) and \
        max(line[0] - box[2], box[0] - line[2]) < 2 * height


def _close(a, b) -> bool:
    """Two line boxes of one display: overlapping, or apart by under one and a half line heights
    across (a script, a bracket or a relation boxed apart) and three quarters of one down (across
    a fraction's bar)."""
    height = min(a[3] - a[1], b[3] - b[1])
    return max(a[0] - b[2], b[0] - a[2]) <= 1.5 * height and max(a[1] - b[3], b[1] - a[3]) <= 0.75 * height


def _remade(block: Block, ids: list[int], region: RegionResult, maths: PageMaths) -> Block:
    """What is left of a block when a display took some of its lines: its other lines' text."""
    rows = region_rows([region.lines[i] for i in ids])
    if block.type is BlockType.EQUATION:
        latex = _rows_latex(_box(region, ids), maths)
        if latex is not None and len(latex) == 1:
            return replace(block, text=latex[0].latex, lines=tuple(ids))
        return Block(BlockType.PARAGRAPH, join_lines([row.text for row in rows]), tuple(ids))
    text = "\n".join(row.text for row in rows) if block.type is BlockType.CODE else join_lines([row.text for row in rows])
    return replace(block, text=text, lines=tuple(ids))


def _with_inline_maths(block: Block, region: RegionResult, maths: PageMaths) -> Block:
    """A paragraph whose lines hold maths, its Markdown text with each run of it as `$...$`."""
    if block.type is not BlockType.PARAGRAPH or not block.lines:
        return block
    ids = [i for i in block.lines if i < len(region.lines)]
    rows = region_rows([region.lines[i] for i in ids])
    texts, found = [], False
    for row in rows:
        inline = maths.inline_text(_box(region, [ids[j] for j in row.line_ids]))
        found = found or inline is not None
        text = inline if inline is not None else row.text
        if texts and _ends_in_maths(texts[-1]) and text.startswith("$") and not text.startswith("$$"):
            # one formula the line detector boxed in two rows ("n =" and a root whose index rises
            # above it): one run of maths, not "$n=$ $\sqrt[3]{x}$"
            texts[-1] = f"{texts[-1][:-1]} {text[1:]}"
            continue
        texts.append(text)
    return replace(block, text=join_lines(texts)) if found else block


def _ends_in_maths(text: str) -> bool:
    """Whether Markdown ends with the closing `$` of inline maths (not an escaped dollar sign)."""
    return text.endswith("$") and not text.endswith("\\$") and not text.endswith("$$") and text.count("$") % 2 == 0


def _rows_latex(bbox, maths: PageMaths) -> list[FormulaRow] | None:
    """The formula rows under `bbox` (prose rows left out); None where there are none."""
    rows = [row for row in maths.formula_rows(bbox) or () if row.latex is not None]
    return rows or None


def _box(region: RegionResult, ids) -> tuple[float, float, float, float]:
    boxes = [region.lines[i].bbox for i in ids if i < len(region.lines)] or [region.bbox]
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _number_beside(formula: RegionResult, regions: list[RegionResult]) -> str | None:
    """The equation number the layout boxed apart: a region holding only "(n)", level with the
    formula and to its right."""
    for region in regions:
        match = _NUMBER.match(region.text.strip())
        if match and _beside(formula, region):
            return match.group(1)
    return None


def _beside(formula: RegionResult, number: RegionResult) -> bool:
    top, bottom = max(formula.bbox[1], number.bbox[1]), min(formula.bbox[3], number.bbox[3])
    return bottom - top > 0.3 * (number.bbox[3] - number.bbox[1]) and number.bbox[0] >= formula.bbox[2] - 2


def _without_taken_numbers(region: RegionResult, regions: list[RegionResult]) -> RegionResult:
    """A number region that became a formula's `\\tag`: its text and lines stay (text output,
    JSON, hOCR); its one block is empty, so the Markdown, whose formula carries the number, does
    not print it twice."""
    if not _NUMBER.match(region.text.strip()):
        return region
    number = _NUMBER.match(region.text.strip()).group(1)
    taken = any(other.task == "formula" and _beside(other, region)
                and any(block.number == number for block in other.blocks) for other in regions)
    if not taken:
        return region
    return replace(region, blocks=(Block(BlockType.PARAGRAPH, "", tuple(range(len(region.lines)))),))
