"""Refusals the page must put into words, against the real API: a wrong key,
an oversized file and a non-PDF named .pdf (each with the service's own
message), a key revoked mid-session; and a job cancelled from the list."""
from __future__ import annotations

import pymupdf
import pytest
from playwright.sync_api import Page, expect

import ocr_samples as samples
from web_harness import UPLOAD_CAP_BYTES, page_problems, screenshot, sign_in

pytestmark = pytest.mark.slow


def noise_pdf(min_bytes: int) -> bytes:
    """A one-page PDF holding an incompressible image, so it is larger than `min_bytes`."""
    import random

    side = int((min_bytes / 3) ** 0.5) + 16
    pixels = random.Random(7).randbytes(side * side * 3)
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, side, side, pixels, False)
    doc = pymupdf.open()
    page = doc.new_page(width=samples.PAGE_W, height=samples.PAGE_H)
    page.insert_image(page.rect, pixmap=pixmap)
    data = doc.tobytes(deflate=False)
    assert len(data) > min_bytes
    return data


def test_wrong_key_is_refused_in_words(api, page: Page):
    page.goto(f"{api.base_url}/")
    page.get_by_label("API key").fill("not-a-key")
    page.get_by_label("API key").press("Enter")   # the form works from the keyboard
    error = page.locator("#sign-in-error")
    expect(error).to_have_text("That API key was not accepted: unknown API key")
    expect(page.locator("#workspace")).to_be_hidden()
    expect(page.get_by_label("API key")).to_be_focused()
    assert page.evaluate("sessionStorage.getItem('ocrserve.apiKey')") is None
    screenshot(page, "10-wrong-key")

    page.get_by_label("API key").fill("")
    page.get_by_role("button", name="Sign in").click()
    expect(error).to_have_text("An API key is required: an API key is required: send 'Authorization: Bearer KEY'")


def test_oversized_and_mislabelled_files_show_the_service_messages(api, page: Page, tmp_path):
    big = tmp_path / "big-scan.pdf"
    big.write_bytes(noise_pdf(UPLOAD_CAP_BYTES + 50_000))
    fake = tmp_path / "notes.pdf"
    fake.write_bytes(samples.scanned_png())
    sign_in(page, api.base_url)

    page.locator("#file-input").set_input_files([str(big), str(fake)])
    files = page.locator("#selected-files")
    expect(files.locator("li")).to_have_count(2)
    # Shown before sending, from the service's limits; the service still decides.
    expect(files.locator("li", has_text="big-scan.pdf")).to_contain_text("Larger than the 293 KB limit")
    page.get_by_role("button", name="Upload 2 files").click()

    messages = page.locator("#upload-messages")
    expect(messages.get_by_role("alert")).to_have_count(2)
    expect(messages).to_contain_text(
        f"big-scan.pdf was refused: big-scan.pdf is larger than the {UPLOAD_CAP_BYTES:,}-byte limit")
    expect(messages).to_contain_text("notes.pdf was refused: 'notes.pdf' is named like a PDF but its content is PNG")
    expect(files.locator("li")).to_have_count(2)   # refused files stay, to be removed or fixed
    screenshot(page, "11-upload-refused")
    expect(page.locator("#job-list > li")).to_have_count(0)
    assert page_problems(page) == []


def test_cancel_from_the_list_then_delete(api, page: Page, tmp_path):
    long_pdf = tmp_path / "long-report.pdf"
    long_pdf.write_bytes(samples.multi_page_pdf(8))
    sign_in(page, api.base_url)
    page.locator("#file-input").set_input_files(str(long_pdf))
    page.get_by_role("button", name="Upload").click()
    job = page.locator("#job-list > li.job", has_text="long-report.pdf")
    job.get_by_role("button", name="Cancel long-report.pdf").click()
    expect(job).to_have_attribute("data-state", "cancelled")
    expect(job.locator(".page-chips > li")).to_have_count(8)
    expect(job.locator(".page-chips > li.page-cancelled").first).to_be_visible()
    expect(job.get_by_role("button", name="Open result of long-report.pdf")).to_be_hidden()
    screenshot(page, "12-job-cancelled")
    job.get_by_role("button", name="Delete long-report.pdf").click()
    job.get_by_role("button", name="Confirm: delete long-report.pdf and its results").click()
    expect(job).to_have_count(0)


def test_a_key_revoked_mid_session_signs_out_with_a_reason(api, service_data_dir, page: Page):
    from app.api_keys import add_key, remove_key

    keys_file = service_data_dir / "api-keys"   # the API's default keys file, re-read when it changes
    key = add_key(keys_file, "web-revoked")
    sign_in(page, api.base_url, key)
    expect(page.locator("#session-label")).to_have_text(f"Signed in with key …{key[-4:]}")
    assert remove_key(keys_file, "web-revoked")
    # The next poll of the jobs list is refused; the page signs out and says why.
    expect(page.locator("#sign-in-error")).to_have_text(
        "Signed out: the service refused the API key (unknown API key).", timeout=15_000)
    expect(page.locator("#workspace")).to_be_hidden()
    assert page.evaluate("sessionStorage.getItem('ocrserve.apiKey')") is None
    page.reload()   # nothing kept: the sign-in form again
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
