"""What kind of file an upload is, decided by its content — never by its name: magic bytes,
and for ZIP packages (OOXML, OpenDocument, EPUB) the entries that say what they hold
(`mimetype`, `[Content_Types].xml`), read after the package passed its caps (vision/packages.py).

The file name only adds a refusal: a file called `*.pdf` whose bytes are not a
PDF is refused as such, so a renamed image or executable cannot slip into the
PDF path. Any other mismatch between name and content (a JPEG saved as `.png`,
common with phones and scanners) is resolved in favour of the content.
"""
from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from vision.limits import NotAPDFError, UnsupportedFormatError, VisionLimits
from vision.packages import ZIP_MAGIC, read_package

# Acrobat accepts the header anywhere in the first 1024 bytes; so do we.
PDF_HEADER_WINDOW = 1024


class DocumentKind(StrEnum):
    PDF = "pdf"
    PNG = "png"
    JPEG = "jpeg"
    TIFF = "tiff"
    # Read as the PDF their converter makes (vision/office.py).
    DOCX = "docx"
    ODT = "odt"
    RTF = "rtf"
    PPTX = "pptx"
    ODP = "odp"
    XLSX = "xlsx"
    ODS = "ods"
    HTML = "html"
    EPUB = "epub"

    @property
    def is_converted(self) -> bool:
        """Read as a PDF made from it (office, HTML, EPUB), not opened as it is."""
        return self not in (DocumentKind.PDF, DocumentKind.PNG, DocumentKind.JPEG, DocumentKind.TIFF)

    @property
    def pillow_format(self) -> str:
        """The Pillow plugin that decodes this kind (PDFs go to PyMuPDF instead)."""
        assert self in (DocumentKind.PNG, DocumentKind.JPEG, DocumentKind.TIFF)
        return {"png": "PNG", "jpeg": "JPEG", "tiff": "TIFF"}[self.value]


_IMAGE_MAGIC: tuple[tuple[bytes, DocumentKind], ...] = (
    (b"\x89PNG\r\n\x1a\n", DocumentKind.PNG),
    (b"\xff\xd8\xff", DocumentKind.JPEG),
    (b"II*\x00", DocumentKind.TIFF),   # little-endian TIFF
    (b"MM\x00*", DocumentKind.TIFF),   # big-endian TIFF
    (b"II+\x00", DocumentKind.TIFF),   # little-endian BigTIFF
    (b"MM\x00+", DocumentKind.TIFF),   # big-endian BigTIFF
)

# What each package says it holds; the macro-enabled OOXML variants are read too (LibreOffice never
# runs their macros: vision/office.py).
_OPENDOCUMENT_TYPES = {
    "application/vnd.oasis.opendocument.text": DocumentKind.ODT,
    "application/vnd.oasis.opendocument.presentation": DocumentKind.ODP,
    "application/vnd.oasis.opendocument.spreadsheet": DocumentKind.ODS,
    "application/epub+zip": DocumentKind.EPUB,
}
_OOXML_MAIN_PARTS = (
    ("wordprocessingml.document.main+xml", DocumentKind.DOCX),
    ("ms-word.document.macroEnabled.main+xml", DocumentKind.DOCX),
    ("presentationml.presentation.main+xml", DocumentKind.PPTX),
    ("ms-powerpoint.presentation.macroEnabled.main+xml", DocumentKind.PPTX),
    ("spreadsheetml.sheet.main+xml", DocumentKind.XLSX),
    ("ms-excel.sheet.macroEnabled.main+xml", DocumentKind.XLSX),
)
# Old binary Office files (.doc, .xls, .ppt) and password-protected OOXML are OLE compound files.
_COMPOUND_FILE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_HTML_STARTS = (b"<!doctype html", b"<html")

SUPPORTED_DESCRIPTION = ("PDF, PNG, JPEG or TIFF file, nor an office document (DOCX, ODT, RTF, PPTX, ODP, XLSX, ODS), "
                         "an HTML page or an EPUB book")


def sniff_kind(data: bytes, filename: str | None = None, source: bytes | Path | None = None,
               limits: VisionLimits = VisionLimits()) -> DocumentKind:
    """The document kind of `data` (the whole file, or at least its first PDF_HEADER_WINDOW bytes
    with `source` the whole file, which a ZIP package needs); raises `NotAPDFError`,
    `UnsupportedFormatError`, or for a package that breaks its caps the error that says which."""
    kind = _kind_from_magic(data)
    claims_pdf = filename is not None and filename.lower().rstrip().endswith(".pdf")
    if claims_pdf and kind is not DocumentKind.PDF:   # refused before a package is even read
        found = f"its content is {kind.value.upper()}" if kind else \
            "its content is a ZIP package" if data.startswith(ZIP_MAGIC) else "its content is not a PDF"
        raise NotAPDFError(f"{_shown(filename)} is named like a PDF but {found}")
    if kind is None and data.startswith(ZIP_MAGIC):
        kind = _package_kind(source if source is not None else data, limits)
    if kind is None:
        name = f"{_shown(filename)} " if filename else "the upload "
        if data.startswith(_COMPOUND_FILE_MAGIC):
            raise UnsupportedFormatError(f"{name}is an old binary Office file (.doc, .xls, .ppt) or a "
                                         "password-protected one; save it as DOCX, XLSX or PPTX without a password")
        raise UnsupportedFormatError(f"{name}is not a {SUPPORTED_DESCRIPTION}")
    return kind


def _package_kind(source: bytes | Path, limits: VisionLimits) -> DocumentKind | None:
    package = read_package(source, limits)
    if package.mimetype is not None:
        return _OPENDOCUMENT_TYPES.get(package.mimetype.strip())
    if package.content_types is not None:
        for main_part, kind in _OOXML_MAIN_PARTS:
            if main_part in package.content_types:
                return kind
    return None


def _kind_from_magic(data: bytes) -> DocumentKind | None:
    for magic, kind in _IMAGE_MAGIC:
        if data.startswith(magic):
            return kind
    if b"%PDF-" in data[:PDF_HEADER_WINDOW]:
        return DocumentKind.PDF
    text = data[:PDF_HEADER_WINDOW].removeprefix(b"\xef\xbb\xbf").lstrip().lower()
    if text.startswith(b"{\\rtf"):
        return DocumentKind.RTF
    if text.startswith(_HTML_STARTS) or (text.startswith((b"<?xml", b"<!--")) and b"<html" in text):
        return DocumentKind.HTML
    return None


def _shown(filename: str | None) -> str:
    """A file name as it may be echoed back: short, printable."""
    name = "".join(ch if ch.isprintable() else "?" for ch in (filename or ""))
    return repr(name if len(name) <= 80 else name[:77] + "...")
