"""hOCR and ALTO from the web page, in the real browser against the real API and worker: both are
offered unticked (the service's default formats are ticked), a job that asks for them gets them,
and the result's download buttons save the files under the document's name."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from playwright.sync_api import Page, expect

import ocr_samples as samples
from web_harness import page_problems, sign_in

pytestmark = pytest.mark.slow

JOB_TIMEOUT_MS = 120_000


def test_hocr_and_alto_are_asked_for_and_downloaded(api, worker, page: Page, tmp_path):
    pdf_path = tmp_path / "archive-copy.pdf"
    pdf_path.write_bytes(samples.multi_page_pdf(1))
    sign_in(page, api.base_url)
    page.locator("details.options > summary").click()
    formats = page.locator("#option-formats input[name=formats]")
    expect(formats).to_have_count(6)
    for name in ("Markdown", "Text", "Searchable PDF"):
        expect(page.get_by_role("checkbox", name=name, exact=True)).to_be_checked()
    for name in ("hOCR", "ALTO XML"):
        expect(page.get_by_role("checkbox", name=name, exact=True)).not_to_be_checked()
        page.get_by_role("checkbox", name=name, exact=True).check()
    page.get_by_role("checkbox", name="Searchable PDF", exact=True).uncheck()

    page.locator("#file-input").set_input_files(str(pdf_path))
    page.get_by_role("button", name="Upload").click()
    job = page.locator("#job-list > li.job", has_text="archive-copy.pdf")
    expect(job).to_have_attribute("data-state", "done", timeout=JOB_TIMEOUT_MS)
    job.get_by_role("button", name="Open result of archive-copy.pdf").click()

    expect(page.get_by_role("button", name="Searchable PDF (.pdf)")).to_be_disabled()
    with page.expect_download() as download_info:
        page.get_by_role("button", name="hOCR (.hocr)").click()
    assert download_info.value.suggested_filename == "archive-copy.hocr"
    hocr = ET.parse(download_info.value.path()).getroot()
    words = [span.text for span in hocr.iter("{http://www.w3.org/1999/xhtml}span") if span.get("class") == "ocrx_word"]
    assert words[:2] == ["Quarterly", "Report"] and samples.page_sentence(0).split()[0] in words

    with page.expect_download() as download_info:
        page.get_by_role("button", name="ALTO XML (.alto)").click()
    assert download_info.value.suggested_filename == "archive-copy.alto"
    alto = ET.parse(download_info.value.path()).getroot()
    assert alto.tag == "{http://www.loc.gov/standards/alto/ns-v4#}alto"
    assert page_problems(page) == []
