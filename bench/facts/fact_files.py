"""The fact files of bench/facts/pages/ (one JSON file per document), read and checked at the boundary.

A file: {"document": PDF stem, "facts": [fact, ...]}. Every fact has `id` (unique in the
suite), `document`, `page` (1-based), `split` (dev | held_out), `category` and its check's
fields:

| category | fields |
|----------|--------|
| present  | text; optional max_diff (fraction of wrong characters allowed, default 0.1) |
| absent   | text; optional max_diff, whole_line (true: only a whole output line equal to text fails) |
| order    | before, after; optional max_diff |
| table    | cell and at least one of up, down, left, right |
| math     | latex (the page's formula), box ([x0, y0, x1, y1] in PDF points on the page, where it is printed) |

The page must be listed in a page list (bench/real_pages.json, bench/held_out_2026-12-06.json,
bench/held_out_math_2026-12-06.json) and the fact's split must be its document's split there,
so a held-out label cannot drift from the dated lists.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # bench/
from real_pages import PAGE_LISTS, SDISTS, Page  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FACTS_DIR = Path(__file__).resolve().parent / "pages"
MATH_LIST = ROOT / "bench" / "held_out_math_2026-12-06.json"
CATEGORIES = ("present", "absent", "order", "table", "math")
SPLITS = ("dev", "held_out")
REQUIRED = {"present": ("text",), "absent": ("text",), "order": ("before", "after"), "table": ("cell",),
            "math": ("latex", "box")}


class FactError(ValueError):
    """A fact file that cannot be scored as written."""


def listed_pages() -> dict[tuple[str, int], Page]:
    """Every page of the page lists, by (PDF stem, page number)."""
    pages = {}
    for path in (*PAGE_LISTS, MATH_LIST):
        for doc in json.loads(path.read_text())["documents"]:
            pdf = SDISTS / doc["path"] if doc.get("source") == "pypi-sdist" else Path(doc["path"])
            for entry in doc["pages"]:
                entry = entry if isinstance(entry, dict) else {"page": entry, "what": ""}
                page = Page(pdf.stem, pdf, doc["package"], doc["split"], entry["page"], entry["what"])
                pages[(page.doc, page.number)] = page
    return pages


def _check(fact: dict, where: str, pages: dict[tuple[str, int], Page]) -> None:
    for key in ("id", "document", "page", "split", "category"):
        if key not in fact:
            raise FactError(f"{where}: a fact has no {key!r}: {fact}")
    if fact["category"] not in CATEGORIES:
        raise FactError(f"{where}: fact {fact['id']} has category {fact['category']!r}, not one of {CATEGORIES}")
    missing = [key for key in REQUIRED[fact["category"]] if not fact.get(key)]
    if missing:
        raise FactError(f"{where}: {fact['category']} fact {fact['id']} lacks {', '.join(missing)}")
    if fact["category"] == "table" and not any(key in fact for key in ("up", "down", "left", "right")):
        raise FactError(f"{where}: table fact {fact['id']} names no neighbour (up/down/left/right)")
    if fact["category"] == "math" and not (isinstance(fact["box"], list) and len(fact["box"]) == 4):
        raise FactError(f"{where}: math fact {fact['id']}: box must be [x0, y0, x1, y1]")
    page = pages.get((fact["document"], fact["page"]))
    if page is None:
        raise FactError(f"{where}: fact {fact['id']}: page {fact['page']} of {fact['document']} is in no page list")
    if fact["split"] != page.split:
        raise FactError(f"{where}: fact {fact['id']} says split {fact['split']!r}, the page list says {page.split!r}")


def load_facts(directory: Path = FACTS_DIR) -> tuple[list[dict], dict[tuple[str, int], Page]]:
    """All facts, checked, and the pages they are about (in file order)."""
    listed = listed_pages()
    facts, seen, used = [], set(), {}
    for path in sorted(directory.glob("*.json")):
        try:
            content = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise FactError(f"{path}: not JSON: {error}") from error
        for fact in content.get("facts", []):
            _check(fact, path.name, listed)
            if fact["id"] in seen:
                raise FactError(f"{path.name}: fact id {fact['id']} is used twice")
            seen.add(fact["id"])
            facts.append(fact)
            used.setdefault((fact["document"], fact["page"]), listed[(fact["document"], fact["page"])])
    if not facts:
        raise FactError(f"no facts in {directory}/*.json")
    return facts, used
