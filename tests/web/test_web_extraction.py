"""Schema extraction from the page: the registered schemas are offered as a
job option, and the job's extraction outcome is shown in words beside its
result. The worker's extraction endpoint is a closed port (see conftest), so
the outcome here is a failure with its reason; the OCR result is unaffected."""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

import ocr_samples as samples
from page_checks import axe_violations
from web_harness import screenshot, sign_in

pytestmark = pytest.mark.slow


def test_schema_option_and_extraction_outcome(api, worker, page: Page, tmp_path):
    pdf_path = tmp_path / "invoice-scan.pdf"
    pdf_path.write_bytes(samples.multi_page_pdf(1))
    sign_in(page, api.base_url)
    page.get_by_text("Job options").click()
    schema = page.get_by_label("Extract fields")
    expect(schema.locator("option")).to_contain_text(["No extraction", "invoice — Invoice", "receipt"])
    schema.select_option("invoice")
    expect(page.locator("#schema-hint")).to_contain_text("Fields: invoice_number")
    page.locator("#file-input").set_input_files(str(pdf_path))
    page.get_by_role("button", name="Upload").click()

    job = page.locator("#job-list > li.job", has_text="invoice-scan.pdf")
    expect(job.locator(".job-schema")).to_contain_text("Extracts fields with invoice")
    expect(job).to_have_attribute("data-state", "done", timeout=120_000)
    expect(job.locator(".job-schema")).to_have_text("Extracts fields with invoice (failed)")
    job.get_by_role("button", name="Open result of invoice-scan.pdf").click()
    expect(page.locator("#region-list")).to_contain_text(samples.page_sentence(0))   # OCR result unaffected

    page.get_by_role("tab", name="Extracted fields").click()
    state = page.locator("#extraction-state")
    expect(state).to_contain_text("Schema invoice: failed — invoice-scan.pdf: ")
    expect(page.locator(".extraction-document")).to_contain_text("Not extracted: ")
    screenshot(page, "07-extraction-failed")
    assert axe_violations(page) == []   # the one result view the layout tests do not open
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Extracted fields (.json)").click()
    assert download_info.value.suggested_filename == "invoice-scan.extraction.json"
    extraction = json.loads(open(download_info.value.path(), encoding="utf-8").read())
    assert extraction["state"] == "failed" and extraction["documents"][0]["data"] is None
