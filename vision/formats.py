"""What kind of file an upload is, decided by its first bytes — never by its name.

The file name only adds a refusal: a file called `*.pdf` whose bytes are not a
PDF is refused as such, so a renamed image or executable cannot slip into the
PDF path. Any other mismatch between name and content (a JPEG saved as `.png`,
common with phones and scanners) is resolved in favour of the content.
"""
from __future__ import annotations

from enum import StrEnum

from vision.limits import NotAPDFError, UnsupportedFormatError

# Acrobat accepts the header anywhere in the first 1024 bytes; so do we.
PDF_HEADER_WINDOW = 1024


class DocumentKind(StrEnum):
    PDF = "pdf"
    PNG = "png"
    JPEG = "jpeg"
    TIFF = "tiff"

    @property
    def pillow_format(self) -> str:
        """The Pillow plugin that decodes this kind (PDFs go to PyMuPDF instead)."""
        assert self is not DocumentKind.PDF
        return {"png": "PNG", "jpeg": "JPEG", "tiff": "TIFF"}[self.value]


_IMAGE_MAGIC: tuple[tuple[bytes, DocumentKind], ...] = (
    (b"\x89PNG\r\n\x1a\n", DocumentKind.PNG),
    (b"\xff\xd8\xff", DocumentKind.JPEG),
    (b"II*\x00", DocumentKind.TIFF),   # little-endian TIFF
    (b"MM\x00*", DocumentKind.TIFF),   # big-endian TIFF
    (b"II+\x00", DocumentKind.TIFF),   # little-endian BigTIFF
    (b"MM\x00+", DocumentKind.TIFF),   # big-endian BigTIFF
)

SUPPORTED_DESCRIPTION = "PDF, PNG, JPEG or TIFF"


def sniff_kind(data: bytes, filename: str | None = None) -> DocumentKind:
    """The document kind of `data`; raises `NotAPDFError` or `UnsupportedFormatError`."""
    kind = _kind_from_magic(data)
    claims_pdf = filename is not None and filename.lower().rstrip().endswith(".pdf")
    if claims_pdf and kind is not DocumentKind.PDF:
        found = f"its content is {kind.value.upper()}" if kind else "its content is not a PDF"
        raise NotAPDFError(f"{_shown(filename)} is named like a PDF but {found}")
    if kind is None:
        name = f"{_shown(filename)} " if filename else "the upload "
        raise UnsupportedFormatError(f"{name}is not a {SUPPORTED_DESCRIPTION} file")
    return kind


def _kind_from_magic(data: bytes) -> DocumentKind | None:
    for magic, kind in _IMAGE_MAGIC:
        if data.startswith(magic):
            return kind
    if b"%PDF-" in data[:PDF_HEADER_WINDOW]:
        return DocumentKind.PDF
    return None


def _shown(filename: str | None) -> str:
    """A file name as it may be echoed back: short, printable."""
    name = "".join(ch if ch.isprintable() else "?" for ch in (filename or ""))
    return repr(name if len(name) <= 80 else name[:77] + "...")
