"""Whether a PDF page's own text layer can stand in for recognition, and which
text each detected line then takes from it (`--text-layer auto`; `verify`
recognises every line anyway and sends the layer's text as the model's draft).

A born-digital page carries its exact text, and taking it costs no
recognition. The layer is used only when it passes three checks; the first
that fails is the verdict's reason, and the page is recognised like a scan:

- characters: over `MAX_UNMAPPED_SHARE` of its characters are U+FFFD,
  private-use or control characters. Catches fonts without a ToUnicode map,
  whose "text" is glyph numbers.
- painting: `MAX_UNSEEN_SHARE` or more of its characters are unseen:
  invisible (render mode 3 or 7, transparent), painted under a later image,
  painted over an image, or where the rendered page shows no ink. Catches an
  OCR layer over a scan, which need not say what the image shows, and hidden
  (white) text. A page drawn over a full-page picture (a slide's background)
  fails too and is recognised: slower, never wrong.
- coverage: the detected lines holding its trusted words are under
  `MIN_LINE_COVERAGE` of all detected lines' area. Catches text in pictures
  (a scanned figure) and a layer that is not the page.

Words are read with unmapped glyphs as U+FFFD (`Document.text_words`), since
glyph numbers read like letters. A word is trusted when it is visible, not
under an image, shows ink on the rendered page (the middle of its box is not
one flat colour: white text on white is not, nor words under a box drawn over
them, as in a redaction that hid the words but left them in the layer) and
has every character mapped.

Each word goes to exactly one detected line: the one whose box overlaps it
most (it must hold the word's centre or half its area). A line takes its text
from the layer when it holds words and every one is trusted — in rows top to
bottom (a detected line may span two printed ones), each left to right. A line
holding no word whose box is mostly covered by words other lines hold (the
detector boxed part of a word again) takes nothing: its ink is read already,
and recognising it would invent text. So does a line holding no word that lies
over no raster picture (under `MIN_PICTURE_SHARE` of its box): the layer
spells every glyph the page's fonts set, so such ink is drawn (a bullet, a
navigation symbol, an icon, the rare outlined lettering) and recognising it
invented `0000` from a slide's navigation dots; such lines count as read in
the coverage check unless they are over `MAX_DRAWN_SHARE` of the lines' area
(then the page's lettering is outlines, and it is recognised). Any other line (untrusted
words, or text in a picture) is recognised on its own, as is a region read
whole that holds no words or an untrusted one.

Nothing the layer shows is dropped on a page that passes. Trusted words in no
detected line (the detector merged two lines, or missed a page number) become
lines, in runs of neighbouring words of one layer line: a line of the region
around them, else of the region whose line shares their row, else of a new
text region (`source="text_layer"`) placed in reading order like any other.
Words in a region read whole (a formula, a region without lines) are that
region's text; words inside a figure with no detected lines are not read (a
figure's labels are read through its lines); words of dots alone (dot leaders)
and untrusted words outside every line are left out, as they show nothing to
read (a lone "+" or "}" of a code listing is kept).
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np

from vision.document import Box, Document, PaintedImage, PaintedText, RenderedPage, TextWord
from vision.layout import RecognitionTask, Region
from vision.line_assignment import group_lines
from vision.lines import TextLine
from vision.page_analysis import LayoutBlock, PageLayout
from vision.reading_order import PageRole, order_lines, order_regions
from vision.text_normal import is_unmapped

MAX_UNMAPPED_SHARE = 0.02   # of characters: a few symbol-font bullets pass, a font without ToUnicode does not
MAX_UNSEEN_SHARE = 0.5      # of characters unseen: "mostly" an OCR layer over a scan, or hidden text
_LEADER_CHARS = frozenset(".\u00b7\u2024\u2025\u2026")   # . · ․ ‥ …
MIN_LINE_COVERAGE = 0.9     # of detected lines' area holding trusted words; below, the layer is not the page
MIN_WORD_IN_LINE = 0.5      # share of a word's box inside a line's box that places it there (or its centre)
ROW_OVERLAP = 0.5           # vertical overlap, as a share of the shorter box, that puts two in one row
MIN_INK_RANGE = 40          # grey levels between the lightest and darkest pixel in the middle of a word's box
INK_CORE_WIDTH = 0.7        # share of a word's width (centred) looked at for ink
RUN_GAP_HEIGHTS = 2.0       # a gap wider than this many word heights splits a run of missed words
# of a wordless line's box covered by words other lines hold: a second box over ink already read
# (the detector boxed part of a word again), left empty instead of recognised into invented text
READ_ELSEWHERE_SHARE = 0.5
# of a wordless line's box inside raster pictures, below which its ink is the page's own drawing
# (rules, navigation symbols, bullets, icons): left empty instead of recognised into invented text
MIN_PICTURE_SHARE = 0.5
# of the detected lines' area: drawn lines beyond it are lettering set as outlines, not decoration
MAX_DRAWN_SHARE = 0.2


class TextLayerMode(StrEnum):
    AUTO = "auto"       # take the layer where it passes its checks, recognise the rest
    NEVER = "never"     # always recognise
    VERIFY = "verify"   # where it passes, recognise every line anyway, the layer's text sent as the draft


TEXT_LAYER_MODES = tuple(mode.value for mode in TextLayerMode)


@dataclass(frozen=True)
class TextLayerVerdict:
    usable: bool
    reason: str   # a short sentence: why the layer was used or not

    def describe(self, mode: str = TextLayerMode.AUTO) -> str:
        if self.usable and mode == TextLayerMode.VERIFY:
            return f"text layer verified (every line recognised, the layer's text as its draft): {self.reason}"
        return f"text layer {'used' if self.usable else 'not used'}: {self.reason}"


@dataclass(frozen=True)
class LayerWord:
    word: TextWord
    seen: str       # visible, invisible, under_image, over_image or no_ink
    mapped: bool    # every character mapped to Unicode

    @property
    def trusted(self) -> bool:
        return self.seen in ("visible", "over_image") and self.mapped


@dataclass(frozen=True)
class TextLayer:
    """A page's text layer with the checks that need no layout (characters, painting)."""
    words: tuple[LayerWord, ...]
    verdict: TextLayerVerdict
    pictures: tuple[Box, ...] = ()   # the raster images the page paints: the only ink a layer may not spell


