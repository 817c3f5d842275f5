"""Writes bench/facts/pages/*.json: text facts drafted from the PDF pages' text layers, plus the facts
written by hand in hand_facts.py. Reads no system's output.

    .venv/bin/python bench/facts/draft_facts.py

Per page of PAGES (the text layer read with PyMuPDF, line by line, with positions):
- present: up to four body lines spread over the page: 22-90 characters, mostly letters, not in
  the top or bottom 7.5% of the page (where furniture sits), not furniture, occurring once on the
  page, and without the layer faults the page lists note (a maths letter glued to the next word,
  the st ligature without its space, the form's arrow glyphs as '©', a decorated initial set apart);
- order: up to two pairs of such lines in one column (left edges within 20 pt), the first at
  least 60 pt above the second, so the pair is in reading order whatever the page's layout;
- absent, table, math: hand_facts.py.
The drafts were checked against the page images; the hand facts were written from them.
"""
from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fact_files import FACTS_DIR, listed_pages  # noqa: E402
from hand_facts import FURNITURE, MATH, TABLES  # noqa: E402
from real_pages_metrics import normalise  # noqa: E402  (bench/ is on the path through fact_files)

PAGES = {
    "R-intro": [20, 40], "sample-sigconf": [2, 3], "amsldoc": [7, 9, 12, 18], "elstest-5p": [2, 3],
    "memman": [40, 120], "refcard-a4": [1], "fntguide": [8], "octave": [18], "algorithm2e": [4], "IEEEconf": [2],
    "sample631": [1, 6], "asmeconf-template": [2, 3], "beamerexample-conference-talk": [2, 6, 16],
    "uantwerpenletter-example": [1, 2], "bankstatement-example": [1, 2], "f1040nr": [4], "Erlkonig": [1],
    "maint-guide.fr": [7, 10, 25, 63], "multivar": [3, 5, 6, 8, 12], "testmath": [4, 5, 8, 23, 30, 34, 36, 39],
    "cheat-sheet": [1],
}
BAND = 0.075
_LAYER_FAULT = re.compile(r"[\U0001D400-\U0001D7FF][A-Za-z]|[A-Za-z][\U0001D400-\U0001D7FF]|[\ufb05\u017f©]")


def lines_of(page: pymupdf.Page) -> list[tuple[str, tuple]]:
    return [("".join(span["text"] for span in line["spans"]).strip(), line["bbox"])
            for block in page.get_text("dict")["blocks"] for line in block.get("lines", [])
            if "".join(span["text"] for span in line["spans"]).strip()]


def body_lines(page: pymupdf.Page, furniture: set[str]) -> list[tuple[str, tuple]]:
    height, page_text = page.rect.height, normalise(page.get_text())
    chosen = []
    for text, box in lines_of(page):
        letters = sum(char.isalpha() for char in text)
        if (box[1] < height * BAND or box[3] > height * (1 - BAND) or not 22 <= len(text) <= 90
                or letters / len(text) <= 0.72 or text.endswith("-") or "  " in text or _LAYER_FAULT.search(text)
                or any(unicodedata.category(char) in ("Co", "Cc", "Cn") for char in text)
                or normalise(text) in furniture or re.match(r"^[b-z] \w", text)
                or page_text.count(normalise(text)) != 1):
            continue
        chosen.append((text, box))
    return chosen


def main() -> int:
    pages, files = listed_pages(), {}

    def add(doc: str, number: int, category: str, **fields) -> None:
        facts = files.setdefault(doc, [])
        count = sum(f["page"] == number and f["category"] == category for f in facts) + 1
        facts.append({"id": f"{doc}_p{number}_{category}_{count}", "document": doc, "page": number,
                      "split": pages[(doc, number)].split, "category": category, **fields})

    documents = {}
    for doc, numbers in PAGES.items():
        for number in numbers:
            page = documents.setdefault(doc, pymupdf.open(pages[(doc, number)].pdf))[number - 1]
            furniture = FURNITURE.get((doc, number), [])
            body = body_lines(page, {normalise(text) for text, _ in furniture})
            count = min(4, len(body))
            for index in sorted({round(i * (len(body) - 1) / max(1, count - 1)) for i in range(count)}):
                add(doc, number, "present", text=body[index][0])
            used: set[str] = set()
            for i, (first, first_box) in enumerate(body):
                for second, second_box in body[i + 1:]:
                    if (len(used) < 4 and not {first, second} & used and abs(first_box[0] - second_box[0]) < 20
                            and second_box[1] - first_box[1] > 60):
                        add(doc, number, "order", before=first, after=second)
                        used |= {first, second}
            for text, whole_line in furniture:
                add(doc, number, "absent", text=text, **({"whole_line": True} if whole_line else {}))
    for (doc, number), rows in TABLES.items():
        for cell, neighbours in rows:
            add(doc, number, "table", cell=cell, **neighbours)
    for doc, number, latex, anchor in MATH:
        page = documents.setdefault(doc, pymupdf.open(pages[(doc, number)].pdf))[number - 1]
        rects = page.search_for(anchor)
        if not rects:
            sys.exit(f"{doc} p{number}: the anchor {anchor!r} of {latex!r} is not in the text layer")
        box = [round(min(r.x0 for r in rects), 1), round(min(r.y0 for r in rects), 1),
               round(max(r.x1 for r in rects), 1), round(max(r.y1 for r in rects), 1)]
        add(doc, number, "math", latex=latex, box=box)
    FACTS_DIR.mkdir(exist_ok=True)
    for doc, facts in files.items():
        (FACTS_DIR / f"{doc}.json").write_text(json.dumps(
            {"document": doc, "about": "written by bench/facts/draft_facts.py from the PDF page's text layer and "
             "bench/facts/hand_facts.py; see bench/facts/fact_files.py for the fields", "facts": facts},
            indent=1, ensure_ascii=False) + "\n")
    print(f"{sum(map(len, files.values()))} facts in {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
