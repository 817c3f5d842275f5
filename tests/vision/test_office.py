"""Office, HTML and EPUB documents: told apart by content, checked before a converter sees them,
and converted (vision/office.py: LibreOffice in its sandbox, MuPDF for HTML and EPUB) into a PDF
whose text layer holds the document's whole text and whose picture is kept for OCR.

The documents are real ones (tests/vision/office_samples.py: python-docx, python-pptx, openpyxl,
LibreOffice's own saves); the text each must keep is the text it was written with.
"""
from __future__ import annotations

import io
import re
import zipfile

import pymupdf
import pytest

import office_samples as samples
from vision.document import Document
from vision.formats import DocumentKind, sniff_kind
from vision.limits import CorruptDocumentError, DocumentTooLargeError, UnsupportedFormatError, VisionLimits
from vision.office import convert_to_pdf
from vision.text_normal import normalise_text

LIMITS = VisionLimits()


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    return samples.make_all(tmp_path_factory.mktemp("office"))


def plain(text: str) -> str:
    """Text as the sentences are compared: ligatures as letters, runs of white space as one space."""
    return re.sub(r"\s+", " ", normalise_text(text)).strip()


@pytest.mark.parametrize("kind", samples.KINDS)
def test_each_kind_converts_to_a_pdf_with_its_whole_text_and_its_picture(kind, documents, tmp_path):
    path = documents[kind]
    # Told by content: the name says nothing here.
    assert sniff_kind(path.read_bytes()[:1024], "upload.bin", source=path) is DocumentKind(kind)
    pdf = convert_to_pdf(path, DocumentKind(kind), tmp_path, LIMITS)
    assert pdf.parent == tmp_path and [p.name for p in tmp_path.iterdir()] == [pdf.name]   # no work files left
    with Document.open_path(pdf, LIMITS) as document:
        assert document.kind is DocumentKind.PDF and document.num_pages >= 1
    with pymupdf.open(pdf) as made:
        text = plain(" ".join(page.get_text() for page in made))
        missing = [sentence for sentence in (samples.TITLE, *samples.SENTENCES) if sentence not in text]
        assert not missing, f"{kind}: the PDF's text layer lacks {missing}; it has {text!r}"
        pictures = [image for page in made for image in page.get_images()]
        assert len(pictures) == 1, f"{kind}: {len(pictures)} pictures in the PDF, not the document's one"


def test_kinds_come_from_content_and_a_pdf_name_on_anything_else_is_refused(documents):
    docx = documents["docx"].read_bytes()
    assert sniff_kind(docx, "report.pdf.docx") is DocumentKind.DOCX
    assert sniff_kind(b"\xef\xbb\xbf  <!DOCTYPE html><html><body>x</body></html>") is DocumentKind.HTML
    assert sniff_kind(b'<?xml version="1.0"?>\n<html xmlns="http://www.w3.org/1999/xhtml"></html>') \
        is DocumentKind.HTML
    assert sniff_kind(b"{\\rtf1\\ansi hello}") is DocumentKind.RTF
    with pytest.raises(UnsupportedFormatError, match="named like a PDF"):
        sniff_kind(docx, "report.pdf")


def test_a_plain_zip_and_an_old_binary_office_file_are_refused_with_what_to_do():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "not a document")
    with pytest.raises(UnsupportedFormatError, match="nor an office document .DOCX"):
        sniff_kind(buffer.getvalue(), "notes.zip")
    with pytest.raises(UnsupportedFormatError, match="old binary Office file.*save it as DOCX"):
        sniff_kind(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504), "letter.doc")


def test_a_damaged_package_is_a_corrupt_document(documents):
    docx = documents["docx"].read_bytes()
    with pytest.raises(CorruptDocumentError, match="damaged ZIP"):
        sniff_kind(docx[: len(docx) // 2], "cut.docx")   # no central directory


def test_a_deflate_bomb_and_a_package_of_too_many_files_are_refused_before_inflating():
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", '<Types><Override ContentType="application/vnd.openxmlformats-'
                         'officedocument.wordprocessingml.document.main+xml"/></Types>')
        package.writestr("word/document.xml", bytes(64 * 1024 * 1024))   # 64 MiB of zeros in ~64 KiB
    with pytest.raises(DocumentTooLargeError, match="ZIP bomb"):
        sniff_kind(bomb.getvalue(), "bomb.docx")

    crowd = io.BytesIO()
    with zipfile.ZipFile(crowd, "w") as package:
        package.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
        for index in range(50):
            package.writestr(f"Pictures/{index}.png", b"x")
    with pytest.raises(DocumentTooLargeError, match="holds 51 files; the limit is 40"):
        sniff_kind(crowd.getvalue(), "crowd.odt", limits=VisionLimits(max_package_entries=40))


def test_without_a_working_sandbox_libreoffice_kinds_are_refused_not_converted_bare(documents, tmp_path, monkeypatch):
    import vision.office

    monkeypatch.setattr(vision.office, "sandbox_works", lambda: False)   # as where bwrap is missing or forbidden
    with pytest.raises(UnsupportedFormatError, match="cannot read DOCX documents .*bubblewrap.*send a PDF"):
        convert_to_pdf(documents["docx"], DocumentKind.DOCX, tmp_path, LIMITS)
    assert list(tmp_path.iterdir()) == []


def test_a_document_that_needs_conversion_is_not_opened_as_it_is(documents):
    with pytest.raises(UnsupportedFormatError, match="read from the PDF they are converted to"):
        Document.open_path(documents["odt"], LIMITS)