@dataclass(frozen=True)
class BlockText:
    """What one layout block takes from the layer."""
    lines: tuple[str | None, ...]            # per line of the block: its text, or None: recognise the line
    words: tuple[TextWord, ...] | None       # read whole: the layer's words in it, or None: recognise it


@dataclass(frozen=True)
class LayerMatch:
    """The layer matched to a page's layout: `blocks` are the layout's, with lines and
    regions added for layer text the detectors missed (in reading order, re-numbered when
    regions were added); `texts` is one per block."""
    verdict: TextLayerVerdict
    blocks: tuple[LayoutBlock, ...]
    texts: tuple[BlockText, ...]


def read_text_layer(document: Document, page: RenderedPage) -> TextLayer:
    """The rendered page's words (boxes in its pixels) with the checks on characters and painting done."""
    try:
        words = document.text_words(page.page_index, page.dpi, unmapped_as_replacement=True)
        spans, images = document.paint_order(page.page_index, page.dpi) if words else ([], [])
    except (RuntimeError, ValueError) as exc:   # MuPDF errors on a damaged content stream
        return TextLayer((), TextLayerVerdict(False, f"it cannot be read ({str(exc)[:100]})"))
    num_chars = sum(len(_characters(w.text)) for w in words)
    if num_chars == 0:
        return TextLayer((), TextLayerVerdict(False, "the page has no text layer"))
    grey = np.asarray(page.image.convert("L"))
    layer = tuple(LayerWord(w, seen, not _unmapped(w.text))
                  for w, seen in zip(words, _painting(words, spans, images, grey)))
    unmapped = sum(_unmapped(w.text) for w in words)
    if unmapped > MAX_UNMAPPED_SHARE * num_chars:
        return TextLayer(layer, TextLayerVerdict(
            False, f"{unmapped / num_chars:.0%} of its characters are not mapped to Unicode "
                   "(fonts without a ToUnicode map)"))
    unseen = {kind: sum(len(_characters(w.word.text)) for w in layer if w.seen == kind)
              for kind in ("invisible", "under_image", "over_image", "no_ink")}
    if sum(unseen.values()) >= MAX_UNSEEN_SHARE * num_chars:
        what = {"invisible": "invisible (an OCR layer over a scanned image)",
                "under_image": "painted under an image that hides it",
                "over_image": "painted over images (perhaps an OCR layer over a scan)",
                "no_ink": "drawn where the page shows no ink (hidden text)"}[max(unseen, key=unseen.__getitem__)]
        return TextLayer(layer, TextLayerVerdict(
            False, f"{sum(unseen.values()) / num_chars:.0%} of its text is not seen as it reads, mostly {what}; "
                   "such text need not say what the page shows"))
    return TextLayer(layer, TextLayerVerdict(True, f"{sum(w.trusted for w in layer)} of its {len(words)} words "
                                                  "are mapped and visible"),
                     tuple(image.bbox for image in images))


