"""Trust at a glance, in the real page: each region says where its text came from, how the
text-layer check went and how confident the reading is; low-confidence lines are marked in the
text and on the page image; a filter leaves only what needs a person's look; furniture is listed by
its role here and left out of the Markdown view, which renders a table with spanning cells,
formulas and a code listing. The job's answers come from tests/web/fabricated_result.py (the
real recogniser cannot be made to doubt a line on demand); everything else is real."""
from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

import fabricated_result as fabricated
from page_checks import axe_violations
from web_harness import KEY, assert_web_libraries, page_problems, screenshot

pytestmark = pytest.mark.slow


def open_fabricated(page: Page, base_url: str) -> None:
    job_id = fabricated.serve_fabricated_job(page)
    page.goto(f"{base_url}/#job={job_id}")   # signing in opens the job the address names
    page.get_by_label("API key").fill(KEY)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#result-title")).to_have_text(fabricated.FILENAME)
    expect(page.locator("#page-canvas image.page-image")).to_have_count(1)


def item(page: Page, reading_number: int):
    return page.locator("#region-list > li").nth(reading_number - 1)


def test_trust_markers_in_text_and_on_the_page(api, page: Page):
    open_fabricated(page, api.base_url)
    items = page.locator("#region-list > li")
    expect(items).to_have_count(14)

    prose = item(page, 4)
    expect(prose.locator(".source-tag")).to_have_text("OCR")
    expect(prose.locator(".confidence-tag")).to_have_text("confidence 73% · 1 low line")   # mean of .96 .31 .93
    low = prose.locator("mark.line-mark.low")
    expect(low).to_have_count(1)
    expect(low).to_contain_text("selects irregular elements; this line was smudged in the scan")
    expect(low).to_have_attribute("title", "low confidence (31%)")
    expect(prose.get_by_role("button")).to_have_accessible_name(
        "Region 4: text, needs a look: 1 low-confidence line")

    differs = item(page, 5)
    expect(differs.locator(".check-tag")).to_have_text("differs from the text layer")
    expect(differs.locator("mark.line-mark.differs")).to_have_attribute(
        "title", "the PDF text layer reads: Verified reading: the mean is 4.7 units.")
    expect(item(page, 6).locator(".check-tag")).to_have_text("agrees with the text layer")
    fallback = item(page, 7)
    expect(fallback.locator(".source-tag")).to_have_text("PDF text layer")
    expect(fallback.locator(".status-tag")).to_have_text("from the PDF text layer")
    expect(fallback.locator(".confidence-tag")).to_have_count(0)   # the layer gives no confidence
    expect(item(page, 12).locator(".status-tag")).to_have_text("not read")

    # Furniture is shown here, by its role.
    for number, role in ((1, "furniture"), (2, "running header"), (14, "furniture")):
        expect(item(page, number)).to_have_class(("region-item label-header status-ok furniture", "region-item label-text status-ok furniture", "")[number - 1] if number < 3 else
                                                 "region-item label-footer status-ok furniture")
        expect(item(page, number).locator(".role-tag")).to_have_text(role)

    # On the page image: the doubtful line outlined inside its region, where its box says.
    box = page.locator('#page-canvas g.region[data-region="3"]')
    expect(box).to_have_attribute("aria-label", "Region 4: text, 1 low-confidence line")
    line = box.locator("rect.low-line-box")
    expect(line).to_have_count(1)
    assert [line.get_attribute(k) for k in ("x", "y", "width", "height")] == ["160", "274", "900", "26"]
    expect(page.locator("#page-canvas rect.low-line-box")).to_have_count(1)
    expect(page.locator("#page-note")).to_have_text(
        "14 regions · 1 from the PDF text layer · 1 not read · 1 low-confidence line · 1 differs from the text layer"
        ". 1 region could not be read")
    expect(page.locator("#legend")).to_contain_text("low-confidence line")
    screenshot(page, "20-trust-markers")

    # Only what needs a look: the low line, the differing reading, the fallback, the unread table.
    expect(page.locator("#needs-look-count")).to_have_text("4 of 14 regions on this page need a look.")
    page.get_by_label("Only what needs a look").check()
    visible = page.locator("#region-list > li:not(.filtered-out)")
    expect(visible).to_have_count(4)
    assert [visible.nth(i).get_attribute("data-region") for i in range(4)] == ["3", "4", "6", "11"]
    expect(page.locator("#page-canvas g.region:not(.filtered-out)")).to_have_count(4)
    assert page.locator("#page-canvas g.region.filtered-out").first.evaluate("g => getComputedStyle(g).display") == "none"
    screenshot(page, "21-needs-a-look")
    page.get_by_role("button", name="Next page").click()
    expect(page.locator("#needs-look-count")).to_have_text("Nothing on this page needs a look.")
    expect(page.locator("#region-list > li:not(.filtered-out)")).to_have_count(0)
    page.get_by_label("Only what needs a look").uncheck()
    expect(page.locator("#region-list > li:not(.filtered-out)")).to_have_count(1)
    assert axe_violations(page) == [], "\n".join(axe_violations(page))
    assert page_problems(page) == []


