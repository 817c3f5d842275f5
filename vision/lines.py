"""Text lines from the PP-OCRv4 detector shipped in rapidocr-onnxruntime (its
detection model only), as axis-aligned boxes in page pixels.

The detector is a DB (differentiable binarisation) network: it predicts, per
pixel, the probability of lying in the shrunken core of a text line. Lines are
the connected blobs of that map above `pixel_threshold`; each blob's minimum-area
rectangle is kept if the mean probability inside it reaches `box_threshold`,
then grown back by the shrink applied in training — offset d = area * ratio /
perimeter on every side — and its axis-aligned bounds become the line box.

A line keeps the angle of its rectangle (scanned pages are rarely straight):
at 0.8 degrees a full-width line at 150 DPI drifts by 13 pixels, most of a line
pitch, so its axis-aligned box also holds slices of its neighbours. Crops are
cut upright along that angle (`vision.crops.crop_line`) and rows are grouped
by the line's own band, not its box.

A line that rises and falls across the page (a page folded, curled, or bent on
the glass: augraphy's folds make such copies) is still one blob of the map, but
its rectangle is two or three lines tall. Such a blob keeps its middle line
(`Curve`, `_curved_middle`) and is cut out along it, column by column, so the
recogniser gets the one line straightened.

The detector passes over a glyph standing alone: a contents page's single-digit page numbers
at the end of their dot leaders, a roman folio, a list's bullet (seen: 11 of a contents page's
page numbers missed, where Tesseract read them all). So ink the lines do not cover is looked at
once more (`lone_glyphs`): blobs of a glyph's height and shape, apart from every line, clustered
along their row, join the line they stand beside or become lines of their own. A page where
that finds more than a quarter as many as the detector did (a noisy scan's specks, shadows, a
textured background) gets none.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import cv2
import numpy as np

from vision.curve import Curve
from vision.onnx_models import DEFAULT_NUM_THREADS, LINE_DETECTOR_PPOCRV4, get_session

_SIZE_MULTIPLE = 32     # the network downsamples by 32
_MIN_BLOB_SIDE = 3      # shorter side of a blob, in map pixels, below which it is noise
_PAD = 16               # white border added around inputs so lines touching the edge keep their ends
# the detector looks only at the part of its input that holds ink (`inked_extent`): pixels at
# least `_INK_CONTRAST` darker than the paper (the 90th percentile) in means of `_INK_STEP`
# pixels square, grown by `_INK_MARGIN` and to at least `_INK_MIN_SIDE` a side
_INK_STEP = 4
_INK_CONTRAST = 16
_INK_MARGIN = 32
_INK_MIN_SIDE = 640
_WINDOW_MARGIN = 64     # input pixels of paper the network is also shown around that part
_MIN_ANGLE_ASPECT = 3.0 # a blob's angle is trusted only when it is this many times longer than thick
# A curved line (a page folded, curled or photographed bent: its lines rise and fall across it) is
# one blob of the map whose minimum-area rectangle is much thicker than the blob (`CURVE_THICKNESS`
# times its area / length), that is long (`CURVE_MIN_LENGTH` thicknesses), lies across the page
# (`CURVE_MIN_ASPECT`: its bounds wider than tall by this), and whose middle strays from a straight
# line by `CURVE_MIN_STRAY` thicknesses: its box would hold two or three of its neighbours, so it
# keeps its middle line (`Curve`) and is cut out along it (`vision.crops.crop_line`).
CURVE_THICKNESS = 2.0
CURVE_MIN_LENGTH = 8.0
CURVE_MIN_ASPECT = 2.5
CURVE_MIN_STRAY = 1.0
CURVE_POINTS = 64       # at most this many points of a curved line's middle are kept
MAX_LINE_ANGLE = 15.0   # degrees; steeper blobs are kept upright (vertical text, noise), not rotated
# a level box at least this many times taller than wide, holding at least `VERTICAL_MIN_GLYPHS`
# glyphs one under another, is a vertical line: a column of Chinese or Japanese, or a label set on
# its side (a form's section names). A lone glyph's box ("+", "1" at low resolution) can be as tall.
VERTICAL_ASPECT = 2.0
VERTICAL_MIN_GLYPHS = 3
# a lone glyph: a blob of ink outside every line, between these shares of the page's median line
# box height (a box is about 1.6 times its glyphs' height, grown as in training), no wider than
# `LONE_MAX_ASPECT` times its height, at least `LONE_MIN_FILL` ink inside its own box
LONE_MIN_HEIGHT, LONE_MAX_HEIGHT = 0.35, 0.9
LONE_MAX_ASPECT = 1.5
LONE_MIN_FILL = 0.15
LONE_MAX_SHARE = 0.25   # more lone glyphs than this share of the detected lines: noise, none are kept


def reads_down(bbox, text: str) -> bool:
    """Whether a line that has been read runs down the page: a box at least `VERTICAL_ASPECT`
    times taller than wide holding `VERTICAL_MIN_GLYPHS` characters or more (a lone "+" or "1"
    can have as tall a box). For results, whose lines keep their box and text, not the pixels
    `TextLine.vertical` was decided on."""
    x0, y0, x1, y1 = bbox
    return y1 - y0 >= VERTICAL_ASPECT * max(x1 - x0, 1) and len("".join(text.split())) >= VERTICAL_MIN_GLYPHS


@dataclass(frozen=True)
class TextLine:
    bbox: tuple[int, int, int, int]   # x0, y0, x1, y1 in page pixels (x1, y1 exclusive)
    score: float                      # mean line probability inside the detected core
    angle: float = 0.0                # degrees the baseline rises to the right (counter-clockwise), |angle| <= 15
    # the line runs down the page (`VERTICAL_ASPECT`, `VERTICAL_MIN_GLYPHS`): it is cut out turned to
    # run across (`vision.crops.crop_line`) and ordered in columns (`vision.reading_order`)
    vertical: bool = False
    curve: Curve | None = None        # a curved line's middle (`CURVE_*`): cut out along it; angle 0

    @property
    def height(self) -> int:
        return self.bbox[3] - self.bbox[1]

    @property
    def upright_size(self) -> tuple[float, float]:
        """(length, thickness) of the line's rotated rectangle, recovered from its box and angle:
        a box of width w and height h around a rectangle L x T at angle a has
        w = L cos a + T sin a and h = L sin a + T cos a."""
        width, height = self.bbox[2] - self.bbox[0], self.bbox[3] - self.bbox[1]
        if self.curve is not None:
            return float(width), float(min(self.curve.thickness, height))
        if abs(self.angle) < 1e-6:
            return float(width), float(height)
        cos, sin = np.cos(np.radians(abs(self.angle))), np.sin(np.radians(abs(self.angle)))
        cos2 = cos * cos - sin * sin
        length = (width * cos - height * sin) / cos2
        thickness = (height * cos - width * sin) / cos2
        return float(max(length, 1.0)), float(min(max(thickness, 1.0), height))

    @property
    def band(self) -> tuple[float, float]:
        """Top and bottom of the line's own band through the middle of its box: the rows a
        skewed line occupies at its centre, without the drift along its length; a curved line's
        band where the middle of its box is."""
        centre = (self.bbox[1] + self.bbox[3]) / 2
        if self.curve is not None:
            centre = float(self.curve.middle_at((self.bbox[0] + self.bbox[2]) / 2))
        thickness = self.upright_size[1]
        return centre - thickness / 2, centre + thickness / 2


class LineDetector:
    """Cheap to construct: the model itself is loaded once per process."""

    def __init__(self, num_threads: int = DEFAULT_NUM_THREADS, max_side_len: int = 2048,
                 pixel_threshold: float = 0.3, box_threshold: float = 0.5, unclip_ratio: float = 1.6,
                 max_lines: int = 2000, lone_glyphs: bool = True):
        self.num_threads = num_threads
        self.max_side_len = max_side_len
        self.pixel_threshold = pixel_threshold
        self.box_threshold = box_threshold
        self.unclip_ratio = unclip_ratio
        self.max_lines = max_lines
        self.lone_glyphs = lone_glyphs
        get_session(LINE_DETECTOR_PPOCRV4, num_threads)  # load the model on first use

    def detect(self, image: np.ndarray, bbox: tuple[float, float, float, float] | None = None) -> list[TextLine]:
        """Lines in an RGB image [height, width, 3] uint8, or in the part of it inside
        `bbox` (page pixels); boxes are always in the coordinates of `image`."""
        assert image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8, image.shape
        page_height, page_width = image.shape[:2]
        x_off, y_off, x_end, y_end = 0, 0, page_width, page_height
        if bbox is not None:
            x_off, y_off = max(0, int(bbox[0])), max(0, int(bbox[1]))
            x_end, y_end = min(page_width, int(np.ceil(bbox[2]))), min(page_height, int(np.ceil(bbox[3])))
        if x_end - x_off < 2 or y_end - y_off < 2:
            return []
        crop = image[y_off:y_end, x_off:x_end]
        padded = cv2.copyMakeBorder(crop, _PAD, _PAD, _PAD, _PAD, cv2.BORDER_CONSTANT, value=(255, 255, 255))
        resized, scale_x, scale_y = self._resized(padded)
        # the network sees the input it always saw, but only the window of it that holds ink, cut
        # on its 32-pixel grid so every pixel of the window keeps its place on the grid
        ink_x0, ink_y0, ink_x1, ink_y1 = inked_extent(crop)
        input_h, input_w = resized.shape[:2]
        win_x0 = _grid_floor((ink_x0 + _PAD) / scale_x - _WINDOW_MARGIN)
        win_y0 = _grid_floor((ink_y0 + _PAD) / scale_y - _WINDOW_MARGIN)
        win_x1 = min(input_w, _grid_ceil((ink_x1 + _PAD) / scale_x + _WINDOW_MARGIN))
        win_y1 = min(input_h, _grid_ceil((ink_y1 + _PAD) / scale_y + _WINDOW_MARGIN))
        session = get_session(LINE_DETECTOR_PPOCRV4, self.num_threads)
        network_input = _normalised(resized[win_y0:win_y1, win_x0:win_x1])
        probability = session.run(None, {session.get_inputs()[0].name: network_input})[0][0, 0]  # [h, w]

        def page_x(x):   # window pixels -> input pixels -> padded-crop pixels -> page pixels
            return (x + win_x0) * scale_x - _PAD + x_off

        def page_y(y):
            return (y + win_y0) * scale_y - _PAD + y_off

        lines = []
        for x0, y0, x1, y1, score, angle, middle in self._boxes_from_map(probability):
            # clamped to the crop
            left = int(np.clip(round(page_x(x0)), x_off, x_off + crop.shape[1]))
            top = int(np.clip(round(page_y(y0)), y_off, y_off + crop.shape[0]))
            right = int(np.clip(round(page_x(x1)), x_off, x_off + crop.shape[1]))
            bottom = int(np.clip(round(page_y(y1)), y_off, y_off + crop.shape[0]))
            if right - left > 3 and bottom - top > 3:
                box = (left, top, right, bottom)
                if middle is not None:
                    xs, ys, thickness = middle
                    # in tenths of a pixel, as the JSON keeps it, so a line's curve equals itself read back
                    curve = Curve(tuple(round(float(v), 1) for v in page_x(xs)),
                                  tuple(round(float(v), 1) for v in page_y(ys)), round(float(thickness * scale_y), 1))
                    lines.append(TextLine(box, score, 0.0, False, curve))
                else:
                    lines.append(TextLine(box, score, angle, _runs_down(image, box, angle)))
        if self.lone_glyphs:
            for box in lone_glyphs(crop, [_shifted(line.bbox, -x_off, -y_off) for line in lines]):
                lines = _with_lone_glyph(lines, _shifted(box, x_off, y_off))
        return lines

    def _resized(self, image: np.ndarray) -> tuple[np.ndarray, float, float]:
        """`image` at the network's input size (its long side at most `max_side_len`, each side a
        multiple of 32), with the page pixels per input pixel across and down."""
        height, width = image.shape[:2]
        ratio = min(1.0, self.max_side_len / max(height, width))
        input_h = max(_SIZE_MULTIPLE, int(round(height * ratio / _SIZE_MULTIPLE)) * _SIZE_MULTIPLE)
        input_w = max(_SIZE_MULTIPLE, int(round(width * ratio / _SIZE_MULTIPLE)) * _SIZE_MULTIPLE)
        resized = cv2.resize(image, (input_w, input_h), interpolation=cv2.INTER_LINEAR)
        return resized, width / input_w, height / input_h

    def _boxes_from_map(self, probability: np.ndarray) -> list[tuple]:
        """(x0, y0, x1, y1, score, angle, middle) per line, in map pixels (the angle as in
        `TextLine`); `middle` is None, or a curved line's (xs, ys, thickness) (`_curved_middle`)."""
        mask = (probability > self.pixel_threshold).astype(np.uint8)
        mask = cv2.dilate(mask, np.ones((2, 2), np.uint8))
        contours, _ = cv2.findContours(mask * 255, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
        boxes = []
        for contour in contours[: self.max_lines]:
            (centre_x, centre_y), (side_w, side_h), angle = cv2.minAreaRect(contour)
            if min(side_w, side_h) < _MIN_BLOB_SIDE:
                continue
            curved = _curved_middle(probability, mask, contour, side_w, side_h, self.unclip_ratio)
            if curved is not None:
                (x0, y0, x1, y1), score, middle = curved
                if score >= self.box_threshold:
                    boxes.append((x0, y0, x1, y1, score, 0.0, middle))
                continue
            corners = cv2.boxPoints(((centre_x, centre_y), (side_w, side_h), angle))  # [4, 2]
            score = _mean_inside(probability, corners)
            if score < self.box_threshold:
                continue
            grow = side_w * side_h * self.unclip_ratio / (2 * (side_w + side_h))
            grown = cv2.boxPoints(((centre_x, centre_y), (side_w + 2 * grow, side_h + 2 * grow), angle))
            if min(side_w, side_h) + 2 * grow < _MIN_BLOB_SIDE + 2:
                continue
            x0, y0 = grown.min(axis=0)
            x1, y1 = grown.max(axis=0)
            boxes.append((float(x0), float(y0), float(x1), float(y1), score, _baseline_angle(corners), None))
        return boxes


def _curved_middle(probability: np.ndarray, mask: np.ndarray, contour: np.ndarray, side_w: float, side_h: float,
                   unclip_ratio: float) -> tuple[tuple[float, float, float, float], float, tuple] | None:
    """For a blob of the map that is a curved line (`CURVE_*`): its box grown as a line's is,
    its score (the mean probability over the blob itself: its rectangle holds other lines' cores)
    and its middle (xs, ys, thickness) in map pixels; None for any other blob. The middle is the
    probability-weighted mean row of the blob in each column, smoothed over two thicknesses; the
    thickness is the blob's (area / length) grown on both sides by the detector's unclip offset
    (area x ratio / perimeter)."""
    area = float(cv2.contourArea(contour))
    length, short = max(side_w, side_h), min(side_w, side_h)
    if area <= 0 or length <= 0:
        return None
    thick = area / length
    left, top, width, height = cv2.boundingRect(contour)
    if short < CURVE_THICKNESS * thick or length < CURVE_MIN_LENGTH * thick or width < CURVE_MIN_ASPECT * height:
        return None
    own = np.zeros((height, width), np.uint8)
    cv2.drawContours(own, [contour - (left, top)], -1, 1, thickness=cv2.FILLED)
    own &= mask[top:top + height, left:left + width]
    weights = probability[top:top + height, left:left + width] * own
    column_weight = weights.sum(axis=0)
    filled = column_weight > 0
    if filled.sum() < 2:
        return None
    columns = np.flatnonzero(filled)
    rows = (weights * np.arange(height, dtype=np.float32)[:, None]).sum(axis=0)[filled] / column_weight[filled]
    rows = np.interp(np.arange(width), columns, rows)          # gaps between words filled in
    window = max(1, int(round(2 * thick)) | 1)
    smooth = np.convolve(np.pad(rows, window // 2, mode="edge"), np.ones(window) / window, mode="valid")
    straight = np.polyval(np.polyfit(np.arange(width), smooth, 1), np.arange(width))
    if np.abs(smooth - straight).max() < CURVE_MIN_STRAY * thick:
        return None   # a straight (or skewed) line: its rectangle serves
    grow = area * unclip_ratio / max(cv2.arcLength(contour, True), 1e-6)
    thickness = thick + 2 * grow
    step = max(1, int(np.ceil(width / CURVE_POINTS)))
    xs = np.concatenate([[left - grow], left + np.arange(0, width, step), [left + width - 1 + grow]])
    ys = np.concatenate([[smooth[0]], smooth[::step], [smooth[-1]]]) + top
    box = (float(left - grow), float(ys.min() - thickness / 2), float(left + width - 1 + grow),
           float(ys.max() + thickness / 2))
    score = float(weights.sum() / max(own.sum(), 1))
    return box, score, (xs, ys, thickness)


def _normalised(rgb: np.ndarray) -> np.ndarray:
    """The network's input [1, 3, h, w] from RGB pixels: PaddleOCR's detectors were trained on
    OpenCV-loaded (BGR) images, so the planes are reversed."""
    planes = rgb.transpose(2, 0, 1)[::-1]
    return ((planes.astype(np.float32) / 255.0 - 0.5) / 0.5)[None]


def _grid_floor(value: float) -> int:
    return max(0, int(np.floor(value / _SIZE_MULTIPLE)) * _SIZE_MULTIPLE)


def _grid_ceil(value: float) -> int:
    return int(np.ceil(value / _SIZE_MULTIPLE)) * _SIZE_MULTIPLE


def inked_extent(image: np.ndarray) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1): the part of an RGB image that holds anything darker than its paper,
    grown by `_INK_MARGIN` pixels and to at least `_INK_MIN_SIDE` a side (the detector needs the
    context: a narrow crop of a column loses lines), clamped to the image. Looked at in means of
    `_INK_STEP` x `_INK_STEP` pixels, which a scan's speckle does not darken as a glyph does. A
    typeset page's margins and the white below its last line are a third or more of its pixels,
    and the detector's cost is its input's pixels. An image with no such ink is looked at whole."""
    height, width = image.shape[:2]
    small = cv2.resize(image, (max(1, width // _INK_STEP), max(1, height // _INK_STEP)), interpolation=cv2.INTER_AREA)
    sample = small.reshape(small.shape[0], small.shape[1], -1).min(axis=2)
    paper = int(np.percentile(sample, 90))
    ink = sample < paper - _INK_CONTRAST
    rows, columns = np.flatnonzero(ink.any(axis=1)).tolist(), np.flatnonzero(ink.any(axis=0)).tolist()
    if not rows:
        return 0, 0, width, height
    extent = []
    for first, last, side in ((columns[0], columns[-1], width), (rows[0], rows[-1], height)):
        start, end = max(0, first * _INK_STEP - _INK_MARGIN), min(side, (last + 1) * _INK_STEP + _INK_MARGIN)
        least = min(side, _INK_MIN_SIDE)
        if end - start < least:   # grown about its middle, as far as the image lets
            start = min(max(0, start - (least - (end - start)) // 2), side - least)
            end = start + least
        extent.append((start, end))
    (x0, x1), (y0, y1) = extent
    return x0, y0, x1, y1


LONE_GLYPH_SCORE = 0.5   # the score a line found by `lone_glyphs` carries (the detector's are its own)
LONE_JOIN_GAP = 0.5      # line heights: a lone glyph this close beside a line on its row (a word space) belongs to it


def lone_glyphs(image: np.ndarray, boxes: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Boxes for glyphs standing alone outside `boxes` (the detected lines, in `image`'s pixels),
    those side by side on a row ("12") in one box grown as the detector grows its own."""
    level = [bottom - top for left, top, right, bottom in boxes if bottom - top < VERTICAL_ASPECT * (right - left)]
    if not level:
        return []
    height = float(np.median(level))
    grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    if int(np.percentile(grey, 99)) - int(grey.min()) < 40:
        return []
    _, ink = cv2.threshold(grey, 0, 255, cv2.THRESH_BINARY_INV | cv2.THRESH_OTSU)
    covered = np.zeros_like(ink)
    for left, top, right, bottom in boxes:
        covered[max(0, top - 2):bottom + 2, max(0, left - 2):right + 2] = 1
    ink[covered > 0] = 0
    count, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    glyphs = []
    for k in range(1, count):
        x, y, w, h, area = (int(v) for v in stats[k])
        if not LONE_MIN_HEIGHT * height <= h <= LONE_MAX_HEIGHT * height or w > LONE_MAX_ASPECT * h \
                or area < LONE_MIN_FILL * w * h:
            continue
        if covered[max(0, y - 2):y + h + 2, max(0, x - 2):x + w + 2].any():
            continue    # a piece of a glyph a line's box cuts, not a glyph of its own
        glyphs.append([x, y, x + w, y + h])
    if len(glyphs) > LONE_MAX_SHARE * len(boxes):
        return []
    clusters: list[list[int]] = []
    for glyph in sorted(glyphs):
        for cluster in clusters:
            if abs((cluster[1] + cluster[3]) - (glyph[1] + glyph[3])) / 2 < 0.3 * height \
                    and glyph[0] - cluster[2] < 0.4 * (glyph[3] - glyph[1]):
                cluster[:] = [min(cluster[0], glyph[0]), min(cluster[1], glyph[1]),
                              max(cluster[2], glyph[2]), max(cluster[3], glyph[3])]
                break
        else:
            clusters.append(glyph)
    page_height, page_width = ink.shape
    grown = []
    for left, top, right, bottom in clusters:
        # grown up and down as the detector grows a line; across by a hair only, so the gap to
        # the next box on the row (a listing's spaces are measured from it) stays as printed
        margin, side = round(0.3 * (bottom - top)), 1
        grown.append((max(0, left - side), max(0, top - margin), min(page_width, right + side),
                      min(page_height, bottom + margin)))
    return grown


def _with_lone_glyph(lines: list[TextLine], box: tuple[int, int, int, int]) -> list[TextLine]:
    """`lines` with a lone glyph's box: the line it stands beside on its row, within a word
    space (`LONE_JOIN_GAP` of that line's height: a bullet before its item, a last digit the
    detector cut off), grown to take it in; else a line of its own (a page number at the end of
    its dot leaders, a listing's "+" prompt three spaces before its statement, whose gap the
    listing's layout measures)."""
    left, top, right, bottom = box
    best, best_gap = None, None
    for k, line in enumerate(lines):
        x0, y0, x1, y1 = line.bbox
        if line.vertical or min(bottom, y1) - max(top, y0) < 0.5 * min(bottom - top, y1 - y0):
            continue
        gap = max(x0 - right, left - x1, 0)
        if gap <= LONE_JOIN_GAP * (y1 - y0) and (best_gap is None or gap < best_gap):
            best, best_gap = k, gap
    if best is None:
        return lines + [TextLine(box, LONE_GLYPH_SCORE)]
    x0, y0, x1, y1 = lines[best].bbox
    grown = replace(lines[best], bbox=(min(x0, left), min(y0, top), max(x1, right), max(y1, bottom)))
    return lines[:best] + [grown] + lines[best + 1:]


def _shifted(box: tuple[int, int, int, int], dx: int, dy: int) -> tuple[int, int, int, int]:
    return box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy


def _runs_down(image: np.ndarray, box: tuple[int, int, int, int], angle: float) -> bool:
    """Whether a level box, tall and narrow, holds glyphs one under another: at least
    `VERTICAL_MIN_GLYPHS` blobs of ink (darker than halfway between the box's darkest and
    lightest pixels), not counting one that runs the box's length (a rule beside a form's label),
    so a lone tall glyph ("+", "1") is not taken for a column."""
    left, top, right, bottom = box
    if abs(angle) >= 1e-6 or bottom - top < VERTICAL_ASPECT * (right - left):
        return False
    grey = image[top:bottom, left:right].mean(axis=2)
    if grey.size == 0 or grey.max() - grey.min() < 40:
        return False
    ink = (grey < (grey.max() + grey.min()) / 2).astype(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    height = bottom - top
    glyphs = [k for k in range(1, count) if stats[k, cv2.CC_STAT_HEIGHT] < 0.9 * height
              and stats[k, cv2.CC_STAT_AREA] >= 4]
    return len(glyphs) >= VERTICAL_MIN_GLYPHS


def _baseline_angle(corners: np.ndarray) -> float:
    """Angle of a rectangle's long side, in degrees counter-clockwise (image y points down),
    folded into [-90, 90); 0 for blobs too short to say or steeper than `MAX_LINE_ANGLE`."""
    edge_a, edge_b = corners[1] - corners[0], corners[2] - corners[1]
    long_edge, short_edge = (edge_a, edge_b) if np.hypot(*edge_a) >= np.hypot(*edge_b) else (edge_b, edge_a)
    if np.hypot(*long_edge) < _MIN_ANGLE_ASPECT * max(np.hypot(*short_edge), 1e-6):
        return 0.0
    angle = float(np.degrees(np.arctan2(-long_edge[1], long_edge[0])))
    angle = (angle + 90.0) % 180.0 - 90.0
    return angle if abs(angle) <= MAX_LINE_ANGLE else 0.0


def _mean_inside(probability: np.ndarray, corners: np.ndarray) -> float:
    """Mean of the probability map inside a (possibly rotated) quadrilateral."""
    height, width = probability.shape
    x0 = int(np.clip(np.floor(corners[:, 0].min()), 0, width - 1))
    x1 = int(np.clip(np.ceil(corners[:, 0].max()), 0, width - 1))
    y0 = int(np.clip(np.floor(corners[:, 1].min()), 0, height - 1))
    y1 = int(np.clip(np.ceil(corners[:, 1].max()), 0, height - 1))
    mask = np.zeros((y1 - y0 + 1, x1 - x0 + 1), dtype=np.uint8)
    cv2.fillPoly(mask, [(corners - (x0, y0)).astype(np.int32)], 1)
    return float(cv2.mean(probability[y0:y1 + 1, x0:x1 + 1], mask)[0])
