"""Code listings in the result, as printed: a monospaced listing read from a PDF's text layer is
shown in the page view's text and in the Markdown view as a code block of monospaced lines with
their spaces, one printed line per line, scrolling sideways instead of wrapping. Real API, worker
and Chromium, on a PDF made here and on the R manual's listings (skipped where the r-doc-pdf
package is not installed)."""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest
from playwright.sync_api import Locator, Page, expect

from service_harness import REPO_ROOT
from web_harness import (PHONE, assert_web_libraries, delete_job, finished_job, page_problems, result_json,
                         screenshot, sign_in)

pytestmark = pytest.mark.slow

# An R session, as R prints it; one line is wider than a phone's text column.
LISTING = [
    "> x <- c(10, 20, 30)",
    "> mean(x)",
    "[1] 20",
    "> sum(x) / length(x)",
    "[1] 20",
    '> paste("mean", mean(x), "sum", sum(x), "count", length(x), sep = ": ")',
    '[1] "mean: 20: sum: 60: count: 3"',
    "> if (mean(x) > 15) {",
    '+   print("big")',
    "+ }",
    '[1] "big"',
]


def listing_pdf() -> bytes:
    """A heading, a sentence, LISTING in 12-pt Courier (spaces as printed), a closing sentence."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((60, 90), "Means in R", fontname="hebo", fontsize=20)
    page.insert_text((60, 130), "The session below is printed in a monospaced font.", fontname="helv", fontsize=12)
    for row, line in enumerate(LISTING):
        page.insert_text((60, 170 + row * 16), line, fontname="cour", fontsize=12)
    page.insert_text((60, 200 + len(LISTING) * 16), "A closing sentence in a proportional font.", fontname="helv",
                     fontsize=12)
    return doc.tobytes()


def code_blocks(result: dict) -> list[str]:
    return [block["text"] for document in result["documents"] for page in document["pages"]
            for region in page["regions"] for block in region.get("blocks") or () if block["type"] == "code"]


def shown_as_printed(code: Locator) -> dict:
    """How a code box lays its text out: white-space, font, lines drawn vs. lines in it, whether it
    scrolls, and whether it fits its card with the page not scrolling sideways."""
    return code.evaluate("""pre => { const s = getComputedStyle(pre);
      const lineHeight = parseFloat(s.lineHeight) || parseFloat(s.fontSize) * 1.2;
      const inner = pre.querySelector('code') || pre;
      return { whiteSpace: s.whiteSpace, overflowX: s.overflowX, font: s.fontFamily.toLowerCase(),
               drawnLines: Math.round(inner.getBoundingClientRect().height / lineHeight),
               lines: pre.innerText.replace(/\\n$/, '').split('\\n').length,
               scrolls: pre.scrollWidth > pre.clientWidth + 1,
               fits: pre.getBoundingClientRect().right <= pre.closest('.card').getBoundingClientRect().right + 1 &&
                     document.documentElement.scrollWidth <= document.documentElement.clientWidth }; }""")


def assert_code_box(code: Locator, must_scroll: bool) -> None:
    layout = shown_as_printed(code)
    assert layout["whiteSpace"] == "pre" and layout["overflowX"] == "auto", str(layout)
    assert "mono" in layout["font"], str(layout)
    assert layout["drawnLines"] == layout["lines"], str(layout)   # nothing wrapped
    assert layout["fits"], str(layout)                              # the box stays in its column...
    if must_scroll:
        assert layout["scrolls"], str(layout)                       # ...and its long lines scroll inside it


def open_result(page: Page, base_url: str, filename: str) -> None:
    sign_in(page, base_url)
    job = page.locator("#job-list > li.job", has_text=filename).first
    job.get_by_role("button", name=f"Open result of {filename}").click()
    expect(page.locator("#result").get_by_role("heading", name=filename)).to_be_visible()


@pytest.fixture(scope="module")
def listing_job(api, worker) -> Iterator[dict]:
    job = finished_job(api.base_url, "means.pdf", listing_pdf())
    yield {"job": job, "blocks": code_blocks(result_json(api.base_url, job["id"]))}
    delete_job(api.base_url, job["id"])


def test_a_generated_listing_is_shown_as_the_result_has_it(api, listing_job, page: Page):
    assert_web_libraries()
    [block] = listing_job["blocks"]
    assert "> mean(x)\n[1] 20" in block and LISTING[5] in block   # the pipeline found the listing

    open_result(page, api.base_url, "means.pdf")
    code = page.locator("#region-list pre.region-code")
    expect(code).to_have_count(1)
    assert code.inner_text() == block   # spaces and all
    page.set_viewport_size(PHONE)
    code.scroll_into_view_if_needed()
    assert_code_box(code, must_scroll=True)
    screenshot(page, "30-listing-page-view-phone", full_page=True)

    page.get_by_role("tab", name="Markdown").click()
    markdown_code = page.locator("#markdown-preview pre")
    expect(markdown_code).to_have_count(1)
    assert markdown_code.inner_text().rstrip("\n") == block
    assert_code_box(markdown_code, must_scroll=True)
    screenshot(page, "31-listing-markdown-phone", full_page=True)
    assert page_problems(page) == []


def test_the_pipeline_keeps_a_listing_as_printed(listing_job):
    assert listing_job["blocks"] == ["\n".join(LISTING)]


def r_manual() -> Path | None:
    entries = json.loads((REPO_ROOT / "bench" / "real_pages.json").read_text())["documents"]
    path = Path(next(entry["path"] for entry in entries if entry["path"].endswith("/R-intro.pdf")))
    return path if path.is_file() else None


R_MANUAL = r_manual()
needs_r_manual = pytest.mark.skipif(R_MANUAL is None, reason="the R manual (Debian's r-doc-pdf, path in "
                                                               "bench/real_pages.json) is not installed")


@pytest.fixture(scope="module")
def r_manual_job(api, worker) -> Iterator[dict]:
    """Page 27 (printed page 21): R sessions with printed matrices, under a running header. The page
    alone, as its own PDF (its fonts and text layer with it): the manual is over the test upload cap."""
    one_page = pymupdf.open()
    one_page.insert_pdf(pymupdf.open(R_MANUAL), from_page=26, to_page=26)
    job = finished_job(api.base_url, "R-intro.pdf", one_page.tobytes(garbage=3, deflate=True), timeout_s=180)
    yield {"job": job, "blocks": code_blocks(result_json(api.base_url, job["id"]))}
    delete_job(api.base_url, job["id"])


@needs_r_manual
def test_the_r_manuals_listing_is_shown_as_the_result_has_it(api, r_manual_job, page: Page):
    assert_web_libraries()
    blocks = r_manual_job["blocks"]
    assert any(re.search(r"^> x\[i\] <- 0 {4,}# Replace those elements by zeros\.$", block, re.M)
               for block in blocks), blocks

    open_result(page, api.base_url, "R-intro.pdf")
    codes = page.locator("#region-list pre.region-code")
    expect(codes.first).to_be_visible()
    shown = [codes.nth(i).inner_text() for i in range(codes.count())]
    for block in blocks:   # each block as the JSON has it, spaces and line breaks kept
        assert any(block in text for text in shown), (block, shown)
    for i in range(codes.count()):
        assert_code_box(codes.nth(i), must_scroll=False)
    expect(page.locator("#region-list")).to_contain_text("running header")   # furniture, by its role

    page.get_by_role("tab", name="Markdown").click()
    view = page.locator("#markdown-preview")
    expect(view.locator("pre").first).to_be_visible()
    text = view.inner_text()
    assert "Chapter 5: Arrays and matrices" not in text and "header:" not in text   # furniture left out
    assert re.search(r"^> i {4,}# i is a 3 by 2 index array\.$", text, re.M), text   # its spaces kept
    for i in range(view.locator("pre").count()):
        assert_code_box(view.locator("pre").nth(i), must_scroll=False)
    screenshot(page, "32-r-manual-markdown", full_page=True)
    assert page_problems(page) == []


@needs_r_manual
def test_the_pipeline_keeps_the_r_manuals_matrix_rows(r_manual_job):
    blocks = "\n".join(r_manual_job["blocks"])
    for row in (r"\[1,\] +1 +5 +9 +13 +17", r"\[2,\] +2 +6 +10 +14 +18", r"\[4,\] +4 +8 +12 +16 +20"):
        assert re.search(row, blocks), row
