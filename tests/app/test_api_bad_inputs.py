"""Bad uploads and options get a clear 4xx before any work, nothing is stored
for them, and the service keeps serving good jobs afterwards."""
from __future__ import annotations

import pytest

import ocr_samples as samples
from api_helpers import auth, upload, wait_for_job

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("name", "data", "status", "code", "words"), [
    ("scan.pdf", samples.scanned_png(), 415, "not_a_pdf", "named like a PDF but its content is PNG"),
    ("notes.pdf", b"just some text, not a PDF at all", 415, "not_a_pdf", "not a PDF"),
    ("locked.pdf", samples.encrypted_pdf(), 422, "encrypted_pdf", "password-protected"),
    ("cut.pdf", samples.truncated_pdf(), 422, "corrupt_document", "truncated or damaged"),
    ("empty.pdf", samples.zero_page_pdf(), 422, "empty_document", "has no pages"),
    ("blank.pdf", b"", 422, "empty_document", "empty"),
    ("tool.exe", b"MZ\x90\x00 executable", 415, "unsupported_format", "not a PDF, PNG, JPEG or TIFF"),
    ("big.pdf", b"%PDF-1.7\n" + b"0" * 2_000_001, 413, "document_too_large", "limit"),
])
def test_a_bad_upload_is_refused_with_a_clear_reason(client, name, data, status, code, words):
    before = len(client.get("/v1/jobs", headers=auth()).json()["jobs"])
    answer = client.post("/v1/jobs", headers=auth(), files=upload((name, data)))
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["code"] == code and words in error["message"]
    assert "Traceback" not in answer.text
    assert len(client.get("/v1/jobs", headers=auth()).json()["jobs"]) == before, "nothing was stored"


@pytest.mark.parametrize(("fields", "code", "words"), [
    ({"pages": "3-9"}, "invalid_pages", "out of range"),
    ({"pages": "two"}, "invalid_pages", "cannot read page selection"),
    ({"formats": "md,docx"}, "invalid_option", "unknown format 'docx'"),
    ({"dpi": "9000"}, "invalid_option", "dpi must be"),
    ({"dpi": "high"}, "invalid_option", "dpi must be a number"),
    ({"colour": "red"}, "invalid_option", "unknown option 'colour'"),
    ({"text_layer": "garbage"}, "invalid_option", "unknown text_layer 'garbage'; choose auto"),
    ({"keep_furniture": "maybe"}, "invalid_option", "keep_furniture must be true or false"),
    ({"languages": "klingon"}, "invalid_option", "'klingon' is not a Tesseract language code"),
    ({"languages": "eng+xyz"}, "invalid_option", "no language pack for xyz on this server"),
])
def test_a_bad_option_is_refused(client, fields, code, words):
    answer = client.post("/v1/jobs", headers=auth(), files=upload(("report.pdf", samples.multi_page_pdf(2))),
                         data=fields)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == code and words in answer.json()["error"]["message"]


def test_too_many_pages_files_or_bytes_are_refused_before_reading(client, api_settings):
    pages = client.post("/v1/jobs", headers=auth(), files=upload(("long.pdf", samples.multi_page_pdf(21))))
    assert pages.status_code == 413 and "21 pages; the limit is 20" in pages.json()["error"]["message"]
    files = client.post("/v1/jobs", headers=auth(), files=upload(*[(f"{i}.pdf", b"%PDF") for i in range(21)]))
    assert files.status_code == 413 and files.json()["error"]["code"] == "too_many_files"
    huge = api_settings.max_upload_bytes * api_settings.max_files_per_job + 2 * 1024 * 1024
    declared = client.post("/v1/jobs", headers={**auth(), "Content-Length": str(huge),
                                                "Content-Type": "multipart/form-data; boundary=x"}, content=b"")
    assert declared.status_code == 413 and declared.json()["error"]["code"] == "request_too_large"
    nothing = client.post("/v1/jobs", headers=auth(), data={"pages": "1"})
    assert nothing.status_code == 400 and "no file" in nothing.json()["error"]["message"]


def test_unknown_jobs_and_formats(client):
    assert client.get("/v1/jobs/0123456789abcdef0123456789abcdef", headers=auth()).status_code == 404
    assert client.get("/v1/jobs/../../etc/passwd", headers=auth()).status_code == 404
    assert client.get("/v1/jobs/not-an-id/result?format=exe", headers=auth()).status_code == 400


def test_the_service_keeps_working_after_bad_inputs(client):
    for name, data in (("a.pdf", samples.encrypted_pdf()), ("b.pdf", samples.truncated_pdf())):
        assert client.post("/v1/jobs", headers=auth(), files=upload((name, data))).status_code == 422
    answer = client.post("/v1/jobs", headers=auth(), files=upload(("scan.png", samples.scanned_png())))
    assert answer.status_code == 202, answer.text
    job = wait_for_job(client, answer.json()["id"])
    assert job["state"] == "done"
    assert samples.page_sentence(0) in client.get(f"/v1/jobs/{job['id']}/result?format=txt", headers=auth()).text


def test_a_job_says_the_languages_it_was_read_in(client):
    """The option as the job keeps it: named packs normalised, detect by default."""
    named = client.post("/v1/jobs", headers=auth(), files=upload(("report.pdf", samples.multi_page_pdf(1))),
                        data={"languages": " ENG, eng "})
    assert named.status_code == 202, named.text
    assert named.json()["languages"] == "eng"
    default = client.post("/v1/jobs", headers=auth(), files=upload(("report.pdf", samples.multi_page_pdf(1))))
    assert default.json()["languages"] == "detect"
