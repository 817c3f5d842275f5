"""The web page takes office and web documents: its file picker offers them (from /v1/limits), a
DOCX made by python-docx is listed without a warning, and uploading it queues a job whose page
count is the converted PDF's (the conversion runs at submit, in the real API)."""
from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from web_harness import KEY, page_problems, sign_in

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vision"))
import office_samples as samples  # noqa: E402

pytestmark = pytest.mark.slow


def test_an_office_document_is_offered_listed_and_queued(api, page: Page, tmp_path):
    docx = samples.docx(tmp_path / "harbour-survey.docx")
    sign_in(page, api.base_url)
    accept = page.locator("#file-input").get_attribute("accept").split(",")
    assert {".docx", ".odt", ".rtf", ".pptx", ".odp", ".xlsx", ".ods", ".html", ".epub", ".pdf"} <= set(accept)
    expect(page.locator("#limits")).to_contain_text("DOCX")

    page.locator("#file-input").set_input_files(str(docx))
    expect(page.locator("#selected-files")).to_contain_text("harbour-survey.docx")
    expect(page.locator("#selected-files .file-warning")).to_have_count(0)
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#upload-messages")).to_contain_text("harbour-survey.docx: queued (1 page)", timeout=120_000)

    headers = {"Authorization": f"Bearer {KEY}"}
    [job] = [j for j in httpx.get(f"{api.base_url}/v1/jobs", headers=headers, timeout=10).json()["jobs"]
             if j["files"][0]["filename"] == "harbour-survey.docx"]
    httpx.delete(f"{api.base_url}/v1/jobs/{job['id']}", headers=headers, timeout=10)   # no worker needs to run it
    assert page_problems(page) == []
