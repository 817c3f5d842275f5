"""The page fits at a phone's, a laptop's and a wide screen's width (390, 1280, 1920 px): in the
real browser, every view is measured box by box (tests/web/page_checks.py: nothing wider than its
container, nothing cut off, the page never scrolls sideways) and checked with axe-core (no serious
or critical violation), and a screenshot of each is kept (artifacts/web/layout-WIDTH-VIEW.png).

Views: sign-in; the workspace with "Job options" open, a file picked and a finished job listed;
a real result (page and text, Markdown); the fabricated result with every trust state
(tests/web/fabricated_result.py) in the page view, filtered, and in the Markdown view."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

import fabricated_result as fabricated
import ocr_samples as samples
from page_checks import axe_violations, layout_problems
from web_harness import KEY, assert_web_libraries, delete_job, finished_job, page_problems, screenshot

pytestmark = pytest.mark.slow

WIDTHS = {"phone": 390, "laptop": 1280, "wide": 1920}


@pytest.fixture(scope="module")
def listed_job(api, worker) -> Iterator[dict]:
    job = finished_job(api.base_url, "layout-report.pdf", samples.multi_page_pdf(2))
    yield job
    delete_job(api.base_url, job["id"])


def check_view(page: Page, width_name: str, view: str) -> list[str]:
    """Measures, screenshots and axe-checks what the page shows; returns the problems found."""
    page.wait_for_timeout(150)   # let the layout settle after the last change
    screenshot(page, f"layout-{WIDTHS[width_name]}-{view}", full_page=True)
    return [f"{view}: {problem}" for problem in layout_problems(page)] + \
           [f"{view}: axe: {violation}" for violation in axe_violations(page)]


@pytest.mark.parametrize("width_name", list(WIDTHS))
def test_every_view_fits_and_passes_axe(api, listed_job, page: Page, width_name: str, tmp_path):
    assert_web_libraries()
    page.set_viewport_size({"width": WIDTHS[width_name], "height": 900})
    job_id = fabricated.serve_fabricated_job(page)
    problems: list[str] = []

    page.goto(f"{api.base_url}/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    problems += check_view(page, width_name, "sign-in")

    page.get_by_label("API key").fill(KEY)
    page.get_by_role("button", name="Sign in").click()
    job = page.locator("#job-list > li.job", has_text="layout-report.pdf")
    expect(job).to_have_attribute("data-state", "done")
    page.get_by_text("Job options").click()
    expect(page.get_by_label("Text layer")).to_be_visible()
    picked = tmp_path / "a-document-with-a-rather-long-file-name-that-must-wrap-somewhere.pdf"
    picked.write_bytes(samples.multi_page_pdf(1))
    page.locator("#file-input").set_input_files(str(picked))
    page.get_by_label("Text layer").select_option("verify")   # the longest choice
    problems += check_view(page, width_name, "workspace-options")
    page.get_by_label("Text layer").select_option("auto")

    job.get_by_role("button", name="Open result of layout-report.pdf").click()
    expect(page.locator("#page-canvas image.page-image")).to_have_count(1)
    problems += check_view(page, width_name, "result-page")
    page.get_by_role("tab", name="Markdown").click()
    expect(page.locator("#markdown-preview .md-page")).to_have_count(2)
    problems += check_view(page, width_name, "result-markdown")

    page.goto(f"{api.base_url}/#job={job_id}")
    page.reload()   # the saved key signs in again and opens the job the address names
    expect(page.locator("#result-title")).to_have_text(fabricated.FILENAME)
    expect(page.locator("#page-canvas image.page-image")).to_have_count(1)
    problems += check_view(page, width_name, "trust-page")
    page.get_by_label("Only what needs a look").check()
    problems += check_view(page, width_name, "trust-filtered")
    page.get_by_role("tab", name="Markdown").click()
    expect(page.locator("#markdown-preview .md-math[data-math=display] .katex")).to_have_count(1)
    problems += check_view(page, width_name, "trust-markdown")

    assert problems == [], "\n".join(problems)
    assert page_problems(page) == []
