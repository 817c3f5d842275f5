"""Signing out leaves nothing of the user behind for the next one on the same tab: no file
picked but not sent (ready to upload under the new key), no file name, upload message, option,
job, open result or live-region text. Real API, real worker, real Chromium."""
from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

import ocr_samples as samples
from web_harness import KEY, OTHER_KEY, page_problems, sign_in

pytestmark = pytest.mark.slow

JOB_TIMEOUT_MS = 120_000


@pytest.fixture()
def delete_jobs_after(api):
    """The API is shared by the module's tests, which expect the first key to start with no jobs."""
    yield
    headers = {"Authorization": f"Bearer {KEY}"}
    for job in httpx.get(f"{api.base_url}/v1/jobs", headers=headers, timeout=10).json()["jobs"]:
        httpx.delete(f"{api.base_url}/v1/jobs/{job['id']}/record", headers=headers, timeout=10)


def test_sign_out_resets_everything_user_specific(api, worker, page: Page, tmp_path, delete_jobs_after):
    sent = tmp_path / "alice-payroll.pdf"
    sent.write_bytes(samples.multi_page_pdf(1))
    picked = tmp_path / "alice-medical.pdf"
    picked.write_bytes(samples.multi_page_pdf(1))

    sign_in(page, api.base_url)
    page.locator("#file-input").set_input_files(str(sent))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#upload-messages")).to_contain_text("alice-payroll.pdf: queued")
    job = page.locator("#job-list > li.job", has_text="alice-payroll.pdf")
    expect(job).to_have_attribute("data-state", "done", timeout=JOB_TIMEOUT_MS)
    job.get_by_role("button", name="Open result of alice-payroll.pdf").click()
    expect(page.locator("#result").get_by_role("heading", name="alice-payroll.pdf")).to_be_visible()
    expect(page.locator("#region-list")).to_contain_text(samples.page_sentence(0))
    # A second file picked, and options typed, but not uploaded.
    page.locator("#file-input").set_input_files(str(picked))
    expect(page.locator("#selected-files")).to_contain_text("alice-medical.pdf")
    page.get_by_text("Job options").click()
    page.locator("#option-pages").fill("1")
    page.locator("#option-one-job").check()
    page.evaluate("document.getElementById('announcer').textContent = 'alice-payroll.pdf: done'")

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    # On the same page, as the next person at this tab would: no reload between the two users.
    page.get_by_label("API key").fill(OTHER_KEY)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#workspace")).to_be_visible()
    expect(page.locator("#session-label")).to_contain_text(OTHER_KEY[-4:])
    expect(page.locator("#jobs-empty")).to_be_visible()   # the other key's list has loaded, and is empty

    expect(page.locator("#selected-files > li")).to_have_count(0)
    expect(page.get_by_role("button", name="Upload")).to_be_disabled()
    expect(page.locator("#upload-messages")).to_be_hidden()
    expect(page.locator("#upload-messages")).to_be_empty()
    expect(page.locator("#option-pages")).to_have_value("")
    expect(page.locator("#option-one-job")).not_to_be_checked()
    expect(page.locator("#job-list > li")).to_have_count(0)
    expect(page.locator("#result")).to_be_hidden()
    expect(page.locator("details.options")).not_to_have_attribute("open", "")
    assert page.locator("#file-input").evaluate("input => input.files.length") == 0
    html = page.content()
    for trace in ("alice-payroll", "alice-medical", samples.page_sentence(0)):
        assert trace not in html, f"{trace!r} is still in the page after signing out"
    assert page.locator("#announcer").text_content() == ""
    assert page_problems(page) == []
