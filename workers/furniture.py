"""Page furniture: what a page carries besides its content, found by position and content on
one page and by repetition across a document's pages.

| role          | what                                                   | found                                    |
|---------------|--------------------------------------------------------|------------------------------------------|
| `header`      | a running header or title in the top margin            | layout label or a thin strip in the top band (`vision.reading_order`); or text that repeats near the same height on other pages of the document; or a strip level with other furniture (a section title beside the page number) |
| `footer`      | the same in the bottom margin                          | the same, at the bottom                  |
| `page_number` | a region that holds only a page number ("12", "- 12 -", "Page 3 of 10", "xiv") | its text, in the top or bottom `NUMBER_BAND` |
| `line_numbers`| a narrow column of line numbers beside the text        | all its lines are small integers, and it lies outside the body's columns |
| `margin_note` | a narrow note in the outer margin                      | it lies wholly outside the body's columns and is narrow |

Furniture stays in the JSON with its role; Markdown and plain text leave it out unless the job
keeps it (`keep_furniture`). The per-page rules run as a page stage (`pipeline.furniture`), the
cross-page one when the job's result is put together (`workers.document_result`), since pages
are read independently.

Everything here errs towards content: a region is furniture only when its place and its text
both say so; a body paragraph lost from the text is worse than a page number kept.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

FURNITURE_ROLES = frozenset({"header", "footer", "page_number", "line_numbers", "margin_note"})

NUMBER_BAND = 0.15          # top/bottom share of the page where a lone page number is furniture (IEEE's and
                            # memoir's sit 12-13% above the bottom edge)
REPEAT_BAND = 0.15          # ... where text repeated across pages is a running header or footer
MAX_REPEAT_HEIGHT = 0.06    # share of page height: a running header or footer is a strip
MAX_REPEAT_CHARS = 160
SAME_HEIGHT = 0.03          # share of page height: repeats must sit this close to the same height
MIN_REPEATS = 2             # other pages carrying the same text (1 in a two-page document)
MARGIN_NOTE_WIDTH = 0.18    # share of page width: a margin note is narrower than this
BODY_COLUMN_WIDTH = 0.25    # ... and body text regions at least this wide define the columns
LINE_NUMBER_WIDTH = 0.06

_PAGE_NUMBER = re.compile(
    r"[\s\-–—.|]*(?:(?:page|p\.|pg\.?|seite|página|pagina)\s*)?"
    r"(?:\d{1,4}|[ivxlcdm]{1,7})(?:\s*(?:of|/|von|de|sur)\s*\d{1,4})?[\s\-–—.|]*", re.IGNORECASE)
_ROMAN = re.compile(r"\b[ivxlcdm]{1,7}\b", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Placed:
    """A region as these rules see it: where it is, what it says, what it is now."""
    bbox: tuple[float, float, float, float]
    text: str
    role: str
    task: str
    label: str
    line_texts: tuple[str, ...] = ()


def is_page_number(text: str) -> bool:
    text = text.strip()
    return bool(text) and len(text) <= 24 and _PAGE_NUMBER.fullmatch(text) is not None


def page_roles(regions: Sequence[Placed], width: float, height: float) -> list[str]:
    """Each region's role after the per-page rules (a page number, line numbers, a margin note);
    regions already furniture, and anything not plain text, keep theirs."""
    roles = [region.role for region in regions]
    body_columns = [r.bbox for r in regions if r.role == "body" and r.task == "text"
                    and r.bbox[2] - r.bbox[0] >= BODY_COLUMN_WIDTH * width]
    left = min((box[0] for box in body_columns), default=None)
    right = max((box[2] for box in body_columns), default=None)
    for i, region in enumerate(regions):
        if region.role != "body" or region.task != "text" or region.label in ("figure_caption", "table_caption"):
            continue
        x0, y0, x1, y1 = region.bbox
        in_band = y1 <= NUMBER_BAND * height or y0 >= (1 - NUMBER_BAND) * height
        if in_band and is_page_number(region.text):   # the layout model labels some bold page numbers titles
            roles[i] = "page_number"
            continue
        if left is None or right is None or region.label == "title":
            continue
        outside = x1 <= left + 0.005 * width or x0 >= right - 0.005 * width
        if not outside:
            continue
        lines = [t.strip() for t in region.line_texts if t.strip()] or region.text.split()
        if x1 - x0 <= LINE_NUMBER_WIDTH * width and lines and all(t.isdigit() and len(t) <= 4 for t in lines):
            roles[i] = "line_numbers"
        elif x1 - x0 <= MARGIN_NOTE_WIDTH * width and region.text.strip():
            roles[i] = "margin_note"
    return _level_with_furniture(regions, roles, height)


def signature(text: str) -> str:
    """What stays the same in a running header from page to page: its words, with page
    numbers (digits, roman numerals) masked and case and spacing ignored."""
    text = _DIGITS.sub("#", " ".join(text.lower().split()))
    return _ROMAN.sub("#", text)


def repeated_roles(pages: Sequence[tuple[float, float, Sequence[Placed]]]) -> list[list[str]]:
    """Roles after the cross-page rule, one list per page of (width, height, regions): a short
    body strip in the top or bottom `REPEAT_BAND` whose `signature` recurs near the same height
    on `MIN_REPEATS` other pages is a running header or footer."""
    candidates: list[tuple[int, int, str, float, str]] = []   # page, region, signature, centre, band
    for p, (width, height, regions) in enumerate(pages):
        for i, region in enumerate(regions):
            text = region.text.strip()
            band = _strip_band(region, height) if region.role == "body" else None
            if band is None:
                continue
            y0, y1 = region.bbox[1], region.bbox[3]
            sig = signature(text)
            if sum(ch.isalnum() for ch in sig) < 3 and not is_page_number(text):
                continue
            candidates.append((p, i, sig, (y0 + y1) / 2 / height, band))
    needed = min(MIN_REPEATS, len(pages) - 1)
    roles = [[region.role for region in regions] for _, _, regions in pages]
    if needed < 1:
        return roles
    for p, i, sig, centre, band in candidates:
        others = {q for q, _, other_sig, other_centre, other_band in candidates
                  if q != p and other_band == band and abs(other_centre - centre) <= SAME_HEIGHT
                  and other_sig == sig}
        if len(others) >= needed:
            roles[p][i] = band
    return [_level_with_furniture(regions, page_roles_, height)
            for (_, height, regions), page_roles_ in zip(pages, roles)]


def _strip_band(region: Placed, height: float) -> str | None:
    """"header" or "footer" for a short text strip in the top or bottom `REPEAT_BAND`, else None."""
    x0, y0, x1, y1 = region.bbox
    text = region.text.strip()
    if region.task != "text" or not text or len(text) > MAX_REPEAT_CHARS or (y1 - y0) > MAX_REPEAT_HEIGHT * height:
        return None
    if y1 <= REPEAT_BAND * height:
        return "header"
    if y0 >= (1 - REPEAT_BAND) * height:
        return "footer"
    return None


def _level_with_furniture(regions: Sequence[Placed], roles: list[str], height: float) -> list[str]:
    """A short body strip in the top or bottom `REPEAT_BAND` level with furniture (half its
    height overlapping) is furniture too: the running section title beside a page number."""
    out = list(roles)
    for i, region in enumerate(regions):
        band = _strip_band(region, height) if out[i] == "body" else None
        if band is None:
            continue
        y0, y1 = region.bbox[1], region.bbox[3]
        for j, other in enumerate(regions):
            if roles[j] in FURNITURE_ROLES and roles[j] not in ("line_numbers", "margin_note") and \
                    min(y1, other.bbox[3]) - max(y0, other.bbox[1]) > 0.5 * (y1 - y0):
                out[i] = band
                break
    return out
