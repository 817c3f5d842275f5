"""How a result page is drawn (web/page_drawing.js, web/region_list.js), in the real browser with
the real style sheet, on a page that has every region status: failed and
fallback regions are marked on the page and in the text, nothing is dropped,
and text from the document stays text. (Tesseract on clean test PDFs reads
everything, so the end-to-end tests never see a failed region.)"""
from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from web_harness import screenshot

pytestmark = pytest.mark.slow

PAGE = {"page": 3, "state": "done", "reason": "1 region could not be read", "width": 800, "height": 1000, "regions": [
    {"reading_index": 0, "label": "title", "task": "text", "role": "body", "bbox": [80, 60, 520, 110],
     "text": "Annual <b>Summary</b>", "status": "ok", "reason": None},
    {"reading_index": 1, "label": "text", "task": "text", "role": "body", "bbox": [80, 140, 720, 300],
     "text": "Read from the text layer\nsecond line", "status": "fallback", "reason": "recognition failed twice"},
    {"reading_index": 2, "label": "table", "task": "table", "role": "body", "bbox": [80, 340, 720, 620],
     "text": "", "status": "failed", "reason": "the recogniser timed out"},
    {"reading_index": 3, "label": "figure", "task": "skip", "role": "body", "bbox": [80, 660, 420, 900],
     "text": "", "status": "ok", "reason": None, "figure": "p3-r4.png"},
    {"reading_index": 4, "label": "footer", "task": "text", "role": "footer", "bbox": [80, 940, 720, 970],
     "text": "Page 3", "status": "ok", "reason": None},
]}

DRAW = """async (page) => {
  const drawing = await import('/web/page_drawing.js');
  const { listRegions } = await import('/web/region_list.js');
  document.getElementById('sign-in').hidden = true;
  document.getElementById('workspace').hidden = false;
  document.getElementById('result').hidden = false;
  document.getElementById('result-placeholder').hidden = true;
  document.getElementById('result-title').textContent = 'drawing test';
  drawing.drawPageNote(document.getElementById('page-note'), page);
  drawing.drawPage(document.getElementById('page-canvas'), page, null);
  listRegions(document.getElementById('region-list'), page);
  drawing.drawLegend(document.getElementById('legend'), page);
}"""


def test_every_region_status_is_marked(api, page: Page):
    page.goto(f"{api.base_url}/")
    page.evaluate(DRAW, PAGE)
    boxes = page.locator("#page-canvas g.region")
    expect(boxes).to_have_count(5)
    expect(boxes.nth(1)).to_have_class("region label-text status-fallback")
    expect(boxes.nth(2)).to_have_class("region label-table status-failed")
    expect(boxes.nth(2)).to_have_attribute("aria-label", "Region 3: table, not read")
    failed_fill = boxes.nth(2).locator("rect").evaluate("rect => getComputedStyle(rect).fill")
    assert "hatch-failed" in failed_fill   # hatched, not just outlined
    assert boxes.nth(1).locator("rect").evaluate("rect => getComputedStyle(rect).strokeDasharray") != "none"
    box = boxes.nth(0).locator("rect")
    assert [box.get_attribute(name) for name in ("x", "y", "width", "height")] == ["80", "60", "440", "50"]

    items = page.locator("#region-list > li")
    expect(items).to_have_count(5)
    expect(items.nth(0)).to_contain_text("Annual <b>Summary</b>")   # document text stays text
    expect(items.nth(1)).to_contain_text("from the PDF text layer")
    expect(items.nth(1)).to_contain_text("recognition failed twice")
    expect(items.nth(2)).to_contain_text("not read")
    expect(items.nth(2)).to_contain_text("the recogniser timed out")
    expect(items.nth(3)).to_contain_text("A figure: no text to read.")
    expect(items.nth(4)).to_contain_text("footer")
    expect(page.locator("#page-note")).to_have_text(
        "5 regions · 1 from the PDF text layer · 1 not read. 1 region could not be read")
    expect(page.locator("#legend")).to_contain_text("from the PDF text layer")
    expect(page.locator("#legend")).to_contain_text("not read")
    screenshot(page, "08-region-statuses")
