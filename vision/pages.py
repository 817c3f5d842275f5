"""Page selections as people type them: "1-5,8", "3", " 2 - 4 , 10 ".

Pages are numbered from 1 in the selection and returned as 0-based indices,
ascending and without repeats. Anything else — empty items, reversed or
open-ended ranges, page 0, pages past the end, signs, letters — is refused with
a `PageSelectionError` naming the offending item.
"""
from __future__ import annotations

import re

from vision.limits import PageSelectionError, VisionLimits

_ITEM = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$", re.ASCII)


def parse_page_selection(selection: str | None, num_pages: int,
                         limits: VisionLimits = VisionLimits()) -> list[int]:
    """0-based page indices chosen by `selection`; None or blank means every page."""
    assert num_pages >= 1, "an empty document is refused before pages are selected"
    if selection is None:
        return list(range(num_pages))
    if not isinstance(selection, str):
        raise PageSelectionError(f"pages must be text like '1-5,8', got {type(selection).__name__}")
    if not selection.strip():
        return list(range(num_pages))
    if len(selection) > limits.max_page_selection_len:
        raise PageSelectionError(
            f"page selection is {len(selection)} characters long; at most "
            f"{limits.max_page_selection_len} are allowed")

    chosen: set[int] = set()
    for item in selection.split(","):
        first, last = _parse_item(item)
        for page in (first, last):
            if page > num_pages:
                raise PageSelectionError(
                    f"page {page} is out of range: the document has {num_pages} "
                    f"page{'s' if num_pages != 1 else ''}")
        chosen.update(range(first - 1, last))
    return sorted(chosen)


def _parse_item(item: str) -> tuple[int, int]:
    """One comma-separated item as (first, last) page numbers, 1-based and inclusive."""
    match = _ITEM.match(item)
    if match is None:
        shown = item.strip() or "(empty)"
        raise PageSelectionError(
            f"cannot read page selection item {shown[:40]!r}: use page numbers and "
            f"ranges like '1-5,8'")
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    if first < 1:
        raise PageSelectionError("pages are numbered from 1; page 0 does not exist")
    if last < first:
        raise PageSelectionError(f"page range {first}-{last} runs backwards")
    return first, last
