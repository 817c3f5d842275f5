"""Photos of pages made flat before layout: the page found in the frame, its
perspective undone, a curled page's bow taken out, its shading evened, and the
page turned upright (`vision.orientation`).

A photo is told from a scan by its frame: a photo shows the page as one bright,
roughly four-sided blob on a darker background, clearly smaller than the frame.
A flat scan or a PDF render is paper to its edges, so no such blob is found and
the image is returned as it is (the same object, byte for byte).

| step          | how                                                                         | does not handle |
|---------------|-----------------------------------------------------------------------------|-----------------|
| page outline  | at `_ANALYSIS_SIDE` px: Otsu on blurred grey, closing, largest blob, holes filled; its hull cut to 4 corners (approxPolyDP), each moved to the hull's extreme along its diagonal | a page filling the frame or cut by it (taken as a scan); paper on a white table; dark print reaching the page's edge (cut off with the background) |
| sanity        | blob share of the frame in `_PAGE_SHARE`, touching at most `_MAX_BORDER_TOUCH` of the frame's edge, blob fills its quad, corner angles within `_MAX_CORNER_SKEW` of 90, page brighter than the background by `_MIN_CONTRAST` | |
| perspective   | a homography from the 4 corners to a rectangle of the sides' mean lengths, with a margin | the aspect of a steeply tilted page is a guess (foreshortening) |
| curl          | in the straightened image, the page's top and bottom edges per column (or left and right per row, whichever pair bows more), fitted by quartics; each column stretched so both edges become straight (a cylinder bent about one of the page's axes); fitted edges that cross or stand far from the page's height apart (a tiny or garbled image) leave the page flat | the squeeze of text along a curl; folds; a page bowed on both pairs of edges at once |
| shading       | each pixel divided by the paper's brightness (a closing that removes ink, then a wide blur) | hard shadow edges are only softened |
| orientation   | `vision.orientation.upright_rotation` on the flattened page | a page with no lines of print |

Boxes in results refer to the corrected image, and the searchable PDF shows it;
`PageGeometry` records what was done (the page's corners in the photo as decoded).
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image

from vision.orientation import upright_rotation

_ANALYSIS_SIDE = 640          # longest side of the copy the outline is found on
_PAGE_SHARE = (0.15, 0.88)    # of the frame's area: outside it, no page outline is trusted
_MAX_BORDER_TOUCH = 0.05     # of the frame's edge the page may touch (a page cut by the frame is not taken)
_MIN_FILL = 0.9               # blob area / quad area: a page is its quad, not an L or a blob
_MAX_CORNER_SKEW = 40.0       # degrees from square at any corner
_MIN_CONTRAST = 25.0          # grey levels between the page and its background (medians)
_CURL_SIDE = 1600            # longest side the page's edges are measured at for the curl fit
_MARGIN = 0.08                # of the page's size kept around it after the homography, for the curl fit
_EDGE_DEGREE = 4              # of the polynomials fitted to the top and bottom edges (a bow and a little more)
_MIN_BOW = 0.004              # of the page height: a straighter edge is not dewarped
_SHADING_KERNEL = 1 / 40      # of the page's longest side: wider than any stroke, narrower than a shadow


@dataclass(frozen=True)
class PageGeometry:
    """What was done to a photo; `quad` is TL, TR, BR, BL in pixels of the photo as decoded."""
    quad: tuple[tuple[float, float], ...]
    rotation: int        # degrees the straightened page was turned clockwise to stand upright (0/90/180/270)
    dewarped: bool       # the page's curl was taken out

    def to_dict(self) -> dict:
        return {"quad": [[round(x, 1), round(y, 1)] for x, y in self.quad], "rotation": self.rotation,
                "dewarped": self.dewarped, "boxes_refer_to": "corrected_image"}


def straighten_photo(image: Image.Image, num_threads: int = 2) -> tuple[Image.Image, PageGeometry | None]:
    """The page of a photo, flat and upright, and what was done; `image` itself and None when it
    does not look like a photo of a page."""
    # Only a small copy is made until the image proves to be a photo: a flat scan's pages are
    # never copied whole here (tests/vision/test_bounded_image_conversion.py bounds the memory).
    scale = min(1.0, _ANALYSIS_SIDE / max(image.size))
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    small = np.asarray(image.resize(size, Image.Resampling.BOX, reducing_gap=2.0).convert("RGB"))
    quad = _quad_on_small(small)
    if quad is None:
        return image, None
    quad = quad / np.array([size[0] / image.width, size[1] / image.height])
    rgb = np.asarray(image.convert("RGB"))
    warped, margin = _warp_to_rectangle(rgb, quad)
    page, dewarped = _flatten_curl(warped, margin)
    page = _even_shading(page)
    rotation = upright_rotation(page, num_threads)   # after the curl fit: the detector misses bowed lines
    page = np.ascontiguousarray(np.rot90(page, k=-rotation // 90))   # rot90 turns counter-clockwise
    quad_tuple = tuple((float(x), float(y)) for x, y in quad)
    return Image.fromarray(page), PageGeometry(quad_tuple, rotation, dewarped)


def find_page_quad(rgb: np.ndarray) -> np.ndarray | None:
    """The page's corners [4, 2] (TL, TR, BR, BL, photo pixels), or None when no page outline
    passes the checks in the module docstring."""
    height, width = rgb.shape[:2]
    scale = min(1.0, _ANALYSIS_SIDE / max(height, width))
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    quad = _quad_on_small(cv2.resize(rgb, size, interpolation=cv2.INTER_AREA))
    return None if quad is None else quad / np.array([size[0] / width, size[1] / height])


def _quad_on_small(small: np.ndarray) -> np.ndarray | None:
    """`find_page_quad` on a copy at most `_ANALYSIS_SIDE` long, corners in its pixels."""
    mask, grey = _page_mask(small)
    if mask is None:
        return None
    share = mask.sum() / mask.size
    if not _PAGE_SHARE[0] <= share <= _PAGE_SHARE[1] or _border_share(mask) > _MAX_BORDER_TOUCH:
        return None
    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    hull = cv2.convexHull(max(contours, key=cv2.contourArea))
    corners = _four_corners(hull)
    if corners is None or mask.sum() < _MIN_FILL * cv2.contourArea(corners.astype(np.float32)):
        return None
    if not _square_enough(corners) or not _contrasted(grey, mask):
        return None
    return _order(corners)


def _page_mask(small: np.ndarray, side: int | None = None) -> tuple[np.ndarray | None, np.ndarray]:
    """The largest bright blob with its holes (the ink) filled, as a bool mask; `side`: of the
    closing and opening that fill ink and drop specks (default 1/60 of the image)."""
    grey = cv2.GaussianBlur(cv2.cvtColor(small, cv2.COLOR_RGB2GRAY), (5, 5), 0)
    _, bright = cv2.threshold(grey, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    side = side or max(3, round(max(small.shape[:2]) / 60))
    bright = cv2.morphologyEx(bright, cv2.MORPH_CLOSE, np.ones((side, side), np.uint8))
    bright = cv2.morphologyEx(bright, cv2.MORPH_OPEN, np.ones((side, side), np.uint8))
    contours, _ = cv2.findContours(bright, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    if not contours:
        return None, grey
    mask = np.zeros_like(bright)
    cv2.drawContours(mask, [max(contours, key=cv2.contourArea)], -1, 255, thickness=cv2.FILLED)
    return mask > 0, grey


def _border_share(mask: np.ndarray) -> float:
    """How much of the frame's edge the blob touches: a slide's bright body under a dark title
    bar runs along three edges; a photographed page lies on its background."""
    edge = np.concatenate([mask[0], mask[-1], mask[:, 0], mask[:, -1]])
    return float(edge.mean())


def _four_corners(hull: np.ndarray) -> np.ndarray | None:
    """The hull simplified to exactly 4 vertices, loosening the tolerance until it is."""
    perimeter = cv2.arcLength(hull, closed=True)
    for tolerance in np.linspace(0.01, 0.12, 23):
        approx = cv2.approxPolyDP(hull, tolerance * perimeter, closed=True)
        if len(approx) == 4:
            return _to_extremes(approx.reshape(4, 2).astype(np.float64), hull.reshape(-1, 2))
        if len(approx) < 4:
            return None
    return None


def _to_extremes(corners: np.ndarray, hull: np.ndarray) -> np.ndarray:
    """Each corner moved to the hull point farthest out along its diagonal. A curled page's
    bowed side can pull a vertex of the simplified hull off the corner into the bow; the
    corner itself stays the extreme point along the diagonal."""
    centre = corners.mean(axis=0)
    refined = []
    for corner in corners:
        direction = (corner - centre) / (np.linalg.norm(corner - centre) + 1e-9)
        refined.append(hull[np.argmax((hull - centre) @ direction)])
    return np.array(refined, dtype=np.float64)


def _order(corners: np.ndarray) -> np.ndarray:
    """TL, TR, BR, BL: clockwise from the corner nearest the frame's top-left."""
    centre = corners.mean(axis=0)
    angles = np.arctan2(corners[:, 1] - centre[1], corners[:, 0] - centre[0])
    clockwise = corners[np.argsort(angles)]          # image y points down: ascending angle is clockwise
    first = int(np.argmin(clockwise.sum(axis=1)))
    return np.roll(clockwise, -first, axis=0)


