"""The page with the keyboard alone, in the real browser against the real API and worker: sign
in, pick a file and upload it, open the finished job from the list, switch result views with the
arrow keys, select a region from its text and from the page, turn pages, filter to what needs a
look, scroll a code block, close the result and delete the job. Every control reached with Tab
shows where the focus is."""
from __future__ import annotations

import pytest
from playwright.sync_api import Locator, Page, expect

import ocr_samples as samples
from page_checks import axe_violations
from web_harness import KEY, page_problems, screenshot

pytestmark = pytest.mark.slow

JOB_TIMEOUT_MS = 120_000


def tab_to(page: Page, target: Locator, max_presses: int = 60, backwards: bool = False) -> None:
    """Presses Tab (or Shift+Tab) until `target` has the focus; fails if it is never reached."""
    for _ in range(max_presses):
        if target.evaluate("node => node === document.activeElement"):
            # A ring around the control; a region on the page shows focus by a thicker box instead.
            shown = target.evaluate("""node => getComputedStyle(node).outlineStyle !== 'none' ||
              (node.matches('g.region') && getComputedStyle(node.querySelector('.region-box')).strokeWidth === '4px')""")
            assert shown, f"{target} shows no focus"
            return
        page.keyboard.press("Shift+Tab" if backwards else "Tab")
    raise AssertionError(f"{target} was not reached with {max_presses} presses of Tab")


def test_upload_jobs_and_result_with_the_keyboard_only(api, worker, page: Page, tmp_path):
    pdf_path = tmp_path / "keyboard-report.pdf"
    pdf_path.write_bytes(samples.multi_page_pdf(2))

    # Listening from the start: Playwright intercepts the file dialog only once a listener is
    # registered, and registering it is not awaited, so a key pressed right after could beat it.
    choosers = []
    page.on("filechooser", lambda chooser: choosers.append(chooser))
    page.goto(f"{api.base_url}/")
    key_field = page.get_by_label("API key")
    expect(key_field).to_be_focused()
    page.keyboard.type(KEY)
    page.keyboard.press("Enter")
    choose = page.get_by_role("button", name="Choose files…")
    expect(choose).to_be_focused()   # signing in puts the focus where work starts

    page.keyboard.press("Enter")
    for _ in range(50):
        if choosers:
            break
        page.wait_for_timeout(100)
    assert choosers, "Enter on 'Choose files…' opened no file dialog"
    choosers[0].set_files(str(pdf_path))
    expect(page.locator("#selected-files")).to_contain_text("keyboard-report.pdf")
    tab_to(page, page.get_by_role("button", name="Upload"))
    page.keyboard.press("Enter")
    expect(page.locator("#upload-messages")).to_contain_text("keyboard-report.pdf: queued (2 pages)")

    job = page.locator("#job-list > li.job", has_text="keyboard-report.pdf")
    expect(job).to_have_attribute("data-state", "done", timeout=JOB_TIMEOUT_MS)
    tab_to(page, job.get_by_role("button", name="Open result of keyboard-report.pdf"))
    page.keyboard.press("Enter")
    title = page.locator("#result-title")
    expect(title).to_have_text("keyboard-report.pdf")
    expect(title).to_be_focused()

    # Result views: Tab reaches the selected tab, the arrows move between tabs.
    page_tab = page.get_by_role("tab", name="Page and text")
    tab_to(page, page_tab)
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("tab", name="Markdown")).to_be_focused()
    expect(page.locator("#markdown-panel")).to_be_visible()
    expect(page.locator("#markdown-preview")).to_contain_text(samples.page_sentence(0))
    page.keyboard.press("ArrowLeft")
    expect(page_tab).to_have_attribute("aria-selected", "true")
    expect(page.locator("#page-panel")).to_be_visible()

    # A region from its text, then one from the page drawing.
    text_button = page.locator("#region-list > li", has_text=samples.page_sentence(0)).locator("button.region-select")
    tab_to(page, text_button)
    page.keyboard.press("Enter")
    index = text_button.evaluate("button => button.closest('li').dataset.region")
    expect(page.locator("#page-canvas g.region.selected")).to_have_attribute("data-region", index)
    expect(text_button).to_have_attribute("aria-pressed", "true")
    box = page.locator("#page-canvas g.region").first
    tab_to(page, box, backwards=True)
    page.keyboard.press("Enter")
    expect(box).to_have_attribute("aria-pressed", "true")
    screenshot(page, "40-keyboard-region-selected")

    # Pages turn with the arrows; the filter is a checkbox like any other.
    page.keyboard.press("ArrowRight")
    expect(page.locator("#page-count")).to_have_text("2 of 2")
    expect(page.locator("#region-list")).to_contain_text(samples.page_sentence(1))
    only = page.get_by_label("Only what needs a look")
    tab_to(page, only)
    page.keyboard.press("Space")
    expect(only).to_be_checked()
    expect(page.locator("#needs-look-count")).to_have_text("Nothing on this page needs a look.")
    page.keyboard.press("Space")
    expect(page.locator("#region-list > li:not(.filtered-out)").first).to_be_visible()
    assert axe_violations(page) == []

    tab_to(page, page.get_by_role("button", name="Close"), backwards=True)
    page.keyboard.press("Enter")
    expect(page.locator("#result")).to_be_hidden()
    delete = job.get_by_role("button", name="Delete keyboard-report.pdf")
    tab_to(page, delete)
    page.keyboard.press("Enter")
    confirm = job.get_by_role("button", name="Confirm: delete keyboard-report.pdf and its results")
    expect(confirm).to_be_focused()
    page.keyboard.press("Enter")
    expect(job).to_have_count(0)
    expect(page.get_by_role("button", name="Refresh")).to_be_focused()   # the focus is not lost with the job
    assert page_problems(page) == []


def test_the_skip_link_comes_first(api, page: Page):
    page.goto(f"{api.base_url}/")
    expect(page.get_by_label("API key")).to_be_focused()
    page.keyboard.press("Shift+Tab")   # the one control before the form
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    assert skip.evaluate("a => a.getBoundingClientRect().left") >= 0   # shown while it has the focus
    page.keyboard.press("Enter")
    expect(page.locator("#main")).to_be_focused()
