"""The whole path a user takes in the browser, against the real API and worker:
sign in, upload a generated two-page PDF, watch it finish, read the result
beside the page, link regions and text both ways, turn pages, preview the
Markdown, download the JSON, and delete the job. Screenshots go to artifacts/web/.
"""
from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

import ocr_samples as samples
from web_harness import PHONE, page_problems, region_index_with, screenshot, sign_in

pytestmark = pytest.mark.slow

JOB_TIMEOUT_MS = 120_000
SELECTED = re.compile(r"\bselected\b")


def test_upload_watch_read_and_download(api, worker, page: Page, tmp_path):
    pdf_path = tmp_path / "quarterly-report.pdf"
    pdf_path.write_bytes(samples.multi_page_pdf(2))
    first_sentence, second_sentence = samples.page_sentence(0), samples.page_sentence(1)

    page.goto(f"{api.base_url}/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    screenshot(page, "01-sign-in")
    sign_in(page, api.base_url)
    # The limits come from the service (300,000 bytes = 293 KB), not from the page's documented defaults.
    expect(page.locator("#limits")).to_contain_text("293 KB per file")
    expect(page.locator("#limits")).to_contain_text("20 pages per document")

    page.locator("#file-input").set_input_files(str(pdf_path))
    expect(page.locator("#selected-files")).to_contain_text("quarterly-report.pdf")
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#upload-messages")).to_contain_text("quarterly-report.pdf: queued (2 pages)")

    job = page.locator("#job-list > li.job", has_text="quarterly-report.pdf")
    expect(job).to_have_count(1)
    expect(job.locator(".page-chips > li")).to_have_count(2)   # one state per page, before the job ends
    screenshot(page, "02-job-in-progress")
    expect(job).to_have_attribute("data-state", "done", timeout=JOB_TIMEOUT_MS)
    expect(job.locator(".job-count")).to_have_text("2 of 2 pages done")
    expect(job.locator(".page-chips > li.page-done")).to_have_count(2)
    screenshot(page, "03-job-done")

    job.get_by_role("button", name="Open result of quarterly-report.pdf").click()
    result = page.locator("#result")
    expect(result.get_by_role("heading", name="quarterly-report.pdf")).to_be_visible()
    regions = page.locator("#region-list")
    expect(regions).to_contain_text(first_sentence)
    expect(regions).to_contain_text("Quarterly Report")
    expect(page.locator("#page-canvas image.page-image")).to_have_count(1)   # the page image, fetched with the key
    boxes = page.locator("#page-canvas g.region")
    expect(boxes).to_have_count(regions.locator("> li").count())

    # A region on the page selects its text...
    index = region_index_with(page, first_sentence)
    page.locator(f'#page-canvas g.region[data-region="{index}"]').click()
    selected_text = regions.locator("> li.selected")
    expect(selected_text).to_have_count(1)
    expect(selected_text).to_contain_text(first_sentence)
    expect(selected_text).to_be_in_viewport()
    expect(page.locator(f'#page-canvas g.region[data-region="{index}"]')).to_have_class(SELECTED)
    screenshot(page, "04-result-region-selected")
    # ...and a text item selects its region, also from the keyboard.
    title_index = region_index_with(page, "Quarterly Report")
    regions.locator(f'> li[data-region="{title_index}"] button.region-select').focus()
    page.keyboard.press("Enter")
    expect(page.locator("#page-canvas g.region.selected")).to_have_attribute("data-region", title_index)
    expect(regions.locator("> li.selected")).to_contain_text("Quarterly Report")

    page.get_by_role("button", name="Next page").click()
    expect(page.locator("#page-count")).to_have_text("2 of 2")
    expect(regions).to_contain_text(second_sentence)
    expect(regions).not_to_contain_text(first_sentence)
    page.keyboard.press("ArrowLeft")   # keys turn pages too
    expect(page.locator("#page-count")).to_have_text("1 of 2")

    page.get_by_role("tab", name="Markdown").click()
    preview = page.locator("#markdown-preview")
    expect(preview).to_contain_text(second_sentence)
    expect(preview.get_by_role("heading", name="Quarterly Report")).to_have_count(2)   # "## title" on each page
    expect(preview.locator(".md-page-mark")).to_have_text(["Page 1", "Page 2"])
    screenshot(page, "05-markdown-preview")

    with page.expect_download() as download_info:
        page.get_by_role("button", name="JSON (.json)").click()
    download = download_info.value
    assert download.suggested_filename == "quarterly-report.json"
    result_json = json.loads(open(download.path(), encoding="utf-8").read())
    document, = result_json["documents"]
    assert document["filename"] == "quarterly-report.pdf" and document["num_pages"] == 2
    assert [p["page"] for p in document["pages"]] == [1, 2]
    for number, (pdf_page, sentence) in enumerate(zip(document["pages"], (first_sentence, second_sentence)), 1):
        assert pdf_page["state"] == "done"
        assert sentence in " ".join(region["text"] for region in pdf_page["regions"]), f"page {number}"
        assert [region["reading_index"] for region in pdf_page["regions"]] == list(range(len(pdf_page["regions"])))
        assert all(region["status"] in ("ok", "fallback", "failed") for region in pdf_page["regions"])

    page.get_by_role("tab", name="Page and text").click()
    page.set_viewport_size(PHONE)
    screenshot(page, "06-result-phone", full_page=True)
    page.set_viewport_size({"width": 1440, "height": 900})

    job.get_by_role("button", name="Delete quarterly-report.pdf").click()
    job.get_by_role("button", name="Confirm: delete quarterly-report.pdf and its results").click()
    expect(job).to_have_count(0)
    expect(result).to_be_hidden()   # the open result went with its job
    assert page_problems(page) == []


def test_the_text_layer_choice_goes_with_the_job(api, page: Page, tmp_path):
    import httpx

    from web_harness import KEY

    pdf_path = tmp_path / "text-layer-choice.pdf"
    pdf_path.write_bytes(samples.multi_page_pdf(1))
    sign_in(page, api.base_url)
    page.locator("details.options > summary").click()
    choice = page.get_by_label("Text layer")
    expect(choice).to_have_value("auto")   # the service's default, from /v1/limits
    expect(choice.locator("option")).to_have_text(["Use it when it passes checks (auto)", "Always recognise (never)",
                                                   "Recognise, check with it (verify)"])
    choice.select_option("verify")
    page.locator("#file-input").set_input_files(str(pdf_path))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#upload-messages")).to_contain_text("text-layer-choice.pdf: queued (1 page)")
    headers = {"Authorization": f"Bearer {KEY}"}
    [job] = [j for j in httpx.get(f"{api.base_url}/v1/jobs", headers=headers, timeout=10).json()["jobs"]
             if j["files"][0]["filename"] == "text-layer-choice.pdf"]
    assert job["text_layer"] == "verify"
    httpx.delete(f"{api.base_url}/v1/jobs/{job['id']}", headers=headers, timeout=10)   # no worker needs to run it
    assert page_problems(page) == []


def test_the_languages_choice_goes_with_the_job_and_a_bad_one_is_explained(api, page: Page, tmp_path):
    import httpx

    from web_harness import KEY

    pdf_path = tmp_path / "languages-choice.pdf"
    pdf_path.write_bytes(samples.multi_page_pdf(1))
    sign_in(page, api.base_url)
    page.locator("details.options > summary").click()
    languages = page.get_by_role("textbox", name="Languages")
    expect(languages).to_have_value("")   # empty: detect
    languages.fill("klingon")
    page.locator("#file-input").set_input_files(str(pdf_path))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#upload-messages")).to_contain_text("'klingon' is not a Tesseract language code")
    languages.fill("eng")   # the refused file is still chosen
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#upload-messages")).to_contain_text("languages-choice.pdf: queued (1 page)")
    headers = {"Authorization": f"Bearer {KEY}"}
    [job] = [j for j in httpx.get(f"{api.base_url}/v1/jobs", headers=headers, timeout=10).json()["jobs"]
             if j["files"][0]["filename"] == "languages-choice.pdf"]
    assert job["languages"] == "eng"
    httpx.delete(f"{api.base_url}/v1/jobs/{job['id']}", headers=headers, timeout=10)
    assert page_problems(page) == []