def _square_enough(corners: np.ndarray) -> bool:
    ordered = _order(corners)
    for i in range(4):
        a, b = ordered[i - 1] - ordered[i], ordered[(i + 1) % 4] - ordered[i]
        cosine = np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-9)
        if abs(90.0 - np.degrees(np.arccos(np.clip(cosine, -1, 1)))) > _MAX_CORNER_SKEW:
            return False
    return True


def _contrasted(grey: np.ndarray, mask: np.ndarray) -> bool:
    return float(np.median(grey[mask])) - float(np.median(grey[~mask])) >= _MIN_CONTRAST


def _warp_to_rectangle(rgb: np.ndarray, quad: np.ndarray) -> tuple[np.ndarray, tuple[int, int]]:
    """The quad mapped onto an upright rectangle (its sides' mean lengths), inside a margin."""
    tl, tr, br, bl = quad
    width = (np.linalg.norm(tr - tl) + np.linalg.norm(br - bl)) / 2
    height = (np.linalg.norm(bl - tl) + np.linalg.norm(br - tr)) / 2
    mx, my = round(width * _MARGIN), round(height * _MARGIN)
    target = np.float32([[mx, my], [mx + width, my], [mx + width, my + height], [mx, my + height]])
    homography = cv2.getPerspectiveTransform(quad.astype(np.float32), target)
    size = (round(width) + 2 * mx, round(height) + 2 * my)
    # Outside the photo is black: replicated edge pixels would be paper where the page nears the frame.
    warped = cv2.warpPerspective(rgb, homography, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    return warped, (mx, my)


def _flatten_curl(warped: np.ndarray, margin: tuple[int, int]) -> tuple[np.ndarray, bool]:
    """The page cut from its margin; where a pair of opposite edges bows (top and bottom, or
    left and right on a page photographed sideways: the pair that bows more), each column (row)
    stretched between the two fitted edges (see the module docstring)."""
    mx, my = margin
    full_h, full_w = warped.shape[:2]
    scale = min(1.0, _CURL_SIDE / max(full_h, full_w))
    small = cv2.resize(warped, (max(1, round(full_w * scale)), max(1, round(full_h * scale))),
                       interpolation=cv2.INTER_AREA)
    mask, _ = _page_mask(small, side=5)   # a small kernel: it would round the edges being measured
    flat = warped[my:full_h - my, mx:full_w - mx]
    if mask is None:
        return flat, False
    across = _edge_curves(mask, scale, (mx, my), (full_w - 2 * mx, full_h - 2 * my))
    along = _edge_curves(mask.T, scale, (my, mx), (full_h - 2 * my, full_w - 2 * mx))
    if max(across[2], along[2]) < _MIN_BOW:
        return flat, False
    if across[2] >= along[2]:
        if not _plausible_edges(across[0], across[1], full_h - 2 * my):
            return flat, False
        return _stretch_columns(warped, across[0], across[1], mx), True
    if not _plausible_edges(along[0], along[1], full_w - 2 * mx):
        return flat, False
    turned = np.ascontiguousarray(warped.transpose(1, 0, 2))
    return np.ascontiguousarray(_stretch_columns(turned, along[0], along[1], my).transpose(1, 0, 2)), True


def _edge_curves(mask: np.ndarray, scale: float, margin: tuple[int, int],
                 size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, float]:
    """The page's top and bottom edge rows fitted over its columns (full-size pixels), and how
    far the more bowed of the two strays from a straight line, as a share of the page height."""
    (mx, _), (width, height) = margin, size
    columns = np.arange(round((mx + 0.05 * width) * scale), round((mx + 0.95 * width) * scale))
    columns = columns[mask[:, columns].any(axis=0)]
    page_xs = np.arange(mx, mx + width, dtype=np.float64)
    if len(columns) < 10:
        return page_xs, page_xs, 0.0
    tops = np.argmax(mask[:, columns], axis=0) / scale
    bottoms = (mask.shape[0] - np.argmax(mask[::-1, columns], axis=0)) / scale
    xs = columns / scale
    top = np.polyval(np.polyfit(xs, tops, _EDGE_DEGREE), page_xs)
    bottom = np.polyval(np.polyfit(xs, bottoms, _EDGE_DEGREE), page_xs)
    bow = max(np.ptp(top - np.polyval(np.polyfit(page_xs, top, 1), page_xs)),
              np.ptp(bottom - np.polyval(np.polyfit(page_xs, bottom, 1), page_xs)))
    return top, bottom, float(bow / max(1, height))


def _plausible_edges(top: np.ndarray, bottom: np.ndarray, height: int) -> bool:
    """Whether two fitted edges can bound the page: finite, the bottom below the top everywhere,
    and as far apart as the flat page is tall, within half of it. A polynomial fitted to the
    mask of a tiny or garbled image can cross itself; the flat page is kept then."""
    span = bottom - top
    return bool(np.isfinite(span).all() and (span > 0).all()
                and 0.5 * height <= float(np.median(span)) <= 1.5 * height)


def _stretch_columns(warped: np.ndarray, top: np.ndarray, bottom: np.ndarray, mx: int) -> np.ndarray:
    """Each page column resampled from its top edge to its bottom edge: the page's height tall."""
    height = round(float(np.median(bottom - top)))
    rows = np.arange(height, dtype=np.float32)[:, None] / max(1, height - 1)      # [height, 1]
    map_y = (top[None, :] + (bottom - top)[None, :] * rows).astype(np.float32)    # [height, width]
    map_x = np.broadcast_to(np.arange(mx, mx + len(top), dtype=np.float32)[None, :], map_y.shape).copy()
    return cv2.remap(warped, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def _even_shading(page: np.ndarray) -> np.ndarray:
    """Each pixel divided by the paper's brightness around it, so paper comes out white."""
    height, width = page.shape[:2]
    scale = min(1.0, _ANALYSIS_SIDE / max(height, width))
    small = cv2.resize(cv2.cvtColor(page, cv2.COLOR_RGB2GRAY), (max(1, round(width * scale)),
                       max(1, round(height * scale))), interpolation=cv2.INTER_AREA)
    side = max(3, round(max(small.shape) * _SHADING_KERNEL)) | 1
    paper = cv2.morphologyEx(small, cv2.MORPH_CLOSE, np.ones((side, side), np.uint8))
    paper = cv2.GaussianBlur(paper.astype(np.float32), (0, 0), side)
    paper = cv2.resize(paper, (width, height), interpolation=cv2.INTER_LINEAR)
    evened = page.astype(np.float32) * (255.0 / np.maximum(paper, 16.0))[:, :, None]
    return np.clip(evened, 0, 255).astype(np.uint8)