@dataclass
class _Entry:
    """A block being matched: its lines' texts and the layer words it holds."""
    block: LayoutBlock
    line_texts: list[str | None]
    words: list[LayerWord] = field(default_factory=list)


def match_text_layer(layer: TextLayer, layout: PageLayout) -> LayerMatch:
    """Which text each block and line takes from the layer (the coverage check included).
    When the layer is not usable, nothing is taken: every line and block is recognised."""
    blocks = layout.blocks
    if not layer.verdict.usable:
        return _nothing_taken(layer.verdict, blocks)
    lines = [(b, i) for b, block in enumerate(blocks) for i in range(len(block.lines))]
    line_boxes = np.array([blocks[b].lines[i].bbox for b, i in lines], dtype=np.float64).reshape(-1, 4)
    region_boxes = np.array([block.region.bbox for block in blocks], dtype=np.float64).reshape(-1, 4)
    line_words: list[list[LayerWord]] = [[] for _ in lines]
    entries = [_Entry(block, [None] * len(block.lines)) for block in blocks]
    missed: list[LayerWord] = []
    for word in layer.words:
        best = _best_line(word.word.bbox, line_boxes)
        if best is not None:
            line_words[best].append(word)
            entries[lines[best][0]].words.append(word)
            continue
        home = _home_block(word.word.bbox, region_boxes)
        if home is not None and not blocks[home].lines:
            if blocks[home].task is not RecognitionTask.SKIP:   # a figure is not read
                entries[home].words.append(word)                 # a block read whole: its text
        elif word.trusted and not _is_leader(word.word.text):
            missed.append(word)

    trusted_boxes = np.array([w.word.bbox for w in layer.words if w.trusted], dtype=np.float64).reshape(-1, 4)
    # a line holding no word over words other lines hold: the detector boxed part of a word again
    elsewhere = [not words and _covered_share(box, trusted_boxes) >= READ_ELSEWHERE_SHARE
                 for box, words in zip(line_boxes, line_words)]
    # A line holding no word and lying over no picture is ink the page drew, not text it set:
    # the layer spells every glyph the page's fonts set, so what it does not spell is a rule, a
    # bullet, a navigation symbol or an icon (outlined lettering too, the rare loss).
    picture_boxes = np.array(layer.pictures, dtype=np.float64).reshape(-1, 4)
    drawn = [not words and not again and _covered_share(box, picture_boxes) < MIN_PICTURE_SHARE
             for box, words, again in zip(line_boxes, line_words, elsewhere)]
    area = float(sum(_area(box) for box in line_boxes))
    drawn_area = float(sum(_area(box) for box, is_drawn in zip(line_boxes, drawn) if is_drawn))
    if area > 0 and drawn_area > MAX_DRAWN_SHARE * area:
        # that much drawn "text" is lettering set as outlines (a stamped layer over it says
        # little of the page): those lines count against the layer and are recognised
        drawn = [False] * len(drawn)
    empty = list(map(operator.or_, elsewhere, drawn))   # lines with no text of their own
    covered = float(sum(_area(box) for box, words, no_text in zip(line_boxes, line_words, empty)
                        if _all_trusted(words) or no_text))
    coverage = covered / area if area > 0 else 1.0
    if coverage < MIN_LINE_COVERAGE:
        return _nothing_taken(TextLayerVerdict(
            False, f"only {coverage:.0%} of the detected text lines (by area) hold words of it "
                   "(text in pictures, or a layer that is not the page)"), blocks)
    for (b, i), words, no_text in zip(lines, line_words, empty):
        # a line over words another line holds, or over a drawing, takes nothing
        entries[b].line_texts[i] = "" if no_text else _line_text(words) if _all_trusted(words) else None
    read_elsewhere, num_drawn = sum(elsewhere), sum(drawn)

    runs = _runs(missed)
    entries, added_regions = _place_missed(entries, runs, line_boxes, lines, layout.height)
    texts = tuple(BlockText(tuple(e.line_texts), _whole_text(e)) for e in entries)
    num_added = sum(map(len, runs))
    notes = f"; {num_added} word{'s' * (num_added != 1)} no detected line held added as lines" if runs else ""
    notes += f" ({added_regions} in regions of their own)" if added_regions else ""
    num_trusted = sum(w.trusted for w in layer.words)
    to_read = sum(text is None for e in entries for text in e.line_texts)
    notes += f"; {to_read} line{'s' * (to_read != 1)} without trusted words recognised" if to_read else ""
    notes += (f"; {read_elsewhere} line{'s' * (read_elsewhere != 1)} inside words other lines hold left empty"
              if read_elsewhere else "")
    notes += (f"; {num_drawn} line{'s' * (num_drawn != 1)} over drawings, not text, left empty"
              if num_drawn else "")
    verdict = TextLayerVerdict(True, f"{num_trusted} of its {len(layer.words)} words are mapped and visible, and "
                                     f"fill {coverage:.0%} of the detected text lines (by area){notes}")
    return LayerMatch(verdict, tuple(e.block for e in entries), texts)


