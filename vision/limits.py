"""Caps on what an upload may cost, and the typed errors raised when input breaks them.

Every cap is checked before the expensive step it protects: bytes before parsing,
page count before rendering, an image's pixel count (read from its header)
before decoding, a page's pixel count before rasterising (by lowering the DPI).
The messages of `InputError` subclasses are written for the person who sent the
document: they may be shown verbatim in an HTTP 4xx body or a failed job.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

POINTS_PER_INCH = 72.0


@dataclass(frozen=True)
class VisionLimits:
    max_upload_bytes: int = 100 * 1024 * 1024
    max_pages: int = 1000
    # Decoded size of one input image (or TIFF frame). Kept under Pillow's own
    # bomb threshold (~89M) so that our check, with our message, is the one that fires.
    max_image_pixels: int = 80_000_000
    # Size of one page image handed to layout and recognition; PDF pages are
    # rendered at a lower DPI and large images are downscaled to fit.
    max_page_pixels: int = 16_000_000
    render_dpi: float = 200.0
    max_render_dpi: float = 600.0
    max_page_selection_len: int = 1000  # characters in a "1-5,8" page selection
    # Office, HTML and EPUB documents (vision/office.py): read as a PDF their converter makes.
    # A ZIP package's central directory is checked before any converter sees it (vision/packages.py).
    max_package_entries: int = 10_000
    max_package_unpacked_bytes: int = 1024 * 1024 * 1024   # the sum of its entries' declared sizes
    max_package_ratio: int = 200     # declared / compressed size of an entry over 1 MiB (a deflate bomb is ~1000)
    conversion_timeout_s: float = 120.0   # the converter's whole process group is killed past it
    max_converted_bytes: int = 200 * 1024 * 1024    # the PDF a conversion may write
    conversion_memory_bytes: int = 4 * 1024 * 1024 * 1024   # the converter's address space

    def __post_init__(self) -> None:
        for name in ("max_upload_bytes", "max_pages", "max_image_pixels", "max_page_pixels",
                     "max_page_selection_len", "max_package_entries", "max_package_unpacked_bytes", "max_package_ratio",
                     "max_converted_bytes", "conversion_memory_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not self.conversion_timeout_s > 0:
            raise ValueError(f"conversion_timeout_s must be positive, got {self.conversion_timeout_s}")
        if not 0 < self.render_dpi <= self.max_render_dpi:
            raise ValueError(f"render_dpi must be in (0, {self.max_render_dpi}], got {self.render_dpi}")

    def check_dpi(self, dpi: float) -> float:
        """Validate a DPI a user asked for."""
        if not (isinstance(dpi, (int, float)) and math.isfinite(dpi) and 0 < dpi <= self.max_render_dpi):
            raise InvalidOptionError(f"dpi must be a number in (0, {self.max_render_dpi:g}], got {dpi!r}")
        return float(dpi)

    def dpi_for_page(self, width_pt: float, height_pt: float, dpi: float | None = None) -> float:
        """The DPI to render a page of this size at: the requested DPI, lowered
        just enough that the page image stays within `max_page_pixels`."""
        dpi = self.render_dpi if dpi is None else self.check_dpi(dpi)
        area_in2 = (width_pt / POINTS_PER_INCH) * (height_pt / POINTS_PER_INCH)
        assert area_in2 > 0, f"page has no area: {width_pt}x{height_pt} pt"
        # Rounding a side up adds at most one pixel row/column; the 0.999 keeps the product under the cap.
        largest_dpi = 0.999 * math.sqrt(self.max_page_pixels / area_in2)
        return min(dpi, largest_dpi)


class InputError(ValueError):
    """A document or option the user sent was refused. `code` is a stable,
    machine-readable reason; the message is a sentence safe to show the user."""

    code = "invalid_input"


class InvalidOptionError(InputError):
    code = "invalid_option"


class PageSelectionError(InputError):
    code = "invalid_pages"


class UnsupportedFormatError(InputError):
    code = "unsupported_format"


class NotAPDFError(UnsupportedFormatError):
    code = "not_a_pdf"


class EncryptedPDFError(InputError):
    code = "encrypted_pdf"


class CorruptDocumentError(InputError):
    code = "corrupt_document"


class ConversionFailedError(CorruptDocumentError):
    """An office, HTML or EPUB document its converter could not turn into a PDF within its budget."""

    code = "conversion_failed"


class EmptyDocumentError(InputError):
    code = "empty_document"


class DocumentTooLargeError(InputError):
    """Too many bytes or too many pages."""

    code = "document_too_large"


class ImageTooLargeError(InputError):
    """An image (or TIFF frame) whose header declares more pixels than allowed."""

    code = "image_too_large"