def test_code_listing_keeps_its_lines_and_scrolls_sideways(api, page: Page):
    open_fabricated(page, api.base_url)
    code = item(page, 9).locator("pre.region-code")
    expect(code).to_have_count(1)
    assert code.inner_text() == "\n".join(fabricated.LISTING)   # every space kept
    style = code.evaluate("""pre => { const s = getComputedStyle(pre);
      return { whiteSpace: s.whiteSpace, overflowX: s.overflowX, font: s.fontFamily,
               lineHeight: parseFloat(s.lineHeight), height: pre.querySelector('code').getBoundingClientRect().height,
               scrolls: pre.scrollWidth > pre.clientWidth, fits: pre.getBoundingClientRect().right <=
                 pre.parentElement.getBoundingClientRect().right + 1 }; }""")
    assert style["whiteSpace"] == "pre" and style["overflowX"] == "auto" and "mono" in style["font"].lower()
    # One printed line per line (nothing wrapped), and the long line scrolls inside the box.
    assert abs(style["height"] - len(fabricated.LISTING) * style["lineHeight"]) < style["lineHeight"] / 2, style
    assert style["scrolls"] and style["fits"], style
    code.focus()   # the keyboard can scroll it
    page.keyboard.press("End")
    page.keyboard.press("ArrowRight")
    # Chromium scrolls by key smoothly: the position moves over a few frames, so wait for it
    # (a machine under load took longer than one evaluate after the key press)
    page.wait_for_function("pre => pre.scrollLeft > 0", arg=code.element_handle(), timeout=10_000)


def test_markdown_view_renders_tables_formulas_code_without_furniture(api, page: Page):
    assert_web_libraries()
    open_fabricated(page, api.base_url)
    page.get_by_role("tab", name="Markdown").click()
    view = page.locator("#markdown-preview")
    expect(view.locator(".md-page-mark")).to_have_text(["Page 1", "Page 2"])
    text = view.inner_text()
    for furniture in ("Chapter 5: Arrays and matrices", "Page 21"):
        assert furniture not in text
    assert not [line for line in text.splitlines() if line.strip() in ("21", "header: 21")]
    expect(view.get_by_role("heading", name="5.3 Index matrices")).to_have_count(1)
    # The table with spanning cells, then its caption.
    expect(view.locator(".md-table th[rowspan='2']")).to_have_text("Region")
    expect(view.locator(".md-table th[colspan='2']")).to_have_text("Sales")
    expect(view.locator(".md-table + p em")).to_have_text("Table 1: Sales by region.")
    # The formula drawn by KaTeX, with MathML for screen readers; inline math in its sentence.
    display = view.locator(".md-math[data-math=display]")
    expect(display).to_have_count(1)
    expect(display.locator(".katex-display math")).to_have_count(1)
    expect(display).to_have_attribute("title", "\\int_0^1 x^2\\,dx = \\frac{1}{3} \\tag{2}")
    inline = view.locator("p", has_text="stays in its sentence").locator(".md-math[data-math=inline] .katex")
    expect(inline).to_have_count(1)
    # The listing, as printed.
    code = view.locator("pre code.language-r")
    expect(code).to_have_count(1)
    assert code.inner_text().rstrip("\n") == "\n".join(fabricated.LISTING)
    assert view.locator("pre").evaluate("pre => getComputedStyle(pre).whiteSpace") == "pre"
    expect(view.locator(".md-note.md-warning")).to_have_text("Region 12 (table) could not be read: the recogniser timed out")
    screenshot(page, "22-markdown-view", full_page=True)
    assert axe_violations(page) == [], "\n".join(axe_violations(page))
    assert page_problems(page) == []