def _place_missed(entries: list[_Entry], runs: list[list[LayerWord]], line_boxes: np.ndarray,
                  lines: list[tuple[int, int]], page_height: int) -> tuple[list[_Entry], int]:
    """Each run of missed words as a line: of the lined region around it, else of the region
    whose line shares its row, else of a new region; new regions are put in reading order."""
    loose: list[tuple[TextLine, list[LayerWord]]] = []
    for run in sorted(runs, key=lambda r: _centre(_union([w.word.bbox for w in r]))[::-1]):
        box = _union([w.word.bbox for w in run])
        region_boxes = np.array([e.block.region.bbox for e in entries], dtype=np.float64).reshape(-1, 4)
        home = _home_block(box, region_boxes, lined=[bool(e.block.lines) for e in entries])
        if home is None:
            home = _row_mate(box, line_boxes, lines)
        if home is None:
            loose.append((_line(box), run))
            continue
        entry = entries[home]
        entry.block, position = _with_line(entry.block, box)
        entry.line_texts.insert(position, _line_text(run))
        entry.words.extend(run)
    if not loose:
        return entries, 0
    text_of = {id(line): run for line, run in loose}
    groups = group_lines([line for line, _ in loose])
    for group in groups:
        ordered = order_lines(group)
        region = Region("text", _union([line.bbox for line in ordered]), 0.0, source="text_layer")
        block = LayoutBlock(reading_index=len(entries), region=region, role=PageRole.BODY, lines=tuple(ordered))
        entries.append(_Entry(block, [_line_text(text_of[id(line)]) for line in ordered],
                              [w for line in ordered for w in text_of[id(line)]]))
    order = order_regions([e.block.region for e in entries], page_height)
    reordered = []
    for position, (i, role) in enumerate(order):
        entries[i].block = replace(entries[i].block, reading_index=position, role=role)
        reordered.append(entries[i])
    return reordered, len(groups)


def _nothing_taken(verdict: TextLayerVerdict, blocks: Sequence[LayoutBlock]) -> LayerMatch:
    return LayerMatch(verdict, tuple(blocks), tuple(BlockText((None,) * len(b.lines), None) for b in blocks))


def _painting(words: Sequence[TextWord], spans: Sequence[PaintedText], images: Sequence[PaintedImage],
              grey: np.ndarray) -> list[str]:
    """Per word, from the painted span that overlaps it most: invisible, under_image (a later
    image covers it), over_image, no_ink (the rendered page shows nothing there) or visible.
    A word no span overlaps is taken as invisible."""
    if not spans:
        return ["invisible"] * len(words)
    span_boxes = np.array([s.bbox for s in spans], dtype=np.float64)
    image_boxes = np.array([i.bbox for i in images], dtype=np.float64).reshape(-1, 4)
    image_seqnos = np.array([i.seqno for i in images], dtype=np.int64)
    result = []
    for word in words:
        overlaps = _intersections(word.bbox, span_boxes)
        best = int(np.argmax(overlaps))
        span = spans[best]
        x, y = _centre(word.bbox)
        under = _holding((x, y), image_boxes)
        if overlaps[best] <= 0 or span.invisible:
            result.append("invisible")
        elif np.any(under & (image_seqnos > span.seqno)):
            result.append("under_image")
        elif np.any(under):
            result.append("over_image")
        elif any(ch.isalnum() for ch in word.text) and not _inked(word.bbox, grey):   # "." sits below the middle
            result.append("no_ink")
        else:
            result.append("visible")
    return result


