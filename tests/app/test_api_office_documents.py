"""Office and web documents through the REST API: a DOCX (python-docx), a PPTX (python-pptx) and an
HTML page in one job, converted at submit, read by the real worker (the text layer of the PDF
made from each, the picture inside each recognised by Tesseract: service_harness), and the result
holding every sentence of each document's own text and the picture's words. Bad ones are
refused at submit with their reason, and no job is left of them.
"""
from __future__ import annotations

import hashlib
import io
import re
import sys
import zipfile
from pathlib import Path

import pytest

from api_helpers import auth, upload, wait_for_job

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vision"))
import office_samples as samples  # noqa: E402

pytestmark = pytest.mark.slow


def plain(text: str) -> str:
    from vision.text_normal import normalise_text

    return re.sub(r"\s+", " ", normalise_text(text)).strip()


@pytest.fixture(scope="module")
def documents(tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("office-api")
    return {"survey.docx": samples.docx(folder / "survey.docx").read_bytes(),
            "slides.pptx": samples.pptx(folder / "slides.pptx").read_bytes(),
            "page.html": samples.html(folder / "page.html").read_bytes()}


def test_office_documents_are_read_whole_with_their_pictures(client, api_settings, documents):
    response = client.post("/v1/jobs", headers=auth(), files=upload(*documents.items()),
                           data={"formats": "txt,json"})
    assert response.status_code == 202, response.text
    submitted = response.json()
    assert [(f["filename"], f["kind"]) for f in submitted["files"]] == [
        ("survey.docx", "pdf"), ("slides.pptx", "pdf"), ("page.html", "pdf")]   # each read as the PDF made from it
    job = wait_for_job(client, submitted["id"])
    assert job["state"] == "done" and all(p["state"] == "done" for p in job["pages"]), job

    pages = client.get(f"/v1/jobs/{job['id']}/result?format=json", headers=auth()).json()["documents"]
    for file_index, (name, data) in enumerate(documents.items()):
        text = plain(" ".join(region["text"] for page in pages[file_index]["pages"] for region in page["regions"]))
        missing = [sentence for sentence in (samples.TITLE, *samples.SENTENCES) if sentence not in text]
        assert not missing, f"{name}: the result lacks {missing}; it has {text!r}"
        unread = [word for word in samples.PICTURE_WORDS if word not in text.upper()]
        assert not unread, f"{name}: the picture's {unread} were not recognised; the result has {text!r}"
        # The document as sent is kept beside the PDF the job read.
        uploads = Path(api_settings.data_dir) / "uploads" / job["id"]
        kept = uploads / f"{file_index}.{name.rsplit('.', 1)[1]}"
        assert hashlib.sha256(kept.read_bytes()).digest() == hashlib.sha256(data).digest()
        assert (uploads / f"{file_index}.pdf").read_bytes().startswith(b"%PDF-")
        assert pages[file_index]["sha256"] == hashlib.sha256(data).hexdigest()


def _docx_with(document_xml: bytes, base: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(base))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            out.writestr(info.filename, document_xml if info.filename == "word/document.xml" else source.read(info))
    return buffer.getvalue()


def test_bad_office_documents_are_refused_at_submit_with_their_reason(client, api_settings, documents):
    docx = documents["survey.docx"]
    bad = {
        "bomb.docx": (_docx_with(bytes(48 * 1024 * 1024), docx), 413, "document_too_large", "ZIP bomb"),
        "garbage.docx": (_docx_with(b"\x00\xff not XML <<<" * 64, docx), 422, "conversion_failed",
                         "could not be converted to PDF"),
        "cut.docx": (docx[: len(docx) // 2], 422, "corrupt_document", "damaged ZIP package"),
        "letter.doc": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(1024), 415, "unsupported_format", "save it as DOCX"),
    }
    incoming = Path(api_settings.data_dir) / "uploads" / ".incoming"
    jobs_before = client.get("/v1/jobs", headers=auth()).json()["jobs"]
    incoming_before = set(incoming.iterdir())   # the session's other tests share this data directory
    for name, (data, status, code, reason) in bad.items():
        response = client.post("/v1/jobs", headers=auth(), files=upload((name, data)))
        assert response.status_code == status, (name, response.text)
        error = response.json()["error"]
        assert error["code"] == code and reason in error["message"], (name, error)
    assert client.get("/v1/jobs", headers=auth()).json()["jobs"] == jobs_before   # nothing stored for them
    assert set(incoming.iterdir()) == incoming_before, "a refused upload or its conversion left files behind"