def _inked(box: Box, grey: np.ndarray) -> bool:
    """Whether the middle of the word's box (half its height, `INK_CORE_WIDTH` of its width: a
    box drawn over the word may leave its edges out) is not one flat colour on the page."""
    x0, y0, x1, y1 = box
    top, bottom = y0 + (y1 - y0) / 4, y1 - (y1 - y0) / 4
    margin = (x1 - x0) * (1 - INK_CORE_WIDTH) / 2
    rows = slice(max(0, int(top)), min(grey.shape[0], int(np.ceil(bottom))))
    cols = slice(max(0, int(x0 + margin)), min(grey.shape[1], int(np.ceil(x1 - margin))))
    patch = grey[rows, cols]
    return patch.size > 0 and int(patch.max()) - int(patch.min()) >= MIN_INK_RANGE


def _characters(text: str) -> str:
    return "".join(ch for ch in text if not ch.isspace())


def _unmapped(text: str) -> int:
    """Characters that stand for no real one (`text_normal.is_unmapped`)."""
    return sum(is_unmapped(ch) for ch in _characters(text))


def _is_leader(text: str) -> bool:
    """Dots alone (a dot leader's pieces): nothing to read. Any other symbol is kept: a code
    listing's lone "+" or "}", a stem-and-leaf display's "|"."""
    return all(char in _LEADER_CHARS or char.isspace() for char in text)


def _whole_text(entry: _Entry) -> tuple[TextWord, ...] | None:
    """What a block read whole takes from a usable layer: its words when all are trusted; nothing
    at all (an empty tuple) when it holds neither a word of the layer nor a detected line, since
    whatever a recogniser made of such an area (a rule, a logo, a shaded box) would be invented
    text; None (recognise it) otherwise."""
    if not entry.words and not entry.block.lines and entry.block.task is not RecognitionTask.SKIP:
        return ()
    if _all_trusted(entry.words) and all(t is not None for t in entry.line_texts):
        return tuple(w.word for w in entry.words)
    return None


def _covered_share(box: Box, word_boxes: np.ndarray) -> float:
    """How much of `box` the word boxes cover (their overlaps with it summed: words do not overlap)."""
    area = _area(box)
    if area <= 0 or not len(word_boxes):
        return 0.0
    return min(1.0, float(_intersections(box, word_boxes).sum()) / area)


def _all_trusted(words: Sequence[LayerWord]) -> bool:
    return bool(words) and all(w.trusted for w in words)


def _best_line(box: Box, line_boxes: np.ndarray) -> int | None:
    """The line overlapping the word most, if it holds the word's centre or half its area."""
    if not len(line_boxes):
        return None
    overlaps = _intersections(box, line_boxes)
    best = int(np.argmax(overlaps))
    x, y = _centre(box)
    lx0, ly0, lx1, ly1 = line_boxes[best]
    holds_centre = lx0 <= x <= lx1 and ly0 <= y <= ly1
    if overlaps[best] > 0 and (overlaps[best] >= MIN_WORD_IN_LINE * _area(box) or holds_centre):
        return best
    return None


def _home_block(box: Box, region_boxes: np.ndarray, lined: Sequence[bool] | None = None) -> int | None:
    """The smallest region holding the box's centre (only regions with lines, when `lined` is given)."""
    x, y = _centre(box)
    inside = _holding((x, y), region_boxes)
    if lined is not None:
        inside &= np.array(lined, dtype=bool)
    candidates = np.flatnonzero(inside)
    if not len(candidates):
        return None
    boxes = region_boxes[candidates]
    return int(candidates[int(np.argmin((boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])))])


def _row_mate(box: Box, line_boxes: np.ndarray, lines: list[tuple[int, int]]) -> int | None:
    """The block of the horizontally nearest detected line that shares the box's row."""
    if not len(line_boxes):
        return None
    overlap = np.minimum(line_boxes[:, 3], box[3]) - np.maximum(line_boxes[:, 1], box[1])
    shorter = np.minimum(line_boxes[:, 3] - line_boxes[:, 1], box[3] - box[1])
    same_row = np.flatnonzero(overlap >= ROW_OVERLAP * shorter)
    if not len(same_row):
        return None
    gaps = np.maximum(line_boxes[same_row, 0] - box[2], box[0] - line_boxes[same_row, 2])
    return lines[int(same_row[int(np.argmin(gaps))])][0]


def _runs(words: Sequence[LayerWord]) -> list[list[LayerWord]]:
    """Missed words in runs: consecutive words of one layer line with no wide gap between them."""
    by_line: dict[tuple[int, int], list[LayerWord]] = {}
    for word in words:
        by_line.setdefault((word.word.block_no, word.word.line_no), []).append(word)
    runs = []
    for group in by_line.values():
        group.sort(key=lambda w: w.word.word_no)
        run = [group[0]]
        for previous, word in zip(group, group[1:]):
            height = max(word.word.bbox[3] - word.word.bbox[1], 1.0)
            gap = word.word.bbox[0] - previous.word.bbox[2]
            if word.word.word_no != previous.word.word_no + 1 or gap > RUN_GAP_HEIGHTS * height:
                runs.append(run)
                run = []
            run.append(word)
        runs.append(run)
    return runs


def _line_text(words: Sequence[LayerWord]) -> str:
    """Words in rows top to bottom (a detected line may hold two printed ones), each left to right."""
    rows: list[list[TextWord]] = []
    row_span = (0.0, 0.0)
    for word in sorted((w.word for w in words), key=lambda w: (_centre(w.bbox)[1], w.bbox[0])):
        top, bottom = word.bbox[1], word.bbox[3]
        if rows and _overlap(row_span[0], row_span[1], top, bottom) >= ROW_OVERLAP * min(
                row_span[1] - row_span[0], bottom - top):
            rows[-1].append(word)
            row_span = (min(row_span[0], top), max(row_span[1], bottom))
        else:
            rows.append([word])
            row_span = (top, bottom)
    return " ".join(w.text for row in rows for w in sorted(row, key=lambda w: w.bbox[0]))


def _line(box: Box) -> TextLine:
    return TextLine(tuple(int(round(v)) for v in box), 0.0)  # type: ignore[arg-type]


def _with_line(block: LayoutBlock, box: Box) -> tuple[LayoutBlock, int]:
    """The block with a line added for `box`, and the line's position in the block's reading
    order: beside the lines of its row (the detector cut the printed line short), else after
    the nearest line above it in its column, else before the nearest below, else last."""
    line = _line(box)
    lines = list(block.lines)
    x, y = _centre(box)
    row = [i for i, other in enumerate(lines)
           if _overlap(other.bbox[1], other.bbox[3], box[1], box[3]) >= ROW_OVERLAP * min(
               other.bbox[3] - other.bbox[1], box[3] - box[1])]
    column = [i for i, other in enumerate(lines) if _overlap(other.bbox[0], other.bbox[2], box[0], box[2]) > 0]
    above = [i for i in column if _centre(lines[i].bbox)[1] < y]
    below = [i for i in column if _centre(lines[i].bbox)[1] >= y]
    if row:
        left = [i for i in row if _centre(lines[i].bbox)[0] < x]
        position = max(left) + 1 if left else min(row)
    elif above:
        position = max(above, key=lambda i: _centre(lines[i].bbox)[1]) + 1
    elif below:
        position = min(below, key=lambda i: _centre(lines[i].bbox)[1])
    else:
        position = len(lines)
    lines.insert(position, line)
    region = block.region
    if region.task is not RecognitionTask.TABLE:   # a text region holds its lines whole, as line assignment grows it
        region = replace(region, bbox=_union([region.bbox, line.bbox]))
    return replace(block, region=region, lines=tuple(lines)), position


def _holding(point: tuple[float, float], boxes: np.ndarray) -> np.ndarray:
    """Which boxes hold the point."""
    x, y = point
    return (boxes[:, 0] <= x) & (x <= boxes[:, 2]) & (boxes[:, 1] <= y) & (y <= boxes[:, 3])


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return min(a1, b1) - max(a0, b0)


def _intersections(box: Sequence[float], boxes: np.ndarray) -> np.ndarray:
    width = np.minimum(boxes[:, 2], box[2]) - np.maximum(boxes[:, 0], box[0])
    height = np.minimum(boxes[:, 3], box[3]) - np.maximum(boxes[:, 1], box[1])
    return np.clip(width, 0, None) * np.clip(height, 0, None)


def _area(box: Sequence[float]) -> float:
    return max(0.0, float(box[2]) - float(box[0])) * max(0.0, float(box[3]) - float(box[1]))


def _centre(box: Sequence[float]) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def _union(boxes: Sequence[Sequence[float]]) -> Box:
    return (float(min(b[0] for b in boxes)), float(min(b[1] for b in boxes)),
            float(max(b[2] for b in boxes)), float(max(b[3] for b in boxes)))
